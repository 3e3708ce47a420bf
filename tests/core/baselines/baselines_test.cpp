// Baselines against independent computations and closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <utility>
#include <vector>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/baselines/baselines.h"
#include "core/runtime/blas.h"
#include "core/tasks/prompts.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::maxAbsDiff;
using icl::test::linearPrompts;

/// The default experiment config with the evaluation's baselines `baselines` and GD step counts `gd_steps`.
icl::ExperimentConfig configWithBaselines(std::vector<std::string> baselines, std::vector<int64_t> gd_steps)
{
    icl::ExperimentConfig c;
    c.eval.baselines = std::move(baselines);
    c.eval.gd_steps = std::move(gd_steps);
    return c;
}

TEST(LeastSquares, EqualsNormalEquationsWhenOverdetermined)
{
    const auto b = linearPrompts(50, 5, 12, 1, 0.3);
    const torch::Tensor X = b.contextX(), y = b.contextY().unsqueeze(-1);
    // ŵ = (XᵀX)⁻¹ Xᵀy, solved by LU — a different route from the pseudo-inverse.
    const torch::Tensor w = torch::linalg::solve(torch::matmul(X.transpose(1, 2), X),
                                                 torch::matmul(X.transpose(1, 2), y), true)
                                .squeeze(-1);
    const torch::Tensor want = (w * b.queryX()).sum(-1);
    EXPECT_LE(maxAbsDiff(icl::predictLeastSquares(b), want), 1e-9);
}

TEST(LeastSquares, IsMinimumNormWhenUnderdetermined)
{
    const auto b = linearPrompts(50, 8, 3, 2);
    const torch::Tensor X = b.contextX(), y = b.contextY().unsqueeze(-1);
    // Minimum-norm solution ŵ = Xᵀ(XXᵀ)⁻¹y.
    const torch::Tensor w
        = torch::matmul(X.transpose(1, 2), torch::linalg::solve(torch::matmul(X, X.transpose(1, 2)), y, true))
              .squeeze(-1);
    EXPECT_LE(maxAbsDiff(icl::predictLeastSquares(b), (w * b.queryX()).sum(-1)), 1e-9);
}

TEST(LeastSquares, NoiselessSquareSystemRecoversTheTask)
{
    const auto b = linearPrompts(20, 10, 10, 3);
    EXPECT_LE(maxAbsDiff(icl::predictLeastSquares(b), b.queryY()), 1e-7);
}

TEST(Ridge, EqualsLeastSquaresOnTheAugmentedSystem)
{
    // Ridge with penalty λ is least squares on [X; √λ·I], [y; 0].
    const double lambda = 0.7;
    const auto b = linearPrompts(30, 6, 9, 4, 0.5);
    const int64_t B = 30, d = 6;
    const torch::Tensor Xa = torch::cat(
        {b.contextX(), std::sqrt(lambda) * torch::eye(d, torch::kFloat64).unsqueeze(0).expand({B, d, d})}, 1);
    const torch::Tensor ya = torch::cat({b.contextY(), torch::zeros({B, d}, torch::kFloat64)}, 1).unsqueeze(-1);
    const torch::Tensor w = std::get<0>(torch::linalg::lstsq(Xa, ya, c10::nullopt, "gelsd")).squeeze(-1);
    EXPECT_LE(maxAbsDiff(icl::predictRidge(b, lambda), (w * b.queryX()).sum(-1)), 1e-9);
    EXPECT_LE(maxAbsDiff(icl::predictRidge(b, 0.0), icl::predictLeastSquares(b)), 1e-12);
}

TEST(Ridge, BayesPenaltyIsNoiseOverPriorVariance)
{
    icl::ExperimentConfig c;
    c.task.noise_std = 0.5;
    c.task.w_scale = 2.0;
    EXPECT_DOUBLE_EQ(icl::ridgeLambda(c), 0.25 / 4.0);
    c.eval.ridge_lambda = 0.3;
    EXPECT_DOUBLE_EQ(icl::ridgeLambda(c), 0.3);
}

