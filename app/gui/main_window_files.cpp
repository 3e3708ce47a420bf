// MainWindow's file handling: what a path is (experiment, sweep, import source), opening it, the import dialog,
// the recent-files list and drag and drop.
#include "app/gui/main_window.h"
#include "app/gui/page_widgets.h"
#include "widgets/plot_export.h"

#include <map>

#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QMenu>
#include <QMimeData>
#include <QRegularExpression>
#include <QSettings>
#include <QStatusBar>
#include <QUrl>

#include "app/gui/attention_page.h"
#include "app/gui/experiments_page.h"
#include "app/gui/icl_iwl_page.h"
#include "app/gui/import_dialog.h"
#include "app/gui/shown_text.h"
#include "app/gui/train_page.h"
#include "core/io/experiment_file.h"
#include "core/io/weights_file.h"
#include "widgets/checkpoint_timeline.h"

namespace icl::gui {

namespace {
constexpr int kMaxRecentFiles = 10;
const char* kRecentKey = "recentFiles";

/// Dropped experiment files (.h5).
QStringList localH5Files(const QMimeData* mime)
{
    QStringList files;
    if (!mime || !mime->hasUrls())
        return files;
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile() && url.toLocalFile().endsWith(QStringLiteral(".h5"), Qt::CaseInsensitive))
            files << url.toLocalFile();
    return files;
}

/// Dropped weights files (.pt, .pth, .bin, .safetensors, .npz, .npy) and folders: sources to import.
QStringList localImportSources(const QMimeData* mime)
{
    QStringList sources;
    if (!mime || !mime->hasUrls())
        return sources;
    for (const QUrl& url : mime->urls())
        if (url.isLocalFile() && ImportDialog::isImportSource(url.toLocalFile()))
            sources << url.toLocalFile();
    return sources;
}
} // namespace

bool MainWindow::isGargRunFolder(const QString& path)
{
    const QFileInfo info(path);
    if (!info.isDir())
        return false;
    static const QRegularExpression checkpoint(QStringLiteral("^model_[0-9]+\\.pt$"));
    const QStringList files = QDir(path).entryList(
        { QStringLiteral("model_*.pt"), QStringLiteral("state.pt") }, QDir::Files | QDir::Readable);
    for (const QString& name : files)
        if (name == QLatin1String("state.pt") || checkpoint.match(name).hasMatch())
            return true;
    return false;
}

MainWindow::PathKind MainWindow::pathKind(const QString& path)
{
    const QFileInfo info(path);
    if (info.isDir())
        return isGargRunFolder(path) ? PathKind::ImportSource : PathKind::Sweep;
    if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive))
        return PathKind::Sweep;
    if (!info.isFile())
        return PathKind::Experiment;
    try {
        // From the bytes, never the name: a renamed checkpoint is still a checkpoint, an .h5 is none.
        if (icl::detectWeightsFormat(path.toStdString()) != icl::WeightsFormat::Unknown)
            return PathKind::ImportSource;
    } catch (const std::exception&) {
        // Unreadable: openExperiment reports it.
    }
    return PathKind::Experiment;
}

bool MainWindow::openPath(const QString& path)
{
    switch (pathKind(path)) {
    case PathKind::ImportSource:
        importSource(path);
        return true;
    case PathKind::Sweep: {
        IclIwlPage* iclIwl = page<IclIwlPage>();
        const bool ok = iclIwl->openSweep(path);
        iclIwl->showTab(QStringLiteral("sweep"));
        showPage(iclIwl);
        return ok;
    }
    case PathKind::Experiment:
        break;
    }
    return openExperiment(path);
}

bool MainWindow::openExperiment(const QString& path)
{
    icl::RunSummary summary;
    try {
        summary = icl::readRunSummary(path.toStdString());
    } catch (const std::exception& e) { // icl::Error, and anything else the reader lets through: "FILE: …"
        showError(tr("Cannot open experiment"), QString::fromStdString(icl::fileErrorMessage(path.toStdString(), e)));
        return false;
    }
    m_experiment = summary;
    setExperimentFolder(QFileInfo(path).absolutePath()); // where file dialogs start
    m_experimentsPage->showExperiment(summary);
    m_trainPage->showExperiment(summary);
    std::vector<int64_t> steps;
    std::map<int64_t, std::string> damaged;
    for (const icl::CheckpointInfo& c : summary.checkpoints) {
        steps.push_back(c.step);
        if (!c.damaged.empty())
            damaged[c.step] = icl::escapeForDisplay(c.damaged); // the timeline's tooltips show it
    }
    m_timeline->setSteps(steps);
    m_timeline->setDamaged(damaged);
    if (!summary.damaged.empty()) // the rest of the file stays usable; icl-cli verify lists every object
        statusBar()->showMessage(
            tr("%n damaged object(s) in this file, marked on the timeline: %1", nullptr, int(summary.damaged.size()))
                .arg(shownText(summary.damaged.front())),
            30000);
    if (!steps.empty())
        m_trainPage->selectCheckpoint(m_timeline->currentStep());
    for (AnalysisPage* page : m_analysisPages)
        page->showExperiment(summary, m_timeline->currentStep());
    addRecentFile(QFileInfo(path).absoluteFilePath());
    setWindowTitle(tr("%1 — ICL Workbench").arg(shownText(QFileInfo(path).fileName())));
    icl::widgets::setExportDirectory(QFileInfo(path).absolutePath());  // plot exports go beside the experiment
    const QString name = shownText(QFileInfo(path).fileName());
    statusBar()->showMessage(summary.checkpoints.size() == 1
            ? tr("Opened %1: 1 checkpoint").arg(name)
            : tr("Opened %1: %2 checkpoints").arg(name).arg(summary.checkpoints.size()),
        10000);
    return true;
}

