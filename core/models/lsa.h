#pragma once
// Linear self-attention (LSA) stack of von Oswald et al. 2022 (PAPERS.md §1). Core-internal.
//
// Each layer updates every token of the pair layout with keys and values over the N context tokens
// only:  e_j ← e_j + Σ_h P_h W_V^h Σ_{i≤N} e_i (W_K^h e_i)ᵀ (W_Q^h e_j).
// No softmax, scaling, mask, LayerNorm, bias or positions. Prediction ŷ = −(y-slot of the query).

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "core/tasks/linear_regression.h"

namespace icl {

/// The weights of one LSA layer; each is [H, D, D] with D = d + 1 (TransformerLens-like names:
/// query q = W_Q e, key k = W_K e, value v = W_V e, output projection P ≡ W_O).
struct LsaLayerWeights {
    torch::Tensor w_q, w_k, w_v, w_o;
};

class LsaImpl : public torch::nn::Module {
public:
    /// `token_dim` D = d + 1; `n_layers` K; with `tied` one shared layer is applied K times.
    LsaImpl(int64_t token_dim, int64_t n_layers, int64_t n_heads, bool tied);

    /// Runs the stack on pair-layout tokens [B, T, D] whose first `n_context` rows are the in-context
    /// examples. Returns the final residual stream [B, T, D]. If `resid_post` is given it receives the
    /// residual stream after each layer (K tensors [B, T, D]); `patterns` the attention pattern of each
    /// layer [B, H, T, N].
    torch::Tensor forward(const torch::Tensor& tokens, int64_t n_context,
                          std::vector<torch::Tensor>* resid_post = nullptr,
                          std::vector<torch::Tensor>* patterns = nullptr);

    /// ŷ_q = −(y-slot of the query token after the last layer). Returns [B].
    torch::Tensor predict(const PromptBatch& batch);

    /// Variance-scaling init (fan-in, truncated normal at ±2σ), σ² = scale / fan_in with
    /// fan_in = D, as Haiku's VarianceScaling used by von Oswald et al. (scale = init_scale / K).
    void initVarianceScaling(double scale, uint64_t seed);

    /// Weights of layer `l` (0 ≤ l < K); with tied layers every l gives the same tensors.
    LsaLayerWeights& layer(int64_t l);
    int64_t nLayers() const { return m_n_layers; }
    int64_t nHeads() const { return m_n_heads; }
    int64_t tokenDim() const { return m_token_dim; }
    bool tied() const { return m_tied; }

private:
    int64_t m_token_dim, m_n_layers, m_n_heads;
    bool m_tied;
    std::vector<LsaLayerWeights> m_blocks;  ///< 1 when tied, else K
};
TORCH_MODULE(Lsa);

} // namespace icl
