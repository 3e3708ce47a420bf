// The options of the LSA stack used by von Oswald et al.'s further experiments: softmax attention,
// pre-LayerNorm, residual MLPs, sinusoidal positions, the interleaved layout and an input MLP φ.
// Reference values are computed here with plain loops over doubles, independent of the model code.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/metrics/alignment_metrics.h"
#include "core/models/lsa.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::linearPrompts;

using Vec = std::vector<double>;

Vec matVec(const torch::Tensor& W, const Vec& v)  // W [D, D] float64
{
    auto a = W.accessor<double, 2>();
    Vec out(size_t(W.size(0)), 0.0);
    for (int64_t r = 0; r < W.size(0); ++r)
        for (int64_t c = 0; c < W.size(1); ++c)
            out[size_t(r)] += a[r][c] * v[size_t(c)];
    return out;
}

double dot(const Vec& a, const Vec& b)
{
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i)
        s += a[i] * b[i];
    return s;
}

TEST(LsaOptions, WithoutOptionsTheModelIsThePlainLsa)
{
    icl::LsaOptions o;
    o.input_dim = 4;
    o.n_layers = 2;
    icl::Lsa a(o), b(5, 2, 1, false);
    a->initVarianceScaling(0.5, 7);
    b->initVarianceScaling(0.5, 7);
    const auto p = linearPrompts(16, 4, 6, 1);
    a->to(torch::kFloat64);
    b->to(torch::kFloat64);
    EXPECT_TRUE(o.plain());
    EXPECT_TRUE(torch::equal(a->predict(p), b->predict(p)));
}

TEST(LsaOptions, SoftmaxLayerMatchesAHandComputedAttention)
{
    auto o = icl::test::lsaOptions(3, 1, 2);
    o.softmax_layers = 1;
    icl::Lsa model(o);
    model->to(torch::kFloat64);
    model->initVarianceScaling(4.0, 3);
    const auto p = linearPrompts(3, 3, 5, 2);
    const torch::Tensor got = model->forward(icl::pairTokens(p), 5, static_cast<icl::LsaCapture*>(nullptr));
    const torch::Tensor tokens = icl::pairTokens(p);
    const int64_t D = 4, T = 6, N = 5;
    for (int64_t b = 0; b < 3; ++b) {
        for (int64_t t = 0; t < T; ++t) {
            Vec e(D), out(D);
            for (int64_t i = 0; i < D; ++i)
                out[size_t(i)] = e[size_t(i)] = tokens[b][t][i].item<double>();
            for (int64_t h = 0; h < 2; ++h) {
                const auto& w = model->layer(0);
                const Vec q = matVec(w.w_q[h], e);
                Vec scores(N), z(D, 0.0);
                double mx = -1e300, sum = 0;
                for (int64_t i = 0; i < N; ++i) {
                    Vec ei(D);
                    for (int64_t c = 0; c < D; ++c)
                        ei[size_t(c)] = tokens[b][i][c].item<double>();
                    scores[size_t(i)] = dot(q, matVec(w.w_k[h], ei)) / std::sqrt(double(D));
                    mx = std::max(mx, scores[size_t(i)]);
                }
                for (auto& s : scores)
                    sum += std::exp(s - mx);
                for (int64_t i = 0; i < N; ++i) {
                    Vec ei(D);
                    for (int64_t c = 0; c < D; ++c)
                        ei[size_t(c)] = tokens[b][i][c].item<double>();
                    const Vec v = matVec(w.w_v[h], ei);
                    for (int64_t c = 0; c < D; ++c)
                        z[size_t(c)] += std::exp(scores[size_t(i)] - mx) / sum * v[size_t(c)];
                }
                const Vec o2 = matVec(w.w_o[h], z);
                for (int64_t c = 0; c < D; ++c)
                    out[size_t(c)] += o2[size_t(c)];
            }
            for (int64_t c = 0; c < D; ++c)
                EXPECT_NEAR(got[b][t][c].item<double>(), out[size_t(c)], 1e-12);
        }
    }
}

