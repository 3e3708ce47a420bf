#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/config_schema.h"
#include "core/io/kinds.h"
#include "tests/support/core_checks.h"
#include "tests/support/scratch.h"

namespace {

std::string errorOf(const nlohmann::json& j)
{
    return icl::test::errorOf([&] { icl::parseConfig(j); });
}

/// Expects an enabled curriculum of Garg et al. with these starts, increments and stage length (steps).
void expectCurriculum(const icl::CurriculumConfig& c, int64_t dims_start, int64_t dims_inc, int64_t points_start,
                      int64_t points_inc, int64_t interval)
{
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.dims_start, dims_start);
    EXPECT_EQ(c.dims_inc, dims_inc);
    EXPECT_EQ(c.points_start, points_start);
    EXPECT_EQ(c.points_inc, points_inc);
    EXPECT_EQ(c.interval, interval);
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

    nlohmann::json g = {{"task", {{"kind", "sparse_linear_regression"}, {"layout", "interleaved"}, {"d", 9},
                                  {"n_context", 15}, {"sparsity", 4}}},
                        {"model", {{"kind", "gpt2"}, {"n_layers", 1}, {"n_heads", 1}, {"d_model", 8}}},
                        {"training", {{"curriculum", {{"enabled", true}, {"dims_start", 4}, {"dims_inc", 2},
                                                      {"points_start", 5}, {"points_inc", 3}, {"interval", 7}}}}}};
    const icl::ExperimentConfig gc = icl::parseConfig(g);
    EXPECT_EQ(gc.task.sparsity, 4);
    expectCurriculum(gc.training.curriculum, 4, 2, 5, 3, 7);
    EXPECT_EQ(icl::toJson(icl::parseConfig(icl::toJson(gc))), icl::toJson(gc));
    EXPECT_EQ(icl::toJson(gc)["training"]["curriculum"]["interval"], 7);
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
    // docs/science.md §1 settings of the default preset
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
    const std::string path = icl::test::scratchPrefix() + "bad_config.json";
    std::ofstream(path) << "{ \"task\": { \"d\": 3, }";
    icl::ConfigRequest r;
    r.config_file = path;
    try {
        icl::resolveConfig(r);
        FAIL();
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find("bad_config.json: not valid JSON"), std::string::npos) << e.what();
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

TEST(Config, SparseAndNoisyTasksAreValidatedWithKeyPaths)
{
    const icl::ExperimentConfig sparse = icl::parseConfig({{"task", {{"kind", "sparse_linear_regression"}, {"d", 8}}}});
    EXPECT_EQ(sparse.task.sparsity, 3);  // Garg et al.'s default k
    EXPECT_EQ(errorOf({{"task", {{"kind", "sparse_linear_regression"}, {"d", 4}, {"sparsity", 5}}}}),
              "task.sparsity: expected at most task.d = 4 non-zero coordinates of w, got 5");
    EXPECT_EQ(errorOf({{"task", {{"sparsity", 0}}}}).rfind("task.sparsity: expected an integer in [1, 4096]", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"sparsity", "three"}}}}).rfind("task.sparsity: expected an integer", 0), 0u);
    // noisy_linear_regression needs σ > 0; plain linear_regression keeps accepting any σ ≥ 0.
    EXPECT_EQ(errorOf({{"task", {{"kind", "noisy_linear_regression"}}}})
                  .rfind("task.noise_std: noisy_linear_regression", 0),
              0u);
    EXPECT_EQ(errorOf({{"task", {{"kind", "noisy_linear_regression"}, {"noise_std", 0.5}}}}), "");
    EXPECT_EQ(errorOf({{"task", {{"kind", "linear_regression"}, {"noise_std", 0.5}}}}), "");
    EXPECT_EQ(errorOf({{"task", {{"kind", "lasso_regression"}}}}).rfind("task.kind: expected one of", 0), 0u);
}

