// Interventions in the models (docs/architecture.md "Activation names and interventions"): zero-, mean-ablation and replacement of a
// layer's output, one head's part of it, or a (layer, position) slice of the residual stream; an
// intervention that matches nothing is an error. Expected values: the same model with the head's
// output weights zeroed, a batch mean computed here, and capture identities.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/models/capture.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::expectError;
using icl::test::linearPrompts;

icl::Gpt2Options smallGpt2()
{
    return icl::test::gpt2Options(3, 2, 2, 8, 11);
}

icl::Lsa lsaModel(bool mlp)
{
    icl::LsaOptions o;
    o.input_dim = 3;
    o.n_layers = 2;
    o.n_heads = 2;
    o.mlp = mlp;
    o.layer_norm = mlp;
    icl::Lsa lsa(o);
    lsa->initVarianceScaling(1.0, 5);
    lsa->to(torch::kFloat64);
    return lsa;
}

/// smallGpt2() from seed 3 in float64 and the interleaved tokens of `batch` prompts (d = 3, N = 5, task seed 4).
struct Gpt2OnTokens {
    icl::Gpt2 model;
    torch::Tensor tokens;
};

Gpt2OnTokens gpt2OnTokens(int64_t batch)
{
    icl::Gpt2 model(smallGpt2(), 3);
    model->to(torch::kFloat64);
    return {model, icl::interleavedTokens(linearPrompts(batch, 3, 5, 4))};
}

TEST(Interventions, ZeroAblatingAGpt2HeadEqualsZeroingItsWO)
{
    icl::Gpt2 model(smallGpt2(), 3);
    model->to(torch::kFloat64);
    icl::Gpt2 copy(smallGpt2(), 3);
    copy->to(torch::kFloat64);
    torch::NoGradGuard guard;
    const torch::Tensor tokens = icl::interleavedTokens(linearPrompts(3, 3, 5, 4));
    for (auto& kv : copy->named_parameters())
        if (kv.key() == "blocks.1.attn.W_O")
            kv.value()[0].zero_();
    icl::ActivationCapture cap;
    cap.interventions.push_back({icl::Intervention::Kind::Zero, "attn.out.1", 0, -1, {}});
    const torch::Tensor got = model->forward(tokens, &cap);
    EXPECT_LT((got - copy->forward(tokens)).abs().max().item<double>(), 1e-12);
    EXPECT_GT((got - model->forward(tokens)).abs().max().item<double>(), 1e-8);
}

TEST(Interventions, ZeroAblatingAnLsaHeadEqualsZeroingItsOutputProjection)
{
    icl::Lsa model = lsaModel(false), copy = lsaModel(false);
    torch::NoGradGuard guard;
    copy->layer(0).w_o[1].zero_();
    const icl::PromptBatch b = linearPrompts(3, 3, 5, 4);
    const torch::Tensor tokens = model->embed(b);
    icl::ActivationCapture cap;
    cap.interventions.push_back({icl::Intervention::Kind::Zero, "attn.out.0", 1, -1, {}});
    const torch::Tensor got = model->forward(tokens, 5, &cap);
    EXPECT_LT((got - copy->forward(tokens, 5)).abs().max().item<double>(), 1e-12);
}

TEST(Interventions, LsaCapturesTheGpt2Names)
{
    icl::Lsa model = lsaModel(true);
    torch::NoGradGuard guard;
    const icl::PromptBatch b = linearPrompts(2, 3, 5, 4);
    icl::ActivationCapture cap;
    cap.all = true;
    const torch::Tensor out = model->forward(model->embed(b), 5, &cap);
    for (const char* name : {"embed", "resid_pre.0", "resid_post.1", "attn.pattern.0", "attn.q.1", "attn.k.0",
                             "attn.v.0", "attn.out.1", "attn.result.0", "mlp.out.0"})
        EXPECT_TRUE(cap.values.count(name)) << name;
    EXPECT_EQ(cap.values.at("attn.pattern.1").sizes(), (std::vector<int64_t>{2, 2, 6, 5}));
    for (int l = 0; l < 2; ++l) {
        const std::string s = "." + std::to_string(l);
        const torch::Tensor sum = cap.values.at("resid_pre" + s) + cap.values.at("attn.out" + s) + cap.values.at("mlp.out" + s);
        EXPECT_LT((sum - cap.values.at("resid_post" + s)).abs().max().item<double>(), 1e-12);
        EXPECT_LT((cap.values.at("attn.result" + s).sum(1) - cap.values.at("attn.out" + s)).abs().max().item<double>(),
                  1e-12);
    }
    EXPECT_TRUE(torch::equal(out, cap.values.at("resid_post.1")));
    // The older LsaCapture form gives the same tensors.
    icl::LsaCapture old;
    old.want_qkv = true;
    model->forward(model->embed(b), 5, &old);
    EXPECT_TRUE(torch::equal(old.patterns[1], cap.values.at("attn.pattern.1")));
    EXPECT_TRUE(torch::equal(old.resid_post[0], cap.values.at("resid_post.0")));
    EXPECT_TRUE(torch::equal(old.k[1], cap.values.at("attn.k.1")));
}