TEST(LsaOptions, LayerNormAndMlpFollowTheirFormulas)
{
    icl::LsaOptions o;
    o.input_dim = 2;
    o.n_layers = 1;
    o.layer_norm = true;
    o.mlp = true;
    icl::Lsa model(o);
    model->to(torch::kFloat64);
    model->initVarianceScaling(1.0, 5);
    torch::NoGradGuard guard;
    model->layer(0).w_o.zero_();  // attention adds nothing: out = e + MLP(LN2(e))
    const auto p = linearPrompts(2, 2, 3, 4);
    const torch::Tensor tokens = icl::pairTokens(p);
    const torch::Tensor got = model->forward(tokens, 3, static_cast<icl::LsaCapture*>(nullptr));
    const auto params = model->named_parameters();
    const torch::Tensor w_in = params["blocks.0.mlp.w_in"], b_in = params["blocks.0.mlp.b_in"];
    const torch::Tensor w_out = params["blocks.0.mlp.w_out"], b_out = params["blocks.0.mlp.b_out"];
    ASSERT_TRUE(params.contains("blocks.0.ln1.weight") && params.contains("blocks.0.ln2.bias"));
    const int64_t D = 3;
    for (int64_t b = 0; b < 2; ++b)
        for (int64_t t = 0; t < 4; ++t) {
            Vec e(D);
            double mean = 0, var = 0;
            for (int64_t c = 0; c < D; ++c)
                mean += (e[size_t(c)] = tokens[b][t][c].item<double>()) / D;
            for (int64_t c = 0; c < D; ++c)
                var += (e[size_t(c)] - mean) * (e[size_t(c)] - mean) / D;
            Vec ln(D);
            for (int64_t c = 0; c < D; ++c)
                ln[size_t(c)] = (e[size_t(c)] - mean) / std::sqrt(var + 1e-5);  // gain 1, bias 0
            Vec hidden = matVec(w_in, ln);
            for (int64_t j = 0; j < 4 * D; ++j) {
                const double u = hidden[size_t(j)] + b_in[j].item<double>();
                hidden[size_t(j)] = 0.5 * u * (1 + std::tanh(std::sqrt(2 / M_PI) * (u + 0.044715 * u * u * u)));
            }
            const Vec m = matVec(w_out, hidden);
            for (int64_t c = 0; c < D; ++c)
                EXPECT_NEAR(got[b][t][c].item<double>(), e[size_t(c)] + m[size_t(c)] + b_out[c].item<double>(), 1e-9);
        }
}

TEST(LsaOptions, SinusoidalPositionsAreRotations)
{
    const torch::Tensor pe = icl::sinusoidalPositions(12, 6, torch::kFloat64);
    for (int64_t p = 0; p < 12; ++p)
        for (int64_t m = 0; m < 3; ++m) {
            const double omega = std::pow(10000.0, -2.0 * m / 6.0);
            EXPECT_NEAR(pe[p][2 * m].item<double>(), std::sin(p * omega), 1e-12);
            EXPECT_NEAR(pe[p][2 * m + 1].item<double>(), std::cos(p * omega), 1e-12);
        }
}

TEST(LsaOptions, InterleavedTokensSeparateXAndY)
{
    icl::LsaOptions o;
    o.input_dim = 2;
    o.interleaved = true;
    o.pos_dim = 4;
    icl::Lsa model(o);
    const auto p = linearPrompts(2, 2, 3, 9);
    const torch::Tensor t = model->embed(p);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{2, 7, 3}));
    for (int64_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(torch::equal(t.select(1, 2 * i).narrow(1, 0, 2), p.x.select(1, i).to(t.dtype())));
        EXPECT_EQ(t.select(1, 2 * i).select(1, 2).abs().max().item<double>(), 0.0);
        EXPECT_EQ(t.select(1, 2 * i + 1).narrow(1, 0, 2).abs().max().item<double>(), 0.0);
        EXPECT_TRUE(torch::equal(t.select(1, 2 * i + 1).select(1, 2), p.y.select(1, i).to(t.dtype())));
    }
    EXPECT_TRUE(torch::equal(t.select(1, 6).narrow(1, 0, 2), p.queryX().to(t.dtype())));
    EXPECT_EQ(t.select(1, 6).select(1, 2).abs().max().item<double>(), 0.0);
    EXPECT_EQ(model->contextTokens(3), 6);
    EXPECT_EQ(model->tokenDim(), 7);
    EXPECT_EQ(model->ySlot(), 2);
}

