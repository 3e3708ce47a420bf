// The main window on a real experiment file: written once per test binary by icl::train with a
// tiny config. Expected values are read back from that file, never from the GUI code.

#include "foreign_fixtures.h"
#include "app/gui/main_window.h"
#include "app/gui/gd_alignment_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QSlider>
#include <QSpinBox>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTextDocument>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "app/gui/experiments_page.h"
#include "app/gui/import_dialog.h"
#include "app/gui/train_page.h"
#include "app/gui/icl_iwl_page.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"
#include "core/training/weights_import.h"
#include "widgets/checkpoint_timeline.h"
#include "widgets/plot_view.h"
#include "tests/support/gui_helpers.h"
#include "tests/support/tiny_runs.h"

using namespace icl::gui; // the window and its pages
using namespace icl::test;

namespace {

const std::vector<std::string> kTinySets = { "training.batch_size=64", "training.steps=40", "training.eval_every=10",
    "training.checkpoint_every=20", "eval.n_prompts=256" };

nlohmann::json tinyConfig(int64_t steps = 40, const std::vector<std::string>& more = {})
{
    icl::ConfigRequest request;
    request.preset = icl::kDefaultPreset;
    request.scale = "quick";
    request.sets = kTinySets;
    request.sets.insert(request.sets.end(), more.begin(), more.end());
    request.steps = steps;
    request.device = "cpu";
    return icl::resolveConfig(request);
}

class MainWindowTest : public ::testing::Test {
protected:
    /// tinyConfig() trained on the CPU (one thread) into the suite's own folder.
    static void SetUpTestSuite()
    {
        s_run = icl::test::scratchFolder("main-window").filePath("tiny.h5").toStdString();
        icl::test::trainTinyRun(s_run, icl::kDefaultPreset, kTinySets, 40);
    }

    static inline std::string s_run;
};

/// The Train page of a scripted `window`, set to train `config` (written to the config file `configPath`) into `out`;
/// with `shown`, the window is shown on the Train page first (as for watching the live plots).
TrainPage* trainPageFor(
    MainWindow& window, const QString& configPath, const nlohmann::json& config, const QString& out, bool shown = false)
{
    std::ofstream(configPath.toStdString()) << config.dump(2);
    window.setScripted(true);
    if (shown) {
        window.show();
        window.showPage<TrainPage>();
    }
    TrainPage* page = window.page<TrainPage>();
    page->setConfigFile(configPath);
    page->setOutputPath(out);
    return page;
}

/// (step, value) pairs of a metric series of the file, skipping NaN (rows without that metric).
std::vector<std::pair<double, double>> metricPoints(const icl::RunSummary& s, const std::string& key)
{
    std::vector<std::pair<double, double>> out;
    const auto& steps = s.metrics.at("step");
    const auto& values = s.metrics.at(key);
    for (size_t i = 0; i < steps.size() && i < values.size(); ++i)
        if (!std::isnan(values[i]))
            out.emplace_back(steps[i], values[i]);
    return out;
}

QString jsonString(const nlohmann::json& j, const char* key)
{
    return QString::fromStdString(j.at(key).get<std::string>());
}

} // namespace

