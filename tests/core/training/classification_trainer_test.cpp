// Training and evaluation of the few-shot classification task (Chan et al. 2022, docs/science.md §4).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/analysis/icl_curve.h"
#include "core/analysis/icl_iwl.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/classification_trainer.h"
#include "tests/core/io/image_fixtures.h"
#include "tests/support/core_checks.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;

namespace {

nlohmann::json fewShotConfig(const std::string& model = "gpt2")
{
    return {{"seed", 4},
            {"device", "cpu"},
            {"task",
             {{"kind", "fewshot_classification"}, {"layout", "interleaved"}, {"n_context", 8}, {"n_classes", 30},
              {"n_holdout", 4}, {"exemplar_dim", 8}, {"within_class_noise", 0.1}, {"p_bursty", 0.9}}},
            {"model", {{"kind", model}, {"n_layers", 1}, {"n_heads", 2}, {"d_model", 16}}},
            {"training",
             {{"optimizer", "adam"}, {"lr", 3e-3}, {"batch_size", 16}, {"steps", 20}, {"grad_clip", 1.0},
              {"schedule", "inverse_sqrt"}, {"warmup_steps", 5}, {"eval_every", 5}, {"checkpoint_every", 10}}},
            {"eval", {{"n_prompts", 64}}}};
}

icl::FewShotBatch handBatch()
{
    // Two sequences with L = 2 context pairs: labels (context…, query).
    icl::FewShotBatch b;
    b.exemplars = torch::zeros({2, 3, 1});
    b.labels = torch::tensor(std::vector<int64_t>{1, 5, 1, 3, 0, 2}).view({2, 3});
    b.classes = torch::zeros({2, 3}, torch::kInt64);
    b.bursty = torch::zeros({2}, torch::kBool);
    return b;
}

/// fewShotConfig() on exemplars read from the IDX files `images` and `labels`: 10 training and 2 holdout classes.
nlohmann::json idxExemplarConfig(const std::string& images, const std::string& labels)
{
    nlohmann::json c = fewShotConfig();
    c["task"].update({{"n_classes", 10}, {"n_holdout", 2}, {"exemplar_source", "idx"}, {"exemplar_path", images},
                      {"exemplar_labels_path", labels}});
    return c;
}

/// The parameter of `cp` named `name`; nullptr when it holds none.
const icl::NamedArray* paramNamed(const icl::CheckpointData& cp, const std::string& name)
{
    for (const auto& a : cp.params)
        if (a.name == name)
            return &a;
    return nullptr;
}

} // namespace

// A hand-built predictor: logits chosen so that the answers are known.
TEST(ClassificationMetrics, AccuracyRestrictedLabelsAndInContextRateOfAHandBuiltPredictor)
{
    const icl::FewShotBatch b = handBatch();
    // Sequence 0 (query label 1): argmax over all labels is 5 (wrong, but in the context); over {0, 1} it is 1.
    // Sequence 1 (query label 2): argmax over all labels is 2 (right, not in the context {3, 0}); over {0, 1} it is 0.
    torch::Tensor logits = torch::zeros({2, 6}, torch::kFloat64);
    logits[0][5] = 3.0;
    logits[0][1] = 1.0;
    logits[1][2] = 4.0;
    logits[1][0] = 0.5;
    const icl::ClassificationMetrics m = icl::classificationMetrics(logits, b);
    EXPECT_DOUBLE_EQ(m.accuracy, 0.5);
    EXPECT_DOUBLE_EQ(m.accuracy_01, 0.5);  // sequence 0 right (1), sequence 1 wrong (0 ≠ 2)
    EXPECT_DOUBLE_EQ(m.in_context_rate, 0.5);
    // Cross-entropy by hand: −log softmax at the target.
    auto ce = [](std::vector<double> z, int t) {
        double s = 0;
        for (double v : z)
            s += std::exp(v);
        return -(z[size_t(t)] - std::log(s));
    };
    const double expected = 0.5 * (ce({0, 1, 0, 0, 0, 3}, 1) + ce({0.5, 0, 4, 0, 0, 0}, 2));
    EXPECT_NEAR(m.loss, expected, 1e-12);
}

