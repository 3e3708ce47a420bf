#include "core/models/lsa.h"

#include <ATen/CPUGeneratorImpl.h>
#include <cmath>

#include "core/models/gelu.h"
#include "core/models/names.h"

namespace icl {

namespace {

LsaOptions plainOptions(int64_t token_dim, int64_t n_layers, int64_t n_heads, bool tied)
{
    LsaOptions o;
    o.input_dim = token_dim - 1;
    o.n_layers = n_layers;
    o.n_heads = n_heads;
    o.tied = tied;
    return o;
}

} // namespace

const char* attentionVariantName(AttentionVariant variant)
{
    switch (variant) {
    case AttentionVariant::Softmax: return "softmax";
    case AttentionVariant::Regularized: return "regularized";
    case AttentionVariant::Augmented: return "augmented";
    case AttentionVariant::NegativeSamples: return "negative_samples";
    }
    return "softmax";
}

AttentionVariant attentionVariantFromName(const std::string& name)
{
    for (AttentionVariant v : {AttentionVariant::Softmax, AttentionVariant::Regularized, AttentionVariant::Augmented,
                               AttentionVariant::NegativeSamples})
        if (name == attentionVariantName(v))
            return v;
    TORCH_CHECK(false, "unknown attention variant \"", name, "\"");
}

torch::Tensor LsaImpl::Augmentation::operator()(const torch::Tensor& h) const
{
    torch::Tensor a = torch::einsum("bnd,hjd->bhnj", {h, w_in}) + b_in.unsqueeze(1);  // [B, H, N, hidden]
    return torch::einsum("bhnj,hej->bhne", {torch::relu(a), w_out}) + b_out.unsqueeze(1);  // [B, H, N, D]
}

LsaImpl::LsaImpl(int64_t token_dim, int64_t n_layers, int64_t n_heads, bool tied)
    : LsaImpl(plainOptions(token_dim, n_layers, n_heads, tied))
{
}

LsaImpl::LsaImpl(const LsaOptions& options)
    : m_options(options)
{
    const LsaOptions& o = m_options;
    TORCH_CHECK(o.input_dim >= 1 && o.n_layers >= 1 && o.n_heads >= 1, "invalid LSA sizes");
    TORCH_CHECK(o.softmax_layers >= 0 && o.softmax_layers <= o.n_layers, "softmax_layers must be in [0, K]");
    TORCH_CHECK(o.pos_dim >= 0 && o.pos_dim % 2 == 0, "pos_dim must be even");
    TORCH_CHECK(!(o.tied && o.softmax_layers > 0 && o.softmax_layers < o.n_layers),
                "a tied stack cannot mix softmax and linear layers");
    TORCH_CHECK(!(o.interleaved && o.feature_dim > 0), "the representation φ is for the pair layout");
    TORCH_CHECK(o.variant_strength >= 0.0 && std::isfinite(o.variant_strength), "variant_strength must be >= 0");
    TORCH_CHECK(o.augment_hidden >= 1, "augment_hidden must be >= 1");
    const int64_t D = o.tokenDim();
    const int64_t blocks = o.tied ? 1 : o.n_layers;
    if (o.feature_dim > 0) {
        auto phi = register_module("feature_mlp", std::make_shared<torch::nn::Module>());
        int64_t in = o.input_dim;
        std::vector<int64_t> widths = o.feature_mlp;
        widths.push_back(o.feature_dim);
        for (size_t i = 0; i < widths.size(); ++i) {
            m_feature.push_back(phi->register_module(std::to_string(i), torch::nn::Linear(in, widths[i])));
            in = widths[i];
        }
    }
    // Module tree so that named_parameters() gives "blocks.<b>.attn.w_q" etc.
    auto blocksModule = register_module("blocks", std::make_shared<torch::nn::Module>());
    for (int64_t b = 0; b < blocks; ++b) {
        auto blockModule = blocksModule->register_module(std::to_string(b), std::make_shared<torch::nn::Module>());
        auto attn = blockModule->register_module("attn", std::make_shared<torch::nn::Module>());
        Block blk;
        const int64_t H = o.n_heads;
        blk.attn.w_q = attn->register_parameter(attnWeightName(ModelKind::Lsa, AttnWeight::Q), torch::zeros({H, D, D}));
        blk.attn.w_k = attn->register_parameter(attnWeightName(ModelKind::Lsa, AttnWeight::K), torch::zeros({H, D, D}));
        blk.attn.w_v = attn->register_parameter(attnWeightName(ModelKind::Lsa, AttnWeight::V), torch::zeros({H, D, D}));
        blk.attn.w_o = attn->register_parameter(attnWeightName(ModelKind::Lsa, AttnWeight::O), torch::zeros({H, D, D}));
        // Only the softmax layers of an augmented model get the extra parameters (a tied stack's one
        // block is a softmax layer when every layer is).
        const bool softmaxBlock = o.tied ? o.softmax_layers == o.n_layers : b < o.softmax_layers;
        if (o.attention_variant == AttentionVariant::Augmented && softmaxBlock) {
            const int64_t J = o.augment_hidden;
            for (auto [name, aug] : {std::pair<const char*, Augmentation*>{"aug_k", &blk.aug_k}, {"aug_v", &blk.aug_v}}) {
                auto m = attn->register_module(name, std::make_shared<torch::nn::Module>());
                aug->w_in = m->register_parameter("w_in", torch::zeros({H, J, D}));
                aug->b_in = m->register_parameter("b_in", torch::zeros({H, J}));
                aug->w_out = m->register_parameter("w_out", torch::zeros({H, D, J}));
                aug->b_out = m->register_parameter("b_out", torch::zeros({H, D}));
            }
        }
        if (o.layer_norm) {
            blk.ln1 = blockModule->register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
            if (o.mlp)
                blk.ln2 = blockModule->register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D})));
        }
        if (o.mlp) {
            auto mlp = blockModule->register_module("mlp", std::make_shared<torch::nn::Module>());
            blk.mlp_w_in = mlp->register_parameter("w_in", torch::zeros({4 * D, D}));
            blk.mlp_b_in = mlp->register_parameter("b_in", torch::zeros({4 * D}));
            blk.mlp_w_out = mlp->register_parameter("w_out", torch::zeros({D, 4 * D}));
            blk.mlp_b_out = mlp->register_parameter("b_out", torch::zeros({D}));
        }
        m_blocks.push_back(blk);
    }
}

