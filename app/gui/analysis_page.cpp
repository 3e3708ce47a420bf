#include "app/gui/analysis_page.h"

#include <algorithm>

#include <QLabel>
#include <QMetaObject>
#include <QStackedWidget>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "app/gui/request_run.h"
#include "widgets/plot_view.h"

namespace icl::gui {

AnalysisPage::AnalysisPage(const QString& name, QWidget* parent, Protocol protocol)
    : QWidget(parent)
    , m_name(name)
    , m_protocol(protocol)
    , m_runner(new AnalysisRunner(this))
    , m_jobs(this, m_runner)
{
    setObjectName(name + QStringLiteral("Page"));
    m_status = new QLabel(this);
    m_status->setObjectName(name + QStringLiteral("Status"));
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText); // errors quote a file's names: never rendered as rich text
    connect(m_runner, &AnalysisRunner::started, this, &AnalysisPage::busyStarted);
    connect(m_runner, &AnalysisRunner::finished, this, [this] {
        jobsFinished();
        Q_EMIT busyFinished();
    });
}

AnalysisPage::~AnalysisPage()
{
    m_jobs.stopLatest(); // the runner (a child) joins the worker after the running job's next progress report
}

void AnalysisPage::showExperiment(const icl::RunSummary& summary, qint64 step)
{
    if (m_requestRun)
        m_requestRun->stop(); // a running request of the previous file stops; its result is dropped
    AnalysisPage::cancelJobs(); // the page's own cancelJobs() may report more than is useful for a new file
    m_jobs.dropAll();
    m_summary = summary;
    m_path = summary.path;
    m_runner->setSource(summary.path);
    m_step = step;
    m_status->clear();
    QString why;
    m_supported = bind(summary, &why);
    if (m_protocol == Protocol::RunOnRequest) {
        checkpointChanged(false);
        return;
    }
    m_stale = m_supported;
    refresh();
}

bool AnalysisPage::bind(const icl::RunSummary&, QString*)
{
    return true;
}

void AnalysisPage::selectCheckpoint(qint64 step)
{
    if (m_protocol == Protocol::RunOnRequest) {
        const bool changed = step != m_step;
        m_step = step;
        checkpointChanged(changed);
        return;
    }
    const bool changed = step != m_step;
    if (!changed && !isStale())
        return;
    m_step = step;
    if (changed)
        markStale();
    refresh();
}

void AnalysisPage::setActive(bool active)
{
    m_active = active;
    if (m_protocol == Protocol::ComputeWhenShown && active)
        refresh();
}

widgets::PlotView* AnalysisPage::currentPlot() const
{
    return findChild<widgets::PlotView*>();
}

bool AnalysisPage::exportCurrentPlot()
{
    widgets::PlotView* plot = currentPlot();
    return exportIfShown(plot != nullptr, plot);
}

bool AnalysisPage::isBusy() const
{
    return m_runner && m_runner->isBusy();
}

void AnalysisPage::stopWorker()
{
    m_jobs.stopLatest();
    delete m_runner;
    m_runner = nullptr;
    m_jobs.setRunner(nullptr);
}

void AnalysisPage::cancel()
{
    Q_EMIT cancelRequested();
    cancelJobs();
}

void AnalysisPage::cancelJobs()
{
    m_jobs.stopLatest();
    const bool wasBusy = m_runner->isBusy();
    m_runner->cancel();
    if (wasBusy) {
        m_stale = true;
        m_status->setText(tr("Cancelled. Select a checkpoint to compute again."));
    }
}

bool AnalysisPage::ready() const
{
    return m_supported && m_active && !m_path.empty() && m_step >= 0;
}

void AnalysisPage::requestCompute()
{
    m_stale = true;
    if (ready())
        compute();
}

AnalysisPage::Ticket AnalysisPage::newTicket()
{
    m_stale = false;
    return m_jobs.newTicket();
}

AnalysisPage::Progress AnalysisPage::progressReporter(const Ticket& t, const QString& label)
{
    return [this, stop = t.stop, label](int64_t done, int64_t total) {
        const int percent = int(100 * done / std::max<int64_t>(1, total));
        QMetaObject::invokeMethod(
            this, [this, percent, label] { Q_EMIT progressChanged(percent, tr("%1: %2%").arg(label).arg(percent)); },
            Qt::QueuedConnection);
        return !*stop;
    };
}

AnalysisRunner::ErrorHandler AnalysisPage::statusErrorHandler(const Ticket& t, std::function<void()> also)
{
    return [this, t, also = std::move(also)](const QString& error) {
        if (!isCurrent(t))
            return;
        if (also)
            also();
        m_status->setText(error == QLatin1String("cancelled") ? tr("Cancelled.") : error);
    };
}

void AnalysisPage::updateTrainingCurves(const icl::RunSummary& summary)
{
    if (!m_redrawTraining)
        return;
    if (summary.path != m_path || !m_supported) {
        showExperiment(summary, summary.checkpoints.empty() ? -1 : summary.checkpoints.back().step);
        return;
    }
    m_summary = summary;
    m_redrawTraining();
}

AnalysisPage::Content AnalysisPage::createContent(const QString& message)
{
    m_stack = new QStackedWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_stack);
    m_message = new QLabel(message, this);
    m_message->setObjectName(m_name + QStringLiteral("Message"));
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_message->setMargin(40);
    m_stack->addWidget(m_message);
    auto* content = new QWidget(this);
    m_stack->addWidget(content);
    return {content, makeContentLayout(content)};
}

void AnalysisPage::showMessage(const QString& text)
{
    m_message->setText(text);
    m_stack->setCurrentWidget(m_message);
}

void AnalysisPage::showContent()
{
    m_stack->setCurrentIndex(1);
}

} // namespace icl::gui
