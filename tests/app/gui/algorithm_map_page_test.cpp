// The Algorithm map page on real experiments: tiny runs written by icl::train (an LSA and a GPT-2) and an LSA
// holding the GD construction. Expected values come from independent calls of the core facade
// (computeAlgorithmMap with the page's options), never from the page under test.

#include "app/gui/algorithm_map_page.h"

#include <QComboBox>
#include <QLabel>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTest>

#include <qcustomplot.h>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "core/analysis/algorithm_map.h"
#include "core/io/config.h"
#include "core/training/trainer.h"
#include "widgets/algorithm_map_view.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/gui_helpers.h"

using icl::gui::AlgorithmMapPage;
using icl::gui::MainWindow;

namespace {
using namespace icl::test;

constexpr int kMapPrompts = 80;

icl::AlgorithmMap expectedMap(const std::string& path, int64_t step)
{
    icl::AlgorithmMapOptions o;
    o.checkpoint_step = step;
    o.n_prompts = kMapPrompts;
    o.store = false;
    return icl::computeAlgorithmMap(path, o);
}

/// Opens `path` in the scripted `window` and shows its Algorithm map on kMapPrompts prompts, once computed.
::testing::AssertionResult openOnMap(MainWindow& window, const std::string& path)
{
    ::testing::AssertionResult opened = openScripted(window, path);
    if (!opened)
        return opened;
    window.page<AlgorithmMapPage>()->setPromptCount(kMapPrompts);
    window.showPage<AlgorithmMapPage>();
    if (!waitIdle(window))
        return ::testing::AssertionFailure() << "the map of " << path << " is not done in time";
    return ::testing::AssertionSuccess();
}

} // namespace

TEST(AlgorithmMapPage, ShowsTheFacadesMapWithGreyedOutFamiliesAndAScatterPerCell)
{
    const std::string& lsa = tinyRun(TinyRun::Lsa);
    MainWindow window;
    ASSERT_TRUE(openOnMap(window, lsa));
    AlgorithmMapPage* page = window.page<AlgorithmMapPage>();
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();

    const icl::AlgorithmMap want = expectedMap(lsa, page->checkpointStep());
    const icl::AlgorithmMap& shown = page->map();
    EXPECT_FALSE(shown.first_look);
    EXPECT_EQ(shown.checkpoint_step, want.checkpoint_step);
    const icl::AlgorithmFamilyMap* newton = want.family("newton");
    ASSERT_NE(newton, nullptr);
    EXPECT_EQ(shown.family("newton")->sim_errors, newton->sim_errors);
    // The heatmap draws Newton first: layers × steps of the similarity of errors, on a fixed [−1, 1] colour bar.
    const icl::Matrix& m = page->mapView()->heatmap()->matrix();
    EXPECT_EQ(m.rows, int64_t(want.layers.size()));
    EXPECT_EQ(m.cols, newton->nSteps());
    EXPECT_EQ(m.data, newton->sim_errors);
    EXPECT_DOUBLE_EQ(page->mapView()->heatmap()->colorLimit(), 1.0);
    // The best-match curve: one point per layer at the column of its best step.
    ASSERT_EQ(page->mapView()->bestCurve()->dataCount(), int(want.layers.size()));
    const double bestColumn = page->mapView()->bestCurve()->data()->at(0)->key;
    EXPECT_DOUBLE_EQ(newton->steps[size_t(bestColumn)], newton->best_step[0]);

    // GD++ was not fitted for this run: greyed out, the reason as tool tip; it cannot be chosen.
    auto* model = qobject_cast<QStandardItemModel*>(page->familyChooser()->model());
    ASSERT_NE(model, nullptr);
    const int gdpp = page->familyChooser()->findData(QStringLiteral("gdpp"));
    EXPECT_FALSE(model->item(gdpp)->isEnabled());
    EXPECT_TRUE(model->item(gdpp)->toolTip().contains("gd_plus_plus")) << model->item(gdpp)->toolTip().toStdString();
    EXPECT_FALSE(page->setFamily(QStringLiteral("gdpp")));

    // GD and the induced weights redraw without recomputing.
    ASSERT_TRUE(page->setFamily(QStringLiteral("gd")));
    page->setShowWeights(true);
    EXPECT_FALSE(window.isBusy());
    EXPECT_EQ(page->mapView()->heatmap()->matrix().data, want.family("gd")->sim_weights);

    // A cell: the layer's query predictions against the algorithm step's, on the same prompts.
    ASSERT_TRUE(page->showCell(0, 1));
    const icl::Figure& scatter = page->scatterPlot()->figure();
    ASSERT_FALSE(scatter.series.empty());
    const int64_t n = want.n_scatter;
    ASSERT_EQ(int64_t(scatter.series[0].x.size()), n);
    size_t gd = 0;
    while (want.families[gd].family != "gd")
        ++gd;
    for (int64_t b = 0; b < n; ++b) {
        EXPECT_DOUBLE_EQ(scatter.series[0].x[size_t(b)], want.scatter_algorithm[gd][size_t(1 * n + b)]);
        EXPECT_DOUBLE_EQ(scatter.series[0].y[size_t(b)], want.scatter_model[size_t(b)]);
    }
    EXPECT_FALSE(page->showCell(int(want.layers.size()), 0));

    // Across training: one map per checkpoint, k*(ℓ) of the family against the training step.
    page->computeAcrossTraining();
    ASSERT_TRUE(waitIdle(window));
    ASSERT_EQ(page->trainingMaps().size(), 3u);
    const icl::Figure& training = page->trainingPlot()->figure();
    ASSERT_EQ(training.series.size(), want.layers.size());
    EXPECT_EQ(training.series[0].x, (std::vector<double>{0, 10, 20}));
}

TEST(AlgorithmMapPage, ReadsAGpt2ThroughProbesAndRefusesWhatHasNoMap)
{
    const std::string& gpt2 = tinyRun(TinyRun::Gpt2);
    MainWindow window;
    ASSERT_TRUE(openOnMap(window, gpt2));
    AlgorithmMapPage* page = window.page<AlgorithmMapPage>();
    EXPECT_EQ(page->map().readout, "probe");
    EXPECT_TRUE(page->summaryLabel()->text().contains("probes")) << page->summaryLabel()->text().toStdString();

    // A few-shot classification run has no map: the page says why.
    QTemporaryDir dir;
    const std::string fewshot = dir.filePath("fewshot.h5").toStdString();
    const nlohmann::json config = { { "seed", 4 }, { "device", "cpu" },
        { "task",
            { { "kind", "fewshot_classification" }, { "layout", "interleaved" }, { "n_context", 8 },
                { "n_classes", 30 }, { "n_holdout", 4 }, { "exemplar_dim", 8 } } },
        { "model", { { "kind", "gpt2" }, { "n_layers", 1 }, { "n_heads", 2 }, { "d_model", 16 } } },
        { "training",
            { { "optimizer", "adam" }, { "lr", 3e-3 }, { "batch_size", 16 }, { "steps", 5 }, { "eval_every", 5 },
                { "checkpoint_every", 5 } } },
        { "eval", { { "n_prompts", 16 } } } };
    icl::TrainOptions options;
    options.out_path = fewshot;
    options.threads = 1;
    icl::train(config, options, {});
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(fewshot)));
    window.showPage<AlgorithmMapPage>();
    ASSERT_TRUE(waitIdle(window, 60000));
    QLabel* message = page->messageLabel();
    ASSERT_NE(message, nullptr);
    EXPECT_TRUE(message->isVisibleTo(page));
    EXPECT_TRUE(message->text().contains("not a regression task")) << message->text().toStdString();
}
