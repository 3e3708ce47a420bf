// The GPT-2 decoder of Garg et al. (docs/science.md §0) against an independent computation of the same
// weights: pre-LayerNorm blocks written out with explicit loops over plain doubles in this file.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/models/gpt2.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/tiny_models.h"

namespace {

using Mat = std::vector<std::vector<double>>;

std::vector<double> row(const torch::Tensor& t) // 1-D float64 tensor -> vector
{
    const torch::Tensor c = t.contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

std::vector<double> layerNorm(const std::vector<double>& x, const torch::Tensor& g, const torch::Tensor& b)
{
    double mean = 0, var = 0;
    for (double v : x)
        mean += v / double(x.size());
    for (double v : x)
        var += (v - mean) * (v - mean) / double(x.size());
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i)
        out[i] = (x[i] - mean) / std::sqrt(var + 1e-5) * g[int64_t(i)].item<double>() + b[int64_t(i)].item<double>();
    return out;
}

// y = xᵀW (+ bias) with W [in, out]
std::vector<double> affine(const std::vector<double>& x, const torch::Tensor& W, const torch::Tensor& bias = {})
{
    std::vector<double> out(static_cast<size_t>(W.size(1)), 0.0);
    for (int64_t o = 0; o < W.size(1); ++o) {
        double s = bias.defined() ? bias[o].item<double>() : 0.0;
        for (int64_t i = 0; i < W.size(0); ++i)
            s += x[size_t(i)] * W[i][o].item<double>();
        out[size_t(o)] = s;
    }
    return out;
}

double gelu(double u) { return 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u))); }

/// Predictions [T] of the model for one sequence of tokens [T, d], by loops.
std::vector<double> reference(icl::Gpt2Impl& model, const torch::Tensor& tokens)
{
    auto p = model.named_parameters();
    const auto& o = model.options();
    const int64_t T = tokens.size(0), D = o.d_model, H = o.n_heads, dh = D / H;
    Mat x(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
        x[size_t(t)] = affine(row(tokens[t]), p["read_in.weight"].t(), p["read_in.bias"]);
        for (int64_t c = 0; c < D; ++c)
            x[size_t(t)][size_t(c)] += p["pos_embed"][t][c].item<double>();
    }
    for (int64_t l = 0; l < o.n_layers; ++l) {
        const std::string pre = "blocks." + std::to_string(l) + ".";
        Mat h(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t)
            h[size_t(t)] = layerNorm(x[size_t(t)], p[pre + "ln1.weight"], p[pre + "ln1.bias"]);
        Mat add(static_cast<size_t>(T), std::vector<double>(size_t(D), 0.0));
        for (int64_t hd = 0; hd < H; ++hd) {
            Mat q(static_cast<size_t>(T)), k(static_cast<size_t>(T)), v(static_cast<size_t>(T));
            for (int64_t t = 0; t < T; ++t) {
                q[size_t(t)] = affine(h[size_t(t)], p[pre + "attn.W_Q"][hd], p[pre + "attn.b_Q"][hd]);
                k[size_t(t)] = affine(h[size_t(t)], p[pre + "attn.W_K"][hd], p[pre + "attn.b_K"][hd]);
                v[size_t(t)] = affine(h[size_t(t)], p[pre + "attn.W_V"][hd], p[pre + "attn.b_V"][hd]);
            }
            for (int64_t t = 0; t < T; ++t) {
                std::vector<double> s(static_cast<size_t>(t + 1));
                double mx = -1e300, sum = 0;
                for (int64_t j = 0; j <= t; ++j) {  // causal: keys up to t
                    double dot = 0;
                    for (int64_t e = 0; e < dh; ++e)
                        dot += q[size_t(t)][size_t(e)] * k[size_t(j)][size_t(e)];
                    s[size_t(j)] = dot / std::sqrt(double(dh));
                    mx = std::max(mx, s[size_t(j)]);
                }
                for (double& v2 : s)
                    sum += (v2 = std::exp(v2 - mx));
                std::vector<double> z(static_cast<size_t>(dh), 0.0);
                for (int64_t j = 0; j <= t; ++j)
                    for (int64_t e = 0; e < dh; ++e)
                        z[size_t(e)] += s[size_t(j)] / sum * v[size_t(j)][size_t(e)];
                const auto out = affine(z, p[pre + "attn.W_O"][hd]);
                for (int64_t c = 0; c < D; ++c)
                    add[size_t(t)][size_t(c)] += out[size_t(c)];
            }
        }
        for (int64_t t = 0; t < T; ++t)
            for (int64_t c = 0; c < D; ++c)
                x[size_t(t)][size_t(c)] += add[size_t(t)][size_t(c)] + p[pre + "attn.b_O"][c].item<double>();
        for (int64_t t = 0; t < T; ++t) {
            auto m = affine(layerNorm(x[size_t(t)], p[pre + "ln2.weight"], p[pre + "ln2.bias"]), p[pre + "mlp.W_in"],
                            p[pre + "mlp.b_in"]);
            for (double& u : m)
                u = gelu(u);
            const auto out = affine(m, p[pre + "mlp.W_out"], p[pre + "mlp.b_out"]);
            for (int64_t c = 0; c < D; ++c)
                x[size_t(t)][size_t(c)] += out[size_t(c)];
        }
    }
    std::vector<double> pred(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t)
        pred[size_t(t)] = affine(layerNorm(x[size_t(t)], p["ln_final.weight"], p["ln_final.bias"]),
                                 p["read_out.weight"].t(), p["read_out.bias"])[0];
    return pred;
}

