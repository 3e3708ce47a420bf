// Linear probes against closed forms and independent computations (normal equations, augmented least
// squares, brute-force leave-one-out), and their scores on planted maps and pure noise.
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <limits>
#include <string>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/analysis/probe.h"
#include "core/error.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::maxAbsDiff;

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

torch::Tensor randn(std::vector<int64_t> shape, uint64_t seed)
{
    auto gen = at::detail::createCPUGenerator(seed);
    return torch::randn(shape, gen, kF64);
}

torch::Tensor centred(const torch::Tensor& t) { return t - t.mean(0); }

/// W of ridge on the mean objective by an LU solve of the normal equations (XcᵀXc + nλI)W = XcᵀYc.
torch::Tensor normalEquations(const torch::Tensor& x, const torch::Tensor& y, double lambda)
{
    const torch::Tensor xc = centred(x), yc = centred(y);
    const int64_t n = x.size(0), p = x.size(1);
    return torch::linalg::solve(torch::matmul(xc.t(), xc) + double(n) * lambda * torch::eye(p, kF64),
                                torch::matmul(xc.t(), yc), true);
}

/// Features with non-zero means and unequal scales, so that the intercept and centring matter.
torch::Tensor features(int64_t n, int64_t p, uint64_t seed)
{
    const torch::Tensor scale = torch::linspace(0.5, 2.0, p, kF64);
    const torch::Tensor offset = torch::linspace(-3.0, 3.0, p, kF64);
    return randn({n, p}, seed) * scale + offset;
}

template <class F>
::testing::AssertionResult errorMatches(F&& f, const std::string& fragment)
{
    try {
        f();
    } catch (const icl::Error& e) {
        if (std::string(e.what()).find(fragment) != std::string::npos)
            return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "message \"" << e.what() << "\" lacks \"" << fragment << "\"";
    }
    return ::testing::AssertionFailure() << "expected icl::Error containing \"" << fragment << "\"";
}

TEST(ProbeRidge, RecoversAPlantedLinearMapExactly)
{
    const int64_t n = 200, p = 6, q = 3;
    const torch::Tensor A = randn({p, q}, 1), b = randn({q}, 2);
    const torch::Tensor x = features(n, p, 3);
    const torch::Tensor y = torch::matmul(x, A) + b;
    for (double lambda : {0.0, 1e-12}) {
        const icl::RidgeProbe probe = icl::fitRidgeProbe(x, y, lambda);
        EXPECT_LE(maxAbsDiff(probe.weights, A), 1e-8) << "lambda " << lambda;
        EXPECT_LE(maxAbsDiff(probe.bias, b), 1e-8) << "lambda " << lambda;
        EXPECT_EQ(probe.weights.scalar_type(), torch::kFloat64);
    }

    // Scored on fresh rows with λ by cross-validation: the smallest λ on the grid wins and the test error
    // is ~0 (λ = 1e-6 against covariance eigenvalues ≥ 0.25 biases W by ~1e-6 relative).
    const torch::Tensor x_test = features(500, p, 4);
    const icl::ProbeScore s = icl::scoreProbe(x, y, x_test, torch::matmul(x_test, A) + b);
    EXPECT_DOUBLE_EQ(s.lambda, 1e-6);
    EXPECT_LE(s.normalised_mse, 1e-9);
    EXPECT_NEAR(s.r2, 1.0, 1e-9);
}

TEST(ProbeRidge, EqualsNormalEquationsAndAugmentedLeastSquares)
{
    const int64_t n = 15, p = 4, q = 2;
    const double lambda = 0.3;
    const torch::Tensor x = features(n, p, 10), y = randn({n, q}, 11) + 5.0;
    const icl::RidgeProbe probe = icl::fitRidgeProbe(x, y, lambda);

    // (XcᵀXc + nλI)W = XcᵀYc by LU; b = ȳ − Wᵀx̄.
    const torch::Tensor w = normalEquations(x, y, lambda);
    EXPECT_LE(maxAbsDiff(probe.weights, w), 1e-10);
    EXPECT_LE(maxAbsDiff(probe.bias, y.mean(0) - torch::matmul(x.mean(0), w)), 1e-10);

    // Without centring at all: least squares over (W, b) on [X 1; √(nλ)·I 0] against [Y; 0] penalises W
    // and leaves b free — the objective (1/n)·Σ‖y − Wᵀx − b‖² + λ‖W‖² times n.
    const torch::Tensor top = torch::cat({x, torch::ones({n, 1}, kF64)}, 1);
    const torch::Tensor bottom = torch::cat({std::sqrt(n * lambda) * torch::eye(p, kF64), torch::zeros({p, 1}, kF64)}, 1);
    const torch::Tensor sol = std::get<0>(torch::linalg::lstsq(torch::cat({top, bottom}, 0),
                                                               torch::cat({y, torch::zeros({p, q}, kF64)}, 0),
                                                               c10::nullopt, "gelsd"));
    EXPECT_LE(maxAbsDiff(probe.weights, sol.slice(0, 0, p)), 1e-10);
    EXPECT_LE(maxAbsDiff(probe.bias, sol[p]), 1e-10);

    // Predictions are XW + b.
    EXPECT_LE(maxAbsDiff(icl::predictProbe(probe, x), torch::matmul(x, w) + probe.bias), 1e-10);
}

