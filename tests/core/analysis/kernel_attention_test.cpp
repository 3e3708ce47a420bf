// Kernel view of softmax attention (Ren & Liu 2023, docs/science.md §3) against plain-loop computations,
// autograd and closed forms.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/linalg.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/analysis/kernel_attention.h"
#include "core/error.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::maxAbsDiff;

torch::Tensor gaussian(std::vector<int64_t> shape, uint64_t seed, double scale = 1.0)
{
    auto gen = at::detail::createCPUGenerator(seed);
    return scale * torch::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat64));
}

/// max |a − b| / max |b|
double relErr(const torch::Tensor& a, const torch::Tensor& b)
{
    return maxAbsDiff(a, b) / b.to(torch::kFloat64).abs().max().item<double>();
}

/// Softmax attention of one head by plain loops: q [T, D], k [N, D], v [N, Dv]; key i visible to
/// query t iff visible(t, i). Returns {output [T, Dv], attention [T, N]}.
template <class Visible>
std::pair<torch::Tensor, torch::Tensor> loopSoftmax(const torch::Tensor& q, const torch::Tensor& k,
                                                    const torch::Tensor& v, Visible visible)
{
    const int64_t T = q.size(0), N = k.size(0), D = q.size(1), Dv = v.size(1);
    auto qa = q.accessor<double, 2>(), ka = k.accessor<double, 2>(), va = v.accessor<double, 2>();
    torch::Tensor out = torch::zeros({T, Dv}, torch::kFloat64), att = torch::zeros({T, N}, torch::kFloat64);
    auto oa = out.accessor<double, 2>(), aa = att.accessor<double, 2>();
    for (int64_t t = 0; t < T; ++t) {
        std::vector<double> s(size_t(N), -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < N; ++i) {
            if (!visible(t, i))
                continue;
            double dot = 0.0;
            for (int64_t c = 0; c < D; ++c)
                dot += qa[t][c] * ka[i][c];
            s[size_t(i)] = dot;
            mx = std::max(mx, dot);
        }
        double z = 0.0;
        for (int64_t i = 0; i < N; ++i)
            z += visible(t, i) ? std::exp(s[size_t(i)] - mx) : 0.0;
        for (int64_t i = 0; i < N; ++i) {
            aa[t][i] = visible(t, i) ? std::exp(s[size_t(i)] - mx) / z : 0.0;
            for (int64_t c = 0; c < Dv; ++c)
                oa[t][c] += aa[t][i] * va[i][c];
        }
    }
    return {out, att};
}

const auto kAll = [](int64_t, int64_t) { return true; };
const auto kCausal = [](int64_t t, int64_t i) { return i <= t; };

/// φ(u) = m^{-1/2}·exp(ω_rᵀu − ‖u‖²/2) by loops, u [D], omega [D, m] → [m].
torch::Tensor loopFeatures(const torch::Tensor& u, const torch::Tensor& omega)
{
    const int64_t D = omega.size(0), m = omega.size(1);
    auto ua = u.accessor<double, 1>();
    auto wa = omega.accessor<double, 2>();
    double norm2 = 0.0;
    for (int64_t c = 0; c < D; ++c)
        norm2 += ua[c] * ua[c];
    torch::Tensor phi = torch::empty({m}, torch::kFloat64);
    for (int64_t r = 0; r < m; ++r) {
        double dot = 0.0;
        for (int64_t c = 0; c < D; ++c)
            dot += wa[c][r] * ua[c];
        phi[r] = std::exp(dot - 0.5 * norm2) / std::sqrt(double(m));
    }
    return phi;
}

/// The step size of the reference model's gradient step at one query: η = 1 / Σ_j φ(k_j)ᵀφ(q), in plain loops.
double featureStepSize(const std::vector<torch::Tensor>& phiK, const torch::Tensor& phiQ)
{
    double z = 0.0;
    for (const torch::Tensor& phi : phiK)
        z += (phi * phiQ).sum().item<double>();
    return 1.0 / z;
}

