#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/memory_budget.h"
#include "core/models/model.h"
#include "core/models/sequence_classifier.h"

// modelSize and checkModelMemory (core/io/config.h) against the models LibTorch builds; the rest of the config
// limits are in tests/core/io/config_test.cpp, which the torch-free sanitize build compiles too.

namespace {

nlohmann::json presetConfig(const std::string& preset)
{
    icl::ConfigRequest r;
    r.preset = preset;
    return icl::resolveConfig(r);
}

} // namespace

// modelSize counts from the config what makeModel / makeSequenceClassifier build: checked against the models
// themselves (every parameter and buffer they hold) for each architecture and option.
TEST(ConfigLimits, ModelSizeIsWhatTheModelHolds)
{
    auto held = [](torch::nn::Module& m) {
        uint64_t n = 0;
        for (const auto& p : m.parameters())
            n += uint64_t(p.numel());
        for (const auto& b : m.buffers())
            n += uint64_t(b.numel());
        return n;
    };
    std::vector<nlohmann::json> regression = {presetConfig("vonoswald-lsa-1layer"), presetConfig("garg-linear-regression"),
                                              presetConfig("vonoswald-lsa-multilayer")};
    nlohmann::json rich = presetConfig("vonoswald-lsa-1layer");
    rich["model"].update({{"n_layers", 3}, {"n_heads", 2}, {"softmax_layers", 2}, {"attention_variant", "augmented"},
                          {"variant_strength", 0.5}, {"augment_hidden", 5}, {"layer_norm", true}, {"mlp", true},
                          {"positions", "sinusoidal"}, {"pos_dim", 8}, {"feature_mlp", {16, 7}}, {"feature_dim", 6}});
    rich["eval"]["baselines"] = {"zero"};
    rich["eval"]["alignment"] = nlohmann::json::array();
    regression.push_back(rich);
    nlohmann::json tied = presetConfig("vonoswald-lsa-1layer");
    tied["model"].update({{"n_layers", 4}, {"tied", true}, {"layer_norm", true}});
    regression.push_back(tied);
    for (const auto& j : regression) {
        const icl::ExperimentConfig c = icl::parseConfig(j);
        SCOPED_TRACE(j["model"].dump());
        const icl::ModelHandle m = icl::makeModel(c, 1);
        const icl::ModelSize size = icl::modelSize(c);
        EXPECT_EQ(size.values, held(*m.module));
        EXPECT_EQ(size.bytes, 4 * size.values);
    }
    for (const char* kind : {"gpt2", "lstm", "rnn"}) {
        nlohmann::json j = presetConfig("chan-bursty");
        j["model"]["kind"] = kind;
        const icl::ExperimentConfig c = icl::parseConfig(j);
        SCOPED_TRACE(kind);
        icl::SequenceClassifier m = icl::makeSequenceClassifier(c, {c.task.exemplar_dim}, 1);
        EXPECT_EQ(icl::modelSize(c, {c.task.exemplar_dim}).values, held(*m));
    }
    nlohmann::json images = presetConfig("chan-bursty");
    images["task"].update({{"exemplar_source", "idx"}, {"exemplar_path", "images.idx"}, {"exemplar_labels_path", "labels.idx"}});
    images["model"]["encoder"] = "resnet";
    const icl::ExperimentConfig c = icl::parseConfig(images);
    icl::SequenceClassifier m = icl::makeSequenceClassifier(c, {28, 28}, 1);
    EXPECT_EQ(icl::modelSize(c, {28, 28}).values, held(*m));
}

TEST(ConfigLimits, AModelOverTheBudgetIsRefusedBeforeItIsBuilt)
{
    nlohmann::json j = presetConfig("garg-linear-regression");
    j["model"].update({{"d_model", 65536}, {"n_heads", 1}, {"n_layers", 1}});
    const icl::ExperimentConfig c = icl::parseConfig(j);
    const icl::MemoryBudget budget("RUN.h5", uint64_t(1) << 30);
    std::string e;
    try {
        icl::checkModelMemory(c, budget);
    } catch (const icl::Error& err) {
        e = err.what();
    }
    EXPECT_EQ(e.rfind("RUN.h5: refused: its model (gpt2, 1 layer, d_model 65536, 1 head, ", 0), 0u) << e;
    EXPECT_NE(e.find("over the memory budget of 1.07 GB (--max-memory or ICL_MAX_MEMORY)"), std::string::npos) << e;
    EXPECT_EQ(budget.used(), 0u);
    // makeModel refuses it too, before a tensor is allocated.
    const icl::ScopedMemoryLimit limit(uint64_t(1) << 30);
    try {
        icl::makeModel(c, 0);
        FAIL() << "a 206 GB model was built";
    } catch (const icl::Error& err) {
        EXPECT_EQ(std::string(err.what()).rfind("the config: refused: its model (gpt2", 0), 0u) << err.what();
    }
}