icl::Gpt2 tinyModel()
{
    const icl::Gpt2Options o = icl::test::gpt2Options(3, 2, 2, 8, 9);
    icl::Gpt2 m(o, 5);
    m->to(torch::kFloat64);
    // Larger weights than GPT-2's 0.02 so attention is far from uniform and every term matters.
    torch::NoGradGuard guard;
    for (auto& p : m->parameters())
        p.add_(0.3 * torch::randn_like(p));
    return m;
}

TEST(Gpt2, ForwardMatchesAHandWrittenTransformer)
{
    icl::Gpt2 model = tinyModel();
    const torch::Tensor tokens = torch::randn({2, 7, 3}, torch::kFloat64);
    const torch::Tensor got = model->forward(tokens);
    ASSERT_EQ(got.sizes(), (std::vector<int64_t>{2, 7}));
    for (int64_t b = 0; b < 2; ++b) {
        const auto want = reference(*model, tokens[b]);
        for (int64_t t = 0; t < 7; ++t)
            EXPECT_NEAR(got[b][t].item<double>(), want[size_t(t)], 1e-10) << "b " << b << " t " << t;
    }
}

TEST(Gpt2, Float32ForwardMatchesTheHandWrittenTransformer)
{
    // Training runs in float32: the float64 hand-written reference is computed from the same
    // (float32-representable) weights.
    icl::Gpt2 model = tinyModel();
    model->to(torch::kFloat32);
    const torch::Tensor tokens = torch::randn({2, 7, 3});
    const torch::Tensor got = model->forward(tokens);
    model->to(torch::kFloat64);
    for (int64_t b = 0; b < 2; ++b) {
        const auto want = reference(*model, tokens[b].to(torch::kFloat64));
        for (int64_t t = 0; t < 7; ++t)
            EXPECT_NEAR(got[b][t].item<double>(), want[size_t(t)], 2e-5) << "b " << b << " t " << t;
    }
}

TEST(Gpt2, ChangingALaterTokenNeverChangesAnEarlierPrediction)
{
    icl::Gpt2 model = tinyModel();
    const torch::Tensor a = torch::randn({1, 9, 3}, torch::kFloat64);
    for (int64_t changed = 0; changed < 9; ++changed) {
        torch::Tensor b = a.clone();
        b[0][changed] += 1.0;
        const torch::Tensor pa = model->forward(a), pb = model->forward(b);
        for (int64_t t = 0; t < 9; ++t) {
            if (t < changed)
                EXPECT_EQ(pa[0][t].item<double>(), pb[0][t].item<double>()) << "token " << changed << " moved " << t;
            else if (t == changed)
                EXPECT_NE(pa[0][t].item<double>(), pb[0][t].item<double>());
        }
    }
}

