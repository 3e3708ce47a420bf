#include "app/gui/analysis_runner.h"

#include <exception>

#include <QMetaObject>

#include "app/gui/shown_text.h"
#include "core/error.h"

namespace icl::gui {

AnalysisRunner::AnalysisRunner(QObject* parent)
    : QObject(parent)
{
    m_thread = std::thread([this] { workerLoop(); });
}

AnalysisRunner::~AnalysisRunner()
{
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
        m_queue.clear();
    }
    m_wake.notify_all();
    m_thread.join(); // waits for a running core call to end
}

void AnalysisRunner::enqueue(int key, const QString& label, Work work, ErrorHandler onError)
{
    bool replaced = false;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (Job& job : m_queue)
            if (job.key == key) {
                job = Job { key, label, std::move(work), std::move(onError), m_epoch, m_source };
                replaced = true;
                break;
            }
        if (!replaced)
            m_queue.push_back(Job { key, label, std::move(work), std::move(onError), m_epoch, m_source });
    }
    m_wake.notify_one();
    if (replaced)
        return;
    const bool wasIdle = m_pending == 0;
    if (wasIdle) {
        m_done = 0;
        m_total = 0;
    }
    ++m_pending;
    ++m_total;
    if (wasIdle)
        Q_EMIT started(); // isBusy() is true by now
    Q_EMIT progress(m_done, m_total, QString());
}

void AnalysisRunner::cancel()
{
    const bool wasBusy = m_pending > 0;
    int dropped = 0;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        dropped = int(m_queue.size());
        m_queue.clear();
    }
    ++m_epoch;
    m_pending -= dropped;
    m_total -= dropped;
    // A running job still reports back (and is dropped then); with none running the batch ends now.
    if (wasBusy && m_pending == 0)
        Q_EMIT finished();
}

void AnalysisRunner::workerLoop()
{
    for (;;) {
        Job job;
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
            if (m_stop)
                return;
            job = std::move(m_queue.front());
            m_queue.pop_front();
        }
        const QString label = job.label;
        QMetaObject::invokeMethod(
            this,
            [this, label] {
                if (m_pending > 0)
                    Q_EMIT progress(m_done, m_total, label);
            },
            Qt::QueuedConnection);
        Continuation continuation;
        QString error;
        try {
            continuation = job.work();
        } catch (const std::exception& e) { // one escaped line: the core's messages quote the file's names raw
            error = errorText(e, job.source);
        } catch (...) {
            error = QStringLiteral("unexpected error");
        }
        if (!error.isEmpty()) {
            ErrorHandler onError = std::move(job.onError);
            continuation = [onError, error] {
                if (onError)
                    onError(error);
            };
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (m_stop)
                return;
        }
        // Queued to the GUI thread; the destructor joins this thread before the object goes away, and
        // a call queued before that is discarded with the object.
        const uint64_t epoch = job.epoch;
        QMetaObject::invokeMethod(
            this, [this, epoch, continuation] { onJobDone(epoch, continuation); }, Qt::QueuedConnection);
    }
}

void AnalysisRunner::onJobDone(uint64_t epoch, const Continuation& continuation)
{
    if (epoch == m_epoch) {
        --m_pending;
        ++m_done;
        if (continuation)
            continuation();
    }
    // A job of a cancelled batch was already taken off m_pending... unless it was running.
    else {
        --m_pending;
    }
    if (m_pending <= 0) {
        m_pending = 0;
        Q_EMIT finished();
    } else {
        Q_EMIT progress(m_done, m_total, QString());
    }
}

} // namespace icl::gui