TEST(KernelAttention, ExactReferenceModelEqualsSoftmaxAttention)
{
    const int64_t B = 3, T = 5, N = 7, D = 4, Dv = 3;
    const torch::Tensor q = gaussian({B, T, D}, 1), k = gaussian({B, N, D}, 2), v = gaussian({B, N, Dv}, 3);
    const icl::AttentionResult dual = icl::referenceModelExact(q, k, v);
    const icl::AttentionResult soft = icl::softmaxAttention(q, k, v);
    ASSERT_EQ(dual.output.sizes(), (std::vector<int64_t> {B, T, Dv}));
    ASSERT_EQ(dual.attention.sizes(), (std::vector<int64_t> {B, T, N}));
    for (int64_t b = 0; b < B; ++b) {
        const auto [out, att] = loopSoftmax(q[b], k[b], v[b], kAll);
        EXPECT_LE(relErr(dual.output[b], out), 1e-12);
        EXPECT_LE(relErr(dual.attention[b], att), 1e-12);
        EXPECT_LE(relErr(soft.output[b], out), 1e-12);
        EXPECT_LE(relErr(soft.attention[b], att), 1e-12);
    }
}

TEST(KernelAttention, ExactReferenceModelWithHeadsAndCausalMaskFromFloat32)
{
    // [B, H, T, D] float32 inputs (as captured from a model), causal mask [T, N].
    const int64_t B = 2, H = 3, T = 6, N = 6, D = 5, Dv = 4;
    const torch::Tensor q = gaussian({B, H, T, D}, 4).to(torch::kFloat32);
    const torch::Tensor k = gaussian({B, H, N, D}, 5).to(torch::kFloat32);
    const torch::Tensor v = gaussian({B, H, N, Dv}, 6).to(torch::kFloat32);
    const torch::Tensor mask = torch::ones({T, N}, torch::kBool).tril();
    const icl::AttentionResult dual = icl::referenceModelExact(q, k, v, mask);
    EXPECT_EQ(dual.output.scalar_type(), torch::kFloat64);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const auto [out, att]
                = loopSoftmax(q[b][h].to(torch::kFloat64), k[b][h].to(torch::kFloat64),
                              v[b][h].to(torch::kFloat64), kCausal);
            EXPECT_LE(relErr(dual.output[b][h], out), 1e-12);
            EXPECT_LE(relErr(dual.attention[b][h], att), 1e-12);
        }
    // The first query sees only the first key.
    EXPECT_DOUBLE_EQ(dual.attention[0][0][0][0].item<double>(), 1.0);
}

TEST(KernelAttention, ExactReferenceModelDoesNotOverflowOnLargeScores)
{
    // Scores of several hundred: exp overflows float64 without the per-row shift.
    const torch::Tensor q = gaussian({2, 4, 3}, 7, 30.0), k = gaussian({2, 5, 3}, 8, 10.0), v = gaussian({2, 5, 2}, 9);
    const icl::AttentionResult dual = icl::referenceModelExact(q, k, v);
    ASSERT_TRUE(torch::isfinite(dual.output).all().item<bool>());
    for (int64_t b = 0; b < 2; ++b) {
        const auto [out, att] = loopSoftmax(q[b], k[b], v[b], kAll);
        EXPECT_LE(relErr(dual.output[b], out), 1e-12);
        EXPECT_LE(maxAbsDiff(dual.attention[b], att), 1e-12);
    }
}

TEST(KernelRandomFeatures, FeaturesFollowTheFormula)
{
    const torch::Tensor omega = icl::drawOmega(3, 10, 11);
    const torch::Tensor u = gaussian({4, 3}, 12, 0.7);
    const torch::Tensor phi = icl::positiveRandomFeatures(u, omega);
    ASSERT_EQ(phi.sizes(), (std::vector<int64_t> {4, 10}));
    for (int64_t i = 0; i < 4; ++i)
        EXPECT_LE(relErr(phi[i], loopFeatures(u[i], omega)), 1e-14);
    EXPECT_TRUE((phi > 0).all().item<bool>());
}

TEST(KernelRandomFeatures, OmegaIsSeededStandardNormal)
{
    const torch::Tensor a = icl::drawOmega(4, 3, 5), b = icl::drawOmega(4, 3, 5), c = icl::drawOmega(4, 3, 6);
    ASSERT_EQ(a.sizes(), (std::vector<int64_t> {4, 3}));
    EXPECT_EQ(a.scalar_type(), torch::kFloat64);
    EXPECT_TRUE(torch::equal(a, b));
    EXPECT_FALSE(torch::equal(a, c));
    const int64_t n = 200000;
    const torch::Tensor w = icl::drawOmega(2, n / 2, 7);
    EXPECT_NEAR(w.mean().item<double>(), 0.0, 5.0 / std::sqrt(double(n)));                  // SE 1/√n
    EXPECT_NEAR(w.var().item<double>(), 1.0, 5.0 * std::sqrt(2.0 / double(n)));              // SE √(2/n)
    EXPECT_THROW(icl::drawOmega(0, 3, 1), icl::Error);
    EXPECT_THROW(icl::drawOmega(3, 0, 1), icl::Error);
}

