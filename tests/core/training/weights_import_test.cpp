// Import of foreign checkpoints and export of weights (core/training/weights_import.h). The right values come from
// tests/data/foreign/: checkpoints written by real PyTorch and the predictions of an independent float64 forward pass
// of Garg et al.'s TransformerModel over Hugging Face GPT-2 (make_fixtures.py, garg_model.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/analysis/icl_curve.h"
#include "core/analysis/run_loader.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/io/weights_file.h"
#include "core/training/trainer.h"
#include "core/io/display_text.h"
#include "core/training/weights_import.h"
#include "tests/support/core_checks.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kForeign = std::string(ICL_TEST_DATA_DIR) + "/foreign/";

std::string importScratchPath(const std::string& name)
{
    const std::string p = icl::test::scratchPrefix() + "weights_import_" + std::to_string(::getpid()) + "_" + name;
    fs::remove_all(p);
    return p;
}

const json& reference()
{
    static const json r = [] {
        std::ifstream in(kForeign + "reference.json");
        return json::parse(in);
    }();
    return r;
}

/// The sets a bare Garg state dict needs (its config.yaml is not beside it).
std::vector<std::string> bareSets()
{
    return {"model.n_heads=4", "task.kind=linear_regression", "task.n_context=10", "task.x_distribution=normal",
            "eval.n_prompts=200", "eval.bootstrap=10"};
}

icl::ImportRequest request(const std::string& source, const std::string& out, std::vector<std::string> sets = {})
{
    icl::ImportRequest r;
    r.source = kForeign + source;
    r.out_path = out;
    r.sets = std::move(sets);
    r.threads = 1;
    return r;
}

/// Predictions of checkpoint `step` of `run` at every x position of the reference prompts: [B][N+1].
std::vector<std::vector<double>> predictionsOf(const std::string& run, int64_t step)
{
    const icl::LoadedRun loaded = icl::loadRun(run, step);
    const json& prompts = reference()["prompts"];
    const auto& xs = prompts["x"];
    const int64_t B = int64_t(xs.size()), P = int64_t(xs[0].size()), d = int64_t(xs[0][0].size());
    torch::Tensor x = torch::zeros({B, P, d}), y = torch::zeros({B, P});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < P; ++i) {
            for (int64_t k = 0; k < d; ++k)
                x[b][i][k] = xs[b][i][k].get<double>();
            y[b][i] = prompts["y"][b][i].get<double>();
        }
    icl::PromptBatch batch{x, y, torch::zeros({B, d})};
    torch::NoGradGuard guard;
    const torch::Tensor pred = loaded.model.predict_all(batch).to(torch::kFloat64);
    std::vector<std::vector<double>> out(static_cast<size_t>(B), std::vector<double>(static_cast<size_t>(P)));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < P; ++i)
            out[size_t(b)][size_t(i)] = pred[b][i].item<double>();
    return out;
}

/// Largest |workbench − reference| over every prompt and position.
double maxDifference(const std::vector<std::vector<double>>& got, const json& expected)
{
    double worst = 0.0;
    EXPECT_EQ(got.size(), expected.size());
    for (size_t b = 0; b < got.size() && b < expected.size(); ++b)
        for (size_t i = 0; i < got[b].size(); ++i)
            worst = std::max(worst, std::abs(got[b][i] - expected[b][i].get<double>()));
    return worst;
}

std::string sha256sum(const std::string& path)
{
    // An independent digest: coreutils' sha256sum.
    FILE* p = popen(("sha256sum '" + path + "'").c_str(), "r");
    char buf[65] = {0};
    const size_t n = p ? fread(buf, 1, 64, p) : 0;
    if (p)
        pclose(p);
    return std::string(buf, n);
}