TEST(ClassificationTrainer, TrainsStoresIclAndIwlMetricsAndResumesBitwise)
{
    const std::string straight = icl::test::freshScratchFile("fewshot_straight.h5");
    icl::TrainOptions o = icl::test::cpuTrainOptions(straight);
    const icl::TrainResult r = icl::train(fewShotConfig(), o, {});
    EXPECT_EQ(r.final_step, 20);
    const icl::RunSummary s = icl::readRunSummary(straight);
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 5, 10, 15, 20}));
    for (const char* name : {"icl_accuracy", "icl_accuracy_all_labels", "iwl_accuracy", "eval_accuracy",
                             "icl_in_context_rate", "iwl_in_context_rate"})
        for (double v : s.metrics.at(name)) {
            EXPECT_GE(v, 0.0) << name;
            EXPECT_LE(v, 1.0) << name;
        }
    // Accuracies are fractions of 64 sequences.
    for (double v : s.metrics.at("icl_accuracy"))
        EXPECT_DOUBLE_EQ(v * 64.0, std::round(v * 64.0));
    EXPECT_TRUE(std::isfinite(s.metrics.at("eval_loss").back()));

    // The on-demand evaluation on the run's own sequences reproduces the stored metrics of that checkpoint.
    const icl::IclIwlResult e = icl::computeIclIwl(straight, {});
    EXPECT_EQ(e.checkpoint_step, 20);
    EXPECT_EQ(e.n_sequences, 64);
    EXPECT_DOUBLE_EQ(e.icl_accuracy, s.metrics.at("icl_accuracy").back());
    EXPECT_DOUBLE_EQ(e.icl_accuracy_all_labels, s.metrics.at("icl_accuracy_all_labels").back());
    EXPECT_DOUBLE_EQ(e.iwl_accuracy, s.metrics.at("iwl_accuracy").back());
    EXPECT_DOUBLE_EQ(e.iwl_in_context_rate, s.metrics.at("iwl_in_context_rate").back());
    icl::IclIwlOptions at10;
    at10.checkpoint_step = 10;
    EXPECT_DOUBLE_EQ(icl::computeIclIwl(straight, at10).iwl_accuracy, s.metrics.at("iwl_accuracy")[2]);

    // Stop after 10 steps, resume to 20: identical parameters.
    const std::string split = icl::test::freshScratchFile("fewshot_split.h5");
    o.out_path = split;
    icl::train(fewShotConfig(), o, [](const icl::TrainProgress& p) { return p.step < 10; });
    o.resume = true;
    icl::train({}, o, {});
    icl::test::expectSameParams(icl::readCheckpoint(straight, 20), icl::readCheckpoint(split, 20));
}

TEST(ClassificationTrainer, RecurrentBaselinesTrain)
{
    for (const char* kind : {"lstm", "rnn"}) {
        const std::string path = icl::test::freshScratchFile(std::string("fewshot_") + kind + ".h5");
        icl::TrainOptions o = icl::test::cpuTrainOptions(path);
        nlohmann::json c = fewShotConfig(kind);
        c["training"]["steps"] = 5;
        EXPECT_EQ(icl::train(c, o, {}).final_step, 5) << kind;
        EXPECT_EQ(icl::readRunSummary(o.out_path).metrics.at("iwl_accuracy").size(), 2u) << kind;
    }
}

// The regression analyses refuse a few-shot run with a message that says what it is (not a missing parameter).
TEST(ClassificationTrainer, RegressionIclCurveRefusesAFewShotRun)
{
    icl::TrainOptions o = icl::test::cpuTrainOptions(icl::test::freshScratchFile("fewshot_icl_curve.h5"));
    nlohmann::json c = fewShotConfig();
    c["training"]["steps"] = 2;
    icl::train(c, o, {});
    icl::test::expectError([&] { icl::computeIclCurve(o.out_path, icl::IclCurveOptions{}); },
                           "few-shot classification run");
}