TEST(GradientDescent, OneStepIsTheClosedForm)
{
    const double eta = 1.3;
    const auto b = linearPrompts(40, 4, 7, 5);
    // W_1 = (η/N)·Σ y_i x_i
    const torch::Tensor w1 = eta / 7.0 * (b.contextY().unsqueeze(-1) * b.contextX()).sum(1);
    EXPECT_LE(maxAbsDiff(icl::predictGd(b, 1, eta), (w1 * b.queryX()).sum(-1)), 1e-12);
}

TEST(GradientDescent, ManyStepsWithSmallEtaConvergeToLeastSquares)
{
    const auto b = linearPrompts(20, 3, 15, 6, 0.2);
    EXPECT_LE(maxAbsDiff(icl::predictGd(b, 3000, 1.0), icl::predictLeastSquares(b)), 1e-6);
}

TEST(GradientDescent, ClosedFormEtaEqualsFineLineSearch)
{
    const auto b = linearPrompts(4000, 10, 10, 8);
    const double closed = icl::closedFormEtaOneStep(b);
    const double searched = icl::lineSearchEta(b, 1);
    EXPECT_NEAR(closed, searched, 1e-6 * closed);
}

TEST(GradientDescent, SpectralFormEqualsIteratedSteps)
{
    // GdSpectrum's closed form against predictGd's explicit iteration W_{t+1} = W_t − η∇L(W_t), for
    // over- and under-determined prompts (N < d: A is singular, λ_j = 0 directions), several k and η,
    // including an η past the stable range (the iterates grow, and both must agree on that too).
    for (const auto& [d, n] : std::vector<std::pair<int64_t, int64_t>>{{5, 12}, {8, 3}, {20, 40}}) {
        const auto b = linearPrompts(64, d, n, uint64_t(10 + d), 0.1);
        const icl::GdSpectrum spectrum(b);
        for (int64_t k : {1, 2, 5, 12})
            for (double eta : {0.05, 0.7, 1.9, 4.0}) {
                const torch::Tensor iterated = icl::predictGd(b, k, eta);
                const std::vector<double> closed = spectrum.predictions(k, eta);
                const double scale = 1.0 + iterated.abs().max().item<double>();
                for (int64_t i = 0; i < 64; ++i)
                    ASSERT_NEAR(closed[size_t(i)], iterated[i].item<double>(), 1e-10 * scale)
                        << "d = " << d << ", N = " << n << ", k = " << k << ", η = " << eta;
                const double loss = icl::halfMse(iterated, b.queryY()).item<double>();
                EXPECT_NEAR(spectrum.loss(k, eta), loss, 1e-10 * (1.0 + loss));
                EXPECT_NEAR(spectrum.losses(12, eta)[size_t(k - 1)], loss, 1e-10 * (1.0 + loss));
            }
    }
    // No in-context examples: every prediction is 0.
    const auto empty = linearPrompts(4, 3, 0, 1);
    for (double y : icl::GdSpectrum(empty).predictions(3, 1.0))
        EXPECT_EQ(y, 0.0);
}

TEST(GradientDescent, SpectralFormIsTheSameOnAnyThreadCount)
{
    // Enough work (prompts × d × k) for the blocks of prompts to be split over the intra-op threads: one, two or
    // three threads give the same bits, and a batch that is no whole number of blocks still equals the iterated steps.
    const int64_t B = 14010, k = 40;
    const auto b = linearPrompts(B, 8, 9, 77, 0.1);
    const icl::GdSpectrum spectrum(b);
    std::vector<std::vector<double>> byThreads;
    for (int threads : {1, 2, 3}) {
        const icl::ScopedThreads scope(threads);
        byThreads.push_back(spectrum.predictions(k, 0.4));
    }
    EXPECT_TRUE(icl::test::sameBits(byThreads[0], byThreads[1]));
    EXPECT_TRUE(icl::test::sameBits(byThreads[0], byThreads[2]));
    const torch::Tensor iterated = icl::predictGd(b, k, 0.4);
    const double scale = 1.0 + iterated.abs().max().item<double>();
    for (int64_t i = 0; i < B; ++i)
        ASSERT_NEAR(byThreads[0][size_t(i)], iterated[i].item<double>(), 1e-10 * scale) << "prompt " << i;
}

