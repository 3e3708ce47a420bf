// The main window on a real experiment file: written once per test binary by icl::train with a
// tiny config. Expected values are read back from that file, never from the GUI code.

#include "app/gui/main_window.h"
#include "app/gui/gd_alignment_page.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <QFile>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "app/gui/experiments_page.h"
#include "app/gui/train_page.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"
#include "widgets/checkpoint_timeline.h"
#include "widgets/plot_view.h"

using icl::gui::MainWindow;

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
    static void SetUpTestSuite()
    {
        s_dir = new QTemporaryDir;
        ASSERT_TRUE(s_dir->isValid());
        s_run = s_dir->filePath("tiny.h5").toStdString();
        icl::TrainOptions options;
        options.out_path = s_run;
        icl::train(tinyConfig(), options, [](const icl::TrainProgress&) { return true; });
    }
    static void TearDownTestSuite()
    {
        delete s_dir;
        s_dir = nullptr;
    }

    static QTemporaryDir* s_dir;
    static std::string s_run;
};

QTemporaryDir* MainWindowTest::s_dir = nullptr;

void writeConfig(const QString& path, const nlohmann::json& config)
{
    std::ofstream f(path.toStdString());
    f << config.dump(2);
}
std::string MainWindowTest::s_run;

std::vector<std::pair<double, double>> graphPoints(QCPGraph* graph)
{
    std::vector<std::pair<double, double>> out;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        out.emplace_back(it->key, it->value);
    return out;
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
    window.setScripted(true);
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
    window.showPage(MainWindow::Page::Train);
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
    window.setScripted(true);
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));

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
    window.setScripted(true);
    ASSERT_TRUE(window.openExperiment(QString::fromStdString(s_run)));
    const QString text = window.experimentsPage()->summaryView()->toPlainText();
    EXPECT_TRUE(text.contains("tiny.h5"));
    EXPECT_TRUE(text.contains("icl-workbench")); // format attribute
    EXPECT_TRUE(text.contains("\"batch_size\": 64")) << text.toStdString(); // the config of the file
    EXPECT_TRUE(window.recentFiles().contains(QFileInfo(QString::fromStdString(s_run)).absoluteFilePath()));
    QListWidget* recent = window.experimentsPage()->recentList();
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

TEST_F(MainWindowTest, StatusBarShowsDeviceProgressAndCancel)
{
    MainWindow window;
    auto* device = window.findChild<QLabel*>("deviceLabel");
    ASSERT_NE(device, nullptr);
    EXPECT_TRUE(device->text().startsWith("device: "));
    EXPECT_TRUE(device->text().contains(QString::fromStdString(icl::resolveDeviceName("auto"))));
    ASSERT_NE(window.findChild<QPushButton*>("cancelButton"), nullptr);
    EXPECT_FALSE(window.findChild<QPushButton*>("cancelButton")->isEnabled());
    EXPECT_EQ(MainWindow::pageFromName("train"), MainWindow::Page::Train);
    EXPECT_EQ(MainWindow::pageFromName("experiments"), MainWindow::Page::Experiments);
    EXPECT_FALSE(MainWindow::pageFromName("nope").has_value());
}

TEST_F(MainWindowTest, PresetsListedOnTheExperimentsPage)
{
    MainWindow window;
    const std::vector<icl::PresetInfo> presets = icl::listPresets();
    QTableWidget* table = window.experimentsPage()->presetTable();
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
    const QString configPath = dir.filePath("tiny.json");
    {
        std::ofstream f(configPath.toStdString());
        f << tinyConfig().dump(2);
    }
    const QString out = dir.filePath("gui-run.h5");
    MainWindow window;
    window.setScripted(true);
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(configPath);
    page->setOutputPath(out);
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
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
    const QString configPath = dir.filePath("long.json");
    {
        std::ofstream f(configPath.toStdString());
        f << tinyConfig(1000000).dump(2); // far more steps than the test waits for
    }
    const QString out = dir.filePath("stopped.h5");
    MainWindow window;
    window.setScripted(true);
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(configPath);
    page->setOutputPath(out);
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
    QSignalSpy progress(page, &icl::gui::TrainPage::progressChanged);
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
    icl::gui::TrainPage* page = window.trainPage();
    EXPECT_EQ(page->outputPath(), run);
    auto* steps = page->findChild<QSpinBox*>("stepsSpin");
    ASSERT_NE(steps, nullptr);
    steps->setValue(60);
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
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
    const QString configPath = dir.filePath("diverging.json");
    writeConfig(configPath, tinyConfig(40, { "training.lr=1e30", "training.grad_clip=0", "training.optimizer=sgd" }));
    const QString out = dir.filePath("diverged.h5");
    MainWindow window;
    window.setScripted(true);
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(configPath);
    page->setOutputPath(out);
    QSignalSpy errors(page, &icl::gui::TrainPage::errorOccurred);
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
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
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(dir.filePath("missing.json"));
    page->setOutputPath(dir.filePath("never.h5"));
    QSignalSpy errors(page, &icl::gui::TrainPage::errorOccurred);
    EXPECT_FALSE(page->startTraining(false));
    ASSERT_EQ(errors.count(), 1);
    EXPECT_TRUE(errors.at(0).at(1).toString().contains("missing.json"));
    EXPECT_FALSE(window.isBusy());
    EXPECT_FALSE(QFile::exists(dir.filePath("never.h5")));
}

TEST_F(MainWindowTest, LivePlotShowsTrainEvalAndBaselineLossesWhileTraining)
{
    QTemporaryDir dir;
    const QString configPath = dir.filePath("live.json");
    writeConfig(configPath, tinyConfig(1000000));
    MainWindow window;
    window.setScripted(true);
    window.show();
    window.showPage(MainWindow::Page::Train);
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(configPath);
    page->setOutputPath(dir.filePath("live.h5"));
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
    QSignalSpy progress(page, &icl::gui::TrainPage::progressChanged);
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
    const QString configPath = dir.filePath("live-align.json");
    writeConfig(configPath, tinyConfig(1000000, { "eval.alignment=[\"gd_1\"]" }));
    MainWindow window;
    window.setScripted(true);
    window.show();
    window.showPage(MainWindow::Page::Train);
    icl::gui::TrainPage* page = window.trainPage();
    page->setConfigFile(configPath);
    page->setOutputPath(dir.filePath("live-align.h5"));
    QSignalSpy finished(page, &icl::gui::TrainPage::trainingFinished);
    ASSERT_TRUE(page->startTraining(false));
    QCustomPlot* qcp = window.gdAlignmentPage()->alignmentPlot()->plot();
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
