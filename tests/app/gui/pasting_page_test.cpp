// The Pasting page on real experiments written by icl::train with tiny configs (a 2-block GPT-2 parent
// from the guo-pasting preset and a pair-layout LSA). Expected values come from an independent call of
// icl::computePasting with the page's options and from the files (icl::readRunSummary), never from the
// page under test.

#include "app/gui/pasting_page.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "app/gui/main_window.h"
#include "core/analysis/pasting.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/types/number_format.h"
#include "core/training/trainer.h"
#include "widgets/figure_export.h"
#include "widgets/plot_view.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/same_values.h"
#include "tests/support/qt_files.h"
#include "tests/support/gui_helpers.h"

using icl::gui::MainWindow;
using icl::gui::PastingPage;

namespace {
using namespace icl::test;

class PastingPageTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = scratchFolder("pasting");
        s_gpt2 = s_dir.filePath("guo.h5").toStdString();
        trainTinyRun(s_gpt2, "guo-pasting",
            { "task.d=4", "task.rep_dim=4", "task.n_context=6", "model.n_layers=2", "model.n_heads=2",
                "model.d_model=16", "training.batch_size=16", "training.eval_every=10", "training.checkpoint_every=10",
                "eval.n_prompts=64", "eval.bootstrap=10" });
        s_lsa = tinyRun(TinyRun::Lsa); // a run the page does not apply to
    }

    /// Shows `window` scripted, opens `path` and goes to the Pasting page, as a user does before clicking.
    static ::testing::AssertionResult showOnPastingPage(MainWindow& window, const std::string& path)
    {
        window.setScripted(true);
        window.show();
        if (!QTest::qWaitForWindowExposed(&window))
            return ::testing::AssertionFailure() << "the window was not exposed";
        if (!window.openExperiment(QString::fromStdString(path)))
            return ::testing::AssertionFailure() << "cannot open " << path;
        window.showPage<PastingPage>();
        return ::testing::AssertionSuccess();
    }

    /// Chooses the embedding and the cut layer ℓ on the page's form.
    static void choose(PastingPage* page, const char* embedding, int cut)
    {
        page->optionsForm()->embedding()->setCurrentIndex(page->optionsForm()->embedding()->findData(embedding));
        page->optionsForm()->cutLayer()->setValue(cut);
    }

    /// Small options on the page's controls: ℓ = 1 with one new block, 12 steps, 64 eval prompts.
    static void configure(PastingPage* page, int steps)
    {
        page->setThreads(1);
        page->optionsForm()->cutLayer()->setValue(1);
        page->optionsForm()->embedding()->setCurrentIndex(page->optionsForm()->embedding()->findData("transformer1"));
        page->optionsForm()->steps()->setValue(steps);
        page->optionsForm()->learningRate()->setValue(0.002);
        page->optionsForm()->batchSize()->setValue(16);
        page->optionsForm()->evalPrompts()->setValue(64);
        page->optionsForm()->evalEvery()->setValue(4);
        page->optionsForm()->seed()->setValue(7);
    }

    static int storedPastings(const std::string& path)
    {
        const auto analyses = icl::readRunSummary(path).analyses;
        const auto it = analyses.find("pasting");
        return it == analyses.end() ? 0 : it->second;
    }

    /// Opens the GPT-2 parent in this test's scripted window, whose Pasting page m_page is not shown (nothing runs):
    /// for the tests of the options form.
    ::testing::AssertionResult openParentForm()
    {
        m_window = std::make_unique<MainWindow>();
        m_page = m_window->page<PastingPage>();
        return openScripted(*m_window, s_gpt2);
    }

    std::unique_ptr<MainWindow> m_window;
    PastingPage* m_page = nullptr;
    static inline QDir s_dir;
    static inline std::string s_gpt2, s_lsa;
};

std::vector<double> toDouble(const std::vector<int64_t>& v)
{
    return std::vector<double>(v.begin(), v.end());
}

