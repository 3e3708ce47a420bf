#include "app/gui/main_window.h"

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
    , m_experimentsPage(new ExperimentsPage(this))
    , m_trainPage(new TrainPage(this))
    , m_gdAlignmentPage(new GdAlignmentPage(this))
    , m_kernelViewPage(new KernelViewPage(this))
    , m_iclCurvePage(new IclCurvePage(this))
    , m_probesPage(new ProbesPage(this))
    , m_pastingPage(new PastingPage(this))
    , m_attentionPage(new AttentionPage(this))
    , m_patchingPage(new PatchingPage(this))
    , m_iclIwlPage(new IclIwlPage(this))
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
    addPage(tr("Experiments"), m_experimentsPage, tr("Open saved experiments, recent files and presets"));
    addPage(tr("Train"), m_trainPage, tr("Train a model with live loss curves and checkpoints"));
    addPage(tr("GD alignment"), m_gdAlignmentPage,
        tr("Compare a trained linear self-attention model with gradient descent (von Oswald et al.)"));
    m_navigator->item(0)->setIcon(style()->standardIcon(QStyle::SP_DirOpenIcon));
    m_navigator->item(1)->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
    addPage(tr("Kernel view"), m_kernelViewPage,
        tr("Softmax attention as one GD step of a contrastive reference model, exactly and with random features "
           "(Ren & Liu)"));
    m_navigator->item(2)->setIcon(style()->standardIcon(QStyle::SP_FileDialogContentsView));
    addPage(tr("ICL curve"), m_iclCurvePage,
        tr("Model and every baseline against the number of in-context examples, with bootstrap CIs (Garg et al.)"));
    addPage(tr("Probes"), m_probesPage,
        tr("Linear probes on every layer of a GPT-2's residual stream, one line per target (Guo et al.)"));
    addPage(tr("Pasting"), m_pastingPage,
        tr("Cut a GPT-2 at layer ℓ, train a new embedding under its frozen upper blocks and compare with a model "
           "trained from scratch and with ridge (Guo et al.)"));
    addPage(tr("Attention"), m_attentionPage,
        tr("Attention patterns of every head, a prompt editor that re-runs the model on every edit, the model beside "
           "GD, ridge and least squares, and the regression lens"));
    addPage(tr("Patching"), m_patchingPage,
        tr("Activation patching: the clean residual stream at each (layer, position) patched into a corrupted run"));
    addPage(tr("ICL vs IWL"), m_iclIwlPage,
        tr("Few-shot classification: in-context (holdout classes) vs in-weights accuracy over training and at the "
           "selected checkpoint (Chan et al.)"));
    m_navigator->item(3)->setIcon(style()->standardIcon(QStyle::SP_FileDialogDetailedView));
    m_navigator->item(4)->setIcon(style()->standardIcon(QStyle::SP_FileDialogInfoView));
    m_navigator->item(5)->setIcon(style()->standardIcon(QStyle::SP_FileDialogListView));
    m_navigator->item(6)->setIcon(style()->standardIcon(QStyle::SP_ArrowUp));
    m_navigator->item(7)->setIcon(style()->standardIcon(QStyle::SP_DesktopIcon));
    m_navigator->item(8)->setIcon(style()->standardIcon(QStyle::SP_BrowserReload));
    m_navigator->item(9)->setIcon(style()->standardIcon(QStyle::SP_MessageBoxInformation));
    connect(m_navigator, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    // Analysis pages compute only while they are shown.
    connect(m_navigator, &QListWidget::currentRowChanged, this,
        [this](int row) {
            m_gdAlignmentPage->setActive(row == int(Page::GdAlignment));
            m_kernelViewPage->setActive(row == int(Page::KernelView));
            m_iclCurvePage->setActive(row == int(Page::IclCurve));
            m_probesPage->setActive(row == int(Page::Probes));
            m_attentionPage->setActive(row == int(Page::Attention));
            m_iclIwlPage->setActive(row == int(Page::IclIwl));
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
        m_trainPage->selectCheckpoint(step);
        m_gdAlignmentPage->selectCheckpoint(step);
        m_kernelViewPage->selectCheckpoint(step);
        m_iclCurvePage->selectCheckpoint(step);
        m_probesPage->selectCheckpoint(step);
        m_pastingPage->selectCheckpoint(step);
        m_attentionPage->selectCheckpoint(step);
        m_patchingPage->selectCheckpoint(step);
        m_iclIwlPage->selectCheckpoint(step);
        statusBar()->showMessage(tr("Checkpoint at step %1 selected").arg(step), 5000);
    });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_kernelViewPage->isBusy()) {
            m_kernelViewPage->cancel();
            statusBar()->showMessage(tr("Kernel view cancelled"), 5000);
        }
        if (m_iclCurvePage->isBusy()) {
            m_iclCurvePage->cancel();
            statusBar()->showMessage(tr("ICL curve cancelled"), 5000);
        }
        if (m_iclIwlPage->isBusy()) {
            m_iclIwlPage->cancel();
            statusBar()->showMessage(tr("ICL vs IWL evaluation cancelled"), 5000);
        }
        if (m_probesPage->isBusy()) {
            m_probesPage->cancel();
            statusBar()->showMessage(tr("Probes cancelled (the running probe finishes first)"), 5000);
        }
        if (m_pastingPage->isBusy()) {
            m_pastingPage->cancel();
            statusBar()->showMessage(tr("Pasting cancelled (stops at its next training step)"), 5000);
        }
        if (m_attentionPage->isBusy())
            m_attentionPage->cancel();
        if (m_patchingPage->isBusy()) {
            m_patchingPage->cancel();
            statusBar()->showMessage(tr("Patching cancelled (stops after the running forward pass)"), 5000);
        }
        if (m_gdAlignmentPage->isBusy()) {
            m_gdAlignmentPage->cancel();
            statusBar()->showMessage(tr("Analyses cancelled (a running computation finishes first)"), 5000);
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
    connect(m_gdAlignmentPage, &GdAlignmentPage::busyStarted, this, &MainWindow::updateBusy);
    connect(m_gdAlignmentPage, &GdAlignmentPage::busyFinished, this, [this] {
        if (!m_trainPage->isRunning()) {
            m_progress->setRange(0, 100);
            m_progress->setValue(100);
            statusBar()->showMessage(tr("GD alignment: analyses done"), 5000);
        }
        updateBusy();
    });
    connect(m_gdAlignmentPage, &GdAlignmentPage::progressChanged, this, [this](int percent, const QString& text) {
        if (m_trainPage->isRunning())
            return; // training owns the progress bar
        m_progress->setRange(0, 100);
        m_progress->setValue(percent);
        statusBar()->showMessage(text);
    });
    connect(m_kernelViewPage, &KernelViewPage::busyStarted, this, &MainWindow::updateBusy);
    connect(m_kernelViewPage, &KernelViewPage::busyFinished, this, [this] {
        if (!m_trainPage->isRunning()) {
            m_progress->setRange(0, 100);
            m_progress->setValue(100);
            statusBar()->showMessage(tr("Kernel view: analysis done"), 5000);
        }
        updateBusy();
    });
    connect(m_kernelViewPage, &KernelViewPage::progressChanged, this, [this](int percent, const QString& text) {
        if (m_trainPage->isRunning())
            return; // training owns the progress bar
        m_progress->setRange(0, 100);
        m_progress->setValue(percent);
        statusBar()->showMessage(text);
    });
    auto followAnalysisPage = [this](auto* page, const QString& doneText) {
        using PageType = std::remove_pointer_t<decltype(page)>;
        connect(page, &PageType::busyStarted, this, &MainWindow::updateBusy);
        connect(page, &PageType::busyFinished, this, [this, doneText] {
            if (!m_trainPage->isRunning()) {
                m_progress->setRange(0, 100);
                m_progress->setValue(100);
                statusBar()->showMessage(doneText, 5000);
            }
            updateBusy();
        });
        connect(page, &PageType::progressChanged, this, [this](int percent, const QString& text) {
            if (m_trainPage->isRunning())
                return; // training owns the progress bar
            m_progress->setRange(0, 100);
            m_progress->setValue(percent);
            statusBar()->showMessage(text);
        });
    };
    followAnalysisPage(m_iclCurvePage, tr("ICL curve: analysis done"));
    followAnalysisPage(m_probesPage, tr("Probes: analysis done"));
    followAnalysisPage(m_pastingPage, tr("Pasting: done"));
    connect(m_pastingPage, &PastingPage::openRequested, this, &MainWindow::openExperiment);
    followAnalysisPage(m_patchingPage, tr("Patching: done"));
    followAnalysisPage(m_iclIwlPage, tr("ICL vs IWL: evaluation done"));
    // Prompt edits re-run in milliseconds: they only drive Cancel and idle, not the progress bar.
    connect(m_attentionPage, &AttentionPage::busyStarted, this, &MainWindow::updateBusy);
    connect(m_attentionPage, &AttentionPage::busyFinished, this, &MainWindow::updateBusy);
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

void MainWindow::addPage(const QString& name, QWidget* page, const QString& toolTip)
{
    auto* item = new QListWidgetItem(name, m_navigator);
    item->setToolTip(toolTip);
    item->setSizeHint(QSize(0, 32));
    m_pages->addWidget(page);
}

std::optional<MainWindow::Page> MainWindow::pageFromName(const QString& name)
{
    const QString n = name.trimmed().toLower();
    if (n == QLatin1String("experiments"))
        return Page::Experiments;
    if (n == QLatin1String("train"))
        return Page::Train;
    if (n == QLatin1String("gd-alignment") || n == QLatin1String("gd_alignment"))
        return Page::GdAlignment;
    if (n == QLatin1String("kernel") || n == QLatin1String("kernel-view") || n == QLatin1String("kernel_view"))
        return Page::KernelView;
    if (n == QLatin1String("icl-curve") || n == QLatin1String("icl_curve"))
        return Page::IclCurve;
    if (n == QLatin1String("probes") || n == QLatin1String("probe"))
        return Page::Probes;
    if (n == QLatin1String("pasting") || n == QLatin1String("paste"))
        return Page::Pasting;
    if (n == QLatin1String("attention"))
        return Page::Attention;
    if (n == QLatin1String("patching") || n == QLatin1String("patch"))
        return Page::Patching;
    if (n == QLatin1String("icl-iwl") || n == QLatin1String("icl_iwl"))
        return Page::IclIwl;
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
    m_gdAlignmentPage->showExperiment(summary, m_timeline->currentStep());
    m_kernelViewPage->showExperiment(summary, m_timeline->currentStep());
    m_iclCurvePage->showExperiment(summary, m_timeline->currentStep());
    m_probesPage->showExperiment(summary, m_timeline->currentStep());
    m_pastingPage->showExperiment(summary, m_timeline->currentStep());
    m_attentionPage->showExperiment(summary, m_timeline->currentStep());
    m_patchingPage->showExperiment(summary, m_timeline->currentStep());
    m_iclIwlPage->showExperiment(summary, m_timeline->currentStep());
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
    if (selected >= 0) {
        m_trainPage->selectCheckpoint(selected);
        m_gdAlignmentPage->selectCheckpoint(selected);
        m_kernelViewPage->selectCheckpoint(selected);
        m_iclCurvePage->selectCheckpoint(selected);
        m_probesPage->selectCheckpoint(selected);
        m_pastingPage->selectCheckpoint(selected);
        m_attentionPage->selectCheckpoint(selected);
        m_patchingPage->selectCheckpoint(selected);
        m_iclIwlPage->selectCheckpoint(selected);
    }
    return selected;
}

widgets::PlotView* MainWindow::currentPlot() const
{
    QWidget* page = m_pages->currentWidget();
    if (page == m_gdAlignmentPage)
        return m_gdAlignmentPage->currentPlot();
    if (page == m_pastingPage)
        return m_pastingPage->currentPlot();
    if (page == m_iclIwlPage)
        return m_iclIwlPage->currentPlot();
    return page ? page->findChild<widgets::PlotView*>() : nullptr;
}

bool MainWindow::isBusy() const
{
    return m_trainPage->isRunning() || m_gdAlignmentPage->isBusy() || m_kernelViewPage->isBusy()
        || m_iclCurvePage->isBusy() || m_probesPage->isBusy() || m_pastingPage->isBusy() || m_attentionPage->isBusy()
        || m_patchingPage->isBusy() || m_iclIwlPage->isBusy();
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
    if (m_pages->currentWidget() == m_gdAlignmentPage) {
        if (!m_gdAlignmentPage->exportCurrentPlot())
            statusBar()->showMessage(tr("This tab has no plot to export"), 5000);
        return;
    }
    if (m_pages->currentWidget() == m_iclIwlPage) {
        if (!m_iclIwlPage->exportCurrentPlot())
            statusBar()->showMessage(tr("This tab has no plot to export yet"), 5000);
        return;
    }
    if (m_pages->currentWidget() == m_attentionPage || m_pages->currentWidget() == m_patchingPage) {
        const bool exported = m_pages->currentWidget() == m_attentionPage ? m_attentionPage->exportCurrentPlot()
                                                                          : m_patchingPage->exportCurrentPlot();
        if (!exported)
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