TEST(KernelRandomFeatures, KernelEstimateIsUnbiased)
{
    // φ(a)ᵀφ(b) over many independent ω: the mean lies within 4 standard errors of exp(aᵀb).
    const int64_t D = 3, m = 8, S = 4000;
    const std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs = {
        {{0.3, -0.2, 0.5}, {0.4, 0.1, 0.2}},    // aᵀb > 0
        {{0.5, 0.1, -0.3}, {-0.4, 0.2, 0.3}},   // aᵀb < 0
        {{0.2, 0.6, -0.1}, {0.2, 0.6, -0.1}},   // a = b
    };
    for (const auto& [av, bv] : pairs) {
        const torch::Tensor ab = torch::stack({torch::tensor(av, torch::kFloat64), torch::tensor(bv, torch::kFloat64)});
        double exact = 0.0;
        for (int64_t c = 0; c < D; ++c)
            exact += av[size_t(c)] * bv[size_t(c)];
        exact = std::exp(exact);
        std::vector<double> est;
        for (int64_t s = 0; s < S; ++s) {
            const torch::Tensor phi = icl::positiveRandomFeatures(ab, icl::drawOmega(D, m, 1000 + uint64_t(s)));
            est.push_back((phi[0] * phi[1]).sum().item<double>());
        }
        double mean = 0.0, ss = 0.0;
        for (double e : est)
            mean += e;
        mean /= double(S);
        for (double e : est)
            ss += (e - mean) * (e - mean);
        const double se = std::sqrt(ss / double(S - 1) / double(S));
        EXPECT_GT(se, 0.0);
        EXPECT_LE(std::abs(mean - exact), 4.0 * se) << "exp(aᵀb) = " << exact << ", mean " << mean << ", SE " << se;
        EXPECT_LE(se, 0.02 * exact);  // the test has power: the interval is narrow
    }
}

TEST(KernelRandomFeatures, ReferenceModelIsOneGradientStepOnTheContrastiveLoss)
{
    // f(u) = W φ(u), W_0 = 0, L(W) = −Σ_i v_iᵀ W φ(k_i) (gradient by autograd), η = 1/Σ_j φ(k_j)ᵀφ(q):
    // f(q) after W_1 = W_0 − η∇L(W_0) must be the random-feature reference model's output.
    const int64_t T = 3, N = 4, D = 3, Dv = 2, m = 16;
    const torch::Tensor q = gaussian({T, D}, 21, 0.6), k = gaussian({N, D}, 22, 0.6), v = gaussian({N, Dv}, 23);
    const torch::Tensor omega = icl::drawOmega(D, m, 24);
    const icl::AttentionResult rf = icl::referenceModelRandomFeatures(q, k, v, omega);
    std::vector<torch::Tensor> phiK;
    for (int64_t i = 0; i < N; ++i)
        phiK.push_back(loopFeatures(k[i], omega));
    for (int64_t t = 0; t < T; ++t) {
        const torch::Tensor phiQ = loopFeatures(q[t], omega);
        const double eta = featureStepSize(phiK, phiQ);
        torch::Tensor W = torch::zeros({Dv, m}, torch::kFloat64).requires_grad_(true);
        torch::Tensor loss = torch::zeros({}, torch::kFloat64);
        for (int64_t i = 0; i < N; ++i)
            loss = loss - torch::dot(v[i], torch::mv(W, phiK[size_t(i)]));
        loss.backward();
        const torch::Tensor W1 = (W - eta * W.grad()).detach();
        EXPECT_LE(relErr(rf.output[t], torch::mv(W1, phiQ)), 1e-12);
        for (int64_t i = 0; i < N; ++i)
            EXPECT_NEAR(rf.attention[t][i].item<double>(), eta * (phiK[size_t(i)] * phiQ).sum().item<double>(), 1e-14);
    }
}

