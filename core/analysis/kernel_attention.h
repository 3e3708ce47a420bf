#pragma once
// Kernel view of softmax attention (Ren & Liu 2023, arXiv 2310.13220 v1): attention o(q) = Σ_i v_i·κ(k_i, q) /
// Σ_j κ(k_j, q) with κ(a, b) = exp(aᵀb) equals one GD step of a "dual" model W φ(u) on a contrastive loss;
// derivation, random features and scaling: docs/science.md §3. Core-internal (LibTorch); pure tensor math.
// Shapes: q [..., T, D], k [..., N, D], v [..., N, Dv], equal leading dimensions (none, [B] or [B, H]); an
// optional bool `mask` broadcastable to [..., T, N] (true = the query sees the key; each sees at least one).
// Callers fold any 1/√D into q. Results are float64 on q's device. Errors: icl::Error naming shape or value.
//
// Intended usage (one layer, one head or all heads at once):
//     const AttentionResult real = softmaxAttention(q, k, v);            // or the layer's own capture
//     const AttentionResult dual = referenceModelExact(q, k, v);         // equal to float precision
//     const AttentionResult rf = referenceModelRandomFeatures(q, k, v, drawOmega(D, 256, seed));
//     const KernelSweep sweep = sweepRandomFeatures(q, k, v, {});        // error vs m, fitted slope

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/types/kernel_view.h"

namespace icl {

/// Output and attention matrix of softmax attention or of the reference model.
struct AttentionResult {
    torch::Tensor output;     ///< [..., T, Dv] float64
    torch::Tensor attention;  ///< [..., T, N] float64, rows sum to 1 (the implied attention matrix)
};

/// Random-feature frequencies ω ~ N(0, I): [dim, m] float64 on the CPU, drawn from `seed` (the same
/// seed always gives the same ω). Throws icl::Error unless dim ≥ 1 and m ≥ 1.
torch::Tensor drawOmega(int64_t dim, int64_t m, uint64_t seed);

/// Positive random features (Ren & Liu §3 after Choromanski et al.'s FAVOR+):
///     φ(u) = m^{-1/2}·[exp(ω_rᵀu − ‖u‖²/2)]_{r=1..m},   so that   E_ω[φ(a)ᵀφ(b)] = exp(aᵀb).
/// `u` [..., D], `omega` [D, m] → [..., m] float64 on u's device. Not stabilised: exp overflows for
/// ‖u‖ beyond ~25 (the attention functions below work in log space). Throws icl::Error if
/// omega is not [u.size(-1), m].
torch::Tensor positiveRandomFeatures(const torch::Tensor& u, const torch::Tensor& omega);

/// Softmax attention, the ground truth: attention = softmax(q kᵀ) over the (visible) keys, output =
/// attention·v. No extra scaling.
AttentionResult softmaxAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& mask = {});

/// The reference model after one GD step with the exact kernel (Ren & Liu §3, the equivalence of
/// softmax attention and one step on the contrastive loss): φ(a)ᵀφ(b) replaced by exp(aᵀb),
///     W_1 = −η∇L(0) = η·Σ_i v_i φ(k_i)ᵀ,   η = 1/Σ_j exp(k_jᵀq),   f(q) = Σ_i v_i exp(k_iᵀq)·η.
/// The implied attention matrix is A_ti = exp(k_iᵀq_t)·η_t. Each row's exponents are shifted by their
/// maximum first (the shift cancels in η), so large scores do not overflow. Equals softmaxAttention
/// to float64 precision.
AttentionResult referenceModelExact(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& mask = {});

/// The reference model after one GD step with m positive random features φ (positiveRandomFeatures
/// with `omega` [D, m]): f(q) = Σ_i v_i φ(k_i)ᵀφ(q) / Σ_j φ(k_j)ᵀφ(q), implied attention
/// A_ti = φ(k_i)ᵀφ(q_t) / Σ_j φ(k_j)ᵀφ(q_t) (positive, rows sum to 1). An unbiased estimate of each
/// kernel value; the ratio converges to softmax attention as m grows. The features are computed in
/// log space and shifted by a per-query constant and one constant for all keys of a prompt (head):
/// both cancel in the normalisation by η. Throws icl::Error if a row's kernel sum underflows to 0 or
/// overflows (only for norms far outside the range where random features are useful).
AttentionResult referenceModelRandomFeatures(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                             const torch::Tensor& omega, const torch::Tensor& mask = {});