LsaLayerWeights& LsaImpl::layer(int64_t l)
{
    TORCH_CHECK(l >= 0 && l < m_options.n_layers, "LSA layer index out of range");
    return block(l).attn;
}

torch::Tensor LsaImpl::features(const torch::Tensor& x)
{
    TORCH_CHECK(!m_feature.empty(), "this LSA model has no input representation φ");
    torch::Tensor h = x;
    for (size_t i = 0; i < m_feature.size(); ++i) {
        h = m_feature[i]->forward(h);
        if (i + 1 < m_feature.size())
            h = torch::relu(h);
    }
    return h;
}

torch::Tensor LsaImpl::embed(const PromptBatch& batch)
{
    if (m_options.interleaved) {
        const int64_t B = batch.batchSize(), N = batch.nContext(), d = batch.dim();
        const auto opts = batch.x.options();
        torch::Tensor xTok = torch::cat({batch.contextX(), torch::zeros({B, N, 1}, opts)}, -1);        // (x_i, 0)
        torch::Tensor yTok = torch::cat({torch::zeros({B, N, d}, opts), batch.contextY().unsqueeze(-1)}, -1);  // (0, y_i)
        torch::Tensor pairs = torch::stack({xTok, yTok}, 2).reshape({B, 2 * N, d + 1});
        torch::Tensor query = torch::cat({batch.queryX(), torch::zeros({B, 1}, opts)}, -1).unsqueeze(1);
        return torch::cat({pairs, query}, 1);
    }
    if (m_options.feature_dim > 0) {
        torch::Tensor y = batch.y.clone();
        y.select(1, batch.nContext()).zero_();
        return torch::cat({features(batch.x), y.unsqueeze(-1)}, -1);
    }
    return pairTokens(batch);
}

torch::Tensor LsaImpl::forward(const torch::Tensor& tokens, int64_t n_context, LsaCapture* capture)
{
    if (!capture)
        return forward(tokens, n_context, static_cast<ActivationCapture*>(nullptr));
    ActivationCapture named;
    for (int64_t l = 0; l < m_options.n_layers; ++l) {
        named.names.insert({actName(Act::ResidPost, l), actName(Act::AttnPattern, l)});
        if (capture->want_qkv)
            named.names.insert({actName(Act::AttnQ, l), actName(Act::AttnK, l), actName(Act::AttnV, l)});
    }
    torch::Tensor out = forward(tokens, n_context, &named);
    for (int64_t l = 0; l < m_options.n_layers; ++l) {
        capture->resid_post.push_back(named.values.at(actName(Act::ResidPost, l)));
        capture->patterns.push_back(named.values.at(actName(Act::AttnPattern, l)));
        if (capture->want_qkv) {
            capture->q.push_back(named.values.at(actName(Act::AttnQ, l)));
            capture->k.push_back(named.values.at(actName(Act::AttnK, l)));
            capture->v.push_back(named.values.at(actName(Act::AttnV, l)));
        }
    }
    return out;
}

