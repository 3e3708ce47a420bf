#include "app/gui/main_window.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QUrl>
#include <QVBoxLayout>

#include "app/gui/attention_page.h"
#include "app/gui/experiments_page.h"
#include "app/gui/gd_alignment_page.h"
#include "app/gui/icl_curve_page.h"
#include "app/gui/icl_iwl_page.h"
#include "app/gui/import_dialog.h"
#include "app/gui/kernel_view_page.h"
#include "app/gui/pasting_page.h"
#include "app/gui/patching_page.h"
#include "app/gui/probes_page.h"
#include "app/gui/train_page.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/io/weights_file.h"
#include "core/training/blas.h"
#include "core/training/trainer.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/checkpoint_timeline.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"

#ifndef ICL_APP_VERSION_STRING
#define ICL_APP_VERSION_STRING "dev"
#endif

namespace icl::gui {

namespace {
constexpr int kMaxRecentFiles = 10;
const char* kRecentKey = "recentFiles";
const char* kGeometryKey = "mainWindow/geometry";
const char* kStateKey = "mainWindow/state";

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

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent)
    , m_navigator(new QListWidget(this))
    , m_pages(new QStackedWidget(this))
    , m_timeline(new widgets::CheckpointTimeline(this))
{
    setWindowTitle(tr("ICL Workbench"));
    setObjectName(QStringLiteral("mainWindow"));
    setAcceptDrops(true);

    // --- pages ---
    m_navigator->setObjectName(QStringLiteral("pageNavigator"));
    m_navigator->setFixedWidth(150);
    m_navigator->setIconSize(QSize(20, 20));
    m_navigator->setSpacing(2);
    for (const PageEntry& entry : pageTable()) {
        QWidget* page = entry.make(this);
        auto* item = new QListWidgetItem(style()->standardIcon(entry.icon), tr(entry.title), m_navigator);
        item->setToolTip(tr(entry.toolTip));
        item->setSizeHint(QSize(0, 32));
        m_pages->addWidget(page);
        if (auto* analysis = qobject_cast<AnalysisPage*>(page))
            m_analysisPages.push_back(analysis);
    }
    connect(m_navigator, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    // Analysis pages compute only while they are shown.
    connect(m_navigator, &QListWidget::currentRowChanged, this, [this](int row) {
        for (AnalysisPage* page : m_analysisPages)
            page->setActive(m_pages->widget(row) == page);
    });
    m_navigator->setCurrentRow(0);

    auto* body = new QHBoxLayout;
    body->setSpacing(6);
    body->addWidget(m_navigator);
    body->addWidget(m_pages, 1);
    auto* line = new QFrame(this);
    line->setFrameShape(QFrame::HLine);
    line->setFrameShadow(QFrame::Sunken);
    m_timeline->setObjectName(QStringLiteral("checkpointTimeline"));
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(4, 4, 4, 0);
    layout->setSpacing(2);
    layout->addLayout(body, 1);
    layout->addWidget(line);
    layout->addWidget(m_timeline);
    setCentralWidget(central);

    // --- status bar: device, progress, cancel ---
    QString device;
    try {
        device = QString::fromStdString(icl::resolveDeviceName("auto"));
    } catch (const icl::Error& e) {
        device = tr("unavailable (%1)").arg(QString::fromStdString(e.what()));
    }
    m_deviceLabel = new QLabel(tr("device: %1").arg(device), this);
    m_deviceLabel->setObjectName(QStringLiteral("deviceLabel"));
    m_deviceLabel->setToolTip(tr("Compute device that \"auto\" resolves to on this machine"));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("statusProgress"));
    m_progress->setMaximumWidth(180);
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setToolTip(tr("Stop the running job (Esc)"));
    m_cancel->setEnabled(false);
    statusBar()->addPermanentWidget(m_deviceLabel);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);

    // --- menus and shortcuts ---
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open experiment…"), this, &MainWindow::openWithDialog);
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &recent"));
    file->addSeparator();
    QAction* importFile = file->addAction(tr("&Import checkpoint…"), this, &MainWindow::importCheckpoint);
    importFile->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    importFile->setToolTip(tr("Import a PyTorch .pt, .safetensors or .npz checkpoint into an experiment file"));
    QAction* importFolder = file->addAction(tr("Import run &folder…"), this, &MainWindow::importRunFolder);
    importFolder->setToolTip(tr("Import a run folder in Garg et al.'s layout (model_<step>.pt, state.pt, config.yaml)"));
    file->addSeparator();
    QAction* exportPlot = file->addAction(tr("&Export current plot…"), this, &MainWindow::exportCurrentPlot);
    exportPlot->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setMenuRole(QAction::QuitRole);

