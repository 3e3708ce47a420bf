#include "app/gui/request_run.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>

#include "app/gui/analysis_page.h"

namespace icl::gui {

RequestRun::RequestRun(AnalysisPage* page, const QString& name, QWidget* content, const QString& runText,
    const QString& runToolTip, const QString& what, const QString& unit, std::function<void()> onRun)
    : QObject(page)
    , m_page(page)
    , m_what(what)
    , m_unit(unit)
    , m_format(QStringLiteral("%v / %m ") + unit)
    , m_row(makeRunRow(name, content, runText, runToolTip, m_format))
    , m_timer(new QTimer(this))
{
    m_page->m_requestRun = this;
    m_timer->setInterval(100);
    connect(m_timer, &QTimer::timeout, this, &RequestRun::updateProgress);
    connect(m_row.run, &QPushButton::clicked, this, [onRun = std::move(onRun)] { onRun(); });
    connect(m_row.cancel, &QPushButton::clicked, this, &RequestRun::cancel);
}

RequestRun::~RequestRun() { stop(); }

std::shared_ptr<RunState> RequestRun::start(int64_t total)
{
    m_state = std::make_shared<RunState>();
    m_state->total = total;
    m_row.progress->setFormat(m_format);
    updateProgress();
    m_timer->start();
    return m_state;
}

void RequestRun::stop()
{
    if (m_state)
        m_state->stop = true;
}

void RequestRun::cancel()
{
    if (!m_page->isBusy() || !m_state)
        return;
    m_state->stop = true; // the job's error handler reports the cancellation
    Q_EMIT m_page->cancelRequested();
    m_row.cancel->setEnabled(false);
    m_page->statusLabel()->setText(tr("Cancelling…"));
}

void RequestRun::finished()
{
    m_timer->stop();
    updateProgress();
}

void RequestRun::resetProgress()
{
    m_row.progress->setRange(0, 1);
    m_row.progress->setValue(0);
    m_row.progress->setFormat(QString()); // no "0 / 1 <unit>" before anything ran
}

void RequestRun::updateButtons(bool ready)
{
    const bool busy = m_page->isBusy();
    m_row.run->setEnabled(ready && !busy);
    m_row.cancel->setEnabled(busy && m_state && !m_state->stop);
}

AnalysisRunner::ErrorHandler RequestRun::errorHandler(std::function<bool()> current, QString cancelNote) const
{
    return [this, current = std::move(current), state = m_state, cancelNote](const QString& error) {
        if (!current())
            return;
        if (state && state->cancelled)
            m_page->statusLabel()->setText(tr("Cancelled after %1 of %2 %3%4.")
                                               .arg(state->done.load())
                                               .arg(state->total.load())
                                               .arg(m_unit, cancelNote));
        else
            m_page->statusLabel()->setText(tr("%1 failed: %2").arg(m_what, error));
    };
}

void RequestRun::updateProgress()
{
    if (!m_state)
        return;
    const auto [done, total] = showRunProgress(m_row.progress, *m_state);
    if (m_page->isBusy())
        Q_EMIT m_page->progressChanged(int(100 * done / total), tr("%1: %2 of %3 %4").arg(m_what).arg(done).arg(total).arg(m_unit));
}

} // namespace icl::gui
