// computeKernelView on experiment files holding hand-set softmax-attention layers. The right answers are
// closed forms: the one-step reference model with the exact kernel *is* softmax attention (error 0 up
// to float32 rounding of the layer), the layer's pattern is softmax(qkᵀ/√D) computed here by hand from
// the stored weights, and for small query/key norms the random-feature error falls as m^{-1/2}.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/analysis/kernel_view.h"
#include "core/report/kernel_figures.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/lsa.h"
#include "core/models/model.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "core/tasks/seeds.h"
#include "tests/support/scratch.h"

namespace {

struct HandSetRun {
    std::string path;
    icl::ExperimentConfig config;
    icl::Lsa lsa{nullptr};
};

/// A renliu-kernel run with 2 heads whose checkpoint 5 holds weights drawn with std `scale`.
HandSetRun writeRun(const std::string& name, double scale, const std::vector<std::string>& extra = {})
{
    HandSetRun r;
    r.path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(r.path);
    icl::ConfigRequest req;
    req.preset = "renliu-kernel";
    req.sets = {"model.n_heads=2", "task.n_context=12", "eval.n_prompts=200"};
    req.sets.insert(req.sets.end(), extra.begin(), extra.end());
    const nlohmann::json config = icl::resolveConfig(req);
    r.config = icl::parseConfig(config);
    icl::createExperimentFile(r.path, config.dump(), false);
    r.lsa = icl::Lsa(icl::lsaOptions(r.config));
    {
        torch::NoGradGuard g;
        torch::manual_seed(3);
        for (auto& p : r.lsa->parameters())
            p.normal_(0.0, scale);
    }
    icl::CheckpointData cp;
    cp.step = 5;
    cp.params = icl::paramsToArrays(*r.lsa);
    icl::commitToExperimentFile(r.path, {{{"step", 5.0}, {"eval_loss", 1.0}}}, &cp);
    return r;
}

TEST(KernelView, ExactKernelEqualsTheLayerAndMatchesAHandComputedPattern)
{
    HandSetRun run = writeRun("kernel_exact.h5", 0.4);
    icl::KernelViewOptions o;
    o.head = 1;
    o.n_prompts = 32;
    o.m = {16, 256};
    o.seeds = 2;
    o.prompt = 3;
    o.store = true;
    int64_t calls = 0, last = 0, total = 0;
    const icl::KernelView kv = icl::computeKernelView(run.path, o, [&](int64_t done, int64_t t) {
        ++calls;
        last = done;
        total = t;
        return true;
    });
    EXPECT_EQ(kv.checkpoint_step, 5);
    EXPECT_EQ(kv.n_keys, 12);
    EXPECT_EQ(kv.n_queries, 13);
    EXPECT_LE(kv.exact_max_error, 1e-5);
    EXPECT_EQ(last, total);
    EXPECT_GT(calls, 4);
    EXPECT_FALSE(kv.id.empty());
    EXPECT_EQ(icl::readRunSummary(run.path).analyses.at("kernel"), 1);

    // The layer's pattern for prompt 3, head 1, by hand: softmax(q kᵀ/√D) on the embedded prompt.
    const icl::PromptBatch prompts = icl::samplePrompts(run.config.task, 32, icl::seeds::eval(run.config.seed));
    const torch::Tensor h = run.lsa->embed(prompts)[3].to(torch::kFloat64);  // [T, D]
    const auto w = [&](const torch::Tensor& t) { return t[1].detach().to(torch::kFloat64); };
    const torch::Tensor q = torch::matmul(h, w(run.lsa->layer(0).w_q).t());
    const torch::Tensor k = torch::matmul(h.narrow(0, 0, 12), w(run.lsa->layer(0).w_k).t());
    const torch::Tensor A = torch::softmax(torch::matmul(q, k.t()) / std::sqrt(double(h.size(1))), -1);
    ASSERT_EQ(kv.exact_attention.rows, 13);
    ASSERT_EQ(kv.exact_attention.cols, 12);
    EXPECT_EQ(kv.exact_attention.row_labels.back(), "query");
    for (int64_t t = 0; t < 13; ++t)
        for (int64_t i = 0; i < 12; ++i) {
            EXPECT_NEAR(kv.layer_attention.at(t, i), A[t][i].item<double>(), 1e-6);
            EXPECT_NEAR(kv.exact_attention.at(t, i), A[t][i].item<double>(), 1e-6);
        }
    // The random-feature matrix is a different, positive, row-stochastic matrix.
    double rowSum = 0.0;
    for (int64_t i = 0; i < 12; ++i) {
        EXPECT_GT(kv.approx_attention.at(0, i), 0.0);
        rowSum += kv.approx_attention.at(0, i);
    }
    EXPECT_NEAR(rowSum, 1.0, 1e-9);
}

TEST(KernelView, RandomFeatureErrorFallsAsOneOverSqrtMForSmallNorms)
{
    HandSetRun run = writeRun("kernel_slope.h5", 0.1);
    icl::KernelViewOptions o;
    o.n_prompts = 64;
    o.m = {64, 256, 1024, 4096};  // beyond the smallest m, whose ratio-estimator bias steepens the fit
    o.seeds = 8;
    o.store = false;
    for (const char* scaling : {"balanced", "symmetric"}) {
        SCOPED_TRACE(scaling);
        o.scaling = scaling;
        const icl::KernelView kv = icl::computeKernelView(run.path, o);
        EXPECT_LE(kv.exact_max_error, 1e-5);
        EXPECT_NEAR(kv.sweep.output_rmse.slope, -0.5, 0.1);
        EXPECT_NEAR(kv.sweep.attention_rmse.slope, -0.5, 0.1);
        EXPECT_LT(kv.query_norm_mean, 1.0);
        // Loss curves: exact λ = 0 is linear in the step (closed form L(W_s) = s·L(W_1)).
        ASSERT_EQ(kv.loss.size(), 3u);
        const icl::ReferenceLossCurve& lin = kv.loss[0];
        EXPECT_EQ(lin.kernel, "exact");
        EXPECT_DOUBLE_EQ(lin.loss[0], 0.0);
        EXPECT_LT(lin.loss[1], 0.0);
        EXPECT_NEAR(lin.loss[10], 10.0 * lin.loss[1], 1e-9 * std::abs(lin.loss[10]));
    }
}

TEST(KernelView, RegularizedVariantIsMatchedByTheNullPair)
{
    HandSetRun run = writeRun("kernel_regularized.h5", 0.4,
                              {"model.attention_variant=regularized", "model.variant_strength=3"});
    icl::KernelViewOptions o;
    o.n_prompts = 16;
    o.m = {64, 256};
    o.seeds = 2;
    o.store = false;
    const icl::KernelView kv = icl::computeKernelView(run.path, o);
    EXPECT_EQ(kv.attention_variant, "regularized");
    EXPECT_LE(kv.exact_max_error, 1e-5);
    // Rows of the shown (N-column) matrices sum to Z/(Z + λ) < 1.
    double rowSum = 0.0;
    for (int64_t i = 0; i < kv.exact_attention.cols; ++i)
        rowSum += kv.exact_attention.at(0, i);
    EXPECT_LT(rowSum, 1.0);
    EXPECT_GT(rowSum, 0.0);
}

TEST(KernelView, BadRequestsAndCancelGiveClearErrors)
{
    HandSetRun run = writeRun("kernel_errors.h5", 0.2);
    auto message = [&](icl::KernelViewOptions o, std::function<bool(int64_t, int64_t)> progress = {}) {
        o.store = false;
        o.n_prompts = 8;
        o.m = {16};
        o.seeds = 1;
        try {
            icl::computeKernelView(run.path, o, progress);
        } catch (const icl::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    icl::KernelViewOptions o;
    o.layer = 1;
    EXPECT_NE(message(o).find("layer 1 is not a softmax layer"), std::string::npos);
    o = {};
    o.head = 2;
    EXPECT_NE(message(o).find("head 2 out of range"), std::string::npos);
    o = {};
    o.scaling = "whatever";
    EXPECT_NE(message(o).find("scaling"), std::string::npos);
    EXPECT_EQ(message({}, [](int64_t, int64_t) { return false; }), "cancelled");

    HandSetRun linear = writeRun("kernel_linear.h5", 0.2, {"model.softmax_layers=0"});
    try {
        icl::computeKernelView(linear.path, {});
        FAIL() << "a linear model has no kernel view";
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find("softmax_layers is 0"), std::string::npos);
    }
}

TEST(KernelView, VariantFigureHasOneSeriesPerRun)
{
    icl::RunSummary a, b;
    a.path = "/x/soft.h5";
    a.config_json = R"({"model":{"softmax_layers":1,"attention_variant":"softmax"}})";
    a.metrics = {{"step", {0, 100}}, {"eval_loss", {1.0, 0.5}}, {"baseline/gd_1", {0.2, 0.2}}};
    b.path = "/x/reg.h5";
    b.config_json = R"({"model":{"softmax_layers":1,"attention_variant":"regularized","variant_strength":2}})";
    b.metrics = {{"step", {0, 100}}, {"eval_loss", {1.0, 0.4}}};
    const icl::Figure f = icl::variantLossFigure({a, b});
    ASSERT_EQ(f.series.size(), 3u);
    EXPECT_EQ(f.series[0].name, "softmax (soft.h5)");
    EXPECT_EQ(f.series[1].name, "regularized λ=2 (reg.h5)");
    EXPECT_EQ(f.series[1].y, (std::vector<double>{1.0, 0.4}));
    EXPECT_EQ(f.series[2].name, "one GD step (baseline)");
    EXPECT_TRUE(f.log_y);
}

} // namespace