TEST_F(MainWindowTest, TrainPagePlotsTheLossSeriesOfTheFile)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    std::vector<std::string> lossKeys = { "train_loss", "eval_loss" };
    for (const auto& [key, values] : file.metrics)
        if (key.rfind("baseline/", 0) == 0)
            lossKeys.push_back(key);
    ASSERT_GE(lossKeys.size(), 3u) << "the preset measures baselines";

    MainWindow window;
    ASSERT_TRUE(openOnPage<TrainPage>(window, s_run));
    auto* plot = window.findChild<icl::widgets::PlotView*>("trainLossPlot");
    ASSERT_NE(plot, nullptr);
    EXPECT_EQ(window.currentPlot(), plot);
    QCustomPlot* qcp = plot->plot();

    ASSERT_EQ(qcp->graphCount(), int(lossKeys.size()));
    EXPECT_EQ(qcp->legend->itemCount(), int(lossKeys.size()));
    EXPECT_FALSE(qcp->xAxis->label().isEmpty());
    EXPECT_FALSE(qcp->yAxis->label().isEmpty());
    // The graphs hold exactly the loss series of the file, point for point (compared as multisets:
    // in a noise-free task least squares and ridge can have equal losses).
    using Points = std::vector<std::pair<double, double>>;
    std::vector<Points> expected, drawn;
    for (const std::string& key : lossKeys) {
        expected.push_back(metricPoints(file, key));
        ASSERT_FALSE(expected.back().empty()) << key;
    }
    for (int g = 0; g < qcp->graphCount(); ++g)
        drawn.push_back(graphPoints(qcp->graph(g)));
    std::sort(expected.begin(), expected.end());
    std::sort(drawn.begin(), drawn.end());
    EXPECT_EQ(drawn, expected);
    for (int g = 0; g < qcp->graphCount(); ++g)
        EXPECT_FALSE(qcp->graph(g)->name().isEmpty());
}

TEST_F(MainWindowTest, CheckpointListAndTimelineShowTheSavedCheckpoints)
{
    const icl::RunSummary file = icl::readRunSummary(s_run);
    ASSERT_FALSE(file.checkpoints.empty());
    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_run));

    auto* table = window.findChild<QTableWidget*>("checkpointTable");
    ASSERT_NE(table, nullptr);
    ASSERT_EQ(table->rowCount(), int(file.checkpoints.size()));
    std::vector<int64_t> steps;
    for (size_t i = 0; i < file.checkpoints.size(); ++i) {
        steps.push_back(file.checkpoints[i].step);
        EXPECT_EQ(table->item(int(i), 0)->text().toLongLong(), file.checkpoints[i].step);
        EXPECT_NEAR(table->item(int(i), 1)->text().toDouble(), file.checkpoints[i].train_loss,
            1e-3 * std::abs(file.checkpoints[i].train_loss));
    }
    EXPECT_EQ(window.timeline()->steps(), steps);
    EXPECT_EQ(window.timeline()->currentStep(), steps.back());

    // Selecting a checkpoint on the timeline selects its row.
    EXPECT_EQ(window.selectCheckpoint(steps.front()), steps.front());
    ASSERT_FALSE(table->selectedItems().isEmpty());
    EXPECT_EQ(table->selectedItems().front()->row(), 0);
}

TEST_F(MainWindowTest, ExperimentsPageShowsSummaryAndRecentFile)
{
    MainWindow window;
    ASSERT_TRUE(openScripted(window, s_run));
    const QString text = window.page<ExperimentsPage>()->summaryView()->toPlainText();
    EXPECT_TRUE(text.contains("tiny.h5"));
    EXPECT_TRUE(text.contains("icl-workbench")); // format attribute
    EXPECT_TRUE(text.contains("\"batch_size\": 64")) << text.toStdString(); // the config of the file
    EXPECT_TRUE(window.recentFiles().contains(QFileInfo(QString::fromStdString(s_run)).absoluteFilePath()));
    QListWidget* recent = window.page<ExperimentsPage>()->recentList();
    ASSERT_GE(recent->count(), 1);
    EXPECT_EQ(recent->item(0)->text(), "tiny.h5");
    EXPECT_TRUE(window.windowTitle().contains("tiny.h5"));
}

TEST_F(MainWindowTest, ADamagedFileIsReportedNotFatal)
{
    QTemporaryDir dir;
    const QString bad = dir.filePath("bad.h5");
    {
        std::ofstream f(bad.toStdString());
        f << "this is not an HDF5 file";
    }
    MainWindow window;
    window.setScripted(true); // error to stderr instead of a modal dialog
    EXPECT_FALSE(window.openExperiment(bad));
    EXPECT_FALSE(window.openExperiment(dir.filePath("missing.h5")));
    EXPECT_TRUE(window.experiment().path.empty());
    // The window still works: the real file opens afterwards.
    EXPECT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
}

