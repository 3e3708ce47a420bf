// Pasting experiment (Guo et al. 2023): pasting the whole parent (ℓ = 0) with a copy of its embedding
// reproduces its predictions exactly, the pasted upper blocks stay bitwise frozen while the new embedding
// trains, and bad options fail with clear messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/analysis/pasting.h"
#include "core/analysis/run_loader.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/same_values.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::expectError;

using icl::test::sameValues;

/// A gpt2 parent (3 blocks, 2 heads, width 16) on a representation task with d = 4, N = 6, its
/// parameters randomised well away from the GPT-2 initialisation so that every layer matters.
std::string writeParent(const std::string& name, const std::string& kind = "gpt2")
{
    const std::string path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(path);
    icl::ConfigRequest r;
    if (kind == "gpt2") {
        r.preset = "guo-representation";
        r.sets = {"task.d=4",          "task.rep_dim=4",     "task.n_context=6",
                  "model.n_layers=3",  "model.n_heads=2",    "model.d_model=16",
                  "eval.n_prompts=64", "eval.baselines=[\"zero\",\"ridge\"]"};
    } else {
        r.preset = "vonoswald-lsa-1layer";
        r.sets = {"task.d=4", "task.n_context=6", "eval.n_prompts=64", "eval.baselines=[\"zero\"]", "eval.alignment=[]"};
    }
    icl::test::writeModelRun(path, icl::resolveConfig(r), 7, 100, 0.3);
    return path;
}

std::map<std::string, icl::NamedArray> byName(const std::vector<icl::NamedArray>& arrays)
{
    std::map<std::string, icl::NamedArray> out;
    for (const auto& a : arrays)
        out[a.name] = a;
    return out;
}

/// Options of a short training run on tiny batches (batch 8, 16 evaluation prompts, nothing stored in the parent):
/// transformer1 at cut layer 1, written to `out` ("" = no file).
icl::PastingOptions shortRun(int64_t steps, const std::string& out)
{
    icl::PastingOptions o;
    o.cut_layer = 1;
    o.embedding = "transformer1";
    o.steps = steps;
    o.batch_size = 8;
    o.n_eval = 16;
    o.store = false;
    o.out_path = out;
    o.overwrite = true;
    return o;
}

/// Options of an untrained copy (steps 0, no scratch model, nothing stored) written to `out`.
icl::PastingOptions untrainedCopy(int64_t cut, const std::string& embedding, const std::string& out)
{
    icl::PastingOptions o = shortRun(0, out);
    o.cut_layer = cut;
    o.embedding = embedding;
    o.copy_parent_embedding = true;
    o.n_eval = 32;
    o.train_scratch = false;
    return o;
}

TEST(Pasting, FrozenCopyAtCutZeroReproducesTheParentExactly)
{
    const std::string parent = writeParent("paste_parent_copy.h5");
    const std::string out = icl::test::scratchPrefix() + "paste_copy.h5";
    icl::PastingOptions o = untrainedCopy(0, "linear", out);
    const icl::PastingResult r = icl::computePasting(parent, o);
    EXPECT_EQ(r.pasted_layers, 3);
    EXPECT_TRUE(r.frozen_unchanged);

    // The pasted file is an ordinary experiment: reopen it and compare with the parent on the parent's prompts.
    const icl::LoadedRun p = icl::loadRun(parent, -1);
    const icl::LoadedRun q = icl::loadRun(out, -1);
    EXPECT_EQ(q.config.model.n_layers, 3);
    EXPECT_EQ(q.config.task.kind, "linear_regression");
    const icl::PromptBatch prompts = icl::samplePrompts(p.config.task, 50, 11);
    torch::NoGradGuard guard;
    const torch::Tensor a = p.model.predict_all(prompts), b = q.model.predict_all(prompts);
    EXPECT_GT(a.abs().max().item<double>(), 1e-2);  // the parent predicts something non-trivial
    EXPECT_TRUE(torch::equal(a, b)) << "max |Δ| " << (a - b).abs().max().item<double>();

    // The link to the parent is stored in the pasted file.
    const std::string summary = icl::readRunSummary(out).config_json;
    EXPECT_NE(summary.find("pasted: linear embedding + blocks 0..2"), std::string::npos);
}