torch::Tensor LsaImpl::forward(const torch::Tensor& tokens, int64_t n_context, ActivationCapture* capture)
{
    const LsaOptions& o = m_options;
    TORCH_CHECK(tokens.dim() == 3 && tokens.size(2) == o.dataDim(), "LSA expects tokens [B, T, ", o.dataDim(),
                "], got ", tokens.sizes());
    TORCH_CHECK(n_context >= 0 && n_context <= tokens.size(1), "n_context out of range");
    const bool intervene = capture && !capture->interventions.empty();
    if (intervene)
        checkInterventions(capture->interventions, {"lsa", o.n_layers, o.n_heads, o.mlp, tokens.size(1)});
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
    torch::Tensor e = tokens;
    if (o.pos_dim > 0) {
        torch::Tensor pos = sinusoidalPositions(tokens.size(1), o.pos_dim, tokens.options());
        e = torch::cat({e, pos.unsqueeze(0).expand({tokens.size(0), -1, -1})}, -1);
    }
    offer(actName(Act::Embed), e);
    const double scale = 1.0 / std::sqrt(double(o.tokenDim()));
    for (int64_t l = 0; l < o.n_layers; ++l) {
        e = hook(actName(Act::ResidPre, l), e);
        Block& blk = block(l);
        const LsaLayerWeights& w = blk.attn;
        torch::Tensor h = blk.ln1 ? blk.ln1->forward(e) : e;
        torch::Tensor ctx = h.narrow(1, 0, n_context);                   // [B, N, D]
        torch::Tensor q = torch::einsum("btd,hed->bhte", {h, w.w_q});    // [B, H, T, D]
        torch::Tensor k = torch::einsum("bnd,hed->bhne", {ctx, w.w_k});  // [B, H, N, D]
        torch::Tensor v = torch::einsum("bnd,hed->bhne", {ctx, w.w_v});  // [B, H, N, D]
        const bool softmaxLayer = l < o.softmax_layers;
        const double strength = o.variant_strength;
        if (softmaxLayer && o.attention_variant == AttentionVariant::Augmented) {
            k = k + strength * blk.aug_k(ctx);
            v = v + strength * blk.aug_v(ctx);
        }
        if (softmaxLayer && o.attention_variant == AttentionVariant::NegativeSamples && n_context > 1) {
            // v̄_{−i} = (Σ_j v_j − v_i) / (N − 1)
            const torch::Tensor others = (v.sum(2, true) - v) / double(n_context - 1);
            v = v - strength * others;
        }
        torch::Tensor pattern = torch::matmul(q, k.transpose(-1, -2));  // [B, H, T, N]
        if (softmaxLayer && o.attention_variant == AttentionVariant::Regularized) {
            // exp(s_i) / (Σ_j exp(s_j) + λ) = exp(s_i − log(Σ_j exp(s_j) + λ)); log 0 = −∞ gives softmax.
            const torch::Tensor s = pattern * scale;
            const torch::Tensor logZ = torch::logsumexp(s, -1, true);
            pattern = torch::exp(s - torch::logaddexp(logZ, torch::full_like(logZ, std::log(strength))));
        } else if (softmaxLayer) {
            pattern = torch::softmax(pattern * scale, -1);
        }
        torch::Tensor z = torch::matmul(pattern, v);                     // [B, H, T, D]
        torch::Tensor out;
        const std::string outName = actName(Act::AttnOut, l);
        // Head h's part P_h z_h [B, H, T, D]; summed into the output only under a head intervention,
        // so that what is captured never changes the numbers.
        const bool headIntervention = intervene && capture->hasHeadIntervention(outName);
        if (headIntervention || (capture && capture->wants(actName(Act::AttnResult, l)))) {
            torch::Tensor result = torch::einsum("bhte,hfe->bhtf", {z, w.w_o});
            if (headIntervention) {
                result = capture->applyHeads(outName, result);
                out = result.sum(1);
            }
            offer(actName(Act::AttnResult, l), result);
        }
        if (!headIntervention)
            out = torch::einsum("bhte,hfe->btf", {z, w.w_o});  // Σ_h P_h z_h
        offer(actName(Act::AttnQ, l), q);
        offer(actName(Act::AttnK, l), k);
        offer(actName(Act::AttnV, l), v);
        offer(actName(Act::AttnPattern, l), pattern);
        e = e + hook(outName, out);
        if (o.mlp) {
            torch::Tensor m = blk.ln2 ? blk.ln2->forward(e) : e;
            m = geluTanh(torch::nn::functional::linear(m, blk.mlp_w_in, blk.mlp_b_in));
            e = e + hook(actName(Act::MlpOut, l), torch::nn::functional::linear(m, blk.mlp_w_out, blk.mlp_b_out));
        }
        e = hook(actName(Act::ResidPost, l), e);
    }
    return e;
}

