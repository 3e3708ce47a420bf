// The ICL vs IWL page on real experiments written by icl::train: a tiny few-shot classification GPT-2 (Chan et al.
// 2022) and a pair-layout LSA regression run, and a sweep table written by hand. Expected values come from the
// file's stored metrics, from independent calls of icl::computeIclIwl with the page's options and from means worked
// out by hand, never from the page.

#include "app/gui/icl_iwl_page.h"

#include <algorithm>
#include <cmath>

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "core/analysis/fewshot_sequence.h"
#include "core/analysis/icl_iwl.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"
#include "widgets/bar_chart_view.h"
#include "widgets/exemplar_strip.h"
#include "widgets/plot_view.h"
#include "tests/support/gui_helpers.h"
#include "tests/support/tiny_runs.h"

using icl::gui::IclIwlPage;
using icl::gui::MainWindow;

namespace {
using namespace icl::test;

/// A few-shot classification run that trains in about a second (as in classification_trainer_test.cpp):
/// evaluations at steps 0, 5, …, 20 on 64 sequences, checkpoints at 0, 10, 20.
nlohmann::json fewShotConfig()
{
    return { { "seed", 4 }, { "device", "cpu" },
        { "task",
            { { "kind", "fewshot_classification" }, { "layout", "interleaved" }, { "n_context", 8 },
                { "n_classes", 30 }, { "n_holdout", 4 }, { "exemplar_dim", 8 }, { "within_class_noise", 0.1 },
                { "p_bursty", 0.9 } } },
        { "model", { { "kind", "gpt2" }, { "n_layers", 1 }, { "n_heads", 2 }, { "d_model", 16 } } },
        { "training",
            { { "optimizer", "adam" }, { "lr", 3e-3 }, { "batch_size", 16 }, { "steps", 20 }, { "grad_clip", 1.0 },
                { "schedule", "inverse_sqrt" }, { "warmup_steps", 5 }, { "eval_every", 5 },
                { "checkpoint_every", 10 } } },
        { "eval", { { "n_prompts", 64 } } } };
}

class IclIwlPageTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = scratchFolder("icl-iwl");
        icl::TrainOptions options;
        options.out_path = s_fewshot = s_dir.filePath("fewshot.h5").toStdString();
        icl::train(fewShotConfig(), options, {});
        s_lsa = tinyRun(TinyRun::Lsa); // a regression run
    }

    /// "value with 4 decimals (count/n)", written here independently of the page.
    static QString fraction(double value, int64_t n)
    {
        const long long count = std::llround(value * double(n));
        return QString::number(value, 'f', 4) + QStringLiteral(" (") + QString::number(count) + QLatin1Char('/')
            + QString::number(n) + QLatin1Char(')');
    }

    /// The panel shows exactly an independent computeIclIwl with the page's options.
    static icl::IclIwlResult expectPanelOfFacade(const IclIwlPage* page)
    {
        const icl::IclIwlResult want = icl::computeIclIwl(s_fewshot, page->options());
        EXPECT_TRUE(page->result().has_value());
        if (!page->result())
            return want;
        const icl::IclIwlResult& got = *page->result();
        EXPECT_EQ(got.checkpoint_step, want.checkpoint_step);
        EXPECT_EQ(got.n_sequences, want.n_sequences);
        EXPECT_DOUBLE_EQ(got.icl_accuracy, want.icl_accuracy);
        EXPECT_DOUBLE_EQ(got.icl_accuracy_all_labels, want.icl_accuracy_all_labels);
        EXPECT_DOUBLE_EQ(got.iwl_accuracy, want.iwl_accuracy);
        EXPECT_DOUBLE_EQ(got.icl_in_context_rate, want.icl_in_context_rate);
        EXPECT_DOUBLE_EQ(got.iwl_in_context_rate, want.iwl_in_context_rate);
        const int64_t n = want.n_sequences;
        EXPECT_EQ(page->iclAccuracyLabel()->text(), fraction(want.icl_accuracy, n));
        EXPECT_EQ(page->iclAllLabelsLabel()->text(), fraction(want.icl_accuracy_all_labels, n));
        EXPECT_EQ(page->iwlAccuracyLabel()->text(), fraction(want.iwl_accuracy, n));
        EXPECT_EQ(page->iclInContextLabel()->text(), fraction(want.icl_in_context_rate, n));
        EXPECT_EQ(page->iwlInContextLabel()->text(), fraction(want.iwl_in_context_rate, n));
        EXPECT_EQ(page->checkpointLabel()->text(), QStringLiteral("step %1").arg(want.checkpoint_step));
        return want;
    }

    static inline QDir s_dir;
    static inline std::string s_fewshot, s_lsa;
};

} // namespace

