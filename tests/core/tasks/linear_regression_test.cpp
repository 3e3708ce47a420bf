#include <gtest/gtest.h>

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

} // namespace
