// Alignment metrics on analytic cases (von Oswald et al. 2022 definitions).
#include <gtest/gtest.h>

#include "core/metrics/alignment_metrics.h"
#include "core/models/lsa_construction.h"
#include "core/baselines/baselines.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::linearPrompts;

// The paper adds 1e-8 to each norm in the cosine, so a perfectly aligned pair scores
// 1 − O(1e-8/‖s‖) rather than exactly 1: cosines are compared to that tolerance.
constexpr double kCosineTol = 1e-6;

icl::Predictor gd(int64_t k, double eta)
{
    return [=](const icl::PromptBatch& b) { return icl::predictGd(b, k, eta); };
}

TEST(GdAlignment, AModelComparedWithItselfIsPerfectlyAligned)
{
    const auto b = linearPrompts(500, 6, 8, 1);
    const auto m = icl::alignmentMetrics(gd(2, 0.7), gd(2, 0.7), b, 128);
    EXPECT_NEAR(m.model_cosine, 1.0, kCosineTol);
    EXPECT_EQ(m.prediction_difference, 0.0);
    EXPECT_EQ(m.model_difference, 0.0);
    EXPECT_EQ(m.relative_model_difference, 0.0);
    EXPECT_DOUBLE_EQ(m.model_loss, m.reference_loss);
}

TEST(GdAlignment, AScaledModelHasCosineOneAndAKnownDifference)
{
    // Model = c·(one GD step). One GD step's sensitivity is its weight W_1 = (η/N)·Σ y_i x_i, so
    // ‖s_model − s_GD‖ = |c − 1|·‖W_1‖ and |ŷ_model − ŷ_GD| = |c − 1|·|⟨W_1, x_q⟩|.
    const double c = 1.5, eta = 1.2;
    const auto b = linearPrompts(400, 6, 8, 2);
    const auto m = icl::alignmentMetrics(
        [&](const icl::PromptBatch& p) { return c * icl::predictGd(p, 1, eta); }, gd(1, eta), b, 100);
    const torch::Tensor w1 = eta / 8.0 * (b.contextY().unsqueeze(-1) * b.contextX()).sum(1);  // [B, d]
    const double meanNorm = w1.norm(2, -1).mean().item<double>();
    const double meanPred = (w1 * b.queryX()).sum(-1).abs().mean().item<double>();
    EXPECT_NEAR(m.model_cosine, 1.0, kCosineTol);
    EXPECT_NEAR(m.model_difference, 0.5 * meanNorm, 1e-10);
    EXPECT_NEAR(m.relative_model_difference, 0.5, 1e-10);
    EXPECT_NEAR(m.prediction_difference, 0.5 * meanPred, 1e-10);
}

TEST(GdAlignment, TheGdConstructionIsAlignedWithGd)
{
    const auto b = linearPrompts(300, 6, 8, 3);
    icl::Lsa lsa(7, 3, 1, false);
    lsa->to(torch::kFloat64);
    icl::applyGdConstruction(*lsa, 0.9, 8);
    const auto m = icl::alignmentMetrics([&](const icl::PromptBatch& p) { return lsa->predict(p); }, gd(3, 0.9), b);
    EXPECT_NEAR(m.model_cosine, 1.0, kCosineTol);
    EXPECT_LT(m.relative_model_difference, 1e-9);
    EXPECT_LT(m.prediction_difference, 1e-9);
}

TEST(GdAlignment, OppositeModelsHaveCosineMinusOne)
{
    const auto b = linearPrompts(200, 6, 8, 4);
    const auto m = icl::alignmentMetrics(
        [&](const icl::PromptBatch& p) { return -icl::predictGd(p, 1, 1.0); }, gd(1, 1.0), b);
    EXPECT_NEAR(m.model_cosine, -1.0, kCosineTol);
    EXPECT_NEAR(m.relative_model_difference, 2.0, 1e-10);
}

} // namespace

TEST(GdAlignment, SeveralReferencesAtOnceEqualEachReferenceAlone)
{
    // The model's predictions and sensitivities are shared between the references; each entry must be
    // what comparing the model with that reference alone gives (the same operations, bit for bit).
    const auto b = linearPrompts(300, 6, 8, 5);
    const std::vector<icl::Predictor> refs{gd(1, 0.4), gd(3, 0.9), gd(2, 0.2)};
    torch::Tensor modelPred, refPred;
    const std::vector<icl::AlignmentMetrics> all
        = icl::alignmentMetricsAgainst(gd(2, 0.7), refs, b, 128, &modelPred, &refPred);
    ASSERT_EQ(all.size(), refs.size());
    for (size_t r = 0; r < refs.size(); ++r) {
        torch::Tensor mp, rp;
        const icl::AlignmentMetrics one = icl::alignmentMetrics(gd(2, 0.7), refs[r], b, 128, &mp, &rp);
        EXPECT_EQ(all[r].prediction_difference, one.prediction_difference) << r;
        EXPECT_EQ(all[r].model_cosine, one.model_cosine) << r;
        EXPECT_EQ(all[r].model_difference, one.model_difference) << r;
        EXPECT_EQ(all[r].relative_model_difference, one.relative_model_difference) << r;
        EXPECT_EQ(all[r].model_loss, one.model_loss) << r;
        EXPECT_EQ(all[r].reference_loss, one.reference_loss) << r;
        EXPECT_TRUE(torch::equal(modelPred, mp)) << r;
        if (r == 0)
            EXPECT_TRUE(torch::equal(refPred, rp));
    }
    EXPECT_NE(all[0].reference_loss, all[1].reference_loss);  // the references differ
}