/// Training loss of the reference model along `steps` GD steps, for every query separately.
/// Ren & Liu's contrastive loss with an optional norm penalty (their "regularized" modification):
///     L_λ(W) = −Σ_{i∈S_t} v_iᵀ W φ(k_i) + (λ/2)·‖W‖_F²,
/// with S_t the keys query t sees, the paper's step size η_t = 1/Σ_{j∈S_t} φ(k_j)ᵀφ(q_t) held fixed, and
///     W_0 = 0,   W_{s+1} = W_s − η_t∇L_λ(W_s) = (1 − η_tλ)·W_s + η_t·G_t,   G_t = Σ_{i∈S_t} v_i φ(k_i)ᵀ.
/// Evaluated in closed form, L_λ(W_s) = ‖G_t‖²·(−c_s + λc_s²/2) with W_s = c_s·G_t (docs/science.md §3,
/// "The reference model's loss"), for the exact kernel when `omega` is undefined, else for the random
/// features of `omega` [D, m].
/// Returns [..., T, steps + 1], entry s = L_λ(W_s) (entry 0 is 0). Throws icl::Error if steps < 0 or
/// λ < 0.
torch::Tensor referenceModelLoss(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 int64_t steps, double lambda = 0.0, const torch::Tensor& omega = {},
                                 const torch::Tensor& mask = {});

/// referenceModelLoss averaged over every query (all leading dimensions and T), for plotting.
ReferenceLossCurve referenceLossCurve(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      int64_t steps, double lambda = 0.0, const torch::Tensor& omega = {},
                                      const torch::Tensor& mask = {});

/// MSE and max-abs error of `approx` against `exact` (outputs and attention matrices), per head:
/// tensors [B, H, T, ·] give H entries (pooled over B, T and the last axis); [T, ·] and [B, T, ·] give
/// one entry. Throws icl::Error if the shapes of approx and exact differ or the rank is not 2–4.
KernelErrors kernelErrors(const AttentionResult& approx, const AttentionResult& exact);

struct KernelSweepOptions {
    std::vector<int64_t> m = {16, 64, 256, 1024, 4096};  ///< numbers of random features (each ≥ 1)
    int64_t seeds = 5;                                    ///< draws of ω per m (≥ 1)
    uint64_t seed = 0;  ///< draw s (0-based) uses ω = drawOmega(D, m, mixSeed(seed, s)) for every m
};

/// Random-feature sweep (Ren & Liu §3: the dual model's approximation improves as m grows): for
/// every m and seed, the reference model with m random features against softmaxAttention (pooled over
/// all leading dimensions; slice a head out of q, k, v for a per-head sweep); each error curve gets its
/// mean and sample standard deviation over seeds and the least-squares slope of log(mean error) vs
/// log(m) (fitLogLogLine). Also records the exact-kernel reference model's max error. `progress` gets
/// (done, total) draws and returns false to cancel (icl::Error("cancelled") is thrown). Throws
/// icl::Error for an empty m list, an m < 1 or seeds < 1.
KernelSweep sweepRandomFeatures(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const KernelSweepOptions& options, const torch::Tensor& mask = {},
                                const std::function<bool(int64_t, int64_t)>& progress = {});

/// Square root and inverse square root of a symmetric positive semi-definite matrix S [D, D] (float64
/// recommended) by eigendecomposition: {S^{1/2}, S^{-1/2}}, both symmetric. Eigenvalues below 1e-12 of
/// the largest (rounding noise, possibly negative) are raised to that floor, so both are finite and
/// their product is the identity. Used by the kernel view's balanced scaling of queries and keys.
std::pair<torch::Tensor, torch::Tensor> symmetricSqrtAndInverseSqrt(const torch::Tensor& S);

/// Least-squares line through (log x_i, log y_i): returns {slope, intercept} (natural logs).
/// Both are NaN when fewer than two distinct x or any x or y is not positive and finite.
std::pair<double, double> fitLogLogLine(const std::vector<double>& x, const std::vector<double>& y);

} // namespace icl
