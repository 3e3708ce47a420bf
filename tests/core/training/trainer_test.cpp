#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/tasks/prompts.h"
#include "core/tasks/seeds.h"
#include "core/training/trainer.h"
#include "tests/support/core_checks.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;

namespace {

nlohmann::json tinyConfig(std::vector<std::string> extra = {})
{
    icl::ConfigRequest r;
    r.preset = icl::kDefaultPreset;
    r.sets = {"task.d=5", "task.n_context=5", "training.batch_size=256", "training.steps=300",
              "training.lr=0.003", "training.eval_every=50", "training.checkpoint_every=100",
              "eval.n_prompts=1000", "device=cpu"};
    r.sets.insert(r.sets.end(), extra.begin(), extra.end());
    return icl::resolveConfig(r);
}

/// Trains `config` uninterrupted into `straight`, then into `split` until the progress callback stops it once step
/// `stop` is reached; returns the final step of the stopped run (`stop` when the trainer stops where asked).
int64_t trainStraightAndStopped(const nlohmann::json& config, const std::string& straight, const std::string& split,
                                int64_t stop)
{
    icl::train(config, icl::test::cpuTrainOptions(straight), {});
    const auto first = icl::train(config, icl::test::cpuTrainOptions(split),
                                  [stop](const icl::TrainProgress& p) { return p.step < stop; });
    return first.final_step;
}

TEST(Trainer, LossFallsToOneGdStepAndEverythingIsStored)
{
    const std::string path = icl::test::freshScratchFile("trainer_falls.h5");
    int calls = 0;
    const auto r = icl::train(tinyConfig(), icl::test::cpuTrainOptions(path), [&](const icl::TrainProgress&) {
        ++calls;
        return true;
    });
    EXPECT_EQ(r.final_step, 300);
    EXPECT_FALSE(r.stopped);
    EXPECT_GT(calls, 300);

    const auto s = icl::readRunSummary(path);
    const auto& eval = s.metrics.at("eval_loss");
    ASSERT_EQ(eval.size(), 7u);  // steps 0, 50, …, 300
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 50, 100, 150, 200, 250, 300}));
    EXPECT_LT(eval.back(), 0.75 * eval.front());
    // The trained layer gets close to the best single GD step measured on the same prompts.
    EXPECT_LT(eval.back(), 1.15 * s.lastMetric("baseline/gd_1"));
    EXPECT_DOUBLE_EQ(eval.back(), r.eval_loss);
    for (const char* b : {"baseline/zero", "baseline/least_squares", "baseline/ridge", "baseline/gd_1"})
        EXPECT_EQ(s.metrics.at(b).size(), eval.size()) << b;
    ASSERT_EQ(s.checkpoints.size(), 4u);  // 0, 100, 200, 300
    EXPECT_EQ(s.checkpoints.back().step, 300);
}

// A ready-made construction stored with 0 training steps is an experiment like any other: its eval
// loss is exactly the GD baseline's loss on the same prompts (Proposition 1), and for GD++ the GD++
// baseline's, both of which the trainer measures independently with the baselines' own code.
TEST(Trainer, ConstructionsAreReadyMadeModels)
{
    const std::string gd = icl::test::freshScratchFile("trainer_gd_construction.h5");
    icl::train(tinyConfig({"model.init=gd_construction", "training.steps=0"}), icl::test::cpuTrainOptions(gd), {});
    const auto s = icl::readRunSummary(gd);
    ASSERT_EQ(s.checkpoints.size(), 1u);
    EXPECT_NEAR(s.lastMetric("eval_loss"), s.lastMetric("baseline/gd_1"), 1e-5 * s.lastMetric("baseline/gd_1"));
    EXPECT_NEAR(s.lastMetric("alignment/gd_1/model_cosine"), 1.0, 1e-5);

    const std::string gdpp = icl::test::freshScratchFile("trainer_gdpp_construction.h5");
    icl::train(tinyConfig({"model.init=gdpp_construction", "model.n_layers=2", "training.steps=0",
                           "eval.baselines=[\"zero\",\"gd\",\"gd_plus_plus\"]", "eval.gd_steps=[2]",
                           "eval.alignment=[\"gdpp_2\"]"}),
               icl::test::cpuTrainOptions(gdpp), {});
    const auto p = icl::readRunSummary(gdpp);
    EXPECT_NEAR(p.lastMetric("eval_loss"), p.lastMetric("baseline/gdpp_2"), 1e-4 * p.lastMetric("baseline/gdpp_2"));
    EXPECT_LT(p.lastMetric("alignment/gdpp_2/relative_model_difference"), 1e-4);

    // Constructions exist for the plain LSA only.
    EXPECT_THROW(tinyConfig({"model.init=gd_construction", "model.softmax_layers=1"}), icl::Error);
    EXPECT_THROW(tinyConfig({"model.init=gdpp_construction"}), icl::Error);
}