TEST(Interventions, MeanAblationWithoutValueUsesTheBatchMeanAtThatPosition)
{
    torch::NoGradGuard guard;
    auto [model, tokens] = gpt2OnTokens(4);
    icl::ActivationCapture plain;
    plain.names = {"resid_post.0"};
    model->forward(tokens, &plain);
    icl::ActivationCapture cap;
    cap.names = {"resid_post.0"};
    cap.interventions.push_back({icl::Intervention::Kind::Mean, "resid_post.0", -1, 3, {}});
    model->forward(tokens, &cap);
    const torch::Tensor before = plain.values.at("resid_post.0"), after = cap.values.at("resid_post.0");
    for (int64_t t = 0; t < tokens.size(1); ++t) {
        const torch::Tensor expected = t == 3 ? before.select(1, 3).mean(0, true).expand({4, -1}) : before.select(1, t);
        EXPECT_LT((after.select(1, t) - expected).abs().max().item<double>(), 1e-12) << t;
    }
}

TEST(Interventions, ReplacingAPositionChangesOnlyLaterPositionsOfGpt2)
{
    torch::NoGradGuard guard;
    auto [model, tokens] = gpt2OnTokens(2);
    icl::ActivationCapture cap;
    cap.interventions.push_back(
        {icl::Intervention::Kind::Replace, "resid_pre.1", -1, 6, torch::ones({8}, torch::kFloat64)});
    const torch::Tensor got = model->forward(tokens, &cap), plain = model->forward(tokens);
    EXPECT_TRUE(torch::equal(got.narrow(1, 0, 6), plain.narrow(1, 0, 6)));  // causal
    EXPECT_GT((got.select(1, 6) - plain.select(1, 6)).abs().min().item<double>(), 0.0);
}

TEST(Interventions, InterventionsThatMatchNothingAreErrors)
{
    icl::Gpt2 model(smallGpt2(), 3);
    icl::Lsa lsa = lsaModel(false);
    torch::NoGradGuard guard;
    const icl::PromptBatch b = linearPrompts(1, 3, 5, 4);
    const torch::Tensor tokens = icl::interleavedTokens(b).to(torch::kFloat32);
    using K = icl::Intervention::Kind;
    auto run = [&](icl::Intervention iv) {
        icl::ActivationCapture cap;
        cap.interventions.push_back(iv);
        model->forward(tokens, &cap);
    };
    expectError([&] { run({K::Zero, "attn.out.2", -1, -1, {}}); }, "gpt2 model has 2 layer(s)");
    expectError([&] { run({K::Zero, "attn.out.0", 2, -1, {}}); }, "2 head(s)");
    expectError([&] { run({K::Zero, "resid_post.0", -1, 11, {}}); }, "11 tokens");
    expectError([&] { run({K::Zero, "attn.pattern.0", -1, -1, {}}); }, "no such activation");
    expectError([&] { run({K::Replace, "mlp.out.1", -1, -1, {}}); }, "needs a value");
    expectError([&] { run({K::Replace, "mlp.out.1", -1, -1, torch::ones({5})}); }, "does not fit");
    auto runLsa = [&](icl::Intervention iv) {
        icl::ActivationCapture cap;
        cap.interventions.push_back(iv);
        lsa->forward(lsa->embed(b), 5, &cap);
    };
    expectError([&] { runLsa({K::Zero, "mlp.out.0", -1, -1, {}}); }, "lsa model has no MLP");
    expectError([&] { runLsa({K::Mean, "resid_pre.2", -1, -1, {}}); }, "lsa model has 2 layer(s)");
    // The same kinds of intervention on what the models do have run.
    EXPECT_NO_THROW(run({K::Zero, "attn.out.1", 1, -1, {}}));
    EXPECT_NO_THROW(runLsa({K::Zero, "resid_pre.1", -1, 0, {}}));
}

} // namespace
