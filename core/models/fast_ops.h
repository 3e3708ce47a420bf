#pragma once
// Differentiable building blocks of the GPT-2 step that LibTorch 1.13 runs slowly on the CPU.
// Core-internal (LibTorch).
//
// - batchedMatmul: LibTorch's CPU bmm loops over the batch with one dispatched mm per matrix; for the
//   attention's many small products ([B·H, T, d_head], e.g. 512 × 81 × 32) that overhead dominates.
//   Here each product is one CBLAS sgemm call on the raw buffers (same BLAS library LibTorch uses).
// - geluTanh: GELU with the tanh approximation (GPT-2's "gelu_new"), written as x·σ(2u), which is the
//   same function (0.5·(1 + tanh(u)) = σ(2u)); LibTorch's CPU kernel evaluates tanh in a slow path.
//
// Both fall back to the plain LibTorch ops for other devices or dtypes, and both stay differentiable
// twice (a backward pass run with create_graph uses differentiable LibTorch ops).
// The speed-up is measured in tests/benchmarks (BM_Gpt2TrainStep against BM_Gpt2TrainStepLibTorchOps).

#include <torch/torch.h>

namespace icl {

/// Batched matrix product: a [n, m, k] · b [n, k, p] → [n, m, p], or with `transposeB`
/// a [n, m, k] · b[n, p, k]ᵀ → [n, m, p]. Equal to torch::matmul(a, transposeB ? b.transpose(1, 2) : b)
/// up to float rounding of the BLAS kernel. Throws c10::Error on mismatched shapes.
/// Thread affinity: any thread.
torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b, bool transposeB);

/// GELU with the tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) = x·σ(2u) elementwise
/// (Hendrycks & Gimpel 2016; GPT-2). Same values as torch::gelu(x, "tanh") up to float rounding.
torch::Tensor geluTanh(const torch::Tensor& x);

/// Whether the CBLAS path of batchedMatmul and the sigmoid form of geluTanh are used (default true).
/// Switching off gives the plain LibTorch ops; the benchmark uses it as its same-run baseline.
void setFastOps(bool enabled);
bool fastOps();

} // namespace icl