TEST(Trainer, StopsWhenTheCallbackSaysSoAndKeepsACheckpoint)
{
    const std::string path = icl::test::freshScratchFile("trainer_stop.h5");
    const auto r = icl::train(tinyConfig(), icl::test::cpuTrainOptions(path),
                              [](const icl::TrainProgress& p) { return p.step < 30; });
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.final_step, 30);
    const auto s = icl::readRunSummary(path);
    EXPECT_EQ(s.checkpoints.back().step, 30);
}

TEST(Trainer, ResumeContinuesAndMatchesAnUninterruptedRun)
{
    const std::string straight = icl::test::freshScratchFile("trainer_straight.h5"),
                      split = icl::test::freshScratchFile("trainer_split.h5");
    ASSERT_EQ(trainStraightAndStopped(tinyConfig(), straight, split, 120), 120);
    const icl::TrainOptions resume = icl::test::cpuTrainOptions(split, true);
    int64_t firstReported = -1;
    const auto second = icl::train({}, resume, [&](const icl::TrainProgress& p) {
        if (firstReported < 0 && p.phase == icl::TrainProgress::Phase::Training)
            firstReported = p.step;
        return true;
    });
    EXPECT_EQ(firstReported, 120);
    EXPECT_EQ(second.final_step, 300);

    const auto s = icl::readRunSummary(split);
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 50, 100, 120, 150, 200, 250, 300}));
    icl::test::expectSameParams(icl::readCheckpoint(straight, 300), icl::readCheckpoint(split, 300));
}

TEST(Trainer, DivergenceStopsWithAMessageAndKeepsTheLastCheckpoint)
{
    const std::string path = icl::test::freshScratchFile("trainer_nan.h5");
    try {
        icl::train(tinyConfig({"training.optimizer=sgd", "training.lr=1e6", "training.grad_clip=0"}),
                   icl::test::cpuTrainOptions(path), {});
        FAIL() << "training with lr 1e6 did not diverge";
    } catch (const icl::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("diverged"), std::string::npos) << msg;
        EXPECT_NE(msg.find("resumable"), std::string::npos) << msg;
    }
    const auto s = icl::readRunSummary(path);
    ASSERT_FALSE(s.checkpoints.empty());
    EXPECT_EQ(s.checkpoints.back().step, 0);
    EXPECT_NO_THROW(icl::readCheckpoint(path, 0));
}

TEST(Trainer, RefusesToOverwriteAndToResumeNothing)
{
    const std::string path = icl::test::freshScratchFile("trainer_exists.h5");
    icl::createExperimentFile(path, "{}", false);
    const auto before = fs::file_size(path);
    EXPECT_THROW(icl::train(tinyConfig(), icl::test::cpuTrainOptions(path), {}), icl::Error);
    EXPECT_EQ(fs::file_size(path), before);

    icl::TrainOptions resume = icl::test::cpuTrainOptions(icl::test::freshScratchFile("trainer_absent.h5"));
    resume.resume = true;
    EXPECT_THROW(icl::train({}, resume, {}), icl::Error);
    EXPECT_FALSE(fs::exists(resume.out_path));
}

TEST(Trainer, BadDeviceIsRejectedBeforeAnyFileIsWritten)
{
    const std::string path = icl::test::freshScratchFile("trainer_device.h5");
    EXPECT_THROW(icl::train(tinyConfig({"device=cuda:7"}), icl::test::cpuTrainOptions(path), {}), icl::Error);
    EXPECT_FALSE(fs::exists(path));
}