TEST(KernelRandomFeatures, ApproachesSoftmaxAttentionAsMGrows)
{
    const torch::Tensor q = gaussian({2, 5, 4}, 31, 0.5), k = gaussian({2, 6, 4}, 32, 0.5), v = gaussian({2, 6, 3}, 33);
    const icl::AttentionResult soft = icl::softmaxAttention(q, k, v);
    const double coarse = maxAbsDiff(icl::referenceModelRandomFeatures(q, k, v, icl::drawOmega(4, 16, 1)).attention,
                                     soft.attention);
    const double fine = maxAbsDiff(icl::referenceModelRandomFeatures(q, k, v, icl::drawOmega(4, 65536, 1)).attention,
                                   soft.attention);
    EXPECT_LT(fine, coarse);
    EXPECT_LT(fine, 0.01);
}

TEST(KernelRandomFeatures, BatchesComputedInSlicesEqualEachPromptAlone)
{
    // 3 × 4 leading indices with m = 8192 features: the batch is worked through a few leading indices at
    // a time; each prompt alone (2-D, never sliced) is the independent reference.
    const int64_t T = 9, N = 8, D = 4, m = 8192;
    const torch::Tensor q = gaussian({3, 4, T, D}, 41, 0.5), k = gaussian({3, 4, N, D}, 42, 0.5),
                        v = gaussian({3, 4, N, 2}, 43);
    const torch::Tensor omega = icl::drawOmega(D, m, 7);
    const icl::AttentionResult batch = icl::referenceModelRandomFeatures(q, k, v, omega);
    const torch::Tensor loss = icl::referenceModelLoss(q, k, v, 5, 0.5, omega);
    for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < 4; ++b) {
            const icl::AttentionResult one = icl::referenceModelRandomFeatures(q[a][b], k[a][b], v[a][b], omega);
            EXPECT_LE(maxAbsDiff(batch.attention[a][b], one.attention), 1e-13) << a << ", " << b;
            EXPECT_LE(maxAbsDiff(batch.output[a][b], one.output), 1e-13) << a << ", " << b;
            const torch::Tensor l = icl::referenceModelLoss(q[a][b], k[a][b], v[a][b], 5, 0.5, omega);
            EXPECT_LE(maxAbsDiff(loss[a][b], l), 1e-12 * (1.0 + l.abs().max().item<double>())) << a << ", " << b;
        }
}

TEST(KernelSweep, ErrorFallsAsOneOverSqrtM)
{
    // Small query/key norms (‖q‖² ≈ 0.16): the random-feature estimator exp(ωᵀ(q + k) − …) is
    // log-normal with log-variance ‖q + k‖², and only for small norms does m ≤ 4096 reach its
    // 1/√m regime (with ‖q‖² ≈ 1 the fitted slope over the same m is about −0.3).
    const torch::Tensor q = gaussian({4, 8, 4}, 41, 0.2), k = gaussian({4, 8, 4}, 42, 0.2), v = gaussian({4, 8, 3}, 43);
    icl::KernelSweepOptions o;
    o.m = {16, 64, 256, 1024, 4096};
    o.seeds = 8;
    o.seed = 7;
    int64_t calls = 0;
    const icl::KernelSweep s = icl::sweepRandomFeatures(q, k, v, o, {}, [&](int64_t done, int64_t total) {
        EXPECT_EQ(done, ++calls);
        EXPECT_EQ(total, 40);
        return true;
    });
    EXPECT_EQ(calls, 40);
    ASSERT_EQ(s.attention_rmse.mean.size(), 5u);
    ASSERT_EQ(s.output_rmse.std.size(), 5u);
    EXPECT_NEAR(s.attention_rmse.slope, -0.5, 0.1);
    EXPECT_NEAR(s.output_rmse.slope, -0.5, 0.1);
    EXPECT_NEAR(s.attention_max_abs.slope, -0.5, 0.15);
    EXPECT_NEAR(s.output_max_abs.slope, -0.5, 0.15);
    EXPECT_LE(s.exact_output_max_abs, 1e-12);
    EXPECT_LE(s.exact_attention_max_abs, 1e-12);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_GT(s.attention_rmse.std[i], 0.0);
        EXPECT_LE(s.attention_rmse.mean[i], s.attention_max_abs.mean[i]);
    }
}

