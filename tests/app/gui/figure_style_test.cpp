// The figure style (issue 49 item 3, docs/architecture.md "Figure style"): each predictor has one colour on every
// page and in every figure the pages and exports draw (PlotView), whatever else the figure holds and in whatever
// order; the GD alignment page's labels show 4 significant digits and the weights view says that the two products
// are determined up to a joint sign.

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <QLabel>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "app/gui/gd_alignment_page.h"
#include "app/gui/icl_curve_page.h"
#include "app/gui/main_window.h"
#include "app/gui/train_page.h"
#include "core/report.h"
#include "widgets/plot_view.h"
#include "tests/support/gui_helpers.h"
#include "tests/support/tiny_runs.h"

using icl::gui::GdAlignmentPage;
using icl::gui::IclCurvePage;
using icl::gui::MainWindow;
using icl::gui::TrainPage;
using icl::widgets::PlotView;

namespace {
using namespace icl::test;

/// "gd_3" → "gd", "features_gd_1" → "features_gd", "zero" → "zero" (results name predictors this way).
std::string family(const std::string& predictor)
{
    const size_t u = predictor.find_last_of('_');
    if (u != std::string::npos && u + 1 < predictor.size()
        && predictor.find_first_not_of("0123456789", u + 1) == std::string::npos)
        return predictor.substr(0, u);
    return predictor;
}

/// Colours seen per predictor family: the pen of the first series of each family on each plot.
class ColourLog {
public:
    void add(const PlotView* view, const std::string& where)
    {
        std::set<std::string> seen;
        const icl::Figure& f = view->figure();
        for (size_t i = 0; i < f.series.size(); ++i) {
            const std::string fam = family(f.series[i].predictor);
            if (fam.empty() || !seen.insert(fam).second)
                continue;
            const QCPGraph* graph = view->seriesGraph(int(i));
            ASSERT_NE(graph, nullptr) << where << " " << f.series[i].name;
            m_colours[fam][graph->pen().color().rgb()].push_back(where + ": " + f.series[i].name);
        }
    }
    void add(const icl::Figure& figure, const std::string& where)
    {
        PlotView view; // what every page and export (widgets::exportFigure, icl-cli export/report) draws with
        view.setFigure(figure);
        add(&view, where);
    }
    /// Each family with exactly one colour, and different families with different colours.
    void expectOneColourPerPredictor() const
    {
        std::map<QRgb, std::string> owner;
        for (const auto& [fam, colours] : m_colours) {
            std::string where;
            for (const auto& [rgb, places] : colours)
                for (const std::string& p : places)
                    where += "\n  " + QColor(rgb).name().toStdString() + " " + p;
            EXPECT_EQ(colours.size(), 1u) << fam << " has several colours:" << where;
            const QRgb rgb = colours.begin()->first;
            const auto [it, fresh] = owner.emplace(rgb, fam);
            EXPECT_TRUE(fresh) << fam << " and " << it->second << " share " << QColor(rgb).name().toStdString();
        }
    }
    size_t figuresWith(const std::string& fam) const
    {
        const auto it = m_colours.find(fam);
        size_t n = 0;
        if (it != m_colours.end())
            for (const auto& [rgb, places] : it->second)
                n += places.size();
        return n;
    }

private:
    std::map<std::string, std::map<QRgb, std::vector<std::string>>> m_colours;
};

icl::RunSummary summaryWith(const std::vector<std::string>& baselines)
{
    icl::RunSummary s;
    s.path = "run.h5";
    s.config_json = R"({"seed": 0})";
    s.metrics["step"] = {0, 100, 200};
    s.metrics["train_loss"] = {1.6, 0.9, 0.85};
    s.metrics["eval_loss"] = {1.65, 0.88, 0.84};
    double v = 0.3;
    for (const std::string& b : baselines)
        s.metrics["baseline/" + b] = {v, v, v}, v += 0.1;
    return s;
}

icl::IclCurve curveWith(const std::vector<std::string>& names)
{
    icl::IclCurve c;
    c.n_examples = {1, 2, 3};
    c.checkpoint_step = 200;
    c.n_prompts = 64;
    double v = 0.5;
    for (const std::string& n : names) {
        c.series.push_back({n, {v, v, v}, {v - 0.1, v - 0.1, v - 0.1}, {v + 0.1, v + 0.1, v + 0.1}});
        v += 0.1;
    }
    return c;
}

} // namespace