TEST(ProbeRidge, WorksWithMoreFeaturesThanRows)
{
    const int64_t n = 8, p = 20, q = 3;
    const double lambda = 0.5;
    const torch::Tensor x = features(n, p, 20), y = randn({n, q}, 21);
    const torch::Tensor xc = centred(x), yc = centred(y);

    // Dual form Xcᵀ(XcXcᵀ + nλI)⁻¹Yc, and the primal normal equations (invertible for λ > 0).
    const torch::Tensor dual
        = torch::matmul(xc.t(), torch::linalg::solve(torch::matmul(xc, xc.t()) + n * lambda * torch::eye(n, kF64), yc, true));
    const icl::RidgeProbe probe = icl::fitRidgeProbe(x, y, lambda);
    EXPECT_LE(maxAbsDiff(probe.weights, dual), 1e-10);
    EXPECT_LE(maxAbsDiff(probe.weights, normalEquations(x, y, lambda)), 1e-10);
    EXPECT_LE(maxAbsDiff(probe.bias, y.mean(0) - torch::matmul(x.mean(0), dual)), 1e-10);

    // λ = 0: the minimum-norm interpolant pinv(Xc)·Yc, which fits the fit rows exactly.
    const icl::RidgeProbe ls = icl::fitRidgeProbe(x, y, 0.0);
    EXPECT_LE(maxAbsDiff(ls.weights, torch::matmul(torch::linalg::pinv(xc), yc)), 1e-9);
    EXPECT_LE(maxAbsDiff(icl::predictProbe(ls, x), y), 1e-9);
}

/// Ridge weights from the SVD Xc = U diag(σ) Vᵀ, keeping σ > 1e-8·σ_max: W = V diag(σ/(σ² + nλ)) UᵀYc.
torch::Tensor svdRidge(const torch::Tensor& x, const torch::Tensor& y, double lambda)
{
    const torch::Tensor xc = centred(x), yc = centred(y);
    const auto [u, sigma, vh] = torch::linalg::svd(xc, false, c10::nullopt);
    const torch::Tensor keep = (sigma > 1e-8 * sigma.max()).nonzero().squeeze(1);
    const torch::Tensor sk = sigma.index_select(0, keep);
    const torch::Tensor uk = u.index_select(1, keep), vk = vh.index_select(0, keep).t();
    const double shift = double(x.size(0)) * lambda;
    return torch::matmul(vk, (sk / (sk * sk + shift)).unsqueeze(1) * torch::matmul(uk.t(), yc));
}

TEST(ProbeRidge, RankDeficientFeaturesAtEveryPenaltyEqualTheSvdFormula)
{
    // p = 12 columns of rank 5 (each column a mix of 5 sources, at scales from 1e-2 to 1e2): the
    // Gram matrix is singular, so large penalties are solved by a Cholesky factor of G + nλI and
    // tiny ones (and λ = 0) by the truncated eigendecomposition; both must give the SVD formula's
    // minimum-norm ridge solution (predictions on new rows of the same subspace too).
    const int64_t n = 300, p = 12, q = 2, r = 5;
    const torch::Tensor mix = randn({r, p}, 30) * torch::logspace(-2, 2, p, 10.0, kF64);
    const torch::Tensor x = torch::matmul(randn({n, r}, 31), mix) + 1.5;
    const torch::Tensor y = randn({n, q}, 32);
    const torch::Tensor x_new = torch::matmul(randn({50, r}, 33), mix) + 1.5;
    for (double lambda : {0.0, 1e-14, 1e-6, 1e-3, 1.0, 1e3}) {
        const torch::Tensor w = svdRidge(x, y, lambda);
        const icl::RidgeProbe probe = icl::fitRidgeProbe(x, y, lambda);
        const double scale = w.abs().max().item<double>();
        EXPECT_LE(maxAbsDiff(probe.weights, w), 1e-7 * scale) << "lambda " << lambda;
        const torch::Tensor pred = torch::matmul(x_new - x.mean(0), w) + y.mean(0);
        EXPECT_LE(maxAbsDiff(icl::predictProbe(probe, x_new), pred), 1e-8) << "lambda " << lambda;
    }
    // Cross-validation over the same penalties sees the same solutions: its curve is finite and its
    // best penalty is on the grid.
    const icl::LambdaCv cv = icl::crossValidateLambda(x, y, {0.0, 1e-14, 1e-6, 1e-3, 1.0, 1e3});
    for (double m : cv.mean_mse)
        EXPECT_TRUE(std::isfinite(m));
}

