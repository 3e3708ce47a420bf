// Honest state in the main window (issue 49, item 5): the status bar's progress bar only while a job runs, no
// "0 / 1 patched runs" before any run, and recent files listed with their folders. Paths and steps come from the
// files and the test's own folders, never from the window under test.

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QPushButton>
#include <QRadioButton>
#include <QTimer>
#include <QMenu>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "app/gui/patching_page.h"
#include "app/gui/train_page.h"
#include "core/io/experiment_file.h"
#include "tests/support/gui_helpers.h"
#include "widgets/plot_export.h"
#include "tests/support/tiny_runs.h"

using icl::gui::MainWindow;
using icl::gui::TrainPage;

namespace {
using namespace icl::test;

/// Opens, in the scripted `window`, a copy of the tiny LSA run at `run` = `dir`/`folder`/run.h5, in a folder that is
/// not the working directory.
::testing::AssertionResult openCopyIn(MainWindow& window, const QTemporaryDir& dir, const QString& folder, QString* run)
{
    *run = dir.filePath(folder + QStringLiteral("/run.h5"));
    if (!QDir(dir.path()).mkpath(folder) || !QFile::copy(QString::fromStdString(tinyRun(TinyRun::Lsa)), *run))
        return ::testing::AssertionFailure() << "cannot copy the tiny run to " << run->toStdString();
    if (QDir::currentPath() == QFileInfo(*run).absolutePath())
        return ::testing::AssertionFailure() << "the working directory is " << run->toStdString() << "'s folder";
    return openScripted(window, run->toStdString());
}

TEST(StatusState, TheStatusBarProgressIsShownOnlyWhileTraining)
{
    QTemporaryDir dir;
    const QString run = dir.filePath("more.h5");
    ASSERT_TRUE(QFile::copy(QString::fromStdString(icl::test::tinyRun(icl::test::TinyRun::Lsa)), run));
    const int64_t last = icl::readRunSummary(run.toStdString()).checkpoints.back().step;
    MainWindow window;
    window.setScripted(true);
    auto* progress = window.findChild<QProgressBar*>("statusProgress");
    ASSERT_NE(progress, nullptr);
    EXPECT_TRUE(progress->isHidden()) << "nothing runs";
    ASSERT_TRUE(window.openExperiment(run));
    TrainPage* page = window.page<TrainPage>();
    page->findChild<QSpinBox*>("stepsSpin")->setValue(int(last + 10));
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->resumeTraining(false));
    EXPECT_FALSE(progress->isHidden()) << "shown while training";
    ASSERT_TRUE(finished.wait(300000));
    ASSERT_TRUE(icl::test::waitIdle(window));
    EXPECT_TRUE(progress->isHidden()) << "hidden once the job ended";
    EXPECT_EQ(progress->value(), 0) << "reset, not left full";
    EXPECT_EQ(progress->maximum(), 100) << "not busy";
}

TEST(StatusState, PatchingShowsNoCountBeforeAnyRun)
{
    MainWindow window;
    ASSERT_TRUE(openOnPage<icl::gui::PatchingPage>(window, icl::test::tinyRun(icl::test::TinyRun::Gpt2)));
    auto* bar = window.page<icl::gui::PatchingPage>()->findChild<QProgressBar*>("patchingProgress");
    ASSERT_NE(bar, nullptr);
    EXPECT_TRUE(bar->text().isEmpty()) << bar->text().toStdString();
}

TEST(StatusState, RecentFilesShowTheirFolders)
{
    QTemporaryDir dir;
    ASSERT_TRUE(QDir(dir.path()).mkpath("a"));
    ASSERT_TRUE(QDir(dir.path()).mkpath("b"));
    const QString first = dir.filePath("a/run.h5"), second = dir.filePath("b/run.h5");
    const QString source = QString::fromStdString(icl::test::tinyRun(icl::test::TinyRun::Lsa));
    ASSERT_TRUE(QFile::copy(source, first));
    ASSERT_TRUE(QFile::copy(source, second));
    MainWindow window;
    window.setScripted(true); // the recent list is not saved
    ASSERT_TRUE(window.openExperiment(first));
    ASSERT_TRUE(window.openExperiment(second));
    auto* menu = window.findChild<QMenu*>("recentMenu");
    ASSERT_NE(menu, nullptr);
    const QList<QAction*> actions = menu->actions();
    ASSERT_GE(actions.size(), 2);
    // Most recent first; the same name in two folders is told apart by the folder.
    const QStringList folders = { QDir::toNativeSeparators(dir.filePath("b")), QDir::toNativeSeparators(dir.filePath("a")) };
    for (int i = 0; i < 2; ++i) {
        const QString text = actions[i]->text();
        EXPECT_TRUE(text.startsWith(QStringLiteral("run.h5 — "))) << text.toStdString();
        const QString folder = text.mid(QStringLiteral("run.h5 — ").size());
        const QString expanded = folder.startsWith('~') ? QDir::homePath() + folder.mid(1) : folder;
        EXPECT_EQ(expanded, folders[i]) << text.toStdString();
        EXPECT_EQ(actions[i]->toolTip(), QFileInfo(i == 0 ? second : first).absoluteFilePath());
    }
    EXPECT_NE(actions[0]->text(), actions[1]->text());
}

TEST(StatusState, FileDialogsStartInTheOpenExperimentsFolder)
{
    QTemporaryDir dir;
    MainWindow window;
    QString run;
    ASSERT_TRUE(openCopyIn(window, dir, QStringLiteral("runs/here"), &run));
    TrainPage* page = window.page<TrainPage>();
    for (QRadioButton* radio : page->findChildren<QRadioButton*>())
        if (radio->text() == QStringLiteral("Config file"))
            radio->setChecked(true);
    auto* browse = page->findChild<QPushButton*>("configBrowse");
    ASSERT_NE(browse, nullptr);
    ASSERT_TRUE(browse->isEnabled());
    QString started;
    auto* timer = new QTimer(&window);
    timer->setInterval(20);
    QObject::connect(timer, &QTimer::timeout, [&] {
        if (auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget())) {
            timer->stop();
            started = dialog->directory().absolutePath();
            dialog->reject();
        }
    });
    timer->start();
    browse->click();
    EXPECT_EQ(started, QFileInfo(run).absolutePath());
}

// A plot's Export dialog suggests its file beside the open experiment, not in the working directory.
TEST(StatusState, PlotExportsStartInTheOpenExperimentsFolder)
{
    QTemporaryDir dir;
    MainWindow window;
    QString run;
    ASSERT_TRUE(openCopyIn(window, dir, QStringLiteral("runs/there"), &run));
    EXPECT_EQ(QFileInfo(icl::widgets::suggestedExportPath(QStringLiteral("loss"))).absoluteFilePath(),
              QDir(dir.filePath("runs/there")).filePath("loss.png"));
    EXPECT_EQ(icl::widgets::suggestedExportPath(dir.filePath("elsewhere/plot")), dir.filePath("elsewhere/plot.png"));
}

} // namespace
