#pragma once
// Runs slow core analyses one after another on a worker thread and hands results to the GUI thread.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <QObject>
#include <QString>

namespace icl::gui {

/// The keys under which the analysis pages queue their jobs (AnalysisRunner::enqueue). Each page owns its runner, so
/// a key only replaces a queued job of the same page; the one list keeps every page's keys apart.
enum JobKey : int {
    KernelJob = 100, ///< Kernel view: the chosen attention matrix and its error sweep
    VariantsJob = 101, ///< Kernel view: the variants' loss curves
    CurveJob = 200, ///< ICL curve
    ProbeJob = 300, ///< Probes
    PastingJob = 400, ///< Pasting
    InspectJob = 500, ///< Attention: inspect the prompt
    PatchingJob = 600, ///< Patching
    IclIwlJob = 900, ///< ICL vs IWL: the evaluation of the selected checkpoint
    SequenceJob = 901, ///< ICL vs IWL: the sequence viewer
    AlgorithmMapJob = 1000, ///< Algorithm map: the map of the selected checkpoint
    AlgorithmMapTrainingJob = 1001, ///< Algorithm map: the map of every checkpoint
};

/// A queue of analysis jobs executed in order on one worker std::thread (the core's analyses use all
/// cores themselves; running them side by side would only thrash). A job is a function run on the
/// worker that returns a continuation run on the GUI thread (to show its result). Jobs carry a key:
/// enqueueing a key that is still queued replaces the queued job (a superseded request never runs).
/// cancel() drops the queue and the result of the running job; the core call itself cannot be
/// interrupted and runs to its end. Exceptions thrown by a job are caught on the worker and handed
/// to its `onError` continuation.
/// Thread affinity: created, used and destroyed on the GUI thread; the destructor joins the worker.
class AnalysisRunner : public QObject {
    Q_OBJECT
public:
    using Continuation = std::function<void()>;
    using Work = std::function<Continuation()>;
    using ErrorHandler = std::function<void(const QString& message)>;

    explicit AnalysisRunner(QObject* parent = nullptr);
    ~AnalysisRunner() override;

    /// Queues `work` (label for the status bar). `onError` runs on the GUI thread if `work` throws, with one
    /// escaped line (errorText): icl::Error's message, or what else the job threw about the file of
    /// setSource() ("FILE: what is wrong").
    void enqueue(int key, const QString& label, Work work, ErrorHandler onError);

    /// The file the jobs enqueued from now on read (the open experiment, the import source): names what
    /// they throw besides icl::Error. GUI thread.
    void setSource(const std::string& path) { m_source = path; }

    /// Drops queued jobs and the result of the running one.
    void cancel();

    /// True while a job is queued or running.
    bool isBusy() const { return m_pending > 0; }

Q_SIGNALS:
    /// Jobs done and total in the current batch (since the runner was last idle), and the label of the
    /// job that starts now (empty when only the counts changed).
    void progress(int done, int total, const QString& label);
    /// A batch started (the runner was idle).
    void started();
    /// The queue is empty and no job runs.
    void finished();

private:
    struct Job {
        int key = 0;
        QString label;
        Work work;
        ErrorHandler onError;
        uint64_t epoch = 0;
        std::string source;
    };
    void workerLoop();
    void onJobDone(uint64_t epoch, const Continuation& continuation);

    std::thread m_thread;
    std::mutex m_mutex; // guards m_queue, m_stop, m_current
    std::condition_variable m_wake;
    std::deque<Job> m_queue;
    bool m_stop = false;
    QString m_current;

    // GUI thread only.
    uint64_t m_epoch = 0; // bumped by cancel(): results of older jobs are dropped
    int m_pending = 0; // queued + running jobs
    int m_done = 0;
    int m_total = 0;
    std::string m_source;
};

} // namespace icl::gui
