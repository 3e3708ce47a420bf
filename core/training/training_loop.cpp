#include "core/training/training_loop.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/training/checkpoint.h"
#include "core/training/optim.h"

namespace icl {

TrainingLoop::TrainingLoop(const TrainingConfig& training, const TrainOptions& options,
                           const CheckpointData* resume_from, const TrainCallback& callback)
    : m_training(training)
    , m_out(options.out_path)
    , m_keepOptimizerEvery(options.keep_optimizer_every)
    , m_resumeFrom(resume_from)
    , m_callback(callback)
    , m_step(resume_from ? resume_from->step : 0)
    , m_wallOffset(resume_from ? resume_from->wall_time_s : 0.0)
    , m_started(std::chrono::steady_clock::now())
    , m_lastLr(learningRate(training, m_step))
    , m_truncatePending(resume_from != nullptr)
    , m_lastCheckpoint(m_step)
{
    m_progress.start_step = m_step;
    m_progress.step = m_step;
    m_progress.total_steps = training.steps;
}

double TrainingLoop::elapsed() const
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_started).count();
}

bool TrainingLoop::report(TrainProgress::Phase phase, const std::string& message)
{
    m_progress.phase = phase;
    m_progress.message = message;
    m_progress.elapsed_s = elapsed();
    return m_callback ? m_callback(m_progress) : true;
}

TrainResult TrainingLoop::stoppedBeforeTraining(const std::string& device) const
{
    TrainResult r;
    r.final_step = m_step;
    r.stopped = true;
    r.device = device;
    return r;
}

void TrainingLoop::diverged(int64_t step, const std::string& what) const
{
    throw Error("training diverged at step " + std::to_string(step) + ": " + what + "; the last checkpoint (step "
                + std::to_string(m_lastCheckpoint) + ") in " + m_out
                + " is intact and resumable; lower training.lr or set training.grad_clip");
}

void TrainingLoop::evaluateAndCommit(torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Hooks& hooks,
                                     bool withCheckpoint, double batchLoss, TrainResult& result)
{
    MetricsRow row;
    const double eval = hooks.evaluate(row);
    if (!std::isfinite(eval))
        diverged(m_step, "eval loss is " + std::to_string(eval));
    row["step"] = double(m_step);
    row["train_loss"] = m_lossCount ? m_lossSum / double(m_lossCount) : batchLoss;
    row["eval_loss"] = eval;
    row["lr"] = m_lastLr;
    row["grad_norm"] = m_lastGradNorm;
    row["wall_time_s"] = m_wallOffset + elapsed();
    m_pending.push_back(row);
    CheckpointData cp;
    if (withCheckpoint) {
        cp.step = m_step;
        cp.train_loss = row["train_loss"];
        cp.wall_time_s = row["wall_time_s"];
        cp.params = paramsToArrays(module);
        saveOptimizerState(optimizer, module, cp);
    }
    commitToExperimentFile(m_out, m_pending, withCheckpoint ? &cp : nullptr,
                           m_truncatePending ? m_resumeFrom->step : -1, m_keepOptimizerEvery);
    m_truncatePending = false;
    m_pending.clear();
    if (withCheckpoint)
        m_lastCheckpoint = m_step;
    m_progress.evaluated = true;
    m_progress.eval_loss = eval;
    m_progress.checkpointed = withCheckpoint;
    m_progress.checkpoint_train_loss = row["train_loss"];
    m_progress.wall_time_s = row["wall_time_s"];
    result.eval_loss = eval;
    m_lossSum = 0.0;
    m_lossCount = 0;
}

TrainResult TrainingLoop::run(torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Hooks& hooks,
                              const std::string& device)
{
    TrainResult result;
    result.device = device;
    bool evaluatedOnce = false;
    if (!resuming()) {
        // Step 0: the untrained model, so curves and the checkpoint timeline start at initialisation.
        double initialLoss;
        {
            torch::NoGradGuard guard;
            initialLoss = hooks.loss(0).item<double>();
        }
        m_progress.train_loss = initialLoss;
        evaluateAndCommit(module, optimizer, hooks, true, initialLoss, result);
        evaluatedOnce = true;
    }

    module.train();
    bool stopped = !report(TrainProgress::Phase::Training, "training");
    const auto params = module.parameters();
    const double maxNorm = m_training.grad_clip > 0 ? m_training.grad_clip : std::numeric_limits<double>::infinity();
    while (!stopped && m_step < m_training.steps) {
        const double lr = learningRate(m_training, m_step);
        setLearningRate(optimizer, lr);
        torch::Tensor loss;
        if (hooks.loss_and_grad) {
            loss = hooks.loss_and_grad(m_step);  // sets every grad(): nothing to zero
        } else {
            loss = hooks.loss(m_step);
            optimizer.zero_grad();
            loss.backward();
        }
        const double gradNorm = torch::nn::utils::clip_grad_norm_(params, maxNorm);
        const double lossValue = loss.item<double>();
        if (!std::isfinite(lossValue) || !std::isfinite(gradNorm))
            diverged(m_step + 1,
                     "loss = " + std::to_string(lossValue) + ", gradient norm = " + std::to_string(gradNorm));
        optimizer.step();
        ++m_step;
        m_lossSum += lossValue;
        ++m_lossCount;
        m_lastGradNorm = gradNorm;
        m_lastLr = lr;

        m_progress.step = m_step;
        m_progress.train_loss = lossValue;
        m_progress.lr = lr;
        m_progress.grad_norm = gradNorm;
        m_progress.evaluated = false;
        m_progress.checkpointed = false;
        const bool checkpointNow = m_step == m_training.steps || m_step % m_training.checkpoint_every == 0;
        if (checkpointNow || m_step % m_training.eval_every == 0) {
            evaluateAndCommit(module, optimizer, hooks, checkpointNow, lossValue, result);
            evaluatedOnce = true;
        }
        stopped = !report(TrainProgress::Phase::Training, "training");
        if (stopped && m_lastCheckpoint != m_step) {
            evaluateAndCommit(module, optimizer, hooks, true, lossValue, result);  // stop: keep everything so far
            evaluatedOnce = true;
        }
    }

    result.final_step = m_step;
    result.stopped = stopped && m_step < m_training.steps;
    if (!evaluatedOnce) {  // resumed with nothing left to train: the loss of the model as it is
        MetricsRow scratch;
        result.eval_loss = hooks.evaluate(scratch);
    }
    m_progress.evaluated = false;
    m_progress.checkpointed = false;
    report(TrainProgress::Phase::Finished, result.stopped ? "stopped" : "finished");
    return result;
}

} // namespace icl