TEST(Pasting, Transformer1WarmStartAtCutOneReproducesTheParentExactly)
{
    // transformer1 at ℓ = 1 initialised from the parent: the new block is the parent's block 0, so
    // before training the pasted model is the parent (3 blocks: new 0 + frozen 1, 2).
    const std::string parent = writeParent("paste_parent_warm.h5");
    const std::string out = icl::test::scratchPrefix() + "paste_warm.h5";
    icl::PastingOptions o = untrainedCopy(1, "transformer1", out);
    const icl::PastingResult r = icl::computePasting(parent, o);
    EXPECT_EQ(r.pasted_layers, 3);
    const icl::LoadedRun p = icl::loadRun(parent, -1);
    const icl::LoadedRun q = icl::loadRun(out, -1);
    const icl::PromptBatch prompts = icl::samplePrompts(p.config.task, 50, 12);
    torch::NoGradGuard guard;
    const torch::Tensor a = p.model.predict_all(prompts), b = q.model.predict_all(prompts);
    EXPECT_GT(a.abs().max().item<double>(), 1e-2);
    EXPECT_TRUE(torch::equal(a, b)) << "max |Δ| " << (a - b).abs().max().item<double>();
    // ... and the new block is trainable: the trainable count is read-in + positions + one block.
    icl::PastingOptions fresh = o;
    fresh.copy_parent_embedding = false;
    EXPECT_EQ(icl::computePasting(parent, fresh).trainable_pasted, r.trainable_pasted);
    o.cut_layer = 0;
    expectError([&] { icl::computePasting(parent, o); }, "transformer1 needs cut layer ≥ 1");
}

TEST(Pasting, ZeroNewMlpStartsAsTheParentWithoutBlockZerosMlp)
{
    // transformer1 at ℓ = 1 from the parent with zero_new_mlp: before training the pasted model is the
    // parent whose block 0 MLP output (W_out, b_out) is zero — computed here by editing the parent's own
    // parameters, not through the pasting code.
    const std::string parent = writeParent("paste_parent_zero_mlp.h5");
    const std::string out = icl::test::scratchPrefix() + "paste_zero_mlp.h5";
    icl::PastingOptions o = untrainedCopy(1, "transformer1", out);
    o.zero_new_mlp = true;
    icl::computePasting(parent, o);
    icl::LoadedRun p = icl::loadRun(parent, -1);
    const icl::LoadedRun q = icl::loadRun(out, -1);
    const icl::PromptBatch prompts = icl::samplePrompts(p.config.task, 50, 13);
    torch::NoGradGuard guard;
    const torch::Tensor before = p.model.predict_all(prompts);
    int zeroed = 0;
    for (auto& kv : p.model.module->named_parameters())
        if (kv.key() == "blocks.0.mlp.W_out" || kv.key() == "blocks.0.mlp.b_out") {
            kv.value().zero_();
            ++zeroed;
        }
    ASSERT_EQ(zeroed, 2);
    const torch::Tensor a = p.model.predict_all(prompts), b = q.model.predict_all(prompts);
    EXPECT_GT((a - before).abs().max().item<double>(), 1e-3);  // block 0's MLP mattered
    EXPECT_TRUE(torch::equal(a, b)) << "max |Δ| " << (a - b).abs().max().item<double>();
    o.copy_parent_embedding = false;
    expectError([&] { icl::computePasting(parent, o); }, "needs the transformer1 embedding started from the parent");
}

