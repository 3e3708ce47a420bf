// Interactive inspector on small experiment files (gpt2 and LSA with parameters randomised away from
// the initialisation, so that every layer matters). Expected values come from independent
// computations: the model's own predict() on a batch built here, predictBaseline on the same prompt,
// the LSA scores from the stored weights by hand, ⟨w, x⟩ for linear labels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x
#include <unistd.h>

#include "core/analysis/icl_curve.h"
#include "core/analysis/inspector.h"
#include "core/analysis/probe.h"
#include "core/analysis/probe_analysis.h"
#include "core/analysis/run_loader.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::expectError;

/// An experiment file with one checkpoint (step 100) of a model of `preset` with `sets`, its
/// parameters moved by N(0, 0.3²) noise.
std::string writeRun(const std::string& name, const std::string& preset, const std::vector<std::string>& sets)
{
    // Per process: ctest runs each test as its own process, in parallel, and the fixtures below are shared by many.
    const std::string path = icl::test::scratchPrefix() + std::to_string(::getpid()) + "_" + name;
    std::filesystem::remove(path);
    icl::ConfigRequest r;
    r.preset = preset;
    r.sets = sets;
    icl::test::writeModelRun(path, icl::resolveConfig(r), 7, 100, 0.3);
    return path;
}

const std::string& gptRun()
{
    static const std::string path = writeRun(
        "inspector_gpt2.h5", "garg-linear-regression",
        {"task.d=3", "task.n_context=5", "model.n_layers=2", "model.n_heads=2", "model.d_model=16",
         "training.curriculum.enabled=false", "eval.n_prompts=64",
         "eval.baselines=[\"zero\",\"least_squares\",\"ridge\",\"gd\"]", "eval.gd_steps=[1]"});
    return path;
}

const std::string& lsaRun()
{
    static const std::string path
        = writeRun("inspector_lsa.h5", "vonoswald-lsa-1layer",
                   {"task.d=3", "task.n_context=6", "model.n_heads=2", "eval.n_prompts=64",
                    "eval.baselines=[\"zero\",\"least_squares\",\"ridge\",\"gd\"]", "eval.alignment=[]"});
    return path;
}

const std::string& representationRun()
{
    static const std::string path = writeRun(
        "inspector_rep.h5", "guo-representation",
        {"task.d=4", "task.rep_dim=4", "task.n_context=6", "model.n_layers=2", "model.n_heads=2", "model.d_model=16",
         "eval.n_prompts=64", "eval.baselines=[\"zero\",\"ridge\"]"});
    return path;
}

/// The prompt as a PromptBatch of one, built independently of the inspector.
icl::PromptBatch batchOf(const icl::Prompt& p, torch::Dtype dtype)
{
    const int64_t n = int64_t(p.y.size()), d = p.dim();
    torch::Tensor x = torch::zeros({1, n, d}, torch::kFloat64), y = torch::zeros({1, n}, torch::kFloat64);
    for (int64_t i = 0; i < n; ++i) {
        y[0][i] = p.y[size_t(i)];
        for (int64_t j = 0; j < d; ++j)
            x[0][i][j] = p.x[size_t(i)][size_t(j)];
    }
    torch::Tensor w = torch::zeros({1, int64_t(p.w.size())}, torch::kFloat64);
    for (size_t j = 0; j < p.w.size(); ++j)
        w[0][int64_t(j)] = p.w[j];
    return {x.to(dtype), y.to(dtype), w.to(dtype)};
}

double prediction(const icl::Inspection& v, const std::string& name)
{
    for (const auto& p : v.predictions)
        if (p.name == name)
            return p.prediction;
    ADD_FAILURE() << "no prediction " << name;
    return NAN;
}

double modelPredict(const std::string& path, const icl::Prompt& p)
{
    icl::LoadedRun run = icl::loadRun(path, -1);
    torch::NoGradGuard guard;
    return run.model.predict(batchOf(p, torch::kFloat32)).item<double>();
}

TEST(Inspector, ModelPredictionEqualsPredictOnTheSameBatch)
{
    for (const std::string* path : {&gptRun(), &lsaRun(), &representationRun()}) {
        icl::Inspector insp(*path);
        EXPECT_EQ(insp.checkpointStep(), 100);
        icl::Prompt p = insp.samplePrompt(11);
        p.y[2] += 1.5;  // an edited label
        const icl::Inspection v = insp.inspect(p);
        ASSERT_FALSE(v.predictions.empty());
        EXPECT_EQ(v.predictions.front().name, "model");
        EXPECT_EQ(v.predictions.front().prediction, modelPredict(*path, p)) << *path;
        EXPECT_EQ(v.target, p.y.back());
        for (const auto& q : v.predictions)
            EXPECT_DOUBLE_EQ(q.error, 0.5 * (q.prediction - p.y.back()) * (q.prediction - p.y.back())) << q.name;
    }
}

