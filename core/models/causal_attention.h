#pragma once
// Causal multi-head softmax attention of GPT-2 (Garg et al. 2022, docs/science.md §0) as one differentiable
// operation on the fused query/key/value projection, with CPU kernels and a hand-written backward.
// Core-internal (LibTorch).
//
// Per prompt and head: s_ij = q_i·k_j/√d_head for j ≤ i, P = softmax_j(s), z_i = Σ_{j≤i} P_ij v_j; the backward
// is written out in docs/science.md §0, "Causal attention and its gradient". The products run on the token rows
// of the projection where they lie (no permuted copies, no masked entries, no [B, H, T, T] tensors); for float32
// the softmax and its backward repeat LibTorch's AVX2 / AVX-512 kernels bit for bit (softmaxLastDimLikeAten),
// otherwise they are LibTorch's own. Sums run in a fixed order, so the thread count changes no bit.

#include <cstdint>
#include <utility>

#include <torch/torch.h>

namespace icl {

/// True when causalAttention's CPU kernels take `qkv`: a float32 or float64 CPU tensor [B, T, 3·D]
/// (T ≥ 1). Otherwise the caller uses the composite path (matmul, masked softmax, matmul), e.g. on CUDA.
bool causalAttentionKernelApplies(const torch::Tensor& qkv);

/// Causal softmax attention of `heads` heads from the fused projection qkv [B, T, 3·D] whose last axis holds,
/// per token, the queries of heads 0 … H−1, then their keys, then their values (each d_head = D / H wide): the
/// layout of x·[W_Q | W_K | W_V] with per-head blocks. Returns {z [B, T, D] (head h in columns h·d_head …),
/// pattern [B, H, T, T] (rows sum to 1, zero above the diagonal)}. Differentiable with respect to qkv, through z
/// and through the pattern, by the backward in the file comment. Throws c10::Error when
/// causalAttentionKernelApplies(qkv) is false or D is not divisible by `heads`. Thread affinity: any thread; it
/// runs on LibTorch's intra-op threads.
std::pair<torch::Tensor, torch::Tensor> causalAttention(const torch::Tensor& qkv, int64_t heads);

/// True when causalAttention computes the float32 softmax and its backward itself, bit for bit as LibTorch's
/// kernels in this process (AVX2 or AVX-512 kernels, built with SLEEF); false where it calls LibTorch's.
bool softmaxLikeAtenApplies();

/// The kernels behind that, exposed for tests: at::_softmax(x, -1, false) of a contiguous float32 CPU tensor x
/// [..., n], and at::_softmax_backward_data(grad, output, -1, float32) of contiguous float32 CPU grad and output of
/// the same shape; bitwise LibTorch's (rows summed in LibTorch's order, SLEEF's exp of LibTorch's width). Throw
/// c10::Error when softmaxLikeAtenApplies() is false or the tensors are not as described.
torch::Tensor softmaxLastDimLikeAten(const torch::Tensor& x);
torch::Tensor softmaxBackwardLastDimLikeAten(const torch::Tensor& grad, const torch::Tensor& output);

} // namespace icl
