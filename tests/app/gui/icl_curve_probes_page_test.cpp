// The ICL curve and Probes pages on real experiments written by icl::train with tiny configs (a GPT-2
// on the guo-representation task and a pair-layout LSA). Expected values come from independent calls
// of the core facade (computeIclCurve, computeProbe) with the page's options, never from the pages.

#include "app/gui/icl_curve_page.h"
#include "app/gui/probes_page.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "core/analysis/icl_curve.h"
#include "core/analysis/probe_analysis.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "core/training/trainer.h"
#include "widgets/figure_export.h"
#include "widgets/plot_view.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/gui_helpers.h"

using icl::gui::IclCurvePage;
using icl::gui::MainWindow;
using icl::gui::ProbesPage;

namespace {
using namespace icl::test;

constexpr int kFit = 48; // prompts the page's probes are fitted and scored on (kept small: fast)

class IclCurveProbesPageTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_gpt2 = icl::test::tinyRun(icl::test::TinyRun::Gpt2);
        s_lsa = icl::test::tinyRun(icl::test::TinyRun::Lsa);
    }

    static void expectSameCurve(const icl::IclCurve& shown, const icl::IclCurve& expected)
    {
        EXPECT_EQ(shown.checkpoint_step, expected.checkpoint_step);
        EXPECT_EQ(shown.n_examples, expected.n_examples);
        ASSERT_EQ(shown.series.size(), expected.series.size());
        for (size_t i = 0; i < shown.series.size(); ++i) {
            EXPECT_EQ(shown.series[i].name, expected.series[i].name);
            EXPECT_EQ(shown.series[i].error, expected.series[i].error) << expected.series[i].name;
            EXPECT_EQ(shown.series[i].ci_lower, expected.series[i].ci_lower) << expected.series[i].name;
            EXPECT_EQ(shown.series[i].ci_upper, expected.series[i].ci_upper) << expected.series[i].name;
        }
    }

    /// The plotted figure equals iclCurveFigure of an independent computeIclCurve with the page's options.
    static void expectIclCurveOfFacade(const IclCurvePage* page, const std::string& path)
    {
        const icl::IclCurve expected = icl::computeIclCurve(path, page->options());
        expectSameCurve(page->curve(), expected);
        const icl::Figure want = icl::iclCurveFigure(expected, icl::readRunSummary(path));
        const icl::Figure& got = page->plot()->figure();
        EXPECT_EQ(got.name, "icl_curve");
        ASSERT_EQ(got.series.size(), want.series.size());
        for (size_t i = 0; i < want.series.size(); ++i) {
            EXPECT_EQ(got.series[i].name, want.series[i].name);
            EXPECT_EQ(got.series[i].x, want.series[i].x);
            EXPECT_EQ(got.series[i].y, want.series[i].y);
            EXPECT_EQ(got.series[i].y_lower, want.series[i].y_lower);
            EXPECT_EQ(got.series[i].y_upper, want.series[i].y_upper);
        }
    }

    static std::string s_gpt2;
    static std::string s_lsa;
};

std::string IclCurveProbesPageTest::s_gpt2;
std::string IclCurveProbesPageTest::s_lsa;

} // namespace

TEST_F(IclCurveProbesPageTest, IclCurveShowsComputeIclCurveAndFollowsTheTimeline)
{
    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_gpt2));
    IclCurvePage* page = window.page<IclCurvePage>();
    EXPECT_FALSE(page->isBusy()) << "nothing runs while the page is hidden";
    window.showPage<IclCurvePage>();
    ASSERT_TRUE(page->isBusy()) << "showing the page starts its analysis";
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();
    EXPECT_EQ(page->checkpointStep(), 20);
    EXPECT_EQ(page->options().store, false);
    expectIclCurveOfFacade(page, s_gpt2);
    // Model and every baseline of the run, with bands.
    const icl::RunSummary file = icl::readRunSummary(s_gpt2);
    EXPECT_EQ(page->curve().series.front().name, "model");
    EXPECT_GE(page->curve().series.size(), 3u);
    for (const auto& s : page->plot()->figure().series)
        EXPECT_EQ(s.y_lower.size(), s.y.size()) << s.name;
    EXPECT_TRUE(page->summaryLabel()->text().startsWith("Checkpoint 20,")) << page->summaryLabel()->text().toStdString();
    EXPECT_EQ(window.currentPlot(), page->plot());

    ASSERT_EQ(window.selectCheckpoint(10), 10);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->curve().checkpoint_step, 10);
    expectIclCurveOfFacade(page, s_gpt2);

    // A different number of prompts: fresh prompts, the same facade.
    page->setPromptCount(32);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->curve().n_prompts, 32);
    expectIclCurveOfFacade(page, s_gpt2);

    // The export carries the plotted data.
    const std::string csv = icl::test::scratchSubdir("icl-curve-export") + "/icl_curve.csv";
    std::string error;
    ASSERT_TRUE(icl::widgets::exportFigure(page->plot()->figure(), csv, "csv", 100, &error)) << error;
    QFile f(QString::fromStdString(csv));
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    EXPECT_TRUE(f.readAll().contains("checkpoint_step: 10"));
}

