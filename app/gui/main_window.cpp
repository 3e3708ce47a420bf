#include "app/gui/main_window.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileInfo>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/analysis_page.h"
#include "app/gui/attention_page.h"
#include "app/gui/experiments_page.h"
#include "app/gui/import_dialog.h"
#include "app/gui/pasting_page.h"
#include "app/gui/patching_page.h"
#include "app/gui/shown_text.h"
#include "app/gui/train_page.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/runtime/allocator.h"
#include "core/runtime/blas.h"
#include "core/runtime/cpu_kernels.h"
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
const char* kGeometryKey = "mainWindow/geometry";
const char* kStateKey = "mainWindow/state";
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
        m_pageList.push_back(page);
        if (auto* analysis = qobject_cast<AnalysisPage*>(page))
            m_analysisPages.push_back(analysis);
    }
    m_experimentsPage = page<ExperimentsPage>();
    m_trainPage = page<TrainPage>();
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
    m_progress->hide(); // shown only while a job runs (updateBusy)
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setToolTip(tr("Stop the running job (Esc)"));
    m_cancel->setEnabled(false);
    statusBar()->addPermanentWidget(m_deviceLabel);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);

    createMenus();

    // --- wiring ---
    connect(m_experimentsPage, &ExperimentsPage::openRequested, this, &MainWindow::openExperiment);
    connect(m_experimentsPage, &ExperimentsPage::newExperimentRequested, this,
        [this](const QString& preset, const QString& scale, const QString& out) {
            m_trainPage->setPreset(preset, scale);
            m_trainPage->setOutputPath(out);
            showPage(m_trainPage);
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
    connect(m_trainPage, &TrainPage::progressChanged, this, &MainWindow::showProgress);
    connect(m_trainPage, &TrainPage::experimentWritten, this, &MainWindow::openExperiment);
    // While training, the timeline grows with every committed checkpoint (a resumed run continues the
    // file's list; a new run, whose first checkpoint is step 0, starts a new one).
    connect(m_trainPage, &TrainPage::checkpointSaved, this, [this](qint64 step) {
        std::vector<int64_t> steps = m_timeline->steps();
        if (steps.empty() || steps.back() < step)
            steps.push_back(step);
        else
            steps = { step };
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
            for (AnalysisPage* page : m_analysisPages)
                page->updateTrainingCurves(summary);
        } catch (const std::exception&) {
            // between the job's commits the file can be briefly absent; the next commit retries
        }
    });
    for (AnalysisPage* page : m_analysisPages) {
        connect(page, &AnalysisPage::busyStarted, this, [this, page] {
            m_cancelled.remove(page);
            updateBusy();
        });
        connect(page, &AnalysisPage::cancelRequested, this, [this, page] {
            if (page->isBusy())
                m_cancelled.insert(page);
        });
        connect(page, &AnalysisPage::busyFinished, this, [this, page] {
            if (page->reportsProgress() && !m_trainPage->isRunning()) {
                const bool cancelled = m_cancelled.remove(page);
                const auto row = std::find(m_pageList.begin(), m_pageList.end(), page) - m_pageList.begin();
                const QString title = m_navigator->item(int(row)) ? m_navigator->item(int(row))->text() : QString();
                const QString message = cancelled ? page->cancelledMessage() : page->doneMessage();
                if (!message.isEmpty())
                    statusBar()->showMessage(message, 5000);
                else if (!title.isEmpty()) // never the last progress line ("pasting: 532 of 1000 steps") left standing
                    statusBar()->showMessage(cancelled ? tr("%1 cancelled").arg(title) : tr("%1 done").arg(title), 5000);
            }
            updateBusy();
        });
        if (page->reportsProgress())
            connect(page, &AnalysisPage::progressChanged, this, [this](int percent, const QString& text) {
                if (!m_trainPage->isRunning()) // training owns the progress bar
                    showProgress(percent, text);
            });
    }
    // The links between pages.
    connect(page<PastingPage>(), &PastingPage::openRequested, this, &MainWindow::openExperiment);
    connect(page<AttentionPage>(), &AttentionPage::promptChanged, page<PatchingPage>(), &PatchingPage::setSharedPrompt);
    connect(m_trainPage, &TrainPage::errorOccurred, this, &MainWindow::showError);
    connect(m_trainPage, &TrainPage::statusMessage, this,
        [this](const QString& message) { statusBar()->showMessage(message, 15000); });

    loadRecentFiles();
    resize(1280, 800);
    QSettings settings;
    restoreGeometry(settings.value(kGeometryKey).toByteArray());
    restoreState(settings.value(kStateKey).toByteArray());
    statusBar()->showMessage(tr("Ready"), 3000);
}

