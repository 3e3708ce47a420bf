// Attention variants of the softmax layer from the contrastive view (Ren & Liu 2023): each equals plain
// softmax attention at strength 0 and its documented closed form otherwise (computed here by hand in
// float64 from the layer's weights); parameter names of existing configs are unchanged; config errors
// name the key path.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "core/io/config.h"
#include "core/models/lsa.h"
#include "core/models/model.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::linearPrompts;

using icl::AttentionVariant;

icl::LsaOptions softmaxOptions(AttentionVariant variant, double strength)
{
    auto o = icl::test::lsaOptions(4, 1, 2);
    o.softmax_layers = 1;
    o.attention_variant = variant;
    o.variant_strength = strength;
    o.augment_hidden = 8;
    return o;
}

icl::Lsa makeModel(AttentionVariant variant, double strength)
{
    icl::Lsa lsa(softmaxOptions(variant, strength));
    lsa->initVarianceScaling(1.0, 7); // scores of order 1: the softmax is far from uniform
    return lsa;
}

void copyAttentionWeights(icl::Lsa& to, icl::Lsa& from)
{
    torch::NoGradGuard g;
    to->layer(0).w_q.copy_(from->layer(0).w_q);
    to->layer(0).w_k.copy_(from->layer(0).w_k);
    to->layer(0).w_v.copy_(from->layer(0).w_v);
    to->layer(0).w_o.copy_(from->layer(0).w_o);
}

struct Forward {
    torch::Tensor out, pattern;
};

Forward run(icl::Lsa& lsa, const icl::PromptBatch& b)
{
    torch::NoGradGuard g;
    icl::LsaCapture c;
    Forward f;
    f.out = lsa->forward(lsa->embed(b), b.nContext(), &c).to(torch::kFloat64);
    f.pattern = c.patterns[0].to(torch::kFloat64);
    return f;
}

/// Hand-computed pieces of one softmax layer in float64: h [B, T, D], scores s = qkᵀ/√D [B, H, T, N],
/// values v [B, H, N, D].
struct Pieces {
    torch::Tensor h, s, v;
};

Pieces pieces(icl::Lsa& lsa, const icl::PromptBatch& b)
{
    Pieces p;
    p.h = lsa->embed(b).to(torch::kFloat64);
    const int64_t N = b.nContext(), D = p.h.size(-1);
    const torch::Tensor ctx = p.h.narrow(1, 0, N);
    const auto w = [&](const torch::Tensor& t) { return t.detach().to(torch::kFloat64); };
    const torch::Tensor q = torch::einsum("btd,hed->bhte", {p.h, w(lsa->layer(0).w_q)});
    const torch::Tensor k = torch::einsum("bnd,hed->bhne", {ctx, w(lsa->layer(0).w_k)});
    p.v = torch::einsum("bnd,hed->bhne", {ctx, w(lsa->layer(0).w_v)});
    p.s = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(D));
    return p;
}

/// e + Σ_h W_O^h (A_h v_h) for an attention pattern A [B, H, T, N] and values v [B, H, N, D].
/// The prompts of the variant tests (B = 5, d = 4, N = 6, seed 11, float32), the model of `variant` with `strength`,
/// its forward pass and the pieces recomputed here.
struct VariantRun {
    icl::PromptBatch b;
    icl::Lsa lsa;
    Forward f;
    Pieces p;
};

VariantRun variantRun(AttentionVariant variant, double strength)
{
    const icl::PromptBatch b = linearPrompts(5, 4, 6, 11, 0.0, torch::kFloat32);
    icl::Lsa lsa = makeModel(variant, strength);
    const Forward f = run(lsa, b);
    return {b, lsa, f, pieces(lsa, b)};
}

torch::Tensor residual(icl::Lsa& lsa, const Pieces& p, const torch::Tensor& A, const torch::Tensor& v)
{
    const torch::Tensor z = torch::matmul(A, v);
    return p.h + torch::einsum("bhte,hfe->btf", {z, lsa->layer(0).w_o.detach().to(torch::kFloat64)});
}