TEST(Inspector, BaselinesEqualPredictBaselineOnTheSamePrompt)
{
    icl::Inspector insp(gptRun());
    const icl::Prompt p = insp.samplePrompt(5);
    const icl::Inspection v = insp.inspect(p);
    const icl::LoadedRun run = icl::loadRun(gptRun(), -1);
    const icl::PromptBatch b = batchOf(p, torch::kFloat64);
    const auto names = icl::baselineNames(run.config.eval);
    ASSERT_GE(v.predictions.size(), names.size() + 2);  // model, the run's baselines, …, oracle
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(v.predictions[i + 1].name, names[i]);
        EXPECT_DOUBLE_EQ(v.predictions[i + 1].prediction,
                         icl::predictBaseline(names[i], b, run.config, run.fitted).item<double>());
    }
    // Least squares from the normal equations (N = 5 > d = 3, so XᵀX is invertible).
    const torch::Tensor X = b.contextX()[0], y = b.contextY()[0];
    const torch::Tensor w = torch::linalg_solve(X.t().matmul(X), X.t().matmul(y), true);
    EXPECT_NEAR(prediction(v, "least_squares"), torch::dot(w, b.queryX()[0]).item<double>(), 1e-9);
    EXPECT_EQ(prediction(v, "zero"), 0.0);
    // Linear task with known w: the oracle is the noise-free label ⟨w, x_q⟩.
    double dot = 0.0;
    for (int64_t j = 0; j < p.dim(); ++j)
        dot += p.w[size_t(j)] * p.x.back()[size_t(j)];
    EXPECT_EQ(v.predictions.back().name, "oracle");
    EXPECT_NEAR(v.predictions.back().prediction, dot, 1e-12);
    // GD-1 … GD-L are always shown (here L = 2; the run lists gd_1 only), with the lens's step sizes.
    const icl::RegressionLens lens = insp.lens(p);
    for (const auto& r : lens.references)
        if (r.name == "gd_1" || r.name == "gd_2")
            EXPECT_DOUBLE_EQ(prediction(v, r.name), r.prediction) << r.name;
    int oracles = 0;
    for (const auto& q : v.predictions)
        oracles += q.name.find("oracle") != std::string::npos;
    EXPECT_EQ(oracles, 1);
}

TEST(Inspector, Gpt2PatternsAreCausalDistributionsWithTokenLabels)
{
    icl::Inspector insp(gptRun());
    const icl::Prompt p = insp.samplePrompt(3);
    const icl::Inspection v = insp.inspect(p);
    ASSERT_EQ(v.patterns.size(), 4u);  // 2 layers × 2 heads
    ASSERT_EQ(v.token_labels.size(), 11u);
    EXPECT_EQ(v.token_labels[0], "x₁");
    EXPECT_EQ(v.token_labels[1], "y₁");
    EXPECT_EQ(v.token_labels[9], "y₅");
    EXPECT_EQ(v.token_labels[10], "query");
    EXPECT_EQ(v.key_labels, v.token_labels);
    for (size_t k = 0; k < v.patterns.size(); ++k) {
        const icl::Matrix& m = v.patterns[k];
        EXPECT_TRUE(v.softmax_head[k]);
        ASSERT_EQ(m.rows, 11);
        ASSERT_EQ(m.cols, 11);
        for (int64_t t = 0; t < m.rows; ++t) {
            double sum = 0.0;
            for (int64_t s = 0; s < m.cols; ++s) {
                sum += m.at(t, s);
                if (s > t)
                    EXPECT_EQ(m.at(t, s), 0.0);
            }
            EXPECT_NEAR(sum, 1.0, 1e-6);
        }
        // Head summaries from the pattern itself.
        const icl::HeadSummary& h = v.heads[k];
        EXPECT_EQ(h.layer, int64_t(k / 2));
        EXPECT_EQ(h.head, int64_t(k % 2));
        double copy = 0.0, entropy = 0.0;
        for (int64_t i = 0; i < 5; ++i)
            copy += m.at(2 * i + 1, 2 * i) / 5.0;
        for (int64_t t = 0; t < m.rows; ++t)
            for (int64_t s = 0; s <= t; ++s)
                if (m.at(t, s) > 0)
                    entropy -= m.at(t, s) * std::log(m.at(t, s)) / double(m.rows);
        EXPECT_NEAR(h.copy_mass, copy, 1e-6);
        EXPECT_NEAR(h.entropy, entropy, 1e-6);
        ASSERT_EQ(h.query_to_example.size(), 5u);
        EXPECT_NEAR(h.query_to_example[4], m.at(10, 8) + m.at(10, 9), 1e-6);  // float32 rows sum to 1 ± 1e-7
    }
}

TEST(Inspector, LsaPatternEqualsScoresFromTheLayerWeights)
{
    icl::Inspector insp(lsaRun());
    const icl::Prompt p = insp.samplePrompt(9);
    const icl::Inspection v = insp.inspect(p);
    const int64_t N = 6, D = 4, H = 2;
    ASSERT_EQ(v.patterns.size(), size_t(H));
    ASSERT_EQ(v.key_labels.size(), size_t(N));  // keys: the in-context tokens only
    EXPECT_EQ(v.key_labels[0], "e₁");
    EXPECT_EQ(v.token_labels.back(), "query");
    std::map<std::string, icl::NamedArray> params;
    for (const auto& a : icl::readCheckpoint(lsaRun(), 100).params)
        params[a.name] = a;
    const auto& wq = params.at("blocks.0.attn.w_q").data;  // [H, D, D]
    const auto& wk = params.at("blocks.0.attn.w_k").data;
    // tokens e_i = (x_i, y_i), query (x_q, 0)
    std::vector<std::vector<double>> e(N + 1, std::vector<double>(D, 0.0));
    for (int64_t i = 0; i <= N; ++i) {
        for (int64_t j = 0; j < 3; ++j)
            e[size_t(i)][size_t(j)] = p.x[size_t(i)][size_t(j)];
        e[size_t(i)][3] = i < N ? p.y[size_t(i)] : 0.0;
    }
    for (int64_t h = 0; h < H; ++h) {
        EXPECT_FALSE(v.softmax_head[size_t(h)]);
        for (int64_t t = 0; t <= N; ++t) {
            for (int64_t i = 0; i < N; ++i) {
                double score = 0.0;
                for (int64_t a = 0; a < D; ++a) {
                    double q = 0.0, k = 0.0;
                    for (int64_t b = 0; b < D; ++b) {
                        q += wq[size_t((h * D + a) * D + b)] * e[size_t(t)][size_t(b)];
                        k += wk[size_t((h * D + a) * D + b)] * e[size_t(i)][size_t(b)];
                    }
                    score += q * k;
                }
                EXPECT_NEAR(v.patterns[size_t(h)].at(t, i), score, 1e-5 * (1.0 + std::abs(score)));
            }
        }
        EXPECT_TRUE(std::isnan(v.heads[size_t(h)].copy_mass));
    }
}

