// The GD alignment page on a real 2-layer LSA experiment written by icl::train with a tiny config.
// Expected values come from the file (icl::readRunSummary) and from independent calls of the core
// analyses, never from the page under test.

#include "app/gui/gd_alignment_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <QCheckBox>
#include <QComboBox>
#include <QCryptographicHash>
#include <QFile>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "app/gui/main_window.h"
#include "core/analysis/gd_alignment.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/types/number_format.h"
#include "core/training/trainer.h"
#include "widgets/checkpoint_timeline.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "tests/support/gui_helpers.h"
#include "tests/support/tiny_runs.h"

using icl::gui::GdAlignmentPage;
using icl::gui::MainWindow;

namespace {
using namespace icl::test;

constexpr int64_t kD = 4; // task dimension: heatmaps are (d+1) × (d+1)
constexpr int64_t kLayers = 2; // K

using Points = std::vector<std::pair<double, double>>;

QByteArray fileHash(const std::string& path)
{
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

double labelValue(const GdAlignmentPage* page, const char* name)
{
    auto* label = page->findChild<QLabel*>(name);
    EXPECT_NE(label, nullptr) << name;
    bool ok = false;
    const double v = label ? label->text().toDouble(&ok) : 0.0;
    EXPECT_TRUE(ok) << name << ": " << (label ? label->text().toStdString() : std::string());
    return v;
}

/// Equal to the 4 significant digits the labels show (the figure style, core/types/number_format.h).
void expectShown(double shown, double expected, const char* what)
{
    EXPECT_NEAR(shown, expected, 5.01e-4 * std::abs(expected)) << what;
}

/// The graph draws the points (x[i], y[i]): the same keys, values within 1e-9 (relative above 1).
void expectGraphOf(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y)
{
    ASSERT_NE(graph, nullptr);
    const Points drawn = graphPoints(graph);
    ASSERT_EQ(drawn.size(), x.size());
    for (size_t i = 0; i < drawn.size(); ++i) {
        EXPECT_DOUBLE_EQ(drawn[i].first, x[i]);
        EXPECT_NEAR(drawn[i].second, y[i], 1e-9 * std::max(1.0, y[i]));
    }
}

class GdAlignmentPageTest : public ::testing::Test {
protected:
    /// A 2-layer LSA on d = 4, 40 steps, checkpoints at 0, 20, 40, aligned with GD-2.
    static void SetUpTestSuite()
    {
        s_run = scratchFolder("gd-alignment").filePath("lsa2.h5").toStdString();
        trainTinyRun(s_run, "vonoswald-lsa-1layer",
            { "task.d=" + std::to_string(kD), "task.n_context=8", "model.n_layers=" + std::to_string(kLayers),
                "training.batch_size=64", "training.grad_clip=10", "training.eval_every=10",
                "training.checkpoint_every=20", "eval.n_prompts=256", "eval.gd_steps=[1,2]",
                "eval.alignment=[\"gd_2\"]" },
            40);
    }

    /// Opens the file on the GD alignment page and waits until its analyses are done.
    static void openAndWait(MainWindow& window, bool withGdpp = false)
    {
        window.setScripted(true);
        window.page<GdAlignmentPage>()->gdppCheck()->setChecked(withGdpp);
        ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
        window.showPage<GdAlignmentPage>();
        ASSERT_TRUE(window.page<GdAlignmentPage>()->isBusy()) << "showing the page starts its analyses";
        ASSERT_TRUE(waitIdle(window));
    }

    static inline std::string s_run;
};

} // namespace

TEST_F(GdAlignmentPageTest, AlignmentOverTrainingPlotsTheFilesAlignmentSeries)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    MainWindow window;
    openAndWait(window);
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    EXPECT_EQ(window.currentPlot(), page->alignmentPlot()); // first tab

    // Every /metrics/alignment/<ref>/<metric> series of the file except the absolute model
    // difference (drawn as the relative one, on the cosine's scale), against /metrics/step.
    std::vector<Points> expected;
    const auto& steps = file.metrics.at("step");
    for (const auto& [key, values] : file.metrics) {
        if (key.rfind("alignment/", 0) != 0 || key.size() < 17
            || key.compare(key.size() - 17, 17, "/model_difference") == 0)
            continue;
        Points p;
        for (size_t i = 0; i < values.size() && i < steps.size(); ++i)
            if (!std::isnan(values[i]))
                p.emplace_back(steps[i], values[i]);
        ASSERT_FALSE(p.empty()) << key;
        expected.push_back(p);
    }
    ASSERT_EQ(expected.size(), 3u) << "model cosine, relative model difference, prediction difference vs gd_2";
    QCustomPlot* qcp = page->alignmentPlot()->plot();
    ASSERT_EQ(qcp->graphCount(), int(expected.size()));
    std::vector<Points> drawn;
    for (int g = 0; g < qcp->graphCount(); ++g) {
        drawn.push_back(graphPoints(qcp->graph(g)));
        EXPECT_TRUE(qcp->graph(g)->name().contains("GD, 2 steps")) << qcp->graph(g)->name().toStdString();
    }
    std::sort(expected.begin(), expected.end());
    std::sort(drawn.begin(), drawn.end());
    EXPECT_EQ(drawn, expected);
}