TEST(Pasting, UpperBlocksStayBitwiseFrozenWhileTheEmbeddingTrains)
{
    const std::string parent = writeParent("paste_parent_frozen.h5");
    const std::string out = icl::test::scratchPrefix() + "paste_frozen.h5";
    for (const std::string emb : {"linear", "transformer1"}) {
        icl::PastingOptions o;
        o.cut_layer = 1;
        o.embedding = emb;
        o.steps = 6;
        o.eval_every = 3;
        o.batch_size = 16;
        o.n_eval = 32;
        o.out_path = out;
        o.overwrite = true;
        int64_t last = 0;
        const icl::PastingResult r = icl::computePasting(parent, o, [&](int64_t done, int64_t total) {
            EXPECT_EQ(total, 12);
            EXPECT_LE(done, total);
            EXPECT_GE(done, last) << "progress never goes back";
            last = done;
            return true;
        });
        EXPECT_EQ(last, 12) << "6 steps of the pasted and 6 of the scratch model, reported as done";
        const int64_t offset = emb == "transformer1" ? 1 : 0;
        EXPECT_EQ(r.pasted_layers, 2 + offset);
        EXPECT_TRUE(r.frozen_unchanged);
        EXPECT_EQ(r.curve_steps, (std::vector<int64_t>{0, 3, 6}));
        EXPECT_EQ(r.n_examples.size(), 7u);
        EXPECT_EQ(r.pasted_curve.size(), 7u);
        EXPECT_EQ(r.scratch_curve.size(), 7u);
        EXPECT_EQ(r.ridge_curve.size(), 7u);
        EXPECT_TRUE(std::isfinite(r.pasted_loss) && std::isfinite(r.scratch_loss));
        EXPECT_GT(r.zero_loss, r.ridge_loss);
        EXPECT_LT(r.trainable_pasted, r.trainable_scratch);
        EXPECT_FALSE(r.analysis_id.empty());

        const auto par = byName(icl::readCheckpoint(parent, 100).params);
        const auto start = byName(icl::readCheckpoint(out, 0).params);
        const auto end = byName(icl::readCheckpoint(out, 6).params);
        int frozen = 0;
        for (const auto& [name, a] : end) {
            std::string source;
            if (name.rfind("blocks.", 0) == 0) {
                const size_t dot = name.find('.', 7);
                const int64_t l = std::stoll(name.substr(7, dot - 7));
                if (l >= offset)
                    source = "blocks." + std::to_string(l - offset + 1) + name.substr(dot);
            } else if (name.rfind("ln_final.", 0) == 0 || name.rfind("read_out.", 0) == 0) {
                source = name;
            }
            if (!source.empty()) {
                EXPECT_EQ(a.data, par.at(source).data) << name << " differs from the parent's " << source;
                ++frozen;
            } else {
                EXPECT_NE(a.data, start.at(name).data) << name << " did not train";
            }
        }
        EXPECT_EQ(frozen, 2 * 16 + 4);  // 16 tensors per block, ln_final and read_out weight and bias
    }
}

TEST(Pasting, BadOptionsThrowClearErrors)
{
    const std::string parent = writeParent("paste_parent_bad.h5");
    icl::PastingOptions o;
    o.steps = 1;
    o.store = false;
    o.cut_layer = 3;
    expectError([&] { icl::computePasting(parent, o); }, "cut layer 3: expected 0 ≤ ℓ ≤ 2");
    o.cut_layer = -1;
    expectError([&] { icl::computePasting(parent, o); }, "cut layer -1");
    o.cut_layer = 1;
    o.embedding = "mlp";
    expectError([&] { icl::computePasting(parent, o); }, "expected linear or transformer1");
    o.embedding = "linear";
    o.copy_parent_embedding = true;
    expectError([&] { icl::computePasting(parent, o); }, "needs cut layer 0");
    o.copy_parent_embedding = false;
    const std::string lsa = writeParent("paste_parent_lsa.h5", "lsa");
    expectError([&] { icl::computePasting(lsa, o); }, "this run has model.kind lsa");
    o.w_scale = 0.5;
    o.match_label_variance = true;
    expectError([&] { icl::computePasting(parent, o); }, "either w_scale or match_label_variance");
    o.w_scale = 0.0;
    o.match_label_variance = false;
    o.schedule = "linear";
    expectError([&] { icl::computePasting(parent, o); }, "schedule \"linear\": expected constant or cosine");
    o.schedule = "constant";
    bool cancelled = false;
    try {
        o.steps = 5;
        icl::computePasting(parent, o, [](int64_t, int64_t) { return false; });
    } catch (const icl::Error& e) {
        cancelled = std::string(e.what()) == "cancelled";
    }
    EXPECT_TRUE(cancelled);
}