/// The arguments of the guo-pasting pasting in scripts/reproduce.py (its "paste" list), in order; empty when the
/// script or the entry is not found.
std::vector<std::string> reproducePastingArguments()
{
    std::ifstream f(std::string(ICL_TEST_DATA_DIR) + "/../../scripts/reproduce.py");
    std::stringstream text;
    text << f.rdbuf();
    const std::string s = text.str();
    const size_t entry = s.find("\"id\": \"guo-pasting\"");
    const size_t open = entry == std::string::npos ? entry : s.find("\"paste\": [", entry);
    const size_t close = open == std::string::npos ? open : s.find(']', open);
    if (close == std::string::npos)
        return {};
    const std::string list = s.substr(open + 10, close - open - 10);
    std::vector<std::string> args;
    const std::regex quoted("\"([^\"]*)\"");
    for (auto it = std::sregex_iterator(list.begin(), list.end(), quoted); it != std::sregex_iterator(); ++it)
        args.push_back((*it)[1].str());
    return args;
}

} // namespace

TEST_F(PastingPageTest, GuoSettingsAreTheOnesTheReproduceScriptPastesWith)
{
    const std::vector<std::string> args = reproducePastingArguments();
    ASSERT_GE(args.size(), 3u) << "scripts/reproduce.py's guo-pasting entry not found";
    ASSERT_EQ(args[2], "paste");
    auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
    auto value = [&](const std::string& flag) {
        const auto it = std::find(args.begin(), args.end(), flag);
        return it == args.end() || it + 1 == args.end() ? std::string() : *(it + 1);
    };
    for (const char* flag : { "--embedding", "--cut-layer", "--steps", "--lr", "--schedule", "--eval-every" })
        ASSERT_FALSE(value(flag).empty()) << flag << " is not in the script's command";

    MainWindow window;
    ASSERT_TRUE(showOnPastingPage(window, s_gpt2)); // clicked like a user would
    PastingPage* page = window.page<PastingPage>();
    icl::gui::PastingOptionsForm* form = page->optionsForm();
    // Start away from every value the button sets.
    choose(page, "linear", 0);
    form->steps()->setValue(7);
    form->learningRate()->setValue(0.5);
    form->batchSize()->setValue(5);
    form->evalEvery()->setValue(3);
    form->seed()->setValue(9);
    form->trainScratch()->setChecked(false);
    form->matchLabelVariance()->setChecked(true);
    QPushButton* button = form->guoSettings();
    ASSERT_NE(button, nullptr);
    ASSERT_TRUE(button->isEnabled());
    QTest::mouseClick(button, Qt::LeftButton);

    const icl::PastingOptions o = page->options();
    EXPECT_EQ(o.embedding, value("--embedding"));
    EXPECT_EQ(o.cut_layer, std::stoll(value("--cut-layer")));
    EXPECT_EQ(o.copy_parent_embedding, has("--init-from-parent"));
    EXPECT_EQ(o.match_label_scale, has("--match-label-scale"));
    EXPECT_EQ(o.match_label_variance, has("--match-label-variance"));
    EXPECT_FALSE(o.zero_new_mlp);
    EXPECT_EQ(o.steps, std::stoll(value("--steps")));
    EXPECT_DOUBLE_EQ(o.lr, std::stod(value("--lr")));
    EXPECT_EQ(o.schedule, value("--schedule"));
    EXPECT_EQ(o.eval_every, std::stoll(value("--eval-every")));
    // What the script leaves to the CLI: batch 64, the parent's seed (0), the scratch model trained.
    EXPECT_EQ(o.batch_size, has("--batch-size") ? std::stoll(value("--batch-size")) : 64);
    EXPECT_EQ(o.seed, has("--seed") ? std::stoull(value("--seed")) : 0u);
    EXPECT_TRUE(o.train_scratch);
    EXPECT_EQ(o.w_scale, 0.0) << "matched, not given";
}

