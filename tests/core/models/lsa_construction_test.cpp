// von Oswald et al. 2022, Proposition 1: an LSA layer with the constructed weights performs exactly one
// step of gradient descent on L(W) = (1/2N)·Σ(W x_i − y_i)². The reference here is an explicit loop over
// plain doubles, independent of the library's GD baseline.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/models/lsa_construction.h"
#include "core/baselines/baselines.h"
#include "core/tasks/prompts.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::linearPrompts;

// k GD steps from W = 0 with step η, in plain C++; returns the query prediction of each prompt.
std::vector<double> gdReference(const icl::PromptBatch& b, int k, double eta)
{
    const auto x = b.x.accessor<double, 3>();
    const auto y = b.y.accessor<double, 2>();
    const int64_t B = b.batchSize(), N = b.nContext(), d = b.dim();
    std::vector<double> out(B);
    for (int64_t p = 0; p < B; ++p) {
        std::vector<double> w(d, 0.0);
        for (int step = 0; step < k; ++step) {
            std::vector<double> grad(d, 0.0);
            for (int64_t i = 0; i < N; ++i) {
                double r = -y[p][i];
                for (int64_t j = 0; j < d; ++j)
                    r += w[j] * x[p][i][j];
                for (int64_t j = 0; j < d; ++j)
                    grad[j] += r * x[p][i][j] / double(N);
            }
            for (int64_t j = 0; j < d; ++j)
                w[j] -= eta * grad[j];
        }
        double pred = 0.0;
        for (int64_t j = 0; j < d; ++j)
            pred += w[j] * x[p][N][j];
        out[p] = pred;
    }
    return out;
}

double maxRelativeError(const torch::Tensor& got, const std::vector<double>& want)
{
    auto g = got.accessor<double, 1>();
    double worst = 0.0;
    for (size_t i = 0; i < want.size(); ++i)
        worst = std::max(worst, std::abs(g[i] - want[i]) / std::max(1e-12, std::abs(want[i])));
    return worst;
}

/// A one-layer, one-head LSA on d = `d` in float64 holding the GD construction with step size `eta` over N = `n`.
icl::Lsa oneLayerConstruction(int64_t d, double eta, int64_t n)
{
    icl::Lsa model(d + 1, 1, 1, false);
    model->to(torch::kFloat64);
    icl::applyGdConstruction(*model, eta, n);
    return model;
}

TEST(LsaConstruction, OneLayerEqualsOneGdStepExactly)
{
    const double eta = 1.37;
    const auto b = linearPrompts(64, 10, 10, 7);
    icl::Lsa model = oneLayerConstruction(10, eta, 10);
    const torch::Tensor pred = model->predict(b);
    EXPECT_LE(maxRelativeError(pred, gdReference(b, 1, eta)), 1e-10);

    // Closed form of the same prediction with W_0 = 0: ŷ = (η/N)·Σ y_i x_iᵀ x_q.
    auto x = b.x.accessor<double, 3>();
    auto y = b.y.accessor<double, 2>();
    for (int64_t p = 0; p < 4; ++p) {
        double want = 0.0;
        for (int64_t i = 0; i < 10; ++i) {
            double dot = 0.0;
            for (int64_t j = 0; j < 10; ++j)
                dot += x[p][i][j] * x[p][10][j];
            want += eta / 10.0 * y[p][i] * dot;
        }
        EXPECT_NEAR(pred[p].item<double>(), want, 1e-10 * std::max(1.0, std::abs(want)));
    }
}

TEST(LsaConstruction, TokensBecomeResidualsOfTheUpdatedModel)
{
    // Each context token (x_j, y_j) becomes (x_j, y_j − ΔW x_j) with ΔW = (η/N)·Σ y_i x_iᵀ.
    const double eta = 0.9;
    const auto b = linearPrompts(8, 5, 7, 3);
    icl::Lsa model = oneLayerConstruction(5, eta, 7);
    const torch::Tensor out = model->forward(icl::pairTokens(b), 7);
    auto x = b.x.accessor<double, 3>();
    auto y = b.y.accessor<double, 2>();
    auto o = out.accessor<double, 3>();
    for (int64_t p = 0; p < 8; ++p) {
        std::vector<double> dw(5, 0.0);
        for (int64_t i = 0; i < 7; ++i)
            for (int64_t j = 0; j < 5; ++j)
                dw[j] += eta / 7.0 * y[p][i] * x[p][i][j];
        for (int64_t t = 0; t < 7; ++t) {
            double dwx = 0.0;
            for (int64_t j = 0; j < 5; ++j) {
                dwx += dw[j] * x[p][t][j];
                EXPECT_DOUBLE_EQ(o[p][t][j], x[p][t][j]);  // x part untouched
            }
            EXPECT_NEAR(o[p][t][5], y[p][t] - dwx, 1e-12);
        }
    }
}

