// The Kernel view page on real renliu-kernel experiments written by icl::train with a tiny config.
// Expected values come from independent calls of the core facade (computeKernelView) and from the
// files (icl::readRunSummary), never from the page under test.

#include "app/gui/kernel_view_page.h"

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QSpinBox>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "core/analysis/kernel_view.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/gui_helpers.h"

using icl::gui::KernelViewPage;
using icl::gui::MainWindow;
using namespace icl::test;

namespace {

class KernelViewPageTest : public ::testing::Test {
protected:
    static void trainRun(const std::string& path, const std::vector<std::string>& extra)
    {
        std::vector<std::string> sets = { "training.batch_size=64", "training.eval_every=10",
            "training.checkpoint_every=10", "eval.n_prompts=200", "eval.bootstrap=10" };
        sets.insert(sets.end(), extra.begin(), extra.end());
        icl::test::trainTinyRun(path, "renliu-kernel", sets);
    }
    static void SetUpTestSuite()
    {
        s_dir = icl::test::scratchFolder("kernel-view");
        s_run = s_dir.filePath("kernel.h5").toStdString();
        trainRun(s_run, {});
        trainRun(s_dir.filePath("negative.h5").toStdString(),
            { "model.attention_variant=negative_samples", "model.variant_strength=1" });
        // Another task: not a variant of this run.
        trainRun(s_dir.filePath("other_task.h5").toStdString(), { "task.d=3" });
    }
    static inline QDir s_dir; // the runs side by side: the page looks for variants next to the file
    static inline std::string s_run;
};

} // namespace

TEST_F(KernelViewPageTest, ShowsTheFacadesNumbersAndTheVariantsOnTheSameTask)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<KernelViewPage>(window, s_run));
    KernelViewPage* page = window.page<KernelViewPage>();
    ASSERT_TRUE(page->isBusy()) << "showing the page starts its analysis";
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();

    icl::KernelViewOptions o;
    o.store = false;
    o.matrix_m = page->featuresChooser()->currentData().toInt();
    const icl::KernelView kv = icl::computeKernelView(s_run, o);
    EXPECT_EQ(page->checkpointStep(), 20);
    const icl::Matrix& exact = page->exactHeatmap()->matrix();
    ASSERT_EQ(exact.rows, kv.exact_attention.rows);
    ASSERT_EQ(exact.cols, kv.exact_attention.cols);
    for (size_t i = 0; i < exact.data.size(); ++i) {
        EXPECT_DOUBLE_EQ(exact.data[i], kv.exact_attention.data[i]);
        EXPECT_DOUBLE_EQ(page->approxHeatmap()->matrix().data[i], kv.approx_attention.data[i]);
    }
    // Error vs m on log-log axes, with the slope in the legend.
    const icl::Figure& err = page->errorPlot()->figure();
    EXPECT_TRUE(err.log_x);
    EXPECT_TRUE(err.log_y);
    ASSERT_FALSE(err.series.empty());
    EXPECT_EQ(err.series[0].y, kv.sweep.output_rmse.mean);
    EXPECT_NE(err.series[0].name.find("slope"), std::string::npos);
    EXPECT_TRUE(page->summaryLabel()->text().contains(QString::number(kv.sweep.output_rmse.slope, 'f', 3)));
    EXPECT_EQ(page->lossPlot()->figure().series.size(), kv.loss.size());

    // The variant on the same task is found next to the file; the other task is not.
    const icl::Figure& variants = page->variantPlot()->figure();
    std::vector<std::string> names;
    for (const auto& s : variants.series)
        names.push_back(s.name);
    ASSERT_GE(names.size(), 2u);
    EXPECT_EQ(names[0], "softmax (kernel.h5)");
    EXPECT_EQ(names[1], "negative_samples β=1 (negative.h5)");
    for (const auto& n : names)
        EXPECT_EQ(n.find("other_task"), std::string::npos);
    const icl::RunSummary neg = icl::readRunSummary(s_dir.filePath("negative.h5").toStdString());
    EXPECT_EQ(variants.series[1].y.back(), neg.metrics.at("eval_loss").back());

    // A file added by the user joins the comparison; exports carry the plotted data.
    page->addVariantFiles({ s_dir.filePath("other_task.h5") });
    ASSERT_TRUE(waitIdle(window, 60000));
    EXPECT_EQ(page->variantFiles().size(), 3);
    const std::string csv = s_dir.filePath("err.csv").toStdString();
    std::string error;
    ASSERT_TRUE(page->exactHeatmap()->exportTo(csv, "csv", 100, &error)) << error;
    EXPECT_GT(QFileInfo(QString::fromStdString(csv)).size(), 100);
}

TEST_F(KernelViewPageTest, FollowsTheTimelineAndRefusesLinearModels)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<KernelViewPage>(window, s_run));
    ASSERT_TRUE(waitIdle(window));
    ASSERT_EQ(window.selectCheckpoint(10), 10);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(window.page<KernelViewPage>()->summaryLabel()->text().startsWith("Checkpoint 10,"))
        << window.page<KernelViewPage>()->summaryLabel()->text().toStdString();

    const std::string linear = s_dir.filePath("linear/lsa.h5").toStdString();
    QDir().mkpath(s_dir.filePath("linear"));
    trainRun(linear, { "model.softmax_layers=0" });
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(linear)));
    EXPECT_FALSE(window.page<KernelViewPage>()->isBusy());
    EXPECT_TRUE(window.page<KernelViewPage>()->messageLabel()->isVisibleTo(window.page<KernelViewPage>()));
    EXPECT_TRUE(window.page<KernelViewPage>()->messageLabel()->text().contains("softmax_layers"));
}