TEST(AttentionVariants, EveryVariantIsPlainSoftmaxAtStrengthZero)
{
    const icl::PromptBatch b = linearPrompts(5, 4, 6, 11, 0.0, torch::kFloat32);
    icl::Lsa plain = makeModel(AttentionVariant::Softmax, 0.0);
    const Forward ref = run(plain, b);
    // Hand-computed softmax attention: the plain layer is what it claims to be.
    const Pieces p = pieces(plain, b);
    EXPECT_LT((ref.out - residual(plain, p, torch::softmax(p.s, -1), p.v)).abs().max().item<double>(), 1e-5);
    for (AttentionVariant v : {AttentionVariant::Regularized, AttentionVariant::Augmented,
                               AttentionVariant::NegativeSamples}) {
        SCOPED_TRACE(icl::attentionVariantName(v));
        icl::Lsa variant = makeModel(v, 0.0);
        copyAttentionWeights(variant, plain);
        const Forward f = run(variant, b);
        EXPECT_LT((f.out - ref.out).abs().max().item<double>(), 1e-6);
        EXPECT_LT((f.pattern - ref.pattern).abs().max().item<double>(), 1e-6);
    }
}

TEST(AttentionVariants, RegularizedShrinksByTheNullPair)
{
    const double lambda = 1.5;
    auto [b, lsa, f, p] = variantRun(AttentionVariant::Regularized, lambda);
    const torch::Tensor e = torch::exp(p.s);
    const torch::Tensor A = e / (e.sum(-1, true) + lambda);  // exp(s_i) / (Σ_j exp(s_j) + λ)
    EXPECT_LT((f.pattern - A).abs().max().item<double>(), 1e-6);
    EXPECT_LT((f.out - residual(lsa, p, A, p.v)).abs().max().item<double>(), 1e-5);
    EXPECT_TRUE((f.pattern.sum(-1) < 1.0).all().item<bool>());  // rows sum to Z/(Z + λ)
}

TEST(AttentionVariants, NegativeSamplesSubtractTheOtherValuesMean)
{
    const double beta = 0.7;
    auto [b, lsa, f, p] = variantRun(AttentionVariant::NegativeSamples, beta);
    const int64_t N = p.v.size(2);
    torch::Tensor vEff = p.v.clone();
    for (int64_t i = 0; i < N; ++i) {
        torch::Tensor others = torch::zeros_like(p.v.select(2, 0));
        for (int64_t j = 0; j < N; ++j)
            if (j != i)
                others += p.v.select(2, j);
        vEff.select(2, i) -= beta * others / double(N - 1);
    }
    EXPECT_LT((f.out - residual(lsa, p, torch::softmax(p.s, -1), vEff)).abs().max().item<double>(), 1e-5);
}

