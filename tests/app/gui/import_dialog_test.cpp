// File ▸ Import checkpoint… on the committed foreign fixtures (tests/data/foreign, written by real PyTorch
// with make_fixtures.py): garg_run/ (config.yaml, model_100.pt, model_200.pt, state.pt at train_step 300),
// bare.pt (a Garg state dict without config), hostile.pt (a pickle that calls os.system). Expected values
// come from the fixture script's constants, from SHA-256 of the files' bytes, and from planImport called
// directly; never from the dialog.

#include "foreign_fixtures.h"
#include "app/gui/import_dialog.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QCryptographicHash>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/gui/attention_page.h"
#include "app/gui/main_window.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/training/weights_import.h"
#include "tests/support/gui_helpers.h"

using icl::gui::AttentionPage;
using icl::gui::ImportDialog;
using icl::gui::MainWindow;

namespace {
using namespace icl::test;

/// Saves a picture of `widget` when ICL_GUI_SCREENSHOT_DIR is set (documentation; no effect on the test).
void maybeScreenshot(QWidget& widget, const char* name)
{
    const QString dir = qEnvironmentVariable("ICL_GUI_SCREENSHOT_DIR");
    if (dir.isEmpty())
        return;
    QTest::qWait(100); // pending layout requests
    widget.grab().save(QDir(dir).filePath(QString::fromLatin1(name)));
}

/// Files in `dir` (names), to check that a refused or cancelled import wrote nothing.
QStringList filesIn(const QDir& dir)
{
    return dir.entryList(QDir::Files | QDir::Hidden | QDir::NoDotAndDotDot);
}

/// Sets `dialog` to import the fixture `source` into `output`, shows it when `shown` (as File ▸ Import does) and waits
/// for its plan (or the refusal); false on time-out.
bool planned(ImportDialog& dialog, const char* source, const QString& output, bool shown = true)
{
    dialog.setOutputPath(output);
    dialog.setSource(foreignFixture(source));
    if (shown)
        dialog.show();
    return waitIdle(dialog);
}

} // namespace

TEST(ImportDialog, GargRunShowsThreeCheckpointsAndTheMappingOfThePlan)
{
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "garg_run", scratchFolder("import").filePath(QStringLiteral("garg.h5"))));
    ASSERT_TRUE(dialog.hasPlan()) << dialog.errorMessage().toStdString();

    // Steps: model_100.pt, model_200.pt and state.pt's train_step 300 (make_fixtures.py).
    const QStringList files = { QStringLiteral("model_100.pt"), QStringLiteral("model_200.pt"), QStringLiteral("state.pt") };
    const QStringList steps = { QStringLiteral("100"), QStringLiteral("200"), QStringLiteral("300") };
    QTableWidget* sources = dialog.sourcesTable();
    ASSERT_EQ(sources->rowCount(), 3);
    for (int r = 0; r < 3; ++r) {
        EXPECT_EQ(sources->item(r, 0)->text(), files[r]);
        EXPECT_EQ(sources->item(r, 1)->text(), QStringLiteral("pytorch-zip"));
        EXPECT_EQ(sources->item(r, 2)->text(), steps[r]);
        const QString sha = sha256Of(foreignFixture("garg_run") + QLatin1Char('/') + files[r]);
        ASSERT_EQ(sha.size(), 64);
        EXPECT_EQ(sources->item(r, 3)->toolTip(), sha);
        EXPECT_TRUE(sources->item(r, 3)->text().startsWith(sha.left(12)));
    }

    // The mapping table holds the plan's rows, in order.
    icl::ImportRequest request;
    request.source = foreignFixture("garg_run").toStdString();
    const icl::ImportPlan plan = icl::planImport(request);
    ASSERT_FALSE(plan.mapping.empty());
    QTableWidget* mapping = dialog.mappingTable();
    ASSERT_EQ(mapping->rowCount(), int(plan.mapping.size()));
    for (int r = 0; r < mapping->rowCount(); ++r) {
        EXPECT_EQ(mapping->item(r, 0)->text().toStdString(), plan.mapping[size_t(r)].first);
        EXPECT_EQ(mapping->item(r, 1)->text().toStdString(), plan.mapping[size_t(r)].second);
    }
    EXPECT_EQ(dialog.droppedList()->count(), int(plan.dropped.size()));
    EXPECT_EQ(dialog.inferredLabel()->text().toStdString(), plan.inferred);
    // config.yaml: n_layer 2, n_embd 32, n_head 4.
    EXPECT_TRUE(dialog.inferredLabel()->text().contains(QStringLiteral("2 layers")));
    EXPECT_TRUE(dialog.inferredLabel()->text().contains(QStringLiteral("d_model 32")));
    EXPECT_TRUE(dialog.inferredLabel()->text().contains(QStringLiteral("4 heads")));
    EXPECT_EQ(dialog.missingField(QStringLiteral("model.n_heads")), nullptr) << "config.yaml gives n_head";
    EXPECT_FALSE(dialog.errorLabel()->isVisible());
    EXPECT_TRUE(dialog.importButton()->isEnabled());
    maybeScreenshot(dialog, "import_garg_run.png");
}