TEST_F(IclIwlPageTest, CurvesAreTheFileMetricsAndThePanelIsComputeIclIwlOfTheSelectedCheckpoint)
{
    const icl::RunSummary file = icl::readRunSummary(s_fewshot);
    ASSERT_EQ(file.metrics.at("step"), (std::vector<double> { 0, 5, 10, 15, 20 }));

    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_fewshot));
    IclIwlPage* page = window.page<IclIwlPage>();
    EXPECT_TRUE(page->isSupported());
    EXPECT_FALSE(page->isBusy()) << "nothing runs while the page is hidden";

    // Curves over training: exactly the stored metrics against the stored steps, and the 2-way chance level.
    const icl::Figure& fig = page->plot()->figure();
    EXPECT_EQ(fig.name, "icl_iwl");
    const std::vector<std::pair<std::string, std::string>> curves = { { "ICL (holdout, labels {0, 1})", "icl_accuracy" },
        { "ICL (holdout, all labels)", "icl_accuracy_all_labels" }, { "IWL (no support)", "iwl_accuracy" } };
    ASSERT_EQ(fig.series.size(), curves.size() + 1);
    for (size_t i = 0; i < curves.size(); ++i) {
        EXPECT_EQ(fig.series[i].name, curves[i].first);
        EXPECT_EQ(fig.series[i].x, file.metrics.at("step"));
        EXPECT_EQ(fig.series[i].y, file.metrics.at(curves[i].second)) << curves[i].second;
    }
    EXPECT_EQ(fig.series.back().y, (std::vector<double> { 0.5, 0.5 }));

    window.showPage<IclIwlPage>();
    ASSERT_TRUE(page->isBusy()) << "showing the page starts its evaluation";
    ASSERT_TRUE(waitIdle(window));
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();
    EXPECT_EQ(page->checkpointStep(), 20);
    EXPECT_EQ(window.currentPlot(), page->plot());
    icl::IclIwlResult shown = expectPanelOfFacade(page);
    // On the run's own sequences the evaluation reproduces the metrics stored at that step (index 4: step 20).
    EXPECT_EQ(shown.n_sequences, 64);
    EXPECT_DOUBLE_EQ(shown.icl_accuracy, file.metrics.at("icl_accuracy")[4]);
    EXPECT_DOUBLE_EQ(shown.iwl_accuracy, file.metrics.at("iwl_accuracy")[4]);
    EXPECT_DOUBLE_EQ(shown.iwl_in_context_rate, file.metrics.at("iwl_in_context_rate")[4]);

    // Following the timeline.
    ASSERT_EQ(window.selectCheckpoint(10), 10);
    ASSERT_TRUE(waitIdle(window));
    shown = expectPanelOfFacade(page);
    EXPECT_EQ(shown.checkpoint_step, 10);
    EXPECT_DOUBLE_EQ(shown.icl_accuracy, file.metrics.at("icl_accuracy")[2]);
    EXPECT_DOUBLE_EQ(shown.icl_accuracy_all_labels, file.metrics.at("icl_accuracy_all_labels")[2]);
    EXPECT_DOUBLE_EQ(shown.iwl_accuracy, file.metrics.at("iwl_accuracy")[2]);
    EXPECT_DOUBLE_EQ(shown.icl_in_context_rate, file.metrics.at("icl_in_context_rate")[2]);

    // Another number of sequences: fresh sequences, the same facade.
    page->setSequenceCount(32);
    ASSERT_TRUE(waitIdle(window));
    shown = expectPanelOfFacade(page);
    EXPECT_EQ(shown.n_sequences, 32);
    EXPECT_EQ(shown.checkpoint_step, 10);
    // No common / rare split in this run: its rows stay hidden.
    for (const QLabel* row :
        { page->iclCommonLabel(), page->iclRareLabel(), page->iwlCommonLabel(), page->iwlRareLabel() })
        EXPECT_TRUE(row->isHidden()) << row->objectName().toStdString();
}

