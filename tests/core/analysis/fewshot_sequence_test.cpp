// The sequence viewer's facade (sampleFewShotSequence) on tiny few-shot classification runs written by
// icl::train (Chan et al. 2022, docs/science.md §4). Expected values come from the sequence rules of the paper
// (bursty 3/3/2, ICL 2 holdout classes × 4 shots with labels {0, 1}, IWL without support), from the stored
// IDX images written here, from a task built independently from the stored config, and from a forward of a
// model rebuilt here from the checkpoint's parameters (not through the facade's loader).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include "core/analysis/classification_run.h"
#include "core/analysis/fewshot_sequence.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/models/sequence_classifier.h"
#include "core/tasks/fewshot_classification.h"
#include "core/training/checkpoint.h"
#include "core/training/trainer.h"
#include "tests/core/io/image_fixtures.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_models.h"

namespace fs = std::filesystem;
using icl::FewShotSequence;
using icl::FewShotSequenceKind;

namespace {

constexpr int64_t kImageClasses = 12;

nlohmann::json vectorConfig()
{
    return {{"seed", 4},
            {"device", "cpu"},
            {"task",
             {{"kind", "fewshot_classification"}, {"layout", "interleaved"}, {"n_context", 8}, {"n_classes", 30},
              {"n_holdout", 4}, {"exemplar_dim", 8}, {"within_class_noise", 0.1}, {"p_bursty", 0.9}}},
            {"model", {{"kind", "gpt2"}, {"n_layers", 1}, {"n_heads", 2}, {"d_model", 16}}},
            {"training",
             {{"optimizer", "adam"}, {"lr", 3e-3}, {"batch_size", 16}, {"steps", 20}, {"grad_clip", 1.0},
              {"schedule", "inverse_sqrt"}, {"warmup_steps", 5}, {"eval_every", 5}, {"checkpoint_every", 10}}},
            {"eval", {{"n_prompts", 64}}}};
}

/// Pixel p of image i of the IDX fixture (class i mod kImageClasses), 0…255.
int pixel(int i, int p)
{
    return (i * 37 + p * 11) % 256;
}

class FewShotSequenceTest : public ::testing::Test {
protected:
    // A fixture that cannot be built fails every test of the suite (GoogleTest would otherwise report them as
    // skipped, which ctest counts as not run rather than failed).
    static void SetUpTestSuite()
    {
        try {
            buildFixtures();
        } catch (const std::exception& e) {
            s_fixtureError = e.what();
        }
    }

    void SetUp() override { ASSERT_TRUE(s_fixtureError.empty()) << "fixture: " << s_fixtureError; }

    static void buildFixtures()
    {
        // One folder per process: ctest runs every test of this suite as its own process, in parallel, and each
        // builds these fixtures; shared paths would race (one process replacing a file another one reads).
        const std::string dir = icl::test::scratchPrefix() + "fewshot_sequence_" + std::to_string(::getpid()) + "/";
        fs::create_directories(dir);
        s_vectors = dir + "fewshot_sequence_vectors.h5";
        fs::remove(s_vectors);
        icl::TrainOptions o = icl::test::cpuTrainOptions(s_vectors);
        icl::train(vectorConfig(), o, {});

        // 4 × 4 IDX images: 36 of them, class i mod 12, no within-class noise.
        s_images = dir + "fewshot_sequence_images.idx";
        const std::string labels = dir + "fewshot_sequence_labels.idx";
        fixtures::writeIdxImageSet(s_images, labels, 36, 4, 4, [](int i, int p) { return uint8_t(pixel(i, p)); },
                                   kImageClasses);
        nlohmann::json c = vectorConfig();
        c["task"].update({{"n_classes", 10}, {"n_holdout", 2}, {"exemplar_source", "idx"}, {"exemplar_path", s_images},
                          {"exemplar_labels_path", labels}, {"within_class_noise", 0.0}});
        c["training"]["steps"] = 3;
        s_imageRun = dir + "fewshot_sequence_idx.h5";
        fs::remove(s_imageRun);
        o.out_path = s_imageRun;
        icl::train(c, o, {});
    }

    /// The run's task, built here from the stored config (class split, labels, exemplar source).
    static icl::FewShotClassification taskOf(const std::string& path)
    {
        const icl::ExperimentConfig config
            = icl::parseConfig(nlohmann::json::parse(icl::readRunSummary(path).config_json));
        return icl::FewShotClassification(icl::fewShotOptions(config.task, config.seed));
    }