TEST(WeightsImport, GargRunFolderBecomesACheckpointTimelineThatMatchesTheReference)
{
    const std::string out = importScratchPath("garg_run.h5");
    icl::ImportRequest r = request("garg_run", out, {"eval.n_prompts=200", "eval.bootstrap=10"});
    const icl::ImportResult result = icl::importWeights(r);
    EXPECT_EQ(result.plan.layout, "garg");
    EXPECT_EQ(result.steps, (std::vector<int64_t>{100, 200, 300}));
    const icl::RunSummary s = icl::readRunSummary(out);
    ASSERT_EQ(s.checkpoints.size(), 3u);
    const json cfg = json::parse(s.config_json);
    EXPECT_EQ(cfg["model"]["kind"], "gpt2");
    EXPECT_EQ(cfg["model"]["n_heads"], 4);  // from config.yaml: the tensors do not tell
    EXPECT_EQ(cfg["model"]["n_positions"], 22);
    EXPECT_EQ(cfg["task"]["n_context"], 10);  // curriculum points end − 1
    for (const char* step : {"100", "200", "300"})
        EXPECT_LT(maxDifference(predictionsOf(out, std::stoll(step)), reference()["predictions"][step]), 1e-5) << step;
    // The three checkpoints hold different weights (the test would not see a timeline of one model).
    EXPECT_GT(maxDifference(predictionsOf(out, 100), reference()["predictions"]["300"]), 1e-2);

    // Provenance: every source with its format and an independently computed SHA-256; "not trained here".
    ASSERT_FALSE(s.import_json.empty());
    const json imp = json::parse(s.import_json);
    EXPECT_EQ(imp["trained_here"], false);
    ASSERT_EQ(imp["sources"].size(), 3u);
    for (const auto& src : imp["sources"]) {
        EXPECT_EQ(src["format"], "pytorch-zip");
        EXPECT_EQ(src["sha256"].get<std::string>(), sha256sum(src["path"].get<std::string>()));
    }
    EXPECT_EQ(imp["mapping"]["_backbone.h.1.attn.c_attn.weight"], "blocks.1.attn.W_Q, blocks.1.attn.W_K, blocks.1.attn.W_V");
    EXPECT_FALSE(fs::exists(out + ".import-tmp"));
}

TEST(WeightsImport, EveryContainerAndLayoutGivesTheReferencePredictions)
{
    struct Case {
        const char* file;
        const char* reference;
    };
    const Case cases[] = {{"bare.pt", "300"},          {"prefixed_module.pt", "300"}, {"prefixed_compile.pt", "300"},
                          {"model_key.pt", "300"},     {"state_dict_key.pt", "300"},  {"noncontiguous.pt", "300"},
                          {"fp64.pt", "300"},          {"model.safetensors", "300"},  {"model.npz", "300"},
                          {"model_compressed.npz", "300"}, {"fp16.pt", "fp16"},        {"model_fp16.safetensors", "fp16"},
                          {"bf16.pt", "bf16"},         {"garg_run/state.pt", "300"}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.file);
        const std::string out = importScratchPath(std::string(c.file).substr(std::string(c.file).find('/') + 1) + ".h5");
        icl::ImportRequest r = request(c.file, out, bareSets());
        r.config_file = "";
        if (std::string(c.file).rfind("garg_run/", 0) == 0)
            r.sets = {"eval.n_prompts=200", "eval.bootstrap=10"};
        ASSERT_NO_THROW(icl::importWeights(r));
        const icl::RunSummary s = icl::readRunSummary(out);
        ASSERT_EQ(s.checkpoints.size(), 1u);
        EXPECT_LT(maxDifference(predictionsOf(out, s.checkpoints[0].step), reference()["predictions"][c.reference]), 1e-5);
    }
}

TEST(WeightsImport, StateDotPtTakesItsTrainStep)
{
    const icl::ImportPlan plan = icl::planImport(request("garg_run/state.pt", ""));
    ASSERT_EQ(plan.sources.size(), 1u);
    EXPECT_EQ(plan.sources[0].step, 300);
}

