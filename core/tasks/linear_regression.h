#pragma once
// Linear-regression prompts (Garg et al. 2022; von Oswald et al. 2022). Core-internal (LibTorch).

#include <cstdint>

#include <torch/torch.h>

#include "core/io/config.h"

namespace icl {

/// A batch of prompts (x_1, y_1, …, x_N, y_N, x_q). Row N of `x`/`y` is the query and its target.
struct PromptBatch {
    torch::Tensor x;  ///< [B, N+1, d] inputs; x[:, N] = x_q
    torch::Tensor y;  ///< [B, N+1] labels y_i = ⟨w, x_i⟩ + σ·z_i; y[:, N] = query target
    torch::Tensor w;  ///< [B, d] the task vector of each prompt

    int64_t batchSize() const { return x.size(0); }     ///< B
    int64_t nContext() const { return x.size(1) - 1; }  ///< N
    int64_t dim() const { return x.size(2); }           ///< d
    torch::Tensor contextX() const { return x.narrow(1, 0, nContext()); }  ///< [B, N, d]
    torch::Tensor contextY() const { return y.narrow(1, 0, nContext()); }  ///< [B, N]
    torch::Tensor queryX() const { return x.select(1, nContext()); }       ///< [B, d]
    torch::Tensor queryY() const { return y.select(1, nContext()); }       ///< [B]

    /// The same prompts keeping only the first n in-context examples (and the query).
    PromptBatch prefix(int64_t n) const;
    /// The first n + 1 points of each prompt: n in-context examples and x_{n+1} as the query, the
    /// prediction a causal model makes at the x_{n+1} token (Garg et al.: every prefix is a query).
    /// firstPoints(N) is the whole prompt. Requires 0 ≤ n ≤ N.
    PromptBatch firstPoints(int64_t n) const;
    PromptBatch to(const torch::Device& device) const;    ///< the same prompts on `device`
    PromptBatch slice(int64_t begin, int64_t end) const;  ///< prompts [begin, end)
};

/// Deterministic 64-bit seed for stream `stream` (e.g. a training step) of experiment seed `seed`.
uint64_t mixSeed(uint64_t seed, uint64_t stream);

/// Draws linear-regression prompts (Garg et al. 2022, docs/science.md §0): x ~ U(−r, r)^d or N(0, I_d) (N(0, Σ)
/// with task.x_condition_number > 1, inputCovarianceEigenvalues; the same draws z scaled, so κ = 1 is bitwise N(0, I)),
/// w ~ N(0, w_scale²·I_d), y = ⟨w, x⟩ + noise_std·z with z ~ N(0, 1) on every point (query included).
/// task.kind "sparse_linear_regression": w is multiplied by the indicator of a support of exactly
/// task.sparsity coordinates, a uniformly random subset drawn per prompt, so its non-zeros are
/// N(0, w_scale²); "noisy_linear_regression" is the same draw with noise_std > 0 (checked by
/// parseConfig); every other kind draws the dense task. With task.active_dims = d_eff in (0, d)
/// (the curriculum) only x's first d_eff coordinates are drawn, the rest are exactly 0, and the
/// sparse support lies among those d_eff. Returns x [B, N+1, d], y [B, N+1], w [B, d].
/// Sampling happens on the CPU from `seed`, so the same seed gives the same prompts on every device;
/// the result is moved to `device` in `dtype`. Throws icl::Error when task.sparsity exceeds d_eff.
PromptBatch sampleLinearRegression(const TaskConfig& task, int64_t batch, uint64_t seed,
                                   torch::Dtype dtype = torch::kFloat32,
                                   const torch::Device& device = torch::kCPU);

/// Active input coordinates of a task: task.active_dims when it is in (0, d), else d.
int64_t activeDims(const TaskConfig& task);

/// Eigenvalues of the input covariance Σ over the first `active` coordinates (task.x_condition_number κ):
/// λ_j = c·κ^(−(j−1)/(active−1)), j = 1 … active, with c such that their mean is 1; all 1 when κ = 1 or active = 1.
/// [active] float64. x ~ N(0, Σ) is drawn as z ~ N(0, I) scaled by √λ_j per coordinate.
torch::Tensor inputCovarianceEigenvalues(const TaskConfig& task, int64_t active);

/// Support indicator of sparse task vectors: [B, d] float64 with exactly k ones per row, at a
/// uniformly random k-subset of the first `active` coordinates (argsort of B×active uniforms from `gen`).
torch::Tensor sparseSupportMask(int64_t batch, int64_t d, int64_t active, int64_t k, at::Generator& gen);

/// Pair layout (von Oswald et al.): e_i = (x_i, y_i), query (x_q, 0). Returns [B, N+1, d+1].
torch::Tensor pairTokens(const PromptBatch& batch);

/// Interleaved layout (Garg et al.): x_1, [y_1, 0…0], …, x_N, [y_N, 0…0], x_q. Returns [B, 2N+1, d].
torch::Tensor interleavedTokens(const PromptBatch& batch);

} // namespace icl
