// Bursty few-shot classification sequences (Chan et al. 2022, docs/science.md §4). Expected values are closed
// forms: the 3/3/2 structure of bursty sequences, binomial tolerances around p_bursty and 1/2, Zipf
// probabilities r^−α / H, and the mean/variance of prototype + σ·N(0, 1) with standard-error tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/tasks/fewshot_classification.h"
#include "tests/support/tiny_models.h"

namespace {

icl::FewShotOptions smallOptions()
{
    return icl::test::fewShotOptions(20, 10, 4, 7);
}

/// smallOptions() on 30 training classes, the first `n_common` of them (in permuted order) common, Zipf α = 1.
icl::FewShotOptions commonRareOptions(int64_t n_common)
{
    auto o = smallOptions();
    o.n_classes = 30;
    o.n_common_classes = n_common;
    o.zipf_alpha = 1.0;
    return o;
}

// Five binomial standard errors of a proportion p estimated from n draws.
double binomialTolerance(double p, double n) { return 5.0 * std::sqrt(p * (1 - p) / n); }

} // namespace

TEST(FewShotClassification, ShapesTypesAndClassPartition)
{
    auto o = smallOptions();
    o.exemplar_dim = 6;
    const icl::FewShotClassification task(o);
    for (const auto& b : {task.sampleTraining(5, 0), task.sampleIclEval(5, 0), task.sampleIwlEval(5, 0)}) {
        EXPECT_EQ(b.exemplars.sizes(), (std::vector<int64_t>{5, 9, 6}));
        EXPECT_EQ(b.labels.sizes(), (std::vector<int64_t>{5, 9}));
        EXPECT_EQ(b.classes.sizes(), (std::vector<int64_t>{5, 9}));
        EXPECT_EQ(b.bursty.sizes(), (std::vector<int64_t>{5}));
        EXPECT_EQ(b.exemplars.scalar_type(), torch::kFloat32);
        EXPECT_EQ(b.labels.scalar_type(), torch::kInt64);
        EXPECT_EQ(b.classes.scalar_type(), torch::kInt64);
        EXPECT_EQ(b.bursty.scalar_type(), torch::kBool);
        EXPECT_EQ(b.nContext(), 8);
        EXPECT_TRUE(torch::equal(b.queryClasses(), b.classes.select(1, 8)));
    }
    // Training and holdout classes partition the ids 0 … n_classes + n_holdout − 1.
    ASSERT_EQ(task.trainingClasses().size(), 20u);
    ASSERT_EQ(task.holdoutClasses().size(), 10u);
    std::set<int64_t> all(task.trainingClasses().begin(), task.trainingClasses().end());
    all.insert(task.holdoutClasses().begin(), task.holdoutClasses().end());
    EXPECT_EQ(all.size(), 30u);
    EXPECT_EQ(*all.begin(), 0);
    EXPECT_EQ(*all.rbegin(), 29);
    EXPECT_EQ(task.nLabels(), 20); // default vocabulary n_classes·labels_per_class
}

TEST(FewShotClassification, BurstySequencesHaveQueryClassThreeTimesSecondClassThreeTimesAndTwoOthers)
{
    for (double alpha : {0.0, 2.0}) { // α = 2: the most frequent class has p ≈ 0.63, a collision-prone case
        auto o = smallOptions();
        o.p_bursty = 1.0;
        o.zipf_alpha = alpha;
        const icl::FewShotClassification task(o);
        const int64_t n = 4000;
        const auto b = task.sampleTraining(n, 3);
        const auto cls = b.classes.accessor<int64_t, 2>();
        const auto lab = b.labels.accessor<int64_t, 2>();
        EXPECT_TRUE(b.bursty.all().item<bool>());
        std::vector<int64_t> queryAtPosition(8, 0);
        for (int64_t s = 0; s < n; ++s) {
            std::map<int64_t, int> count;
            for (int64_t i = 0; i < 8; ++i)
                ++count[cls[s][i]];
            const int64_t q = cls[s][8];
            ASSERT_EQ(count[q], 3) << "sequence " << s << ", α = " << alpha;
            int second = 0, others = 0; // classes ≠ q seen 3 times; items of the remaining classes
            for (const auto& [c, k] : count) {
                if (c == q)
                    continue;
                if (k == 3)
                    ++second;
                else
                    others += k;
            }
            EXPECT_EQ(second, 1) << "exactly one other class 3 times, sequence " << s;
            EXPECT_EQ(others, 2) << "2 remaining items of other classes, sequence " << s;
            for (int64_t i = 0; i < 8; ++i) {
                queryAtPosition[size_t(i)] += cls[s][i] == q;
                if (cls[s][i] == q)
                    EXPECT_EQ(lab[s][i], lab[s][8]); // fixed labels: the query's label is in the context
            }
        }
        // Shuffled context: every position holds the query class with probability 3/8.
        for (int64_t i = 0; i < 8; ++i)
            EXPECT_NEAR(queryAtPosition[size_t(i)] / double(n), 3.0 / 8.0, binomialTolerance(3.0 / 8.0, n))
                << "position " << i;
    }
}

