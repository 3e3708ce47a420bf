#pragma once
// The two protocols of the analysis pages (compute when shown; run on request): bound to one run and the
// checkpoint the timeline selects, results that go stale when either changes, computed in the background (a
// JobTracker on an AnalysisRunner) with progress and cancel, a status line, and busy signals for the main window.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <QMetaObject>
#include <QString>
#include <QWidget>

#include "app/gui/analysis_runner.h"
#include "app/gui/gui_forward.h"
#include "app/gui/job_tracker.h"
#include "core/types/run_summary.h"

namespace icl::gui {

class RequestRun;

/// Base of the analysis pages. It owns the run and checkpoint binding (`m_summary`, `m_path`, `m_step`),
/// staleness (`m_stale`: the shown result does not belong to the current run/checkpoint/settings),
/// compute-when-shown (`setActive`), the worker (an AnalysisRunner) and its JobTracker (superseded results dropped,
/// results shown on the GUI thread, the stop flag of the running request), and the page's status line (`statusLabel()`,
/// created here, placed by the page).
///
/// A page follows one of two protocols (its Protocol). Both start alike: `showExperiment` stops the page's jobs,
/// rebinds and asks `bind()` whether the page applies to the run.
/// - ComputeWhenShown: `selectCheckpoint` and `requestCompute()` mark the result stale; whenever it is stale and
///   `ready()`, `compute()` runs.
/// - RunOnRequest (pasting, patching): nothing runs until the user presses the page's Run (its RequestRun, which
///   a new file stops); `selectCheckpoint` only tells the page (`checkpointChanged`).
///
/// Inside `compute()` a page starts a request with `newTicket()` (which supersedes the previous one) and
/// hands the core's work to `submit()`: the work runs on the worker thread with `progressReporter()` as its
/// progress callback, and its result is shown on the GUI thread only if no newer request started.
/// Thread affinity: GUI thread only (the work passed to submit runs on the worker).
class AnalysisPage : public QWidget {
    Q_OBJECT
public:
    /// When the page computes (see the class comment).
    enum class Protocol {
        ComputeWhenShown, ///< computes whenever it is shown and its result is stale
        RunOnRequest,     ///< computes only when the user presses Run
    };
    /// `name` is the page's object-name stem: the page is "<name>Page", its status line "<name>Status".
    explicit AnalysisPage(
        const QString& name, QWidget* parent = nullptr, Protocol protocol = Protocol::ComputeWhenShown);
    ~AnalysisPage() override;

    /// Shows a file at checkpoint `step` (−1: none). Default: stop the jobs, rebind, `bind()`; then compute when
    /// shown (ComputeWhenShown) or `checkpointChanged(false)` (RunOnRequest).
    virtual void showExperiment(const icl::RunSummary& summary, qint64 step);
    /// Follows the timeline. Default: a new step makes the result stale, computed when shown (ComputeWhenShown), or
    /// `checkpointChanged(step changed)` (RunOnRequest).
    virtual void selectCheckpoint(qint64 step);
    Protocol protocol() const { return m_protocol; }
    /// The page is on screen (computes a stale result) or not.
    virtual void setActive(bool active);
    /// Stops the page's jobs (cancelJobs) and emits cancelRequested. The main window's Cancel and closing call it.
    void cancel();
    /// True while a job is queued or running.
    bool isBusy() const;
    /// The plot that File ▸ Export current plot writes (default: the page's first plot; nullptr: none).
    virtual widgets::PlotView* currentPlot() const;
    /// Opens the export dialog of what the page shows (default: currentPlot()); false when there is nothing yet.
    virtual bool exportCurrentPlot();
    /// Status-bar lines after cancel() and when the page's jobs are done (empty: none).
    virtual QString cancelledMessage() const { return {}; }
    virtual QString doneMessage() const { return {}; }
    /// A running training job committed new rows to `summary`'s file (at most twice a second). A page that draws the
    /// run's training curves (followTrainingWith) adopts `summary` when it is the bound, supported run and redraws;
    /// for another run it shows that run at its last checkpoint. Other pages ignore it.
    void updateTrainingCurves(const icl::RunSummary& summary);
    /// True when the page's progress goes to the main window's progress bar (false for instant work).
    virtual bool reportsProgress() const { return true; }

    qint64 checkpointStep() const { return m_step; }
    bool isActive() const { return m_active; }
    QLabel* statusLabel() const { return m_status; }
    /// The message shown in place of the content (createContent), or nullptr.
    QLabel* messageLabel() const { return m_message; }

Q_SIGNALS:
    void busyStarted();
    void progressChanged(int percent, const QString& text);
    void busyFinished();
    /// A first look (a result on fewer prompts, or the first rows) is on screen; the full result follows.
    void firstLookShown();
    /// cancel() was called (before the page's jobs are told to stop).
    void cancelRequested();

protected:
    /// One request: its generation and its cancel flag (see JobTracker).
    using Ticket = JobTracker::Ticket;
    /// A core progress callback (done, total) → keep going.
    using Progress = std::function<bool(int64_t done, int64_t total)>;

