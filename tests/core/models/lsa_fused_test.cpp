// The fused closed-form LSA step (core/models/lsa_fused.h, docs/fused-lsa.md) against the independent
// computation: LibTorch autograd through LsaImpl::forward (einsum attention) on the same model and prompts.
// Every option combination the fused path covers is checked; the others must be refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>

#include "core/models/lsa_construction.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/lsa.h"
#include "core/models/lsa_fused.h"
#include "core/tasks/linear_regression.h"
#include "core/runtime/blas.h"
#include "core/training/trainer.h"
#include "tests/support/scratch.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::linearPrompts;

/// max |a − b| / max |b|: relative error of a against the reference b.
double relErr(const torch::Tensor& a, const torch::Tensor& b)
{
    const double scale = b.abs().max().item<double>();
    const double diff = (a - b).abs().max().item<double>();
    return scale > 0 ? diff / scale : diff;
}

struct Reference {
    double loss;
    std::vector<torch::Tensor> grads;
};

/// Loss and gradients by autograd through the model's own forward.
Reference autogradReference(icl::LsaImpl& model, const icl::PromptBatch& batch)
{
    model.zero_grad();
    torch::Tensor loss = icl::halfMse(model.predict(batch), batch.queryY());
    loss.backward();
    Reference r{loss.item<double>(), {}};
    for (const auto& p : model.parameters())
        r.grads.push_back(p.grad().clone());
    model.zero_grad();
    return r;
}

/// Compares the fused step with autograd on `model` for `batch`; `tol` relative.
void expectSameLossAndGradients(icl::LsaImpl& model, const icl::PromptBatch& batch, double tol,
                                const std::string& label)
{
    const Reference ref = autogradReference(model, batch);
    icl::FusedLsa fused(model);
    // Twice: the second call reuses the buffers (and must overwrite, not accumulate, the gradients).
    for (int round = 0; round < 2; ++round) {
        const double loss = fused.lossAndGrad(batch).item<double>();
        EXPECT_NEAR(loss, ref.loss, tol * std::abs(ref.loss)) << label;
        const auto params = model.parameters();
        ASSERT_EQ(params.size(), ref.grads.size());
        for (size_t i = 0; i < params.size(); ++i) {
            ASSERT_TRUE(params[i].grad().defined()) << label;
            EXPECT_GT(ref.grads[i].abs().max().item<double>(), 0.0) << label << " parameter " << i;
            EXPECT_LT(relErr(params[i].grad(), ref.grads[i]), tol) << label << " parameter " << i << " round " << round;
        }
    }
    EXPECT_LT(relErr(fused.predict(batch), model.predict(batch).detach()), tol) << label;
}

// Every covered combination: layers 1–3, tied or not, 1 or 2 heads, pair or interleaved layout, with or
// without sinusoidal positions; float64, 1e-6 relative.
TEST(LsaFused, SameLossAndGradientsAsAutogradForEveryCoveredOption)
{
    int checked = 0;
    for (int64_t K : {1, 2, 3})
        for (bool tied : {false, true})
            for (int64_t H : {1, 2})
                for (bool interleaved : {false, true})
                    for (int64_t pos : {0, 4}) {
                        icl::LsaOptions o;
                        o.input_dim = 3;
                        o.n_layers = K;
                        o.n_heads = H;
                        o.tied = tied;
                        o.interleaved = interleaved;
                        o.pos_dim = pos;
                        ASSERT_TRUE(icl::FusedLsa::supports(o));
                        icl::Lsa model(o);
                        model->initVarianceScaling(1.0, uint64_t(11 + checked));
                        model->to(torch::kFloat64);
                        const auto batch = linearPrompts(16, 3, 5, uint64_t(100 + checked));
                        const std::string label = "K=" + std::to_string(K) + " tied=" + std::to_string(tied)
                                                  + " H=" + std::to_string(H) + " interleaved="
                                                  + std::to_string(interleaved) + " pos=" + std::to_string(pos);
                        expectSameLossAndGradients(*model, batch, 1e-6, label);
                        ++checked;
                    }
    EXPECT_EQ(checked, 48);
}