TEST_F(PastingPageTest, OpeningAParentShowsItsLatestStoredPasting)
{
    // A copy of the parent with two pastings stored by the core (the page's own runs are other tests').
    const std::string parent = s_dir.filePath("stored_parent.h5").toStdString();
    std::filesystem::copy_file(s_gpt2, parent, std::filesystem::copy_options::overwrite_existing);
    icl::PastingOptions o;
    o.cut_layer = 1;
    o.embedding = "transformer1";
    o.steps = 4;
    o.eval_every = 2;
    o.batch_size = 16;
    o.n_eval = 64;
    o.threads = 1;
    o.overwrite = true;
    o.out_path = s_dir.filePath("stored_child.h5").toStdString();
    (void)icl::computePasting(parent, o);
    o.steps = 6;
    o.train_scratch = false;
    const icl::PastingResult latest = icl::computePasting(parent, o);
    ASSERT_EQ(latest.analysis_id, "0002");

    MainWindow window;
    ASSERT_TRUE(showOnPastingPage(window, parent));
    PastingPage* page = window.page<PastingPage>();
    ASSERT_TRUE(page->result().has_value()) << "the stored result is shown without running anything";
    EXPECT_FALSE(page->isBusy());
    const icl::PastingResult& got = *page->result();
    EXPECT_EQ(got.analysis_id, "0002");
    EXPECT_EQ(got.steps, 6);
    EXPECT_TRUE(sameValues(got.pasted_curve, latest.pasted_curve));
    EXPECT_TRUE(sameValues(got.pasted_eval, latest.pasted_eval));
    EXPECT_EQ(got.pasted_loss, latest.pasted_loss);
    EXPECT_TRUE(page->statusLabel()->text().contains(QStringLiteral("/analysis/pasting/0002")))
        << page->statusLabel()->text().toStdString();
    EXPECT_TRUE(page->summaryLabel()->text().contains(QStringLiteral("6 steps")))
        << page->summaryLabel()->text().toStdString();
    // The plots are the stored result's: pasted, ridge and zero (no scratch model in the latest).
    const icl::Figure& icl = page->iclPlot()->figure();
    ASSERT_EQ(icl.series.size(), 3u);
    EXPECT_EQ(icl.series[0].name, "pasted");
    EXPECT_TRUE(sameValues(icl.series[0].y, latest.pasted_curve));
    EXPECT_EQ(icl.series[1].name, "ridge");
    EXPECT_TRUE(sameValues(icl.series[1].y, latest.ridge_curve));
    EXPECT_EQ(page->lossPlot()->figure().series.size(), 4u) << "pasted train and eval, ridge, zero";
    EXPECT_TRUE(page->optionsForm()->guoSettings()->isEnabled()) << "a shown result leaves the form usable";
}

TEST_F(PastingPageTest, TheDefaultOutputFileIsThatOfTheCli)
{
    // The default output file is icl-cli analyze paste's.
    EXPECT_EQ(PastingPage::defaultOutputPath("runs/parent.h5", 2, "transformer1"),
        QString::fromStdString((std::filesystem::path("runs") / "parent.paste-l2-transformer1.h5").string()));
}

TEST_F(PastingPageTest, StartFromParentIsOfferedWhereTheCoreDefinesIt)
{
    ASSERT_TRUE(openParentForm());
    QCheckBox* init = m_page->optionsForm()->initFromParent();
    ASSERT_NE(init, nullptr);
    choose(m_page, "transformer1", 0);
    EXPECT_FALSE(init->isEnabled()) << "transformer1 needs ℓ ≥ 1";
    choose(m_page, "transformer1", 1);
    EXPECT_TRUE(init->isEnabled());
    init->setChecked(true);
    EXPECT_TRUE(m_page->options().copy_parent_embedding);
    choose(m_page, "linear", 1);
    EXPECT_FALSE(init->isEnabled()) << "linear needs ℓ = 0";
    EXPECT_FALSE(m_page->options().copy_parent_embedding) << "a disabled choice is not passed on";
    choose(m_page, "linear", 0);
    EXPECT_TRUE(init->isEnabled());
    EXPECT_TRUE(m_page->options().copy_parent_embedding);
}