TEST(FewShotClassification, FractionOfBurstySequencesIsPBursty)
{
    auto o = smallOptions();
    o.exemplar_dim = 1;
    o.p_bursty = 0.9;
    const int64_t n = 20000;
    const auto b = icl::FewShotClassification(o).sampleTraining(n, 1);
    EXPECT_NEAR(b.bursty.to(torch::kFloat64).mean().item<double>(), 0.9, binomialTolerance(0.9, n));
    o.p_bursty = 0.0;
    EXPECT_FALSE(icl::FewShotClassification(o).sampleTraining(1000, 1).bursty.any().item<bool>());
    o.p_bursty = 1.0;
    EXPECT_TRUE(icl::FewShotClassification(o).sampleTraining(1000, 1).bursty.all().item<bool>());
}

TEST(FewShotClassification, NonBurstyClassFrequenciesFollowZipf)
{
    for (double alpha : {0.0, 1.0, 2.0}) {
        auto o = icl::test::fewShotOptions(10, 2, 1, 11);
        o.zipf_alpha = alpha;
        o.p_bursty = 0.0;
        const icl::FewShotClassification task(o);
        // Closed form: p(r) = r^−α / Σ_{k=1}^{10} k^−α.
        double h = 0;
        for (int r = 1; r <= 10; ++r)
            h += std::pow(r, -alpha);
        const auto probs = task.classProbabilities();
        ASSERT_EQ(probs.size(), 10u);
        for (int r = 1; r <= 10; ++r)
            EXPECT_NEAR(probs[size_t(r - 1)], std::pow(r, -alpha) / h, 1e-12);

        const int64_t sequences = 20000, draws = sequences * 9; // all 9 classes of a sequence are i.i.d.
        const torch::Tensor cls = task.sampleTraining(sequences, 2).classes.flatten();
        double chi2 = 0;
        for (int r = 1; r <= 10; ++r) {
            const double p = std::pow(r, -alpha) / h;
            const double observed = cls.eq(task.trainingClasses()[size_t(r - 1)]).sum().item<int64_t>();
            EXPECT_NEAR(observed / draws, p, binomialTolerance(p, draws)) << "rank " << r << ", α = " << alpha;
            chi2 += (observed - draws * p) * (observed - draws * p) / (draws * p);
        }
        // χ² with 9 degrees of freedom: P(χ² > 27.88) = 0.001.
        EXPECT_LT(chi2, 27.88) << "α = " << alpha;
    }
}

TEST(FewShotClassification, HoldoutClassesNeverInTrainingAndOnlyClassesOfIclEval)
{
    auto o = smallOptions();
    o.n_classes = 50;
    o.zipf_alpha = 0.5;
    o.p_bursty = 0.5;
    const icl::FewShotClassification task(o);
    const std::set<int64_t> holdout(task.holdoutClasses().begin(), task.holdoutClasses().end());
    const std::set<int64_t> training(task.trainingClasses().begin(), task.trainingClasses().end());
    std::set<int64_t> seenTraining, seenIwl, seenIcl;
    auto collect = [](const icl::FewShotBatch& b, std::set<int64_t>& seen) {
        const torch::Tensor flat = b.classes.flatten();
        const auto c = flat.accessor<int64_t, 1>();
        for (int64_t i = 0; i < flat.numel(); ++i)
            seen.insert(c[i]);
    };
    for (uint64_t step = 0; step < 10; ++step) {
        collect(task.sampleTraining(400, step), seenTraining);
        collect(task.sampleIwlEval(400, step), seenIwl);
        collect(task.sampleIclEval(400, step), seenIcl);
    }
    for (int64_t c : seenTraining)
        EXPECT_EQ(holdout.count(c), 0u) << "holdout class " << c << " in a training sequence";
    for (int64_t c : seenIwl)
        EXPECT_EQ(training.count(c), 1u) << "class " << c << " of an IWL sequence is not a training class";
    EXPECT_EQ(seenTraining, training); // 36000 draws: every training class shows up
    EXPECT_EQ(seenIcl, holdout);       // ICL eval uses holdout classes, all of them
}

TEST(FewShotClassification, IclEvalIsTwoWayFourShotWithRandomLabelsZeroOne)
{
    const icl::FewShotClassification task(smallOptions());
    const int64_t n = 4000;
    const auto b = task.sampleIclEval(n, 5);
    EXPECT_TRUE(b.bursty.all().item<bool>());
    const auto cls = b.classes.accessor<int64_t, 2>();
    const auto lab = b.labels.accessor<int64_t, 2>();
    int64_t smallerIdGetsZero = 0, queryIsSmallerId = 0;
    std::map<int64_t, int64_t> sequencesWithClass;
    for (int64_t s = 0; s < n; ++s) {
        std::map<int64_t, int> count;
        std::map<int64_t, std::set<int64_t>> labelsOfClass;
        for (int64_t i = 0; i < 8; ++i) {
            ++count[cls[s][i]];
            labelsOfClass[cls[s][i]].insert(lab[s][i]);
            EXPECT_TRUE(lab[s][i] == 0 || lab[s][i] == 1);
        }
        ASSERT_EQ(count.size(), 2u) << "sequence " << s;
        const int64_t a = count.begin()->first, c = count.rbegin()->first;
        EXPECT_EQ(count[a], 4);
        EXPECT_EQ(count[c], 4);
        ASSERT_EQ(labelsOfClass[a].size(), 1u); // consistent within the sequence
        ASSERT_EQ(labelsOfClass[c].size(), 1u);
        EXPECT_NE(*labelsOfClass[a].begin(), *labelsOfClass[c].begin());
        const int64_t q = cls[s][8];
        ASSERT_TRUE(q == a || q == c);
        EXPECT_EQ(lab[s][8], *labelsOfClass[q].begin());
        smallerIdGetsZero += *labelsOfClass[a].begin() == 0;
        queryIsSmallerId += q == a;
        ++sequencesWithClass[a];
        ++sequencesWithClass[c];
    }
    EXPECT_NEAR(smallerIdGetsZero / double(n), 0.5, binomialTolerance(0.5, n));
    EXPECT_NEAR(queryIsSmallerId / double(n), 0.5, binomialTolerance(0.5, n));
    // A uniform pair of distinct classes out of 10 contains a given class with probability 2/10.
    ASSERT_EQ(sequencesWithClass.size(), 10u);
    for (const auto& [c, k] : sequencesWithClass)
        EXPECT_NEAR(k / double(n), 0.2, binomialTolerance(0.2, n)) << "holdout class " << c;
}

