#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/error.h"
#include "core/tasks/linear_regression.h"

namespace {

icl::TaskConfig task(const std::string& dist = "uniform")
{
    icl::TaskConfig t;
    t.d = 4;
    t.n_context = 6;
    t.x_distribution = dist;
    t.x_range = 0.5;
    t.w_scale = 2.0;
    return t;
}

TEST(LinearRegression, LabelsAreLinearInInputs)
{
    const auto b = icl::sampleLinearRegression(task(), 16, 1, torch::kFloat64);
    EXPECT_EQ(b.x.sizes(), (std::vector<int64_t>{16, 7, 4}));
    EXPECT_EQ(b.y.sizes(), (std::vector<int64_t>{16, 7}));
    const torch::Tensor want = (b.x * b.w.unsqueeze(1)).sum(-1);
    EXPECT_LE((b.y - want).abs().max().item<double>(), 1e-12);
    EXPECT_LE(b.x.abs().max().item<double>(), 0.5);
}

TEST(LinearRegression, SameSeedSamePromptsOtherSeedOther)
{
    const auto a = icl::sampleLinearRegression(task(), 8, 42);
    const auto b = icl::sampleLinearRegression(task(), 8, 42);
    const auto c = icl::sampleLinearRegression(task(), 8, 43);
    EXPECT_TRUE(torch::equal(a.x, b.x));
    EXPECT_TRUE(torch::equal(a.y, b.y));
    EXPECT_FALSE(torch::equal(a.x, c.x));
    EXPECT_NE(icl::mixSeed(1, 2), icl::mixSeed(2, 1));
}

TEST(LinearRegression, MomentsMatchTheDistributions)
{
    // U(−r, r) has variance r²/3; w ~ N(0, w_scale²); N(0,1) inputs have variance 1.
    const auto u = icl::sampleLinearRegression(task(), 20000, 3, torch::kFloat64);
    EXPECT_NEAR(u.x.var().item<double>(), 0.25 / 3.0, 0.002);
    EXPECT_NEAR(u.w.var().item<double>(), 4.0, 0.1);
    const auto n = icl::sampleLinearRegression(task("normal"), 20000, 4, torch::kFloat64);
    EXPECT_NEAR(n.x.var().item<double>(), 1.0, 0.02);
    auto t = task();
    t.noise_std = 0.5;
    const auto noisy = icl::sampleLinearRegression(t, 20000, 5, torch::kFloat64);
    const torch::Tensor residual = noisy.y - (noisy.x * noisy.w.unsqueeze(1)).sum(-1);
    EXPECT_NEAR(residual.std().item<double>(), 0.5, 0.01);
}

TEST(LinearRegression, PairLayout)
{
    const auto b = icl::sampleLinearRegression(task(), 3, 1);
    const torch::Tensor e = icl::pairTokens(b);
    EXPECT_EQ(e.sizes(), (std::vector<int64_t>{3, 7, 5}));
    EXPECT_TRUE(torch::equal(e.narrow(2, 0, 4), b.x));
    EXPECT_TRUE(torch::equal(e.select(2, 4).narrow(1, 0, 6), b.contextY()));
    EXPECT_EQ(e.select(2, 4).select(1, 6).abs().sum().item<float>(), 0.0f);  // query's y-slot is 0
}

TEST(LinearRegression, InterleavedLayout)
{
    const auto b = icl::sampleLinearRegression(task(), 2, 1);
    const torch::Tensor e = icl::interleavedTokens(b);
    EXPECT_EQ(e.sizes(), (std::vector<int64_t>{2, 13, 4}));
    for (int64_t i = 0; i < 6; ++i) {
        EXPECT_TRUE(torch::equal(e.select(1, 2 * i), b.x.select(1, i)));
        EXPECT_TRUE(torch::equal(e.select(1, 2 * i + 1).select(1, 0), b.y.select(1, i)));
        EXPECT_EQ(e.select(1, 2 * i + 1).narrow(1, 1, 3).abs().sum().item<float>(), 0.0f);
    }
    EXPECT_TRUE(torch::equal(e.select(1, 12), b.queryX()));
}

TEST(LinearRegression, PrefixKeepsQuery)
{
    const auto b = icl::sampleLinearRegression(task(), 2, 1);
    const auto p = b.prefix(2);
    EXPECT_EQ(p.nContext(), 2);
    EXPECT_TRUE(torch::equal(p.queryX(), b.queryX()));
    EXPECT_TRUE(torch::equal(p.contextX(), b.x.narrow(1, 0, 2)));
}

// Garg et al. 2022 sparse linear regression: w has exactly k non-zero coordinates, N(0, w_scale²),
// on a uniformly random support drawn per prompt.
icl::TaskConfig sparseTask(int64_t d, int64_t k)
{
    icl::TaskConfig t;
    t.kind = "sparse_linear_regression";
    t.d = d;
    t.n_context = 4;
    t.x_distribution = "normal";
    t.w_scale = 2.0;
    t.sparsity = k;
    return t;
}

TEST(SparseLinearRegression, ExactlyKNonZerosWithTheRightVariance)
{
    const int64_t B = 20000, d = 10, k = 3;
    const auto b = icl::sampleLinearRegression(sparseTask(d, k), B, 7, torch::kFloat64);
    ASSERT_EQ(b.w.sizes(), (std::vector<int64_t>{B, d}));
    const torch::Tensor nonZero = (b.w != 0).sum(1);  // [B]
    EXPECT_EQ(nonZero.min().item<int64_t>(), k);
    EXPECT_EQ(nonZero.max().item<int64_t>(), k);
    // The B·k non-zeros are N(0, w_scale² = 4): sample variance has standard error 4·√(2/(n−1)).
    const torch::Tensor values = b.w.masked_select(b.w != 0);
    const double n = double(values.numel());
    EXPECT_NEAR(values.mean().item<double>(), 0.0, 5.0 * 2.0 / std::sqrt(n));
    EXPECT_NEAR(values.var().item<double>(), 4.0, 5.0 * 4.0 * std::sqrt(2.0 / (n - 1)));
    // Closed-form moments of the whole vector: E[w_j²] = (k/d)·w_scale² per coordinate, E‖w‖² = k·w_scale².
    const torch::Tensor sq = b.w.pow(2).sum(1);  // ‖w‖², variance k·2·w_scale⁴ = 96
    EXPECT_NEAR(sq.mean().item<double>(), 12.0, 5.0 * std::sqrt(96.0 / double(B)));
    // Labels stay exactly linear in the inputs (no noise).
    EXPECT_LE((b.y - (b.x * b.w.unsqueeze(1)).sum(-1)).abs().max().item<double>(), 1e-12);
}

TEST(SparseLinearRegression, SupportIsAUniformSubset)
{
    // d = 7, k = 3: 35 supports, each with probability 1/35. Pearson's χ² over B prompts has 34 degrees
    // of freedom (mean 34, sd √68 ≈ 8.2); 34 + 6·8.2 ≈ 83 is exceeded with probability < 1e-6.
    const int64_t B = 35000, d = 7, k = 3;
    const auto b = icl::sampleLinearRegression(sparseTask(d, k), B, 11, torch::kFloat64);
    const auto mask = (b.w != 0).to(torch::kLong).contiguous();
    const auto* m = mask.data_ptr<int64_t>();
    std::map<int, int64_t> counts;
    for (int64_t i = 0; i < B; ++i) {
        int code = 0;
        for (int64_t j = 0; j < d; ++j)
            code |= int(m[i * d + j]) << j;
        ++counts[code];
    }
    EXPECT_EQ(counts.size(), 35u);  // every 3-subset occurs, and nothing else
    double chi2 = 0.0;
    const double expected = double(B) / 35.0;
    for (const auto& [code, c] : counts) {
        EXPECT_EQ(__builtin_popcount(code), k);
        chi2 += (double(c) - expected) * (double(c) - expected) / expected;
    }
    EXPECT_LT(chi2, 83.0);
}

TEST(SparseLinearRegression, SupportLiesAmongTheActiveCoordinates)
{
    auto t = sparseTask(10, 3);
    t.active_dims = 4;  // curriculum stage d_eff = 4
    const auto b = icl::sampleLinearRegression(t, 5000, 3, torch::kFloat64);
    EXPECT_EQ(b.w.narrow(1, 4, 6).abs().max().item<double>(), 0.0);
    EXPECT_EQ(b.x.narrow(2, 4, 6).abs().max().item<double>(), 0.0);
    EXPECT_EQ((b.w != 0).sum(1).min().item<int64_t>(), 3);
    EXPECT_EQ((b.w != 0).sum(1).max().item<int64_t>(), 3);
    // Each of the 4 active coordinates is in the support with probability 3/4.
    const torch::Tensor freq = (b.w.narrow(1, 0, 4) != 0).to(torch::kFloat64).mean(0);
    const double se = std::sqrt(0.75 * 0.25 / 5000.0);
    for (int64_t j = 0; j < 4; ++j)
        EXPECT_NEAR(freq[j].item<double>(), 0.75, 5.0 * se) << j;
    t.sparsity = 5;  // more non-zeros than active coordinates
    EXPECT_THROW(icl::sampleLinearRegression(t, 2, 1), icl::Error);
}

TEST(NoisyLinearRegression, ResidualVarianceIsSigmaSquared)
{
    icl::TaskConfig t;
    t.kind = "noisy_linear_regression";
    t.d = 5;
    t.n_context = 9;
    t.x_distribution = "normal";
    t.noise_std = 0.7;
    const int64_t B = 8000;
    const auto b = icl::sampleLinearRegression(t, B, 21, torch::kFloat64);
    const torch::Tensor residual = b.y - (b.x * b.w.unsqueeze(1)).sum(-1);  // [B, N+1], should be σ·z
    const double n = double(residual.numel()), s2 = 0.49;
    // Sample mean ~ N(0, σ²/n); sample variance has standard error σ²·√(2/(n−1)).
    EXPECT_NEAR(residual.mean().item<double>(), 0.0, 5.0 * 0.7 / std::sqrt(n));
    EXPECT_NEAR(residual.var().item<double>(), s2, 5.0 * s2 * std::sqrt(2.0 / (n - 1)));
    // The query's label is noisy too (Garg et al.: every point is a noisy sample).
    const torch::Tensor q = residual.select(1, t.n_context);
    EXPECT_NEAR(q.var().item<double>(), s2, 5.0 * s2 * std::sqrt(2.0 / (B - 1)));
    // Noise is independent of the inputs: the residual's correlation with x_1 is ~ N(0, 1/n).
    const torch::Tensor x1 = b.x.select(2, 0);
    const double corr = ((residual * x1).mean() / (residual.std() * x1.std())).item<double>();
    EXPECT_NEAR(corr, 0.0, 5.0 / std::sqrt(n));
}

TEST(LinearRegression, InactiveCoordinatesAreExactlyZero)
{
    auto t = task("normal");
    t.active_dims = 2;
    const auto b = icl::sampleLinearRegression(t, 64, 5, torch::kFloat64);
    EXPECT_EQ(b.x.narrow(2, 2, 2).abs().max().item<double>(), 0.0);
    EXPECT_GT(b.x.narrow(2, 0, 2).abs().min().item<double>(), 0.0);
    // Same random stream as the full draw: the active coordinates and w are unchanged.
    const auto full = icl::sampleLinearRegression(task("normal"), 64, 5, torch::kFloat64);
    EXPECT_TRUE(torch::equal(b.x.narrow(2, 0, 2), full.x.narrow(2, 0, 2)));
    EXPECT_TRUE(torch::equal(b.w, full.w));
    EXPECT_LE((b.y - (b.x * b.w.unsqueeze(1)).sum(-1)).abs().max().item<double>(), 1e-12);
}

} // namespace
