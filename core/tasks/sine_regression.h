#pragma once
// Non-linear regression prompts of von Oswald et al. 2022 (docs/science.md §1, "further experiments").
// Core-internal (LibTorch).

#include <cstdint>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Draws sine-regression prompts: scalar inputs x ~ U(−x_range, x_range) (N(0, 1) when
/// x_distribution is "normal"), and per prompt an amplitude a ~ U(amplitude_min, amplitude_max) and a
/// phase φ ~ U(phase_min, phase_max), drawn independently; y = a·sin(x + φ) + noise_std·z.
/// Returns x [B, N+1, 1], y [B, N+1] and w [B, 2] = (a, φ). Sampled on the CPU from `seed` (the same
/// seed gives the same prompts on every device), then moved to `device` in `dtype`.
/// Throws icl::Error when task.d ≠ 1.
PromptBatch sampleSineRegression(const TaskConfig& task, int64_t batch, uint64_t seed,
                                 torch::Dtype dtype = torch::kFloat32, const torch::Device& device = torch::kCPU);

} // namespace icl
