#include "core/models/gpt2.h"

#include <ATen/CPUGeneratorImpl.h>
#include <cmath>

#include "core/models/causal_attention.h"
#include "core/models/gelu.h"
#include "core/models/names.h"

namespace icl {

Gpt2Impl::Gpt2Impl(const Gpt2Options& options, uint64_t seed)
    : m_options(options)
{
    const Gpt2Options& o = m_options;
    TORCH_CHECK(o.input_dim >= 1 && o.n_layers >= 1 && o.n_heads >= 1 && o.d_model >= 1 && o.n_positions >= 1,
                "invalid GPT-2 sizes");
    TORCH_CHECK(o.d_model % o.n_heads == 0, "d_model (", o.d_model, ") must be divisible by n_heads (", o.n_heads, ")");
    const int64_t D = o.d_model, H = o.n_heads, dh = D / H, M = 4 * D;
    m_readIn = register_module("read_in", torch::nn::Linear(o.input_dim, D));
    m_posEmbed = register_parameter("pos_embed", torch::zeros({o.n_positions, D}));
    auto blocks = register_module("blocks", std::make_shared<torch::nn::Module>());
    for (int64_t l = 0; l < o.n_layers; ++l) {
        auto bm = blocks->register_module(std::to_string(l), std::make_shared<torch::nn::Module>());
        Block b;
        b.ln1 = bm->register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
        b.ln2 = bm->register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
        auto attn = bm->register_module("attn", std::make_shared<torch::nn::Module>());
        b.W_Q = attn->register_parameter(attnWeightName(ModelKind::Gpt2, AttnWeight::Q), torch::zeros({H, D, dh}));
        b.W_K = attn->register_parameter(attnWeightName(ModelKind::Gpt2, AttnWeight::K), torch::zeros({H, D, dh}));
        b.W_V = attn->register_parameter(attnWeightName(ModelKind::Gpt2, AttnWeight::V), torch::zeros({H, D, dh}));
        b.b_Q = attn->register_parameter("b_Q", torch::zeros({H, dh}));
        b.b_K = attn->register_parameter("b_K", torch::zeros({H, dh}));
        b.b_V = attn->register_parameter("b_V", torch::zeros({H, dh}));
        b.W_O = attn->register_parameter(attnWeightName(ModelKind::Gpt2, AttnWeight::O), torch::zeros({H, dh, D}));
        b.b_O = attn->register_parameter("b_O", torch::zeros({D}));
        auto mlp = bm->register_module("mlp", std::make_shared<torch::nn::Module>());
        b.W_in = mlp->register_parameter("W_in", torch::zeros({D, M}));
        b.b_in = mlp->register_parameter("b_in", torch::zeros({M}));
        b.W_out = mlp->register_parameter("W_out", torch::zeros({M, D}));
        b.b_out = mlp->register_parameter("b_out", torch::zeros({D}));
        m_blocks.push_back(b);
    }
    m_lnFinal = register_module("ln_final", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
    m_readOut = register_module("read_out", torch::nn::Linear(D, 1));

    // GPT-2 initialisation (Garg et al. code): N(0, 0.02) weights, zero biases, output projections
    // N(0, 0.02/√(2L)).
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(seed);
    auto normal = [&](torch::Tensor& t, double std) { t.copy_(torch::randn(t.sizes(), gen, torch::kFloat32) * std); };
    const double outStd = 0.02 / std::sqrt(2.0 * double(o.n_layers));
    normal(m_readIn->weight, 0.02);
    m_readIn->bias.zero_();
    normal(m_posEmbed, 0.02);
    for (Block& b : m_blocks) {
        normal(b.W_Q, 0.02);
        normal(b.W_K, 0.02);
        normal(b.W_V, 0.02);
        normal(b.W_O, outStd);
        normal(b.W_in, 0.02);
        normal(b.W_out, outStd);
    }
    normal(m_readOut->weight, 0.02);
    m_readOut->bias.zero_();
}

torch::Tensor Gpt2Impl::forward(const torch::Tensor& tokens, ActivationCapture* capture)
{
    const Gpt2Options& o = m_options;
    TORCH_CHECK(o.token_embedding, "this GPT-2 has no token embedding: call forwardResidual");
    TORCH_CHECK(tokens.dim() == 3 && tokens.size(2) == o.input_dim, "GPT-2 expects tokens [B, T, ", o.input_dim,
                "], got ", tokens.sizes());
    const int64_t T = tokens.size(1);
    TORCH_CHECK(T >= 1 && T <= o.n_positions, "sequence of ", T, " tokens exceeds n_positions = ", o.n_positions);
    return readout(runBlocks(m_readIn->forward(tokens) + m_posEmbed.narrow(0, 0, T).unsqueeze(0), capture));
}

torch::Tensor Gpt2Impl::forwardResidual(const torch::Tensor& resid, ActivationCapture* capture)
{
    const Gpt2Options& o = m_options;
    TORCH_CHECK(resid.dim() == 3 && resid.size(2) == o.d_model, "GPT-2 expects a residual stream [B, T, ", o.d_model,
                "], got ", resid.sizes());
    TORCH_CHECK(resid.size(1) >= 1 && resid.size(1) <= o.n_positions, "sequence of ", resid.size(1),
                " tokens exceeds n_positions = ", o.n_positions);
    return m_lnFinal->forward(runBlocks(resid, capture));
}

torch::Tensor Gpt2Impl::runBlocks(torch::Tensor x, ActivationCapture* capture)
{
    const Gpt2Options& o = m_options;
    const int64_t T = x.size(1);
    const int64_t H = o.n_heads, dh = o.d_model / H;
    if (capture && !capture->interventions.empty())
        checkInterventions(capture->interventions, {"gpt2", o.n_layers, H, true, T});
    const bool intervene = capture && !capture->interventions.empty();
    auto offer = [&](const std::string& name, const torch::Tensor& t) {
        if (capture)
            capture->offer(name, t);
    };
    // Applies the interventions on `name` (if any) and offers the result to the capture.
    auto hook = [&](const std::string& name, const torch::Tensor& t) {
        const torch::Tensor r = intervene ? capture->apply(name, t) : t;
        offer(name, r);
        return r;
    };
    offer(actName(Act::Embed), x);
    const torch::Tensor future = futureMask(x.device()).narrow(0, 0, T).narrow(1, 0, T);
    const double scale = 1.0 / std::sqrt(double(dh));
    // A whole-stream replacement of resid_pre.{l} makes the blocks before l irrelevant to the output,
    // one of resid_post.{l} the blocks up to l (resid_post.{L−1}: every block); when nothing is captured
    // they are skipped (activation patching runs one such pass per layer).
    size_t first = 0;
    if (intervene && capture->names.empty() && !capture->all) {
        for (const Intervention& iv : capture->interventions) {
            const auto [base, layer] = splitActivationName(iv.name);
            const bool post = base == actBase(Act::ResidPost);
            const size_t start = post ? size_t(layer) + 1 : size_t(layer);
            if (iv.kind == Intervention::Kind::Replace && (base == actBase(Act::ResidPre) || post) && iv.head < 0
                && iv.position < 0 && iv.value.sizes() == x.sizes() && start > first) {
                first = start;
                x = iv.value.to(x.options());
            }
        }
    }
    for (size_t l = first; l < m_blocks.size(); ++l) {
        Block& b = m_blocks[l];
        x = hook(actName(Act::ResidPre, l), x);
        const torch::Tensor h = b.ln1->forward(x);
        // One GEMM for queries, keys and values of every head: [D, 3·H·dh] from the [H, D, dh] weights.
        const int64_t B = h.size(0), D = o.d_model;
        const torch::Tensor wQkv = torch::cat({b.W_Q.permute({1, 0, 2}).reshape({D, H * dh}),
                                               b.W_K.permute({1, 0, 2}).reshape({D, H * dh}),
                                               b.W_V.permute({1, 0, 2}).reshape({D, H * dh})},
                                              1);
        const torch::Tensor bQkv = torch::cat({b.b_Q.reshape({H * dh}), b.b_K.reshape({H * dh}), b.b_V.reshape({H * dh})});
        const torch::Tensor qkv = torch::addmm(bQkv, h.reshape({B * T, D}), wQkv);  // [B·T, 3·H·dh]
        const auto perHead = qkv.view({B, T, 3, H, dh}).permute({2, 0, 3, 1, 4});
        const torch::Tensor q = perHead[0], k = perHead[1], v = perHead[2];  // [B, H, T, dh]
        torch::Tensor pattern, z, zRows;  // [B, H, T, T], [B, H, T, dh], the same z as [B·T, H·dh]
        if (causalAttentionKernelApplies(qkv.view({B, T, 3 * D}))) {
            // CPU: the attention kernels on the projection's rows (core/models/causal_attention.h).
            auto [zTokens, p] = causalAttention(qkv.view({B, T, 3 * D}), H);
            pattern = p;
            zRows = zTokens.view({B * T, D});
            z = zTokens.view({B, T, H, dh}).transpose(1, 2);
        } else {
            torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) * scale;  // [B, H, T, T]
            scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
            pattern = torch::softmax(scores, -1);
            z = torch::matmul(pattern, v);
            zRows = z.transpose(1, 2).reshape({B * T, H * dh});
        }
        torch::Tensor attnOut, attnRows;  // [B, T, D]; without a head intervention the same as [B·T, D]
        const std::string outName = actName(Act::AttnOut, l);
        // Each head's part of the output, z_h W_O^h: [B, H, T, D] (the bias b_O is added once). Only a
        // head intervention sums these parts; otherwise the output is one GEMM, so that what is
        // captured never changes the numbers.
        const bool headIntervention = intervene && capture->hasHeadIntervention(outName);
        if (headIntervention || (capture && capture->wants(actName(Act::AttnResult, l)))) {
            torch::Tensor result = torch::matmul(z, b.W_O.unsqueeze(0));
            if (headIntervention) {
                result = capture->applyHeads(outName, result);
                attnOut = result.sum(1) + b.b_O;
            }
            offer(actName(Act::AttnResult, l), result);
        }
        if (!headIntervention) {
            attnRows = torch::addmm(b.b_O, zRows, b.W_O.reshape({H * dh, D}));
            attnOut = attnRows.view({B, T, D});
        }
        offer(actName(Act::AttnQ, l), q);
        offer(actName(Act::AttnK, l), k);
        offer(actName(Act::AttnV, l), v);
        offer(actName(Act::AttnPattern, l), pattern);
        // The residual adds: without a capture, into the block output's own rows (out + x is x + out, bitwise,
        // and nothing else holds that output: addmm's backward keeps its inputs, not its result), which saves
        // a [B, T, D] allocation and a pass over memory; with one, a new tensor, as what is captured must stay.
        auto addResidual = [&](const torch::Tensor& outRows, const torch::Tensor& out) {
            return capture ? x + out : outRows.add_(x.reshape({B * T, D})).view({B, T, D});
        };
        attnOut = hook(outName, attnOut);
        x = addResidual(attnRows, attnOut);
        const torch::Tensor m
            = geluTanh(torch::addmm(b.b_in, b.ln2->forward(x).reshape({B * T, D}), b.W_in));
        const torch::Tensor mlpRows = torch::addmm(b.b_out, m, b.W_out);
        const torch::Tensor mlpOut = hook(actName(Act::MlpOut, l), mlpRows.view({B, T, D}));
        x = addResidual(mlpRows, mlpOut);
        x = hook(actName(Act::ResidPost, l), x);
    }
    return x;
}

torch::Tensor Gpt2Impl::futureMask(const torch::Device& device)
{
    const std::lock_guard<std::mutex> lock(m_futureMutex);
    if (!m_future.defined() || m_future.device() != device) {
        // A normal tensor even when the first forward runs under InferenceMode (evaluation): training
        // saves the mask for backward, which an inference tensor may not be.
        c10::InferenceMode normal(false);
        const int64_t P = m_options.n_positions;
        m_future = torch::ones({P, P}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
    }
    return m_future;
}

torch::Tensor Gpt2Impl::readout(const torch::Tensor& resid)
{
    TORCH_CHECK(m_options.token_embedding, "this GPT-2 has no read-out: the caller reads forwardResidual");
    return m_readOut->forward(m_lnFinal->forward(resid)).squeeze(-1);
}

torch::Tensor Gpt2Impl::predictAll(const PromptBatch& batch, ActivationCapture* capture)
{
    const torch::Tensor out = forward(interleavedTokens(batch), capture);  // [B, 2N+1]
    // x-tokens sit at even positions 0, 2, …, 2N.
    return out.slice(1, 0, out.size(1), 2);
}

torch::Tensor Gpt2Impl::predict(const PromptBatch& batch)
{
    const torch::Tensor out = forward(interleavedTokens(batch));
    return out.select(1, out.size(1) - 1);
}

} // namespace icl