TEST(KernelSweep, CancelsAndRejectsBadOptions)
{
    const torch::Tensor q = gaussian({1, 2, 2}, 51), k = gaussian({1, 3, 2}, 52), v = gaussian({1, 3, 1}, 53);
    icl::KernelSweepOptions o;
    o.m = {4, 8};
    o.seeds = 2;
    EXPECT_THROW(icl::sweepRandomFeatures(q, k, v, o, {}, [](int64_t, int64_t) { return false; }), icl::Error);
    o.m = {};
    EXPECT_THROW(icl::sweepRandomFeatures(q, k, v, o), icl::Error);
    o.m = {0, 8};
    EXPECT_THROW(icl::sweepRandomFeatures(q, k, v, o), icl::Error);
    o.m = {4, 8};
    o.seeds = 0;
    EXPECT_THROW(icl::sweepRandomFeatures(q, k, v, o), icl::Error);
}

TEST(KernelSweep, LogLogLineOfAPowerLaw)
{
    const std::vector<double> x = {16, 64, 256, 1024};
    std::vector<double> y;
    for (double xi : x)
        y.push_back(3.0 * std::pow(xi, -0.7));
    const auto [slope, intercept] = icl::fitLogLogLine(x, y);
    EXPECT_NEAR(slope, -0.7, 1e-12);
    EXPECT_NEAR(intercept, std::log(3.0), 1e-12);
    EXPECT_TRUE(std::isnan(icl::fitLogLogLine({16}, {1.0}).first));
    EXPECT_TRUE(std::isnan(icl::fitLogLogLine({16, 16}, {1.0, 2.0}).first));
    EXPECT_TRUE(std::isnan(icl::fitLogLogLine({16, 32}, {1.0, 0.0}).first));
}

/// Σ_{i,j visible} v_iᵀv_j exp(k_iᵀk_j) and Σ_{j visible} exp(k_jᵀq_t) for one prompt, by loops.
template <class Visible>
std::pair<double, double> loopGramAndNormaliser(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                                int64_t t, Visible visible)
{
    const int64_t N = k.size(0);
    double g2 = 0.0, z = 0.0;
    for (int64_t i = 0; i < N; ++i) {
        if (!visible(t, i))
            continue;
        z += std::exp(torch::dot(k[i], q[t]).item<double>());
        for (int64_t j = 0; j < N; ++j)
            if (visible(t, j))
                g2 += torch::dot(v[i], v[j]).item<double>() * std::exp(torch::dot(k[i], k[j]).item<double>());
    }
    return {g2, z};
}

TEST(KernelReferenceLoss, ContrastiveLossFallsLinearlyWithoutPenalty)
{
    // λ = 0: W_s = s·η·G, so L(W_s) = −s·η‖G‖² = −s·Σ_ij v_iᵀv_j exp(k_iᵀk_j) / Σ_j exp(k_jᵀq).
    const int64_t B = 2, T = 5, N = 5, D = 3, Dv = 2, S = 4;
    const torch::Tensor q = gaussian({B, T, D}, 61, 0.5), k = gaussian({B, N, D}, 62, 0.5), v = gaussian({B, N, Dv}, 63);
    const torch::Tensor mask = torch::ones({T, N}, torch::kBool).tril();
    const torch::Tensor loss = icl::referenceModelLoss(q, k, v, S, 0.0, {}, mask);
    ASSERT_EQ(loss.sizes(), (std::vector<int64_t> {B, T, S + 1}));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const auto [g2, z] = loopGramAndNormaliser(q[b], k[b], v[b], t, kCausal);
            for (int64_t s = 0; s <= S; ++s)
                EXPECT_NEAR(loss[b][t][s].item<double>(), -double(s) * g2 / z, 1e-12 * (1.0 + g2 / z * s));
            for (int64_t s = 1; s <= S; ++s)
                EXPECT_LT(loss[b][t][s].item<double>(), loss[b][t][s - 1].item<double>());
        }
}