TEST(AttentionVariants, AugmentedAddsResidualMlpsToKeysAndValues)
{
    const double alpha = 0.8;
    const icl::PromptBatch b = linearPrompts(5, 4, 6, 11, 0.0, torch::kFloat32);
    icl::Lsa lsa = makeModel(AttentionVariant::Augmented, alpha);
    {
        torch::NoGradGuard g; // give the MLPs non-zero biases too
        for (auto& item : lsa->named_parameters())
            if (item.key().find("aug_") != std::string::npos && item.key().find(".b_") != std::string::npos)
                item.value().normal_(0.0, 0.3);
    }
    const Forward f = run(lsa, b);
    const Pieces p = pieces(lsa, b);
    const auto params = lsa->named_parameters();
    const auto w = [&](const std::string& n) { return params["blocks.0.attn." + n].detach().to(torch::kFloat64); };
    const int64_t N = b.nContext(), D = p.h.size(-1);
    const torch::Tensor ctx = p.h.narrow(1, 0, N);
    auto mlp = [&](const std::string& prefix) {  // W_2 relu(W_1 h + b_1) + b_2 per head
        const torch::Tensor a = torch::relu(torch::einsum("bnd,hjd->bhnj", {ctx, w(prefix + ".w_in")})
                                            + w(prefix + ".b_in").unsqueeze(1));
        return torch::einsum("bhnj,hej->bhne", {a, w(prefix + ".w_out")}) + w(prefix + ".b_out").unsqueeze(1);
    };
    const torch::Tensor q = torch::einsum("btd,hed->bhte", {p.h, w("w_q")});
    const torch::Tensor k = torch::einsum("bnd,hed->bhne", {ctx, w("w_k")}) + alpha * mlp("aug_k");
    const torch::Tensor v = p.v + alpha * mlp("aug_v");
    const torch::Tensor A = torch::softmax(torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(D)), -1);
    EXPECT_LT((f.pattern - A).abs().max().item<double>(), 1e-5);
    EXPECT_LT((f.out - residual(lsa, p, A, v)).abs().max().item<double>(), 1e-5);
}

TEST(AttentionVariants, ParameterNamesOfExistingConfigsAreUnchanged)
{
    auto names = [](icl::Lsa& lsa) {
        std::set<std::string> n;
        for (const auto& item : lsa->named_parameters())
            n.insert(item.key());
        return n;
    };
    const std::set<std::string> plain = {"blocks.0.attn.w_q", "blocks.0.attn.w_k", "blocks.0.attn.w_v",
                                         "blocks.0.attn.w_o"};
    for (AttentionVariant v : {AttentionVariant::Softmax, AttentionVariant::Regularized,
                               AttentionVariant::NegativeSamples}) {
        icl::Lsa lsa = makeModel(v, 0.5);
        EXPECT_EQ(names(lsa), plain);
    }
    icl::Lsa aug = makeModel(AttentionVariant::Augmented, 0.5);
    std::set<std::string> expected = plain;
    for (const char* m : {"aug_k", "aug_v"})
        for (const char* p : {"w_in", "b_in", "w_out", "b_out"})
            expected.insert(std::string("blocks.0.attn.") + m + "." + p);
    EXPECT_EQ(names(aug), expected);
    EXPECT_EQ(aug->named_parameters()["blocks.0.attn.aug_k.w_in"].sizes(), (std::vector<int64_t>{2, 8, 5}));
}

std::string configError(const std::vector<std::string>& sets)
{
    icl::ConfigRequest r;
    r.preset = "renliu-kernel";
    r.sets = sets;
    return icl::test::errorOf([&] { icl::resolveConfig(r); });
}

TEST(AttentionVariants, ConfigErrorsNameTheKeyPath)
{
    EXPECT_NE(configError({"model.attention_variant=sparse"}).find("model.attention_variant: expected one of"),
              std::string::npos);
    EXPECT_NE(configError({"model.variant_strength=-1"}).find("model.variant_strength: expected a finite number >= 0"),
              std::string::npos);
    EXPECT_NE(configError({"model.variant_strength=\"big\""}).find("model.variant_strength"), std::string::npos);
    EXPECT_NE(configError({"model.augment_hidden=0"}).find("model.augment_hidden"), std::string::npos);
    EXPECT_NE(configError({"model.softmax_layers=0", "model.attention_variant=regularized"})
                  .find("model.attention_variant: \"regularized\" modifies softmax attention layers"),
              std::string::npos);
    // Every variant preset builds its model.
    for (const char* preset : {"renliu-kernel", "renliu-regularized", "renliu-augmented", "renliu-negative-samples"}) {
        icl::ConfigRequest r;
        r.preset = preset;
        const icl::ExperimentConfig c = icl::parseConfig(icl::resolveConfig(r));
        EXPECT_NO_THROW(icl::makeModel(c, 0)) << preset;
    }
}

} // namespace