TEST_F(PastingPageTest, WithoutItsMlpIsOfferedOnlyForATransformer1StartedFromTheParent)
{
    ASSERT_TRUE(openParentForm());
    QCheckBox* init = m_page->optionsForm()->initFromParent();
    QCheckBox* zero = m_page->optionsForm()->zeroNewMlp();
    ASSERT_NE(zero, nullptr);
    choose(m_page, "transformer1", 1);
    init->setChecked(false);
    EXPECT_FALSE(zero->isEnabled()) << "PastingOptions::zero_new_mlp needs copy_parent_embedding";
    init->setChecked(true);
    ASSERT_TRUE(zero->isEnabled());
    zero->setChecked(true);
    EXPECT_TRUE(m_page->options().zero_new_mlp);
    EXPECT_TRUE(m_page->options().copy_parent_embedding);
    choose(m_page, "linear", 0);
    EXPECT_TRUE(m_page->options().copy_parent_embedding);
    EXPECT_FALSE(zero->isEnabled()) << "a linear embedding has no MLP";
    EXPECT_FALSE(m_page->options().zero_new_mlp) << "a disabled choice is not passed on";
    choose(m_page, "transformer1", 1);
    init->setChecked(false);
    EXPECT_FALSE(m_page->options().zero_new_mlp);
}

TEST_F(PastingPageTest, MatchLabelVarianceReplacesTheGivenWScale)
{
    ASSERT_TRUE(openParentForm());
    QCheckBox* match = m_page->optionsForm()->matchLabelVariance();
    ASSERT_NE(match, nullptr);
    m_page->optionsForm()->wScale()->setValue(0.7);
    EXPECT_FALSE(m_page->options().match_label_variance);
    EXPECT_DOUBLE_EQ(m_page->options().w_scale, 0.7);
    match->setChecked(true);
    EXPECT_TRUE(m_page->options().match_label_variance);
    EXPECT_EQ(m_page->options().w_scale, 0.0) << "PastingOptions refuses both";
    EXPECT_FALSE(m_page->optionsForm()->wScale()->isEnabled());
    match->setChecked(false);
    EXPECT_TRUE(m_page->optionsForm()->wScale()->isEnabled());
    EXPECT_DOUBLE_EQ(m_page->options().w_scale, 0.7);
}

TEST_F(PastingPageTest, MatchLabelScaleExcludesMatchLabelVarianceAndSetsTheSchedule)
{
    ASSERT_TRUE(openParentForm());
    icl::gui::PastingOptionsForm* form = m_page->optionsForm();
    QCheckBox* variance = form->matchLabelVariance();
    QCheckBox* scale = form->matchLabelScale();
    ASSERT_NE(scale, nullptr);
    form->wScale()->setValue(0.7);
    scale->setChecked(true);
    EXPECT_TRUE(m_page->options().match_label_scale);
    EXPECT_EQ(m_page->options().w_scale, 0.0) << "PastingOptions refuses w_scale with match_label_scale";
    EXPECT_FALSE(form->wScale()->isEnabled());
    variance->setChecked(true);
    EXPECT_FALSE(scale->isChecked()) << "PastingOptions refuses both matchings";
    EXPECT_TRUE(m_page->options().match_label_variance);
    EXPECT_FALSE(m_page->options().match_label_scale);
    scale->setChecked(true);
    EXPECT_FALSE(variance->isChecked());
    scale->setChecked(false);
    EXPECT_TRUE(form->wScale()->isEnabled());
    EXPECT_DOUBLE_EQ(m_page->options().w_scale, 0.7);

    EXPECT_EQ(m_page->options().schedule, "constant") << "the CLI's default";
    form->schedule()->setCurrentIndex(form->schedule()->findData(QStringLiteral("cosine")));
    EXPECT_EQ(m_page->options().schedule, "cosine");
}

