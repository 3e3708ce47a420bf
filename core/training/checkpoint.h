#pragma once
// Conversion between live LibTorch state and the experiment file's checkpoint arrays. Core-internal.

#include <torch/torch.h>

#include "core/io/experiment_file.h"

namespace icl {

/// Parameters of `module` as float32 arrays named as in named_parameters(), then its buffers (batch-norm
/// running statistics, position codes) named as in named_buffers(). Copies to the CPU.
std::vector<NamedArray> paramsToArrays(const torch::nn::Module& module);

/// Loads parameters and buffers by name (buffers converted to their own dtype). Throws icl::Error (naming
/// parameter and shapes) when a parameter or buffer is missing, unexpected, or has another shape. `where` prefixes messages (file and step).
void loadParams(torch::nn::Module& module, const std::vector<NamedArray>& params, const std::string& where);

/// Adam/AdamW/SGD state (exp_avg, exp_avg_sq, step; momentum_buffer) per parameter name.
void saveOptimizerState(torch::optim::Optimizer& optimizer, const torch::nn::Module& module, CheckpointData& out);

/// Restores what saveOptimizerState wrote. Parameters with no stored state keep a fresh state.
void loadOptimizerState(torch::optim::Optimizer& optimizer, const torch::nn::Module& module,
                        const CheckpointData& checkpoint, const std::string& where);

/// A float32 CPU tensor holding `array` (shape as stored).
torch::Tensor arrayToTensor(const NamedArray& array);

} // namespace icl