TEST_F(GdAlignmentPageTest, MetricsAndScatterOfTheSelectedCheckpointMatchComputeGdAlignment)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    const QByteArray before = fileHash(s_run);
    MainWindow window;
    openAndWait(window);
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    EXPECT_EQ(page->checkpointStep(), file.checkpoints.back().step);

    icl::GdAlignmentOptions options;
    options.checkpoint_step = file.checkpoints.back().step;
    options.reference = "gd_2";
    options.store = false;
    const icl::AlignmentResult expected = icl::computeGdAlignment(s_run, options);
    expectShown(labelValue(page, "modelCosineValue"), expected.metrics.model_cosine, "model cosine");
    expectShown(
        labelValue(page, "predictionDifferenceValue"), expected.metrics.prediction_difference, "prediction difference");
    expectShown(labelValue(page, "modelDifferenceValue"), expected.metrics.model_difference, "model difference");
    expectShown(labelValue(page, "relativeModelDifferenceValue"), expected.metrics.relative_model_difference,
        "relative model difference");
    expectShown(labelValue(page, "modelLossValue"), expected.metrics.model_loss, "model loss");
    expectShown(labelValue(page, "referenceLossValue"), expected.metrics.reference_loss, "GD loss");
    EXPECT_TRUE(page->findChild<QLabel*>("metricsTitle")
                    ->text()
                    .contains(QStringLiteral("Checkpoint %1 vs GD-2").arg(expected.checkpoint_step)));

    // Scatter: x = GD's prediction, y = the model's, one point per prompt (graph data is sorted by x).
    QCPGraph* points = page->scatterPlot()->seriesGraph(0);
    ASSERT_NE(points, nullptr);
    Points want;
    for (size_t i = 0; i < expected.model_predictions.size(); ++i)
        want.emplace_back(expected.reference_predictions[i], expected.model_predictions[i]);
    Points got = graphPoints(points);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i].first, want[i].first, 1e-9);
        EXPECT_NEAR(got[i].second, want[i].second, 1e-9);
    }
    // Nothing was written to the experiment file.
    EXPECT_EQ(fileHash(s_run), before);
}

TEST_F(GdAlignmentPageTest, HeatmapsShowTheLearnedAndConstructedWeightsOfTheChosenLayer)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    MainWindow window;
    openAndWait(window);
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    const auto expected = icl::lsaWeightViews(s_run, file.checkpoints.back().step);
    ASSERT_EQ(expected.size(), size_t(kLayers));
    ASSERT_EQ(page->layerChooser()->count(), int(kLayers));

    for (int layer : { 0, 1 }) {
        page->layerChooser()->setCurrentIndex(layer);
        const std::pair<icl::widgets::HeatmapView*, const icl::Matrix*> views[] = {
            { page->heatmap(true, false), &expected[size_t(layer)].learned_kq },
            { page->heatmap(true, true), &expected[size_t(layer)].construction_kq },
            { page->heatmap(false, false), &expected[size_t(layer)].learned_pv },
            { page->heatmap(false, true), &expected[size_t(layer)].construction_pv },
        };
        for (const auto& [view, matrix] : views) {
            QCPColorMapData* data = view->colorMap()->data();
            ASSERT_EQ(data->keySize(), int(kD + 1));
            ASSERT_EQ(data->valueSize(), int(kD + 1));
            for (int r = 0; r <= kD; ++r)
                for (int c = 0; c <= kD; ++c)
                    EXPECT_NEAR(data->cell(c, r), matrix->at(r, c), 1e-12);
            EXPECT_EQ(view->cellText(kD, 0).left(12), QStringLiteral("row y, colum"));
        }
    }
}