// Few-shot classification sizes: a 10-class dataset (Fashion-MNIST: 8 training + 2 holdout classes) fits, since
// non-bursty sequences draw their classes with replacement; the limits that remain name their key.
TEST(Config, FewShotSizesAreValidatedWithKeyPaths)
{
    auto fewShot = [](nlohmann::json task, nlohmann::json model = nlohmann::json::object()) {
        task["kind"] = "fewshot_classification";
        task["layout"] = "interleaved";
        task["n_context"] = 8;
        model["kind"] = model.value("kind", "gpt2");
        return nlohmann::json{{"task", task}, {"model", model}};
    };
    EXPECT_EQ(errorOf(fewShot({{"n_classes", 8}, {"n_holdout", 2}})), "");
    EXPECT_EQ(errorOf(fewShot({{"n_classes", 3}})), "");
    EXPECT_EQ(errorOf(fewShot({{"n_classes", 2}})).rfind("task.n_classes: ", 0), 0u);
    EXPECT_EQ(errorOf(fewShot({{"n_classes", 50}, {"labels_per_class", 100}, {"n_labels", 32}})).rfind("task.n_labels: ", 0),
              0u);
    EXPECT_EQ(errorOf(fewShot({{"n_classes", 50}}, {{"d_model", 63}, {"n_heads", 1}})).rfind("model.d_model: ", 0), 0u);
}

TEST(Config, CurriculumErrorsNameTheKeyPath)
{
    const nlohmann::json gpt2 = {{"kind", "gpt2"}, {"n_layers", 1}, {"n_heads", 1}, {"d_model", 8}};
    auto withCurriculum = [&](nlohmann::json curriculum, nlohmann::json task = nlohmann::json::object()) {
        task["layout"] = "interleaved";
        if (!task.contains("d"))
            task["d"] = 10;
        if (!task.contains("n_context"))
            task["n_context"] = 20;
        return nlohmann::json{{"task", task}, {"model", gpt2}, {"training", {{"curriculum", curriculum}}}};
    };
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", true}})), "");
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", "yes"}})),
              "training.curriculum.enabled: expected true or false, got \"yes\"");
    auto err = [&](const nlohmann::json& curriculum) { return errorOf(withCurriculum(curriculum)); };
    EXPECT_EQ(err({{"dims_strat", 5}}).rfind("training.curriculum.dims_strat: unknown key", 0), 0u);
    EXPECT_EQ(err({{"interval", 0}}).rfind("training.curriculum.interval: expected an integer", 0), 0u);
    EXPECT_EQ(err({{"dims_inc", -1}}).rfind("training.curriculum.dims_inc: expected an integer", 0), 0u);
    EXPECT_EQ(err({{"points_start", 1}}).rfind("training.curriculum.points_start: expected", 0), 0u);
    EXPECT_EQ(errorOf({{"training", {{"curriculum", 3}}}}), "training.curriculum: expected an object, got 3");
    // Against the task, only when enabled.
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", true}, {"dims_start", 11}})),
              "training.curriculum.dims_start: expected an integer in [1, task.d = 10], got 11");
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", false}, {"dims_start", 11}})), "");
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", true}, {"points_start", 22}})).rfind(
                  "training.curriculum.points_start: expected an integer in [2, task.n_context + 1 = 21]", 0),
              0u);
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", true}, {"dims_start", 2}},
                                     {{"kind", "sparse_linear_regression"}, {"sparsity", 3}}))
                  .rfind("training.curriculum.dims_start: the support of w", 0),
              0u);
    EXPECT_EQ(errorOf(withCurriculum({{"enabled", true}}, {{"kind", "representation"}}))
                  .rfind("training.curriculum.enabled: Garg et al.'s curriculum is implemented for", 0),
              0u);
    // The LSA is built for one N: the curriculum is rejected for it.
    const std::string lsa = errorOf({{"training", {{"curriculum", {{"enabled", true}}}}}});
    EXPECT_EQ(lsa.rfind("training.curriculum.enabled: the curriculum varies the number of in-context examples", 0), 0u)
        << lsa;
    EXPECT_NE(lsa.find("use model.kind \"gpt2\""), std::string::npos) << lsa;
}