// The GD and GD++ constructions (Proposition 1 and the GD++ weights): the same LSA, with many exact zeros.
TEST(LsaFused, SameGradientsAtTheGdAndGdPlusPlusConstructions)
{
    const int64_t d = 4, N = 6, K = 2;
    const auto batch = linearPrompts(32, d, N, 5);
    icl::Lsa gd(d + 1, 1, 1, false);
    gd->to(torch::kFloat64);
    icl::applyGdConstruction(*gd, 0.7, N);
    expectSameLossAndGradients(*gd, batch, 1e-6, "gd");
    icl::Lsa gdpp(d + 1, K, 1, false);
    gdpp->to(torch::kFloat64);
    icl::applyGdPlusPlusConstruction(*gdpp, {0.5, 0.6}, {0.1, -0.2}, N);
    expectSameLossAndGradients(*gdpp, batch, 1e-6, "gd++");
}

// Float32 (what training uses): the same up to float rounding; also the shape change between calls.
TEST(LsaFused, Float32MatchesAutogradAndFollowsShapeChanges)
{
    icl::Lsa model(11, 2, 1, false);
    model->initVarianceScaling(0.5, 3);
    expectSameLossAndGradients(*model, linearPrompts(256, 10, 10, 1, 0.0, torch::kFloat32), 1e-4, "float32 N=10");
    expectSameLossAndGradients(*model, linearPrompts(64, 10, 4, 2, 0.0, torch::kFloat32), 1e-4, "float32 N=4");
}

// The fused step runs on the calling thread whatever the intra-op thread count (core/models/lsa_fused.h), so a
// multi-layer model's loss and gradients have the same bits on 1 and 2 threads (with its GEMMs split over two
// threads, OpenBLAS summed some of them in another order). 1,024 prompts: four chunks of the per-prompt kernels.
TEST(LsaFused, SameBitsOnOneAndTwoIntraOpThreads)
{
    icl::Lsa model(11, 3, 2, false);
    model->initVarianceScaling(0.5, 5);
    const icl::PromptBatch batch = linearPrompts(1024, 10, 10, 4, 0.0, torch::kFloat32);
    icl::FusedLsa fused(*model);
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 1}) {
        const icl::ScopedThreads scoped(threads);
        std::vector<float> all{fused.lossAndGrad(batch).item<float>()};
        for (const auto& p : model->parameters()) {
            const torch::Tensor g = p.grad().contiguous();
            all.insert(all.end(), g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
        }
        results.push_back(all);
    }
    EXPECT_TRUE(icl::test::sameBits(results[0], results[1]));
    EXPECT_TRUE(icl::test::sameBits(results[0], results[2]));
}