TEST(FewShotClassification, IwlEvalContextNeverContainsQueryClass)
{
    auto o = smallOptions();
    o.zipf_alpha = 1.0;
    o.labels_per_class = 2;
    const icl::FewShotClassification task(o);
    const int64_t n = 4000;
    const auto b = task.sampleIwlEval(n, 9);
    EXPECT_FALSE(b.bursty.any().item<bool>());
    const auto cls = b.classes.accessor<int64_t, 2>();
    const auto lab = b.labels.accessor<int64_t, 2>();
    int64_t queryIsRankOne = 0;
    for (int64_t s = 0; s < n; ++s) {
        for (int64_t i = 0; i < 8; ++i)
            EXPECT_NE(cls[s][i], cls[s][8]) << "sequence " << s << ", position " << i;
        for (int64_t i = 0; i < 9; ++i) {
            const auto fixed = task.labelsOf(cls[s][i]);
            EXPECT_NE(std::find(fixed.begin(), fixed.end(), lab[s][i]), fixed.end());
        }
        queryIsRankOne += cls[s][8] == task.trainingClasses()[0];
    }
    // The query follows the Zipf distribution: p(rank 1) = 1 / H_20.
    double h = 0;
    for (int r = 1; r <= 20; ++r)
        h += 1.0 / r;
    EXPECT_NEAR(queryIsRankOne / double(n), 1.0 / h, binomialTolerance(1.0 / h, n));
}

TEST(FewShotClassification, EachClassShowsOnlyItsFixedLabelsAndAllOfThem)
{
    auto o = smallOptions();
    o.n_classes = 12;
    o.labels_per_class = 5;
    o.p_bursty = 0.5;
    o.exemplar_dim = 1;
    const icl::FewShotClassification task(o);
    std::map<int64_t, std::map<int64_t, int64_t>> labelCounts; // class → label → count
    int64_t burstyMismatches = 0;
    for (uint64_t step = 0; step < 4; ++step) {
        for (const auto& b : {task.sampleTraining(1000, step), task.sampleIwlEval(1000, step)}) {
            const auto cls = b.classes.accessor<int64_t, 2>();
            const auto lab = b.labels.accessor<int64_t, 2>();
            const auto bursty = b.bursty.accessor<bool, 1>();
            for (int64_t s = 0; s < b.batchSize(); ++s)
                for (int64_t i = 0; i < 9; ++i) {
                    ++labelCounts[cls[s][i]][lab[s][i]];
                    // Bursty: the query class carries one of its labels for the whole sequence.
                    burstyMismatches += bursty[s] && cls[s][i] == cls[s][8] && lab[s][i] != lab[s][8];
                }
        }
    }
    EXPECT_EQ(burstyMismatches, 0);
    ASSERT_EQ(labelCounts.size(), 12u);
    std::set<int64_t> allLabels;
    for (const auto& [c, counts] : labelCounts) {
        const auto fixed = task.labelsOf(c);
        ASSERT_EQ(fixed.size(), 5u);
        EXPECT_EQ(counts.size(), 5u) << "class " << c << " shows exactly labels_per_class labels";
        for (const auto& [label, k] : counts) {
            EXPECT_NE(std::find(fixed.begin(), fixed.end(), label), fixed.end()) << "class " << c;
            allLabels.insert(label);
        }
    }
    // Default vocabulary 12·5 = 60 labels, no label shared between classes.
    EXPECT_EQ(allLabels.size(), 60u);
    EXPECT_EQ(*allLabels.begin(), 0);
    EXPECT_EQ(*allLabels.rbegin(), 59);

    // Non-bursty: each exemplar's label is uniform over the class's 5 labels.
    o.p_bursty = 0;
    const icl::FewShotClassification iid(o);
    const auto b = iid.sampleTraining(20000, 0);
    const int64_t c = iid.trainingClasses()[3];
    const torch::Tensor ofClass = b.labels.masked_select(b.classes.eq(c));
    const double total = double(ofClass.numel());
    ASSERT_GT(total, 10000); // ≈ 180000/12
    for (int64_t label : iid.labelsOf(c))
        EXPECT_NEAR(ofClass.eq(label).sum().item<int64_t>() / total, 0.2, binomialTolerance(0.2, total));

    // A smaller shared vocabulary: labels of a class are distinct and in range.
    o.n_labels = 7;
    o.labels_per_class = 3;
    const icl::FewShotClassification shared(o);
    for (int64_t cl : shared.trainingClasses()) {
        const auto fixed = shared.labelsOf(cl);
        EXPECT_EQ(std::set<int64_t>(fixed.begin(), fixed.end()).size(), 3u);
        for (int64_t l : fixed) {
            EXPECT_GE(l, 0);
            EXPECT_LT(l, 7);
        }
    }
    EXPECT_THROW(shared.labelsOf(shared.holdoutClasses()[0]), icl::Error);
}