/// d = D = 4, one leaky-ReLU layer, N = 10, x ~ N(0, I), τ = 0.5 and the given σ.
icl::TaskConfig oneLayerRepresentationTask(double noise_std)
{
    icl::TaskConfig t = icl::test::representationTask(4, 4, 1, 10);
    t.w_scale = 0.5;
    t.noise_std = noise_std;
    t.x_distribution = "normal";
    t.experiment_seed = 3;
    return t;
}

// The matched τ against the closed form of a one-layer representation: with B_1 orthogonal (D = d) and
// x ~ N(0, I), B_1 x ~ N(0, I), so E‖Φ*(x)‖² = D·E[σ*(t)²] = D·(1 + 0.01²)/2 for the leaky ReLU σ*, and
// τ = τ_p·((1 + 10⁻⁴)/2)^{1/2}. 2,000 prompts × 11 positions: the sample means are within ~1 % (3 σ).
TEST(Pasting, MatchedWScaleGivesTheParentsSignalVariance)
{
    icl::TaskConfig t = oneLayerRepresentationTask(0.1);
    const double expected = 0.5 * std::sqrt((1.0 + 1e-4) / 2.0);
    EXPECT_NEAR(icl::matchedWScale(t, 2000, 11), expected, 0.015 * expected);
    // Two layers (no closed form: B_2 mixes a non-centred input): the task's Φ* applied to 200,000 fresh
    // Gaussian x of this test's own.
    t.rep_layers = 2;
    const icl::Representation& phi = icl::taskRepresentations(t).at(0);
    torch::manual_seed(5);
    const torch::Tensor x = torch::randn({200000, 4}, torch::kFloat64);
    const double ratio = phi(x).pow(2).sum(-1).mean().item<double>() / x.pow(2).sum(-1).mean().item<double>();
    const double expected2 = 0.5 * std::sqrt(ratio);
    EXPECT_NEAR(icl::matchedWScale(t, 2000, 11), expected2, 0.03 * expected2);
    // Without a representation the labels already have the parent's scale.
    t.kind = "linear_regression";
    t.rep_dim = 0;
    EXPECT_EQ(icl::matchedWScale(t, 2000, 11), 0.5);
}

TEST(Pasting, MatchedLabelScaleGivesTheParentsLabelVarianceAtTheSameSignalToNoise)
{
    icl::TaskConfig t = oneLayerRepresentationTask(0.5);
    // One leaky-ReLU layer with B_1 orthogonal: E‖Φ*(x)‖² = D·(1 + 0.01²)/2 and E‖x‖² = d for x ~ N(0, I), so
    // c² = (τ²·2·(1 + 10⁻⁴) + σ²) / (τ²·4 + σ²) = (0.50005 + 0.25) / (1 + 0.25).
    const double expected = std::sqrt((0.25 * 2.0 * (1.0 + 1e-4) + 0.25) / (0.25 * 4.0 + 0.25));
    EXPECT_NEAR(icl::matchedLabelScale(t, 2000, 11), expected, 0.01 * expected);
    // Without noise it is matchedWScale's factor; without a representation 1.
    t.noise_std = 0.0;
    EXPECT_NEAR(icl::matchedLabelScale(t, 2000, 11), icl::matchedWScale(t, 2000, 11) / 0.5, 1e-12);
    t.kind = "linear_regression";
    t.rep_dim = 0;
    EXPECT_EQ(icl::matchedLabelScale(t, 2000, 11), 1.0);
}