TEST(KernelReferenceLoss, PenalisedLossFollowsExplicitGradientDescentWithRandomFeatures)
{
    // L_λ(W) = −Σ_i v_iᵀ W φ(k_i) + (λ/2)‖W‖², W_{s+1} = W_s − η∇L_λ(W_s) with autograd gradients.
    const int64_t T = 3, N = 4, D = 3, Dv = 2, m = 32, S = 6;
    const double lambda = 1.5;
    const torch::Tensor q = gaussian({T, D}, 71, 0.5), k = gaussian({N, D}, 72, 0.5), v = gaussian({N, Dv}, 73);
    const torch::Tensor omega = icl::drawOmega(D, m, 74);
    const torch::Tensor loss = icl::referenceModelLoss(q, k, v, S, lambda, omega);
    ASSERT_EQ(loss.sizes(), (std::vector<int64_t> {T, S + 1}));
    std::vector<torch::Tensor> phiK;
    for (int64_t i = 0; i < N; ++i)
        phiK.push_back(loopFeatures(k[i], omega));
    auto lossOf = [&](const torch::Tensor& W) {
        torch::Tensor l = 0.5 * lambda * W.pow(2).sum();
        for (int64_t i = 0; i < N; ++i)
            l = l - torch::dot(v[i], torch::mv(W, phiK[size_t(i)]));
        return l;
    };
    for (int64_t t = 0; t < T; ++t) {
        const torch::Tensor phiQ = loopFeatures(q[t], omega);
        const double eta = featureStepSize(phiK, phiQ);
        ASSERT_GT(eta * lambda, 0.1);  // the penalty matters within a few steps
        ASSERT_LT(eta * lambda, 1.0);
        torch::Tensor W = torch::zeros({Dv, m}, torch::kFloat64);
        for (int64_t s = 0; s <= S; ++s) {
            W.requires_grad_(true);
            const torch::Tensor l = lossOf(W);
            EXPECT_NEAR(loss[t][s].item<double>(), l.item<double>(), 1e-12 * (1.0 + std::abs(l.item<double>())));
            if (s > 0)
                EXPECT_LT(loss[t][s].item<double>(), loss[t][s - 1].item<double>());
            l.backward();
            W = (W - eta * W.grad()).detach();
        }
    }
}

TEST(KernelReferenceLoss, PenalisedLossConvergesToItsMinimum)
{
    // With 0 < ηλ < 2 the iterates converge to W* = G/λ, where L_λ(W*) = −‖G‖²/(2λ).
    const int64_t T = 2, N = 3, D = 2, Dv = 2;
    const double lambda = 1.0;
    const torch::Tensor q = gaussian({T, D}, 81, 0.5), k = gaussian({N, D}, 82, 0.5), v = gaussian({N, Dv}, 83);
    const torch::Tensor loss = icl::referenceModelLoss(q, k, v, 400, lambda);
    for (int64_t t = 0; t < T; ++t) {
        const auto [g2, z] = loopGramAndNormaliser(q, k, v, t, kAll);
        EXPECT_NEAR(loss[t][400].item<double>(), -g2 / (2.0 * lambda), 1e-10 * g2);
    }
    const icl::ReferenceLossCurve c = icl::referenceLossCurve(q, k, v, 3, lambda);
    EXPECT_EQ(c.kernel, "exact");
    EXPECT_EQ(c.step, (std::vector<int64_t> {0, 1, 2, 3}));
    ASSERT_EQ(c.loss.size(), 4u);
    EXPECT_NEAR(c.loss[2], 0.5 * (loss[0][2] + loss[1][2]).item<double>(), 1e-12);
}

TEST(KernelErrors, MseAndMaxAbsPerHead)
{
    // Head h of the approximation is off by 0.1·(h + 1) everywhere, plus 1.0 at one output entry.
    const int64_t B = 2, H = 3, T = 4, N = 5, Dv = 2;
    icl::AttentionResult exact {gaussian({B, H, T, Dv}, 91), gaussian({B, H, T, N}, 92)};
    const torch::Tensor off = 0.1 * torch::arange(1, H + 1, torch::kFloat64).view({1, H, 1, 1});
    icl::AttentionResult approx {exact.output + off, exact.attention - off};
    approx.output[1][2][3][1] += 1.0;
    const icl::KernelErrors e = icl::kernelErrors(approx, exact);
    ASSERT_EQ(e.output_mse.size(), size_t(H));
    const double cells = double(B * T * Dv);
    for (int64_t h = 0; h < H; ++h) {
        const double d = 0.1 * double(h + 1);
        EXPECT_NEAR(e.attention_mse[size_t(h)], d * d, 1e-12);
        EXPECT_NEAR(e.attention_max_abs[size_t(h)], d, 1e-12);
        if (h < 2) {
            EXPECT_NEAR(e.output_mse[size_t(h)], d * d, 1e-12);
            EXPECT_NEAR(e.output_max_abs[size_t(h)], d, 1e-12);
        }
    }
    EXPECT_NEAR(e.output_mse[2], ((cells - 1) * 0.09 + 1.3 * 1.3) / cells, 1e-12);
    EXPECT_NEAR(e.output_max_abs[2], 1.3, 1e-12);

    // Without a head dimension: one entry.
    const icl::KernelErrors one = icl::kernelErrors({approx.output[0], approx.attention[0]},
                                                    {exact.output[0], exact.attention[0]});
    ASSERT_EQ(one.attention_mse.size(), 1u);
    EXPECT_NEAR(one.attention_mse[0], (0.01 + 0.04 + 0.09) / 3.0, 1e-12);
    EXPECT_THROW(icl::kernelErrors({approx.output, approx.attention}, {exact.output[0], exact.attention}), icl::Error);
}