// A tiny GPT-2 (Garg et al.) on interleaved prompts with a fast curriculum: d_eff 2 → 5 (+1) and
// points 3 → 9 (+2) every 5 steps, so every stage is passed within 40 steps.
nlohmann::json curriculumConfig(std::vector<std::string> extra = {})
{
    icl::ConfigRequest r;
    r.preset = "garg-linear-regression";
    r.sets = {"task.d=5", "task.n_context=8", "model.n_layers=1", "model.n_heads=2", "model.d_model=16",
              "training.batch_size=16", "training.steps=40", "training.eval_every=10", "training.checkpoint_every=20",
              "training.schedule=constant", "training.warmup_steps=0",
              "training.curriculum={\"enabled\":true,\"dims_start\":2,\"dims_inc\":1,\"points_start\":3,"
              "\"points_inc\":2,\"interval\":5}",
              "eval.n_prompts=64", "eval.bootstrap=0", "device=cpu"};
    r.sets.insert(r.sets.end(), extra.begin(), extra.end());
    return icl::resolveConfig(r);
}

TEST(Trainer, CurriculumPromptsHaveTheScheduledSize)
{
    const icl::ExperimentConfig cfg = icl::parseConfig(curriculumConfig());
    // The schedule, written out: stage k = ⌊s/5⌋, d_eff = min(2 + k, 5), points = min(3 + 2k, 9).
    for (int64_t s : {0, 4, 5, 9, 10, 14, 15, 19, 20, 39, 1000}) {
        const int64_t k = s / 5;
        const int64_t dEff = std::min<int64_t>(2 + k, 5), points = std::min<int64_t>(3 + 2 * k, 9);
        // Exactly the call the training loop makes for batch s.
        const icl::PromptBatch b = icl::samplePrompts(icl::trainingTask(cfg, s), cfg.training.batch_size,
                                                      icl::seeds::train(cfg.seed, s));
        ASSERT_EQ(b.x.sizes(), (std::vector<int64_t>{16, points, 5})) << "step " << s;
        EXPECT_EQ(b.nContext(), points - 1) << "step " << s;
        if (dEff < 5)
            EXPECT_EQ(b.x.narrow(2, dEff, 5 - dEff).abs().max().item<float>(), 0.0f) << "step " << s;
        EXPECT_GT(b.x.narrow(2, 0, dEff).abs().min().item<float>(), 0.0f) << "step " << s;  // N(0, 1) inputs
        const torch::Tensor want = (b.x * b.w.unsqueeze(1)).sum(-1);
        EXPECT_LE((b.y - want).abs().max().item<float>(), 1e-5f) << "step " << s;
    }
}

TEST(Trainer, CurriculumIsRecordedAndEvaluationStaysAtFullSize)
{
    const std::string with = icl::test::freshScratchFile("trainer_curriculum.h5");
    icl::train(curriculumConfig(), icl::test::cpuTrainOptions(with), {});
    const std::string without = icl::test::freshScratchFile("trainer_no_curriculum.h5");
    icl::train(curriculumConfig({"training.curriculum.enabled=false"}), icl::test::cpuTrainOptions(without), {});

    const auto a = icl::readRunSummary(with), b = icl::readRunSummary(without);
    EXPECT_EQ(a.metrics.at("step"), (std::vector<double>{0, 10, 20, 30, 40}));
    // Size of the latest batch: step t's row reports batch t − 1 (step 0: batch 0).
    EXPECT_EQ(a.metrics.at("curriculum/dims"), (std::vector<double>{2, 3, 5, 5, 5}));
    EXPECT_EQ(a.metrics.at("curriculum/points"), (std::vector<double>{3, 5, 9, 9, 9}));
    EXPECT_EQ(b.metrics.count("curriculum/dims"), 0u);
    // Same full-size evaluation prompts: every baseline's loss is identical with and without the curriculum.
    for (const char* name : {"baseline/zero", "baseline/least_squares", "baseline/knn", "baseline/averaging"})
        EXPECT_EQ(a.lastMetric(name), b.lastMetric(name)) << name;
    // Same initial model and eval prompts: equal eval loss at step 0, then the training data differ.
    EXPECT_EQ(a.metrics.at("eval_loss").front(), b.metrics.at("eval_loss").front());
    const auto pa = icl::readCheckpoint(with, 40), pb = icl::readCheckpoint(without, 40);
    bool anyDifferent = false;
    for (size_t i = 0; i < pa.params.size(); ++i)
        anyDifferent |= pa.params[i].data != pb.params[i].data;
    EXPECT_TRUE(anyDifferent);
}

