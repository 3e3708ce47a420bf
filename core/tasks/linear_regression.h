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

    int64_t batchSize() const { return x.size(0); }
    int64_t nContext() const { return x.size(1) - 1; }
    int64_t dim() const { return x.size(2); }
    torch::Tensor contextX() const { return x.narrow(1, 0, nContext()); }  ///< [B, N, d]
    torch::Tensor contextY() const { return y.narrow(1, 0, nContext()); }  ///< [B, N]
    torch::Tensor queryX() const { return x.select(1, nContext()); }       ///< [B, d]
    torch::Tensor queryY() const { return y.select(1, nContext()); }       ///< [B]

    /// The same prompts keeping only the first n in-context examples (and the query).
    PromptBatch prefix(int64_t n) const;
    PromptBatch to(const torch::Device& device) const;
    PromptBatch slice(int64_t begin, int64_t end) const;  ///< prompts [begin, end)
};

/// Deterministic 64-bit seed for stream `stream` (e.g. a training step) of experiment seed `seed`.
uint64_t mixSeed(uint64_t seed, uint64_t stream);

/// Draws linear-regression prompts: x ~ U(−r, r)^d or N(0, I_d), w ~ N(0, w_scale²·I_d),
/// y = ⟨w, x⟩ + noise_std·z. Sampling happens on the CPU from `seed`, so the same seed gives the
/// same prompts on every device; the result is moved to `device` in `dtype`.
PromptBatch sampleLinearRegression(const TaskConfig& task, int64_t batch, uint64_t seed,
                                   torch::Dtype dtype = torch::kFloat32,
                                   const torch::Device& device = torch::kCPU);

/// Pair layout (von Oswald et al.): e_i = (x_i, y_i), query (x_q, 0). Returns [B, N+1, d+1].
torch::Tensor pairTokens(const PromptBatch& batch);

/// Interleaved layout (Garg et al.): x_1, [y_1, 0…0], …, x_N, [y_N, 0…0], x_q. Returns [B, 2N+1, d].
torch::Tensor interleavedTokens(const PromptBatch& batch);

} // namespace icl