// A hostile file (issue 46): opening it is refused in one line in the window's status bar (and on stderr in
// scripted mode), with the control characters of its name escaped, so it cannot print a line of its own.
TEST_F(MainWindowTest, AHostileFileIsRefusedInOneEscapedLine)
{
    QTemporaryDir dir;
    const QString bad = dir.filePath(QString::fromUtf8("evil\x1b[2J\nall good.h5"));
    {
        std::ofstream f(bad.toStdString());
        f << "this is not an HDF5 file";
    }
    MainWindow window;
    window.setScripted(true);
    EXPECT_FALSE(window.openExperiment(bad));
    const QString shown = window.statusBar()->currentMessage();
    EXPECT_TRUE(shown.startsWith(QStringLiteral("Cannot open experiment: "))) << shown.toStdString();
    EXPECT_TRUE(shown.contains(QStringLiteral("evil\\x1b[2J\\x0aall good.h5: "))) << shown.toStdString();
    EXPECT_FALSE(shown.contains(QChar(0x1b))) << shown.toStdString();
    EXPECT_FALSE(shown.contains(QLatin1Char('\n'))) << shown.toStdString();
}

TEST_F(MainWindowTest, StatusBarShowsDeviceProgressAndCancel)
{
    MainWindow window;
    auto* device = window.findChild<QLabel*>("deviceLabel");
    ASSERT_NE(device, nullptr);
    EXPECT_TRUE(device->text().startsWith("device: "));
    EXPECT_TRUE(device->text().contains(QString::fromStdString(icl::resolveDeviceName("auto"))));
    ASSERT_NE(window.findChild<QPushButton*>("cancelButton"), nullptr);
    EXPECT_FALSE(window.findChild<QPushButton*>("cancelButton")->isEnabled());
    EXPECT_EQ(icl::test::pageTypeNamed("train"), &TrainPage::staticMetaObject);
    EXPECT_EQ(icl::test::pageTypeNamed("experiments"), &ExperimentsPage::staticMetaObject);
    EXPECT_EQ(MainWindow::pageFromName("nope"), nullptr);
}

TEST_F(MainWindowTest, PresetsListedOnTheExperimentsPage)
{
    MainWindow window;
    const std::vector<icl::PresetInfo> presets = icl::listPresets();
    QTableWidget* table = window.page<ExperimentsPage>()->presetTable();
    ASSERT_EQ(table->rowCount(), int(presets.size()));
    for (size_t i = 0; i < presets.size(); ++i) {
        EXPECT_EQ(table->item(int(i), 0)->text().toStdString(), presets[i].name);
        EXPECT_EQ(table->item(int(i), 1)->text().toStdString(), presets[i].reproduces);
        EXPECT_EQ(table->item(int(i), 2)->text().toStdString(), presets[i].description);
    }
}

TEST_F(MainWindowTest, TrainsFromAConfigFileOnAWorkerThreadAndOpensTheResult)
{
    QTemporaryDir dir;
    const QString out = dir.filePath("gui-run.h5");
    MainWindow window;
    TrainPage* page = trainPageFor(window, dir.filePath("tiny.json"), tinyConfig(), out);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->startTraining(false));
    EXPECT_TRUE(window.isBusy());
    EXPECT_TRUE(window.findChild<QPushButton*>("cancelButton")->isEnabled());
    ASSERT_TRUE(finished.wait(300000));
    EXPECT_TRUE(finished.at(0).at(0).toBool());
    EXPECT_FALSE(window.isBusy());

    // The finished run is opened: the plot and the list now hold the file's data.
    const icl::RunSummary file = icl::readRunSummary(out.toStdString());
    EXPECT_EQ(int64_t(file.lastMetric("step")), 40);
    EXPECT_EQ(window.experiment().path, out.toStdString());
    QCustomPlot* qcp = page->lossPlot()->plot();
    ASSERT_GE(qcp->graphCount(), 2);
    int matches = 0;
    const auto train = metricPoints(file, "train_loss");
    for (int g = 0; g < qcp->graphCount(); ++g)
        matches += graphPoints(qcp->graph(g)) == train;
    EXPECT_EQ(matches, 1);
    EXPECT_EQ(page->checkpointTable()->rowCount(), int(file.checkpoints.size()));
}