TEST(KernelAttention, RejectsBadShapesAndMasks)
{
    const torch::Tensor q = gaussian({2, 3, 4}, 1), k = gaussian({2, 5, 4}, 2), v = gaussian({2, 5, 2}, 3);
    EXPECT_THROW(icl::softmaxAttention(q, gaussian({2, 5, 3}, 4), v), icl::Error);  // D differs
    EXPECT_THROW(icl::referenceModelExact(q, k, gaussian({2, 4, 2}, 5)), icl::Error);  // N differs
    EXPECT_THROW(icl::referenceModelExact(q, gaussian({3, 5, 4}, 6), v), icl::Error);  // batch differs
    EXPECT_THROW(icl::referenceModelRandomFeatures(q, k, v, icl::drawOmega(3, 8, 1)), icl::Error);
    EXPECT_THROW(icl::positiveRandomFeatures(q, icl::drawOmega(3, 8, 1)), icl::Error);
    EXPECT_THROW(icl::referenceModelExact(q, k, v, torch::ones({3, 4}, torch::kBool)), icl::Error);
    torch::Tensor blind = torch::ones({3, 5}, torch::kBool);
    blind[1].fill_(false);
    EXPECT_THROW(icl::referenceModelExact(q, k, v, blind), icl::Error);
    EXPECT_THROW(icl::referenceModelLoss(q, k, v, -1), icl::Error);
    EXPECT_THROW(icl::referenceModelLoss(q, k, v, 2, -1.0), icl::Error);
}

// S = V diag(λ) Vᵀ built from a random rotation: the square roots are V diag(√λ) Vᵀ and V diag(1/√λ) Vᵀ
// (closed forms). A matrix that should be semi-definite but has a slightly negative eigenvalue from
// rounding (−1e-14 beside 2) gets finite roots whose product is the identity, the floor 1e-12 · 2 in
// place of that eigenvalue.
TEST(SymmetricSqrt, ClosedFormsAndANegativeRoundingEigenvalue)
{
    torch::manual_seed(5);
    const torch::Tensor V = std::get<0>(torch::linalg_qr(torch::randn({4, 4}, torch::kFloat64)));
    auto fromEigen = [&](const std::vector<double>& l) {
        return torch::matmul(V * torch::tensor(l, torch::kFloat64), V.t());
    };
    const auto [root, invRoot] = icl::symmetricSqrtAndInverseSqrt(fromEigen({2.0, 0.5, 0.25, 1e-3}));
    EXPECT_TRUE(torch::allclose(root, fromEigen({std::sqrt(2.0), std::sqrt(0.5), 0.5, std::sqrt(1e-3)}), 1e-12, 1e-12));
    EXPECT_TRUE(torch::allclose(invRoot, fromEigen({1 / std::sqrt(2.0), 1 / std::sqrt(0.5), 2.0, 1 / std::sqrt(1e-3)}),
                                1e-10, 1e-10));

    const auto [r, ir] = icl::symmetricSqrtAndInverseSqrt(fromEigen({2.0, 0.5, 0.25, -1e-14}));
    EXPECT_TRUE(torch::isfinite(r).all().item<bool>());
    EXPECT_TRUE(torch::isfinite(ir).all().item<bool>());
    EXPECT_TRUE(torch::allclose(torch::matmul(r, ir), torch::eye(4, torch::kFloat64), 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(r, fromEigen({std::sqrt(2.0), std::sqrt(0.5), 0.5, std::sqrt(2e-12)}), 1e-9, 1e-9));
}

} // namespace
