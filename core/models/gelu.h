#pragma once
// GELU with the tanh approximation (GPT-2's activation; Hendrycks & Gimpel 2016, as in Garg et al. 2022's
// GPT-2 and LibTorch's gelu(x, "tanh")):
//   GELU(x) = ½ x (1 + tanh u),  u = β (x + κ x³),  β = √(2/π), κ = 0.044715,
//   GELU'(x) = ½ (1 + tanh u) + ½ x (1 − tanh² u) β (1 + 3κ x²).
// On the CPU the forward pass computes GELU'(x) beside GELU(x) from the same tanh u and keeps it for the backward
// pass, which is then one product ∂L/∂x = ∂L/∂y · GELU'(x): one tanh per element and step instead of two (LibTorch's
// backward evaluates tanh again). Both are evaluated in the order, at the vector width (AVX2 or AVX-512, whichever
// LibTorch's kernels run on in this process, core/runtime/cpu_kernels.h) and with the tanh (SLEEF's) of LibTorch's
// own CPU kernels, so the results are LibTorch's bit for bit; where that cannot be guaranteed (LibTorch's baseline
// kernels, a shape whose LibTorch kernel would take its scalar tail, float64, CUDA) it is LibTorch's gelu itself.
// Core-internal (LibTorch).

#include <torch/torch.h>

namespace icl {

/// GELU(x) with the tanh approximation, elementwise; x any shape. Differentiable once with respect to x (a
/// backward with create_graph through the fused path throws c10::Error). Same values as torch::gelu(x, "tanh")
/// and, for the gradient, as its autograd backward, bitwise. Thread affinity: any thread; it runs on LibTorch's
/// intra-op threads.
torch::Tensor geluTanh(const torch::Tensor& x);

/// True when geluTanh(x) takes the fused path on this machine and thread (float32 CPU contiguous tensor, LibTorch's
/// AVX2 or AVX-512 kernels, no element in a scalar tail of them at the current intra-op thread count). For tests.
bool geluTanhFusedApplies(const torch::Tensor& x);

} // namespace icl