TEST(Config, CurriculumStageFollowsGargsSchedule)
{
    // docs/science.md §0 (Garg et al. code): d from 5 to 20 (+1 every 2000 steps), points (in-context examples
    // plus the query) from 11 to 41 (+2 every 2000 steps). Written out here from the paper's numbers.
    icl::ExperimentConfig c;
    c.task.d = 20;
    c.task.n_context = 40;
    c.training.curriculum.enabled = true;  // defaults are Garg's values
    auto gargDims = [](int64_t s) { return std::min<int64_t>(20, 5 + s / 2000); };
    auto gargPoints = [](int64_t s) { return std::min<int64_t>(41, 11 + 2 * (s / 2000)); };
    for (int64_t s : {0, 1, 1999, 2000, 2001, 3999, 4000, 10000, 29999, 30000, 30001, 500000}) {
        const icl::CurriculumStage st = icl::curriculumStage(c, s);
        EXPECT_EQ(st.dims, gargDims(s)) << s;
        EXPECT_EQ(st.n_context, gargPoints(s) - 1) << s;
        const icl::TaskConfig t = icl::trainingTask(c, s);
        EXPECT_EQ(t.active_dims, gargDims(s)) << s;
        EXPECT_EQ(t.n_context, gargPoints(s) - 1) << s;
        EXPECT_EQ(t.d, 20) << s;  // the token width never changes
    }
    EXPECT_EQ(icl::curriculumStage(c, 0).dims, 5);
    EXPECT_EQ(icl::curriculumStage(c, 0).n_context, 10);
    EXPECT_EQ(icl::curriculumStage(c, 30000).dims, 20);  // full size after 15 increments
    EXPECT_EQ(icl::curriculumStage(c, 30000).n_context, 40);
    // Off: the full task, untouched.
    c.training.curriculum.enabled = false;
    EXPECT_EQ(icl::curriculumStage(c, 0).dims, 20);
    EXPECT_EQ(icl::curriculumStage(c, 0).n_context, 40);
    EXPECT_EQ(icl::trainingTask(c, 0).active_dims, 0);
    EXPECT_EQ(icl::trainingTask(c, 0).n_context, 40);
}

TEST(Config, GargPresetUsesTheCurriculumAtPaperScale)
{
    icl::ConfigRequest r;
    r.preset = "garg-linear-regression";
    r.scale = "paper";
    const icl::ExperimentConfig c = icl::parseConfig(icl::resolveConfig(r));
    expectCurriculum(c.training.curriculum, 5, 1, 11, 2, 2000);
    EXPECT_EQ(c.task.d, 20);
    EXPECT_EQ(c.task.n_context, 40);

    // Quick scale: a shortened curriculum (d 1 → 2, points 3 → 11, every 300 of 10,000 steps) that trains
    // at least the last 600 steps at the full d and N.
    r.scale = "quick";
    const icl::ExperimentConfig q = icl::parseConfig(icl::resolveConfig(r));
    EXPECT_TRUE(q.training.curriculum.enabled);
    const icl::CurriculumStage last = icl::curriculumStage(q, q.training.steps - 600);
    EXPECT_EQ(last.dims, q.task.d);
    EXPECT_EQ(last.n_context, q.task.n_context);
    EXPECT_LT(icl::curriculumStage(q, 0).dims, q.task.d);
}

} // namespace

