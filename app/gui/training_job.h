#pragma once
// Runs icl::train on a worker thread and hands its progress reports to the GUI thread.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <QObject>
#include <QString>

#include <nlohmann/json.hpp>

#include "core/training/trainer.h"
#include "core/types/train_progress.h"

namespace icl::gui {

/// One training run at a time on a std::thread. Progress reports are buffered under a mutex and
/// drained by the GUI (takeProgress, on a coalescing timer); stop is an atomic flag checked by the
/// training callback, so a stop takes effect within one optimisation step.
/// Thread affinity: created, used and destroyed on the GUI thread; the destructor stops and joins.
class TrainingJob : public QObject {
    Q_OBJECT
public:
    explicit TrainingJob(QObject* parent = nullptr);
    ~TrainingJob() override;

    /// Starts training `config` (a resolved config) with `options`. False when a run is active.
    bool start(const nlohmann::json& config, const icl::TrainOptions& options);

    /// Asks the running job to stop after the current step (it then commits a final checkpoint).
    /// Safe from any thread.
    void requestStop() { m_stop.store(true); }

    bool isRunning() const { return m_running; }
    bool stopRequested() const { return m_stop.load(); }

    /// Progress reports buffered since the last call, oldest first.
    std::vector<icl::TrainProgress> takeProgress();

    /// Result of the last finished run (valid after finished(true, ...)).
    const icl::TrainResult& result() const { return m_result; }

Q_SIGNALS:
    /// The run ended: `ok` false when icl::train threw (message holds icl::Error's text).
    /// Emitted on the GUI thread after the worker thread has been joined.
    void finished(bool ok, const QString& message);

private:
    void onWorkerDone();

    std::thread m_thread;
    std::atomic<bool> m_stop { false };
    bool m_running = false;

    std::mutex m_mutex; // guards the members below, shared with the worker
    std::vector<icl::TrainProgress> m_buffer;
    icl::TrainResult m_workerResult;
    bool m_workerOk = false;
    std::string m_workerError;

    icl::TrainResult m_result;
};

} // namespace icl::gui