// A run stopped before its step-0 checkpoint (a Slurm task preempted while preparing) holds only its config;
// resuming it starts again from that config and ends exactly where an uninterrupted run ends.
TEST(Trainer, ResumeOfAFileStoppedBeforeItsFirstCheckpointStartsAgain)
{
    const std::string straight = icl::test::freshScratchFile("trainer_empty_straight.h5");
    icl::train(tinyConfig({"training.steps=100"}), icl::test::cpuTrainOptions(straight), {});

    const std::string empty = icl::test::freshScratchFile("trainer_empty.h5");
    const auto stopBeforeTraining = [](const icl::TrainProgress& p) {
        return p.phase != icl::TrainProgress::Phase::Preparing;
    };
    const auto first = icl::train(tinyConfig({"training.steps=100"}), icl::test::cpuTrainOptions(empty),
                                  stopBeforeTraining);
    EXPECT_TRUE(first.stopped);
    ASSERT_TRUE(icl::readRunSummary(empty).checkpoints.empty());
    icl::TrainOptions resume = icl::test::cpuTrainOptions(empty);
    resume.resume = true;
    EXPECT_EQ(icl::train({}, resume, {}).final_step, 100);
    const auto a = icl::readRunSummary(straight), b = icl::readRunSummary(empty);
    EXPECT_EQ(b.metrics.at("step"), a.metrics.at("step"));
    EXPECT_EQ(b.metrics.at("eval_loss"), a.metrics.at("eval_loss"));
}

// While one trainer writes a run file, a second one (here a resume from another thread, which the OFD lock treats
// like another process) is refused with a message and changes nothing; the claim goes with the first trainer, and
// a sidecar left behind by a crashed trainer (present but not held) does not block anyone.
TEST(Trainer, ASecondTrainerOfTheSameFileIsRefused)
{
    const std::string path = icl::test::freshScratchFile("trainer_claimed.h5");
    std::promise<void> started, release;
    std::shared_future<void> released = release.get_future().share();
    std::thread first([&] {
        bool signalled = false;
        const icl::TrainOptions options = icl::test::cpuTrainOptions(path);
        icl::train(tinyConfig({"training.steps=100"}), options, [&](const icl::TrainProgress& p) {
            if (!signalled && p.step >= 50) {
                signalled = true;
                started.set_value();
                released.wait();
            }
            return true;
        });
    });
    started.get_future().wait();
    EXPECT_TRUE(fs::exists(path + ".lock"));
    icl::TrainOptions resume = icl::test::cpuTrainOptions(path);
    resume.resume = true;
    try {
        icl::train({}, resume, {});
        ADD_FAILURE() << "a second trainer ran on a claimed file";
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find("another process is training into this file"), std::string::npos)
            << e.what();
    }
    icl::TrainOptions force = icl::test::cpuTrainOptions(path);
    force.force = true;
    EXPECT_THROW(icl::train(tinyConfig(), force, {}), icl::Error);
    release.set_value();
    first.join();
    EXPECT_FALSE(fs::exists(path + ".lock"));
    EXPECT_EQ(icl::readRunSummary(path).checkpoints.back().step, 100);

    std::ofstream(path + ".lock") << "left by a crashed trainer";
    resume.steps = 120;
    EXPECT_EQ(icl::train({}, resume, {}).final_step, 120);
}