TEST(FewShotClassification, ExemplarsArePrototypePlusWithinClassNoise)
{
    auto o = icl::test::fewShotOptions(3, 2, 8, 3);
    o.p_bursty = 0;
    o.within_class_noise = 0.5;
    const icl::FewShotClassification task(o);
    const auto b = task.sampleTraining(5000, 0, torch::kFloat64);
    const torch::Tensor x = b.exemplars.reshape({-1, 8}), cls = b.classes.flatten();
    for (int64_t c : task.trainingClasses()) {
        const torch::Tensor xc = x.index({cls.eq(c)}); // [n_c, 8]
        const double n = double(xc.size(0));
        ASSERT_GT(n, 10000);
        const torch::Tensor mu = task.prototype(c);
        // Mean: standard error σ/√n; sample variance of a normal: standard error σ²·√(2/(n−1)).
        EXPECT_LT((xc.mean(0) - mu).abs().max().item<double>(), 5 * 0.5 / std::sqrt(n)) << "class " << c;
        EXPECT_LT((xc.var(0) - 0.25).abs().max().item<double>(), 5 * 0.25 * std::sqrt(2 / (n - 1)))
            << "class " << c;
    }
    // Without noise every exemplar is exactly its class prototype.
    o.within_class_noise = 0;
    const icl::FewShotClassification exact(o);
    const auto e = exact.sampleIwlEval(50, 0, torch::kFloat64);
    for (int64_t s = 0; s < 50; ++s)
        for (int64_t i = 0; i < 9; ++i)
            EXPECT_TRUE(torch::equal(e.exemplars[s][i], exact.prototype(e.classes[s][i].item<int64_t>())));
}

TEST(FewShotClassification, PrototypesAreStandardNormalAndDependOnSeedAndClassOnly)
{
    icl::FewShotOptions o;
    o.exemplar_dim = 64;
    o.seed = 5;
    const icl::FewShotClassification task(o);
    std::vector<torch::Tensor> protos;
    for (int64_t c = 0; c < 2000; ++c)
        protos.push_back(task.prototype(c));
    const torch::Tensor all = torch::stack(protos).flatten(); // 128000 coordinates
    const double n = double(all.numel());
    EXPECT_NEAR(all.mean().item<double>(), 0.0, 5 / std::sqrt(n));
    EXPECT_NEAR(all.var().item<double>(), 1.0, 5 * std::sqrt(2 / n));
    // Fourth moment of N(0, 1) is 3; its standard error is √(96/n) (E z⁸ = 105, 105 − 9 = 96).
    EXPECT_NEAR(all.pow(4).mean().item<double>(), 3.0, 5 * std::sqrt(96 / n));
    // Neighbouring coordinates are uncorrelated (Box–Muller pairs are independent).
    const torch::Tensor p = torch::stack(protos);
    const double corr = (p.select(1, 0) * p.select(1, 1)).mean().item<double>();
    EXPECT_LT(std::abs(corr), 5 / std::sqrt(2000.0));

    auto other = o;
    other.n_classes = 100; // a different number of classes does not move class 17's prototype
    EXPECT_TRUE(torch::equal(icl::FewShotClassification(other).prototype(17), task.prototype(17)));
    other.seed = 6;
    EXPECT_FALSE(torch::equal(icl::FewShotClassification(other).prototype(17), task.prototype(17)));
    EXPECT_FALSE(torch::equal(task.prototype(17), task.prototype(18)));
}

TEST(FewShotClassification, SameOptionsAndIndexGiveTheSameBatch)
{
    auto o = smallOptions();
    o.zipf_alpha = 1.0;
    o.labels_per_class = 3;
    const icl::FewShotClassification a(o), b(o);
    auto same = [](const icl::FewShotBatch& x, const icl::FewShotBatch& y) {
        return torch::equal(x.exemplars, y.exemplars) && torch::equal(x.labels, y.labels)
            && torch::equal(x.classes, y.classes) && torch::equal(x.bursty, y.bursty);
    };
    EXPECT_EQ(a.trainingClasses(), b.trainingClasses());
    EXPECT_TRUE(same(a.sampleTraining(16, 42), b.sampleTraining(16, 42)));
    EXPECT_TRUE(same(a.sampleIclEval(16, 42), b.sampleIclEval(16, 42)));
    EXPECT_TRUE(same(a.sampleIwlEval(16, 42), b.sampleIwlEval(16, 42)));
    EXPECT_FALSE(same(a.sampleTraining(16, 42), a.sampleTraining(16, 43)));
    EXPECT_FALSE(same(a.sampleIclEval(16, 42), a.sampleIclEval(16, 43)));
    auto reseeded = o;
    reseeded.seed = 8;
    const icl::FewShotClassification c(reseeded);
    EXPECT_NE(a.trainingClasses(), c.trainingClasses());
    EXPECT_FALSE(same(a.sampleTraining(16, 42), c.sampleTraining(16, 42)));
}

