#pragma once
// Linear self-attention (LSA) stack of von Oswald et al. 2022 (docs/science.md §1). Core-internal.
//
// Each layer updates every token with keys and values over the in-context tokens only:
//   e_j ← e_j + Σ_h P_h W_V^h Σ_{i≤N} e_i (W_K^h e_i)ᵀ (W_Q^h e_j).
// The plain model has no softmax, scaling, mask, LayerNorm, bias or positions, and predicts
// ŷ = −(y-slot of the query token after the last layer). The options of the paper's further
// experiments (LsaOptions) add a softmax on the first layers, pre-LayerNorm, residual MLPs,
// sinusoidal positions, the interleaved layout and an MLP representation φ(x) of the inputs.

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/models/capture.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// The weights of one attention layer; each is [H, D, D] with D the token width (TransformerLens-like
/// names: query q = W_Q e, key k = W_K e, value v = W_V e, output projection P ≡ W_O).
struct LsaLayerWeights {
    torch::Tensor w_q, w_k, w_v, w_o;
};

/// Attention variants of the softmax layers suggested by the contrastive view of softmax attention
/// (Ren & Liu 2023, docs/science.md §3; core/analysis/kernel_attention.h). A softmax layer's output for
/// query q over in-context keys k_i and values v_i (scale 1/√D folded into the scores s_i = qᵀk_i/√D) is
/// one GD step, from W_0 = 0 with η = 1/Σ_j exp(s_j), of the reference model f(u) = W φ(u) on the
/// contrastive loss L(W) = −Σ_i v_iᵀ W φ(k_i). Each variant changes that loss or its inputs and
/// takes the resulting one-step output as the layer's output. Every variant has one strength
/// (LsaOptions::variant_strength) and is exactly plain softmax attention when the strength is 0.
enum class AttentionVariant {
    /// o(q) = Σ_i v_i exp(s_i) / Σ_j exp(s_j).
    Softmax,
    /// Norm penalty (λ/2)‖W‖_F² on the reference model, λ = strength ≥ 0, taken as a proximal
    /// (implicit) step on the penalty and an explicit step on the contrastive term:
    ///   W_1 = argmin_W ⟨∇L(0), W⟩ + (λ/2)‖W‖² + ‖W‖²/(2η)  =  η/(1 + ηλ) · Σ_i v_i φ(k_i)ᵀ,
    /// a shrunk update. With η = 1/Σ_j exp(s_j):
    ///   o(q) = Σ_i v_i exp(s_i) / (Σ_j exp(s_j) + λ)
    /// — softmax with an extra "null" pair of value 0 and kernel value λ; rows of the attention
    /// pattern sum to Z/(Z + λ) < 1 (queries with little kernel mass are shrunk towards 0).
    Regularized,
    /// Non-linear augmentations: the key and value maps, the two "views" of a token in the
    /// contrastive loss, get a residual MLP each (per head, ReLU, width LsaOptions::augment_hidden):
    ///   k_i = W_K h_i + α·g_K(h_i),   v_i = W_V h_i + α·g_V(h_i),   g(h) = W_2 relu(W_1 h + b_1) + b_2,
    /// α = strength; the one-step output is then softmax attention over these keys and values.
    Augmented,
    /// Negative pairs: each key φ(k_i) is also paired, with weight β = strength, against the mean of
    /// the other tokens' values v̄_{−i} = Σ_{j≠i} v_j / (N − 1) (0 when N = 1):
    ///   L(W) = −Σ_i (v_i − β·v̄_{−i})ᵀ W φ(k_i)   ⇒   o(q) = Σ_i (v_i − β·v̄_{−i}) exp(s_i) / Σ_j exp(s_j).
    NegativeSamples,
};

/// "softmax", "regularized", "augmented", "negative_samples" (the config names of AttentionVariant).
const char* attentionVariantName(AttentionVariant variant);
/// Inverse of attentionVariantName; throws c10::Error for an unknown name.
AttentionVariant attentionVariantFromName(const std::string& name);

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
    /// Variant of the softmax layers (ignored by linear layers); see AttentionVariant.
    AttentionVariant attention_variant = AttentionVariant::Softmax;
    double variant_strength = 0.0;  ///< λ (regularized), α (augmented) or β (negative_samples); ≥ 0
    int64_t augment_hidden = 16;    ///< hidden width of the augmented variant's key/value MLPs

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
    /// Per layer: [B, H, T, D], [B, H, N_ctx, D], [B, H, N_ctx, D]; unscaled (the softmax layers scale
    /// the scores by 1/√D); the keys and values the attention used (after a variant's augmentation or
    /// negative-pair term).
    std::vector<torch::Tensor> q, k, v;
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

    /// The same with capture by name (core/models/capture.h) and interventions: embed [B, T, D] (with
    /// positions), resid_pre.{l} and resid_post.{l} [B, T, D], attn.q.{l} [B, H, T, D], attn.k.{l} and
    /// attn.v.{l} [B, H, N_ctx, D], attn.pattern.{l} [B, H, T, N_ctx] (softmax weights on softmax
    /// layers, raw scores (W_Q e_j)ᵀ(W_K e_i) on linear layers), attn.result.{l} [B, H, T, D] (head h's
    /// part P_h z_h), attn.out.{l} [B, T, D] (their sum) and mlp.out.{l} [B, T, D] (with an MLP).
    /// Throws icl::Error for an intervention that matches nothing (checkInterventions).
    torch::Tensor forward(const torch::Tensor& tokens, int64_t n_context, ActivationCapture* capture);

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
    /// The augmented variant's residual MLP g(h) = W_2 relu(W_1 h + b_1) + b_2 of one head set:
    /// w_in [H, hidden, D], b_in [H, hidden], w_out [H, D, hidden], b_out [H, D].
    struct Augmentation {
        torch::Tensor w_in, b_in, w_out, b_out;
        bool defined() const { return w_in.defined(); }
        torch::Tensor operator()(const torch::Tensor& h) const;  ///< h [B, N, D] → [B, H, N, D]
    };
    struct Block {
        LsaLayerWeights attn;
        Augmentation aug_k, aug_v;  ///< augmented variant, softmax layers only
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