TEST_F(IclIwlPageTest, PanelShowsCommonAndRareAccuraciesOfASplitRun)
{
    // The paper's rare-bursty / common-supervised mix on the tiny run: 10 of the 30 training classes common.
    nlohmann::json config = fewShotConfig();
    config["task"]["n_common_classes"] = 10;
    config["task"]["p_bursty_zipfian"] = 0.0;
    config["task"]["non_bursty_type"] = "common";
    const std::string split = s_dir.filePath("split.h5").toStdString();
    icl::TrainOptions options;
    options.out_path = split;
    icl::train(config, options, {});

    MainWindow window;
    ASSERT_TRUE(openOnPage<IclIwlPage>(window, split));
    IclIwlPage* page = window.page<IclIwlPage>();
    ASSERT_TRUE(waitIdle(window));
    ASSERT_TRUE(page->result().has_value()) << page->statusLabel()->text().toStdString();
    const icl::IclIwlResult want = icl::computeIclIwl(split, page->options());
    ASSERT_TRUE(want.common_rare_split);
    const int64_t n = want.n_sequences;
    const std::vector<std::pair<const QLabel*, double>> rows = { { page->iclCommonLabel(), want.icl_accuracy_common },
        { page->iclRareLabel(), want.icl_accuracy_rare }, { page->iwlCommonLabel(), want.iwl_accuracy_common },
        { page->iwlRareLabel(), want.iwl_accuracy_rare } };
    for (const auto& [row, value] : rows) {
        EXPECT_FALSE(row->isHidden()) << row->objectName().toStdString();
        EXPECT_EQ(row->text(), fraction(value, n)) << row->objectName().toStdString();
    }

    // A run without the split afterwards hides the rows again (as soon as it is open).
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_fewshot)));
    for (const auto& [row, value] : rows)
        EXPECT_TRUE(row->isHidden()) << row->objectName().toStdString();
    ASSERT_TRUE(waitIdle(window));
    ASSERT_TRUE(page->result().has_value());
    for (const auto& [row, value] : rows)
        EXPECT_TRUE(row->isHidden()) << row->objectName().toStdString();
}

TEST_F(IclIwlPageTest, RegressionRunShowsOneLineSayingThePageIsForFewShotClassification)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<IclIwlPage>(window, s_lsa));
    IclIwlPage* page = window.page<IclIwlPage>();
    EXPECT_FALSE(page->isSupported());
    EXPECT_FALSE(page->isBusy()) << "nothing to evaluate";
    EXPECT_FALSE(page->messageLabel()->isHidden());
    EXPECT_TRUE(page->plot()->isHidden() || !page->plot()->isVisibleTo(page));
    EXPECT_TRUE(page->messageLabel()->text().contains("fewshot_classification"))
        << page->messageLabel()->text().toStdString();
    EXPECT_TRUE(page->messageLabel()->text().contains("linear_regression"))
        << page->messageLabel()->text().toStdString();
    EXPECT_TRUE(page->plot()->figure().series.empty());
    EXPECT_FALSE(page->result().has_value());

    // Opening a few-shot run afterwards brings the page back.
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_fewshot)));
    EXPECT_TRUE(page->messageLabel()->isHidden());
    EXPECT_TRUE(page->plot()->isVisibleTo(page));
    ASSERT_TRUE(waitIdle(window));
    expectPanelOfFacade(page);
}