void MainWindow::openWithDialog()
{
    m_experimentsPage->browseForExperiment();
}

void MainWindow::importCheckpoint()
{
    const QString path = ImportDialog::browseForSource(this, false);
    if (!path.isEmpty())
        importSource(path);
}

void MainWindow::importRunFolder()
{
    const QString path = ImportDialog::browseForSource(this, true);
    if (!path.isEmpty())
        importSource(path);
}

ImportDialog* MainWindow::importDialog() const
{
    return static_cast<ImportDialog*>(m_importDialog.data());
}

ImportDialog* MainWindow::importSource(const QString& source)
{
    ImportDialog* dialog = importDialog();
    if (dialog && dialog->isImporting()) {
        statusBar()->showMessage(tr("An import is running; wait for it or cancel it first"), 5000);
        dialog->raise();
        dialog->activateWindow();
        return nullptr;
    }
    if (!dialog) {
        dialog = new ImportDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        connect(dialog, &ImportDialog::imported, this, [this](const QString& path) {
            if (openExperiment(path))
                showPage<AttentionPage>();
        });
        m_importDialog = dialog;
    }
    dialog->setSource(source);
    dialog->show();
    dialog->raise();
    dialog->activateWindow();
    return dialog;
}

void MainWindow::loadRecentFiles()
{
    m_recentFiles = QSettings().value(kRecentKey).toStringList();
    updateRecentMenu();
}

QStringList MainWindow::recentFiles() const
{
    return m_recentFiles;
}

void MainWindow::addRecentFile(const QString& path)
{
    m_recentFiles.removeAll(path);
    m_recentFiles.prepend(path);
    while (m_recentFiles.size() > kMaxRecentFiles)
        m_recentFiles.removeLast();
    if (!m_scripted)
        QSettings().setValue(kRecentKey, m_recentFiles);
    updateRecentMenu();
}

void MainWindow::updateRecentMenu()
{
    const QStringList files = recentFiles();
    m_recentMenu->clear();
    // "run.h5 — ~/runs/sweep": two runs of the same name in different folders are told apart.
    const QString home = QDir::homePath();
    for (const QString& path : files) {
        QString folder = QDir::toNativeSeparators(QFileInfo(path).absolutePath());
        if (!home.isEmpty() && home != QStringLiteral("/")
            && (folder == home || folder.startsWith(home + QDir::separator())))
            folder = QStringLiteral("~") + folder.mid(home.size());
        QString text = QStringLiteral("%1 — %2").arg(shownText(QFileInfo(path).fileName()), shownText(folder));
        text.replace(QLatin1Char('&'), QStringLiteral("&&")); // no mnemonics from file names
        m_recentMenu->addAction(text, this, [this, path] { openExperiment(path); })->setToolTip(shownText(path));
    }
    m_recentMenu->setToolTipsVisible(true);
    m_recentMenu->setEnabled(!files.isEmpty());
    m_experimentsPage->setRecentFiles(files);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event)
{
    if (!localH5Files(event->mimeData()).isEmpty() || !localImportSources(event->mimeData()).isEmpty())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event)
{
    const QStringList files = localH5Files(event->mimeData());
    const QStringList sources = localImportSources(event->mimeData());
    if (files.isEmpty() && sources.isEmpty())
        return;
    event->acceptProposedAction();
    if (!files.isEmpty()) {
        // Later files go to the recent list; the first one is opened.
        for (int i = int(files.size()) - 1; i >= 1; --i)
            addRecentFile(QFileInfo(files[i]).absoluteFilePath());
        openExperiment(files.front());
    }
    // Weights files and run folders go to the import dialog (the first one; one import at a time).
    if (!sources.isEmpty())
        importSource(sources.front());
}

} // namespace icl::gui