TEST_F(GdAlignmentPageTest, LayersVsStepsTableHasOneRowPerLayer)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    MainWindow window;
    openAndWait(window, true);
    QTableWidget* table = window.page<GdAlignmentPage>()->layerTable();
    ASSERT_EQ(table->columnCount(), 6);
    ASSERT_EQ(table->rowCount(), int(kLayers));
    // The GD columns do not depend on GD++: compare with a call that skips fitting it.
    const auto rows = icl::compareLayersWithSteps(s_run, file.checkpoints.back().step, false);
    ASSERT_EQ(rows.size(), size_t(kLayers));
    for (int i = 0; i < int(kLayers); ++i) {
        EXPECT_EQ(table->item(i, 0)->text().toLongLong(), rows[size_t(i)].layer);
        expectShown(table->item(i, 1)->text().toDouble(), rows[size_t(i)].model_loss, "model loss");
        expectShown(table->item(i, 2)->text().toDouble(), rows[size_t(i)].gd_loss, "GD-k loss");
        expectShown(table->item(i, 4)->text().toDouble(), rows[size_t(i)].vs_gd.model_cosine, "cosine vs GD");
    }
    // GD++ is defined for k > 1 only.
    EXPECT_EQ(table->item(0, 3)->text(), "—");
    bool ok = false;
    EXPECT_GT(table->item(1, 3)->text().toDouble(&ok), 0.0);
    EXPECT_TRUE(ok);
    table->item(1, 5)->text().toDouble(&ok);
    EXPECT_TRUE(ok);
}

TEST_F(GdAlignmentPageTest, EtaScanAndOodPlotsAreDrawnAndDepthNeedsATiedModel)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    MainWindow window;
    openAndWait(window);
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    const int64_t step = file.checkpoints.back().step;

    const icl::EtaScan scan = icl::computeEtaScan(s_run, step, kLayers, 4.0, 200, false);
    ASSERT_NO_FATAL_FAILURE(expectGraphOf(page->etaPlot()->seriesGraph(0), scan.eta, scan.loss));

    const icl::OodCurve ood = icl::computeOod(s_run, step, "x_scale", {}, 4000, false);
    ASSERT_NO_FATAL_FAILURE(expectGraphOf(page->oodPlot()->seriesGraph(0), ood.alpha, ood.model_loss));

    // The model is untied: the depth shift is offered but disabled.
    QComboBox* kinds = page->oodKindChooser();
    const int depth = kinds->findData(QStringLiteral("depth"));
    ASSERT_GE(depth, 0);
    auto* model_ = qobject_cast<QStandardItemModel*>(kinds->model());
    ASSERT_NE(model_, nullptr);
    EXPECT_FALSE(model_->item(depth)->isEnabled());

    // Choosing another kind re-runs only that analysis.
    kinds->setCurrentIndex(kinds->findData(QStringLiteral("label_noise")));
    ASSERT_TRUE(page->isBusy());
    ASSERT_TRUE(waitIdle(*page, 120000));
    const icl::OodCurve noise = icl::computeOod(s_run, step, "label_noise", {}, 4000, false);
    const Points noisy = graphPoints(page->oodPlot()->seriesGraph(0));
    ASSERT_EQ(noisy.size(), noise.alpha.size());
    EXPECT_NEAR(noisy.back().second, noise.model_loss.back(), 1e-9 * std::max(1.0, noise.model_loss.back()));
}

TEST_F(GdAlignmentPageTest, FollowsTheTimelineAndDropsSupersededResults)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    ASSERT_GE(file.checkpoints.size(), 2u);
    MainWindow window;
    openAndWait(window);
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    const int64_t first = file.checkpoints.front().step;
    const int64_t second = file.checkpoints[1].step;

    // Two selections in a row: only the last one's results may end up on screen.
    window.timeline()->setCurrentStep(first);
    EXPECT_TRUE(page->isBusy());
    window.timeline()->setCurrentStep(second);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->checkpointStep(), second);

    icl::GdAlignmentOptions options;
    options.checkpoint_step = second;
    options.reference = "gd_2";
    options.store = false;
    const icl::AlignmentResult expected = icl::computeGdAlignment(s_run, options);
    expectShown(labelValue(page, "modelCosineValue"), expected.metrics.model_cosine, "model cosine");
    expectShown(labelValue(page, "modelLossValue"), expected.metrics.model_loss, "model loss");
    EXPECT_TRUE(page->findChild<QLabel*>("metricsTitle")->text().contains(QStringLiteral("Checkpoint %1").arg(second)));
    const auto views = icl::lsaWeightViews(s_run, second);
    EXPECT_NEAR(page->heatmap(true, false)->colorMap()->data()->cell(0, 0), views[0].learned_kq.at(0, 0), 1e-12);
}

