#pragma once
// Optimiser and learning-rate schedule of a training config, shared by the regression and the
// classification training loops. Core-internal (LibTorch).

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "core/io/config.h"

namespace icl {

/// The optimiser of training.optimizer ("adam", "adamw", "sgd") over `params` with lr, betas and weight decay.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainingConfig& t, std::vector<torch::Tensor> params);

/// Learning rate η at optimisation step `step` (0-based) under training.schedule: constant; warmup (linear
/// to lr over warmup_steps, then constant); warmup_cosine (then cosine decay to 0 at the last step);
/// inverse_sqrt (Chan et al.: min(lr·t/warmup, lr·√(warmup/t)) with t = step + 1).
double learningRate(const TrainingConfig& t, int64_t step);

/// Sets η of every parameter group.
void setLearningRate(torch::optim::Optimizer& opt, double lr);

} // namespace icl