    static std::map<int64_t, int> contextClassCounts(const FewShotSequence& s)
    {
        std::map<int64_t, int> counts;
        for (int64_t i = 0; i < s.contextLength(); ++i)
            ++counts[s.items[size_t(i)].class_id];
        return counts;
    }

    static std::string s_vectors;
    static std::string s_images;
    static std::string s_imageRun;
    static std::string s_fixtureError;
};

std::string FewShotSequenceTest::s_vectors;
std::string FewShotSequenceTest::s_images;
std::string FewShotSequenceTest::s_imageRun;
std::string FewShotSequenceTest::s_fixtureError;

} // namespace

TEST(FewShotSequenceKind, NamesRoundTrip)
{
    for (const char* name : {"training", "training_bursty", "training_iid", "icl", "iwl"}) {
        const auto kind = icl::fewShotSequenceKindFromName(name);
        ASSERT_TRUE(kind.has_value()) << name;
        EXPECT_EQ(icl::fewShotSequenceKindName(*kind), name);
    }
    EXPECT_FALSE(icl::fewShotSequenceKindFromName("bursty").has_value());
}

TEST_F(FewShotSequenceTest, BurstyTrainingSequencesHaveTheQueryClassThriceASecondClassThriceAndTwoOthers)
{
    const icl::FewShotClassification task = taskOf(s_vectors);
    const std::set<int64_t> holdout(task.holdoutClasses().begin(), task.holdoutClasses().end());
    for (uint64_t seed = 0; seed < 40; ++seed) {
        const FewShotSequence s = icl::sampleFewShotSequence(s_vectors, -1, FewShotSequenceKind::TrainingBursty, seed);
        ASSERT_EQ(s.items.size(), 9u);
        EXPECT_TRUE(s.bursty);
        EXPECT_EQ(s.checkpoint_step, 20);
        EXPECT_EQ(s.exemplar_shape, (std::vector<int64_t>{8}));
        const int64_t q = s.query().class_id;
        std::map<int64_t, int> counts = contextClassCounts(s);
        EXPECT_EQ(counts[q], 3) << "seed " << seed;
        int second = 0, others = 0; // classes ≠ q seen 3 times; items of the remaining classes
        for (const auto& [c, n] : counts) {
            if (c == q)
                continue;
            if (n == 3 && second == 0)
                second = 1;
            else
                others += n;
        }
        EXPECT_EQ(second, 1) << "seed " << seed;
        EXPECT_EQ(others, 2) << "seed " << seed;
        for (const icl::FewShotItem& item : s.items) {
            EXPECT_FALSE(item.holdout);
            EXPECT_EQ(holdout.count(item.class_id), 0u) << "holdout classes never appear in training sequences";
            EXPECT_EQ(item.label, task.labelsOf(item.class_id).at(0)) << "fixed labels (one per class)";
            EXPECT_EQ(item.exemplar.size(), 8u);
        }
        EXPECT_EQ(s.true_label, s.query().label);
        EXPECT_TRUE(std::any_of(s.items.begin(), s.items.end() - 1,
                                [&](const icl::FewShotItem& i) { return i.label == s.true_label; }));
    }
}