TEST_F(IclCurveProbesPageTest, IclCurveWorksForLsaRuns)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<IclCurvePage>(window, s_lsa));
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(window.page<IclCurvePage>()->statusLabel()->text().isEmpty())
        << window.page<IclCurvePage>()->statusLabel()->text().toStdString();
    expectIclCurveOfFacade(window.page<IclCurvePage>(), s_lsa);
}

TEST_F(IclCurveProbesPageTest, ProbesShowComputeProbePerTargetAndFollowTheTimeline)
{
    const QByteArray before = [] {
        QFile f(QString::fromStdString(s_gpt2));
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }();
    MainWindow window;
    window.setScripted(true);
    ProbesPage* page = window.page<ProbesPage>();
    page->setPromptCounts(kFit, kFit);
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_gpt2)));
    // Representation task: x, Φ*, y and the oracle can be probed.
    for (const char* t : { "x", "phi", "y", "oracle" }) {
        ASSERT_NE(page->targetCheck(t), nullptr) << t;
        EXPECT_TRUE(page->targetCheck(t)->isEnabled()) << t;
    }
    EXPECT_EQ(page->targetCheck("gd_1")->isEnabled(),
        icl::readRunSummary(s_gpt2).metrics.count("baseline_eta/gd_1") > 0);
    page->setTargetChecked("y", false);
    QSignalSpy firstLook(page, &ProbesPage::firstLookShown);
    window.showPage<ProbesPage>();
    ASSERT_TRUE(page->isBusy());
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();
    // kFit > icl::kProbeFirstLookPrompts: a first look came before the full result replaced it
    EXPECT_EQ(firstLook.count(), 1);

    auto expectFacade = [&](qint64 step, const std::string& positions) {
        const QStringList targets = page->checkedTargets();
        ASSERT_EQ(page->curves().size(), size_t(targets.size()));
        const icl::Figure& fig = page->plot()->figure();
        ASSERT_EQ(fig.series.size(), size_t(targets.size()));
        for (int i = 0; i < targets.size(); ++i) {
            const icl::ProbeOptions o = page->options(targets[i]);
            EXPECT_FALSE(o.store);
            EXPECT_EQ(o.n_fit, kFit);
            EXPECT_EQ(o.positions, positions);
            const icl::ProbeCurve expected = icl::computeProbe(s_gpt2, o);
            const icl::ProbeCurve& shown = page->curves()[size_t(i)];
            EXPECT_EQ(shown.target, targets[i].toStdString());
            EXPECT_EQ(shown.checkpoint_step, step);
            EXPECT_EQ(shown.layer_labels, (std::vector<std::string> { "embed", "block 0", "block 1" }));
            EXPECT_EQ(shown.normalised_mse, expected.normalised_mse) << o.target;
            EXPECT_EQ(fig.series[size_t(i)].y, expected.normalised_mse) << o.target;
            EXPECT_EQ(fig.series[size_t(i)].x, (std::vector<double> { 0, 1, 2 }));
        }
        EXPECT_EQ(fig.x_tick_labels, (std::vector<std::string> { "embed", "block 0", "block 1" }));
        EXPECT_EQ(fig.metadata.at("checkpoint_step"), std::to_string(step));
    };
    EXPECT_EQ(page->checkedTargets().contains("y"), false);
    EXPECT_TRUE(page->checkedTargets().contains("phi"));
    expectFacade(20, "x");

    ASSERT_TRUE(page->setPositions("query"));
    ASSERT_TRUE(waitIdle(window));
    expectFacade(20, "query");

    ASSERT_EQ(window.selectCheckpoint(10), 10);
    ASSERT_TRUE(waitIdle(window));
    expectFacade(10, "query");
    EXPECT_TRUE(page->summaryLabel()->text().startsWith("Checkpoint 10,")) << page->summaryLabel()->text().toStdString();

    QFile f(QString::fromStdString(s_gpt2));
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    EXPECT_EQ(f.readAll(), before) << "the page writes nothing to the experiment file";
}

TEST_F(IclCurveProbesPageTest, ProbesRefuseLsaRunsWithAMessage)
{
    MainWindow window;
    ASSERT_TRUE(openOnShownPage<ProbesPage>(window, s_lsa));
    ProbesPage* page = window.page<ProbesPage>();
    EXPECT_FALSE(page->isBusy());
    EXPECT_TRUE(page->messageLabel()->isVisibleTo(page));
    EXPECT_TRUE(page->messageLabel()->text().contains("GPT-2")) << page->messageLabel()->text().toStdString();
    EXPECT_TRUE(page->messageLabel()->text().contains("lsa")) << page->messageLabel()->text().toStdString();
    QString why;
    EXPECT_FALSE(ProbesPage::supports(icl::readRunSummary(s_lsa), &why));
    EXPECT_TRUE(ProbesPage::supports(icl::readRunSummary(s_gpt2), &why));
}