TEST(GradientDescent, LineSearchIsTheSameOnAnyThreadCount)
{
    // The grid's η points and the refinements of the k run as parallel tasks: the same η on one or two threads.
    const auto b = linearPrompts(300, 5, 10, 3, 0.2);
    std::map<int64_t, double> one, two;
    {
        const icl::ScopedThreads scope(1);
        one = icl::lineSearchEtas(b, {1, 2, 3, 5, 8});
    }
    {
        const icl::ScopedThreads scope(2);
        two = icl::lineSearchEtas(b, {1, 2, 3, 5, 8});
    }
    ASSERT_EQ(one.size(), 5u);
    for (const auto& [k, eta] : one)
        EXPECT_EQ(eta, two.at(k)) << "k = " << k;
}

TEST(GradientDescent, LineSearchFindsTheMinimumOfIteratedSteps)
{
    // The searched η of GD-k is no worse than any point of a fine grid evaluated with the iterated
    // predictGd (an independent route), and the joint search equals the one-k searches.
    const auto b = linearPrompts(500, 5, 10, 31, 0.2);
    const std::map<int64_t, double> joint = icl::lineSearchEtas(b, {2, 3, 6});
    for (int64_t k : {2, 3, 6}) {
        const double eta = joint.at(k);
        EXPECT_DOUBLE_EQ(eta, icl::lineSearchEta(b, k));
        const double best = icl::halfMse(icl::predictGd(b, k, eta), b.queryY()).item<double>();
        for (double e = 0.0; e <= 6.0; e += 0.01)
            EXPECT_LE(best, icl::halfMse(icl::predictGd(b, k, e), b.queryY()).item<double>() + 1e-12)
                << "k = " << k << ", η = " << e;
    }
    EXPECT_THROW(icl::lineSearchEtas(b, {0}), std::exception);
}

TEST(GradientDescent, BestEtaMatchesTheAnalyticValueForUniformInputs)
{
    // x ~ U(−1, 1)^d (variance s² = 1/3, E x⁴ = 1/5), w ~ N(0, I), d = N = 10 (docs/science.md §1):
    // E[g·y_q] = d·s⁴ and E[g²] = (1/N)·s²·(d·E x⁴ + d(d−1)s⁴) + ((N−1)/N)·d·s⁶,
    // so η* = 1.5152 and the loss 0.5·(E y² − E[g y]²/E[g²]) = 0.8249; predicting 0 costs d·s²/2 = 1.6667.
    const double s2 = 1.0 / 3.0, m4 = 0.2, d = 10, N = 10;
    const double egy = d * s2 * s2;
    const double egg = (1.0 / N) * s2 * (d * m4 + d * (d - 1) * s2 * s2) + ((N - 1) / N) * d * s2 * s2 * s2;
    const double etaStar = egy / egg;
    const double lossStar = 0.5 * (d * s2 - egy * egy / egg);
    ASSERT_NEAR(etaStar, 1.5152, 1e-4);

    const auto b = linearPrompts(200000, 10, 10, 9);
    const double eta = icl::closedFormEtaOneStep(b);
    EXPECT_NEAR(eta, etaStar, 0.02 * etaStar);
    const double loss = icl::halfMse(icl::predictGd(b, 1, etaStar), b.queryY()).item<double>();
    EXPECT_NEAR(loss, lossStar, 0.02 * lossStar);
    EXPECT_NEAR(icl::halfMse(icl::predictZero(b), b.queryY()).item<double>(), 5.0 / 3.0, 0.02);
}