TEST(WeightsImport, WhatTheTensorsCannotSayIsAskedFor)
{
    const std::string out = importScratchPath("missing.h5");
    const icl::ImportPlan plan = icl::planImport(request("bare.pt", out));
    EXPECT_EQ(plan.missing, (std::vector<std::string>{"model.n_heads", "task.kind"}));
    EXPECT_NE(plan.inferred.find("2 layers, d_model 32"), std::string::npos) << plan.inferred;
    icl::test::expectError([&] { icl::importWeights(request("bare.pt", out)); }, "model.n_heads");
    EXPECT_FALSE(fs::exists(out));
}

TEST(WeightsImport, DisagreementNamesConfigSetAndTensors)
{
    try {
        icl::planImport(request("garg_run", "", {"model.d_model=64"}));
        FAIL() << "d_model 64 against tensors of 32";
    } catch (const icl::Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("model.d_model"), std::string::npos) << m;
        EXPECT_NE(m.find("says 32"), std::string::npos) << m;     // config.yaml's n_embd
        EXPECT_NE(m.find("--set says 64"), std::string::npos) << m;
        EXPECT_NE(m.find("say 32"), std::string::npos) << m;      // the tensors
    }
    // Heads that do not divide the width.
    EXPECT_THROW(icl::planImport(request("bare.pt", "", {"model.n_heads=5", "task.kind=linear_regression"})), icl::Error);
}

TEST(WeightsImport, WrongShapesAndForeignKeysAreListed)
{
    // bare.pt's tensors with one wrong shape and one extra key, written as safetensors.
    icl::WeightsFile bare = icl::readWeightsFile(kForeign + "bare.pt");
    for (icl::NamedArray& a : bare.tensors)
        if (a.name == "_backbone.h.1.mlp.c_fc.bias") {
            a.shape = {64};
            a.data.resize(64);
        }
    bare.tensors.push_back({"_backbone.extra.weight", {2}, {1.0f, 2.0f}});
    const std::string bad = importScratchPath("bad_shapes.safetensors");
    icl::writeSafetensors(bad, bare.tensors);
    icl::ImportRequest r = request("", "", bareSets());
    r.source = bad;
    try {
        icl::planImport(r);
        FAIL() << "wrong shape accepted";
    } catch (const icl::Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("_backbone.h.1.mlp.c_fc.bias is [64], expected [128]"), std::string::npos) << m;
        EXPECT_NE(m.find("unexpected _backbone.extra.weight [2]"), std::string::npos) << m;
    }
    r.source = kForeign + "one_key.pt";
    EXPECT_THROW(icl::planImport(r), icl::Error);
}

TEST(WeightsImport, RefusedSourcesLeaveNothingAndNeverTouchAnExistingFile)
{
    const std::string marker = "/tmp/icl_workbench_hostile_pickle_ran";
    fs::remove(marker);
    const std::string out = importScratchPath("refused.h5");
    for (const char* f : {"hostile.pt", "truncated.pt", "torchscript.pt", "legacy.pt"}) {
        SCOPED_TRACE(f);
        EXPECT_THROW(icl::importWeights(request(f, out, bareSets())), icl::Error);
        EXPECT_FALSE(fs::exists(out));
        EXPECT_FALSE(fs::exists(out + ".import-tmp"));
    }
    EXPECT_FALSE(fs::exists(marker)) << "the hostile pickle ran";

    {
        std::ofstream keep(out);
        keep << "keep me";
    }
    EXPECT_THROW(icl::importWeights(request("bare.pt", out, bareSets())), icl::Error);  // exists, no force
    std::ifstream in(out);
    std::string content;
    std::getline(in, content);
    EXPECT_EQ(content, "keep me");
}