TEST(FewShotClassification, InvalidOptionsThrow)
{
    auto bad = [](auto edit) {
        auto o = smallOptions();
        edit(o);
        return o;
    };
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.n_classes = 2; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.p_bursty = 1.5; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.zipf_alpha = -1; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.labels_per_class = 0; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.n_labels = 1; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.context_len = 7; })), icl::Error);
    EXPECT_THROW(icl::FewShotClassification(bad([](auto& o) { o.within_class_noise = -0.1; })), icl::Error);
    const icl::FewShotClassification noHoldout(bad([](auto& o) { o.n_holdout = 1; }));
    EXPECT_THROW(noHoldout.sampleIclEval(4, 0), icl::Error);
    EXPECT_NO_THROW(noHoldout.sampleTraining(4, 0));
}

namespace {

// FNV-1a over the int64 values of a tensor (classes, labels, bursty flags): our own portable draws decide
// them, so the hash is the same on every platform.
uint64_t fingerprint(const torch::Tensor& t)
{
    const torch::Tensor v = t.to(torch::kInt64).contiguous().flatten();
    const auto a = v.accessor<int64_t, 1>();
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < v.numel(); ++i)
        for (int byte = 0; byte < 8; ++byte) {
            h ^= (uint64_t(a[i]) >> (8 * byte)) & 0xFF;
            h *= 1099511628211ull;
        }
    return h;
}

} // namespace

// n_common_classes = 0 (the default) is the generator before the common / rare split existed: the classes, labels
// and bursty flags hash to the values that the code before the split produced for these options and indices
// (recorded from it), and exemplars are bitwise those of a default-constructed option set. A split with the
// default mix (p_bursty_zipfian = 1, non_bursty_type "zipfian") draws the same training sequences too, and the
// holdout ICL and training IWL evaluations do not depend on it.
TEST(FewShotClassification, NoCommonRareSplitGivesTheSequencesOfTheCodeBeforeIt)
{
    auto o = smallOptions();
    o.zipf_alpha = 1.0;
    o.labels_per_class = 2;
    auto explicitZero = o;
    explicitZero.n_common_classes = 0;
    const icl::FewShotClassification task(o), zero(explicitZero);
    EXPECT_FALSE(task.hasCommonRareSplit());
    EXPECT_TRUE(task.commonClasses().empty());
    EXPECT_TRUE(task.rareClasses().empty());
    const std::vector<icl::FewShotBatch> batches
        = {task.sampleTraining(256, 5), task.sampleIclEval(256, 5), task.sampleIwlEval(256, 5)};
    const std::vector<icl::FewShotBatch> again
        = {zero.sampleTraining(256, 5), zero.sampleIclEval(256, 5), zero.sampleIwlEval(256, 5)};
    const uint64_t before[3][3] = {{0xfea3a80c3e4fd100ull, 0x1564f1ba0cccb44eull, 0xb4741c60e2a957c2ull},
                                   {0xce5cedadcfda301full, 0xcf4fb8ea8c98c7a2ull, 0xe481099e69605383ull},
                                   {0x9f1789d2b2c58678ull, 0x08d3eedf31fee46aull, 0x19dbc3365ea56383ull}};
    for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(fingerprint(batches[k].classes), before[k][0]) << "batch kind " << k;
        EXPECT_EQ(fingerprint(batches[k].labels), before[k][1]) << "batch kind " << k;
        EXPECT_EQ(fingerprint(batches[k].bursty), before[k][2]) << "batch kind " << k;
        EXPECT_TRUE(torch::equal(batches[k].exemplars, again[k].exemplars)) << "batch kind " << k;
        EXPECT_TRUE(torch::equal(batches[k].classes, again[k].classes)) << "batch kind " << k;
        EXPECT_TRUE(torch::equal(batches[k].labels, again[k].labels)) << "batch kind " << k;
    }

    auto split = o;
    split.n_common_classes = 5;
    const icl::FewShotClassification withSplit(split);
    const std::vector<icl::FewShotBatch> splitBatches
        = {withSplit.sampleTraining(256, 5), withSplit.sampleIclEval(256, 5), withSplit.sampleIwlEval(256, 5)};
    for (size_t k = 0; k < 3; ++k) {
        EXPECT_TRUE(torch::equal(batches[k].exemplars, splitBatches[k].exemplars)) << "batch kind " << k;
        EXPECT_TRUE(torch::equal(batches[k].classes, splitBatches[k].classes)) << "batch kind " << k;
        EXPECT_TRUE(torch::equal(batches[k].labels, splitBatches[k].labels)) << "batch kind " << k;
    }
}