TEST_F(IclIwlPageTest, SweepTabDrawsFinalIclAndIwlAccuracyAgainstAGridColumnAveragedOverSeeds)
{
    // A table in the layout `icl-cli aggregate` writes: grid columns, step, final metrics (an empty cell: no value).
    QTemporaryDir dir;
    ASSERT_TRUE(QDir(dir.path()).mkpath("aggregate"));
    QFile csv(dir.filePath("aggregate/table.csv"));
    ASSERT_TRUE(csv.open(QIODevice::WriteOnly | QIODevice::Text));
    csv.write("task.p_bursty,model.kind,seed,step,icl_accuracy,icl_accuracy_all_labels,iwl_accuracy,"
              "icl_in_context_rate,eval_loss,train_loss\n"
              "0,gpt2,0,100,0.5,0.1,0.9,0.5,1,1\n"
              "0,gpt2,1,100,0.6,0.1,0.7,0.5,1,1\n"
              "0.9,gpt2,0,100,0.9,0.4,0.2,1,1,1\n"
              "0.9,gpt2,1,100,0.8,0.4,,1,1,1\n"
              "0,lstm,0,100,0.5,0.1,0.8,0.5,1,1\n"
              "0.9,lstm,0,100,0.55,0.2,0.3,0.6,1,1\n");
    csv.close();

    MainWindow window;
    window.setScripted(true);
    window.showPage<IclIwlPage>();
    IclIwlPage* page = window.page<IclIwlPage>();
    ASSERT_TRUE(page->openSweep(dir.path())) << page->sweepView()->statusLabel()->text().toStdString();
    EXPECT_EQ(window.currentPlot(), page->sweepView()->plot());
    // seed is averaged over; p_bursty and model.kind (named ticks) can be on the x axis.
    EXPECT_EQ(page->sweepColumns(), (QStringList { "task.p_bursty", "model.kind" }));
    EXPECT_EQ(page->sweepView()->columnChooser()->currentText(), "task.p_bursty");

    const icl::Figure& f = page->sweepView()->plot()->figure();
    EXPECT_EQ(f.x_label, "task.p_bursty");
    struct Want {
        std::string name;
        std::vector<double> y;
    };
    const std::vector<Want> want = { { "ICL (kind gpt2)", { (0.5 + 0.6) / 2, (0.9 + 0.8) / 2 } },
        { "IWL (kind gpt2)", { (0.9 + 0.7) / 2, 0.2 } }, { "ICL (kind lstm)", { 0.5, 0.55 } },
        { "IWL (kind lstm)", { 0.8, 0.3 } } };
    ASSERT_EQ(f.series.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(f.series[i].name, want[i].name);
        EXPECT_EQ(f.series[i].x, (std::vector<double> { 0.0, 0.9 })) << want[i].name;
        ASSERT_EQ(f.series[i].y.size(), 2u) << want[i].name;
        for (size_t k = 0; k < 2; ++k)
            EXPECT_DOUBLE_EQ(f.series[i].y[k], want[i].y[k]) << want[i].name << " point " << k;
    }
    EXPECT_FALSE(f.log_x);
    EXPECT_TRUE(f.x_ticks.empty());

    // model.kind on the x axis: one named tick per kind in table order (gpt2 at 0, lstm at 1), markers, one series
    // per p_bursty; the means worked out by hand from the table above (the empty IWL cell left out).
    ASSERT_TRUE(page->setSweepColumn("model.kind"));
    const icl::Figure& g = page->sweepView()->plot()->figure();
    EXPECT_EQ(g.x_label, "model.kind");
    EXPECT_EQ(g.x_ticks, (std::vector<double> { 0.0, 1.0 }));
    EXPECT_EQ(g.x_tick_labels, (std::vector<std::string> { "gpt2", "lstm" }));
    const std::vector<Want> byKind = { { "ICL (p_bursty 0)", { (0.5 + 0.6) / 2, 0.5 } },
        { "IWL (p_bursty 0)", { (0.9 + 0.7) / 2, 0.8 } }, { "ICL (p_bursty 0.9)", { (0.9 + 0.8) / 2, 0.55 } },
        { "IWL (p_bursty 0.9)", { 0.2, 0.3 } } };
    ASSERT_EQ(g.series.size(), byKind.size());
    for (size_t i = 0; i < byKind.size(); ++i) {
        EXPECT_EQ(g.series[i].name, byKind[i].name);
        EXPECT_EQ(g.series[i].style, icl::Series::Style::Markers) << byKind[i].name;
        EXPECT_EQ(g.series[i].x, (std::vector<double> { 0.0, 1.0 })) << byKind[i].name;
        ASSERT_EQ(g.series[i].y.size(), 2u) << byKind[i].name;
        for (size_t k = 0; k < 2; ++k)
            EXPECT_DOUBLE_EQ(g.series[i].y[k], byKind[i].y[k]) << byKind[i].name << " point " << k;
    }
    EXPECT_FALSE(page->setSweepColumn("seed"));

    // The number of classes over two decades (100 … 12,800) is drawn on a log axis, as icl-cli aggregate does.
    QTemporaryDir classes;
    QFile classesCsv(classes.filePath("table.csv"));
    ASSERT_TRUE(classesCsv.open(QIODevice::WriteOnly | QIODevice::Text));
    classesCsv.write("task.n_classes,seed,step,icl_accuracy,iwl_accuracy\n"
                     "100,0,10,0.5,0.9\n1600,0,10,0.7,0.5\n12800,0,10,0.9,0.1\n");
    classesCsv.close();
    ASSERT_TRUE(page->openSweep(classes.path())) << page->sweepView()->statusLabel()->text().toStdString();
    EXPECT_EQ(page->sweepColumns(), QStringList { "task.n_classes" });
    EXPECT_TRUE(page->sweepView()->plot()->figure().log_x);

    // A directory that was never aggregated: a clear message, nothing plotted.
    QTemporaryDir empty;
    EXPECT_FALSE(page->openSweep(empty.path()));
    EXPECT_TRUE(page->sweepView()->statusLabel()->text().contains("icl-cli aggregate"))
        << page->sweepView()->statusLabel()->text().toStdString();
    EXPECT_TRUE(page->sweepView()->plot()->figure().series.empty());
    EXPECT_TRUE(page->sweepColumns().isEmpty());
}

