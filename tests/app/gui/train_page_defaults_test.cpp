// The Train page's defaults on an open run (issue 49, item 4): it starts from the run's own config, proposes a new
// file beside it, asks before replacing a file with No as the default, and says so when Resume has nothing left to
// train. Expected configs and steps are read from the files (icl::readRunSummary, icl::parseConfig), never from the
// page under test.

#include "foreign_fixtures.h"

#include <functional>

#include <QApplication>
#include <QFile>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QRadioButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/gui/main_window.h"
#include "app/gui/train_page.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/weights_import.h"
#include "tests/support/tiny_runs.h"

using icl::gui::MainWindow;
using icl::gui::TrainPage;

namespace {

/// Runs `answer` on the first modal dialog of type D that opens (polled every 20 ms from the event loop).
template <class D> void whenModal(std::function<void(D*)> answer)
{
    auto* timer = new QTimer;
    timer->setInterval(20);
    QObject::connect(timer, &QTimer::timeout, [timer, answer] {
        if (auto* dialog = qobject_cast<D*>(QApplication::activeModalWidget())) {
            timer->stop();
            timer->deleteLater();
            answer(dialog);
        }
    });
    timer->start();
}

/// The config the file stores, parsed and filled in by the core (what "the run's config" means).
nlohmann::json storedConfig(const std::string& path)
{
    const icl::RunSummary file = icl::readRunSummary(path);
    return icl::toJson(icl::parseConfig(nlohmann::json::parse(file.config_json)));
}

/// A copy of the tiny LSA run (20 steps, checkpoints at 0, 10, 20) as `name` in `dir`.
QString copyOfTinyRun(const QTemporaryDir& dir, const QString& name)
{
    const QString path = dir.filePath(name);
    EXPECT_TRUE(QFile::copy(QString::fromStdString(icl::test::tinyRun(icl::test::TinyRun::Lsa)), path));
    return path;
}

TEST(TrainPageDefaults, AnImportedRunIsTheSourceAndANewFileBesideItTheOutput)
{
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const std::string garg = importedFixture("garg_run", dir.filePath("garg.h5"));
    const QString run = QString::fromStdString(garg);
    const nlohmann::json expected = storedConfig(garg);
    ASSERT_NE(expected.value("preset", std::string()), std::string(icl::kDefaultPreset));

    MainWindow window;
    window.setScripted(true);
    ASSERT_TRUE(window.openExperiment(run));
    TrainPage* page = window.page<TrainPage>();
    auto* fromRun = page->findChild<QRadioButton*>("fromRunRadio");
    ASSERT_NE(fromRun, nullptr);
    EXPECT_TRUE(fromRun->isChecked());
    EXPECT_FALSE(fromRun->isHidden());
    EXPECT_EQ(page->chosenConfig(), expected) << "the run's own config, not the preset " << icl::kDefaultPreset;
    EXPECT_EQ(page->outputPath(), dir.filePath("garg-2.h5"));
    EXPECT_EQ(page->resumePath(), run);

    // The Steps field overrides the run's total, as for any other source.
    page->findChild<QSpinBox*>("stepsSpin")->setValue(7);
    nlohmann::json seven = expected;
    seven["training"]["steps"] = 7;
    EXPECT_EQ(page->chosenConfig(), seven);

    // The proposal never names an existing file, and counts on from a proposal.
    QFile taken(dir.filePath("garg-2.h5"));
    ASSERT_TRUE(taken.open(QIODevice::WriteOnly));
    taken.close();
    EXPECT_EQ(TrainPage::proposedOutputPath(run), dir.filePath("garg-3.h5"));
    EXPECT_EQ(TrainPage::proposedOutputPath(dir.filePath("garg-2.h5")), dir.filePath("garg-3.h5"));
}

TEST(TrainPageDefaults, ReplacingAnExistingFileAsksWithNoAsTheDefault)
{
    QTemporaryDir dir;
    const QString run = copyOfTinyRun(dir, "kept.h5");
    const QString digest = sha256Of(run);
    MainWindow window;
    ASSERT_TRUE(window.openExperiment(run));
    TrainPage* page = window.page<TrainPage>();
    EXPECT_NE(page->outputPath(), run) << "the default output is never the open file";
    page->setOutputPath(run); // the user names the open file explicitly

    bool asked = false, noIsDefault = false;
    QString question;
    whenModal<QMessageBox>([&](QMessageBox* box) {
        asked = true;
        question = box->text();
        noIsDefault = box->defaultButton() != nullptr && box->defaultButton() == box->button(QMessageBox::No);
        QTest::keyClick(box, Qt::Key_Return); // Enter takes the default
    });
    EXPECT_FALSE(page->startTraining(true));
    EXPECT_TRUE(asked);
    EXPECT_TRUE(noIsDefault);
    EXPECT_TRUE(question.contains(QStringLiteral("already exists"))) << question.toStdString();
    EXPECT_FALSE(page->isRunning());
    EXPECT_EQ(sha256Of(run), digest) << "Enter kept the file";
}

TEST(TrainPageDefaults, ResumeOnAFinishedRunSaysSoAndOffersMoreSteps)
{
    QTemporaryDir dir;
    const QString run = copyOfTinyRun(dir, "done.h5");
    const icl::RunSummary before = icl::readRunSummary(run.toStdString());
    ASSERT_FALSE(before.checkpoints.empty());
    const int64_t last = before.checkpoints.back().step;
    ASSERT_EQ(last, storedConfig(run.toStdString()).at("training").at("steps").get<int64_t>()) << "a finished run";

    MainWindow window;
    ASSERT_TRUE(window.openExperiment(run));
    TrainPage* page = window.page<TrainPage>();
    auto* result = page->findChild<QLabel*>("resultLabel");
    ASSERT_NE(result, nullptr);
    // Without a dialog: nothing starts, and the page says why.
    EXPECT_FALSE(page->resumeTraining(false));
    EXPECT_FALSE(page->isRunning());
    EXPECT_TRUE(result->text().contains(QStringLiteral("done.h5 already finished at step %1").arg(last)))
        << result->text().toStdString();

    // With a dialog: a new total above the last step, which the run then trains to.
    const int64_t more = last + 10;
    int minimum = -1;
    QString label;
    whenModal<QInputDialog>([&](QInputDialog* dialog) {
        minimum = dialog->intMinimum();
        label = dialog->labelText();
        dialog->setIntValue(int(more));
        dialog->accept();
    });
    QSignalSpy finished(page, &TrainPage::trainingFinished);
    ASSERT_TRUE(page->resumeTraining(true));
    EXPECT_EQ(minimum, last + 1);
    EXPECT_TRUE(label.contains(QStringLiteral("already finished at step %1").arg(last))) << label.toStdString();
    ASSERT_TRUE(finished.wait(300000));
    EXPECT_TRUE(finished.at(0).at(0).toBool());
    const icl::RunSummary after = icl::readRunSummary(run.toStdString());
    ASSERT_FALSE(after.checkpoints.empty());
    EXPECT_EQ(after.checkpoints.back().step, more);
}

} // namespace