TEST_F(FewShotSequenceTest, TrainingSequencesAreTheTasksDrawsAndBurstyAtRateP)
{
    const icl::FewShotClassification task = taskOf(s_vectors);
    int bursty = 0;
    const int n = 200;
    for (uint64_t seed = 0; seed < uint64_t(n); ++seed) {
        const FewShotSequence s = icl::sampleFewShotSequence(s_vectors, 10, FewShotSequenceKind::Training, seed);
        EXPECT_EQ(s.checkpoint_step, 10);
        bursty += s.bursty;
        if (seed < 5) {
            // The same draw as the task's own sampleTraining with batch size 1 and index `seed`.
            const icl::FewShotBatch b = task.sampleTraining(1, seed);
            EXPECT_EQ(s.bursty, b.bursty[0].item<bool>());
            for (int64_t i = 0; i < 9; ++i) {
                EXPECT_EQ(s.items[size_t(i)].class_id, b.classes[0][i].item<int64_t>());
                EXPECT_EQ(s.items[size_t(i)].label, b.labels[0][i].item<int64_t>());
                for (int64_t k = 0; k < 8; ++k)
                    EXPECT_EQ(s.items[size_t(i)].exemplar[size_t(k)], b.exemplars[0][i][k].item<float>());
            }
            if (s.bursty) { // a bursty draw is also what training_bursty shows for that seed
                const FewShotSequence forced
                    = icl::sampleFewShotSequence(s_vectors, 10, FewShotSequenceKind::TrainingBursty, seed);
                for (size_t i = 0; i < 9; ++i)
                    EXPECT_EQ(forced.items[i].class_id, s.items[i].class_id);
            }
        }
        const FewShotSequence iid = icl::sampleFewShotSequence(s_vectors, 10, FewShotSequenceKind::TrainingIid, seed);
        EXPECT_FALSE(iid.bursty);
        for (const icl::FewShotItem& item : iid.items)
            EXPECT_FALSE(item.holdout);
    }
    // p_bursty = 0.9: binomial standard deviation √(0.9·0.1/200) ≈ 0.021; 0.1 is almost 5 of them.
    EXPECT_NEAR(double(bursty) / n, 0.9, 0.1);
}

TEST_F(FewShotSequenceTest, IclSequencesHaveTwoHoldoutClassesWithFourShotsAndLabelsZeroAndOne)
{
    for (uint64_t seed = 0; seed < 30; ++seed) {
        const FewShotSequence s = icl::sampleFewShotSequence(s_vectors, -1, FewShotSequenceKind::Icl, seed);
        const std::map<int64_t, int> counts = contextClassCounts(s);
        ASSERT_EQ(counts.size(), 2u) << "seed " << seed;
        std::map<int64_t, std::set<int64_t>> labelsOfClass;
        for (const icl::FewShotItem& item : s.items) {
            EXPECT_TRUE(item.holdout);
            EXPECT_TRUE(item.label == 0 || item.label == 1);
            labelsOfClass[item.class_id].insert(item.label);
        }
        for (const auto& [c, n] : counts) {
            EXPECT_EQ(n, 4);
            EXPECT_EQ(labelsOfClass[c].size(), 1u) << "one label per class within the sequence";
        }
        EXPECT_NE(*labelsOfClass.begin()->second.begin(), *labelsOfClass.rbegin()->second.begin());
        EXPECT_EQ(counts.count(s.query().class_id), 1u) << "the query is one of the two classes";
        EXPECT_TRUE(s.bursty);
        EXPECT_TRUE(s.predicted_label_01 == 0 || s.predicted_label_01 == 1);
    }
}

TEST_F(FewShotSequenceTest, IwlSequencesHaveNoSupportForTheQueryClass)
{
    const icl::FewShotClassification task = taskOf(s_vectors);
    for (uint64_t seed = 0; seed < 30; ++seed) {
        const FewShotSequence s = icl::sampleFewShotSequence(s_vectors, -1, FewShotSequenceKind::Iwl, seed);
        EXPECT_FALSE(s.bursty);
        EXPECT_EQ(contextClassCounts(s).count(s.query().class_id), 0u) << "seed " << seed;
        for (const icl::FewShotItem& item : s.items) {
            EXPECT_FALSE(item.holdout);
            EXPECT_EQ(item.label, task.labelsOf(item.class_id).at(0));
        }
        // With one label per class and no support, the right label is never in the context.
        EXPECT_TRUE(std::none_of(s.items.begin(), s.items.end() - 1,
                                 [&](const icl::FewShotItem& i) { return i.label == s.true_label; }));
    }
}