TEST(Trainer, ResumeWithCurriculumMatchesAnUninterruptedRunBitwise)
{
    const std::string straight = icl::test::freshScratchFile("trainer_curriculum_straight.h5"),
                      split = icl::test::freshScratchFile("trainer_curriculum_split.h5");
    // Stop mid-stage (stage 2 covers steps 10..14), so the resumed run must rebuild the stage from the step.
    ASSERT_EQ(trainStraightAndStopped(curriculumConfig(), straight, split, 12), 12);
    const icl::TrainOptions resume = icl::test::cpuTrainOptions(split, true);
    const auto second = icl::train({}, resume, {});
    EXPECT_EQ(second.final_step, 40);

    const auto s = icl::readRunSummary(split);
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 10, 12, 20, 30, 40}));
    EXPECT_EQ(s.metrics.at("curriculum/points"), (std::vector<double>{3, 5, 7, 9, 9, 9}));
    icl::test::expectSameParams(icl::readCheckpoint(straight, 40), icl::readCheckpoint(split, 40));
    EXPECT_EQ(icl::readRunSummary(straight).lastMetric("eval_loss"), s.lastMetric("eval_loss"));
}

TEST(Trainer, SparseAndNoisyTasksTrainWithTheirBaselines)
{
    // 10 steps of curriculumConfig() with these task settings, 2,000 eval prompts, the zero, least-squares and ridge
    // baselines.
    const auto trainTask = [](const std::string& name, const std::string& kind, const std::string& setting) {
        const std::string path = icl::test::freshScratchFile(name);
        icl::train(curriculumConfig({"task.kind=" + kind, setting, "training.steps=10", "eval.n_prompts=2000",
                                     "eval.baselines=[\"zero\",\"least_squares\",\"ridge\"]"}),
                   icl::test::cpuTrainOptions(path), {});
        return icl::readRunSummary(path);
    };
    const auto s = trainTask("trainer_sparse.h5", "sparse_linear_regression", "task.sparsity=2");
    // Sparse w: ridge's λ is chosen on held-out prompts (stored), not the dense Bayes choice.
    EXPECT_EQ(s.metrics.count("baseline_lambda/ridge"), 1u);
    // E[y_q²] = k·w_scale² = 2 for N(0, I) inputs, so the zero baseline's 0.5·MSE is about 1.
    EXPECT_NEAR(s.lastMetric("baseline/zero"), 1.0, 0.4);

    const auto n = trainTask("trainer_noisy.h5", "noisy_linear_regression", "task.noise_std=0.5");
    // Gaussian w and noise: the Bayes penalty σ²/w_scale² stands, nothing is fitted.
    EXPECT_EQ(n.metrics.count("baseline_lambda/ridge"), 0u);
    // Ridge cannot beat the noise floor 0.5·σ² = 0.125 on the noisy query label.
    EXPECT_GT(n.lastMetric("baseline/ridge"), 0.125 * 0.6);
    EXPECT_LT(n.lastMetric("baseline/ridge"), n.lastMetric("baseline/zero"));
}

} // namespace

namespace {

// Chan et al.'s schedule read back from the stored learning rates: with warm-up W = 4 and peak 1e-3,
// η_t = 1e-3·min(t/4, √(4/t)) for step t = 1, 2, … (the "lr" metric is the rate of the latest step).
TEST(Trainer, InverseSqrtScheduleFollowsChanEtAl)
{
    const std::string path = icl::test::freshScratchFile("trainer_inverse_sqrt.h5");
    icl::train(tinyConfig({"training.steps=16", "training.eval_every=1", "training.checkpoint_every=16",
                           "training.lr=0.001", "training.schedule=inverse_sqrt", "training.warmup_steps=4",
                           "eval.n_prompts=16"}),
               icl::test::cpuTrainOptions(path), {});
    const auto s = icl::readRunSummary(path);
    const auto& lr = s.metrics.at("lr");
    const auto& step = s.metrics.at("step");
    ASSERT_EQ(lr.size(), 17u);
    for (size_t i = 1; i < lr.size(); ++i) {
        const double t = step[i];
        EXPECT_NEAR(lr[i], 1e-3 * std::min(t / 4.0, std::sqrt(4.0 / t)), 1e-12) << "step " << t;
    }
    EXPECT_THROW(icl::parseConfig(tinyConfig({"training.schedule=inverse_sqrt", "training.warmup_steps=0"})),
                 icl::Error);
}

} // namespace