    /// What cancel() does. Default: drops queued work and stops the running request at its next progress report;
    /// a result that was running goes stale.
    virtual void cancelJobs();
    /// Called by the default showExperiment after the binding changed: reset results and controls for
    /// `summary`. Return false, with the message for the user in `why`, when the page does not apply.
    virtual bool bind(const icl::RunSummary& summary, QString* why);
    /// RunOnRequest: the bound checkpoint (`m_step`) was set, by a new file (`changed` false) or the timeline.
    virtual void checkpointChanged(bool changed) { (void)changed; }
    /// Starts computing the result for the bound run and checkpoint (the default protocol calls it when the
    /// result is stale and ready()).
    virtual void compute() {}
    /// ComputeWhenShown, for a page with more than one result (each with its own staleness): whether any is stale,
    /// marking all stale (a new checkpoint), and computing the stale ones that can be (default: the one result).
    virtual bool isStale() const { return m_stale; }
    virtual void markStale() { m_stale = true; }
    virtual void refresh()
    {
        if (m_stale && ready())
            compute();
    }
    /// The default protocol computes only when this holds: the page applies, is shown, has a file and a step.
    virtual bool ready() const;
    /// Runs when the worker's queue has emptied, before busyFinished (e.g. to re-enable controls).
    virtual void jobsFinished() {}
    /// The result is stale (settings changed); computes now when ready().
    void requestCompute();

    /// Starts a new request; the previous one is superseded (its stop flag set, its result dropped). The result is
    /// no longer stale.
    Ticket newTicket();
    bool isCurrent(const Ticket& t) const { return m_jobs.isCurrent(t); }
    /// The page's requests (newTicket, submit and firstLookCallback go through it).
    JobTracker& jobs() { return m_jobs; }
    /// Progress callback for core work of request `t` (any thread): emits progressChanged with
    /// "<label>: <percent>%" and returns false once the request is stopped.
    Progress progressReporter(const Ticket& t, const QString& label);
    /// The error handler of request `t`: "Cancelled." or the error in the status line, unless superseded;
    /// `also` (optional) runs first for a current request.
    AnalysisRunner::ErrorHandler statusErrorHandler(const Ticket& t, std::function<void()> also = {});

    /// Runs `work` on the worker (queued under `key`; a queued job with the same key is replaced) and
    /// `show(result)` on the GUI thread unless a newer request started. Errors go to statusErrorHandler(t).
    /// `also` (optional) runs before the error is shown, for a current request.
    template <class Result>
    void submit(int key, const QString& label, const Ticket& t, std::function<Result()> work,
        std::function<void(const Result&)> show, std::function<void()> also = {})
    {
        m_jobs.submit<Result>(key, label, t, std::move(work), std::move(show), statusErrorHandler(t, std::move(also)));
    }

    /// The first-look callback of request `t` (JobTracker::firstLookCallback).
    template <class Result>
    std::function<void(const Result&)> firstLookCallback(const Ticket& t, std::function<void(const Result&)> show)
    {
        return m_jobs.firstLookCallback<Result>(t, std::move(show));
    }

    /// Makes the page follow a training run (updateTrainingCurves): `redraw` draws the curves of the new summary.
    void followTrainingWith(std::function<void()> redraw) { m_redrawTraining = std::move(redraw); }

    AnalysisRunner* runner() const { return m_runner; }
    /// Joins the worker now (from a page's destructor, before the widgets its results go to are destroyed).
    void stopWorker();

    /// The content widget createContent makes and its vertical layout (makeContentLayout).
    struct Content {
        QWidget* widget;
        QVBoxLayout* layout;
    };
    /// Lays the page out as a stack of a centred message (object name "<name>Message", text `message`) and a
    /// content widget, which it returns with its layout for the page to fill; the message shows until showContent().
    Content createContent(const QString& message);
    /// Shows `text` in place of the content (a run the page does not apply to), or the content again.
    void showMessage(const QString& text);
    void showContent();

    icl::RunSummary m_summary;
    std::string m_path;
    qint64 m_step = -1;
    bool m_supported = false;  ///< bind() accepted the run
    bool m_active = false;
    bool m_stale = false;
    QLabel* m_status = nullptr;
    QLabel* m_message = nullptr;       ///< createContent's message
    QStackedWidget* m_stack = nullptr; ///< createContent's stack: message, content
    std::function<void()> m_redrawTraining; ///< followTrainingWith's redraw

private:
    friend class RequestRun; // registers itself as the page's Run (RunOnRequest)

    QString m_name;
    Protocol m_protocol;
    AnalysisRunner* m_runner = nullptr;
    RequestRun* m_requestRun = nullptr; ///< the page's Run / Cancel row (RunOnRequest), stopped by a new file
    JobTracker m_jobs;                  ///< the page's requests on m_runner
};

} // namespace icl::gui