TEST_F(FewShotSequenceTest, PredictionIsTheArgmaxOfAnIndependentForwardOfTheCheckpoint)
{
    const icl::ExperimentConfig config
        = icl::parseConfig(nlohmann::json::parse(icl::readRunSummary(s_vectors).config_json));
    for (const int64_t step : {int64_t(10), int64_t(20)}) {
        // The model rebuilt here from the stored parameters.
        icl::SequenceClassifier model = icl::makeSequenceClassifier(config, {8}, 123);
        icl::loadParams(*model, icl::readCheckpoint(s_vectors, step).params, "test");
        model->eval();
        for (FewShotSequenceKind kind : {FewShotSequenceKind::Training, FewShotSequenceKind::Icl, FewShotSequenceKind::Iwl})
            for (uint64_t seed = 0; seed < 4; ++seed) {
                const FewShotSequence s = icl::sampleFewShotSequence(s_vectors, step, kind, seed);
                ASSERT_EQ(s.checkpoint_step, step);
                // The batch of this one sequence, from the values the facade reports.
                std::vector<float> x;
                std::vector<int64_t> labels, classes;
                for (const icl::FewShotItem& item : s.items) {
                    x.insert(x.end(), item.exemplar.begin(), item.exemplar.end());
                    labels.push_back(item.label);
                    classes.push_back(item.class_id);
                }
                icl::FewShotBatch b{torch::tensor(x).view({1, 9, 8}), torch::tensor(labels).view({1, 9}),
                                    torch::tensor(classes).view({1, 9}), torch::zeros({1}, torch::kBool)};
                torch::Tensor logits;
                {
                    torch::NoGradGuard guard;
                    logits = model->forward(b)[0].to(torch::kFloat64);
                }
                const torch::Tensor p = torch::softmax(logits, 0);
                ASSERT_EQ(int64_t(s.probabilities.size()), p.size(0)) << "the whole vocabulary";
                double sum = 0;
                for (int64_t l = 0; l < p.size(0); ++l) {
                    EXPECT_NEAR(s.probabilities[size_t(l)], p[l].item<double>(), 1e-12);
                    sum += s.probabilities[size_t(l)];
                }
                EXPECT_NEAR(sum, 1.0, 1e-12);
                const auto best = std::max_element(s.probabilities.begin(), s.probabilities.end());
                EXPECT_EQ(s.predicted_label, int64_t(best - s.probabilities.begin()));
                EXPECT_EQ(s.predicted_label_01, s.probabilities[1] > s.probabilities[0] ? 1 : 0);
                const bool inContext = std::any_of(s.items.begin(), s.items.end() - 1,
                                                   [&](const icl::FewShotItem& i) { return i.label == s.predicted_label; });
                EXPECT_EQ(s.prediction_in_context, inContext);
                EXPECT_EQ(s.correct(), s.predicted_label == s.query().label);
                const auto top = s.topLabels(5);
                ASSERT_EQ(top.size(), 5u);
                EXPECT_EQ(top[0].first, s.predicted_label);
                for (size_t i = 1; i < top.size(); ++i)
                    EXPECT_GE(top[i - 1].second, top[i].second);
            }
    }
}

TEST_F(FewShotSequenceTest, ImageExemplarsAreTheStoredImagesOfTheirClass)
{
    for (FewShotSequenceKind kind : {FewShotSequenceKind::Training, FewShotSequenceKind::Icl, FewShotSequenceKind::Iwl})
        for (uint64_t seed = 0; seed < 5; ++seed) {
            const FewShotSequence s = icl::sampleFewShotSequence(s_imageRun, -1, kind, seed);
            EXPECT_TRUE(s.isImage());
            EXPECT_EQ(s.exemplar_shape, (std::vector<int64_t>{4, 4}));
            EXPECT_EQ(s.checkpoint_step, 3);
            for (const icl::FewShotItem& item : s.items) {
                ASSERT_EQ(item.exemplar.size(), 16u);
                ASSERT_GE(item.class_id, 0);
                ASSERT_LT(item.class_id, kImageClasses);
                // No within-class noise: one of the 3 images i ≡ class (mod 12), intensities pixel/255.
                bool found = false;
                for (int i = int(item.class_id); i < 36 && !found; i += int(kImageClasses)) {
                    bool same = true;
                    for (int p = 0; p < 16; ++p)
                        same &= std::abs(item.exemplar[size_t(p)] - float(pixel(i, p)) / 255.0f) < 1e-6f;
                    found = same;
                }
                EXPECT_TRUE(found) << "class " << item.class_id;
            }
        }
}