    QMenu* train = menuBar()->addMenu(tr("&Train"));
    m_startAction = train->addAction(tr("&Start training"), this, [this] {
        showPage(Page::Train);
        m_trainPage->startTraining();
    });
    m_startAction->setShortcut(QKeySequence(Qt::Key_F5));
    m_stopAction = train->addAction(tr("S&top training"), m_trainPage, &TrainPage::stopTraining);
    m_stopAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_stopAction->setEnabled(false);
    train->addAction(tr("&Resume training"), this, [this] {
        showPage(Page::Train);
        m_trainPage->resumeTraining();
    });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_navigator->count(); ++i) {
        QAction* a = view->addAction(m_navigator->item(i)->text(), this, [this, i] { m_navigator->setCurrentRow(i); });
        // Ctrl+1…9 for the first nine pages, Ctrl+0 for the tenth (ICL vs IWL).
        if (i < 9)
            a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
        else if (i == 9)
            a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ICL Workbench"), this, &MainWindow::about);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);

    // --- wiring ---
    connect(m_experimentsPage, &ExperimentsPage::openRequested, this, &MainWindow::openExperiment);
    connect(m_experimentsPage, &ExperimentsPage::newExperimentRequested, this,
        [this](const QString& preset, const QString& scale, const QString& out) {
            m_trainPage->setPreset(preset, scale);
            m_trainPage->setOutputPath(out);
            showPage(Page::Train);
            m_trainPage->startTraining();
        });
    connect(m_timeline, &widgets::CheckpointTimeline::checkpointSelected, this, [this](qint64 step) {
        followCheckpoint(step);
        statusBar()->showMessage(tr("Checkpoint at step %1 selected").arg(step), 5000);
    });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        for (AnalysisPage* page : m_analysisPages)
            if (page->isBusy()) {
                page->cancel();
                if (!page->cancelledMessage().isEmpty())
                    statusBar()->showMessage(page->cancelledMessage(), 5000);
            }
        if (m_trainPage->isRunning())
            m_trainPage->stopTraining();
    });
    connect(m_trainPage, &TrainPage::trainingStarted, this, &MainWindow::updateBusy);
    connect(m_trainPage, &TrainPage::progressChanged, this, [this](int percent, const QString& text) {
        if (percent < 0) {
            m_progress->setRange(0, 0);
        } else {
            m_progress->setRange(0, 100);
            m_progress->setValue(percent);
        }
        statusBar()->showMessage(text);
    });
    connect(m_trainPage, &TrainPage::experimentWritten, this, &MainWindow::openExperiment);
    // While training, the timeline grows with every committed checkpoint (a resumed run continues the
    // file's list; a new run, whose first checkpoint is step 0, starts a new one).
    connect(m_trainPage, &TrainPage::checkpointSaved, this, [this](qint64 step) {
        std::vector<int64_t> steps = m_timeline->steps();
        if (steps.empty() || steps.back() < step)
            steps.push_back(step);
        else
            steps = {step};
        m_timeline->setSteps(steps);
    });
    connect(m_trainPage, &TrainPage::trainingFinished, this, &MainWindow::updateBusy);
    // Live alignment curves: re-read the running file after each committed evaluation, at most
    // twice a second (the trainer commits by rename, so a reader always sees a complete file).
    connect(m_trainPage, &TrainPage::metricsCommitted, this, [this](const QString& path) {
        if (m_liveRefresh.isValid() && m_liveRefresh.elapsed() < 500)
            return;
        m_liveRefresh.restart();
        try {
            const icl::RunSummary summary = icl::readRunSummary(path.toStdString());
            m_gdAlignmentPage->updateTrainingCurves(summary);
            m_iclIwlPage->updateTrainingCurves(summary);
        } catch (const std::exception&) {
            // between the job's commits the file can be briefly absent; the next commit retries
        }
    });
    for (AnalysisPage* page : m_analysisPages) {
        connect(page, &AnalysisPage::busyStarted, this, &MainWindow::updateBusy);
        connect(page, &AnalysisPage::busyFinished, this, [this, page] {
            if (page->reportsProgress() && !m_trainPage->isRunning()) {
                m_progress->setRange(0, 100);
                m_progress->setValue(100);
                statusBar()->showMessage(page->doneMessage(), 5000);
            }
            updateBusy();
        });
        if (page->reportsProgress())
            connect(page, &AnalysisPage::progressChanged, this, [this](int percent, const QString& text) {
                if (m_trainPage->isRunning())
                    return; // training owns the progress bar
                m_progress->setRange(0, 100);
                m_progress->setValue(percent);
                statusBar()->showMessage(text);
            });
    }
    connect(m_pastingPage, &PastingPage::openRequested, this, &MainWindow::openExperiment);
    connect(m_attentionPage, &AttentionPage::promptChanged, m_patchingPage, &PatchingPage::setSharedPrompt);
    connect(m_trainPage, &TrainPage::errorOccurred, this, &MainWindow::showError);
    connect(m_trainPage, &TrainPage::statusMessage, this,
        [this](const QString& message) { statusBar()->showMessage(message, 15000); });

    QSettings settings;
    m_recentFiles = settings.value(kRecentKey).toStringList();
    updateRecentMenu();
    resize(1280, 800);
    restoreGeometry(settings.value(kGeometryKey).toByteArray());
    restoreState(settings.value(kStateKey).toByteArray());
    statusBar()->showMessage(tr("Ready"), 3000);
}