TEST(Inspector, LensAtTheLastLayerEqualsTheModelsPrediction)
{
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::Inspector insp(*path);
        icl::Prompt p = insp.samplePrompt(21);
        p.y[0] = -2.0;
        const icl::RegressionLens lens = insp.lens(p);
        const icl::Inspection v = insp.inspect(p);
        ASSERT_EQ(lens.prediction.size(), size_t(insp.nLayers() + 1));
        ASSERT_EQ(lens.layer_labels.front(), "embed");
        EXPECT_EQ(lens.prediction.back(), v.predictions.front().prediction);
        // References: gd_1 … gd_k (k = max(L, eval GD steps)), ridge, least squares, zero, oracle.
        const icl::LoadedRun run = icl::loadRun(*path, -1);
        const icl::PromptBatch b = batchOf(p, torch::kFloat64);
        EXPECT_EQ(lens.references.front().name, "gd_1");
        EXPECT_DOUBLE_EQ(lens.references.front().prediction,
                         icl::predictGd(b, 1, run.fitted.eta.at("gd_1")).item<double>());
        bool sawLs = false;
        for (const auto& r : lens.references)
            if (r.name == "least_squares") {
                sawLs = true;
                EXPECT_DOUBLE_EQ(r.prediction, icl::predictLeastSquares(b).item<double>());
            }
        EXPECT_TRUE(sawLs);
    }
    // LSA: the embedding's read-out is −(query y-slot) = 0.
    icl::Inspector insp(lsaRun());
    EXPECT_EQ(insp.lens(insp.samplePrompt(1)).prediction.front(), 0.0);
}

// The ICL curve of a causal model comes from one forward pass over whole prompts; each of its points
// must equal the independent route: the model run on the first n + 1 points of each prompt (n examples,
// x_{n+1} as the query), and the preview (of every model) must be the same computation on the first 64
// prompts.
TEST(IclCurve, OneCausalPassEqualsRunningEveryPrefix)
{
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::IclCurveOptions o;
        o.n_prompts = 200;
        o.seed = 5;
        o.threads = 1;
        std::vector<icl::IclCurve> previews;
        const icl::IclCurve curve
            = icl::computeIclCurve(*path, o, {}, [&](const icl::IclCurve& c) { previews.push_back(c); });
        const icl::LoadedRun run = icl::loadRun(*path, -1);
        const icl::PromptBatch prompts = icl::samplePrompts(run.config.task, 200, icl::mixSeed(5, 1));
        const bool causal = run.config.model.kind == "gpt2";
        ASSERT_EQ(previews.size(), 1u);  // every curve over more than 64 prompts has a first look
        torch::NoGradGuard guard;
        auto modelError = [&](const icl::PromptBatch& b, int64_t n) {
            const icl::PromptBatch first = b.firstPoints(n);
            const torch::Tensor e = run.model.predict(first).to(torch::kFloat64) - first.queryY().to(torch::kFloat64);
            return (0.5 * e.pow(2)).mean().item<double>();
        };
        const int64_t N = run.config.task.n_context;
        // A causal model's curve starts at n = 0 (y_1 predicted from x_1 alone), an LSA curve at n = 1.
        const int64_t n0 = causal ? 0 : 1;
        ASSERT_EQ(curve.n_examples.size(), size_t(N + 1 - n0));
        EXPECT_EQ(curve.n_examples.front(), n0);
        ASSERT_EQ(curve.series.front().name, "model");
        for (int64_t n = n0; n <= N; ++n) {
            const double want = modelError(prompts, n);
            EXPECT_NEAR(curve.series.front().error[size_t(n - n0)], want, 1e-5 * (1.0 + want)) << *path << ", n = " << n;
            const double first = modelError(prompts.slice(0, 64), n);
            EXPECT_EQ(previews.front().n_prompts, 64);
            EXPECT_NEAR(previews.front().series.front().error[size_t(n - n0)], first, 1e-5 * (1.0 + first))
                << *path << ", n = " << n;
        }
        if (causal) {  // with no example every baseline predicts 0: its error is 0.5·E[y_1²]
            const double y1 = (0.5 * prompts.firstPoints(0).queryY().to(torch::kFloat64).pow(2)).mean().item<double>();
            for (size_t s = 1; s < curve.series.size(); ++s)
                EXPECT_NEAR(curve.series[s].error.front(), y1, 1e-9 * (1.0 + y1)) << curve.series[s].name;
        }
        // At n = N the point is the prompt's own query: the model's ordinary prediction.
        const torch::Tensor e = run.model.predict(prompts).to(torch::kFloat64) - prompts.queryY().to(torch::kFloat64);
        EXPECT_NEAR(curve.series.front().error.back(), (0.5 * e.pow(2)).mean().item<double>(), 1e-5);
    }
}