TEST(WeightsImport, DamagedWeightsUnknownKeysAndTheSourceAsOutputAreRefused)
{
    // A NaN in one weight: refused naming the tensor.
    icl::WeightsFile bare = icl::readWeightsFile(kForeign + "bare.pt");
    for (icl::NamedArray& a : bare.tensors)
        if (a.name == "_backbone.h.0.attn.c_attn.weight")
            a.data[7] = std::nanf("");
    const std::string nan = importScratchPath("nan.safetensors");
    icl::writeSafetensors(nan, bare.tensors);
    icl::ImportRequest r = request("", importScratchPath("nan.h5"), bareSets());
    r.source = nan;
    icl::test::expectError([&] { icl::importWeights(r); }, "_backbone.h.0.attn.c_attn.weight holds NaN");
    EXPECT_FALSE(fs::exists(r.out_path));

    // A misspelt key is named even while other values are still missing.
    icl::test::expectError([&] { icl::planImport(request("bare.pt", "", {"model.n_head=4"})); }, "model.n_head");
    // A value of the wrong type is a config error naming the key, not an internal error.
    icl::test::expectError(
        [&] { icl::planImport(request("bare.pt", "", {"model.n_heads=six", "task.kind=linear_regression"})); },
        "model.n_heads");

    // --force onto the source itself: refused, the source intact.
    const std::string src = importScratchPath("source_copy.safetensors");
    fs::copy_file(kForeign + "model.safetensors", src);
    icl::ImportRequest self = request("", src, bareSets());
    self.source = src;
    self.force = true;
    EXPECT_THROW(icl::importWeights(self), icl::Error);
    EXPECT_EQ(icl::weightsFormatName(icl::detectWeightsFormat(src)), "safetensors");
}

TEST(WeightsImport, AGargTaskWithoutAWorkbenchTaskIsRefusedUnlessTheTaskIsSet)
{
    const std::string dir = importScratchPath("relu_run");
    fs::create_directories(dir);
    fs::copy_file(kForeign + "garg_run/model_100.pt", dir + "/model_100.pt");
    std::ifstream in(kForeign + "garg_run/config.yaml");
    std::stringstream yaml;
    yaml << in.rdbuf();
    std::string text = yaml.str();
    const size_t at = text.find("task: linear_regression");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, std::string("task: linear_regression").size(), "task: relu_2nn_regression");
    std::ofstream(dir + "/config.yaml") << text;
    icl::ImportRequest r;
    r.source = dir;
    icl::test::expectError([&] { icl::planImport(r); }, "relu_2nn_regression");
    r.sets = {"task.kind=linear_regression"};
    const icl::ImportPlan plan = icl::planImport(r);
    EXPECT_TRUE(plan.missing.empty());
    EXPECT_EQ(json::parse(plan.config_json)["task"]["kind"], "linear_regression");
}

TEST(WeightsImport, CancelWritesNothing)
{
    const std::string out = importScratchPath("cancelled.h5");
    int calls = 0;
    const icl::ImportResult r = icl::importWeights(request("garg_run", out, {"eval.n_prompts=200"}),
                                                   [&](int64_t done, int64_t, const std::string&) {
                                                       ++calls;
                                                       return done < 1;  // stop after the first checkpoint
                                                   });
    EXPECT_TRUE(r.cancelled);
    EXPECT_GE(calls, 2);
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".import-tmp"));
}

/// Every parameter of two checkpoints bitwise equal.
void expectSameParams(const std::string& a, int64_t stepA, const std::string& b, int64_t stepB)
{
    const icl::CheckpointData ca = icl::readCheckpoint(a, stepA), cb = icl::readCheckpoint(b, stepB);
    ASSERT_EQ(ca.params.size(), cb.params.size());
    std::map<std::string, const icl::NamedArray*> byName;
    for (const auto& p : cb.params)
        byName[p.name] = &p;
    for (const auto& p : ca.params) {
        ASSERT_TRUE(byName.count(p.name)) << p.name;
        EXPECT_EQ(p.shape, byName[p.name]->shape) << p.name;
        EXPECT_EQ(p.data, byName[p.name]->data) << p.name;  // bitwise
    }
}