MainWindow::~MainWindow() = default;

const std::vector<MainWindow::PageEntry>& MainWindow::pageTable()
{
    // The one place a page is registered: navigator order (= Page), --page names, title, tool tip, icon, factory.
    // View ▸ Ctrl+1…9, Ctrl+0 follow this order.
    static const std::vector<PageEntry> table = {
        { Page::Experiments, { "experiments" }, QT_TR_NOOP("Experiments"),
            QT_TR_NOOP("Open saved experiments, recent files and presets"), QStyle::SP_DirOpenIcon,
            [](MainWindow* w) -> QWidget* { return w->m_experimentsPage = new ExperimentsPage(w); } },
        { Page::Train, { "train" }, QT_TR_NOOP("Train"),
            QT_TR_NOOP("Train a model with live loss curves and checkpoints"), QStyle::SP_MediaPlay,
            [](MainWindow* w) -> QWidget* { return w->m_trainPage = new TrainPage(w); } },
        { Page::GdAlignment, { "gd-alignment", "gd_alignment" }, QT_TR_NOOP("GD alignment"),
            QT_TR_NOOP("Compare a trained linear self-attention model with gradient descent (von Oswald et al.)"),
            QStyle::SP_FileDialogContentsView,
            [](MainWindow* w) -> QWidget* { return w->m_gdAlignmentPage = new GdAlignmentPage(w); } },
        { Page::KernelView, { "kernel", "kernel-view", "kernel_view" }, QT_TR_NOOP("Kernel view"),
            QT_TR_NOOP("Softmax attention as one GD step of a contrastive reference model, exactly and with random "
                       "features (Ren & Liu)"),
            QStyle::SP_FileDialogDetailedView,
            [](MainWindow* w) -> QWidget* { return w->m_kernelViewPage = new KernelViewPage(w); } },
        { Page::IclCurve, { "icl-curve", "icl_curve" }, QT_TR_NOOP("ICL curve"),
            QT_TR_NOOP("Model and every baseline against the number of in-context examples, with bootstrap CIs "
                       "(Garg et al.)"),
            QStyle::SP_FileDialogInfoView,
            [](MainWindow* w) -> QWidget* { return w->m_iclCurvePage = new IclCurvePage(w); } },
        { Page::Probes, { "probes", "probe" }, QT_TR_NOOP("Probes"),
            QT_TR_NOOP("Linear probes on every layer of a GPT-2's residual stream, one line per target (Guo et al.)"),
            QStyle::SP_FileDialogListView,
            [](MainWindow* w) -> QWidget* { return w->m_probesPage = new ProbesPage(w); } },
        { Page::Pasting, { "pasting", "paste" }, QT_TR_NOOP("Pasting"),
            QT_TR_NOOP("Cut a GPT-2 at layer ℓ, train a new embedding under its frozen upper blocks and compare with a "
                       "model trained from scratch and with ridge (Guo et al.)"),
            QStyle::SP_ArrowUp, [](MainWindow* w) -> QWidget* { return w->m_pastingPage = new PastingPage(w); } },
        { Page::Attention, { "attention" }, QT_TR_NOOP("Attention"),
            QT_TR_NOOP("Attention patterns of every head, a prompt editor that re-runs the model on every edit, the "
                       "model beside GD, ridge and least squares, and the regression lens"),
            QStyle::SP_DesktopIcon,
            [](MainWindow* w) -> QWidget* { return w->m_attentionPage = new AttentionPage(w); } },
        { Page::Patching, { "patching", "patch" }, QT_TR_NOOP("Patching"),
            QT_TR_NOOP("Activation patching: the clean residual stream at each (layer, position) patched into a "
                       "corrupted run"),
            QStyle::SP_BrowserReload,
            [](MainWindow* w) -> QWidget* { return w->m_patchingPage = new PatchingPage(w); } },
        { Page::IclIwl, { "icl-iwl", "icl_iwl" }, QT_TR_NOOP("ICL vs IWL"),
            QT_TR_NOOP("Few-shot classification: in-context (holdout classes) vs in-weights accuracy over training "
                       "and at the selected checkpoint (Chan et al.)"),
            QStyle::SP_MessageBoxInformation,
            [](MainWindow* w) -> QWidget* { return w->m_iclIwlPage = new IclIwlPage(w); } },
    };
    return table;
}

