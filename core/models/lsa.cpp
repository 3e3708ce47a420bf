#include "core/models/lsa.h"

#include <ATen/CPUGeneratorImpl.h>
#include <cmath>

namespace icl {

LsaImpl::LsaImpl(int64_t token_dim, int64_t n_layers, int64_t n_heads, bool tied)
    : m_token_dim(token_dim)
    , m_n_layers(n_layers)
    , m_n_heads(n_heads)
    , m_tied(tied)
{
    TORCH_CHECK(token_dim >= 2 && n_layers >= 1 && n_heads >= 1, "invalid LSA sizes");
    const int64_t blocks = tied ? 1 : n_layers;
    // Module tree so that named_parameters() gives "blocks.<b>.attn.w_q" etc.
    auto blocksModule = register_module("blocks", std::make_shared<torch::nn::Module>());
    for (int64_t b = 0; b < blocks; ++b) {
        auto block = blocksModule->register_module(std::to_string(b), std::make_shared<torch::nn::Module>());
        auto attn = block->register_module("attn", std::make_shared<torch::nn::Module>());
        LsaLayerWeights w;
        w.w_q = attn->register_parameter("w_q", torch::zeros({n_heads, token_dim, token_dim}));
        w.w_k = attn->register_parameter("w_k", torch::zeros({n_heads, token_dim, token_dim}));
        w.w_v = attn->register_parameter("w_v", torch::zeros({n_heads, token_dim, token_dim}));
        w.w_o = attn->register_parameter("w_o", torch::zeros({n_heads, token_dim, token_dim}));
        m_blocks.push_back(w);
    }
}

LsaLayerWeights& LsaImpl::layer(int64_t l)
{
    TORCH_CHECK(l >= 0 && l < m_n_layers, "LSA layer index out of range");
    return m_blocks[m_tied ? 0 : l];
}

torch::Tensor LsaImpl::forward(const torch::Tensor& tokens, int64_t n_context, std::vector<torch::Tensor>* resid_post,
                               std::vector<torch::Tensor>* patterns)
{
    TORCH_CHECK(tokens.dim() == 3 && tokens.size(2) == m_token_dim, "LSA expects tokens [B, T, ", m_token_dim,
                "], got ", tokens.sizes());
    TORCH_CHECK(n_context >= 0 && n_context <= tokens.size(1), "n_context out of range");
    torch::Tensor e = tokens;
    for (int64_t l = 0; l < m_n_layers; ++l) {
        const LsaLayerWeights& w = layer(l);
        torch::Tensor ctx = e.narrow(1, 0, n_context);                   // [B, N, D]
        torch::Tensor q = torch::einsum("btd,hed->bhte", {e, w.w_q});    // [B, H, T, D]
        torch::Tensor k = torch::einsum("bnd,hed->bhne", {ctx, w.w_k});  // [B, H, N, D]
        torch::Tensor v = torch::einsum("bnd,hed->bhne", {ctx, w.w_v});  // [B, H, N, D]
        torch::Tensor pattern = torch::matmul(q, k.transpose(-1, -2));  // [B, H, T, N], no softmax
        torch::Tensor z = torch::matmul(pattern, v);                     // [B, H, T, D]
        torch::Tensor out = torch::einsum("bhte,hfe->btf", {z, w.w_o});  // Σ_h P_h z_h
        e = e + out;
        if (resid_post)
            resid_post->push_back(e);
        if (patterns)
            patterns->push_back(pattern);
    }
    return e;
}

torch::Tensor LsaImpl::predict(const PromptBatch& batch)
{
    torch::Tensor out = forward(pairTokens(batch), batch.nContext());
    return -out.select(1, batch.nContext()).select(1, m_token_dim - 1);
}

void LsaImpl::initVarianceScaling(double scale, uint64_t seed)
{
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(seed);
    // Truncated normal on [−2, 2] by inverse CDF; 0.87962566103423978 is the std of N(0,1)
    // truncated to [−2, 2] (the correction Haiku/JAX apply so the result has the requested variance).
    const double stddev = std::sqrt(scale / static_cast<double>(m_token_dim)) / 0.87962566103423978;
    const double lo = std::erf(-2.0 / std::sqrt(2.0)), hi = std::erf(2.0 / std::sqrt(2.0));
    for (auto& p : parameters()) {
        torch::Tensor u = torch::rand(p.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat64));
        torch::Tensor z = std::sqrt(2.0) * torch::erfinv(lo + (hi - lo) * u);
        p.copy_(z * stddev);
    }
}

} // namespace icl