MainWindow::~MainWindow() = default;

void MainWindow::setScripted(bool scripted)
{
    m_scripted = scripted;
    if (scripted) {
        setWindowState(Qt::WindowNoState);
        resize(1280, 800);
    }
}

void MainWindow::showError(const QString& title, const QString& rawMessage)
{
    // The one place errors reach the window: escaped (a file's names are quoted raw in the core's messages)
    // and one line; plain text, so that a name with markup is not rendered as rich text.
    const QString message = shownText(rawMessage);
    statusBar()->showMessage(QStringLiteral("%1: %2").arg(title, message), 15000);
    if (m_scripted) {
        std::fprintf(stderr, "icl-workbench: %s: %s\n", qUtf8Printable(title), qUtf8Printable(message));
        return;
    }
    QMessageBox box(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    box.setTextFormat(Qt::PlainText);
    box.exec();
}

void MainWindow::showPage(QWidget* page)
{
    const auto it = std::find(m_pageList.begin(), m_pageList.end(), page);
    if (it != m_pageList.end())
        m_navigator->setCurrentRow(int(it - m_pageList.begin()));
}

void MainWindow::showPage(const PageEntry& entry)
{
    const std::vector<PageEntry>& table = pageTable();
    for (size_t row = 0; row < table.size(); ++row)
        if (&table[row] == &entry)
            m_navigator->setCurrentRow(int(row));
}

QWidget* MainWindow::currentPage() const
{
    return m_pages->currentWidget();
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
        || std::any_of(
            m_analysisPages.begin(), m_analysisPages.end(), [](const AnalysisPage* p) { return p->isBusy(); });
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
           "<p>BLAS: %4<br>CPU kernels: %5<br>Allocator: %6</p>")
            .arg(QStringLiteral(ICL_APP_VERSION_STRING), m_deviceLabel->text(), QString::fromLatin1(qVersion()),
                QString::fromStdString(icl::blasInfo().summary()).toHtmlEscaped(),
                QString::fromStdString(icl::atenCpuInfo().summary()).toHtmlEscaped(),
                QString::fromStdString(icl::cpuAllocatorInfo().summary()).toHtmlEscaped()));
}

void MainWindow::showProgress(int percent, const QString& text)
{
    m_progress->show();
    if (percent < 0) {
        m_progress->setRange(0, 0);
    } else {
        m_progress->setRange(0, 100);
        m_progress->setValue(percent);
    }
    statusBar()->showMessage(text);
}

void MainWindow::updateBusy()
{
    const bool training = m_trainPage->isRunning();
    const bool busy = isBusy();
    m_cancel->setEnabled(busy);
    m_progress->setTextVisible(busy);
    m_stopAction->setEnabled(training);
    m_startAction->setEnabled(!training);
    m_progress->setVisible(busy);
    if (!busy) { // no busy bar, and no full bar, once nothing runs
        m_progress->setRange(0, 100);
        m_progress->setValue(0);
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
    // A running analysis ends before its page is destroyed (a pasting at its next training step, a patching after
    // its running forward pass); each page joins its worker when destroyed.
    for (AnalysisPage* page : m_analysisPages)
        page->cancel();
    if (ImportDialog* dialog = importDialog())
        dialog->cancelImport(); // stops at its next checkpoint; the dialog joins its worker when destroyed
    if (!m_scripted) {
        QSettings settings;
        settings.setValue(kGeometryKey, saveGeometry());
        settings.setValue(kStateKey, saveState());
    }
    event->accept();
}

} // namespace icl::gui
