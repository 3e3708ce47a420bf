#pragma once
// Adam and AdamW whose step updates each parameter in one pass over its memory, giving LibTorch's numbers bit
// for bit (docs/performance.md, "One-pass Adam"). Core-internal (LibTorch).
//
// torch::optim::Adam (LibTorch 1.13) steps a parameter with eight element-wise passes; FusedAdam computes the
// same expressions per element in one pass, with the roundings of LibTorch's kernels (fused_adam_test.cpp
// compares them bit for bit over many steps). State, options, checkpoints and serialisation are
// torch::optim::Adam's (these classes derive from it), so a run can be resumed with either.

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace icl {

/// The per-step constants of one parameter's Adam update, as LibTorch's kernels see them (float32): see
/// adamUpdateLikeAten.
struct AdamScalars {
    float beta1 = 0.9f, one_minus_beta1 = 0.1f;      // (float)β₁, (float)(1 − β₁)
    float beta2 = 0.999f, one_minus_beta2 = 0.001f;  // (float)β₂, (float)(1 − β₂)
    float sqrt_bias_correction2 = 1.0f;              // (float)√(1 − β₂ᵗ)
    float eps = 1e-8f;
    float neg_step_size = -1e-3f;                    // (float)(−lr / (1 − β₁ᵗ))
    float weight_decay = 0.0f;                       // Adam's L2 term added to the gradient (0: none)
    float decay_factor = 1.0f;                       // AdamW's (float)(1 − lr·λ) applied to p first (1: none)
};

/// One Adam step of n float32 elements in place, per element (Kingma & Ba 2015, Alg. 1, as torch::optim::Adam
/// and AdamW compute it):
///   p ← p · decay_factor                          (AdamW only; skipped when decay_factor == 1)
///   g ← fma(p, weight_decay, g)                   (Adam's weight decay only; g itself is not written)
///   m ← fma(g, 1 − β₁, m · β₁)
///   v ← fma((1 − β₂) · g, g, v · β₂)
///   p ← p + (−step_size · m) / (√v / √(1 − β₂ᵗ) + ε)
/// with every other operation rounded separately, which is LibTorch 1.13's arithmetic with its AVX2 or AVX-512
/// kernels. Pointers must not overlap. Runs on the calling thread's intra-op threads (at::parallel_for); the
/// result does not depend on their number.
void adamUpdateLikeAten(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s);

/// Whether FusedAdam updates `p` in one pass: float32 CPU, contiguous, with a contiguous gradient of its shape,
/// and ATen's float kernels vectorised with FMA in this process (AVX2 or AVX-512: their roundings are the ones
/// adamUpdateLikeAten repeats). Otherwise the step runs LibTorch's operations for that parameter.
bool fusedAdamApplies(const torch::Tensor& p);

/// torch::optim::Adam with the one-pass update (adamUpdateLikeAten) for every parameter fusedAdamApplies to
/// and LibTorch's operations for the rest (AMSGrad always). Same state, options and numbers as
/// torch::optim::Adam. Throws c10::Error on a sparse gradient, as Adam does. Thread affinity: one caller.
class FusedAdam : public torch::optim::Adam {
public:
    using torch::optim::Adam::Adam;
    torch::Tensor step(LossClosure closure = nullptr) override;
};

/// torch::optim::AdamW (decoupled weight decay) with the one-pass update; as FusedAdam.
class FusedAdamW : public torch::optim::AdamW {
public:
    using torch::optim::AdamW::AdamW;
    torch::Tensor step(LossClosure closure = nullptr) override;
};

} // namespace icl