TEST(WeightsImport, ExportThenImportIsBitwiseIdentical)
{
    const std::string run = importScratchPath("roundtrip_source.h5");
    icl::importWeights(request("garg_run", run, {"eval.n_prompts=200"}));
    for (const char* layout : {"workbench", "garg"})
        for (const char* ext : {".safetensors", ".pt"}) {
            SCOPED_TRACE(std::string(layout) + ext);
            const std::string file = importScratchPath(std::string("export_") + layout + ext);
            icl::exportWeights(run, file, 200, layout);
            EXPECT_EQ(icl::weightsFormatName(icl::detectWeightsFormat(file)),
                      std::string(ext) == ".pt" ? "pytorch-zip" : "safetensors");
            const std::string back = importScratchPath(std::string("reimported_") + layout + ext + ".h5");
            icl::ImportRequest r;
            r.source = file;
            r.out_path = back;
            r.threads = 1;
            if (std::string(layout) == "garg")
                r.sets = bareSets();
            icl::importWeights(r);
            const int64_t step = icl::readRunSummary(back).checkpoints.back().step;
            // The step travels in the metadata: the workbench layout's, and Garg's in a .safetensors (a Garg .pt is
            // a bare state dict, as Garg's code loads it).
            EXPECT_EQ(step, std::string(layout) == "workbench" || std::string(ext) == ".safetensors" ? 200 : 0);
            expectSameParams(run, 200, back, step);
        }
    // A Garg-layout export holds exactly the state dict Garg's model has (the wte of GPT2Config's vocabulary).
    const std::string garg = importScratchPath("export_keys.pt");
    icl::exportWeights(run, garg, -1, "garg");
    const icl::WeightsFile f = icl::readWeightsFile(garg);
    const icl::WeightsFile original = icl::readWeightsFile(kForeign + "garg_run/model_100.pt");
    ASSERT_EQ(f.tensors.size(), original.tensors.size());
    for (size_t i = 0; i < f.tensors.size(); ++i) {
        EXPECT_EQ(f.tensors[i].name, original.tensors[i].name);
        if (f.tensors[i].name != "_backbone.wte.weight")  // the fixture keeps 4 rows of it to stay small
            EXPECT_EQ(f.tensors[i].shape, original.tensors[i].shape) << f.tensors[i].name;
    }
    EXPECT_THROW(icl::exportWeights(run, importScratchPath("x.bin"), -1, "workbench"), icl::Error);
    EXPECT_THROW(icl::exportWeights(run, importScratchPath("x.pt"), 12345, "workbench"), icl::Error);
}

TEST(WeightsImport, ATrainedLsaRunExportsAndImportsWithItsConfig)
{
    icl::ConfigRequest cr;
    cr.preset = icl::kDefaultPreset;
    cr.sets = {"task.d=4", "task.n_context=6", "training.batch_size=128", "training.steps=20", "training.eval_every=10",
               "training.checkpoint_every=10", "eval.n_prompts=200", "device=cpu"};
    const std::string run = importScratchPath("lsa_trained.h5");
    icl::TrainOptions o;
    o.out_path = run;
    o.threads = 1;
    icl::train(icl::resolveConfig(cr), o, [](const icl::TrainProgress&) { return true; });
    const std::string file = importScratchPath("lsa.safetensors");
    icl::exportWeights(run, file, -1, "workbench");
    const std::string back = importScratchPath("lsa_back.h5");
    icl::ImportRequest r;
    r.source = file;
    r.out_path = back;
    r.threads = 1;
    icl::importWeights(r);
    expectSameParams(run, 20, back, 20);
    const icl::RunSummary a = icl::readRunSummary(run), b = icl::readRunSummary(back);
    // The same model on the same evaluation prompts: the same loss.
    EXPECT_DOUBLE_EQ(a.lastMetric("eval_loss"), b.lastMetric("eval_loss"));
    EXPECT_EQ(json::parse(b.config_json)["model"], json::parse(a.config_json)["model"]);
}

} // namespace

// ---- hostile sizes, nesting and numbers (issue 46) ---------------------------------------------------------
// Each input is small and crafted here; each is refused in one line before anything it sizes is allocated.

