#pragma once
// The prompt generator of each regression task kind (the dispatcher over core/tasks). Core-internal (LibTorch).

#include <cstdint>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Prompts of the config's task kind: "linear_regression", "sparse_linear_regression" and
/// "noisy_linear_regression" (sampleLinearRegression), "sine_regression" (sampleSineRegression), "representation"
/// and "representation_mixture" (sampleRepresentation). Shapes as in PromptBatch: x [B, N+1, d], y [B, N+1].
/// Throws icl::Error for a kind without a prompt generator.
PromptBatch samplePrompts(const TaskConfig& task, int64_t batch, uint64_t seed, torch::Dtype dtype = torch::kFloat32,
                          const torch::Device& device = torch::kCPU);

} // namespace icl