/// Leave-one-out MSE by brute force with the normal equations (fold assignment is then irrelevant).
double bruteForceLoo(const torch::Tensor& x, const torch::Tensor& y, double lambda)
{
    const int64_t n = x.size(0);
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const torch::Tensor keep = torch::cat({torch::arange(0, i), torch::arange(i + 1, n)});
        const torch::Tensor xt = x.index_select(0, keep), yt = y.index_select(0, keep);
        const torch::Tensor w = normalEquations(xt, yt, lambda);
        const torch::Tensor pred = torch::matmul(x[i] - xt.mean(0), w) + yt.mean(0);
        total += (pred - y[i]).pow(2).mean().item<double>();
    }
    return total / double(n);
}

TEST(ProbeCrossValidation, LeaveOneOutEqualsBruteForce)
{
    const std::vector<double> grid{0.01, 0.1, 1.0};
    for (int64_t p : {3, 20}) {  // primal path (p < n − 1) and kernel path (p > n − 1)
        const int64_t n = 12;
        const torch::Tensor x = features(n, p, 30 + p), y = randn({n, 2}, 31) + torch::matmul(x, randn({p, 2}, 32));
        const icl::LambdaCv cv = icl::crossValidateLambda(x, y, grid, int(n), 7);
        ASSERT_EQ(cv.mean_mse.size(), grid.size());
        for (size_t g = 0; g < grid.size(); ++g)
            EXPECT_NEAR(cv.mean_mse[g], bruteForceLoo(x, y, grid[g]), 1e-9 * cv.mean_mse[g]) << "p " << p;
    }
}

TEST(ProbeCrossValidation, PureNoiseGivesNormalisedErrorOneAndALargeLambda)
{
    const int64_t p = 20, q = 2;
    const torch::Tensor xf = features(1000, p, 40), xt = features(2000, p, 41);
    const torch::Tensor yf = 2.0 * randn({1000, q}, 42) + 1.0, yt = 2.0 * randn({2000, q}, 43) + 1.0;
    const icl::LambdaCv cv = icl::crossValidateLambda(xf, yf, icl::defaultLambdaGrid());
    // Any W ≠ 0 only adds variance: OLS would cost ≈ p/n_train = 2.5 % over predicting the mean.
    EXPECT_GT(cv.mean_mse.front(), cv.mean_mse.back());
    EXPECT_GE(cv.best_lambda, 1.0);

    // With W ≈ 0 the probe predicts the fit mean b, and test MSE / test variance = 1 + (b − ȳ_test)²/var
    // ≥ 1, with (b − ȳ_test)²/var ~ 1/n_fit + 1/n_test ≈ 0.0015; an OLS-sized W would add ≈ 0.02.
    const icl::ProbeScore s = icl::scoreProbe(xf, yf, xt, yt);
    EXPECT_NEAR(s.normalised_mse, 1.0, 0.02);
    EXPECT_NEAR(s.target_variance, 4.0, 4.0 * 0.1);  // σ² = 4; sd of the estimate ≈ 4·√(2/2000)
    EXPECT_NEAR(s.r2, 1.0 - s.normalised_mse, 1e-15);
    EXPECT_DOUBLE_EQ(s.lambda, cv.best_lambda);
}

