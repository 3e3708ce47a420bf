#pragma once
// Prompts whose labels depend on a fixed representation Φ* (Guo et al. 2023, docs/science.md §2).
// Core-internal (LibTorch).

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// One fixed representation Φ*(x) = σ*(B_L σ*(… σ*(B_1 x))) with σ*(t) = max(t, 0.01·t) (leaky ReLU)
/// and no biases. B_1 [D, d] has orthonormal rows (D ≤ d) or columns (D ≥ d); B_l [D, D] for l > 1 are
/// random orthogonal (QR of a Gaussian matrix with the sign fix that makes the law Haar). The matrices
/// are float32 values (stored as such in the experiment file), held here in float64.
struct Representation {
    std::vector<torch::Tensor> layers;  ///< B_1 … B_L, float64 CPU

    /// Φ*(x) for x [..., d]. Returns [..., D] in x's dtype and device. Differentiable in x.
    torch::Tensor operator()(const torch::Tensor& x) const;
};

/// The task's representations Φ*_1 … Φ*_K (K = n_representations), drawn from
/// task.experiment_seed — the same seed always gives the same Φ*. Cached per (d, D, L, K, seed).
const std::vector<Representation>& taskRepresentations(const TaskConfig& task);

/// Draws one representation from `seed` (d → D with L layers).
Representation drawRepresentation(int64_t d, int64_t D, int64_t L, uint64_t seed);

/// Representation prompts: x ~ N(0, I_d) (or U(−x_range, x_range)^d), w ~ N(0, w_scale²·I_D), and
/// y = ⟨w, Φ*(x)⟩ + noise_std·z with Φ* the task's representation (for a mixture, one of the K drawn
/// uniformly per prompt). Returns x [B, N+1, d], y [B, N+1], w [B, D]. Sampled on the CPU from `seed`.
PromptBatch sampleRepresentation(const TaskConfig& task, int64_t batch, uint64_t seed,
                                 torch::Dtype dtype = torch::kFloat32, const torch::Device& device = torch::kCPU);

/// Which Φ*_k each prompt of sampleRepresentation(task, batch, seed) used: [B] int64 (all 0 for K = 1).
torch::Tensor representationChoice(const TaskConfig& task, int64_t batch, uint64_t seed);

/// rep_dim with 0 resolved to d.
inline int64_t representationDim(const TaskConfig& task) { return task.rep_dim > 0 ? task.rep_dim : task.d; }

} // namespace icl