TEST(ClassificationTrainer, ConfigErrorsNameTheKey)
{
    auto expectError = [](nlohmann::json c, const std::string& needle) {
        try {
            icl::parseConfig(c);
            FAIL() << "accepted: " << c.dump();
        } catch (const icl::Error& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    nlohmann::json c = fewShotConfig("lsa");
    expectError(c, "model.kind");
    c = fewShotConfig();
    c["task"]["n_context"] = 7;
    expectError(c, "task.n_context");
    c = fewShotConfig();
    c["task"]["layout"] = "pair";
    expectError(c, "task.layout");
    c = fewShotConfig();
    c["task"]["n_holdout"] = 1;
    expectError(c, "task.n_holdout");
    c = fewShotConfig();
    c["task"]["p_bursty"] = 1.5;
    expectError(c, "task.p_bursty");
    nlohmann::json regression = {{"model", {{"kind", "lstm"}}}};
    expectError(regression, "model.kind");
    // The common / rare split (task.n_common_classes) and the options that need it.
    c = fewShotConfig();
    c["task"]["n_common_classes"] = 1;
    expectError(c, "task.n_common_classes");
    c["task"]["n_common_classes"] = 29;  // of 30: one rare class
    expectError(c, "task.n_common_classes");
    c = fewShotConfig();
    c["task"]["p_bursty_zipfian"] = 0.5;
    expectError(c, "task.p_bursty_zipfian");
    c = fewShotConfig();
    c["task"]["non_bursty_type"] = "common";
    expectError(c, "task.non_bursty_type");
    c["task"]["non_bursty_type"] = "rare";
    c["task"]["n_common_classes"] = 5;
    expectError(c, "task.non_bursty_type");
    c = fewShotConfig();
    c["task"]["zipf_within_common_rare"] = true;
    expectError(c, "task.zipf_within_common_rare");
    c["task"]["zipf_within_common_rare"] = "yes";
    c["task"]["n_common_classes"] = 5;
    expectError(c, "task.zipf_within_common_rare");
    c = fewShotConfig();
    c["task"]["n_common_classes"] = 5;
    c["task"]["p_bursty_zipfian"] = 0.7;
    c["task"]["p_bursty_common"] = 0.5;
    expectError(c, "task.p_bursty_common");
    c["task"]["p_bursty_common"] = 1.5;
    expectError(c, "task.p_bursty_common");
    // Absent keys: no split; the stored config round-trips them.
    const icl::ExperimentConfig plain = icl::parseConfig(fewShotConfig());
    EXPECT_EQ(plain.task.n_common_classes, 0);
    EXPECT_EQ(plain.task.p_bursty_zipfian, 1.0);
    EXPECT_EQ(plain.task.non_bursty_type, "zipfian");
    c["task"]["p_bursty_common"] = 0.25;
    c["task"]["non_bursty_type"] = "common_no_support";
    c["task"]["zipf_within_common_rare"] = true;
    const icl::ExperimentConfig parsed = icl::parseConfig(c);
    const icl::ExperimentConfig back = icl::parseConfig(icl::toJson(parsed));
    EXPECT_EQ(back.task.n_common_classes, 5);
    EXPECT_EQ(back.task.p_bursty_common, 0.25);
    EXPECT_EQ(back.task.p_bursty_zipfian, 0.7);
    EXPECT_EQ(back.task.non_bursty_type, "common_no_support");
    EXPECT_TRUE(back.task.zipf_within_common_rare);
}

// With a common / rare split the run also records ICL and IWL accuracy on the common and on the rare classes at
// every evaluation, and the on-demand evaluation on the run's own sequences reproduces them; without a split
// these metrics are absent.
TEST(ClassificationTrainer, CommonRareSplitRecordsAccuraciesPerClassSet)
{
    const std::string path = icl::test::freshScratchFile("fewshot_common_rare.h5");
    icl::TrainOptions o = icl::test::cpuTrainOptions(path);
    nlohmann::json c = fewShotConfig();
    c["task"]["n_common_classes"] = 6;
    c["task"]["p_bursty_zipfian"] = 0.5;
    c["task"]["p_bursty_common"] = 0.2;
    c["training"]["steps"] = 10;
    EXPECT_EQ(icl::train(c, o, {}).final_step, 10);
    const icl::RunSummary s = icl::readRunSummary(path);
    const std::vector<std::string> keys
        = {"icl_accuracy_common", "icl_accuracy_rare", "iwl_accuracy_common", "iwl_accuracy_rare"};
    for (const std::string& key : keys) {
        ASSERT_EQ(s.metrics.count(key), 1u) << key;
        EXPECT_EQ(s.metrics.at(key).size(), s.metrics.at("step").size()) << key;
        for (double v : s.metrics.at(key)) {
            EXPECT_GE(v, 0.0) << key;
            EXPECT_LE(v, 1.0) << key;
            EXPECT_DOUBLE_EQ(v * 64.0, std::round(v * 64.0)) << key << ": a fraction of 64 sequences";
        }
    }
    const icl::IclIwlResult e = icl::computeIclIwl(path, {});
    EXPECT_TRUE(e.common_rare_split);
    EXPECT_DOUBLE_EQ(e.icl_accuracy_common, s.metrics.at("icl_accuracy_common").back());
    EXPECT_DOUBLE_EQ(e.icl_accuracy_rare, s.metrics.at("icl_accuracy_rare").back());
    EXPECT_DOUBLE_EQ(e.iwl_accuracy_common, s.metrics.at("iwl_accuracy_common").back());
    EXPECT_DOUBLE_EQ(e.iwl_accuracy_rare, s.metrics.at("iwl_accuracy_rare").back());
    EXPECT_DOUBLE_EQ(e.icl_accuracy, s.metrics.at("icl_accuracy").back());

    const std::string plain = icl::test::freshScratchFile("fewshot_no_split.h5");
    o.out_path = plain;
    c = fewShotConfig();
    c["training"]["steps"] = 5;
    icl::train(c, o, {});
    const icl::RunSummary p = icl::readRunSummary(plain);
    for (const std::string& key : keys)
        EXPECT_EQ(p.metrics.count(key), 0u) << key;
    EXPECT_FALSE(icl::computeIclIwl(plain, {}).common_rare_split);
}

// Exemplars from IDX files (MNIST layout): 12 classes × 2 images of 4 × 4 pixels written here; the model's
// exemplar encoder reads 16 pixel values, and the run trains and evaluates on them.
TEST(ClassificationTrainer, TrainsOnIdxExemplars)
{
    const std::string images = icl::test::freshScratchFile("fewshot_images.idx");
    const std::string labels = icl::test::freshScratchFile("fewshot_labels.idx");
    fixtures::writeIdxImageSet(images, labels, 24, 4, 4,
                               [](int i, int p) { return uint8_t((i * 37 + p * 11) % 256); }, 12);
    nlohmann::json c = idxExemplarConfig(images, labels);
    c["training"]["steps"] = 3;
    icl::TrainOptions o = icl::test::cpuTrainOptions(icl::test::freshScratchFile("fewshot_idx.h5"));
    EXPECT_EQ(icl::train(c, o, {}).final_step, 3);
    const auto cp = icl::readCheckpoint(o.out_path, 3);
    const icl::NamedArray* encoder = paramNamed(cp, "encoder.weight");
    EXPECT_NE(encoder, nullptr);
    if (encoder)
        EXPECT_EQ(encoder->shape, (std::vector<int64_t>{16, 16}));  // d_model × pixels
    c["task"].erase("exemplar_labels_path");
    EXPECT_THROW(icl::parseConfig(c), icl::Error);
}

// Chan et al.'s ResNet exemplar encoder on 8 × 8 IDX images: it trains, its batch-norm statistics are saved
// with the checkpoint (the on-demand evaluation of the reloaded model reproduces the stored metrics), and it
// is refused for vector exemplars.
TEST(ClassificationTrainer, ResNetEncoderOnImagesKeepsItsBatchNormStatistics)
{
    const std::string images = icl::test::freshScratchFile("fewshot_resnet_images.idx");
    const std::string labels = icl::test::freshScratchFile("fewshot_resnet_labels.idx");
    fixtures::writeIdxImageSet(images, labels, 36, 8, 8,
                               [](int i, int p) { return uint8_t((i * 53 + p * 29) % 256); }, 12);
    nlohmann::json c = idxExemplarConfig(images, labels);
    c["model"]["encoder"] = "resnet";
    c["training"]["steps"] = 4;
    c["training"]["eval_every"] = 2;
    c["training"]["checkpoint_every"] = 2;
    icl::TrainOptions o = icl::test::cpuTrainOptions(icl::test::freshScratchFile("fewshot_resnet.h5"));
    EXPECT_EQ(icl::train(c, o, {}).final_step, 4);
    const auto cp = icl::readCheckpoint(o.out_path, 4);
    const icl::NamedArray* runningMean = paramNamed(cp, "encoder.stem_bn.running_mean");
    EXPECT_NE(runningMean, nullptr);
    if (runningMean)
        EXPECT_NE(runningMean->data, std::vector<float>(runningMean->data.size(), 0.0f))
            << "statistics moved during training";
    const icl::RunSummary s = icl::readRunSummary(o.out_path);
    const icl::IclIwlResult e = icl::computeIclIwl(o.out_path, {});
    EXPECT_DOUBLE_EQ(e.iwl_accuracy, s.metrics.at("iwl_accuracy").back());
    EXPECT_DOUBLE_EQ(e.icl_accuracy_all_labels, s.metrics.at("icl_accuracy_all_labels").back());

    nlohmann::json vectors = fewShotConfig();
    vectors["model"]["encoder"] = "resnet";
    EXPECT_THROW(icl::parseConfig(vectors), icl::Error);
}