namespace {

bool oneLine(const std::string& m) { return !m.empty() && m.find('\n') == std::string::npos; }

std::string planError(const icl::ImportRequest& r)
{
    return icl::test::errorOf([&] { icl::planImport(r); });
}

icl::ImportRequest fileRequest(const std::string& path, std::vector<std::string> sets = bareSets())
{
    icl::ImportRequest r = request("", "", std::move(sets));
    r.source = path;
    return r;
}

void writeText(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

/// A run file whose /config is `config` (one checkpoint holding a 1-element stand-in parameter).
std::string runFileWithConfig(const std::string& name, const json& config)
{
    const std::string path = importScratchPath(name);
    icl::createExperimentFile(path, config.dump(), true);
    icl::CheckpointData checkpoint;
    checkpoint.step = 0;
    checkpoint.params = {{"read_in.weight", {1}, {0.0f}}};
    icl::MetricsRow row;
    row["step"] = 0;
    row["eval_loss"] = 1.0;
    icl::commitToExperimentFile(path, {row}, &checkpoint);
    return path;
}

} // namespace

TEST(WeightsImportLimits, ALayerIndexPastTheConfigLimitIsRefusedBeforeAnythingIsBuilt)
{
    icl::WeightsFile bare = icl::readWeightsFile(kForeign + "bare.pt");
    for (const std::string index : {"100000000000", "1000", "99999999999999999999999"}) {
        SCOPED_TRACE(index);
        std::vector<icl::NamedArray> tensors = bare.tensors;
        tensors.push_back({"_backbone.h." + index + ".ln_1.weight", {32}, std::vector<float>(32, 1.0f)});
        const std::string path = importScratchPath("layer_" + index + ".safetensors");
        icl::writeSafetensors(path, tensors);
        const std::string e = planError(fileRequest(path));
        EXPECT_TRUE(oneLine(e)) << e;
        EXPECT_EQ(e, path + ": tensor _backbone.h." + index + ".ln_1.weight names layer " + index
                         + ", but a model has at most 1000 layers (model.n_layers)");
    }
    // Layer 999 is within the limit: the missing layers 2 … 999 are listed (the first 12 of them).
    std::vector<icl::NamedArray> tensors = bare.tensors;
    tensors.push_back({"_backbone.h.999.ln_1.weight", {32}, std::vector<float>(32, 1.0f)});
    const std::string path = importScratchPath("layer_999.safetensors");
    icl::writeSafetensors(path, tensors);
    const std::string e = planError(fileRequest(path));
    EXPECT_TRUE(oneLine(e)) << e;
    EXPECT_NE(e.find("n_dims 5, 1000 layers): missing _backbone.h.2.ln_1.weight (expected [32])"), std::string::npos) << e;
    EXPECT_NE(e.find("more"), std::string::npos) << e;
    EXPECT_LT(e.size(), 2000u) << "one readable line, not 16000 problems";
}

TEST(WeightsImportLimits, AnImpliedModelOverTheLimitsOrTheBudgetIsRefusedBeforeItIsBuilt)
{
    // 1.3 MB of workbench tensors implying a gpt2 of d_model 65536 (206 GB of parameters).
    const int64_t D = 65536;
    const std::vector<icl::NamedArray> wide = {
        {"read_in.weight", {D, 5}, std::vector<float>(size_t(D) * 5, 0.0f)},
        {"pos_embed", {1, D}, std::vector<float>(size_t(D), 0.0f)},
        {"blocks.0.attn.W_Q", {1, D, 1}, std::vector<float>(size_t(D), 0.0f)},
    };
    const std::string path = importScratchPath("wide.safetensors");
    icl::writeSafetensors(path, wide);
    icl::ImportRequest r = fileRequest(path, {"task.kind=linear_regression"});
    r.max_memory = uint64_t(64) << 20;
    const std::string e = planError(r);
    EXPECT_TRUE(oneLine(e)) << e;
    icl::test::expectStartsWith(
        e, path + ": refused: its model (gpt2, 1 layer, d_model 65536, 1 head, 1 positions, d 5, MLP 262144; ");
    EXPECT_NE(e.find("over the memory budget of 67.1 MB"), std::string::npos) << e;

    // Sizes outside the config limits: d_model 65537.
    const std::vector<icl::NamedArray> wider = {
        {"read_in.weight", {D + 1, 1}, std::vector<float>(size_t(D + 1), 0.0f)},
        {"pos_embed", {1, D + 1}, std::vector<float>(size_t(D + 1), 0.0f)},
        {"blocks.0.attn.W_Q", {1, D + 1, 1}, std::vector<float>(size_t(D + 1), 0.0f)},
    };
    icl::writeSafetensors(path, wider);
    EXPECT_EQ(planError(fileRequest(path, {"task.kind=linear_regression"})),
              path + ": the tensors imply model.d_model = 65537 (read_in.weight [65537, 1]), outside the config limits "
                     "[1, 65536]");

    // The same refusal for a run file whose config describes that model (analyze, eval), before it is built.
    json config = icl::resolveConfig([] {
        icl::ConfigRequest c;
        c.preset = "garg-linear-regression";
        return c;
    }());
    config["model"]["d_model"] = D;
    config["model"]["n_heads"] = 1;
    config["model"]["n_layers"] = 1;
    const std::string run = runFileWithConfig("wide_run.h5", config);
    const icl::ScopedMemoryLimit limit(uint64_t(64) << 20);
    const std::string loaded = icl::test::errorOf([&] { icl::loadRun(run, -1); });
    EXPECT_TRUE(oneLine(loaded)) << loaded;
    EXPECT_EQ(loaded.rfind(run + ": refused: its model (gpt2, 1 layer, d_model 65536, 1 head, ", 0), 0u) << loaded;
    EXPECT_NE(loaded.find("over the memory budget of 67.1 MB"), std::string::npos) << loaded;
    const std::string curve = icl::test::errorOf([&] { icl::computeIclCurve(run, icl::IclCurveOptions{}); });
    EXPECT_EQ(curve.rfind(run + ": refused: its model (gpt2", 0), 0u) << curve;
}

TEST(WeightsImportLimits, DeeplyNestedConfigsAreRefused)
{
    const size_t depth = 1'000'000;
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    // import --config with JSON nested a million levels deep
    const std::string jsonConfig = importScratchPath("deep.json");
    writeText(jsonConfig, "{\"description\": " + deep + "}");
    icl::ImportRequest r = request("bare.pt", "", bareSets());
    r.config_file = jsonConfig;
    EXPECT_EQ(planError(r), jsonConfig + ": JSON nested deeper than 64 levels");

    // a .pt whose pickled workbench config holds it
    icl::WeightsFile bare = icl::readWeightsFile(kForeign + "bare.pt");
    const std::string pt = importScratchPath("deep_config.pt");
    icl::writeTorchZip(pt, bare.tensors, {{"icl_workbench_config", deep}});
    const std::string e = planError(fileRequest(pt));
    EXPECT_EQ(e, fs::absolute(pt).lexically_normal().string()
                     + ": its icl_workbench_config metadata: JSON nested deeper than 64 levels");

    // Garg's config.yaml: beyond yaml-cpp's own guard, and between it and ours
    for (const size_t levels : {size_t(100000), size_t(100)}) {
        SCOPED_TRACE(levels);
        const std::string yaml = importScratchPath("deep.yaml");
        writeText(yaml, "model:\n  family: " + std::string(levels, '[') + std::string(levels, ']') + "\n");
        r.config_file = yaml;
        const std::string y = planError(r);
        EXPECT_TRUE(oneLine(y)) << y;
        EXPECT_EQ(y.rfind(yaml + ": ", 0), 0u) << y;
        EXPECT_TRUE(y.find("nested deeper than 64 levels") != std::string::npos
                    || y.find("not a readable YAML config") != std::string::npos)
            << y;
    }
    // aliases that make a small file a large tree
    const std::string laughs = importScratchPath("laughs.yaml");
    std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 9; ++i)
        text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + std::string("*a") + std::to_string(i - 1)
                + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1)
                + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1)
                + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1)
                + "]\n";
    writeText(laughs, text);
    r.config_file = laughs;
    EXPECT_EQ(planError(r), laughs + ": YAML of more than 100000 nodes (counting each alias at every use), more than "
                                     "a config holds");
}