TEST(ProbeCrossValidation, ChosenLambdaIsNearTheBestOnTheGrid)
{
    // Noisy planted map: y = ⟨a, x⟩ + σz, a ~ N(0, I/p), σ = 1. On the mean objective the Bayes penalty
    // is σ²/(τ²·n) = 30/200 = 0.15.
    const int64_t n = 200, n_test = 4000, p = 30;
    const torch::Tensor a = randn({p, 1}, 50) / std::sqrt(double(p));
    const torch::Tensor xf = randn({n, p}, 51), xt = randn({n_test, p}, 52);
    const torch::Tensor yf = torch::matmul(xf, a) + randn({n, 1}, 53);
    const torch::Tensor yt = torch::matmul(xt, a) + randn({n_test, 1}, 54);
    std::vector<double> grid;
    for (int i = 0; i <= 20; ++i)
        grid.push_back(std::pow(10.0, -3.0 + 0.2 * i));  // 1e-3 … 10

    // Brute force: the test MSE of every λ on the grid, each probe from the normal equations.
    double best = std::numeric_limits<double>::infinity();
    for (double lambda : grid) {
        const torch::Tensor w = normalEquations(xf, yf, lambda);
        const torch::Tensor pred = torch::matmul(xt - xf.mean(0), w) + yf.mean(0);
        best = std::min(best, (pred - yt).pow(2).mean().item<double>());
    }
    const icl::ProbeScore s = icl::scoreProbe(xf, yf, xt, yt, grid);
    EXPECT_LE(s.mse, 1.05 * best) << "chosen lambda " << s.lambda;
    EXPECT_GE(s.lambda, 0.015);  // within a factor 10 of the Bayes penalty
    EXPECT_LE(s.lambda, 1.5);
    EXPECT_DOUBLE_EQ(icl::chooseLambdaByCv(xf, yf, grid), s.lambda);
}

TEST(ProbeLayers, NoiseLayerScoresOneAndPlantedLayerZero)
{
    const int64_t n_fit = 600, n_test = 1000, q = 2;
    const torch::Tensor h1_fit = features(n_fit, 5, 60), h1_test = features(n_test, 5, 61);
    const torch::Tensor A = randn({5, q}, 62), b = randn({q}, 63);
    const torch::Tensor y_fit = torch::matmul(h1_fit, A) + b, y_test = torch::matmul(h1_test, A) + b;
    // Layer 0 is independent of the targets and has a different width.
    const std::vector<torch::Tensor> fit{randn({n_fit, 8}, 64), h1_fit};
    const std::vector<torch::Tensor> test{randn({n_test, 8}, 65).to(torch::kFloat32), h1_test};
    const std::vector<icl::ProbeScore> s = icl::probeLayers(fit, y_fit, test, y_test);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_NEAR(s[0].normalised_mse, 1.0, 0.05);
    EXPECT_LE(s[1].normalised_mse, 1e-9);

    const icl::ProbeCurve c = icl::makeProbeCurve("phi", "x", s, n_fit, n_test);
    EXPECT_EQ(c.layer_labels, (std::vector<std::string>{"embed", "block 0"}));
    ASSERT_EQ(c.normalised_mse.size(), 2u);
    EXPECT_DOUBLE_EQ(c.normalised_mse[1], s[1].normalised_mse);
    EXPECT_DOUBLE_EQ(c.lambda[0], s[0].lambda);
    EXPECT_EQ(c.n_fit, n_fit);
    EXPECT_EQ(c.n_test, n_test);
    EXPECT_EQ(icl::probeLayerLabels(3).back(), "block 2");
}