TEST(FewShotClassification, CommonRareAndHoldoutClassesPartitionTheClassesInSeededOrder)
{
    auto o = smallOptions(); // 20 training + 10 holdout classes
    o.n_common_classes = 6;
    const icl::FewShotClassification task(o);
    ASSERT_TRUE(task.hasCommonRareSplit());
    const auto common = task.commonClasses(), rare = task.rareClasses();
    ASSERT_EQ(common.size(), 6u);
    ASSERT_EQ(rare.size(), 14u);
    std::set<int64_t> all(common.begin(), common.end());
    all.insert(rare.begin(), rare.end());
    all.insert(task.holdoutClasses().begin(), task.holdoutClasses().end());
    EXPECT_EQ(all.size(), 30u); // disjoint …
    EXPECT_EQ(*all.begin(), 0); // … and covering the ids 0 … 29
    EXPECT_EQ(*all.rbegin(), 29);
    // Common = the first n_common_classes training classes in permuted (Zipf rank) order, rare = the rest.
    EXPECT_EQ(common, std::vector<int64_t>(task.trainingClasses().begin(), task.trainingClasses().begin() + 6));
    EXPECT_EQ(rare, std::vector<int64_t>(task.trainingClasses().begin() + 6, task.trainingClasses().end()));

    // The permutation is fixed by the seed: the same seed gives the same sets, and the split does not move
    // the training / holdout partition (a smaller common set is a prefix of a larger one).
    EXPECT_EQ(icl::FewShotClassification(o).commonClasses(), common);
    EXPECT_EQ(icl::FewShotClassification(o).rareClasses(), rare);
    auto fewer = o;
    fewer.n_common_classes = 3;
    const icl::FewShotClassification f(fewer);
    EXPECT_EQ(f.commonClasses(), std::vector<int64_t>(common.begin(), common.begin() + 3));
    EXPECT_EQ(f.trainingClasses(), task.trainingClasses());
    EXPECT_EQ(f.holdoutClasses(), task.holdoutClasses());
    auto noSplit = o;
    noSplit.n_common_classes = 0;
    EXPECT_EQ(icl::FewShotClassification(noSplit).trainingClasses(), task.trainingClasses());
    // Another seed, another permutation: over 5 other seeds the common set changes every time (P(same 6 of 20
    // in the same order) is negligible).
    for (uint64_t seed = 100; seed < 105; ++seed) {
        auto other = o;
        other.seed = seed;
        EXPECT_NE(icl::FewShotClassification(other).commonClasses(), common) << "seed " << seed;
    }
}

namespace {

// H_n(α) = Σ_{r=1}^{n} r^−α over ranks first … last (1-based, inclusive).
double zipfMass(int first, int last, double alpha)
{
    double h = 0;
    for (int r = first; r <= last; ++r)
        h += std::pow(r, -alpha);
    return h;
}

// χ² of observed counts against probabilities p (same order); counts sum to n.
double chiSquare(const std::vector<double>& counts, const std::vector<double>& p)
{
    double n = 0, chi2 = 0;
    for (double c : counts)
        n += c;
    for (size_t i = 0; i < counts.size(); ++i)
        chi2 += (counts[i] - n * p[i]) * (counts[i] - n * p[i]) / (n * p[i]);
    return chi2;
}

} // namespace

// Bursty sequences on common / rare classes (p_bursty_zipfian = 0): the query class and the second class (3 each)
// come from one set, the L − 6 others from the other set, and a fraction p_bursty_common of them are on common
// classes; uniform within each set; non-bursty "common" sequences hold common classes only.
TEST(FewShotClassification, CommonAndRareBurstySequencesFollowTheConfiguredMix)
{
    auto o = commonRareOptions(6); // Zipf α irrelevant within the sets (uniform), only for the Zipf kind
    o.p_bursty = 0.75;
    o.p_bursty_zipfian = 0.0;
    o.p_bursty_common = 0.3;
    o.non_bursty_type = "common";
    const icl::FewShotClassification task(o);
    const auto commonV = task.commonClasses(), rareV = task.rareClasses();
    const std::set<int64_t> common(commonV.begin(), commonV.end()), rare(rareV.begin(), rareV.end());
    const int64_t n = 20000;
    const auto b = task.sampleTraining(n, 4);
    const auto cls = b.classes.accessor<int64_t, 2>();
    const auto bursty = b.bursty.accessor<bool, 1>();
    int64_t nBursty = 0, burstyCommon = 0;
    std::map<int64_t, double> commonQueries, rareQueries;
    for (int64_t s = 0; s < n; ++s) {
        const int64_t q = cls[s][8];
        if (!bursty[s]) {
            for (int64_t i = 0; i < 9; ++i)
                ASSERT_EQ(common.count(cls[s][i]), 1u) << "non-bursty \"common\" sequence " << s;
            continue;
        }
        ++nBursty;
        const bool onCommon = common.count(q) == 1;
        const std::set<int64_t>& own = onCommon ? common : rare;
        const std::set<int64_t>& other = onCommon ? rare : common;
        ASSERT_EQ(own.count(q), 1u);
        std::map<int64_t, int> count;
        for (int64_t i = 0; i < 8; ++i)
            ++count[cls[s][i]];
        int fromOwn = 0, fromOther = 0;
        for (const auto& [c, k] : count) {
            if (own.count(c)) {
                EXPECT_EQ(k, 3) << "a class of the few-shot problem shows 3 times, sequence " << s;
                fromOwn += k;
            } else {
                EXPECT_EQ(other.count(c), 1u) << "class " << c << " is neither common nor rare";
                fromOther += k;
            }
        }
        EXPECT_EQ(count[q], 3) << "sequence " << s;
        EXPECT_EQ(fromOwn, 6) << "query class and second class of the same set, sequence " << s;
        EXPECT_EQ(fromOther, 2) << "L − 6 = 2 items of the other set, sequence " << s;
        burstyCommon += onCommon;
        ++(onCommon ? commonQueries : rareQueries)[q];
    }
    EXPECT_NEAR(nBursty / double(n), 0.75, binomialTolerance(0.75, n));
    EXPECT_NEAR(burstyCommon / double(nBursty), 0.3, binomialTolerance(0.3, nBursty));
    // Uniform within the sets: χ² with 5 (common) and 23 (rare) degrees of freedom,
    // P(χ² > 20.5) = P(χ² > 49.7) = 0.001.
    ASSERT_EQ(commonQueries.size(), 6u);
    ASSERT_EQ(rareQueries.size(), 24u);
    std::vector<double> cc, rc;
    for (const auto& [c, k] : commonQueries)
        cc.push_back(k);
    for (const auto& [c, k] : rareQueries)
        rc.push_back(k);
    EXPECT_LT(chiSquare(cc, std::vector<double>(6, 1.0 / 6)), 20.5);
    EXPECT_LT(chiSquare(rc, std::vector<double>(24, 1.0 / 24)), 49.7);
}