TEST(ImportDialog, BarePtAsksForTheHeadsAndImportsOnceTheyAreGiven)
{
    const QString path = scratchFolder("import").filePath(QStringLiteral("bare.h5"));
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "bare.pt", path));
    ASSERT_TRUE(dialog.hasPlan()) << dialog.errorMessage().toStdString();
    const auto& missing = dialog.plan().missing;
    ASSERT_NE(std::find(missing.begin(), missing.end(), "model.n_heads"), missing.end());
    ASSERT_NE(std::find(missing.begin(), missing.end(), "task.kind"), missing.end());
    auto* heads = qobject_cast<QSpinBox*>(dialog.missingField(QStringLiteral("model.n_heads")));
    auto* kind = qobject_cast<QComboBox*>(dialog.missingField(QStringLiteral("task.kind")));
    ASSERT_NE(heads, nullptr);
    ASSERT_NE(kind, nullptr);
    // A row added to a shown form appears once the event loop runs.
    EXPECT_TRUE(QTest::qWaitFor([&] { return heads->isVisible() && kind->isVisible(); }, 5000));
    EXPECT_FALSE(dialog.importButton()->isEnabled()) << "n_heads and task.kind are not given yet";
    maybeScreenshot(dialog, "import_bare_missing.png");

    heads->setValue(4);
    ASSERT_TRUE(QTest::qWaitFor([&] { return dialog.sets().contains(QStringLiteral("model.n_heads=4")); }));
    EXPECT_FALSE(dialog.importButton()->isEnabled()) << "task.kind is still not given";
    kind->setCurrentIndex(kind->findData(QStringLiteral("linear_regression")));
    ASSERT_GE(kind->currentIndex(), 1);
    QTest::mouseClick(dialog.findChild<QPushButton*>(QStringLiteral("recheckButton")), Qt::LeftButton);
    ASSERT_TRUE(waitIdle(dialog));
    ASSERT_TRUE(dialog.hasPlan()) << dialog.errorMessage().toStdString();
    EXPECT_TRUE(dialog.plan().missing.empty());
    EXPECT_NE(dialog.missingField(QStringLiteral("model.n_heads")), nullptr) << "the asked field stays";
    ASSERT_TRUE(dialog.importButton()->isEnabled());

    QSignalSpy finished(&dialog, &ImportDialog::importFinished);
    QSignalSpy imported(&dialog, &ImportDialog::imported);
    QTest::mouseClick(dialog.importButton(), Qt::LeftButton);
    EXPECT_TRUE(dialog.isImporting());
    ASSERT_TRUE(finished.wait(300000) || finished.count() == 1);
    ASSERT_EQ(finished.count(), 1);
    EXPECT_TRUE(finished.at(0).at(0).toBool()) << finished.at(0).at(1).toString().toStdString();
    ASSERT_EQ(imported.count(), 1);
    EXPECT_EQ(imported.at(0).at(0).toString(), path);

    const icl::RunSummary summary = icl::readRunSummary(path.toStdString());
    ASSERT_EQ(summary.checkpoints.size(), 1u);
    EXPECT_EQ(summary.checkpoints.front().step, 0) << "a bare state dict becomes checkpoint 0";
    const nlohmann::json config = nlohmann::json::parse(summary.config_json);
    EXPECT_EQ(config["model"]["n_heads"], 4);
    EXPECT_EQ(config["task"]["kind"], "linear_regression");
    EXPECT_FALSE(QFileInfo::exists(path + QStringLiteral(".import-tmp")));
}

