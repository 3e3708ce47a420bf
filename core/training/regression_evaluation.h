#pragma once
// The fixed evaluation of a regression run, shared by training (trainer.cpp) and import (weights_import.cpp), so an
// imported checkpoint is measured exactly as a trained one. Core-internal (LibTorch).

#include <map>
#include <string>

#include <torch/torch.h>

#include "core/baselines/baselines.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Writes the task's fixed arrays into the experiment file at `path` (storeTaskArrays): for representation tasks
/// Φ* (/task/phi/<k>/B_<l>, Guo et al.), so other tools can recompute Φ*(x); nothing for other tasks.
void storeFixedTaskArrays(const ExperimentConfig& config, const std::string& path);

/// Loss 0.5·mean((ŷ_q − y_q)²) of `model` on `eval` (chunks of 4,096 prompts, float64 sums), under NoGradGuard in
/// eval mode; leaves the module in training mode.
double evalLoss(const ModelHandle& model, const PromptBatch& eval);

/// A run's evaluation: n_prompts fixed evaluation prompts (seeds::eval), separate tuning prompts (seeds::tuning) on
/// which the baselines' step sizes are fitted, each baseline's loss on the evaluation prompts, and per evaluation the
/// model's loss and its alignment with every eval.alignment reference. Thread affinity: the thread that made it.
class RegressionEvaluation {
public:
    /// Draws the prompts and fits the baselines of `config` (a regression task); the evaluation prompts are
    /// moved to `device`. Throws icl::Error for a baseline that does not fit the task.
    RegressionEvaluation(const ExperimentConfig& config, const torch::Device& device);

    const FittedBaselines& fitted() const { return m_fitted; }
    const PromptBatch& tuning() const { return m_tuning; }
    /// Baseline name → 0.5·MSE on the evaluation prompts.
    const std::map<std::string, double>& baselineLoss() const { return m_baselineLoss; }

    /// The model's loss on the evaluation prompts; adds baseline/<name>, the fitted step sizes and
    /// alignment/<reference>/{prediction_difference, model_cosine, model_difference, relative_model_difference}
    /// to `row`.
    double evaluate(const ModelHandle& model, MetricsRow& row) const;

private:
    const ExperimentConfig& m_config;
    PromptBatch m_tuning;
    FittedBaselines m_fitted;
    std::map<std::string, double> m_baselineLoss;
    PromptBatch m_eval;  ///< on the device
};

} // namespace icl
