#pragma once
// Linear self-attention (LSA) stack of von Oswald et al. 2022 (PAPERS.md §1). Core-internal.
//
// Each layer updates every token with keys and values over the in-context tokens only:
//   e_j ← e_j + Σ_h P_h W_V^h Σ_{i≤N} e_i (W_K^h e_i)ᵀ (W_Q^h e_j).
// The plain model has no softmax, scaling, mask, LayerNorm, bias or positions, and predicts
// ŷ = −(y-slot of the query token after the last layer). The options of the paper's further
// experiments (LsaOptions) add a softmax on the first layers, pre-LayerNorm, residual MLPs,
// sinusoidal positions, the interleaved layout and an MLP representation φ(x) of the inputs.

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "core/tasks/linear_regression.h"

namespace icl {

/// The weights of one attention layer; each is [H, D, D] with D the token width (TransformerLens-like
/// names: query q = W_Q e, key k = W_K e, value v = W_V e, output projection P ≡ W_O).
struct LsaLayerWeights {
    torch::Tensor w_q, w_k, w_v, w_o;
};

/// Architecture of an LSA stack.
struct LsaOptions {
    int64_t input_dim = 10;        ///< d, width of the inputs x
    int64_t n_layers = 1;          ///< K
    int64_t n_heads = 1;
    bool tied = false;             ///< one shared layer applied K times
    int64_t softmax_layers = 0;    ///< the first this-many layers use softmax(q·k/√D) over the in-context tokens
    bool layer_norm = false;       ///< LayerNorm (affine) on the input of each attention layer and MLP
    bool mlp = false;              ///< residual MLP D → 4D → D (GELU) after each attention layer
    bool interleaved = false;      ///< tokens x_1, y_1, …, x_N, y_N, x_q (x-token (x_i, 0), y-token (0, y_i))
    int64_t pos_dim = 0;           ///< width of a sinusoidal position code concatenated to each token (0 = none)
    std::vector<int64_t> feature_mlp; ///< hidden widths of φ (ReLU); used when feature_dim > 0
    int64_t feature_dim = 0;       ///< φ: R^d → R^feature_dim applied to every x before the pair layout

    /// Width of the data part of a token: (x or φ(x)) plus the y-slot.
    int64_t dataDim() const { return (feature_dim > 0 ? feature_dim : input_dim) + 1; }
    /// Token width D = dataDim() + pos_dim.
    int64_t tokenDim() const { return dataDim() + pos_dim; }
    /// True for the model of Proposition 1: no softmax, LayerNorm, MLP, positions or representation.
    bool plain() const
    {
        return softmax_layers == 0 && !layer_norm && !mlp && !interleaved && pos_dim == 0 && feature_dim == 0;
    }
};

/// Activations of one forward pass, captured on request.
struct LsaCapture {
    std::vector<torch::Tensor> resid_post;  ///< after each layer: K × [B, T, D]
    std::vector<torch::Tensor> patterns;    ///< attention pattern of each layer: K × [B, H, T, N_ctx]
    std::vector<torch::Tensor> q, k, v;     ///< per layer: [B, H, T, D], [B, H, N_ctx, D], [B, H, N_ctx, D]
    bool want_qkv = false;
};

class LsaImpl : public torch::nn::Module {
public:
    /// Plain LSA on pair tokens of width `token_dim` D = d + 1; `n_layers` K; with `tied` one shared
    /// layer is applied K times.
    LsaImpl(int64_t token_dim, int64_t n_layers, int64_t n_heads, bool tied);
    /// Any architecture of LsaOptions. Throws c10::Error for inconsistent sizes.
    explicit LsaImpl(const LsaOptions& options);

    /// Data tokens of a batch before positions: pair layout [B, N+1, dataDim()] (with φ(x) when the
    /// model has a representation), or interleaved [B, 2N+1, d+1]. The query token is last; its y-slot is 0.
    torch::Tensor embed(const PromptBatch& batch);

    /// Number of in-context tokens (keys and values) for N examples: N, or 2N interleaved.
    int64_t contextTokens(int64_t n_examples) const { return m_options.interleaved ? 2 * n_examples : n_examples; }

    /// Runs the stack on data tokens [B, T, dataDim()] whose first `n_context` rows are the in-context
    /// tokens (positions are appended here). Returns the final residual stream [B, T, D]; fills
    /// `capture` when given.
    torch::Tensor forward(const torch::Tensor& tokens, int64_t n_context, LsaCapture* capture);

    /// Older form: `resid_post` receives K tensors [B, T, D], `patterns` K tensors [B, H, T, N].
    torch::Tensor forward(const torch::Tensor& tokens, int64_t n_context,
                          std::vector<torch::Tensor>* resid_post = nullptr,
                          std::vector<torch::Tensor>* patterns = nullptr);

    /// ŷ_q = −(y-slot of the query token after the last layer). Returns [B].
    torch::Tensor predict(const PromptBatch& batch);

    /// −(y-slot of the query) of a residual stream [B, T, D]. Returns [B].
    torch::Tensor readout(const torch::Tensor& resid) const;

    /// The representation φ(x) [..., feature_dim] of inputs [..., d]. Throws when the model has none.
    torch::Tensor features(const torch::Tensor& x);

    /// Variance-scaling init (fan-in, truncated normal at ±2σ), σ² = scale / fan_in with
    /// fan_in = D, as Haiku's VarianceScaling used by von Oswald et al. (scale = init_scale / K), for
    /// the attention weights; LayerNorm gains 1 and biases 0; MLP input weights and φ with scale 2
    /// (He init, for GELU/ReLU), MLP output weights with `scale`.
    void initVarianceScaling(double scale, uint64_t seed);

    /// Weights of layer `l` (0 ≤ l < K); with tied layers every l gives the same tensors.
    LsaLayerWeights& layer(int64_t l);
    int64_t nLayers() const { return m_options.n_layers; }
    int64_t nHeads() const { return m_options.n_heads; }
    int64_t tokenDim() const { return m_options.tokenDim(); }
    int64_t ySlot() const { return m_options.dataDim() - 1; }  ///< index of the y-slot in a token
    bool tied() const { return m_options.tied; }
    const LsaOptions& options() const { return m_options; }

private:
    struct Block {
        LsaLayerWeights attn;
        torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
        torch::Tensor mlp_w_in, mlp_b_in, mlp_w_out, mlp_b_out;  ///< [4D, D], [4D], [D, 4D], [D]
    };
    LsaOptions m_options;
    std::vector<Block> m_blocks;              ///< 1 when tied, else K
    std::vector<torch::nn::Linear> m_feature; ///< φ: hidden layers then the output layer
    Block& block(int64_t l) { return m_blocks[m_options.tied ? 0 : size_t(l)]; }
};
TORCH_MODULE(Lsa);

/// Sinusoidal position code (Vaswani et al. 2017) [T, pos_dim]: entries 2m and 2m+1 of position p are
/// sin(p·ω_m) and cos(p·ω_m) with ω_m = 10000^(−2m/pos_dim). Code(p+1) is code(p) rotated by ω_m in
/// each pair.
torch::Tensor sinusoidalPositions(int64_t T, int64_t pos_dim, const torch::TensorOptions& options = {});

} // namespace icl
