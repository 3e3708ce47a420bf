#pragma once
// GPT-2-style decoder of Garg et al. 2022 for continuous in-context learning (docs/science.md §0).
// Core-internal (LibTorch).
//
// tokens [B, T, d] → read-in linear → + learned absolute positions → L pre-LayerNorm blocks
// (causal multi-head softmax attention, then an MLP d_model → 4·d_model → d_model with GELU (tanh)),
// each added to the residual stream → final LayerNorm → read-out linear d_model → 1.
// No dropout. Parameter names follow TransformerLens: blocks.{l}.attn.W_Q [H, d_model, d_head], …

#include <cstdint>

#include <mutex>

#include <torch/torch.h>

#include "core/models/capture.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Sizes of a GPT-2 model. Garg et al.: tiny 3/2/64, small 6/4/128, standard 12/8/256.
struct Gpt2Options {
    int64_t input_dim = 20;     ///< d, width of x tokens (y tokens are [y, 0, …, 0])
    int64_t n_layers = 3;
    int64_t n_heads = 2;
    int64_t d_model = 64;       ///< must be divisible by n_heads
    int64_t n_positions = 101;  ///< longest sequence (2N + 1 tokens)
    /// false: the model has no read-in, learned positions or read-out; the caller embeds the tokens and
    /// reads the residual stream itself (forwardResidual; the classifier of Chan et al.).
    bool token_embedding = true;
};

class Gpt2Impl : public torch::nn::Module {
public:
    /// Builds the model with GPT-2 initialisation: N(0, 0.02) for linear and embedding weights, zero
    /// biases, N(0, 0.02/√(2L)) for each block's output projections (W_O and the MLP's W_out),
    /// LayerNorm gain 1, drawn from `seed`. Throws c10::Error for inconsistent sizes.
    Gpt2Impl(const Gpt2Options& options, uint64_t seed);

    /// Runs the model on tokens [B, T, d] (T ≤ n_positions). Returns predictions [B, T] (the read-out
    /// at every token). Fills `capture` with the requested activations: embed and resid_pre.{l}
    /// [B, T, d_model], attn.q/k/v.{l} [B, H, T, d_head], attn.pattern.{l} [B, H, T, T] (causal
    /// softmax, rows sum to 1), attn.out.{l} and mlp.out.{l} [B, T, d_model] (what the sub-layer adds
    /// to the residual stream), attn.result.{l} [B, H, T, d_model] (each head's part z_h W_O^h of
    /// attn.out without the bias b_O), resid_post.{l} [B, T, d_model]. Applies capture->interventions
    /// (on attn.out.{l}, one head of it, mlp.out.{l}, resid_pre.{l}, resid_post.{l}; see Intervention)
    /// and throws icl::Error for one that matches nothing (checkInterventions).
    torch::Tensor forward(const torch::Tensor& tokens, ActivationCapture* capture = nullptr);

    /// The blocks and the final LayerNorm on an embedded residual stream [B, T, d_model] (T ≤ n_positions):
    /// returns ln_final(resid_post.{L−1}) [B, T, d_model]. Captures and interventions as forward(), with
    /// `embed` = the given stream. Throws c10::Error for a wrong shape.
    torch::Tensor forwardResidual(const torch::Tensor& resid, ActivationCapture* capture = nullptr);

    /// The read-out at every token of a residual stream [B, T, d_model]: final LayerNorm then the
    /// read-out linear. Returns [B, T]; forward() returns readout(resid_post.{L−1}).
    torch::Tensor readout(const torch::Tensor& resid);

    /// Predictions for y_1, …, y_N, y_q read at the x-token positions of the interleaved layout
    /// (causal: the prediction for y_i sees the i−1 earlier pairs). Returns [B, N+1].
    torch::Tensor predictAll(const PromptBatch& batch, ActivationCapture* capture = nullptr);

    /// The query prediction ŷ_q (last column of predictAll). Returns [B].
    torch::Tensor predict(const PromptBatch& batch);

    const Gpt2Options& options() const { return m_options; }

private:
    /// The L blocks on the residual stream x [B, T, D] (offers "embed" = x); returns resid_post.{L−1}.
    torch::Tensor runBlocks(torch::Tensor x, ActivationCapture* capture);

    struct Block {
        torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
        torch::Tensor W_Q, W_K, W_V, b_Q, b_K, b_V, W_O, b_O;  ///< [H, D, dh] ×3, [H, dh] ×3, [H, dh, D], [D]
        torch::Tensor W_in, b_in, W_out, b_out;                ///< [D, 4D], [4D], [4D, D], [D]
    };
    Gpt2Options m_options;
    torch::nn::Linear m_readIn{nullptr}, m_readOut{nullptr};
    torch::Tensor m_posEmbed;  ///< [n_positions, D]
    std::vector<Block> m_blocks;
    torch::nn::LayerNorm m_lnFinal{nullptr};
    /// Positions a query may not attend to (above the diagonal), [n_positions, n_positions] bool, built once
    /// per device (under m_futureMutex: analyses may run one model from several threads); a forward over T
    /// tokens uses its top-left T × T block.
    torch::Tensor m_future;
    std::mutex m_futureMutex;
    torch::Tensor futureMask(const torch::Device& device);
};
TORCH_MODULE(Gpt2);

} // namespace icl
