#pragma once
// The optimisation loop every trainer shares (regression in trainer.cpp, few-shot classification in
// classification_trainer.cpp): progress reports, learning-rate schedule, gradient clipping, divergence checks,
// evaluation and checkpoint commits, stop and resume. Core-internal (LibTorch).

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"

namespace icl {

/// One run of the loop: created before the trainer builds its model and evaluation data (so that its
/// Preparing reports carry the elapsed time), then run() once. Thread affinity: the training thread; the
/// callback runs on it.
class TrainingLoop {
public:
    /// What a trainer plugs in.
    struct Hooks {
        /// Loss of training batch `step` (the batch is a function of the step alone, so a resumed run draws
        /// the same batches), with its graph; step 0 is also evaluated under NoGradGuard as the initial loss.
        std::function<torch::Tensor(int64_t step)> loss;
        /// Optional fused step (core/models/lsa_fused.h): loss of training batch `step` without a graph, with every
        /// parameter's grad() already set to its gradient. When given, the loop calls it instead of loss + backward
        /// for the training steps (loss still gives the step-0 loss).
        std::function<torch::Tensor(int64_t step)> loss_and_grad;
        /// Evaluates the current model: returns the eval loss (a non-finite value stops training as diverged)
        /// and adds the trainer's own series to `row` (accuracies, baselines, alignment, …). It must leave the
        /// module in training mode.
        std::function<double(MetricsRow& row)> evaluate;
    };

    /// `resume_from` (may be null) is the checkpoint a resumed run continues from; it must outlive the loop.
    TrainingLoop(const TrainingConfig& training, const TrainOptions& options, const CheckpointData* resume_from,
                 const TrainCallback& callback);

    bool resuming() const { return m_resumeFrom != nullptr; }
    int64_t step() const { return m_step; }

    /// Reports `phase` with `message`; false when the callback asks to stop.
    bool report(TrainProgress::Phase phase, const std::string& message);
    /// Loss of every baseline on the evaluation prompts, shown with each progress report.
    void setBaselines(const std::map<std::string, double>& losses) { m_progress.baselines = losses; }
    /// The result of a run stopped before training began (nothing written beyond the file's config).
    TrainResult stoppedBeforeTraining(const std::string& device) const;

    /// Trains `module` with `optimizer` from step() to training.steps: evaluation (and a checkpoint) of the
    /// untrained model at step 0 for a fresh run, then per step the scheduled learning rate, backward, gradient
    /// clipping (training.grad_clip), an evaluation every eval_every and a checkpoint every checkpoint_every
    /// steps and at the last one, and on stop a checkpoint of the current step. Metrics rows hold step,
    /// train_loss (mean since the previous row), eval_loss, lr, grad_norm, wall_time_s and the trainer's series.
    /// Throws icl::Error on divergence (NaN/Inf loss, gradient norm or eval loss); the last checkpoint stays
    /// intact and resumable.
    TrainResult run(torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Hooks& hooks,
                    const std::string& device);

private:
    double elapsed() const;
    [[noreturn]] void diverged(int64_t step, const std::string& what) const;
    void evaluateAndCommit(torch::nn::Module& module, torch::optim::Optimizer& optimizer, const Hooks& hooks,
                           bool withCheckpoint, double batchLoss, TrainResult& result);

    const TrainingConfig& m_training;
    std::string m_out;
    int64_t m_keepOptimizerEvery = 0;
    const CheckpointData* m_resumeFrom;
    TrainCallback m_callback;
    int64_t m_step;
    double m_wallOffset;
    std::chrono::steady_clock::time_point m_started;
    TrainProgress m_progress;

    std::vector<MetricsRow> m_pending;
    double m_lossSum = 0.0, m_lastGradNorm = 0.0, m_lastLr = 0.0;
    int64_t m_lossCount = 0;
    bool m_truncatePending;
    int64_t m_lastCheckpoint;
};

} // namespace icl