TEST(ProbeAnalysis, SharedPassEqualsIndependentProbesPerTarget)
{
    // Independent: the documented prompt draws run through the model in one forward pass here, the
    // targets built from the prompts (x, Φ*(x), y, the oracle's predictions by predictBaseline on each
    // prefix), one probeLayers per target.
    const std::string& path = representationRun();
    for (const std::string positions : {"x", "query"}) {
        icl::ProbeOptions o;
        o.positions = positions;
        o.n_fit = 40;
        o.n_test = 24;
        o.seed = 5;
        o.store = false;
        o.threads = 1;
        const std::vector<std::string> targets{"x", "phi", "gd_1", "y", "oracle"};
        std::vector<std::string> errors;
        std::vector<std::vector<icl::ProbeCurve>> looks;
        int64_t lastDone = -1, lastTotal = 0;
        const std::vector<icl::ProbeCurve> curves = icl::computeProbes(
            path, o, targets, &errors,
            [&](int64_t done, int64_t total) {
                EXPECT_GT(done, lastDone);
                lastDone = done;
                lastTotal = total;
                return true;
            },
            [&](const std::vector<icl::ProbeCurve>& c) { looks.push_back(c); });
        EXPECT_EQ(lastDone, lastTotal);
        ASSERT_EQ(errors.size(), 1u);  // gd_1: the run fitted no GD step size
        EXPECT_NE(errors[0].find("gd_1"), std::string::npos) << errors[0];
        ASSERT_EQ(curves.size(), 4u);
        ASSERT_EQ(looks.size(), 1u);  // 40 > kProbeFirstLookPrompts fit prompts
        ASSERT_EQ(looks[0].size(), 4u);

        const icl::LoadedRun run = icl::loadRun(path, -1);
        const icl::ExperimentConfig& cfg = run.config;
        const int64_t N = cfg.task.n_context, L = cfg.model.n_layers;
        auto gpt = std::dynamic_pointer_cast<icl::Gpt2Impl>(run.model.module);
        ASSERT_TRUE(gpt);
        const bool query = positions == "query";
        auto layersOf = [&](const icl::PromptBatch& p) {
            icl::ActivationCapture cap;
            cap.names.insert("embed");
            for (int64_t l = 0; l < L; ++l)
                cap.names.insert("resid_post." + std::to_string(l));
            torch::NoGradGuard guard;
            gpt->predictAll(p, &cap);
            std::vector<torch::Tensor> layers;
            for (int64_t l = -1; l < L; ++l) {
                const torch::Tensor r = cap.values.at(l < 0 ? "embed" : "resid_post." + std::to_string(l));
                const torch::Tensor sel = query ? r.narrow(1, 2 * N, 1) : r.slice(1, 0, 2 * N, 2);  // x_i at 2i
                layers.push_back(sel.reshape({-1, sel.size(2)}).to(torch::kFloat64));
            }
            return layers;
        };
        auto targetOf = [&](const std::string& t, const icl::PromptBatch& p) {
            torch::Tensor v;
            const int64_t first = query ? N : 0, count = query ? 1 : N;
            if (t == "x")
                v = p.x.narrow(1, first, count);
            else if (t == "y")
                v = p.y.narrow(1, first, count).unsqueeze(-1);
            else if (t == "phi")
                v = icl::taskRepresentations(cfg.task)[0](p.x.to(torch::kFloat64)).narrow(1, first, count);
            else {  // oracle: ridge on Φ* from the i earlier examples, 0 with none
                std::vector<torch::Tensor> cols;
                for (int64_t i = first; i < first + count; ++i)
                    cols.push_back(i == 0 ? torch::zeros({p.batchSize()}, torch::kFloat64)
                                          : icl::predictBaseline("oracle_ridge_phi", p.firstPoints(i), cfg, run.fitted)
                                                .to(torch::kFloat64));
                v = torch::stack(cols, 1).unsqueeze(-1);
            }
            return v.reshape({-1, v.size(2)}).to(torch::kFloat64);
        };
        const icl::PromptBatch fitP = icl::samplePrompts(cfg.task, 40, icl::mixSeed(5, 0x9B0E0001));
        const icl::PromptBatch testP = icl::samplePrompts(cfg.task, 24, icl::mixSeed(5, 0x9B0E0002));
        auto expectCurve = [&](const icl::ProbeCurve& c, const std::string& t, const icl::PromptBatch& f,
                               const icl::PromptBatch& e) {
            const torch::Tensor yf = targetOf(t, f), yt = targetOf(t, e);
            const std::vector<icl::ProbeScore> want = icl::probeLayers(layersOf(f), yf, layersOf(e), yt);
            EXPECT_EQ(c.target, t);
            EXPECT_EQ(c.positions, positions);
            EXPECT_EQ(c.checkpoint_step, 100);
            EXPECT_EQ(c.n_fit, yf.size(0));
            EXPECT_EQ(c.n_test, yt.size(0));
            ASSERT_EQ(c.normalised_mse.size(), size_t(L + 1));
            for (size_t l = 0; l < want.size(); ++l) {
                // float32 forward passes in chunks here and whole there: equal up to rounding
                EXPECT_NEAR(c.normalised_mse[l], want[l].normalised_mse, 1e-4 * (1.0 + want[l].normalised_mse))
                    << positions << " " << t << " layer " << l;
                EXPECT_NEAR(c.lambda[l], want[l].lambda, 1e-12) << positions << " " << t << " layer " << l;
            }
        };
        const std::vector<std::string> ok{"x", "phi", "y", "oracle"};
        const int64_t k = icl::kProbeFirstLookPrompts;
        for (size_t i = 0; i < ok.size(); ++i) {
            expectCurve(curves[i], ok[i], fitP, testP);
            expectCurve(looks[0][i], ok[i], fitP.slice(0, k), testP.slice(0, k));
            // computeProbe for that target alone: the same curve, bit for bit
            icl::ProbeOptions one = o;
            one.target = ok[i];
            const icl::ProbeCurve alone = icl::computeProbe(path, one);
            EXPECT_EQ(alone.normalised_mse, curves[i].normalised_mse) << ok[i];
            EXPECT_EQ(alone.lambda, curves[i].lambda) << ok[i];
        }
    }
}