namespace schema_tests {

using nlohmann::json;

// Sets `path` (a.b.c) in `config` to `value`, creating the sections on the way.
void setPath(json& config, const std::string& path, const json& value)
{
    std::string pointer = "/" + path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    config[json::json_pointer(pointer)] = value;
}

// Every preset at every scale: parse → toJson → parse gives the same JSON (and so the same config).
TEST(ConfigSchema, EveryPresetRoundTripsThroughToJson)
{
    int checked = 0;
    for (const icl::PresetInfo& p : icl::listPresets())
        for (const std::string& scale : p.scales) {
            icl::ConfigRequest r;
            r.preset = p.name;
            r.scale = scale;
            const json resolved = icl::resolveConfig(r);
            const json once = icl::toJson(icl::parseConfig(resolved));
            const json twice = icl::toJson(icl::parseConfig(once));
            EXPECT_EQ(once, resolved) << p.name << " " << scale;
            EXPECT_EQ(twice.dump(), once.dump()) << p.name << " " << scale;
            ++checked;
        }
    EXPECT_GE(checked, 2 * 15);
}

// The schema lists every key toJson writes, once, and nothing else.
TEST(ConfigSchema, DeclaresEveryKeyOfTheJsonFormOnce)
{
    const json full = icl::toJson(icl::ExperimentConfig{});
    std::set<std::string> leaves;
    std::function<void(const json&, const std::string&)> walk = [&](const json& j, const std::string& prefix) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string p = prefix.empty() ? it.key() : prefix + "." + it.key();
            if (it->is_object())
                walk(*it, p);
            else
                leaves.insert(p);
        }
    };
    walk(full, "");
    std::set<std::string> declared;
    for (const icl::ConfigKey& k : icl::configKeys()) {
        EXPECT_TRUE(declared.insert(k.path).second) << k.path << " declared twice";
        EXPECT_FALSE(k.doc.empty()) << k.path;
        EXPECT_EQ(full.at(json::json_pointer("/" + std::regex_replace(k.path, std::regex("\\."), "/"))),
                  k.default_value)
            << k.path;
    }
    EXPECT_EQ(declared, leaves);
}

// A value of the wrong type for any key is refused with a message that starts with the key's path.
TEST(ConfigSchema, WrongTypesNameTheKeyPathForEveryKey)
{
    for (const icl::ConfigKey& k : icl::configKeys()) {
        const json wrong = k.type == "boolean" ? json("yes") : k.type == "string" ? json(5) : json(true);
        json config = json::object();
        setPath(config, k.path, wrong);
        const std::string e = errorOf(config);
        EXPECT_EQ(e.rfind(k.path + ": expected", 0), 0u) << k.path << ": " << e;
    }
}

// An integer key one past either end of its declared range is refused naming the key path.
TEST(ConfigSchema, OutOfRangeIntegersNameTheKeyPath)
{
    const std::regex range(R"(an integer in \[(-?\d+), (-?\d+)\])");
    int checked = 0;
    for (const icl::ConfigKey& k : icl::configKeys()) {
        std::smatch m;
        if (k.type != "integer" || !std::regex_match(k.range, m, range))
            continue;
        for (const int64_t bad : {std::stoll(m[1]) - 1, std::stoll(m[2]) + 1}) {
            json config = json::object();
            setPath(config, k.path, bad);
            const std::string e = errorOf(config);
            EXPECT_EQ(e.rfind(k.path + ": expected an integer in [", 0), 0u) << k.path << "=" << bad << ": " << e;
        }
        ++checked;
    }
    EXPECT_GE(checked, 30);
}

// A name outside a choice key's declared choices is refused, listing them.
TEST(ConfigSchema, UnknownChoicesNameTheKeyPathAndTheChoices)
{
    for (const icl::ConfigKey& k : icl::configKeys()) {
        if (k.type != "choice")
            continue;
        json config = json::object();
        setPath(config, k.path, "no_such_choice");
        const std::string e = errorOf(config);
        EXPECT_EQ(e.rfind(k.path + ": expected one of \"" + k.choices.front() + "\"", 0), 0u) << e;
    }
}