namespace {

/// The caption the sequence viewer should write under item `i` of `s`, written here from the facade's values.
QString expectedCaption(const icl::FewShotSequence& s, size_t i)
{
    const icl::FewShotItem& item = s.items[i];
    if (i + 1 == s.items.size())
        return QStringLiteral("query\nclass %1\ntrue label %2").arg(item.class_id).arg(item.label);
    return QStringLiteral("class %1\nlabel %2").arg(item.class_id).arg(item.label);
}

/// The sequence tab shows exactly an independent sampleFewShotSequence of the run at `step` with the tab's
/// kind and seed: the tiles (exemplar values, classes, labels, holdout marks, the query last and highlighted),
/// the true and predicted labels, the in-context flag and the five most probable labels.
icl::FewShotSequence expectSequenceOfFacade(const IclIwlPage* page, const std::string& path, int64_t step)
{
    const icl::FewShotSequence want = icl::sampleFewShotSequence(path, step, page->sequenceKind(), page->sequenceSeed());
    EXPECT_TRUE(page->sequence().has_value()) << page->sequenceView()->statusLabel()->text().toStdString();
    if (!page->sequence())
        return want;
    const icl::FewShotSequence& got = *page->sequence();
    EXPECT_EQ(got.checkpoint_step, step);
    EXPECT_EQ(got.predicted_label, want.predicted_label);
    EXPECT_EQ(got.probabilities, want.probabilities);

    const std::vector<icl::widgets::ExemplarTile>& tiles = page->sequenceView()->strip()->tiles();
    EXPECT_EQ(tiles.size(), want.items.size());
    for (size_t i = 0; i < std::min(tiles.size(), want.items.size()); ++i) {
        EXPECT_EQ(tiles[i].caption, expectedCaption(want, i)) << "tile " << i;
        EXPECT_EQ(tiles[i].values, want.items[i].exemplar) << "tile " << i;
        EXPECT_EQ(tiles[i].shape, want.exemplar_shape);
        EXPECT_EQ(tiles[i].highlighted, i + 1 == want.items.size()) << "only the query is highlighted";
        EXPECT_EQ(tiles[i].badge,
            want.items[i].holdout ? QStringLiteral("holdout") : want.items[i].rare ? QStringLiteral("rare") : QString())
            << "tile " << i;
    }
    EXPECT_EQ(page->sequenceView()->trueLabelLabel()->text(), QStringLiteral("%1 (p = %2)")
                                                  .arg(want.query().label)
                                                  .arg(want.probabilities[size_t(want.query().label)], 0, 'f', 3));
    const bool correct = want.predicted_label == want.query().label;
    const QString predicted = page->sequenceView()->predictedLabelLabel()->text();
    EXPECT_TRUE(predicted.startsWith(QString::number(want.predicted_label) + QLatin1Char(' ')))
        << predicted.toStdString();
    EXPECT_TRUE(predicted.endsWith(correct ? QStringLiteral("correct") : QStringLiteral("wrong")))
        << predicted.toStdString();
    EXPECT_TRUE(page->sequenceView()->predictedLabelLabel()->styleSheet().contains(correct ? "#1a7f37" : "#c62828"))
        << "green when right, red when wrong";
    bool inContext = false;
    for (size_t i = 0; i + 1 < want.items.size(); ++i)
        inContext |= want.items[i].label == want.predicted_label;
    EXPECT_EQ(page->sequenceView()->inContextLabel()->text(), inContext ? QStringLiteral("yes") : QStringLiteral("no"));

    // Top 5 of the vocabulary, sorted here.
    std::vector<std::pair<double, int64_t>> ranked;
    for (size_t l = 0; l < want.probabilities.size(); ++l)
        ranked.emplace_back(-want.probabilities[l], int64_t(l));
    std::sort(ranked.begin(), ranked.end());
    const icl::widgets::BarChart& chart = page->sequenceView()->probabilityChart()->chart();
    EXPECT_EQ(chart.labels.size(), 5u);
    for (size_t k = 0; k < std::min<size_t>(5, chart.labels.size()); ++k) {
        EXPECT_EQ(chart.labels[k], std::to_string(ranked[k].second)) << "bar " << k;
        EXPECT_DOUBLE_EQ(chart.values[k], -ranked[k].first) << "bar " << k;
    }
    return want;
}

} // namespace