TEST_F(MainWindowTest, StopEndsTrainingEarlyAndKeepsAResumableFile)
{
    QTemporaryDir dir;
    const QString out = dir.filePath("stopped.h5");
    MainWindow window;
    // Far more steps than the test waits for.
    TrainPage* page = trainPageFor(window, dir.filePath("long.json"), tinyConfig(1000000), out);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    QSignalSpy progress(page, &TrainPage::progressChanged);
    ASSERT_TRUE(page->startTraining(false));
    // Wait for real training steps (not only the preparation), then stop.
    while (finished.isEmpty()) {
        ASSERT_TRUE(progress.wait(120000));
        if (progress.last().at(0).toInt() >= 0 && progress.last().at(1).toString().startsWith("step "))
            break;
    }
    page->stopTraining();
    ASSERT_TRUE(finished.wait(120000) || !finished.isEmpty());
    EXPECT_TRUE(finished.at(0).at(0).toBool());

    const icl::RunSummary file = icl::readRunSummary(out.toStdString());
    ASSERT_FALSE(file.checkpoints.empty()); // the stop commits a final checkpoint
    EXPECT_LT(file.checkpoints.back().step, 1000000);
    EXPECT_TRUE(window.findChild<QPushButton*>("resumeButton")->isEnabled());
}

TEST_F(MainWindowTest, ResumeContinuesTheFileToTheNewStepCount)
{
    QTemporaryDir dir;
    const QString run = dir.filePath("resumed.h5");
    ASSERT_TRUE(QFile::copy(QString::fromStdString(s_run), run));
    MainWindow window;
    window.setScripted(true);
    ASSERT_TRUE(window.openExperiment(run));
    icl::gui::TrainPage* page = window.page<TrainPage>();
    EXPECT_EQ(page->resumePath(), run);
    EXPECT_EQ(page->outputPath(), dir.filePath("resumed-2.h5")) << "a new run goes beside the open one";
    auto* steps = page->findChild<QSpinBox*>("stepsSpin");
    ASSERT_NE(steps, nullptr);
    steps->setValue(60);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->resumeTraining());
    ASSERT_TRUE(finished.wait(300000));
    EXPECT_TRUE(finished.at(0).at(0).toBool());
    const icl::RunSummary file = icl::readRunSummary(run.toStdString());
    ASSERT_FALSE(file.checkpoints.empty());
    EXPECT_EQ(file.checkpoints.back().step, 60);
    EXPECT_EQ(page->checkpointTable()->rowCount(), int(file.checkpoints.size()));
}

