#include "app/gui/training_job.h"

#include <exception>

#include <QMetaObject>

#include "core/error.h"
#include "core/io/file_error.h"

namespace icl::gui {

TrainingJob::TrainingJob(QObject* parent)
    : QObject(parent)
{
}

TrainingJob::~TrainingJob()
{
    m_stop.store(true);
    if (m_thread.joinable())
        m_thread.join();
}

bool TrainingJob::start(const nlohmann::json& config, const icl::TrainOptions& options)
{
    if (m_running)
        return false;
    if (m_thread.joinable())
        m_thread.join();
    m_stop.store(false);
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_buffer.clear();
        m_workerOk = false;
        m_workerError.clear();
        m_workerResult = {};
    }
    m_running = true;
    m_thread = std::thread([this, config, options] {
        icl::TrainResult result;
        bool ok = false;
        std::string error;
        try {
            result = icl::train(config, options, [this](const icl::TrainProgress& progress) {
                {
                    std::lock_guard<std::mutex> lock(m_mutex);
                    m_buffer.push_back(progress);
                }
                return !m_stop.load();
            });
            ok = true;
        } catch (const icl::Error& e) {
            error = e.what();
        } catch (const std::exception& e) {
            error = std::string("unexpected error: ") + icl::firstLine(e.what()); // never a LibTorch backtrace
        } catch (...) {
            error = "unexpected error";
        }
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_workerResult = result;
            m_workerOk = ok;
            m_workerError = error;
        }
        // Queued to the GUI thread; dropped if the job has been destroyed (the destructor joins first).
        QMetaObject::invokeMethod(this, &TrainingJob::onWorkerDone, Qt::QueuedConnection);
    });
    return true;
}

std::vector<icl::TrainProgress> TrainingJob::takeProgress()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    std::vector<icl::TrainProgress> out;
    out.swap(m_buffer);
    return out;
}

void TrainingJob::onWorkerDone()
{
    if (m_thread.joinable())
        m_thread.join();
    bool ok;
    std::string error;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_result = m_workerResult;
        ok = m_workerOk;
        error = m_workerError;
    }
    m_running = false;
    Q_EMIT finished(ok, QString::fromStdString(error));
}

} // namespace icl::gui