TEST(Baselines, NamesAndDispatch)
{
    icl::ExperimentConfig c = configWithBaselines({"zero", "gd"}, {1, 3});
    EXPECT_EQ(icl::baselineNames(c.eval), (std::vector<std::string>{"zero", "gd_1", "gd_3"}));
    const auto b = linearPrompts(10, 3, 4, 1);
    EXPECT_THROW(icl::predictBaseline("gd_3", b, c, {}), std::runtime_error);
    EXPECT_THROW(icl::predictBaseline("knn_5", b, c, {}), std::runtime_error);
    icl::FittedBaselines fitted;
    fitted.eta["gd_3"] = 0.5;
    EXPECT_LE(maxAbsDiff(icl::predictBaseline("gd_3", b, c, fitted), icl::predictGd(b, 3, 0.5)), 0.0);
    c.eval.baselines = {"gd", "gd_plus_plus"};
    EXPECT_EQ(icl::baselineNames(c.eval), (std::vector<std::string>{"gd_1", "gd_3", "gdpp_3"}));
}

// "MLP features + GD" (von Oswald et al. §5) is GD on φ(x): with φ(x) = 2x it must be GD on the doubled
// inputs, whose one-step prediction is (η/N)·Σ y_i (2x_i)ᵀ(2x_q) = 4·(GD-1 at η on raw x).
TEST(Baselines, FeaturesGdIsGdOnTheFeatures)
{
    const icl::ExperimentConfig c = configWithBaselines({"zero", "features_gd"}, {1, 2});
    EXPECT_EQ(icl::baselineNames(c.eval), (std::vector<std::string>{"zero", "features_gd_1", "features_gd_2"}));
    const auto b = linearPrompts(50, 3, 6, 2);
    icl::FittedBaselines fitted;
    EXPECT_THROW(icl::predictBaseline("features_gd_1", b, c, fitted), std::runtime_error);
    fitted.features_gd["features_gd_1"] = {[](const torch::Tensor& x) { return 2.0 * x; }, 0.3};
    EXPECT_LE(maxAbsDiff(icl::predictBaseline("features_gd_1", b, c, fitted), 4.0 * icl::predictGd(b, 1, 0.3)), 1e-12);
    EXPECT_THROW(icl::fitFeaturesGd(c, 1, 0, 10), std::runtime_error);  // the default model has no feature MLP
}

// Meta-training the features for one GD step on sine regression must leave far less error than
// predicting 0: y = a·sin(x + φ) is linear in (sin x, cos x), which an MLP can represent.
TEST(Baselines, MetaLearnedFeaturesMakeOneGdStepWorkOnSines)
{
    icl::ExperimentConfig c;
    c.task.kind = "sine_regression";
    c.task.d = 1;
    c.task.n_context = 10;
    c.task.x_range = 5.0;
    c.model.feature_mlp = {32};
    c.model.feature_dim = 8;
    const icl::FeaturesGd fit = icl::fitFeaturesGd(c, 1, 3, 1500, 256, 3e-3);
    const auto b = icl::samplePrompts(c.task, 2000, 99, torch::kFloat64);
    const double zero = icl::halfMse(icl::predictZero(b), b.queryY()).item<double>();
    const double gd = icl::halfMse(icl::predictGd(icl::withFeatures(b, fit.phi), 1, fit.eta), b.queryY()).item<double>();
    EXPECT_LT(gd, 0.5 * zero) << "zero " << zero << ", features + GD " << gd;
    const icl::FeaturesGd again = icl::fitFeaturesGd(c, 1, 3, 1500, 256, 3e-3);
    EXPECT_EQ(again.eta, fit.eta);
}

TEST(Baselines, FittedParametersSurviveTheMetricsRoundTrip)
{
    icl::FittedBaselines f;
    f.eta["gd_2"] = 0.75;
    f.gdpp["gdpp_3"] = {{1.1, 1.2, 1.3}, {0.01, 0.02, 0.03}};
    std::map<std::string, std::vector<double>> metrics;
    for (const auto& [k, v] : icl::fittedToMetrics(f))
        metrics[k] = {v};
    const auto back = icl::fittedFromMetrics(metrics);
    EXPECT_EQ(back.eta, f.eta);
    EXPECT_EQ(back.gdpp.at("gdpp_3").eta, f.gdpp["gdpp_3"].eta);
    EXPECT_EQ(back.gdpp.at("gdpp_3").gamma, f.gdpp["gdpp_3"].gamma);
}

} // namespace