TEST(ConfigSchema, UnknownKeysInEverySectionNameTheKeyPath)
{
    std::set<std::string> sections = {""};
    for (const icl::ConfigKey& k : icl::configKeys())
        if (const auto dot = k.path.rfind('.'); dot != std::string::npos)
            sections.insert(k.path.substr(0, dot));
    EXPECT_EQ(sections, (std::set<std::string>{"", "task", "model", "training", "training.curriculum", "eval"}));
    for (const std::string& s : sections) {
        const std::string path = s.empty() ? "bogus_key" : s + ".bogus_key";
        json config = json::object();
        setPath(config, path, 1);
        const std::string e = errorOf(config);
        EXPECT_EQ(e.rfind(path + ": unknown key (known keys: ", 0), 0u) << e;
    }
}

// The kind keys take their choices from the enums' name tables, and kindOf maps each name back.
TEST(ConfigSchema, KindChoicesComeFromTheNameTables)
{
    const auto choicesOf = [](const std::string& path) {
        for (const icl::ConfigKey& k : icl::configKeys())
            if (k.path == path)
                return k.choices;
        return std::vector<std::string>{};
    };
    EXPECT_EQ(choicesOf("task.kind"),
              (std::vector<std::string>{"linear_regression", "sparse_linear_regression", "noisy_linear_regression",
                                        "sine_regression", "representation", "representation_mixture",
                                        "fewshot_classification"}));
    EXPECT_EQ(choicesOf("model.kind"), (std::vector<std::string>{"lsa", "gpt2", "lstm", "rnn"}));
    EXPECT_EQ(choicesOf("task.layout"), (std::vector<std::string>{"pair", "interleaved"}));
    icl::TaskConfig t;
    t.kind = "fewshot_classification";
    EXPECT_EQ(icl::kindOf(t), icl::TaskKind::FewshotClassification);
    t.kind = "sine_regression";
    EXPECT_EQ(icl::kindOf(t), icl::TaskKind::SineRegression);
    icl::ModelConfig m;
    m.kind = "rnn";
    EXPECT_EQ(icl::kindOf(m), icl::ModelKind::Rnn);
    EXPECT_STREQ(icl::kindName(icl::ModelKind::Gpt2), "gpt2");
    m.kind = "transformer";
    try {
        (void)icl::kindOf(m);
        ADD_FAILURE() << "kindOf accepted an unknown model kind";
    } catch (const icl::Error& e) {
        EXPECT_EQ(std::string(e.what()), "model.kind: unknown model kind \"transformer\"");
    }
}

// --set on a string key keeps the text as it is; on a number key it stays a number.
TEST(ConfigSchema, SetTakesStringKeysLiterally)
{
    json config = json::object();
    icl::applyOverride(config, "description=1");
    icl::applyOverride(config, "task.exemplar_path=null");
    icl::applyOverride(config, "training.lr=5e-4");
    icl::applyOverride(config, "model.kind=\"gpt2\"");
    EXPECT_EQ(config["description"], "1");
    EXPECT_EQ(config["task"]["exemplar_path"], "null");
    EXPECT_EQ(config["training"]["lr"], 5e-4);
    EXPECT_EQ(config["model"]["kind"], "gpt2");
}

// The reference lists every key with its default, in each of its forms.
TEST(ConfigSchema, ReferenceListsEveryKey)
{
    const json ref = icl::configReferenceJson();
    ASSERT_EQ(ref["keys"].size(), icl::configKeys().size());
    const std::string text = icl::configReferenceText();
    const std::string md = icl::configReferenceMarkdown();
    for (const icl::ConfigKey& k : icl::configKeys()) {
        EXPECT_NE(text.find(k.path + "  ("), std::string::npos) << k.path;
        EXPECT_NE(md.find("| `" + k.path + "` |"), std::string::npos) << k.path;
    }
    EXPECT_NE(text.find("training.lr  (number, default 0.001)"), std::string::npos) << text;
}

} // namespace schema_tests

// ---- limits on what a config file may make the workbench do (issue 46) -------------------------------------