TEST(WeightsImportLimits, NumbersFromFilesAreParsedWithRangesAndQuotedAsWritten)
{
    // A folder with a step past int64 in a file name.
    const std::string folder = importScratchPath("big_step");
    fs::create_directories(folder);
    fs::copy_file(kForeign + "bare.pt", folder + "/model_99999999999999999999.pt");
    EXPECT_EQ(planError(fileRequest(folder)),
              folder + "/model_99999999999999999999.pt: the step 99999999999999999999 in its name is out of range (a run "
                       "has at most 1099511627776 steps, training.steps)");

    // YAML integers that overflow, or whose double would: quoted as written.
    const std::string yaml = importScratchPath("big.yaml");
    icl::ImportRequest r = request("bare.pt", "", {"model.n_heads=4", "task.kind=linear_regression"});
    r.config_file = yaml;
    writeText(yaml, "model:\n  n_positions: 9223372036854775807\n");
    EXPECT_EQ(planError(r), yaml + ": model.n_positions: expected an integer in [0, 524288], got 9223372036854775807");
    writeText(yaml, "model:\n  n_layer: 99999999999999999999\n");
    EXPECT_EQ(planError(r), yaml + ": model.n_layer: expected an integer in [1, 1000], got 99999999999999999999");
    writeText(yaml, "training:\n  learning_rate: 1e999\n");
    EXPECT_EQ(planError(r), yaml + ": training.learning_rate: expected a finite number, got 1e999");
    writeText(yaml, "model:\n  n_embd: \"\\e[2J32\"\n");
    EXPECT_EQ(planError(r), yaml + ": model.n_embd: expected an integer in [1, 65536], got \x1b[2J32");
    // Garg's own config.yaml still reads (the run folder imports: GargRunFolderBecomesACheckpointTimeline…).
    r.config_file = kForeign + "garg_run/config.yaml";
    EXPECT_EQ(planError(r), "");
}