TEST(LsaOptions, FeatureMlpRepresentsEveryInput)
{
    icl::LsaOptions o;
    o.input_dim = 1;
    o.feature_mlp = {8};
    o.feature_dim = 5;
    icl::Lsa model(o);
    model->to(torch::kFloat64);
    model->initVarianceScaling(1.0, 2);
    const auto p = linearPrompts(3, 1, 4, 1);
    const torch::Tensor t = model->embed(p);
    ASSERT_EQ(t.sizes(), (std::vector<int64_t>{3, 5, 6}));
    const auto params = model->named_parameters();
    // φ(x) = W₂ relu(W₁ x + b₁) + b₂, by hand for one input
    const double x = p.x[1][2][0].item<double>();
    for (int64_t f = 0; f < 5; ++f) {
        double s = params["feature_mlp.1.bias"][f].item<double>();
        for (int64_t h = 0; h < 8; ++h)
            s += params["feature_mlp.1.weight"][f][h].item<double>()
                * std::max(0.0, params["feature_mlp.0.weight"][h][0].item<double>() * x
                                    + params["feature_mlp.0.bias"][h].item<double>());
        EXPECT_NEAR(t[1][2][f].item<double>(), s, 1e-12);
    }
    EXPECT_EQ(t[1][4][5].item<double>(), 0.0);  // the query's y-slot is empty
}

// A hand-built copying layer: with sinusoidal positions, W_Q rotates token k's code to token k+1's,
// W_K reads the code, W_V and W_O move the y-slot. Token 2i (x_i) then attends to 2i+1 (y_i) and
// receives y_i. The copy analysis must find exactly that.
TEST(CopyAnalysis, FindsTheCopyInHandBuiltWeights)
{
    icl::LsaOptions o;
    o.input_dim = 3;
    o.n_layers = 1;
    o.softmax_layers = 1;
    o.interleaved = true;
    o.pos_dim = 8;
    icl::Lsa model(o);
    model->to(torch::kFloat64);
    {
        torch::NoGradGuard guard;
        auto& w = model->layer(0);
        const int64_t ys = 3, pos0 = 4;
        for (int64_t m = 0; m < 4; ++m) {
            const double omega = std::pow(10000.0, -2.0 * m / 8.0), c = 200.0;
            const int64_t s = pos0 + 2 * m, k = s + 1;  // (sin, cos) pair
            // code(p+1) = R code(p): sin' = sin·cos ω + cos·sin ω, cos' = cos·cos ω − sin·sin ω
            w.w_q[0][s][s] = c * std::cos(omega);
            w.w_q[0][s][k] = c * std::sin(omega);
            w.w_q[0][k][s] = -c * std::sin(omega);
            w.w_q[0][k][k] = c * std::cos(omega);
            w.w_k[0][s][s] = 1.0;
            w.w_k[0][k][k] = 1.0;
        }
        w.w_v[0][ys][ys] = 1.0;
        w.w_o[0][ys][ys] = 1.0;
    }
    const auto p = linearPrompts(8, 3, 5, 21);
    const icl::CopyAnalysis a = icl::summariseCopy(icl::copyGradientNorms(*model, p), 5);
    EXPECT_EQ(a.tokens, 11);
    EXPECT_NEAR(a.next, 1.0, 1e-3);            // ∂(y-slot of x-token)/∂y_i ≈ attention weight ≈ 1
    EXPECT_NEAR(a.own, 2.0, 1e-3);             // the residual: ‖I₄‖_F over the data slots
    EXPECT_LT(a.other, 1e-3);
    EXPECT_GT(a.nextOtherRatio(), 1000.0);
    EXPECT_EQ(a.token_labels.front(), "x1");
    EXPECT_EQ(a.token_labels.back(), "query");

    // Without the copy weights (attention output switched off) there is nothing to find.
    {
        torch::NoGradGuard guard;
        model->layer(0).w_o.zero_();
    }
    const icl::CopyAnalysis none = icl::summariseCopy(icl::copyGradientNorms(*model, p), 5);
    EXPECT_LT(none.next, 1e-12);
}

TEST(CopyAnalysis, RefusesThePairLayout)
{
    icl::Lsa model(4, 1, 1, false);
    EXPECT_ANY_THROW(icl::copyGradientNorms(*model, linearPrompts(2, 3, 4, 1)));
}

} // namespace