TEST_F(MainWindowTest, DivergenceIsReportedAndTheLastCheckpointOpened)
{
    QTemporaryDir dir;
    const QString out = dir.filePath("diverged.h5");
    MainWindow window;
    TrainPage* page = trainPageFor(window, dir.filePath("diverging.json"),
        tinyConfig(40, { "training.lr=1e30", "training.grad_clip=0", "training.optimizer=sgd" }), out);
    QSignalSpy errors(page, &TrainPage::errorOccurred);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->startTraining(false));
    ASSERT_TRUE(finished.wait(300000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    ASSERT_EQ(errors.count(), 1);
    EXPECT_TRUE(errors.at(0).at(1).toString().contains("diverged")) << errors.at(0).at(1).toString().toStdString();
    EXPECT_FALSE(window.isBusy());
    // The file keeps its last complete checkpoint, and the window shows it.
    const icl::RunSummary file = icl::readRunSummary(out.toStdString());
    EXPECT_EQ(window.experiment().path, out.toStdString());
    EXPECT_EQ(window.timeline()->steps().size(), file.checkpoints.size());
}

TEST_F(MainWindowTest, BadConfigFileIsAnErrorNotACrash)
{
    QTemporaryDir dir;
    MainWindow window;
    window.setScripted(true);
    icl::gui::TrainPage* page = window.page<TrainPage>();
    page->setConfigFile(dir.filePath("missing.json"));
    page->setOutputPath(dir.filePath("never.h5"));
    QSignalSpy errors(page, &TrainPage::errorOccurred);
    EXPECT_FALSE(page->startTraining(false));
    ASSERT_EQ(errors.count(), 1);
    EXPECT_TRUE(errors.at(0).at(1).toString().contains("missing.json"));
    EXPECT_FALSE(window.isBusy());
    EXPECT_FALSE(QFile::exists(dir.filePath("never.h5")));
}

TEST_F(MainWindowTest, LivePlotShowsTrainEvalAndBaselineLossesWhileTraining)
{
    QTemporaryDir dir;
    MainWindow window;
    TrainPage* page
        = trainPageFor(window, dir.filePath("live.json"), tinyConfig(1000000), dir.filePath("live.h5"), true);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    QSignalSpy progress(page, &TrainPage::progressChanged);
    ASSERT_TRUE(page->startTraining(false));
    QCustomPlot* qcp = page->lossPlot()->plot();
    // Until at least three evaluations (eval_every = 10) have been drawn.
    auto evalPoints = [&] {
        int most = 0;
        for (int g = 0; g < qcp->graphCount(); ++g)
            if (qcp->graph(g)->name().contains("eval"))
                most = std::max(most, qcp->graph(g)->dataCount());
        return most;
    };
    while (evalPoints() < 3 && finished.isEmpty())
        ASSERT_TRUE(progress.wait(120000));
    EXPECT_TRUE(window.isBusy());
    // Train loss, eval loss and the preset's baselines ("zero", "least_squares", "ridge", "gd_1").
    const nlohmann::json config = tinyConfig();
    const nlohmann::json& baselines = config["eval"]["baselines"];
    EXPECT_EQ(qcp->graphCount(), 2 + int(baselines.size()));
    int trainPoints = 0;
    for (int g = 0; g < qcp->graphCount(); ++g)
        trainPoints = std::max(trainPoints, qcp->graph(g)->dataCount());
    EXPECT_GE(trainPoints, 20); // every step's train loss, not only the evaluations
    // The checkpoint timeline grows with the run: it starts at step 0 and lists what the table lists.
    const std::vector<int64_t> live = window.timeline()->steps();
    ASSERT_FALSE(live.empty());
    EXPECT_EQ(live.front(), 0);
    QTableWidget* table = page->checkpointTable();
    ASSERT_EQ(table->rowCount(), int(live.size()));
    for (int r = 0; r < table->rowCount(); ++r)
        EXPECT_EQ(table->item(r, 0)->text().toLongLong(), live[size_t(r)]);
    page->stopTraining();
    ASSERT_TRUE(finished.wait(120000) || !finished.isEmpty());
    // After the stop the file is reopened: the timeline holds exactly the file's checkpoints.
    std::vector<int64_t> saved;
    for (const auto& c : icl::readRunSummary(dir.filePath("live.h5").toStdString()).checkpoints)
        saved.push_back(c.step);
    EXPECT_EQ(window.timeline()->steps(), saved);
}

// The GD alignment page follows a running job: its alignment-over-training plot grows with the
// file's /metrics/alignment series while the run is still going (von Oswald et al. Fig. 2, live).
TEST_F(MainWindowTest, AlignmentCurvesUpdateWhileTraining)
{
    QTemporaryDir dir;
    MainWindow window;
    TrainPage* page = trainPageFor(window, dir.filePath("live-align.json"),
        tinyConfig(1000000, { "eval.alignment=[\"gd_1\"]" }), dir.filePath("live-align.h5"), true);
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->startTraining(false));
    QCustomPlot* qcp = window.page<GdAlignmentPage>()->alignmentPlot()->plot();
    auto mostPoints = [&] {
        int most = 0;
        for (int g = 0; g < qcp->graphCount(); ++g)
            most = std::max(most, qcp->graph(g)->dataCount());
        return most;
    };
    ASSERT_TRUE(QTest::qWaitFor([&] { return mostPoints() >= 3 || !finished.isEmpty(); }, 120000));
    EXPECT_TRUE(finished.isEmpty()) << "the plot grew while the run was still going";
    EXPECT_GE(mostPoints(), 3);
    // What is drawn is a prefix of the file's series (the file only grows).
    const icl::RunSummary now = icl::readRunSummary(dir.filePath("live-align.h5").toStdString());
    bool found = false;
    for (int g = 0; g < qcp->graphCount(); ++g)
        if (qcp->graph(g)->name().contains("cosine")) {
            const auto drawn = graphPoints(qcp->graph(g));
            const auto file = metricPoints(now, "alignment/gd_1/model_cosine");
            ASSERT_LE(drawn.size(), file.size());
            for (size_t i = 0; i < drawn.size(); ++i)
                EXPECT_EQ(drawn[i], file[i]);
            found = true;
        }
    EXPECT_TRUE(found);
    page->stopTraining();
    ASSERT_TRUE(finished.wait(120000) || !finished.isEmpty());
}