std::optional<MainWindow::Page> MainWindow::pageFromName(const QString& name)
{
    const QString n = name.trimmed().toLower();
    for (const PageEntry& entry : pageTable())
        for (const char* alias : entry.names)
            if (alias && n == QLatin1String(alias))
                return entry.page;
    return std::nullopt;
}

void MainWindow::setScripted(bool scripted)
{
    m_scripted = scripted;
    if (scripted) {
        setWindowState(Qt::WindowNoState);
        resize(1280, 800);
    }
}

void MainWindow::showError(const QString& title, const QString& message)
{
    statusBar()->showMessage(QStringLiteral("%1: %2").arg(title, message), 15000);
    if (m_scripted) {
        std::fprintf(stderr, "icl-workbench: %s: %s\n", qUtf8Printable(title), qUtf8Printable(message));
        return;
    }
    QMessageBox::critical(this, title, message);
}

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
        const bool ok = m_iclIwlPage->openSweep(path);
        m_iclIwlPage->showTab(QStringLiteral("sweep"));
        showPage(Page::IclIwl);
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
    } catch (const std::exception& e) { // icl::Error, and anything else the reader lets through
        showError(tr("Cannot open experiment"), QString::fromStdString(e.what()));
        return false;
    }
    m_experiment = summary;
    m_experimentsPage->showExperiment(summary);
    m_trainPage->showExperiment(summary);
    std::vector<int64_t> steps;
    std::map<int64_t, std::string> damaged;
    for (const icl::CheckpointInfo& c : summary.checkpoints) {
        steps.push_back(c.step);
        if (!c.damaged.empty())
            damaged[c.step] = c.damaged;
    }
    m_timeline->setSteps(steps);
    m_timeline->setDamaged(damaged);
    if (!summary.damaged.empty()) // the rest of the file stays usable; icl-cli verify lists every object
        statusBar()->showMessage(tr("%n damaged object(s) in this file, marked on the timeline: %1", nullptr,
                                    int(summary.damaged.size()))
                                         .arg(QString::fromStdString(summary.damaged.front())),
                                 30000);
    if (!steps.empty())
        m_trainPage->selectCheckpoint(m_timeline->currentStep());
    for (AnalysisPage* page : m_analysisPages)
        page->showExperiment(summary, m_timeline->currentStep());
    addRecentFile(QFileInfo(path).absoluteFilePath());
    setWindowTitle(tr("%1 — ICL Workbench").arg(QFileInfo(path).fileName()));
    statusBar()->showMessage(
        tr("Opened %1: %2 checkpoints").arg(QFileInfo(path).fileName()).arg(summary.checkpoints.size()), 10000);
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
                showPage(Page::Attention);
        });
        m_importDialog = dialog;
    }
    dialog->setSource(source);
    dialog->show();
    dialog->raise();
    dialog->activateWindow();
    return dialog;
}

void MainWindow::showPage(Page page)
{
    m_navigator->setCurrentRow(int(page));
}

MainWindow::Page MainWindow::currentPage() const
{
    return Page(m_pages->currentIndex());
}

qint64 MainWindow::selectCheckpoint(qint64 step)
{
    const qint64 selected = m_timeline->setCurrentStep(step);
    if (selected >= 0)
        followCheckpoint(selected);
    return selected;
}