TEST(ProbeAnalysis, FailuresAndCancelling)
{
    icl::ProbeOptions o;
    o.n_fit = 40;
    o.n_test = 24;
    o.store = false;
    expectError([&] { icl::computeProbes(representationRun(), o, {"x", "gd_1"}); }, "gd_1");
    expectError([&] { icl::computeProbes(lsaRun(), o, {"x"}); }, "gpt2");
    expectError([&] { icl::computeProbes(representationRun(), o, {"x"}, nullptr, [](int64_t, int64_t) { return false; }); },
                "cancelled");
    std::vector<std::string> errors;
    EXPECT_TRUE(icl::computeProbes(representationRun(), o, {"gd_1"}, &errors).empty());
    EXPECT_EQ(errors.size(), 1u);
}

TEST(Inspector, LensFitsGdStepsTheRunDidNotFit)
{
    // gpt2 with 2 layers and only gd_1 fitted: the lens adds GD-2 with η from a line search; that
    // η must make GD-2 at least as good as GD-2 with GD-1's η on fresh prompts.
    icl::Inspector insp(gptRun());
    const icl::RegressionLens lens = insp.lens(insp.samplePrompt(4));
    ASSERT_GE(lens.references.size(), 2u);
    EXPECT_EQ(lens.references[1].name, "gd_2");
    EXPECT_TRUE(std::isfinite(lens.references[1].prediction));
}

TEST(Inspector, PatchingAPromptIntoItselfChangesNothing)
{
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::Inspector insp(*path);
        const icl::Prompt p = insp.samplePrompt(2);
        const icl::PatchingResult r = insp.patchPrompts(p, p);
        EXPECT_EQ(r.n_skipped, 1);
        ASSERT_EQ(r.patched_prediction.rows, insp.nLayers() + 1);
        for (double y : r.patched_prediction.data)
            EXPECT_NEAR(y, r.clean_prediction, 1e-5 * (1.0 + std::abs(y)));
        for (double e : r.effect.data)
            EXPECT_TRUE(std::isnan(e));
    }
}

TEST(Inspector, PatchingTheQueryAtTheFinalLayerRecoversTheCleanPrediction)
{
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::Inspector insp(*path);
        const icl::Prompt p = insp.samplePrompt(8);
        icl::PatchingOptions o;
        o.corruption = icl::Corruption::DifferentW;
        int64_t calls = 0;
        const icl::PatchingResult r = insp.patching(p, o, [&](int64_t, int64_t total) {
            EXPECT_EQ(total, insp.nLayers() + 1);
            ++calls;
            return true;
        });
        EXPECT_EQ(r.corruption, "different_w");
        EXPECT_EQ(r.n_skipped, 0);
        EXPECT_GE(calls, insp.nLayers() + 1);
        const int64_t L = insp.nLayers(), T = r.effect.cols;
        // Final row: only the query position reads out the prediction.
        for (int64_t t = 0; t < T; ++t)
            EXPECT_NEAR(r.effect.at(L, t), t == T - 1 ? 1.0 : 0.0, 1e-4) << t;
        // Layer 0 at the query: the whole clean token replaces the corrupted one; for gpt2 (causal)
        // positions after the last changed label carry nothing of the difference at layer 0 except
        // through the query itself.
        EXPECT_TRUE(std::isfinite(r.effect.at(0, T - 1)));
    }
}

TEST(Inspector, PatchingEveryPositionOfALayerRecoversTheCleanPrediction)
{
    // Model level: replacing the whole resid_pre.{l} of the corrupted run with the clean run's gives
    // the clean prediction exactly (same computation from layer l on).
    icl::Inspector insp(gptRun());
    const icl::Prompt clean = insp.samplePrompt(12);
    icl::PatchingOptions o;
    o.corruption = icl::Corruption::ShufflePairs;
    const icl::Prompt corrupted = insp.corrupt(clean, o);
    icl::LoadedRun run = icl::loadRun(gptRun(), -1);
    auto gpt = std::dynamic_pointer_cast<icl::Gpt2Impl>(run.model.module);
    torch::NoGradGuard guard;
    const torch::Tensor ct = icl::interleavedTokens(batchOf(clean, torch::kFloat32));
    const torch::Tensor xt = icl::interleavedTokens(batchOf(corrupted, torch::kFloat32));
    icl::ActivationCapture cap;
    cap.all = true;
    const torch::Tensor yClean = gpt->forward(ct, &cap);
    for (int64_t l = 0; l < 2; ++l) {
        icl::ActivationCapture patch;
        patch.interventions.push_back(
            {icl::Intervention::Kind::Replace, "resid_pre." + std::to_string(l), -1, -1, cap.values.at("resid_pre." + std::to_string(l))});
        EXPECT_TRUE(torch::equal(gpt->forward(xt, &patch), yClean)) << l;
        // and of resid_post.{l} (the blocks up to l are skipped; for the last layer all of them)
        icl::ActivationCapture post;
        post.interventions.push_back({icl::Intervention::Kind::Replace, "resid_post." + std::to_string(l), -1, -1,
                                      cap.values.at("resid_post." + std::to_string(l))});
        EXPECT_TRUE(torch::equal(gpt->forward(xt, &post), yClean)) << l;
    }
    EXPECT_FALSE(torch::equal(gpt->forward(xt), yClean));
}

