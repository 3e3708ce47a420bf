// Sine-regression prompts (von Oswald et al. 2022, §5): y = a·sin(x + φ) with a and φ drawn
// independently per prompt. Statistics are checked against the closed-form moments of the uniform laws.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/tasks/prompts.h"
#include "core/tasks/sine_regression.h"
#include "tests/support/tiny_models.h"

namespace {

/// The laws of von Oswald et al. §5 that sineTask() asks for and the tests check: x ~ U(−5, 5), a ~ U(0.1, 5),
/// φ ~ U(0, π).
struct UniformLaw {
    double lo, hi;
};
constexpr double kXRange = 5.0;
constexpr UniformLaw kAmplitude{0.1, 5.0}, kPhase{0.0, M_PI};

icl::TaskConfig sineTask()
{
    icl::TaskConfig t = icl::test::taskConfig("sine_regression", 1, 9);
    t.x_range = kXRange;
    t.amplitude_min = kAmplitude.lo;
    t.amplitude_max = kAmplitude.hi;
    t.phase_min = kPhase.lo;
    t.phase_max = kPhase.hi;
    return t;
}

TEST(SineRegression, LabelsAreAmplitudeTimesShiftedSine)
{
    const auto b = icl::sampleSineRegression(sineTask(), 64, 3, torch::kFloat64);
    EXPECT_EQ(b.x.sizes(), (std::vector<int64_t>{64, 10, 1}));
    EXPECT_EQ(b.w.sizes(), (std::vector<int64_t>{64, 2}));
    const auto x = b.x.accessor<double, 3>();
    const auto y = b.y.accessor<double, 2>();
    const auto w = b.w.accessor<double, 2>();
    for (int64_t p = 0; p < 64; ++p)
        for (int64_t i = 0; i < 10; ++i)
            EXPECT_NEAR(y[p][i], w[p][0] * std::sin(x[p][i][0] + w[p][1]), 1e-12);
    EXPECT_LE(b.x.abs().max().item<double>(), kXRange);
}

TEST(SineRegression, AmplitudeAndPhaseFollowIndependentUniformLaws)
{
    const int64_t n = 200000;
    const auto b = icl::sampleSineRegression(sineTask(), n, 11, torch::kFloat64);
    const torch::Tensor a = b.w.select(1, 0), phi = b.w.select(1, 1);
    // U(lo, hi): mean (lo + hi)/2, variance (hi − lo)²/12; standard error of the mean σ/√n.
    auto checkUniform = [&](const torch::Tensor& v, double lo, double hi) {
        const double mean = (lo + hi) / 2, sd = (hi - lo) / std::sqrt(12.0);
        EXPECT_NEAR(v.mean().item<double>(), mean, 5 * sd / std::sqrt(double(n)));
        EXPECT_NEAR(v.std().item<double>(), sd, 0.01 * sd);
        EXPECT_GE(v.min().item<double>(), lo);
        EXPECT_LE(v.max().item<double>(), hi);
    };
    checkUniform(a, kAmplitude.lo, kAmplitude.hi);
    checkUniform(phi, kPhase.lo, kPhase.hi);
    checkUniform(b.x.flatten(), -kXRange, kXRange);
    // Independence: the sample correlation of a and φ is within 5 standard errors (1/√n) of 0.
    const torch::Tensor ca = a - a.mean(), cp = phi - phi.mean();
    const double corr = ((ca * cp).mean() / (ca.std() * cp.std())).item<double>();
    EXPECT_LT(std::abs(corr), 5.0 / std::sqrt(double(n)));
}

TEST(SineRegression, DispatchBySeedAndKind)
{
    const auto a = icl::samplePrompts(sineTask(), 8, 5);
    const auto b = icl::sampleSineRegression(sineTask(), 8, 5);
    EXPECT_TRUE(torch::equal(a.y, b.y));
    icl::TaskConfig wrong = sineTask();
    wrong.d = 2;
    EXPECT_THROW(icl::sampleSineRegression(wrong, 4, 1), icl::Error);
    icl::TaskConfig unknown = sineTask();
    unknown.kind = "spirals";
    EXPECT_THROW(icl::samplePrompts(unknown, 4, 1), icl::Error);
}

} // namespace