torch::Tensor LsaImpl::forward(const torch::Tensor& tokens, int64_t n_context, std::vector<torch::Tensor>* resid_post,
                               std::vector<torch::Tensor>* patterns)
{
    if (!resid_post && !patterns)
        return forward(tokens, n_context, static_cast<LsaCapture*>(nullptr));
    LsaCapture capture;
    torch::Tensor out = forward(tokens, n_context, &capture);
    if (resid_post)
        *resid_post = std::move(capture.resid_post);
    if (patterns)
        *patterns = std::move(capture.patterns);
    return out;
}

torch::Tensor LsaImpl::readout(const torch::Tensor& resid) const
{
    return -resid.select(1, resid.size(1) - 1).select(1, ySlot());
}

torch::Tensor LsaImpl::predict(const PromptBatch& batch)
{
    return readout(forward(embed(batch), contextTokens(batch.nContext()), static_cast<LsaCapture*>(nullptr)));
}

void LsaImpl::initVarianceScaling(double scale, uint64_t seed)
{
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(seed);
    // Truncated normal on [−2, 2] by inverse CDF; 0.87962566103423978 is the std of N(0,1)
    // truncated to [−2, 2] (the correction Haiku/JAX apply so the result has the requested variance).
    const double lo = std::erf(-2.0 / std::sqrt(2.0)), hi = std::erf(2.0 / std::sqrt(2.0));
    auto fill = [&](torch::Tensor& p, double s, int64_t fanIn) {
        const double stddev = std::sqrt(s / double(fanIn)) / 0.87962566103423978;
        torch::Tensor u = torch::rand(p.sizes(), gen, torch::TensorOptions().dtype(torch::kFloat64));
        torch::Tensor z = std::sqrt(2.0) * torch::erfinv(lo + (hi - lo) * u);
        p.copy_(z * stddev);
    };
    const int64_t D = tokenDim();
    for (auto& lin : m_feature) {
        fill(lin->weight, 2.0, lin->weight.size(1));
        lin->bias.zero_();
    }
    for (auto& blk : m_blocks) {
        for (torch::Tensor* p : {&blk.attn.w_q, &blk.attn.w_k, &blk.attn.w_v, &blk.attn.w_o})
            fill(*p, scale, D);
        for (Augmentation* aug : {&blk.aug_k, &blk.aug_v}) {
            if (!aug->defined())
                continue;
            fill(aug->w_in, 2.0, D);
            fill(aug->w_out, scale, aug->w_out.size(2));
            aug->b_in.zero_();
            aug->b_out.zero_();
        }
        if (blk.mlp_w_in.defined()) {
            fill(blk.mlp_w_in, 2.0, D);
            fill(blk.mlp_w_out, scale, 4 * D);
            blk.mlp_b_in.zero_();
            blk.mlp_b_out.zero_();
        }
        // LayerNorm keeps its default gain 1 and bias 0.
    }
}

torch::Tensor sinusoidalPositions(int64_t T, int64_t pos_dim, const torch::TensorOptions& options)
{
    TORCH_CHECK(pos_dim > 0 && pos_dim % 2 == 0, "pos_dim must be a positive even number");
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    torch::Tensor p = torch::arange(T, f64).unsqueeze(1);                                    // [T, 1]
    torch::Tensor omega = torch::pow(10000.0, -torch::arange(0, pos_dim, 2, f64) / double(pos_dim));  // [pos_dim/2]
    torch::Tensor angle = p * omega.unsqueeze(0);                                            // [T, pos_dim/2]
    torch::Tensor code = torch::stack({torch::sin(angle), torch::cos(angle)}, -1).reshape({T, pos_dim});
    return code.to(options.dtype_opt().has_value() ? options : options.dtype(torch::kFloat32));
}

} // namespace icl