TEST_F(PastingPageTest, BeforeAnyRunThePlotsHaveLabelledAxesAndNoSeries)
{
    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_gpt2));
    PastingPage* page = window.page<PastingPage>();
    for (icl::widgets::PlotView* view : { page->iclPlot(), page->lossPlot() }) {
        const icl::Figure& f = view->figure();
        EXPECT_TRUE(f.series.empty());
        EXPECT_FALSE(f.title.empty());
        EXPECT_FALSE(f.x_label.empty());
        EXPECT_FALSE(f.y_label.empty());
        EXPECT_EQ(view->plot()->xAxis->label().toStdString(), f.x_label) << "drawn, not only stored";
    }
    EXPECT_EQ(page->iclPlot()->figure().x_label, "number of in-context examples");
    EXPECT_EQ(page->lossPlot()->figure().x_label, "training step");
    for (icl::widgets::PlotView* view : { page->iclPlot(), page->lossPlot() })
        EXPECT_NE(view->figure().title.find("press Run"), std::string::npos) << "an empty plot says what fills it";
    EXPECT_TRUE(page->progressBar()->text().isEmpty()) << "no \"0 / 1\" before any run";
    EXPECT_TRUE(window.findChild<QProgressBar*>("statusProgress")->isHidden()) << "nothing runs";
}