// The figures of the Train page (loss), ICL curve, GD alignment (out of distribution, η scan, model vs GD), the
// Attention page's regression lens and the pasting page, with the predictors in the orders those pages produce
// (GPT-2 runs: zero, least squares, 3-nearest neighbours, averaging; LSA runs: zero, least squares, ridge, GD-k).
TEST(FigureStyle, EachPredictorHasOneColourOnEveryFigure)
{
    ColourLog log;
    const icl::RunSummary garg = summaryWith({"averaging", "knn", "least_squares", "zero"});
    const icl::RunSummary lsa = summaryWith({"gd_1", "least_squares", "ridge", "zero"});
    log.add(icl::lossFigure(garg), "loss (GPT-2)");
    log.add(icl::lossFigure(lsa), "loss (LSA)");
    log.add(icl::iclCurveFigure(curveWith({"model", "zero", "least_squares", "knn", "averaging"}), garg),
        "ICL curve (GPT-2)");
    log.add(icl::iclCurveFigure(curveWith({"model", "zero", "least_squares", "ridge", "gd_1", "gd_2"}), lsa),
        "ICL curve (LSA)");

    icl::OodCurve ood;
    ood.kind = "label_noise";
    ood.alpha = {0.0, 0.5, 1.0};
    ood.model_loss = {0.1, 0.2, 0.3};
    ood.gd_loss = {0.2, 0.3, 0.4};
    ood.zero_loss = {1.0, 1.1, 1.2};
    log.add(icl::oodFigure(ood, lsa), "out of distribution");

    icl::EtaScan scan;
    scan.eta = {0.0, 1.0, 2.0};
    scan.loss = {1.0, 0.5, 0.9};
    scan.best_eta = 1.1;
    scan.best_loss = 0.49;
    scan.model_loss = 0.5;
    log.add(icl::etaScanFigure(scan, lsa), "η scan");

    icl::AlignmentResult aligned;
    aligned.reference_predictions = {0.1, 0.2, 0.3};
    aligned.model_predictions = {0.1, 0.25, 0.3};
    log.add(icl::predictionScatterFigure(aligned, lsa), "model vs GD");

    icl::RegressionLens lens;
    lens.prediction = {0.0, 0.4, 0.6};
    lens.layer_labels = {"embed", "layer 0", "layer 1"};
    lens.target = 0.65;
    lens.references = {{"zero", 0.0}, {"least_squares", 0.65}, {"knn", 0.3}, {"averaging", 0.2}, {"gd_1", 0.5},
        {"gd_5", 0.62}, {"ridge", 0.64}};
    log.add(icl::lensFigure(lens, garg), "regression lens");

    icl::PastingResult pasted;
    pasted.n_examples = {0, 1, 2};
    pasted.pasted_curve = {1.0, 0.6, 0.4};
    pasted.ridge_curve = {1.0, 0.5, 0.3};
    pasted.zero_loss = 1.0;
    log.add(icl::pastingIclCurvesFigure(pasted, icl::PastingOptions {}, garg), "pasting");

    log.expectOneColourPerPredictor();
    for (const char* fam : { "model", "zero", "averaging", "knn", "least_squares", "ridge", "gd" })
        EXPECT_GE(log.figuresWith(fam), 2u) << fam << " is on several figures";
}

// The same on the pages themselves, for a tiny LSA run: the Train page's loss plot, the ICL curve and the GD
// alignment page's plots.
TEST(FigureStyle, EachPredictorHasOneColourOnThePages)
{
    const std::string run = icl::test::tinyRun(icl::test::TinyRun::Lsa);
    MainWindow window;
    ASSERT_TRUE(openOnPage<IclCurvePage>(window, run));
    ASSERT_TRUE(icl::test::waitIdle(window));
    window.showPage<GdAlignmentPage>();
    ASSERT_TRUE(icl::test::waitIdle(window));
    ColourLog log;
    log.add(window.page<TrainPage>()->lossPlot(), "Train page");
    log.add(window.page<IclCurvePage>()->plot(), "ICL curve page");
    GdAlignmentPage* gd = window.page<GdAlignmentPage>();
    log.add(gd->oodPlot(), "GD alignment: out of distribution");
    log.add(gd->etaPlot(), "GD alignment: η scan");
    log.add(gd->scatterPlot(), "GD alignment: model vs GD");
    log.expectOneColourPerPredictor();
    for (const char* fam : { "model", "zero" })
        EXPECT_GE(log.figuresWith(fam), 2u) << fam;

    // The metrics strip: 4 significant digits (full precision in the tool tip).
    for (const char* name : { "modelCosineValue", "modelLossValue", "referenceLossValue" }) {
        auto* label = gd->findChild<QLabel*>(name);
        ASSERT_NE(label, nullptr) << name;
        const std::string text = label->text().toStdString();
        int digits = 0;
        bool leading = true;
        for (char c : text.substr(0, text.find('e'))) {
            if (!std::isdigit(static_cast<unsigned char>(c)))
                continue;
            if (c != '0')
                leading = false;
            digits += leading ? 0 : 1;
        }
        EXPECT_LE(digits, 4) << name << ": " << text;
        EXPECT_TRUE(label->toolTip().contains(QString::fromStdString(text.substr(0, 3)))) << name;
    }
    // The weights view's sign note.
    auto* note = gd->findChild<QLabel*>(QStringLiteral("weightsNote"));
    ASSERT_NE(note, nullptr);
    EXPECT_TRUE(note->text().contains(QStringLiteral("joint sign"))) << note->text().toStdString();
}