TEST(Inspector, PatchedRowsEqualAFullRecomputationAndArriveFromTheFinalRowUp)
{
    // Independent: for every row and position, the whole corrupted prompt is run through the model here
    // with only that one position of that activation replaced by the clean run's (no block skipped).
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::Inspector insp(*path);
        const icl::Prompt clean = insp.samplePrompt(21);
        icl::PatchingOptions o;
        o.corruption = icl::Corruption::DifferentW;
        std::vector<icl::PatchingResult> partial;
        const icl::PatchingResult r
            = insp.patching(clean, o, {}, [&](const icl::PatchingResult& p) { partial.push_back(p); });
        const int64_t L = insp.nLayers(), T = r.effect.cols;
        ASSERT_EQ(r.effect.rows, L + 1);
        ASSERT_EQ(partial.size(), size_t(L + 1));
        for (size_t k = 0; k < partial.size(); ++k) {
            EXPECT_EQ(partial[k].corruption, "different_w");
            for (int64_t row = 0; row <= L; ++row)
                for (int64_t t = 0; t < T; ++t) {
                    const double v = partial[k].patched_prediction.at(row, t);
                    if (row >= L - int64_t(k))  // rows L, L − 1, …: done, as in the final result
                        EXPECT_EQ(v, r.patched_prediction.at(row, t)) << *path << " k " << k << " row " << row;
                    else
                        EXPECT_TRUE(std::isnan(v)) << *path << " k " << k << " row " << row;
                }
        }

        const icl::Prompt corrupted = insp.corrupt(clean, o);
        icl::LoadedRun run = icl::loadRun(*path, -1);
        auto gpt = std::dynamic_pointer_cast<icl::Gpt2Impl>(run.model.module);
        auto lsa = std::dynamic_pointer_cast<icl::LsaImpl>(run.model.module);
        ASSERT_TRUE(gpt || lsa);
        torch::NoGradGuard guard;
        auto query = [&](const icl::Prompt& p, icl::ActivationCapture* cap) {
            const icl::PromptBatch b = batchOf(p, torch::kFloat32);
            if (gpt) {
                const torch::Tensor out = gpt->forward(icl::interleavedTokens(b), cap);
                return out.select(1, out.size(1) - 1).item<double>();
            }
            const int64_t n = p.nContext();
            return lsa->readout(lsa->forward(lsa->embed(b), lsa->contextTokens(n), cap)).item<double>();
        };
        icl::ActivationCapture cleanCap;
        cleanCap.all = true;
        const double yClean = query(clean, &cleanCap), yCorrupt = query(corrupted, nullptr);
        EXPECT_NEAR(r.clean_prediction, yClean, 1e-6);
        EXPECT_NEAR(r.corrupted_prediction, yCorrupt, 1e-6);
        for (int64_t row = 0; row <= L; ++row) {
            const std::string name = row < L ? "resid_pre." + std::to_string(row) : "resid_post." + std::to_string(L - 1);
            for (int64_t t = 0; t < T; ++t) {
                icl::ActivationCapture patch;
                patch.interventions.push_back({icl::Intervention::Kind::Replace, name, -1, t,
                                               cleanCap.values.at(name).select(1, t)});
                const double want = query(corrupted, &patch);
                EXPECT_NEAR(r.patched_prediction.at(row, t), want, 1e-5 * (1.0 + std::abs(want)))
                    << *path << " row " << row << " t " << t;
                EXPECT_NEAR(r.effect.at(row, t), (want - yCorrupt) / (yClean - yCorrupt), 1e-3)
                    << *path << " row " << row << " t " << t;
            }
        }
    }
}

TEST(Inspector, AblationsThatMatchNothingAreErrors)
{
    icl::Inspector gpt(gptRun()), lsa(lsaRun());
    const icl::Prompt p = gpt.samplePrompt(1), q = lsa.samplePrompt(1);
    using K = icl::Ablation::Kind;
    expectError([&] { gpt.inspect(p, {{K::Zero, "attn.out.2", -1, -1}}); }, "has 2 layer(s)");
    expectError([&] { gpt.inspect(p, {{K::Mean, "resid_pre.7", -1, -1}}); }, "has 2 layer(s)");
    expectError([&] { gpt.inspect(p, {{K::Zero, "attn.out.0", 2, -1}}); }, "2 head(s) per layer");
    expectError([&] { gpt.inspect(p, {{K::Zero, "mlp.out.0", 0, -1}}); }, "a head can only be chosen in attn.out");
    expectError([&] { gpt.inspect(p, {{K::Zero, "attn.out.0", -1, 11}}); }, "positions 0 to 10");
    expectError([&] { gpt.inspect(p, {{K::Zero, "attn.outt.0", -1, -1}}); }, "no such activation");
    expectError([&] { gpt.lens(p, {{K::Zero, "embed", -1, -1}}); }, "no such activation");
    expectError([&] { lsa.inspect(q, {{K::Zero, "mlp.out.0", -1, -1}}); }, "has no MLP");
    expectError([&] { lsa.inspect(q, {{K::Zero, "attn.out.1", -1, -1}}); }, "has 1 layer(s)");
    // Ablations of what the models do have run.
    EXPECT_NO_THROW(gpt.inspect(p, {{K::Zero, "attn.out.1", 1, -1}}));
    EXPECT_NO_THROW(lsa.inspect(q, {{K::Mean, "attn.out.0", -1, -1}}));
}