TEST(Pasting, MatchLabelScaleScalesTauAndSigmaTogether)
{
    const std::string parent = writeParent("paste_parent_label_scale.h5");
    const icl::ExperimentConfig pc = icl::loadRun(parent, -1).config;
    icl::PastingOptions o;
    o.steps = 2;
    o.eval_every = 1;
    o.store = false;
    o.train_scratch = false;
    o.cut_layer = 1;
    o.match_label_scale = true;
    const icl::PastingResult r = icl::computePasting(parent, o);
    // The same factor on τ and σ, so ridge's Bayes λ = σ²/τ² is the parent task's.
    EXPECT_NEAR(r.w_scale / pc.task.w_scale, r.noise_std / pc.task.noise_std, 1e-12);
    EXPECT_NEAR(r.ridge_lambda, pc.task.noise_std * pc.task.noise_std / (pc.task.w_scale * pc.task.w_scale), 1e-9);
    o.match_label_variance = true;
    expectError([&] { icl::computePasting(parent, o); }, "match_label_scale sets τ and σ itself");
}

/// Adam's update is linear in η, and two runs on the same batches take the same first step (the cosine rate at
/// step 0 is η). So with cosine over 2 steps (η, then η·½(1 + cos(π/2)) = η/2) the second step is half the
/// constant schedule's: θ_cos(2) − θ(1) = ½ (θ_const(2) − θ(1)), θ(1) from a 1-step run.
TEST(Pasting, CosineScheduleHalvesTheSecondOfTwoAdamSteps)
{
    const std::string parent = writeParent("paste_parent_schedule.h5");
    auto trained = [&](int64_t steps, const std::string& schedule) {
        const std::string out = icl::test::scratchPrefix() + "paste_schedule_" + schedule + ".h5";
        icl::PastingOptions o = shortRun(steps, out);
        o.schedule = schedule;
        o.train_scratch = false;
        icl::computePasting(parent, o);
        return byName(icl::readCheckpoint(out, steps).params);
    };
    const auto one = trained(1, "constant");
    const auto constant = trained(2, "constant");
    const auto cosine = trained(2, "cosine");
    double largestStep = 0.0;
    for (const auto& [name, a] : one) {
        const auto& c = constant.at(name).data;
        const auto& k = cosine.at(name).data;
        ASSERT_EQ(c.size(), a.data.size());
        for (size_t i = 0; i < a.data.size(); ++i) {
            const double full = double(c[i]) - double(a.data[i]);
            largestStep = std::max(largestStep, std::abs(full));
            EXPECT_NEAR(double(k[i]) - double(a.data[i]), 0.5 * full, 1e-6) << name << "[" << i << "]";
        }
    }
    EXPECT_GT(largestStep, 1e-4) << "the second Adam step moved the new block (else the check above is empty)";
}