TEST_F(IclIwlPageTest, SequenceTabShowsTheSampledSequenceAndThePredictionOfTheSelectedCheckpoint)
{
    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_fewshot));
    IclIwlPage* page = window.page<IclIwlPage>();
    EXPECT_EQ(IclIwlPage::tabNames(), (QStringList { "training", "sweep", "sequence" }));
    ASSERT_TRUE(page->showTab("sequence"));
    EXPECT_FALSE(page->showTab("attention"));
    EXPECT_EQ(page->tabs()->tabText(page->tabs()->currentIndex()), "Sequence");
    EXPECT_FALSE(page->isBusy()) << "nothing runs while the page is hidden";

    window.showPage<IclIwlPage>();
    ASSERT_TRUE(page->isBusy());
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(window.currentPlot(), nullptr) << "the sequence tab has a bar chart, not a PlotView";
    EXPECT_EQ(page->sequenceKind(), icl::FewShotSequenceKind::Training);
    EXPECT_EQ(page->sequenceSeed(), 0u);
    icl::FewShotSequence shown = expectSequenceOfFacade(page, s_fewshot, 20);
    EXPECT_TRUE(page->sequenceView()->predicted01Label()->isHidden()) << "the {0, 1} read-out is for ICL sequences";

    // An ICL sequence: holdout classes, labels {0, 1}, and the {0, 1} read-out.
    page->setSequence(icl::FewShotSequenceKind::Icl, 3);
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->sequenceView()->kindChooser()->currentData().toString(), "icl");
    shown = expectSequenceOfFacade(page, s_fewshot, 20);
    for (const auto& tile : page->sequenceView()->strip()->tiles())
        EXPECT_EQ(tile.badge, "holdout");
    EXPECT_FALSE(page->sequenceView()->predicted01Label()->isHidden());
    EXPECT_TRUE(page->sequenceView()->predicted01Label()->text().startsWith(QString::number(shown.predicted_label_01)));

    // Resample (Ctrl+R): the next seed.
    EXPECT_EQ(page->sequenceView()->resampleButton()->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_R));
    page->sequenceView()->resampleButton()->click();
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->sequenceSeed(), 4u);
    expectSequenceOfFacade(page, s_fewshot, 20);

    // Following the timeline.
    ASSERT_EQ(window.selectCheckpoint(10), 10);
    ASSERT_TRUE(waitIdle(window));
    expectSequenceOfFacade(page, s_fewshot, 10);

    // The IWL kind from the combo box, as a user picks it.
    page->sequenceView()->kindChooser()->setCurrentIndex(page->sequenceView()->kindChooser()->findData("iwl"));
    ASSERT_TRUE(waitIdle(window));
    EXPECT_EQ(page->sequenceKind(), icl::FewShotSequenceKind::Iwl);
    shown = expectSequenceOfFacade(page, s_fewshot, 10);
    EXPECT_EQ(page->sequenceView()->inContextLabel()->text() == "yes", shown.prediction_in_context);

    // Another tab: a new seed waits until the sequence tab is back.
    page->showTab("training");
    ASSERT_TRUE(waitIdle(window));
    page->setSequence(icl::FewShotSequenceKind::TrainingBursty, 9);
    EXPECT_FALSE(page->isBusy());
    page->showTab("sequence");
    ASSERT_TRUE(page->isBusy());
    ASSERT_TRUE(waitIdle(window));
    shown = expectSequenceOfFacade(page, s_fewshot, 10);
    EXPECT_TRUE(shown.bursty);
    EXPECT_TRUE(page->sequenceView()->infoLabel()->text().contains("bursty")) << page->sequenceView()->infoLabel()->text().toStdString();

    // A regression run: no sequence, one line saying what the viewer is for.
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_lsa)));
    EXPECT_FALSE(page->isBusy());
    EXPECT_FALSE(page->sequence().has_value());
    EXPECT_TRUE(page->sequenceView()->strip()->tiles().empty());
    EXPECT_TRUE(page->sequenceView()->statusLabel()->text().contains("fewshot_classification"))
        << page->sequenceView()->statusLabel()->text().toStdString();
}