TEST(ProbeLayers, SharedAcrossTargetsEqualsEachTargetAlone)
{
    // Primal (n ≫ p) and dual (p > the training folds) regimes; targets of different widths, one planted.
    for (const auto& [n_fit, p] : std::vector<std::pair<int64_t, int64_t>>{{300, 6}, {20, 30}}) {
        const int64_t n_test = 50;
        const std::vector<torch::Tensor> fit{features(n_fit, p, 70), features(n_fit, p + 2, 71)};
        const std::vector<torch::Tensor> test{features(n_test, p, 72), features(n_test, p + 2, 73)};
        const torch::Tensor A = randn({p, 2}, 74);
        const std::vector<torch::Tensor> yf{torch::matmul(fit[0], A), randn({n_fit, 1}, 75), randn({n_fit, 3}, 76)};
        const std::vector<torch::Tensor> yt{torch::matmul(test[0], A), randn({n_test, 1}, 77),
                                            randn({n_test, 3}, 78)};
        const auto shared = icl::probeLayersForTargets(fit, yf, test, yt);
        ASSERT_EQ(shared.size(), yf.size());
        for (size_t t = 0; t < yf.size(); ++t) {
            const std::vector<icl::ProbeScore> alone = icl::probeLayers(fit, yf[t], test, yt[t]);
            ASSERT_EQ(shared[t].size(), alone.size());
            for (size_t l = 0; l < alone.size(); ++l) {
                // the same operations on each target's columns: equal bit for bit
                EXPECT_EQ(shared[t][l].lambda, alone[l].lambda) << "n " << n_fit << " target " << t << " layer " << l;
                EXPECT_EQ(shared[t][l].cv_mse, alone[l].cv_mse) << "n " << n_fit << " target " << t;
                EXPECT_EQ(shared[t][l].mse, alone[l].mse) << "n " << n_fit << " target " << t;
                EXPECT_EQ(shared[t][l].normalised_mse, alone[l].normalised_mse) << "n " << n_fit << " target " << t;
                // and each equals scoreProbe on that layer alone
                const icl::ProbeScore s = icl::scoreProbe(fit[l], yf[t], test[l], yt[t]);
                EXPECT_EQ(shared[t][l].lambda, s.lambda);
                EXPECT_NEAR(shared[t][l].normalised_mse, s.normalised_mse, 1e-12 * (1.0 + s.normalised_mse));
            }
        }
        if (n_fit > p)
            EXPECT_LE(shared[0][0].normalised_mse, 1e-9);  // the planted map on layer 0
    }
    EXPECT_TRUE(errorMatches([] { icl::probeLayersForTargets({randn({10, 2}, 1)}, {}, {randn({10, 2}, 2)}, {}); },
                             "targets"));
}

TEST(ProbeErrors, BadShapesAndValuesThrowWithAClearMessage)
{
    const torch::Tensor x = randn({10, 3}, 70), y = randn({10, 2}, 71);
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, randn({9, 2}, 72), 0.1); }, "different numbers of rows"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(torch::zeros({0, 3}, kF64), torch::zeros({0, 2}, kF64), 0.1); }, "no rows"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, torch::zeros({10, 0}, kF64), 0.1); }, "no columns"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, randn({10}, 73), 0.1); }, "2-D"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, torch::Tensor(), 0.1); }, "undefined"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, y, -1.0); }, "lambda"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, y.clone().index_put_({0, 0}, NAN), 0.1); }, "NaN"));
    EXPECT_TRUE(errorMatches([&] { icl::fitRidgeProbe(x, torch::ones({10, 2}, torch::kLong), 0.1); }, "floating"));
    EXPECT_TRUE(errorMatches([&] { icl::predictProbe(icl::fitRidgeProbe(x, y, 0.1), randn({4, 5}, 74)); }, "do not match"));
    EXPECT_TRUE(errorMatches([&] { icl::predictProbe(icl::RidgeProbe{}, x); }, "not fitted"));
    EXPECT_TRUE(errorMatches([&] { icl::chooseLambdaByCv(x, y, {}); }, "grid is empty"));
    EXPECT_TRUE(errorMatches([&] { icl::chooseLambdaByCv(x, y, {0.1}, 11); }, "at least 11 rows"));
    EXPECT_TRUE(errorMatches([&] { icl::chooseLambdaByCv(x, y, {0.1}, 1); }, "at least 2 folds"));
    EXPECT_TRUE(errorMatches([&] { icl::scoreProbe(x, y, randn({5, 4}, 75), randn({5, 2}, 76)); }, "columns"));
    EXPECT_TRUE(errorMatches([&] { icl::scoreProbe(x, y, randn({5, 3}, 75), randn({5, 1}, 76)); }, "columns"));
    EXPECT_TRUE(errorMatches([&] { icl::probeLayers({x, x}, y, {x}, y); }, "2 fit layers but 1 test layers"));
    EXPECT_TRUE(errorMatches([&] { icl::probeLayers({}, y, {}, y); }, "no layers"));
    EXPECT_TRUE(errorMatches([&] { icl::probeLayers({x, randn({9, 3}, 77)}, y, {x, x}, y); }, "layer 1"));
}

TEST(ProbeScore, ConstantTestTargetsGiveNaN)
{
    const torch::Tensor x = randn({20, 3}, 80), y = randn({20, 1}, 81);
    const icl::ProbeScore s = icl::scoreProbe(x, y, x, torch::full({20, 1}, 2.0, kF64), {0.1});
    EXPECT_EQ(s.target_variance, 0.0);
    EXPECT_TRUE(std::isnan(s.normalised_mse));
    EXPECT_GT(s.mse, 0.0);
}

} // namespace