/// The pasted and the scratch model are independent: trained side by side (one intra-op thread each) they give
/// bitwise the numbers of training them one after the other on one intra-op thread — losses, curves and the
/// pasted model's weights.
TEST(Pasting, SideBySideTrainingEqualsOneAfterTheOtherOnOneThread)
{
    const std::string parent = writeParent("paste_parent_concurrent.h5");
    auto run = [&](bool concurrent, const std::string& out) {
        icl::PastingOptions o = shortRun(5, out);
        o.eval_every = 2;
        o.concurrent = concurrent;
        o.threads = 1;
        int64_t last = 0;
        const icl::PastingResult r = icl::computePasting(parent, o, [&](int64_t done, int64_t total) {
            EXPECT_EQ(total, 10);
            EXPECT_GE(done, last) << "progress never goes back";
            last = done;
            return true;
        });
        EXPECT_EQ(last, 10) << "the last report says every step of both models is done";
        return r;
    };
    const std::string outA = icl::test::scratchPrefix() + "paste_side_by_side.h5";
    const std::string outB = icl::test::scratchPrefix() + "paste_one_after_other.h5";
    const icl::PastingResult a = run(true, outA);
    const icl::PastingResult b = run(false, outB);
    EXPECT_EQ(a.curve_steps, (std::vector<int64_t>{0, 2, 4, 5}));
    EXPECT_EQ(a.curve_steps, b.curve_steps);
    EXPECT_EQ(a.pasted_train.size(), 4u);
    EXPECT_TRUE(std::isfinite(a.scratch_eval.back()));
    // Bitwise: the same operations in the same order on one thread each. The training losses start at step 1
    // (step 0's is NaN: nothing trained yet).
    auto trained = [](const std::vector<double>& v) { return std::vector<double>(v.begin() + 1, v.end()); };
    EXPECT_TRUE(std::isnan(a.pasted_train[0]) && std::isnan(b.pasted_train[0]));
    EXPECT_EQ(trained(a.pasted_train), trained(b.pasted_train));
    EXPECT_EQ(a.pasted_eval, b.pasted_eval);
    EXPECT_EQ(trained(a.scratch_train), trained(b.scratch_train));
    EXPECT_EQ(a.scratch_eval, b.scratch_eval);
    EXPECT_EQ(a.pasted_curve, b.pasted_curve);
    EXPECT_EQ(a.scratch_curve, b.scratch_curve);
    const auto pa = byName(icl::readCheckpoint(outA, 5).params);
    const auto pb = byName(icl::readCheckpoint(outB, 5).params);
    ASSERT_EQ(pa.size(), pb.size());
    for (const auto& [name, t] : pa)
        EXPECT_EQ(t.data, pb.at(name).data) << name;
}

/// Divergence (η = 10³⁰: the second forward overflows) stops the pasting with the same icl::Error whether the
/// models train side by side (whichever thread fails first; the other is stopped and joined) or one after the
/// other, and nothing hangs.
TEST(Pasting, DivergenceOnEitherThreadIsReported)
{
    const std::string parent = writeParent("paste_parent_diverge.h5");
    for (const bool concurrent : {true, false}) {
        icl::PastingOptions o = shortRun(200, "");
        o.lr = 1e30;
        o.concurrent = concurrent;
        expectError([&] { icl::computePasting(parent, o); }, "training diverged");
    }
}

} // namespace