// Messages quote names raw; the CLI and the GUI print them through escapeForDisplay, as one line.
TEST(WeightsImportLimits, MessagesQuoteTheFilesNamesAndEscapeToOneLine)
{
    icl::WeightsFile bare = icl::readWeightsFile(kForeign + "bare.pt");
    std::vector<icl::NamedArray> tensors = bare.tensors;
    tensors.push_back({"evil\x1b[31m\nicl-cli: all good", {1}, {1.0f}});
    const std::string path = importScratchPath("evil_name.safetensors");
    icl::writeSafetensors(path, tensors);
    const std::string e = icl::escapeForDisplay(planError(fileRequest(path)));
    EXPECT_TRUE(oneLine(e)) << e;
    EXPECT_NE(e.find("unexpected evil\\x1b[31m\\x0aicl-cli: all good [1]"), std::string::npos) << e;
    EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
}

TEST(WeightsImportLimits, TheFixturesImportWithinASmallBudget)
{
    // Garg's run folder (3 checkpoints), safetensors and npz under 64 MB: the budget counts what they need.
    const std::string out = importScratchPath("small_budget.h5");
    icl::ImportRequest folder = request("garg_run", out, {"eval.n_prompts=200", "eval.bootstrap=10"});
    folder.max_memory = uint64_t(64) << 20;
    const icl::ImportResult result = icl::importWeights(folder);
    EXPECT_EQ(result.steps, (std::vector<int64_t>{100, 200, 300}));
    for (const char* file : {"model.safetensors", "model.npz"}) {
        icl::ImportRequest r = request(file, "", bareSets());
        r.max_memory = uint64_t(64) << 20;
        EXPECT_EQ(planError(r), "") << file;
    }
    // and a budget too small for them is one line naming the file
    icl::ImportRequest tiny = request("bare.pt", "", bareSets());
    tiny.max_memory = 1000;
    const std::string e = planError(tiny);
    EXPECT_TRUE(oneLine(e)) << e;
    EXPECT_EQ(e.rfind(kForeign + "bare.pt: refused: ", 0), 0u) << e;
    EXPECT_NE(e.find("over the memory budget of 1.00 KB"), std::string::npos) << e;
}