TEST_F(PastingPageTest, RunShowsComputePastingAndWritesThePastedExperiment)
{
    MainWindow window;
    ASSERT_TRUE(showOnPastingPage(window, s_gpt2)); // clicked like a user would
    PastingPage* page = window.page<PastingPage>();
    EXPECT_FALSE(page->isBusy()) << "nothing runs before Run is pressed";
    EXPECT_FALSE(page->messageLabel()->isVisibleTo(page));
    EXPECT_EQ(page->optionsForm()->cutLayer()->minimum(), 0);
    EXPECT_EQ(page->optionsForm()->cutLayer()->maximum(), 1) << "ℓ ≤ L − 1 for a 2-block parent";
    EXPECT_EQ(page->checkpointStep(), 20);
    configure(page, 12);
    const QString out = s_dir.filePath("guo.paste-l1-transformer1.h5");
    EXPECT_EQ(page->optionsForm()->output()->placeholderText(), out) << "the default follows ℓ and the embedding";
    EXPECT_EQ(page->options().out_path, out.toStdString());
    const int storedBefore = storedPastings(s_gpt2);

    QTest::mouseClick(page->runButton(), Qt::LeftButton);
    ASSERT_TRUE(page->isBusy());
    EXPECT_TRUE(window.isBusy());
    EXPECT_TRUE(page->cancelButton()->isEnabled());
    EXPECT_FALSE(page->runButton()->isEnabled());
    EXPECT_FALSE(page->optionsForm()->steps()->isEnabled()) << "the options of a running pasting are fixed";
    EXPECT_TRUE(window.findChild<QPushButton*>("cancelButton")->isEnabled());
    ASSERT_TRUE(waitIdle(window, kGuiTimeoutMs));
    EXPECT_TRUE(page->statusLabel()->text().isEmpty()) << page->statusLabel()->text().toStdString();
    ASSERT_TRUE(page->result().has_value());
    // In the units of the Steps field (12), though the pasted and the scratch model each train 12 steps.
    EXPECT_EQ(page->progressBar()->maximum(), 12);
    EXPECT_EQ(page->progressBar()->value(), 12);
    EXPECT_EQ(page->progressBar()->text(), QStringLiteral("12 / 12 training steps"));
    EXPECT_TRUE(window.findChild<QProgressBar*>("statusProgress")->isHidden()) << "no full bar left when done";
    EXPECT_TRUE(page->runButton()->isEnabled());
    EXPECT_FALSE(page->cancelButton()->isEnabled());

    // Independent computation with the same options (another output file, nothing stored).
    icl::PastingOptions o = page->options();
    EXPECT_EQ(o.checkpoint_step, 20);
    EXPECT_EQ(o.cut_layer, 1);
    EXPECT_EQ(o.embedding, "transformer1");
    EXPECT_EQ(o.steps, 12);
    EXPECT_EQ(o.batch_size, 16);
    EXPECT_EQ(o.n_eval, 64);
    EXPECT_EQ(o.eval_every, 4);
    EXPECT_EQ(o.seed, 7u);
    EXPECT_DOUBLE_EQ(o.lr, 0.002);
    EXPECT_EQ(o.w_scale, 0.0) << "0 = the parent's";
    EXPECT_TRUE(o.train_scratch);
    EXPECT_TRUE(o.store);
    o.out_path = s_dir.filePath("independent.h5").toStdString();
    o.store = false;
    const icl::PastingResult want = icl::computePasting(s_gpt2, o);
    const icl::PastingResult& got = *page->result();
    EXPECT_EQ(got.parent_step, 20);
    EXPECT_EQ(got.parent_layers, 2);
    EXPECT_EQ(got.pasted_layers, 2) << "one new block + block 1 of the parent";
    EXPECT_EQ(got.trainable_pasted, want.trainable_pasted);
    EXPECT_EQ(got.trainable_scratch, want.trainable_scratch);
    EXPECT_LT(got.trainable_pasted, got.trainable_scratch);
    EXPECT_EQ(got.n_examples, want.n_examples);
    EXPECT_TRUE(sameValues(got.pasted_curve, want.pasted_curve));
    EXPECT_TRUE(sameValues(got.scratch_curve, want.scratch_curve));
    EXPECT_TRUE(sameValues(got.ridge_curve, want.ridge_curve));
    EXPECT_EQ(got.curve_steps, (std::vector<int64_t> { 0, 4, 8, 12 }));
    EXPECT_TRUE(sameValues(got.pasted_eval, want.pasted_eval));
    EXPECT_TRUE(sameValues(got.scratch_eval, want.scratch_eval));
    EXPECT_EQ(got.pasted_loss, want.pasted_loss);
    EXPECT_EQ(got.scratch_loss, want.scratch_loss);
    EXPECT_EQ(got.ridge_loss, want.ridge_loss);
    EXPECT_EQ(got.zero_loss, want.zero_loss);

    // Plot 1: the ICL curves of the independent result, n = 0..N, and the zero predictor as a line.
    const icl::Figure& icl = page->iclPlot()->figure();
    EXPECT_EQ(icl.x_label, "number of in-context examples");
    EXPECT_FALSE(icl.y_label.empty());
    EXPECT_EQ(icl.metadata.at("checkpoint_step"), "20");
    EXPECT_EQ(icl.metadata.at("cut_layer"), "1");
    EXPECT_EQ(icl.metadata.at("seed"), "7");
    ASSERT_EQ(icl.series.size(), 4u);
    const std::vector<std::string> iclNames { "pasted", "scratch", "ridge", "zero" };
    const std::vector<const std::vector<double>*> iclCurves { &want.pasted_curve, &want.scratch_curve,
        &want.ridge_curve };
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(icl.series[i].name, iclNames[i]);
        EXPECT_EQ(icl.series[i].x, (std::vector<double> { 0, 1, 2, 3, 4, 5, 6 }));
        EXPECT_TRUE(sameValues(icl.series[i].y, *iclCurves[i])) << iclNames[i];
        // What the user sees: one drawn point per n.
        ASSERT_NE(page->iclPlot()->seriesGraph(int(i)), nullptr);
        EXPECT_EQ(page->iclPlot()->seriesGraph(int(i))->data()->size(), 7);
    }
    EXPECT_EQ(icl.series[3].name, "zero");
    EXPECT_EQ(icl.series[3].y, (std::vector<double> { want.zero_loss, want.zero_loss }));
    EXPECT_EQ(page->iclPlot()->plot()->xAxis->label(), "number of in-context examples");
    EXPECT_EQ(page->iclPlot()->plot()->legend->itemCount(), 4);

    // Plot 2: training and evaluation losses per evaluation step.
    const icl::Figure& loss = page->lossPlot()->figure();
    EXPECT_EQ(loss.x_label, "training step");
    ASSERT_EQ(loss.series.size(), 6u);
    const std::vector<std::string> lossNames { "pasted train", "pasted eval", "scratch train", "scratch eval", "ridge",
        "zero" };
    const std::vector<const std::vector<double>*> lossCurves { &want.pasted_train, &want.pasted_eval,
        &want.scratch_train, &want.scratch_eval };
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(loss.series[i].name, lossNames[i]);
        EXPECT_EQ(loss.series[i].x, toDouble(want.curve_steps));
        EXPECT_TRUE(sameValues(loss.series[i].y, *lossCurves[i])) << lossNames[i];
    }
    EXPECT_EQ(loss.series[4].name, "ridge");
    EXPECT_EQ(loss.series[4].y, (std::vector<double> { want.ridge_loss, want.ridge_loss }));
    EXPECT_EQ(loss.series[5].name, "zero");

    // The summary names the query losses, parameter counts and the new file.
    const QString summary = page->summaryLabel()->text();
    EXPECT_TRUE(summary.contains(QString::fromStdString(icl::formatSignificant(want.pasted_loss)))) << summary.toStdString();
    EXPECT_TRUE(summary.contains(QString::fromStdString(icl::formatSignificant(want.scratch_loss)))) << summary.toStdString();
    EXPECT_TRUE(summary.contains(out)) << summary.toStdString();
    EXPECT_TRUE(summary.contains("/analysis/pasting/" + QString::fromStdString(got.analysis_id)))
        << summary.toStdString();

    // The pasted model is an ordinary experiment: checkpoints at 0 and 12, its eval loss in the metrics.
    const icl::RunSummary pasted = icl::readRunSummary(out.toStdString());
    ASSERT_EQ(pasted.checkpoints.size(), 2u);
    EXPECT_EQ(pasted.checkpoints.back().step, 12);
    EXPECT_DOUBLE_EQ(pasted.lastMetric("eval_loss"), want.pasted_loss);
    EXPECT_EQ(pasted.analyses.count("pasting_parent"), 1u);
    // ... and the comparison is stored in the parent, as the CLI does.
    EXPECT_EQ(storedPastings(s_gpt2), storedBefore + 1);
    EXPECT_TRUE(page->findChild<QLabel*>("pastingParent")->text().contains("/analysis/pasting"));

    // Export: File ▸ Export takes the plot last clicked; both carry their data and metadata.
    EXPECT_EQ(window.currentPlot(), page->iclPlot());
    QTest::mouseClick(page->lossPlot()->findChild<QWidget*>("plot"), Qt::LeftButton);
    EXPECT_EQ(window.currentPlot(), page->lossPlot());
    const std::string csv = s_dir.filePath("pasting_loss.csv").toStdString();
    const std::string png = s_dir.filePath("pasting_icl.png").toStdString();
    std::string error;
    ASSERT_TRUE(icl::widgets::exportFigure(page->lossPlot()->figure(), csv, "csv", 100, &error)) << error;
    ASSERT_TRUE(icl::widgets::exportFigure(page->iclPlot()->figure(), png, "png", 100, &error)) << error;
    const QByteArray csvText = readAll(QString::fromStdString(csv));
    EXPECT_TRUE(csvText.contains("cut_layer: 1")) << csvText.toStdString();
    EXPECT_TRUE(csvText.contains("scratch eval")) << csvText.toStdString();
    EXPECT_TRUE(readAll(QString::fromStdString(png)).startsWith("\x89PNG"));

    // An existing output file is not replaced without asking.
    const QByteArray before = readAll(out);
    EXPECT_FALSE(page->startPasting(false, false));
    EXPECT_FALSE(page->isBusy());
    EXPECT_TRUE(page->statusLabel()->text().contains("already exists")) << page->statusLabel()->text().toStdString();
    EXPECT_EQ(readAll(out), before);
    EXPECT_TRUE(page->result().has_value()) << "a refused run leaves the shown result";

    // "Open pasted experiment" opens the new file in the window.
    ASSERT_TRUE(page->openPastedButton()->isEnabled());
    QTest::mouseClick(page->openPastedButton(), Qt::LeftButton);
    EXPECT_EQ(QString::fromStdString(window.experiment().path), out);
    EXPECT_FALSE(page->result().has_value());
    EXPECT_EQ(page->optionsForm()->cutLayer()->maximum(), 1) << "the pasted model has 2 blocks";
}

