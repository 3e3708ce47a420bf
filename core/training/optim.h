#pragma once
// Optimiser and learning-rate schedule of a training config, shared by the regression and the
// classification training loops. Core-internal (LibTorch).

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "core/io/config.h"

namespace icl {

using OptimizerStateKey = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

/// The key of parameter p's entry in Optimizer::state(): LibTorch 1.x keys it by the TensorImpl address printed
/// as a string, 2.x by the address itself.
OptimizerStateKey optimizerStateKey(const torch::Tensor& p);

/// The optimiser of training.optimizer ("adam", "adamw", "sgd") over `params` with lr, betas and weight decay;
/// Adam and AdamW update each float32 CPU parameter in one pass, with LibTorch's numbers (core/training/fused_adam.h).
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainingConfig& t, std::vector<torch::Tensor> params);

/// Learning rate η at optimisation step `step` (0-based) under training.schedule: constant; warmup (linear
/// to lr over warmup_steps, then constant); warmup_cosine (then cosine decay to 0 at the last step);
/// inverse_sqrt (Chan et al.: min(lr·t/warmup, lr·√(warmup/t)) with t = step + 1).
double learningRate(const TrainingConfig& t, int64_t step);

/// Sets η of every parameter group.
void setLearningRate(torch::optim::Optimizer& opt, double lr);

} // namespace icl