void MainWindow::followCheckpoint(qint64 step)
{
    m_trainPage->selectCheckpoint(step);
    for (AnalysisPage* page : m_analysisPages)
        page->selectCheckpoint(step);
}

widgets::PlotView* MainWindow::currentPlot() const
{
    QWidget* page = m_pages->currentWidget();
    if (auto* analysis = qobject_cast<AnalysisPage*>(page))
        return analysis->currentPlot();
    return page ? page->findChild<widgets::PlotView*>() : nullptr;
}

bool MainWindow::isBusy() const
{
    return m_trainPage->isRunning()
        || std::any_of(m_analysisPages.begin(), m_analysisPages.end(), [](const AnalysisPage* p) { return p->isBusy(); });
}

void MainWindow::whenIdle(std::function<void()> done)
{
    if (!isBusy()) {
        QTimer::singleShot(0, this, std::move(done));
        return;
    }
    connect(this, &MainWindow::idle, this, std::move(done), Qt::SingleShotConnection);
}

void MainWindow::flushPlots()
{
    for (widgets::PlotView* plot : findChildren<widgets::PlotView*>())
        plot->replotNow();
    for (widgets::HeatmapView* heatmap : findChildren<widgets::HeatmapView*>())
        heatmap->replotNow();
    for (widgets::AttentionPatternView* pattern : findChildren<widgets::AttentionPatternView*>())
        pattern->replotNow();
    for (widgets::BarChartView* bars : findChildren<widgets::BarChartView*>())
        bars->replotNow();
}

void MainWindow::exportCurrentPlot()
{
    if (auto* analysis = qobject_cast<AnalysisPage*>(m_pages->currentWidget())) {
        if (!analysis->exportCurrentPlot())
            statusBar()->showMessage(tr("This page has no plot to export yet"), 5000);
        return;
    }
    widgets::PlotView* plot = currentPlot();
    if (!plot) {
        statusBar()->showMessage(tr("This page has no plot to export"), 5000);
        return;
    }
    plot->exportWithDialog();
}

void MainWindow::about()
{
    QMessageBox::about(this, tr("About ICL Workbench"),
        tr("<h3>ICL Workbench %1</h3>"
           "<p>Train small transformers on synthetic in-context-learning tasks, compare them with gradient "
           "descent and other learning algorithms on the same prompts, and export publication-ready plots.</p>"
           "<p>%2 · Qt %3</p>"
           "<p>BLAS: %4</p>")
            .arg(QStringLiteral(ICL_APP_VERSION_STRING), m_deviceLabel->text(), QString::fromLatin1(qVersion()),
                QString::fromStdString(icl::blasInfo().summary()).toHtmlEscaped()));
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
    for (const QString& path : files)
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { openExperiment(path); })
            ->setToolTip(path);
    m_recentMenu->setEnabled(!files.isEmpty());
    m_experimentsPage->setRecentFiles(files);
}

void MainWindow::updateBusy()
{
    const bool training = m_trainPage->isRunning();
    const bool busy = isBusy();
    m_cancel->setEnabled(busy);
    m_progress->setTextVisible(busy);
    m_stopAction->setEnabled(training);
    m_startAction->setEnabled(!training);
    if (!busy) {
        m_progress->setRange(0, 100);
        m_progress->setValue(m_progress->value());
        Q_EMIT idle();
    }
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    if (m_trainPage->isRunning()) {
        if (!m_scripted) {
            const auto answer = QMessageBox::question(this, tr("Training is running"),
                tr("Stop training (keeping the last checkpoint in the file) and quit?"));
            if (answer != QMessageBox::Yes) {
                event->ignore();
                return;
            }
        }
        m_trainPage->stopTraining(); // the job joins its thread when the page is destroyed
    }
    m_gdAlignmentPage->cancel(); // a running analysis ends before the page is destroyed
    m_kernelViewPage->cancel();
    m_iclCurvePage->cancel();
    m_probesPage->cancel();
    m_attentionPage->cancel();
    m_patchingPage->cancel(); // stops after its running forward pass
    m_iclIwlPage->cancel();
    m_pastingPage->cancel(); // stops at its next training step; the page joins its worker when destroyed
    if (ImportDialog* dialog = importDialog())
        dialog->cancelImport(); // stops at its next checkpoint; the dialog joins its worker when destroyed
    if (!m_scripted) {
        QSettings settings;
        settings.setValue(kGeometryKey, saveGeometry());
        settings.setValue(kStateKey, saveState());
    }
    event->accept();
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
