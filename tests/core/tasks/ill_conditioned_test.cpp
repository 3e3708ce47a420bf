// Ill-conditioned inputs (task.x_condition_number, Fu et al. 2023): x ~ N(0, Σ) with log-spaced eigenvalues of mean
// 1, checked against the closed form of Σ by the sample covariance; κ = 1 draws exactly the isotropic prompts;
// the key is validated like every key.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"
#include "tests/support/core_checks.h"

namespace {

icl::TaskConfig illConditionedTask(double kappa)
{
    icl::TaskConfig t;
    t.d = 3;
    t.n_context = 9;
    t.x_distribution = "normal";
    t.x_condition_number = kappa;
    return t;
}

TEST(IllConditionedInputs, SampleCovarianceMatchesTheLogSpacedSpectrum)
{
    // κ = 100, d = 3: λ ∝ 1, 0.1, 0.01, scaled to mean 1: λ = 3/1.11·(1, 0.1, 0.01).
    const double c = 3.0 / 1.11;
    const double want[] = {c, 0.1 * c, 0.01 * c};
    const icl::PromptBatch b = icl::sampleLinearRegression(illConditionedTask(100.0), 20000, 3, torch::kFloat64);
    const torch::Tensor x = b.x.reshape({-1, 3});                       // 200,000 draws
    const torch::Tensor cov = torch::matmul(x.transpose(0, 1), x) / double(x.size(0));
    for (int64_t i = 0; i < 3; ++i) {
        // Standard error of a sample variance: λ·√(2/n) ≈ 0.32 % of λ; 1.5 % is ~5 standard errors.
        EXPECT_NEAR(cov[i][i].item<double>(), want[i], 0.015 * want[i]) << "λ_" << i + 1;
        for (int64_t j = 0; j < i; ++j)
            EXPECT_NEAR(cov[i][j].item<double>(), 0.0, 5.0 * std::sqrt(want[i] * want[j] / double(x.size(0))));
    }
    const torch::Tensor e = icl::inputCovarianceEigenvalues(illConditionedTask(100.0), 3);
    EXPECT_NEAR(e[0].item<double>() / e[2].item<double>(), 100.0, 1e-10);
    EXPECT_NEAR(e.mean().item<double>(), 1.0, 1e-14);
    // Labels are still ⟨w, x⟩.
    EXPECT_LE(icl::test::maxAbsDiff(b.y, (b.x * b.w.unsqueeze(1)).sum(-1)), 1e-12);
}

TEST(IllConditionedInputs, ConditionNumberOneIsTheIsotropicDraw)
{
    // The inputs are the stream's first draw, z ~ N(0, I) [B, N+1, d]: with κ = 1 exactly those.
    const icl::PromptBatch b = icl::sampleLinearRegression(illConditionedTask(1.0), 64, 5, torch::kFloat64);
    auto gen = at::detail::createCPUGenerator(5);
    EXPECT_TRUE(torch::equal(b.x, torch::randn({64, 10, 3}, gen, torch::TensorOptions().dtype(torch::kFloat64))));
    // κ > 1 scales the same draws coordinate by coordinate (the curriculum's inactive coordinates stay 0).
    icl::TaskConfig curriculum = illConditionedTask(10.0);
    curriculum.active_dims = 2;
    const icl::PromptBatch c = icl::sampleLinearRegression(curriculum, 64, 5, torch::kFloat64);
    EXPECT_EQ(c.x.select(2, 2).abs().max().item<double>(), 0.0);
    const torch::Tensor e = icl::inputCovarianceEigenvalues(curriculum, 2);  // 2/1.1·(1, 0.1)
    EXPECT_NEAR(e[0].item<double>(), 2.0 / 1.1, 1e-14);
    EXPECT_LE(icl::test::maxAbsDiff(c.x.select(2, 1), b.x.select(2, 1) * std::sqrt(0.2 / 1.1)), 1e-12);
}

TEST(IllConditionedInputs, TheKeyIsValidated)
{
    auto parse = [](const nlohmann::json& task) { icl::parseConfig({{"task", task}}); };
    icl::test::expectError([&] { parse({{"x_distribution", "normal"}, {"x_condition_number", 0.5}}); },
                           "task.x_condition_number: expected a number in [1, 1e12]");
    icl::test::expectError([&] { parse({{"x_condition_number", 10}}); }, "needs task.x_distribution \"normal\"");
    icl::test::expectError(
        [&] { parse({{"kind", "sine_regression"}, {"d", 1}, {"x_distribution", "normal"}, {"x_condition_number", 10}}); },
        "linear-regression tasks");
    const icl::ExperimentConfig c = icl::parseConfig({{"task", {{"x_distribution", "normal"}, {"x_condition_number", 100}}}});
    EXPECT_DOUBLE_EQ(c.task.x_condition_number, 100.0);
    EXPECT_DOUBLE_EQ(icl::toJson(c)["task"]["x_condition_number"].get<double>(), 100.0);
}

} // namespace