// A mix of Zipf, common and rare bursty sequences: P(query common) = p_zipf·Z_c + p_common, with Z_c the Zipf mass of
// the common ranks; with zipf_within_common_rare the common queries of common few-shot problems follow the Zipf
// weights renormalised over the common ranks.
TEST(FewShotClassification, QueryFrequenciesOfZipfCommonAndRareMixMatchClosedForm)
{
    for (bool zipfWithin : {false, true}) {
        auto o = commonRareOptions(5);
        o.p_bursty = 1.0;
        o.p_bursty_zipfian = 0.4;
        o.p_bursty_common = 0.2;
        o.zipf_within_common_rare = zipfWithin;
        const icl::FewShotClassification task(o);
        const auto commonV = task.commonClasses();
        const std::set<int64_t> common(commonV.begin(), commonV.end());
        const int64_t n = 40000;
        const auto q = task.sampleTraining(n, 8).queryClasses();
        const auto qa = q.accessor<int64_t, 1>();
        int64_t queryCommon = 0;
        for (int64_t s = 0; s < n; ++s)
            queryCommon += common.count(qa[s]);
        const double zc = zipfMass(1, 5, 1.0) / zipfMass(1, 30, 1.0);
        const double expected = 0.4 * zc + 0.2;
        EXPECT_NEAR(queryCommon / double(n), expected, binomialTolerance(expected, n)) << zipfWithin;
        // Each common class as a query: p = 0.4·r^−1/H_30 + 0.2·w_r, w_r = 1/5 (uniform) or r^−1/H_5 (Zipf
        // within).
        std::vector<double> counts, p;
        double pSum = 0;
        for (int r = 1; r <= 5; ++r) {
            const double w = zipfWithin ? std::pow(r, -1.0) / zipfMass(1, 5, 1.0) : 0.2;
            p.push_back(0.4 * std::pow(r, -1.0) / zipfMass(1, 30, 1.0) + 0.2 * w);
            pSum += p.back();
            counts.push_back(q.eq(commonV[size_t(r - 1)]).sum().item<int64_t>());
            EXPECT_NEAR(counts.back() / double(n), p.back(), binomialTolerance(p.back(), n))
                << "rank " << r << ", zipf within " << zipfWithin;
        }
        for (double& x : p)
            x /= pSum;
        // χ² with 4 degrees of freedom: P(χ² > 18.47) = 0.001.
        EXPECT_LT(chiSquare(counts, p), 18.47) << zipfWithin;
    }
}

// No-support sequences (training "common_no_support", IWL evaluation on common and on rare classes): the query
// class is never in the context, every class belongs to the set, labels are the classes' fixed labels.
TEST(FewShotClassification, NoSupportSequencesNeverContainTheQueryClass)
{
    auto o = smallOptions();
    o.n_classes = 24;
    o.n_common_classes = 4;
    o.labels_per_class = 2;
    o.p_bursty = 0.0;
    o.non_bursty_type = "common_no_support";
    const icl::FewShotClassification task(o);
    const auto commonV = task.commonClasses(), rareV = task.rareClasses();
    const std::set<int64_t> common(commonV.begin(), commonV.end()), rare(rareV.begin(), rareV.end());
    struct Case {
        icl::FewShotBatch batch;
        const std::set<int64_t>* set;
        const char* what;
    };
    const std::vector<Case> cases = {
        {task.sampleTraining(3000, 1), &common, "training common_no_support"},
        {task.sampleIwlEval(icl::FewShotClassSet::Common, 3000, 1), &common, "IWL common"},
        {task.sampleIwlEval(icl::FewShotClassSet::Rare, 3000, 1), &rare, "IWL rare"}};
    for (const auto& [b, set, what] : cases) {
        EXPECT_FALSE(b.bursty.any().item<bool>()) << what;
        const auto cls = b.classes.accessor<int64_t, 2>();
        const auto lab = b.labels.accessor<int64_t, 2>();
        std::set<int64_t> queries;
        for (int64_t s = 0; s < b.batchSize(); ++s) {
            queries.insert(cls[s][8]);
            for (int64_t i = 0; i < 9; ++i) {
                ASSERT_EQ(set->count(cls[s][i]), 1u) << what << ", sequence " << s << ", position " << i;
                if (i < 8)
                    ASSERT_NE(cls[s][i], cls[s][8]) << what << ", sequence " << s << ", position " << i;
                const auto fixed = task.labelsOf(cls[s][i]);
                EXPECT_NE(std::find(fixed.begin(), fixed.end(), lab[s][i]), fixed.end()) << what;
            }
        }
        EXPECT_EQ(queries, *set) << what << ": every class of the set is a query";
    }
}