TEST(Inspector, ZeroAblatingAHeadEqualsZeroingItsOutputWeights)
{
    for (const std::string* path : {&gptRun(), &lsaRun()}) {
        icl::Inspector insp(*path);
        const icl::Prompt p = insp.samplePrompt(6);
        const double ablated = insp.inspect(p, {{icl::Ablation::Kind::Zero, "attn.out.0", 1, -1}}).predictions[0].prediction;
        icl::LoadedRun run = icl::loadRun(*path, -1);
        {
            torch::NoGradGuard guard;
            for (auto& kv : run.model.module->named_parameters())
                if (kv.key() == "blocks.0.attn.W_O" || kv.key() == "blocks.0.attn.w_o")
                    kv.value()[1].zero_();
        }
        torch::NoGradGuard guard;
        const double expected = run.model.predict(batchOf(p, torch::kFloat32)).item<double>();
        EXPECT_NEAR(ablated, expected, 1e-5 * (1.0 + std::abs(expected))) << *path;
        EXPECT_GT(std::abs(ablated - insp.inspect(p).predictions[0].prediction), 1e-6) << *path;
    }
}

TEST(Inspector, MeanAblationUsesTheMeanOverReferencePrompts)
{
    // Documented: the mean over 256 prompts of the run's task with the prompt's N, drawn from
    // mixSeed(config.seed, 0x3EA7AB1A), per token position. Mean-ablating the last residual stream
    // makes the prediction the read-out of that mean at the query.
    icl::Inspector insp(gptRun());
    const icl::Prompt p = insp.samplePrompt(6);
    const double ablated = insp.inspect(p, {{icl::Ablation::Kind::Mean, "resid_post.1", -1, -1}}).predictions[0].prediction;
    icl::LoadedRun run = icl::loadRun(gptRun(), -1);
    auto gpt = std::dynamic_pointer_cast<icl::Gpt2Impl>(run.model.module);
    torch::NoGradGuard guard;
    const icl::PromptBatch ref = icl::samplePrompts(run.config.task, 256, icl::mixSeed(run.config.seed, 0x3EA7AB1A));
    icl::ActivationCapture cap;
    cap.names = {"resid_post.1"};
    gpt->forward(icl::interleavedTokens(ref), &cap);
    const torch::Tensor mean = cap.values.at("resid_post.1").mean(0, true);  // [1, T, D]
    const torch::Tensor out = gpt->readout(mean);
    EXPECT_NEAR(ablated, out[0][out.size(1) - 1].item<double>(), 1e-5);
}

TEST(Inspector, LabelsOfLinearTasksAreInnerProductsWithW)
{
    icl::Inspector insp(lsaRun());
    icl::Prompt p = insp.samplePrompt(13);
    ASSERT_EQ(p.w.size(), 3u);
    ASSERT_EQ(p.nContext(), 6);
    auto dot = [&](const std::vector<double>& x) { return x[0] * p.w[0] + x[1] * p.w[1] + x[2] * p.w[2]; };
    for (size_t i = 0; i < p.y.size(); ++i)
        EXPECT_NEAR(p.y[i], dot(p.x[i]), 1e-12);  // the preset is noise-free
    EXPECT_NEAR(insp.trueLabel(p, {0.5, -1.0, 2.0}), dot({0.5, -1.0, 2.0}), 1e-15);
    insp.relabel(p, 0.0, 3);
    for (size_t i = 0; i < p.y.size(); ++i)
        EXPECT_NEAR(p.y[i], dot(p.x[i]), 1e-12);
    insp.relabel(p, 0.5, 3);
    EXPECT_EQ(p.noise_std, 0.5);
    double resid = 0.0;
    for (size_t i = 0; i < p.y.size(); ++i)
        resid += std::abs(p.y[i] - dot(p.x[i]));
    EXPECT_GT(resid, 0.0);
    const std::vector<double> before = p.x[2];
    insp.resampleExample(p, 2, 99);
    EXPECT_NE(p.x[2], before);
    EXPECT_NEAR(p.y[2], dot(p.x[2]), 4.0);  // noise σ = 0.5
    for (double v : p.x[2])
        EXPECT_LE(std::abs(v), 1.0);  // x ~ U(−1, 1)
    expectError([&] { insp.resampleExample(p, 7, 1); }, "out of range");
    icl::Prompt noW = p;
    noW.w.clear();
    expectError([&] { insp.relabel(noW, 0.0, 1); }, "no task instance");
    expectError([&] { insp.trueLabel(noW, {0, 0, 0}); }, "no task instance");
}

TEST(Inspector, LabelsOfRepresentationTasksUseTheTasksPhi)
{
    icl::Inspector insp(representationRun());
    const icl::Prompt p = insp.samplePrompt(4);
    EXPECT_EQ(p.component, 0);
    const icl::LoadedRun run = icl::loadRun(representationRun(), -1);
    const auto& phi = icl::taskRepresentations(run.config.task)[0];
    const torch::Tensor x = torch::tensor(p.x.back(), torch::kFloat64);
    const double expected = torch::dot(phi(x), torch::tensor(p.w, torch::kFloat64)).item<double>();
    EXPECT_NEAR(insp.trueLabel(p, p.x.back()), expected, 1e-12);
    if (run.config.task.noise_std == 0.0)
        EXPECT_NEAR(p.y.back(), expected, 1e-12);
}

