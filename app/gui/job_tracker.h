#pragma once
// The requests of one page (hotspot's job tracker): a new request supersedes the previous one, whose result is
// dropped; results reach the GUI thread only while their request is current.

#include <atomic>
#include <functional>
#include <memory>

#include <QMetaObject>
#include <QObject>
#include <QString>

#include "app/gui/analysis_runner.h"

namespace icl::gui {

/// Tracks the requests of one page over its AnalysisRunner: `newTicket()` starts a request (setting the stop
/// flag of the previous one), `submit()` runs its work on the runner's worker and shows the result on the GUI
/// thread (in the context of the `context` object) only if the request is still current; `dropAll()` drops every
/// result so far (a new file).
/// Thread affinity: GUI thread only (the work passed to submit runs on the worker; a ticket's stop flag is atomic).
class JobTracker {
public:
    /// One request: its generation and its stop flag (read by the work's progress callback).
    struct Ticket {
        quint64 generation = 0;
        std::shared_ptr<std::atomic<bool>> stop;
    };

    JobTracker(QObject* context, AnalysisRunner* runner)
        : m_context(context)
        , m_runner(runner)
    {
    }

    /// Starts a new request; the previous one is superseded (its stop flag set, its result dropped).
    Ticket newTicket();
    bool isCurrent(const Ticket& t) const { return t.generation == m_generation; }
    /// Drops the results of every request started so far.
    void dropAll() { ++m_generation; }
    /// Sets the stop flag of the latest request (its work stops at its next progress report).
    void stopLatest();
    /// The runner the work goes to (nullptr once the page joined its worker).
    AnalysisRunner* runner() const { return m_runner; }
    void setRunner(AnalysisRunner* runner) { m_runner = runner; }

    /// Runs `work` on the worker (queued under `key`; a queued job with the same key is replaced) and
    /// `show(result)` on the GUI thread unless a newer request started. Errors go to `onError`.
    template <class Result>
    void submit(int key, const QString& label, const Ticket& t, std::function<Result()> work,
        std::function<void(const Result&)> show, AnalysisRunner::ErrorHandler onError)
    {
        m_runner->enqueue(
            key, label,
            [this, t, work = std::move(work), show = std::move(show)]() -> AnalysisRunner::Continuation {
                auto result = std::make_shared<Result>(work());
                return [this, t, result, show] {
                    if (isCurrent(t))
                        show(*result);
                };
            },
            std::move(onError));
    }

    /// The first-look callback of request `t` (called on the worker with a partial result): queues
    /// `show(first)` to the GUI thread, where it runs unless a newer request started.
    template <class Result>
    std::function<void(const Result&)> firstLookCallback(const Ticket& t, std::function<void(const Result&)> show)
    {
        return [this, t, show = std::move(show)](const Result& first) {
            QMetaObject::invokeMethod(
                m_context,
                [this, t, show, first] {
                    if (isCurrent(t))
                        show(first);
                },
                Qt::QueuedConnection);
        };
    }

private:
    QObject* m_context;
    AnalysisRunner* m_runner;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; ///< stop flag of the latest request
};

} // namespace icl::gui