TEST(Pasting, StoredResultsReadBackAsComputed)
{
    const std::string parent = writeParent("paste_parent_stored.h5");
    EXPECT_TRUE(icl::readStoredPastings(parent).empty()) << "nothing stored yet";
    const std::string out = icl::test::scratchPrefix() + "paste_stored.h5";
    // Two pastings stored in the parent: one with a scratch model and a cosine schedule, one without either.
    icl::PastingOptions a = shortRun(4, out);
    a.store = true;
    a.eval_every = 2;
    a.schedule = "cosine";
    a.lr = 2e-3;
    a.match_label_scale = true;
    a.copy_parent_embedding = true;
    icl::PastingOptions b = shortRun(3, out);
    b.store = true;
    b.embedding = "linear";
    b.cut_layer = 2;
    b.train_scratch = false;
    b.w_scale = 0.7;
    b.seed = 11;
    const icl::PastingResult ra = icl::computePasting(parent, a);
    const icl::PastingResult rb = icl::computePasting(parent, b);

    const std::vector<icl::StoredPasting> stored = icl::readStoredPastings(parent);
    ASSERT_EQ(stored.size(), 2u);
    const std::pair<const icl::PastingResult*, const icl::PastingOptions*> computed[] = {{&ra, &a}, {&rb, &b}};
    for (size_t i = 0; i < 2; ++i) {
        const icl::PastingResult& want = *computed[i].first;
        const icl::PastingOptions& opt = *computed[i].second;
        const icl::StoredPasting& s = stored[i];
        SCOPED_TRACE("stored pasting " + s.id);
        EXPECT_EQ(s.id, want.analysis_id);
        EXPECT_FALSE(s.created.empty());
        const icl::PastingResult& got = s.result;
        EXPECT_EQ(got.parent_step, want.parent_step);
        EXPECT_EQ(got.parent_layers, want.parent_layers);
        EXPECT_EQ(got.cut_layer, want.cut_layer);
        EXPECT_EQ(got.embedding, want.embedding);
        EXPECT_EQ(got.pasted_layers, want.pasted_layers);
        EXPECT_EQ(got.trainable_pasted, want.trainable_pasted);
        EXPECT_EQ(got.trainable_scratch, want.trainable_scratch);
        EXPECT_EQ(got.steps, want.steps);
        EXPECT_EQ(got.w_scale, want.w_scale);
        EXPECT_EQ(got.noise_std, want.noise_std);
        EXPECT_EQ(got.ridge_lambda, want.ridge_lambda);
        EXPECT_TRUE(sameValues({got.pasted_loss, got.scratch_loss, got.ridge_loss, got.zero_loss},
                               {want.pasted_loss, want.scratch_loss, want.ridge_loss, want.zero_loss}));
        EXPECT_EQ(got.n_examples, want.n_examples);
        EXPECT_TRUE(sameValues(got.pasted_curve, want.pasted_curve));
        EXPECT_TRUE(sameValues(got.scratch_curve, want.scratch_curve));
        EXPECT_TRUE(sameValues(got.ridge_curve, want.ridge_curve));
        EXPECT_EQ(got.curve_steps, want.curve_steps);
        EXPECT_TRUE(sameValues(got.pasted_train, want.pasted_train));
        EXPECT_TRUE(sameValues(got.pasted_eval, want.pasted_eval));
        EXPECT_TRUE(sameValues(got.scratch_train, want.scratch_train));
        EXPECT_TRUE(sameValues(got.scratch_eval, want.scratch_eval));
        EXPECT_EQ(got.out_path, std::filesystem::absolute(out).string());
        EXPECT_EQ(got.wall_time_s, want.wall_time_s);

        const icl::PastingOptions& o = s.options;
        EXPECT_EQ(o.checkpoint_step, 100) << "the checkpoint used, not -1";
        EXPECT_EQ(o.cut_layer, opt.cut_layer);
        EXPECT_EQ(o.embedding, opt.embedding);
        EXPECT_EQ(o.steps, opt.steps);
        EXPECT_EQ(o.lr, opt.lr);
        EXPECT_EQ(o.schedule, opt.schedule);
        EXPECT_EQ(o.batch_size, opt.batch_size);
        EXPECT_EQ(o.n_eval, opt.n_eval);
        EXPECT_EQ(o.match_label_scale, opt.match_label_scale);
        EXPECT_EQ(o.copy_parent_embedding, opt.copy_parent_embedding);
        EXPECT_EQ(o.train_scratch, opt.train_scratch);
        EXPECT_EQ(o.w_scale, opt.w_scale) << "given, or 0 where match_label_scale sets it";
    }
    EXPECT_TRUE(std::isnan(stored[1].result.scratch_loss)) << "no scratch model";
    EXPECT_EQ(stored[1].options.seed, 11u);
}

TEST(Pasting, AStoredResultThatIsNotAPastingIsRefusedAndOtherKindsAreNotRead)
{
    const std::string parent = writeParent("paste_parent_foreign.h5");
    // A result under /analysis/pasting that is not a pasting result: refused with its id.
    icl::storeAnalysis(parent, "pasting", 100, 0, "{}", "{\"pasted_loss\": 1.0}");
    expectError([&] { (void)icl::readStoredPastings(parent); }, "/analysis/pasting/0001 is not a pasting result");
    // Other kinds are not read as pastings.
    const std::string other = writeParent("paste_parent_other.h5");
    icl::storeAnalysis(other, "probe", 100, 0, "{}", "{}");
    EXPECT_TRUE(icl::readStoredPastings(other).empty());
    expectError([&] { (void)icl::readStoredPastings(icl::test::scratchPrefix() + "no_such_parent.h5"); },
                "no_such_parent.h5");
}