TEST(LsaConstruction, KLayersEqualKGdSteps)
{
    const double eta = 0.8;
    const auto b = linearPrompts(32, 6, 12, 11);
    for (bool tied : {false, true}) {
        for (int k : {2, 3, 5}) {
            icl::Lsa model(7, k, 1, tied);
            model->to(torch::kFloat64);
            icl::applyGdConstruction(*model, eta, 12);
            EXPECT_LE(maxRelativeError(model->predict(b), gdReference(b, k, eta)), 1e-10)
                << "K = " << k << (tied ? " tied" : " untied");
        }
    }
}

TEST(LsaConstruction, ExtraHeadsAreSilenced)
{
    const auto b = linearPrompts(16, 4, 6, 5);
    icl::Lsa model(5, 2, 3, false);
    model->initVarianceScaling(1.0, 1);  // non-zero weights everywhere first
    model->to(torch::kFloat64);
    icl::applyGdConstruction(*model, 1.1, 6);
    EXPECT_LE(maxRelativeError(model->predict(b), gdReference(b, 2, 1.1)), 1e-10);
}

// GD++ with explicit per-layer updates in plain C++ (pre-layer values on the right-hand side):
//   x_j ← x_j − γ_l Σ_i x_i (x_iᵀ x_j),  r_j ← r_j − (η_l/N) Σ_i r_i (x_iᵀ x_j),  r_q starts at 0, ŷ = −r_q.
std::vector<double> gdPlusPlusReference(const icl::PromptBatch& b, const std::vector<double>& eta,
                                        const std::vector<double>& gamma)
{
    const auto xa = b.x.accessor<double, 3>();
    const auto ya = b.y.accessor<double, 2>();
    const int64_t B = b.batchSize(), N = b.nContext(), d = b.dim();
    std::vector<double> out(B);
    for (int64_t p = 0; p < B; ++p) {
        std::vector<std::vector<double>> x(N + 1, std::vector<double>(d));
        std::vector<double> r(N + 1, 0.0);
        for (int64_t t = 0; t <= N; ++t) {
            for (int64_t j = 0; j < d; ++j)
                x[t][j] = xa[p][t][j];
            r[t] = t < N ? ya[p][t] : 0.0;
        }
        for (size_t l = 0; l < eta.size(); ++l) {
            auto nx = x;
            auto nr = r;
            for (int64_t t = 0; t <= N; ++t) {
                for (int64_t i = 0; i < N; ++i) {
                    double dot = 0.0;
                    for (int64_t j = 0; j < d; ++j)
                        dot += x[i][j] * x[t][j];
                    for (int64_t j = 0; j < d; ++j)
                        nx[t][j] -= gamma[l] * x[i][j] * dot;
                    nr[t] -= eta[l] / double(N) * r[i] * dot;
                }
            }
            x = nx;
            r = nr;
        }
        out[p] = -r[N];
    }
    return out;
}

TEST(LsaConstruction, GdPlusPlusEqualsItsExplicitPreconditionedUpdate)
{
    const auto b = linearPrompts(24, 5, 9, 21);
    const std::vector<double> eta = {1.1, 0.7, 1.4}, gamma = {0.02, 0.05, 0.01};
    icl::Lsa model(6, 3, 1, false);
    model->to(torch::kFloat64);
    icl::applyGdPlusPlusConstruction(*model, eta, gamma, 9);
    const auto want = gdPlusPlusReference(b, eta, gamma);
    EXPECT_LE(maxRelativeError(model->predict(b), want), 1e-10);
    // The baseline implementation computes the same thing.
    const torch::Tensor baseline = icl::predictGdPlusPlus(b, torch::tensor(eta, torch::kFloat64),
                                                          torch::tensor(gamma, torch::kFloat64));
    EXPECT_LE(maxRelativeError(baseline, want), 1e-10);
    // γ = 0 is plain GD with per-layer step sizes; with equal η it is K GD steps.
    const auto plain = gdPlusPlusReference(b, {0.9, 0.9}, {0.0, 0.0});
    EXPECT_LE(maxRelativeError(torch::tensor(plain, torch::kFloat64), gdReference(b, 2, 0.9)), 1e-10);
}

TEST(LsaConstruction, GdPlusPlusRejectsWrongSizes)
{
    icl::Lsa model(4, 2, 1, false);
    EXPECT_THROW(icl::applyGdPlusPlusConstruction(*model, {1.0}, {0.0}, 5), std::runtime_error);
}