TEST_F(MainWindowTest, AnImportedRunShowsWhereItCameFromAndARunTrainedHereDoesNot)
{
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const std::string garg = importedFixture("garg_run", dir.filePath("garg.h5"));
    // The provenance as the file stores it, read independently of the GUI.
    const icl::RunSummary file = icl::readRunSummary(garg);
    ASSERT_FALSE(file.import_json.empty());
    const nlohmann::json provenance = nlohmann::json::parse(file.import_json);
    const nlohmann::json& sources = provenance.at("sources");
    ASSERT_EQ(sources.size(), 3u) << "model_100.pt, model_200.pt, state.pt";

    MainWindow window;
    ASSERT_TRUE(openScripted(window, garg));
    icl::gui::ExperimentsPage* page = window.page<ExperimentsPage>();
    EXPECT_FALSE(page->provenanceBox()->isHidden());
    EXPECT_EQ(page->provenanceLabel()->text(),
        QStringLiteral("Imported %1, not trained here (%2 layout)")
            .arg(jsonString(provenance, "imported"), jsonString(provenance, "layout")));
    EXPECT_EQ(jsonString(provenance, "layout"), QStringLiteral("garg"));
    QTableWidget* table = page->provenanceSources();
    ASSERT_EQ(table->rowCount(), int(sources.size()));
    // Garg et al.'s file names and steps (state.pt holds train_step 300), and the digest of each file's bytes.
    const QStringList names = { "model_100.pt", "model_200.pt", "state.pt" };
    const QStringList steps = { "100", "200", "300" };
    for (int r = 0; r < table->rowCount(); ++r) {
        const nlohmann::json& source = sources.at(size_t(r));
        const QString path = jsonString(source, "path"), sha = jsonString(source, "sha256");
        EXPECT_EQ(QFileInfo(path).fileName(), names[r]);
        EXPECT_EQ(source.at("step").get<int64_t>(), steps[r].toLongLong());
        EXPECT_EQ(sha, sha256Of(foreignFixture("garg_run") + QStringLiteral("/") + names[r]));
        EXPECT_EQ(table->item(r, 0)->text(), names[r]);
        EXPECT_EQ(table->item(r, 0)->toolTip(), path);
        EXPECT_EQ(table->item(r, 1)->text(), jsonString(source, "format"));
        EXPECT_EQ(table->item(r, 2)->text(), steps[r]);
        EXPECT_EQ(table->item(r, 3)->text(), sha.left(12) + QStringLiteral("…")) << "shortened";
        EXPECT_TRUE(table->item(r, 3)->toolTip().contains(sha)) << "the full digest in the tooltip";
    }
    EXPECT_TRUE(provenance.at("warnings").empty());
    EXPECT_TRUE(page->provenanceNotes()->isHidden()) << "no warnings, no removed prefixes";
    // The Train page's checkpoint list: no training loss and no wall time for checkpoints trained elsewhere.
    QTableWidget* checkpoints = window.page<TrainPage>()->checkpointTable();
    ASSERT_EQ(checkpoints->rowCount(), int(file.checkpoints.size()));
    for (int r = 0; r < checkpoints->rowCount(); ++r) {
        EXPECT_EQ(checkpoints->item(r, 0)->text(), steps[r]);
        EXPECT_EQ(checkpoints->item(r, 1)->text(), QStringLiteral("–"));
        EXPECT_EQ(checkpoints->item(r, 2)->text(), QStringLiteral("—"));
    }

    // A float16 checkpoint without a config: every warning of the import is shown.
    const std::string fp16
        = importedFixture("fp16.pt", dir.filePath("fp16.h5"), { "model.n_heads=4", "task.kind=linear_regression" });
    const nlohmann::json fp16Provenance = nlohmann::json::parse(icl::readRunSummary(fp16).import_json);
    ASSERT_FALSE(fp16Provenance.at("warnings").empty()) << "float16 converted to float32";
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(fp16)));
    EXPECT_FALSE(page->provenanceNotes()->isHidden());
    QTextDocument notes;
    notes.setHtml(page->provenanceNotes()->text());
    for (const nlohmann::json& warning : fp16Provenance.at("warnings"))
        EXPECT_TRUE(notes.toPlainText().contains(QString::fromStdString(warning.get<std::string>())))
            << warning << " in " << notes.toPlainText().toStdString();
    ASSERT_EQ(page->provenanceSources()->rowCount(), 1);
    EXPECT_EQ(page->provenanceSources()->item(0, 0)->text(), QStringLiteral("fp16.pt"));

    // A run trained here has no provenance, and its checkpoints keep their wall times.
    const icl::RunSummary trained = icl::readRunSummary(s_run);
    ASSERT_TRUE(trained.import_json.empty());
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
    EXPECT_TRUE(page->provenanceBox()->isHidden());
    EXPECT_TRUE(page->provenanceLabel()->text().isEmpty());
    EXPECT_EQ(page->provenanceSources()->rowCount(), 0);
    EXPECT_FALSE(page->summaryView()->toPlainText().contains("Imported"));
    ASSERT_EQ(checkpoints->rowCount(), int(trained.checkpoints.size()));
    for (int r = 0; r < checkpoints->rowCount(); ++r) {
        const QString wall = checkpoints->item(r, 2)->text();
        const qint64 seconds = std::llround(trained.checkpoints[size_t(r)].wall_time_s);
        EXPECT_EQ(wall, QStringLiteral("%1:%2").arg(seconds / 60).arg(seconds % 60, 2, 10, QChar('0')))
            << "m:ss of the file's wall time";
    }
}