TEST_F(PastingPageTest, CancelStopsTheRunAndLeavesNoResult)
{
    MainWindow window;
    ASSERT_TRUE(showOnPastingPage(window, s_gpt2)); // clicked like a user would
    PastingPage* page = window.page<PastingPage>();
    configure(page, 1000000); // far more than a test waits for
    const QString out = s_dir.filePath("cancelled.h5");
    page->optionsForm()->output()->setText(out);
    const int storedBefore = storedPastings(s_gpt2);

    // Cancel with the page's button, then with the status bar's.
    for (const char* button : { "pastingCancel", "cancelButton" }) {
        ASSERT_TRUE(page->startPasting(false, false)) << button;
        ASSERT_TRUE(QTest::qWaitFor([&] { return page->progressBar()->value() > 0; }, kGuiTimeoutMs)) << button;
        EXPECT_TRUE(QFileInfo::exists(out)) << "the run writes its output file";
        QTest::mouseClick(window.findChild<QPushButton*>(button), Qt::LeftButton);
        ASSERT_TRUE(waitIdle(window, kGuiTimeoutMs)) << button;
        EXPECT_TRUE(page->statusLabel()->text().startsWith("Cancelled after"))
            << page->statusLabel()->text().toStdString();
        const QString status = window.statusBar()->currentMessage();
        EXPECT_TRUE(status.contains(QStringLiteral("cancelled"))) << button << ": " << status.toStdString();
        EXPECT_FALSE(status.contains(QStringLiteral("done"))) << status.toStdString();
        EXPECT_TRUE(window.findChild<QProgressBar*>("statusProgress")->isHidden()) << button;
        EXPECT_FALSE(page->result().has_value());
        EXPECT_TRUE(page->iclPlot()->figure().series.empty());
        EXPECT_TRUE(page->lossPlot()->figure().series.empty());
        EXPECT_EQ(page->summaryLabel()->text(), "—");
        EXPECT_FALSE(page->openPastedButton()->isEnabled());
        EXPECT_LT(page->progressBar()->value(), page->progressBar()->maximum());
        EXPECT_FALSE(QFileInfo::exists(out)) << "a cancelled run leaves no pasted file";
        EXPECT_EQ(storedPastings(s_gpt2), storedBefore) << "nothing is stored in the parent";
        EXPECT_TRUE(page->runButton()->isEnabled());
        EXPECT_TRUE(page->optionsForm()->steps()->isEnabled());
    }
}

TEST_F(PastingPageTest, NonGpt2RunsAreRefusedWithAMessage)
{
    MainWindow window;
    ASSERT_TRUE(openOnShownPage<PastingPage>(window, s_lsa));
    PastingPage* page = window.page<PastingPage>();
    EXPECT_TRUE(page->messageLabel()->isVisibleTo(page));
    EXPECT_TRUE(page->messageLabel()->text().contains("GPT-2")) << page->messageLabel()->text().toStdString();
    EXPECT_TRUE(page->messageLabel()->text().contains("lsa")) << page->messageLabel()->text().toStdString();
    EXPECT_FALSE(page->startPasting(false, true));
    EXPECT_FALSE(page->isBusy());
    QString why;
    EXPECT_FALSE(PastingPage::supports(icl::readRunSummary(s_lsa), &why));
    EXPECT_TRUE(PastingPage::supports(icl::readRunSummary(s_gpt2), &why));
}