TEST(GdPlusPlus, FittedScalarsBeatPlainGdWithTheSameDepth)
{
    // von Oswald et al. §4: the curvature correction makes K GD++ layers better than K GD steps.
    icl::TaskConfig t;
    t.d = 10;
    t.n_context = 10;
    const auto fit = icl::fitGdPlusPlus(t, 3, 99);
    const auto test = icl::sampleLinearRegression(t, 4000, 5, torch::kFloat64);
    const double gdppLoss = icl::halfMse(icl::predictGdPlusPlus(test, torch::tensor(fit.eta, torch::kFloat64),
                                                                torch::tensor(fit.gamma, torch::kFloat64)),
                                         test.queryY())
                                .item<double>();
    const double gdLoss = icl::halfMse(icl::predictGd(test, 3, icl::lineSearchEta(test, 3)), test.queryY()).item<double>();
    EXPECT_LT(gdppLoss, gdLoss);
    // The last layer's input transform never reaches the prediction, so its γ gets no gradient.
    EXPECT_EQ(fit.gamma.back(), 0.0);
    EXPECT_NE(fit.gamma.front(), 0.0);
}

// With one step γ never reaches the query, so fitting GD++-1 is fitting plain GD's η on the fit's prompts,
// whose optimum has the closed form η* = Σ g·y_q / Σ g² with g = (1/N)·Σ_i y_i x_iᵀx_q (computed here by hand).
TEST(GdPlusPlus, OneStepFitIsTheClosedFormGdStepSize)
{
    icl::TaskConfig t;
    t.d = 4;
    t.n_context = 6;
    const uint64_t seed = 17;
    const auto fit = icl::fitGdPlusPlus(t, 1, seed, false, 2048);
    const auto b = icl::samplePrompts(t, 2048, seed, torch::kFloat64);
    const int64_t N = t.n_context;
    const torch::Tensor X = b.x.narrow(1, 0, N), y = b.y.narrow(1, 0, N), xq = b.x.select(1, N);
    const torch::Tensor g = (X * xq.unsqueeze(1)).sum(2).mul(y).sum(1) / double(N);
    const torch::Tensor yq = b.y.select(1, N);
    const double etaStar = ((g * yq).sum() / (g * g).sum()).item<double>();
    ASSERT_EQ(fit.eta.size(), 1u);
    EXPECT_NEAR(fit.eta[0], etaStar, 1e-6 * std::abs(etaStar));
}

// The fit is a minimum on its prompts: the gradient of the loss in (η, γ) vanishes there; the tied fit repeats
// one (η, γ) and, being the untied family restricted, cannot beat the untied fit.
TEST(GdPlusPlus, FitIsStationaryAndTiedIsTheRestrictedFamily)
{
    icl::TaskConfig t;
    t.d = 5;
    t.n_context = 6;
    const uint64_t seed = 5;
    const int64_t n = 2048;
    const auto b = icl::samplePrompts(t, n, seed, torch::kFloat64);
    auto lossAt = [&](const torch::Tensor& eta, const torch::Tensor& gamma) {
        return icl::halfMse(icl::predictGdPlusPlus(b, eta, gamma), b.queryY());
    };
    const auto untied = icl::fitGdPlusPlus(t, 3, seed, false, n);
    torch::Tensor eta = torch::tensor(untied.eta, torch::kFloat64).requires_grad_(true);
    torch::Tensor gamma = torch::tensor(untied.gamma, torch::kFloat64).requires_grad_(true);
    const torch::Tensor l = lossAt(eta, gamma);
    l.backward();
    EXPECT_LT(eta.grad().abs().max().item<double>(), 1e-5);
    EXPECT_LT(gamma.grad().abs().max().item<double>(), 1e-5);
    // … where the start of the fit (η = 1, γ = 0) is far from stationary.
    torch::Tensor eta0 = torch::ones({3}, torch::kFloat64).requires_grad_(true);
    lossAt(eta0, torch::zeros({3}, torch::kFloat64)).backward();
    EXPECT_GT(eta0.grad().abs().max().item<double>(), 1e-2);

    const auto tied = icl::fitGdPlusPlus(t, 3, seed, true, n);
    ASSERT_EQ(tied.eta.size(), 3u);
    EXPECT_EQ(tied.eta[0], tied.eta[2]);
    EXPECT_EQ(tied.gamma[0], tied.gamma[1]);
    EXPECT_NE(tied.gamma[0], 0.0);
    const double tiedLoss
        = lossAt(torch::tensor(tied.eta, torch::kFloat64), torch::tensor(tied.gamma, torch::kFloat64)).item<double>();
    EXPECT_GE(tiedLoss, l.item<double>() - 1e-12);
    // Perturbing the tied scalars together raises the loss: a minimum within the tied family.
    for (const double h : {-1e-3, 1e-3}) {
        std::vector<double> e = tied.eta;
        for (auto& v : e)
            v *= 1.0 + h;
        EXPECT_GT(lossAt(torch::tensor(e, torch::kFloat64), torch::tensor(tied.gamma, torch::kFloat64)).item<double>(),
                  tiedLoss);
    }
}

} // namespace