TEST_F(FewShotSequenceTest, ErrorsNameTheFileAndTheProblem)
{
    try {
        icl::sampleFewShotSequence(s_vectors, 7, FewShotSequenceKind::Icl, 0);
        ADD_FAILURE() << "step 7 is no checkpoint";
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find('7'), std::string::npos) << e.what();
    }

    // A regression run: one checkpoint of a linear-regression GPT-2.
    const std::string regression = icl::test::scratchPrefix() + "fewshot_sequence_regression.h5";
    fs::remove(regression);
    icl::ConfigRequest r;
    r.preset = "garg-linear-regression";
    r.sets = {"task.d=2", "task.n_context=4", "model.n_layers=1", "model.n_heads=1", "model.d_model=8"};
    icl::test::writeModelRun(regression, icl::resolveConfig(r), 1, 0);
    try {
        icl::sampleFewShotSequence(regression, -1, FewShotSequenceKind::Training, 0);
        ADD_FAILURE() << "a regression run has no few-shot sequences";
    } catch (const icl::Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(regression), std::string::npos) << what;
        EXPECT_NE(what.find("fewshot_classification"), std::string::npos) << what;
        EXPECT_NE(what.find("sequence viewer"), std::string::npos) << what;
    }
}

// The loader keeps the last image source: a second load of the run reuses it, a rewritten image file is read
// again (and the sequences drawn from it are unchanged when its content is).
TEST_F(FewShotSequenceTest, ImageSourceIsReadOnceUntilItsFilesChange)
{
    const icl::LoadedClassificationRun a = icl::loadClassificationRun(s_imageRun, -1, "test");
    const icl::LoadedClassificationRun b = icl::loadClassificationRun(s_imageRun, 3, "test");
    EXPECT_EQ(a.source.get(), b.source.get());
    const FewShotSequence before = icl::sampleFewShotSequence(s_imageRun, -1, FewShotSequenceKind::Icl, 1);

    // The same bytes written again, one second later as far as the file system knows.
    std::ifstream in(s_images, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const auto then = fs::last_write_time(s_images);
    std::ofstream(s_images, std::ios::binary | std::ios::trunc) << bytes;
    fs::last_write_time(s_images, then + std::chrono::seconds(1));
    const icl::LoadedClassificationRun c = icl::loadClassificationRun(s_imageRun, -1, "test");
    EXPECT_NE(c.source.get(), a.source.get()) << "a changed file is read again";
    const FewShotSequence after = icl::sampleFewShotSequence(s_imageRun, -1, FewShotSequenceKind::Icl, 1);
    ASSERT_EQ(after.items.size(), before.items.size());
    for (size_t i = 0; i < after.items.size(); ++i)
        EXPECT_EQ(after.items[i].exemplar, before.items[i].exemplar);
    EXPECT_EQ(after.probabilities, before.probabilities);
}

// With a common / rare split (task.n_common_classes) the items of rare classes are flagged: exactly the classes
// past the first n_common_classes of the run's training classes (task built here); without a split none is.
TEST_F(FewShotSequenceTest, RareClassesOfACommonRareSplitAreFlagged)
{
    nlohmann::json c = vectorConfig();
    c["task"].update({{"n_common_classes", 10}, {"p_bursty_zipfian", 0.0}, {"non_bursty_type", "common"}});
    c["training"]["steps"] = 2;
    c["training"]["eval_every"] = 2;
    c["training"]["checkpoint_every"] = 2;
    const std::string path = icl::test::scratchPrefix() + "fewshot_sequence_split.h5";
    fs::remove(path);
    icl::TrainOptions o = icl::test::cpuTrainOptions(path);
    icl::train(c, o, {});
    const icl::FewShotClassification task = taskOf(path);
    const std::vector<int64_t>& training = task.trainingClasses();
    const std::set<int64_t> rare(training.begin() + 10, training.end());
    ASSERT_EQ(rare.size(), 20u);
    int nRare = 0, nCommon = 0;
    for (uint64_t seed = 0; seed < 20; ++seed)
        for (FewShotSequenceKind kind : {FewShotSequenceKind::Training, FewShotSequenceKind::Iwl})
            for (const icl::FewShotItem& item : icl::sampleFewShotSequence(path, -1, kind, seed).items) {
                EXPECT_EQ(item.rare, rare.count(item.class_id) == 1) << "class " << item.class_id;
                (item.rare ? nRare : nCommon) += 1;
            }
    EXPECT_GT(nRare, 0);
    EXPECT_GT(nCommon, 0);
    for (const icl::FewShotItem& item : icl::sampleFewShotSequence(path, -1, FewShotSequenceKind::Icl, 0).items)
        EXPECT_FALSE(item.rare) << "holdout classes are neither common nor rare";
    for (const icl::FewShotItem& item : icl::sampleFewShotSequence(s_vectors, -1, FewShotSequenceKind::Training, 0).items)
        EXPECT_FALSE(item.rare) << "no split, no rare classes";
}