namespace {

std::string resolveError(const std::string& path)
{
    icl::ConfigRequest r;
    r.config_file = path;
    try {
        icl::resolveConfig(r);
    } catch (const icl::Error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST(ConfigLimits, NumbersOutsideInt64AreOutOfRangeNotUndefined)
{
    // 1e30, 2^64 − 1 and -1e19 are not integers a key can hold; casting them to int64 would be undefined.
    EXPECT_EQ(errorOf({{"model", {{"n_layers", 1e30}}}}), "model.n_layers: expected an integer in [1, 1000], got 1e+30");
    EXPECT_EQ(errorOf({{"model", {{"n_layers", 18446744073709551615ull}}}}),
              "model.n_layers: expected an integer in [1, 1000], got 18446744073709551615");
    EXPECT_EQ(errorOf({{"training", {{"steps", -1e19}}}}),
              "training.steps: expected an integer in [0, 1099511627776], got -1e+19");
    // An integer past 2^53 is compared exactly, not through a double (2^53 + 1 would round to 2^53).
    EXPECT_EQ(errorOf({{"training", {{"steps", 9007199254740993ll}}}}),
              "training.steps: expected an integer in [0, 1099511627776], got 9007199254740993");
    EXPECT_EQ(errorOf({{"model", {{"n_layers", 3.0}}}}), "");
}

TEST(ConfigLimits, ConfigFilesAreReadWithANestingAndSizeLimit)
{
    const std::string path = icl::test::scratchPrefix() + "deep_config.json";
    const size_t depth = 1'000'000;
    std::ofstream(path) << "{\"description\": " << std::string(depth, '[') << std::string(depth, ']') << "}";
    EXPECT_EQ(resolveError(path), path + ": JSON nested deeper than 64 levels");
    // 64 levels are a config's business (here the wrong type for the key), 65 are refused
    std::ofstream(path, std::ios::trunc) << "{\"description\": " << std::string(63, '[') << std::string(63, ']') << "}";
    EXPECT_EQ(resolveError(path).rfind("description: expected a string", 0), 0u) << resolveError(path);
    std::ofstream(path, std::ios::trunc) << "{\"description\": " << std::string(64, '[') << std::string(64, ']') << "}";
    EXPECT_EQ(resolveError(path), path + ": JSON nested deeper than 64 levels");

    // A config file larger than 16 MiB is refused before it is read.
    const std::string big = icl::test::scratchPrefix() + "big_config.json";
    {
        std::ofstream out(big);
        out << "{\"description\": \"" << std::string((size_t(16) << 20) + 1, 'a') << "\"}";
    }
    EXPECT_EQ(resolveError(big),
              big + ": 16777236 bytes is larger than a config file's limit of 16777216 bytes (16.8 MB)");
    EXPECT_EQ(resolveError(icl::test::scratchPrefix() + "no_such_config.json"),
              "cannot read config file " + icl::test::scratchPrefix() + "no_such_config.json");

    // A --set value (or a sweep file's grid value) nested too deep.
    nlohmann::json config = nlohmann::json::object();
    const std::string e = [&] {
        try {
            icl::applyOverride(config, "eval.gd_steps=" + std::string(100000, '[') + std::string(100000, ']'));
        } catch (const icl::Error& err) {
            return std::string(err.what());
        }
        return std::string();
    }();
    EXPECT_EQ(e, "--set eval.gd_steps: JSON nested deeper than 64 levels");
}

TEST(ConfigLimits, IntegerRangesComeFromTheSchema)
{
    EXPECT_EQ(icl::configIntegerRange("model.n_layers"), (std::pair<int64_t, int64_t>{1, 1000}));
    EXPECT_EQ(icl::configIntegerRange("model.d_model"), (std::pair<int64_t, int64_t>{1, 65536}));
    EXPECT_EQ(icl::configIntegerRange("model.n_positions"), (std::pair<int64_t, int64_t>{0, 1 << 20}));
    EXPECT_THROW(icl::configIntegerRange("training.lr"), icl::Error);
    EXPECT_THROW(icl::configIntegerRange("model.softmax_layers"), icl::Error);  // bounded by another key
}