TEST(ImportDialog, AConfigErrorIsShownInRedAndDisablesImport)
{
    const QDir out = scratchFolder("import");
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "bare.pt", out.filePath(QStringLiteral("bare.h5")), false));
    auto* heads = qobject_cast<QSpinBox*>(dialog.missingField(QStringLiteral("model.n_heads")));
    auto* kind = qobject_cast<QComboBox*>(dialog.missingField(QStringLiteral("task.kind")));
    ASSERT_NE(heads, nullptr);
    ASSERT_NE(kind, nullptr);
    heads->setValue(3); // does not divide n_embd = 32 (make_fixtures.py)
    kind->setCurrentIndex(kind->findData(QStringLiteral("linear_regression")));
    dialog.replan();
    ASSERT_TRUE(waitIdle(dialog));
    EXPECT_FALSE(dialog.hasPlan());
    EXPECT_FALSE(dialog.errorLabel()->isHidden());
    EXPECT_TRUE(dialog.errorLabel()->text().contains(QStringLiteral("model.n_heads")))
        << dialog.errorLabel()->text().toStdString();
    EXPECT_FALSE(dialog.errorLabel()->text().contains(QLatin1Char('\n')));
    EXPECT_TRUE(dialog.errorLabel()->styleSheet().contains(QStringLiteral("color")));
    EXPECT_FALSE(dialog.importButton()->isEnabled());

    heads->setValue(4); // fixed: the next plan clears the error
    dialog.replan();
    ASSERT_TRUE(waitIdle(dialog));
    EXPECT_TRUE(dialog.hasPlan()) << dialog.errorMessage().toStdString();
    EXPECT_TRUE(dialog.errorLabel()->isHidden());
    EXPECT_TRUE(dialog.importButton()->isEnabled());
    EXPECT_TRUE(filesIn(out).isEmpty());
}

TEST(ImportDialog, HostilePickleIsRefusedNamingTheGlobalAndNothingIsWritten)
{
    const QString marker = QStringLiteral("/tmp/icl_workbench_hostile_pickle_ran"); // make_fixtures.py
    QFile::remove(marker);
    const QDir out = scratchFolder("import");
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "hostile.pt", out.filePath(QStringLiteral("hostile.h5"))));
    EXPECT_FALSE(dialog.hasPlan());
    const QString shown = dialog.errorLabel()->text();
    EXPECT_TRUE(dialog.errorLabel()->isVisible());
    EXPECT_TRUE(shown.contains(QStringLiteral("system"))) << shown.toStdString();
    EXPECT_TRUE(shown.contains(QStringLiteral("posix")) || shown.contains(QStringLiteral("os")))
        << shown.toStdString();
    std::string refusal;
    try {
        icl::ImportRequest request;
        request.source = foreignFixture("hostile.pt").toStdString();
        icl::planImport(request);
    } catch (const icl::Error& e) {
        refusal = e.what();
    }
    EXPECT_EQ(shown.toStdString(), refusal);
    EXPECT_FALSE(dialog.importButton()->isEnabled());
    dialog.startImport(); // refused: does nothing
    EXPECT_FALSE(dialog.isImporting());
    ASSERT_TRUE(waitIdle(dialog));
    EXPECT_TRUE(filesIn(out).isEmpty());
    EXPECT_FALSE(QFileInfo::exists(marker)) << "the pickle's os.system ran";
    maybeScreenshot(dialog, "import_hostile.png");
}

