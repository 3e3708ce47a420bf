#include <gtest/gtest.h>

#include <fstream>

#include "core/error.h"
#include "core/io/config.h"

namespace {

std::string errorOf(const nlohmann::json& j)
{
    try {
        icl::parseConfig(j);
    } catch (const icl::Error& e) {
        return e.what();
    }
    return "";
}

TEST(Config, WrongTypeNamesTheKeyPath)
{
    EXPECT_EQ(errorOf({{"training", {{"lr", "fast"}}}}), "training.lr: expected a number > 0, got \"fast\"");
}

TEST(Config, UnknownKeysNameTheKeyPath)
{
    const std::string e = errorOf({{"task", {{"dd", 3}}}});
    EXPECT_EQ(e.rfind("task.dd: unknown key", 0), 0u) << e;
    EXPECT_EQ(errorOf({{"trainig", nlohmann::json::object()}}).rfind("trainig: unknown key", 0), 0u);
}

TEST(Config, OutOfRangeValuesAreRejected)
{
    EXPECT_EQ(errorOf({{"training", {{"batch_size", 0}}}}).rfind("training.batch_size: expected an integer", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"x_distribution", "cauchy"}}}}).rfind("task.x_distribution: expected one of", 0),
              0u);
    EXPECT_EQ(errorOf({{"eval", {{"baselines", {"zero", "oracle"}}}}}).rfind("eval.baselines[1]:", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"layout", "grid"}}}}).rfind("task.layout:", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"kind", "sine_regression"}, {"d", 3}}}}).rfind("task.d: sine_regression", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"amplitude_min", 2.0}, {"amplitude_max", 1.0}}}}).rfind("task.amplitude_max:", 0),
              0u);
    EXPECT_EQ(errorOf({{"model", {{"n_layers", 2}, {"softmax_layers", 3}}}}).rfind("model.softmax_layers:", 0), 0u);
    EXPECT_EQ(errorOf({{"model", {{"pos_dim", 5}}}}).rfind("model.pos_dim:", 0), 0u);
    EXPECT_EQ(errorOf({{"model", {{"feature_mlp", {8, 0}}, {"feature_dim", 4}}}}).rfind("model.feature_mlp[1]:", 0),
              0u);
    EXPECT_EQ(errorOf({{"model", {{"feature_mlp", {8}}}}}).rfind("model.feature_dim:", 0), 0u);
    EXPECT_EQ(errorOf({{"eval", {{"baselines", {"zero", "features_gd"}}}}}).rfind("eval.baselines: \"features_gd\"", 0),
              0u);
    EXPECT_EQ(errorOf({{"eval", {{"alignment", {"features_gd_1"}}}}}).rfind("eval.alignment[0]:", 0), 0u);
    EXPECT_EQ(errorOf({{"seed", -1}}).rfind("seed:", 0), 0u);
    EXPECT_EQ(errorOf({{"task", 5}}), "task: expected an object, got 5");
}

TEST(Config, RoundTripKeepsEveryValue)
{
    nlohmann::json j = {{"seed", 17},
                        {"task", {{"d", 4}, {"n_context", 9}, {"x_distribution", "normal"}, {"noise_std", 0.25}}},
                        {"model", {{"n_layers", 3}, {"tied", true}, {"softmax_layers", 3}, {"layer_norm", true},
                                   {"mlp", true}, {"positions", "sinusoidal"}, {"pos_dim", 8},
                                   {"feature_mlp", {5, 6}}, {"feature_dim", 7}}},
                        {"training", {{"lr", 5e-4}, {"schedule", "warmup_cosine"}, {"warmup_steps", 10}}},
                        {"eval", {{"gd_steps", {1, 2, 3}}}}};
    const icl::ExperimentConfig c = icl::parseConfig(j);
    EXPECT_EQ(c.seed, 17u);
    EXPECT_EQ(c.task.d, 4);
    EXPECT_EQ(c.model.n_layers, 3);
    EXPECT_TRUE(c.model.tied);
    EXPECT_EQ(c.model.softmax_layers, 3);
    EXPECT_TRUE(c.model.layer_norm && c.model.mlp);
    EXPECT_EQ(c.model.positions, "sinusoidal");
    EXPECT_EQ(c.model.pos_dim, 8);
    EXPECT_EQ(c.model.feature_mlp, (std::vector<int64_t>{5, 6}));
    EXPECT_EQ(c.model.feature_dim, 7);
    EXPECT_EQ(c.training.schedule, "warmup_cosine");
    EXPECT_EQ(icl::toJson(icl::parseConfig(icl::toJson(c))), icl::toJson(c));
    EXPECT_EQ(icl::toJson(c)["eval"]["gd_steps"], nlohmann::json({1, 2, 3}));
}

TEST(Config, PresetResolvesWithScaleAndOverrides)
{
    icl::ConfigRequest r;
    r.preset = icl::kDefaultPreset;
    r.scale = "paper";
    r.sets = {"training.lr=0.0005", "task.x_range=0.5"};
    r.seed = 3;
    const nlohmann::json j = icl::resolveConfig(r);
    EXPECT_EQ(j["preset"], icl::kDefaultPreset);
    EXPECT_EQ(j["scale"], "paper");
    EXPECT_DOUBLE_EQ(j["training"]["lr"].get<double>(), 0.0005);
    EXPECT_DOUBLE_EQ(j["task"]["x_range"].get<double>(), 0.5);
    EXPECT_EQ(j["seed"], 3);
    // PAPERS.md §1 settings of the default preset
    EXPECT_EQ(j["task"]["d"], 10);
    EXPECT_EQ(j["task"]["n_context"], 10);
    EXPECT_EQ(j["training"]["batch_size"], 2048);
    EXPECT_EQ(j["training"]["optimizer"], "adamw");
    EXPECT_GE(j["eval"]["n_prompts"].get<int>(), 10000);
}

TEST(Config, BadRequestsGiveClearErrors)
{
    icl::ConfigRequest r;
    r.preset = "no-such-preset";
    EXPECT_THROW(icl::resolveConfig(r), icl::Error);
    r.preset = icl::kDefaultPreset;
    r.scale = "huge";
    EXPECT_THROW(icl::resolveConfig(r), icl::Error);
    r.scale = "quick";
    r.sets = {"training.lr"};
    EXPECT_THROW(icl::resolveConfig(r), icl::Error);
    r.sets = {"training.optimiser=adam"};
    try {
        icl::resolveConfig(r);
        FAIL() << "unknown key accepted";
    } catch (const icl::Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("training.optimiser: unknown key", 0), 0u) << e.what();
    }
}

TEST(Config, ConfigFileErrorsNameTheFile)
{
    const std::string path = ::testing::TempDir() + "bad_config.json";
    std::ofstream(path) << "{ \"task\": { \"d\": 3, }";
    icl::ConfigRequest r;
    r.config_file = path;
    try {
        icl::resolveConfig(r);
        FAIL();
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find("bad_config.json: invalid JSON"), std::string::npos) << e.what();
    }
}

TEST(Config, EveryPresetResolvesAtEveryScale)
{
    const auto presets = icl::listPresets();
    ASSERT_FALSE(presets.empty());
    for (const auto& p : presets) {
        EXPECT_FALSE(p.description.empty()) << p.name;
        for (const auto& scale : p.scales) {
            icl::ConfigRequest r;
            r.preset = p.name;
            r.scale = scale;
            EXPECT_NO_THROW(icl::resolveConfig(r)) << p.name << " " << scale;
        }
    }
}

} // namespace