TEST_F(MainWindowTest, CheckpointsOnTheCommandLineOpenTheImportDialogLikeADrop)
{
    using Kind = MainWindow::PathKind;
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    // Recognised from the bytes, whatever the name: a checkpoint renamed .ckpt is one, an experiment renamed .pt is not.
    const QString renamed = dir.filePath("weights.ckpt");
    ASSERT_TRUE(QFile::copy(foreignFixture("bare.pt"), renamed));
    const QString h5AsPt = dir.filePath("run.pt");
    ASSERT_TRUE(QFile::copy(QString::fromStdString(s_run), h5AsPt));
    // Folders: model_<step>.pt or state.pt make a Garg run folder; any other folder stays a sweep folder.
    const QString gargFolder = dir.filePath("garg");
    ASSERT_TRUE(QDir().mkpath(gargFolder));
    ASSERT_TRUE(QFile::copy(foreignFixture("garg_run/model_100.pt"), gargFolder + "/model_100.pt"));
    const QString stateFolder = dir.filePath("state");
    ASSERT_TRUE(QDir().mkpath(stateFolder));
    ASSERT_TRUE(QFile::copy(foreignFixture("garg_run/state.pt"), stateFolder + "/state.pt"));
    const QString sweepFolder = dir.filePath("sweep");
    ASSERT_TRUE(QDir().mkpath(sweepFolder));
    ASSERT_TRUE(QFile::copy(foreignFixture("bare.pt"), sweepFolder + "/model_best.pt"));

    EXPECT_EQ(MainWindow::pathKind(QString::fromStdString(s_run)), Kind::Experiment);
    EXPECT_EQ(MainWindow::pathKind(h5AsPt), Kind::Experiment);
    EXPECT_EQ(MainWindow::pathKind(dir.filePath("missing.pt")), Kind::Experiment);
    EXPECT_EQ(MainWindow::pathKind(foreignFixture("prompt.csv")), Kind::Sweep);
    EXPECT_EQ(MainWindow::pathKind(sweepFolder), Kind::Sweep);
    EXPECT_FALSE(MainWindow::isGargRunFolder(sweepFolder));
    EXPECT_TRUE(MainWindow::isGargRunFolder(gargFolder));
    EXPECT_TRUE(MainWindow::isGargRunFolder(stateFolder));

    const QStringList sources = { foreignFixture("bare.pt"), foreignFixture("model.safetensors"),
        foreignFixture("model.npz"), foreignFixture("garg_run"), renamed, gargFolder, stateFolder };
    MainWindow window;
    window.setScripted(true);
    for (const QString& source : sources) {
        SCOPED_TRACE(source.toStdString());
        EXPECT_EQ(MainWindow::pathKind(source), Kind::ImportSource);
        ASSERT_TRUE(window.openPath(source));
        icl::gui::ImportDialog* dialog = window.importDialog();
        ASSERT_NE(dialog, nullptr);
        EXPECT_EQ(dialog->source(), source);
        EXPECT_TRUE(dialog->isVisible());
        ASSERT_TRUE(waitIdle(*dialog, 120000));
        EXPECT_TRUE(dialog->hasPlan() || !dialog->errorMessage().isEmpty());
        EXPECT_TRUE(window.experiment().path.empty()) << "nothing is opened as an experiment";
    }
    // The garg run folder's plan: its three checkpoints.
    ASSERT_TRUE(window.openPath(foreignFixture("garg_run")));
    ASSERT_TRUE(QTest::qWaitFor([&] { return !window.importDialog()->isBusy(); }, 120000));
    ASSERT_TRUE(window.importDialog()->hasPlan()) << window.importDialog()->errorMessage().toStdString();
    EXPECT_EQ(window.importDialog()->sourcesTable()->rowCount(), 3);
    window.importDialog()->close();
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.importDialog() == nullptr; }, 10000));

    // An experiment file still opens as one, with no dialog.
    ASSERT_TRUE(window.openPath(QString::fromStdString(s_run)));
    EXPECT_EQ(window.importDialog(), nullptr);
    EXPECT_EQ(QFileInfo(QString::fromStdString(window.experiment().path)).absoluteFilePath(),
        QFileInfo(QString::fromStdString(s_run)).absoluteFilePath());
    // A folder without checkpoints is a sweep folder, as before: the ICL vs IWL page says what is missing.
    EXPECT_FALSE(window.openPath(sweepFolder));
    EXPECT_EQ(window.importDialog(), nullptr);
    EXPECT_EQ(window.currentPage(), window.page<IclIwlPage>());
}