TEST(ImportDialog, TruncatedFileIsRefusedWithOneLine)
{
    const QDir out = scratchFolder("import");
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "truncated.pt", out.filePath(QStringLiteral("truncated.h5")), false));
    EXPECT_FALSE(dialog.hasPlan());
    EXPECT_FALSE(dialog.errorMessage().isEmpty());
    EXPECT_TRUE(dialog.errorMessage().contains(QStringLiteral("truncated.pt"))) << dialog.errorMessage().toStdString();
    EXPECT_FALSE(dialog.importButton()->isEnabled());
    EXPECT_TRUE(filesIn(out).isEmpty());
}

TEST(ImportDialog, CancelDuringImportWritesNoOutputFile)
{
    const QDir out = scratchFolder("import");
    const QString path = out.filePath(QStringLiteral("cancelled.h5"));
    ImportDialog dialog;
    ASSERT_TRUE(planned(dialog, "garg_run", path));
    ASSERT_TRUE(dialog.importButton()->isEnabled()) << dialog.errorMessage().toStdString();

    QSignalSpy finished(&dialog, &ImportDialog::importFinished);
    QSignalSpy imported(&dialog, &ImportDialog::imported);
    QTest::mouseClick(dialog.importButton(), Qt::LeftButton);
    ASSERT_TRUE(dialog.isImporting());
    QTest::mouseClick(dialog.cancelButton(), Qt::LeftButton); // the worker's next callback returns false
    ASSERT_TRUE(finished.wait(300000) || finished.count() == 1);
    ASSERT_EQ(finished.count(), 1);
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    EXPECT_EQ(imported.count(), 0);
    EXPECT_FALSE(dialog.isImporting());
    EXPECT_TRUE(dialog.isVisible()) << "cancelling the import keeps the dialog open";
    EXPECT_FALSE(QFileInfo::exists(path));
    EXPECT_TRUE(filesIn(out).isEmpty()) << filesIn(out).join(QStringLiteral(", ")).toStdString();
    EXPECT_TRUE(dialog.importButton()->isEnabled()) << "the import can be started again";
}

TEST(ImportDialog, DefaultOutputIsTheSourceStemBesideIt)
{
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    QFile(foreignFixture("model.safetensors")).copy(dir.filePath(QStringLiteral("model.safetensors")));
    EXPECT_EQ(ImportDialog::defaultOutputPath(dir.filePath(QStringLiteral("model.safetensors"))),
        QDir::cleanPath(dir.filePath(QStringLiteral("model.h5"))));
    QFile taken(dir.filePath(QStringLiteral("model.h5")));
    ASSERT_TRUE(taken.open(QIODevice::WriteOnly));
    taken.close();
    EXPECT_EQ(ImportDialog::defaultOutputPath(dir.filePath(QStringLiteral("model.safetensors"))),
        QDir::cleanPath(dir.filePath(QStringLiteral("model-2.h5"))));
    ASSERT_TRUE(QDir(dir.path()).mkdir(QStringLiteral("garg_run")));
    EXPECT_EQ(ImportDialog::defaultOutputPath(dir.filePath(QStringLiteral("garg_run"))),
        QDir::cleanPath(dir.filePath(QStringLiteral("garg_run.h5"))));
    EXPECT_TRUE(ImportDialog::isImportSource(foreignFixture("garg_run")));
    EXPECT_TRUE(ImportDialog::isImportSource(foreignFixture("model.npz")));
    EXPECT_FALSE(ImportDialog::isImportSource(foreignFixture("prompt.csv")));
}