// Few-shot (ICL) evaluation on common and on rare classes: 2 distinct classes of the set, 4 shots each, labels
// {0, 1} per sequence; uniform over the set, so each class is in a sequence with probability 2/|set|.
TEST(FewShotClassification, FewShotCommonAndRareSequencesUseOnlyClassesOfThatSet)
{
    auto o = smallOptions();
    o.n_classes = 20;
    o.n_common_classes = 5;
    const icl::FewShotClassification task(o);
    for (const auto set : {icl::FewShotClassSet::Common, icl::FewShotClassSet::Rare}) {
        const auto members = set == icl::FewShotClassSet::Common ? task.commonClasses() : task.rareClasses();
        const std::set<int64_t> allowed(members.begin(), members.end());
        const int64_t n = 4000;
        const auto b = task.sampleIclEval(set, n, 2);
        EXPECT_TRUE(b.bursty.all().item<bool>());
        const auto cls = b.classes.accessor<int64_t, 2>();
        const auto lab = b.labels.accessor<int64_t, 2>();
        std::map<int64_t, int64_t> sequencesWithClass;
        for (int64_t s = 0; s < n; ++s) {
            std::map<int64_t, int> count;
            std::map<int64_t, std::set<int64_t>> labelsOfClass;
            for (int64_t i = 0; i < 8; ++i) {
                ++count[cls[s][i]];
                labelsOfClass[cls[s][i]].insert(lab[s][i]);
                ASSERT_TRUE(lab[s][i] == 0 || lab[s][i] == 1);
            }
            ASSERT_EQ(count.size(), 2u) << fewShotClassSetName(set) << ", sequence " << s;
            for (const auto& [c, k] : count) {
                ASSERT_EQ(allowed.count(c), 1u) << "class " << c << " not " << fewShotClassSetName(set);
                EXPECT_EQ(k, 4);
                ASSERT_EQ(labelsOfClass[c].size(), 1u);
                ++sequencesWithClass[c];
            }
            EXPECT_NE(*labelsOfClass.begin()->second.begin(), *labelsOfClass.rbegin()->second.begin());
            ASSERT_EQ(count.count(cls[s][8]), 1u);
            EXPECT_EQ(lab[s][8], *labelsOfClass[cls[s][8]].begin());
        }
        ASSERT_EQ(sequencesWithClass.size(), allowed.size());
        const double p = 2.0 / double(allowed.size());
        for (const auto& [c, k] : sequencesWithClass)
            EXPECT_NEAR(k / double(n), p, binomialTolerance(p, n)) << fewShotClassSetName(set) << " class " << c;
    }
    // Each set has its own stream of draws: the label layouts (labels {0, 1} of context and query) differ.
    const torch::Tensor holdoutLabels = task.sampleIclEval(icl::FewShotClassSet::Holdout, 64, 0).labels;
    const torch::Tensor commonLabels = task.sampleIclEval(icl::FewShotClassSet::Common, 64, 0).labels;
    const torch::Tensor rareLabels = task.sampleIclEval(icl::FewShotClassSet::Rare, 64, 0).labels;
    EXPECT_FALSE(torch::equal(holdoutLabels, commonLabels));
    EXPECT_FALSE(torch::equal(commonLabels, rareLabels));
}

TEST(FewShotClassification, InvalidCommonRareOptionsThrow)
{
    auto with = [](auto edit) {
        auto o = smallOptions();
        o.n_common_classes = 5;
        edit(o);
        return o;
    };
    using icl::FewShotClassification;
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.n_common_classes = 1; })), icl::Error);
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.n_common_classes = 19; })), icl::Error); // 1 rare
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.n_common_classes = -1; })), icl::Error);
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.p_bursty_common = 0.5; })), icl::Error); // sum 1.5
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.p_bursty_zipfian = -0.1; })), icl::Error);
    EXPECT_THROW(FewShotClassification(with([](auto& o) { o.non_bursty_type = "rare"; })), icl::Error);
    EXPECT_NO_THROW(FewShotClassification(with([](auto& o) {
        o.p_bursty_zipfian = 0.5;
        o.p_bursty_common = 0.5;
    })));
    // Without a split the common / rare options must keep their defaults, and there are no such sets.
    auto none = [&](auto edit) { return with([&](auto& o) { o.n_common_classes = 0; edit(o); }); };
    EXPECT_THROW(FewShotClassification(none([](auto& o) { o.p_bursty_zipfian = 0.5; })), icl::Error);
    EXPECT_THROW(FewShotClassification(none([](auto& o) { o.p_bursty_common = 0.0001; o.p_bursty_zipfian = 0.5; })),
                 icl::Error);
    EXPECT_THROW(FewShotClassification(none([](auto& o) { o.non_bursty_type = "common"; })), icl::Error);
    EXPECT_THROW(FewShotClassification(none([](auto& o) { o.zipf_within_common_rare = true; })), icl::Error);
    const FewShotClassification noSplit(smallOptions());
    EXPECT_THROW(noSplit.sampleIclEval(icl::FewShotClassSet::Common, 4, 0), icl::Error);
    EXPECT_THROW(noSplit.sampleIwlEval(icl::FewShotClassSet::Rare, 4, 0), icl::Error);
    EXPECT_THROW(noSplit.sampleIwlEval(icl::FewShotClassSet::Holdout, 4, 0), icl::Error);
}