TEST_F(GdAlignmentPageTest, StatusBarShowsProgressWhileAnalysesRunAndCancelStopsThem)
{
    MainWindow window;
    window.setScripted(true);
    window.page<GdAlignmentPage>()->gdppCheck()->setChecked(false);
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
    auto* cancel = window.findChild<QPushButton*>("cancelButton");
    ASSERT_NE(cancel, nullptr);
    EXPECT_FALSE(cancel->isEnabled());
    QSignalSpy idle(&window, &MainWindow::idle);
    window.showPage<GdAlignmentPage>();
    EXPECT_TRUE(window.isBusy());
    EXPECT_TRUE(cancel->isEnabled());
    cancel->click();
    ASSERT_TRUE(waitIdle(window, 120000));
    EXPECT_GE(idle.count(), 1);
    EXPECT_FALSE(cancel->isEnabled());
    // The analyses that never ran say so; selecting a checkpoint computes again.
    auto* layers = window.findChild<QLabel*>("layersStatus");
    ASSERT_NE(layers, nullptr);
    EXPECT_TRUE(layers->text().contains("Cancelled")) << layers->text().toStdString();
    const icl::RunSummary file = icl::readRunSummary(s_run);
    window.selectCheckpoint(file.checkpoints.front().step);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(window.page<GdAlignmentPage>()->layerTable()->rowCount(), int(kLayers));
}

TEST_F(GdAlignmentPageTest, ARunWithoutAnLsaModelGetsAMessage)
{
    // The page decides from the run's typed config; a summary of a GPT-2 run needs no training to test that.
    icl::RunSummary summary = icl::readRunSummary(s_run);
    auto config = std::make_shared<icl::ExperimentConfig>(*summary.config);
    config->model.kind = "gpt2";
    summary.config = config;
    summary.config_json = icl::toJson(*config).dump();
    GdAlignmentPage page;
    page.setActive(true);
    page.showExperiment(summary, summary.checkpoints.back().step);
    EXPECT_FALSE(page.isBusy());
    EXPECT_TRUE(page.messageLabel()->isVisibleTo(&page));
    EXPECT_TRUE(page.messageLabel()->text().contains("needs an LSA model"))
        << page.messageLabel()->text().toStdString();
    EXPECT_TRUE(page.messageLabel()->text().contains("gpt2"));
    EXPECT_EQ(page.currentPlot(), nullptr);
}

// The copy tab on an interleaved run: the heatmap holds G[k][j] of computeCopyAnalysis on the same
// checkpoint (an independent call), and the tab is disabled for pair-layout runs.
TEST(GdAlignmentCopyTab, ShowsTheCopyAnalysisOfInterleavedRuns)
{
    const std::string run = scratchFolder("gd-alignment-copy").filePath("copy.h5").toStdString();
    trainTinyRun(run, "vonoswald-interleaved-copy",
        { "task.d=3", "task.n_context=4", "model.pos_dim=4", "training.batch_size=32", "training.eval_every=5",
            "training.checkpoint_every=10", "eval.n_prompts=128", "eval.bootstrap=0" },
        10);

    MainWindow window;
    ASSERT_TRUE(openOnPage<GdAlignmentPage>(window, run));
    ASSERT_TRUE(waitIdle(window));
    GdAlignmentPage* page = window.page<GdAlignmentPage>();
    EXPECT_TRUE(page->tabs()->isTabEnabled(6));
    ASSERT_TRUE(page->showTab("copy"));
    const icl::CopyAnalysis expected = icl::computeCopyAnalysis(run, 10, 64, false);
    const icl::Matrix& shown = page->copyHeatmap()->matrix();
    ASSERT_EQ(shown.rows, 9); // 2N + 1 tokens
    ASSERT_EQ(shown.cols, 9);
    ASSERT_EQ(shown.data.size(), expected.gradient_norm.size());
    for (size_t i = 0; i < shown.data.size(); ++i)
        EXPECT_DOUBLE_EQ(shown.data[i], expected.gradient_norm[i]);
    EXPECT_EQ(shown.row_labels.front(), "x1");
    EXPECT_EQ(shown.row_labels.back(), "query");
    EXPECT_TRUE(page->copySummary()->text().contains(QString::fromStdString(icl::formatSignificant(expected.next))))
        << page->copySummary()->text().toStdString();
    // The alignment reference of an interleaved run with one copy layer is one GD step.
    EXPECT_EQ(page->reference(), "gd_1");
}

TEST_F(GdAlignmentPageTest, CopyTabIsDisabledForThePairLayout)
{
    MainWindow window;
    openAndWait(window);
    EXPECT_FALSE(window.page<GdAlignmentPage>()->tabs()->isTabEnabled(6));
}