TEST(LsaFused, RefusesWhatItDoesNotCover)
{
    auto refused = [](icl::LsaOptions o, const std::string& why) {
        std::string reason;
        EXPECT_FALSE(icl::FusedLsa::supports(o, &reason)) << why;
        EXPECT_EQ(reason, why);
        icl::Lsa model(o);
        try {
            icl::FusedLsa f(*model);
            ADD_FAILURE() << "no error for " << why;
        } catch (const icl::Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    icl::LsaOptions base;
    base.input_dim = 3;
    base.n_layers = 2;
    icl::LsaOptions o = base;
    o.softmax_layers = 1;
    refused(o, "softmax layers");
    o = base;
    o.layer_norm = true;
    refused(o, "LayerNorm");
    o = base;
    o.mlp = true;
    refused(o, "MLP");
    o = base;
    o.feature_dim = 4;
    refused(o, "representation φ");
}

// The per-prompt kernels against torch::bmm on the prompt-major transposes, with several heads, a row
// limit, strided (narrowed) operands, accumulation, and a batch that is not a multiple of the chunk size.
TEST(LsaFused, BatchedKernelsMatchBmm)
{
    for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
        const auto opts = torch::TensorOptions().dtype(dtype);
        torch::manual_seed(0);
        const int64_t H = 2, D = 5, D2 = 3, T = 7, rows = 4, B = 300;
        const torch::Tensor big = torch::randn({H * D, T + 2, B}, opts);
        const torch::Tensor X = big.narrow(1, 1, T);  // tokens B apart, channels (T + 2)·B apart
        const torch::Tensor Y = torch::randn({H * D2, T, B}, opts);
        // Prompt-major per head: Xp[b, h, t, k] = X[h·D+k][t][b].
        auto promptMajor = [&](const torch::Tensor& t, int64_t width) {
            return t.narrow(1, 0, rows).reshape({H, width, rows, B}).permute({3, 0, 2, 1});  // [B, H, rows, width]
        };
        const torch::Tensor Xp = promptMajor(X, D), Yp = promptMajor(Y, D2);
        torch::Tensor out;
        icl::batchedAtB(X, Y, H, rows, out);
        // Σ_h Σ_t X_hᵀ Y_h per prompt: [B, D, D2] → [D, D2, B]
        const torch::Tensor expectAtB = torch::matmul(Xp.transpose(-1, -2), Yp).sum(1).permute({1, 2, 0});
        const double tol = dtype == torch::kFloat32 ? 1e-5 : 1e-12;
        EXPECT_LT(relErr(out, expectAtB), tol);
        // The Gram matrix (X with itself: computed on one triangle and mirrored).
        torch::Tensor gram;
        icl::batchedAtB(X, X, H, rows, gram);
        EXPECT_LT(relErr(gram, torch::matmul(Xp.transpose(-1, -2), Xp).sum(1).permute({1, 2, 0})), tol);

        const torch::Tensor M = torch::randn({D, D2, B}, opts);
        const torch::Tensor Mp = M.permute({2, 0, 1}).unsqueeze(1);  // [B, 1, D, D2]
        const torch::Tensor expectAB = torch::matmul(Xp, Mp);         // [B, H, rows, D2]
        const torch::Tensor expectFm = expectAB.permute({1, 3, 2, 0}).reshape({H * D2, rows, B});
        torch::Tensor target = torch::randn({H * D2, T, B}, opts);
        const torch::Tensor before = target.clone();
        icl::batchedAB(X, M, H, rows, target, true);
        EXPECT_LT(relErr(target.narrow(1, 0, rows), before.narrow(1, 0, rows) + expectFm), tol);
        EXPECT_TRUE(torch::equal(target.narrow(1, rows, T - rows), before.narrow(1, rows, T - rows)));
        icl::batchedAB(X, M, H, rows, target, false);
        EXPECT_LT(relErr(target.narrow(1, 0, rows), expectFm), tol);
    }
}

// A whole training run: fused (the default) and autograd give the same curve up to float rounding.
TEST(LsaFused, TrainingRunMatchesTheAutogradRun)
{
    icl::ConfigRequest r;
    r.preset = icl::kDefaultPreset;
    r.sets = {"task.d=5", "task.n_context=5", "training.batch_size=128", "training.steps=100",
              "training.lr=0.01", "training.eval_every=25", "training.checkpoint_every=100",
              "eval.n_prompts=500", "device=cpu", "model.n_layers=2"};
    const auto config = icl::resolveConfig(r);
    auto run = [&](bool fused) {
        const std::string path = icl::test::scratchPrefix() + (fused ? "lsa_fused_run.h5" : "lsa_autograd_run.h5");
        std::filesystem::remove(path);
        icl::TrainOptions o;
        o.out_path = path;
        o.threads = 1;
        o.fused = fused;
        icl::train(config, o, {});
        return icl::readRunSummary(path).metrics.at("eval_loss");
    };
    const auto fused = run(true), autograd = run(false);
    ASSERT_EQ(fused.size(), autograd.size());
    ASSERT_GE(fused.size(), 4u);
    EXPECT_LT(fused.back(), 0.9 * fused.front());  // it trains
    for (size_t i = 0; i < fused.size(); ++i)
        EXPECT_NEAR(fused[i], autograd[i], 1e-4 * std::abs(autograd[i])) << "row " << i;
}

} // namespace