TEST(Inspector, CorruptionsChangeWhatTheyName)
{
    icl::Inspector insp(lsaRun());
    const icl::Prompt p = insp.samplePrompt(17);
    icl::PatchingOptions o;
    o.example = 3;
    const icl::Prompt a = insp.corrupt(p, o);
    for (size_t i = 0; i < p.y.size(); ++i)
        if (i == 3)
            EXPECT_NE(a.y[i], p.y[i]);
        else
            EXPECT_EQ(a.y[i], p.y[i]);
    EXPECT_EQ(a.x, p.x);
    o.corruption = icl::Corruption::ShufflePairs;
    const icl::Prompt s = insp.corrupt(p, o);
    std::vector<double> ys(p.y.begin(), p.y.end() - 1), ss(s.y.begin(), s.y.end() - 1);
    EXPECT_NE(ys, ss);
    std::sort(ys.begin(), ys.end());
    std::sort(ss.begin(), ss.end());
    EXPECT_EQ(ys, ss);
    o.corruption = icl::Corruption::DifferentW;
    const icl::Prompt w = insp.corrupt(p, o);
    EXPECT_NE(w.w, p.w);
    for (size_t i = 0; i < p.y.size(); ++i)
        EXPECT_NEAR(w.y[i], insp.trueLabel(w, p.x[i]), 1e-12);
    o.corruption = icl::Corruption::ChangeLabel;
    o.example = 6;
    expectError([&] { insp.corrupt(p, o); }, "out of range");
    EXPECT_EQ(icl::corruptionFromName("shuffle_pairs"), icl::Corruption::ShufflePairs);
    expectError([] { icl::corruptionFromName("swap"); }, "change_label");
}

TEST(Inspector, PromptsOfOtherSizesAndBadPrompts)
{
    icl::Inspector gpt(gptRun());
    icl::Prompt p = gpt.samplePrompt(3);
    p.x.erase(p.x.begin());  // N = 4 < 5
    p.y.erase(p.y.begin());
    const icl::Inspection v = gpt.inspect(p);
    EXPECT_EQ(v.token_labels.size(), 9u);
    EXPECT_EQ(v.predictions.front().prediction, modelPredict(gptRun(), p));
    icl::Prompt longer = gpt.samplePrompt(3);
    longer.x.push_back(longer.x.back());
    longer.y.push_back(longer.y.back());
    expectError([&] { gpt.inspect(longer); }, "at most 5");
    icl::Prompt wrongD = gpt.samplePrompt(3);
    wrongD.x[1].push_back(0.0);
    expectError([&] { gpt.inspect(wrongD); }, "d = 3");
    // LSA takes any N.
    icl::Inspector lsa(lsaRun());
    icl::Prompt q = lsa.samplePrompt(3);
    for (int i = 0; i < 4; ++i)
        lsa.resampleExample(q, q.nContext(), uint64_t(i)), q.x.insert(q.x.begin(), q.x.back()),
            q.y.insert(q.y.begin(), q.y.back());
    EXPECT_EQ(lsa.inspect(q).predictions.front().prediction, modelPredict(lsaRun(), q));
    expectError([&] { lsa.setCheckpoint(5); }, "no checkpoint at step 5");
    expectError([] { icl::Inspector bad("/nonexistent/run.h5"); }, "");
}

TEST(Inspector, SineTaskInstancesAreAmplitudeAndPhase)
{
    // LSA with an MLP representation on sine regression; w = (a, φ) and y = a·sin(x + φ).
    const std::string path = writeRun("inspector_sine.h5", "vonoswald-sine",
                                      {"task.n_context=6", "eval.n_prompts=64", "eval.baselines=[\"zero\",\"least_squares\"]",
                                       "eval.alignment=[]"});
    icl::Inspector insp(path);
    icl::Prompt p = insp.samplePrompt(3);
    ASSERT_EQ(p.w.size(), 2u);
    ASSERT_EQ(p.dim(), 1);
    for (size_t i = 0; i < p.y.size(); ++i)
        EXPECT_NEAR(p.y[i], p.w[0] * std::sin(p.x[i][0] + p.w[1]), 1e-12);
    EXPECT_NEAR(insp.trueLabel(p, {0.3}), p.w[0] * std::sin(0.3 + p.w[1]), 1e-15);
    insp.resampleExample(p, 6, 4);
    EXPECT_NEAR(p.y[6], p.w[0] * std::sin(p.x[6][0] + p.w[1]), 1e-12);
    const icl::Inspection v = insp.inspect(p);
    EXPECT_EQ(v.predictions.front().prediction, modelPredict(path, p));
    EXPECT_EQ(v.predictions.back().name, "oracle");
    EXPECT_NEAR(v.predictions.back().prediction, p.y.back(), 1e-12);
    EXPECT_EQ(insp.lens(p).prediction.back(), v.predictions.front().prediction);
}

TEST(Inspector, PatchingOverPromptsAveragesSinglePromptPatching)
{
    icl::Inspector insp(lsaRun());
    icl::PatchingOptions o;
    o.corruption = icl::Corruption::DifferentW;
    o.seed = 4;
    int64_t last = 0;
    const icl::PatchingResult mean = insp.patchingOverPrompts(10, 3, o, [&](int64_t done, int64_t total) {
        EXPECT_EQ(total, 3 * 2);
        EXPECT_GE(done, last);
        last = done;
        return true;
    });
    EXPECT_EQ(last, 6);
    EXPECT_EQ(mean.n_prompts, 3);
    EXPECT_EQ(mean.n_skipped, 0);
    std::vector<double> sum(mean.effect.data.size(), 0.0);
    double clean = 0.0;
    for (uint64_t i = 0; i < 3; ++i) {
        icl::PatchingOptions oi = o;
        oi.seed = icl::mixSeed(4, i);
        const icl::PatchingResult r = insp.patching(insp.samplePrompt(icl::mixSeed(10, i)), oi);
        clean += r.clean_prediction / 3.0;
        for (size_t k = 0; k < sum.size(); ++k)
            sum[k] += r.effect.data[k] / 3.0;
    }
    EXPECT_NEAR(mean.clean_prediction, clean, 1e-12);
    for (size_t k = 0; k < sum.size(); ++k)
        EXPECT_NEAR(mean.effect.data[k], sum[k], 1e-9);
    expectError([&] { insp.patchingOverPrompts(1, 2, o, [](int64_t, int64_t) { return false; }); }, "cancelled");
}

} // namespace