TEST(ImportDialog, DroppingAFolderOnTheMainWindowOpensTheDialogWithIt)
{
    MainWindow window;
    window.setScripted(true);
    bool fileAction = false, folderAction = false;
    for (const QAction* action : window.findChildren<QAction*>()) {
        fileAction |= action->text() == QStringLiteral("&Import checkpoint…")
            && action->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_I);
        folderAction |= action->text() == QStringLiteral("Import run &folder…");
    }
    EXPECT_TRUE(fileAction) << "File ▸ Import checkpoint… (Ctrl+I)";
    EXPECT_TRUE(folderAction) << "File ▸ Import run folder…";

    QMimeData mime;
    mime.setUrls({ QUrl::fromLocalFile(foreignFixture("garg_run")) });
    QDragEnterEvent enter(QPoint(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &enter);
    EXPECT_TRUE(enter.isAccepted());
    QDropEvent drop(QPointF(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &drop);
    ImportDialog* dialog = window.importDialog();
    ASSERT_NE(dialog, nullptr);
    EXPECT_EQ(dialog->source(), foreignFixture("garg_run"));
    EXPECT_TRUE(dialog->isVisible());
    ASSERT_TRUE(waitIdle(*dialog));
    ASSERT_TRUE(dialog->hasPlan()) << dialog->errorMessage().toStdString();
    EXPECT_EQ(dialog->sourcesTable()->rowCount(), 3);

    // A dropped file that is neither an experiment nor a weights file is not taken.
    QMimeData csv;
    csv.setUrls({ QUrl::fromLocalFile(foreignFixture("prompt.csv")) });
    QDragEnterEvent enterCsv(QPoint(20, 20), Qt::CopyAction, &csv, Qt::LeftButton, Qt::NoModifier);
    enterCsv.setAccepted(false);
    QApplication::sendEvent(&window, &enterCsv);
    EXPECT_FALSE(enterCsv.isAccepted());
}

TEST(ImportDialog, ImportedRunOpensOnTheAttentionPage)
{
    const QString path = scratchFolder("import").filePath(QStringLiteral("garg.h5"));
    MainWindow window;
    window.setScripted(true);
    ImportDialog* dialog = window.importSource(foreignFixture("garg_run"));
    ASSERT_NE(dialog, nullptr);
    dialog->setOutputPath(path);
    ASSERT_TRUE(waitIdle(*dialog));
    ASSERT_TRUE(dialog->importButton()->isEnabled()) << dialog->errorMessage().toStdString();
    QSignalSpy finished(dialog, &ImportDialog::importFinished);
    QTest::mouseClick(dialog->importButton(), Qt::LeftButton);
    ASSERT_TRUE(finished.wait(300000) || finished.count() == 1);
    ASSERT_TRUE(finished.at(0).at(0).toBool()) << finished.at(0).at(1).toString().toStdString();

    EXPECT_EQ(QFileInfo(QString::fromStdString(window.experiment().path)).absoluteFilePath(),
        QFileInfo(path).absoluteFilePath());
    EXPECT_EQ(window.currentPage(), window.page<AttentionPage>());
    const icl::RunSummary summary = icl::readRunSummary(path.toStdString());
    ASSERT_EQ(summary.checkpoints.size(), 3u);
    EXPECT_EQ(summary.checkpoints[0].step, 100);
    EXPECT_EQ(summary.checkpoints[1].step, 200);
    EXPECT_EQ(summary.checkpoints[2].step, 300);
    // The next import dialog starts beside this source (the run folder's parent).
    EXPECT_EQ(QSettings().value(QStringLiteral("import/lastFolder")).toString(),
        QFileInfo(foreignFixture("garg_run")).absolutePath());
    // The dialog closes (and deletes itself) after a written import.
    ASSERT_TRUE(QTest::qWaitFor([&] { return window.importDialog() == nullptr; }, 10000));
    bool idle = false;
    window.whenIdle([&] { idle = true; });
    ASSERT_TRUE(QTest::qWaitFor([&] { return idle; }, 300000));
}