TEST(Gpt2, PredictionsAreReadAtTheXTokensAndCaptureNamesFollowTheField)
{
    icl::Gpt2 model = tinyModel();
    icl::TaskConfig task;
    task.d = 3;
    task.n_context = 4;
    const icl::PromptBatch p = icl::sampleLinearRegression(task, 2, 1, torch::kFloat64);
    icl::ActivationCapture capture;
    capture.all = true;
    const torch::Tensor all = model->predictAll(p, &capture);
    ASSERT_EQ(all.sizes(), (std::vector<int64_t>{2, 5}));
    const torch::Tensor full = model->forward(icl::interleavedTokens(p));
    for (int64_t i = 0; i < 5; ++i)
        EXPECT_EQ(all[0][i].item<double>(), full[0][2 * i].item<double>());
    EXPECT_TRUE(torch::equal(model->predict(p), all.select(1, 4)));
    for (const char* name : {"embed", "resid_pre.0", "resid_post.1", "attn.pattern.0", "attn.q.1", "attn.k.0",
                             "attn.v.0", "attn.out.1", "mlp.out.0"})
        EXPECT_TRUE(capture.values.count(name)) << name;
    const torch::Tensor pattern = capture.values["attn.pattern.1"];
    ASSERT_EQ(pattern.sizes(), (std::vector<int64_t>{2, 2, 9, 9}));
    EXPECT_LT((pattern.sum(-1) - 1).abs().max().item<double>(), 1e-12);
    EXPECT_EQ(pattern.triu(1).abs().max().item<double>(), 0.0);  // causal
    // resid_post.{l} = resid_pre.{l} + attn.out.{l} + mlp.out.{l}
    const torch::Tensor sum = capture.values["resid_pre.1"] + capture.values["attn.out.1"] + capture.values["mlp.out.1"];
    EXPECT_LT((sum - capture.values["resid_post.1"]).abs().max().item<double>(), 1e-12);
    icl::ActivationCapture none;
    none.names = {"attn.pattern.0"};
    model->forward(icl::interleavedTokens(p), &none);
    EXPECT_EQ(none.values.size(), 1u);
}

// Without a capture the residual adds go into the block outputs' own rows (in place); with one, into new tensors.
// Both must give the same loss and the same gradients, bit for bit, in float32 with the CPU attention and GELU
// kernels (d_head = 32, 64 prompts × 81 tokens: the sizes of the papers' training step).
TEST(Gpt2, TrainingStepIsTheSameWithAndWithoutACapture)
{
    const icl::Gpt2Options o = icl::test::gpt2Options(5, 2, 2, 64, 81);
    icl::Gpt2 model(o, 3);
    icl::TaskConfig task;
    task.d = 5;
    task.n_context = 40;
    const icl::PromptBatch p = icl::sampleLinearRegression(task, 64, 2);
    auto lossAndGrads = [&](icl::ActivationCapture* capture) {
        model->zero_grad();
        const torch::Tensor loss = (model->predictAll(p, capture).flatten() - p.y.flatten()).square().mean();
        loss.backward();
        std::vector<torch::Tensor> out{loss.detach().reshape({1})};
        for (const auto& param : model->parameters())
            out.push_back(param.grad().clone().flatten());
        return torch::cat(out);
    };
    const torch::Tensor inPlace = lossAndGrads(nullptr);
    icl::ActivationCapture capture;
    capture.names = {"resid_post.1"};
    const torch::Tensor separate = lossAndGrads(&capture);
    ASSERT_EQ(capture.values.count("resid_post.1"), 1u);
    EXPECT_TRUE(torch::equal(inPlace, separate));
    EXPECT_GT(inPlace.abs().sum().item<double>(), 0.0);
    // The captured residual stream is the sum of its parts, computed apart.
    icl::ActivationCapture parts;
    parts.names = {"resid_pre.1", "attn.out.1", "mlp.out.1", "resid_post.1"};
    {
        torch::NoGradGuard noGrad;
        model->predictAll(p, &parts);
    }
    const torch::Tensor mid = parts.values["resid_pre.1"] + parts.values["attn.out.1"];
    EXPECT_TRUE(torch::equal(mid + parts.values["mlp.out.1"], parts.values["resid_post.1"]));
}

TEST(Gpt2, InitialisationFollowsGpt2)
{
    const icl::Gpt2Options o = icl::test::gpt2Options(8, 4, 4, 128, 41);
    icl::Gpt2 m(o, 1);
    auto p = m->named_parameters();
    EXPECT_NEAR(p["blocks.0.attn.W_Q"].std().item<double>(), 0.02, 0.001);
    EXPECT_NEAR(p["blocks.3.mlp.W_out"].std().item<double>(), 0.02 / std::sqrt(8.0), 0.0005);
    EXPECT_NEAR(p["blocks.2.attn.W_O"].std().item<double>(), 0.02 / std::sqrt(8.0), 0.0005);
    EXPECT_EQ(p["blocks.0.mlp.b_in"].abs().max().item<double>(), 0.0);
    EXPECT_EQ(p["blocks.1.ln1.weight"].min().item<double>(), 1.0);
}

} // namespace
