#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/trainer.h"

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

std::string tempPath(const std::string& name)
{
    const std::string p = ::testing::TempDir() + name;
    fs::remove(p);
    return p;
}

icl::TrainOptions optionsFor(const std::string& path)
{
    icl::TrainOptions o;
    o.out_path = path;
    o.threads = 1;
    return o;
}

TEST(Trainer, LossFallsToOneGdStepAndEverythingIsStored)
{
    const std::string path = tempPath("trainer_falls.h5");
    int calls = 0;
    const auto r = icl::train(tinyConfig(), optionsFor(path), [&](const icl::TrainProgress&) {
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
    const std::string gd = tempPath("trainer_gd_construction.h5");
    icl::train(tinyConfig({"model.init=gd_construction", "training.steps=0"}), optionsFor(gd), {});
    const auto s = icl::readRunSummary(gd);
    ASSERT_EQ(s.checkpoints.size(), 1u);
    EXPECT_NEAR(s.lastMetric("eval_loss"), s.lastMetric("baseline/gd_1"), 1e-5 * s.lastMetric("baseline/gd_1"));
    EXPECT_NEAR(s.lastMetric("alignment/gd_1/model_cosine"), 1.0, 1e-5);

    const std::string gdpp = tempPath("trainer_gdpp_construction.h5");
    icl::train(tinyConfig({"model.init=gdpp_construction", "model.n_layers=2", "training.steps=0",
                           "eval.baselines=[\"zero\",\"gd\",\"gd_plus_plus\"]", "eval.gd_steps=[2]",
                           "eval.alignment=[\"gdpp_2\"]"}),
               optionsFor(gdpp), {});
    const auto p = icl::readRunSummary(gdpp);
    EXPECT_NEAR(p.lastMetric("eval_loss"), p.lastMetric("baseline/gdpp_2"), 1e-4 * p.lastMetric("baseline/gdpp_2"));
    EXPECT_LT(p.lastMetric("alignment/gdpp_2/relative_model_difference"), 1e-4);

    // Constructions exist for the plain LSA only.
    EXPECT_THROW(tinyConfig({"model.init=gd_construction", "model.softmax_layers=1"}), icl::Error);
    EXPECT_THROW(tinyConfig({"model.init=gdpp_construction"}), icl::Error);
}

TEST(Trainer, StopsWhenTheCallbackSaysSoAndKeepsACheckpoint)
{
    const std::string path = tempPath("trainer_stop.h5");
    const auto r = icl::train(tinyConfig(), optionsFor(path),
                              [](const icl::TrainProgress& p) { return p.step < 30; });
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.final_step, 30);
    const auto s = icl::readRunSummary(path);
    EXPECT_EQ(s.checkpoints.back().step, 30);
}

TEST(Trainer, ResumeContinuesAndMatchesAnUninterruptedRun)
{
    const std::string straight = tempPath("trainer_straight.h5");
    icl::train(tinyConfig(), optionsFor(straight), {});

    const std::string split = tempPath("trainer_split.h5");
    const auto first = icl::train(tinyConfig(), optionsFor(split), [](const icl::TrainProgress& p) {
        return p.step < 120;
    });
    ASSERT_EQ(first.final_step, 120);
    icl::TrainOptions resume = optionsFor(split);
    resume.resume = true;
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
    const auto a = icl::readCheckpoint(straight, 300), b = icl::readCheckpoint(split, 300);
    ASSERT_EQ(a.params.size(), b.params.size());
    for (size_t i = 0; i < a.params.size(); ++i) {
        ASSERT_EQ(a.params[i].name, b.params[i].name);
        EXPECT_EQ(a.params[i].data, b.params[i].data) << a.params[i].name;
    }
}

TEST(Trainer, DivergenceStopsWithAMessageAndKeepsTheLastCheckpoint)
{
    const std::string path = tempPath("trainer_nan.h5");
    try {
        icl::train(tinyConfig({"training.optimizer=sgd", "training.lr=1e6", "training.grad_clip=0"}),
                   optionsFor(path), {});
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
    const std::string path = tempPath("trainer_exists.h5");
    icl::createExperimentFile(path, "{}", false);
    const auto before = fs::file_size(path);
    EXPECT_THROW(icl::train(tinyConfig(), optionsFor(path), {}), icl::Error);
    EXPECT_EQ(fs::file_size(path), before);

    icl::TrainOptions resume = optionsFor(tempPath("trainer_absent.h5"));
    resume.resume = true;
    EXPECT_THROW(icl::train({}, resume, {}), icl::Error);
    EXPECT_FALSE(fs::exists(resume.out_path));
}

TEST(Trainer, BadDeviceIsRejectedBeforeAnyFileIsWritten)
{
    const std::string path = tempPath("trainer_device.h5");
    EXPECT_THROW(icl::train(tinyConfig({"device=cuda:7"}), optionsFor(path), {}), icl::Error);
    EXPECT_FALSE(fs::exists(path));
}

} // namespace
