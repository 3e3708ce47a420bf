#pragma once
// The on-request half of the page protocol (docs/architecture.md): pages that compute only when the user
// presses Run (pasting, patching) share the Run / Cancel / progress row, the running request's state, its
// progress polling, cancel and the reporting of a cancelled or failed request.

#include <cstdint>
#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include "app/gui/analysis_runner.h"
#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"

namespace icl::gui {

class AnalysisPage;

/// Owns, for one page, the Run / Cancel / progress row (makeRunRow), the RunState of the running request,
/// a 100 ms timer that polls that state into the progress bar and the page's progressChanged ("<what>: <done>
/// of <total> <unit>"; progress is polled, never posted per step), Cancel, and the worker's error handler
/// ("Cancelled after <done> of <total> <unit>…" or "<what> failed: <error>" in the page's status line).
/// The page keeps its options, its work and its results, and enables the row through updateButtons().
/// Thread affinity: GUI thread only (the RunState is shared with the worker through atomics).
class RequestRun : public QObject {
    Q_OBJECT
public:
    /// The row's widgets get the object names "<name>Run", "<name>Cancel", "<name>Progress" (children of
    /// `content`); `progressFormat` is the bar's text ("%v / %m training steps"). Clicking Run calls `onRun`.
    RequestRun(AnalysisPage* page, const QString& name, QWidget* content, const QString& runText,
        const QString& runToolTip, const QString& what, const QString& unit, std::function<void()> onRun);
    /// Asks a running request to stop (the page's runner joins the worker).
    ~RequestRun() override;

    const RunRow& row() const { return m_row; }
    /// Starts polling a new request of `total` steps and returns its state, for the work's progress callback.
    std::shared_ptr<RunState> start(int64_t total);
    /// The running request (nullptr before the first).
    const std::shared_ptr<RunState>& state() const { return m_state; }
    /// Asks the running request to stop at its next progress report (no-op when there is none).
    void stop();
    /// The user's Cancel: stop(), Cancel off and "Cancelling…" in the status line; no-op when the page is idle.
    void cancel();
    /// The worker's queue emptied: polling stops and the final progress is shown.
    void finished();
    /// Empties the progress bar (no text until a request starts).
    void resetProgress();
    /// Run on when `ready` and the page is idle; Cancel while busy until it was pressed.
    void updateButtons(bool ready);
    /// The error handler of a request: unless `current()` is false (superseded), "Cancelled after <done> of
    /// <total> <unit><cancelNote>." when the request was stopped, else "<what> failed: <error>".
    AnalysisRunner::ErrorHandler errorHandler(std::function<bool()> current, QString cancelNote = QString()) const;

private:
    void updateProgress();

    AnalysisPage* m_page;
    QString m_what;
    QString m_unit;
    QString m_format; ///< the bar's text while a request runs ("%v / %m <unit>")
    RunRow m_row;
    std::shared_ptr<RunState> m_state;
    QTimer* m_timer = nullptr;
};

} // namespace icl::gui
