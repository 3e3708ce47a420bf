// Representation tasks and their baselines (Guo et al. 2023, docs/science.md §2). Right values come from
// closed forms computed here (orthogonality, the Bayes posterior mean in its dual form, brute force).
#include <gtest/gtest.h>

#include <cmath>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/tasks/representation.h"
#include "core/training/trainer.h"
#include "tests/support/scratch.h"

namespace {

icl::TaskConfig repTask(int64_t K = 1, double sigma = 0.1)
{
    icl::TaskConfig t;
    t.kind = K > 1 ? "representation_mixture" : "representation";
    t.layout = "interleaved";
    t.d = 5;
    t.rep_dim = 6;
    t.rep_layers = 3;
    t.n_representations = K;
    t.n_context = 12;
    t.x_distribution = "normal";
    t.w_scale = 1.0 / std::sqrt(6.0);
    t.noise_std = sigma;
    t.experiment_seed = 42;
    return t;
}

TEST(Representation, MatricesAreOrthogonalAndLabelsFollowTheDefinition)
{
    const icl::TaskConfig t = repTask();
    const auto& reps = icl::taskRepresentations(t);
    ASSERT_EQ(reps.size(), 1u);
    ASSERT_EQ(reps[0].layers.size(), 3u);
    const torch::Tensor B1 = reps[0].layers[0];  // [6, 5], orthonormal columns
    EXPECT_LT((torch::matmul(B1.t(), B1) - torch::eye(5, torch::kFloat64)).abs().max().item<double>(), 1e-6);
    const torch::Tensor B2 = reps[0].layers[1];
    EXPECT_LT((torch::matmul(B2, B2.t()) - torch::eye(6, torch::kFloat64)).abs().max().item<double>(), 1e-6);
    // Φ*(x) by hand: leaky ReLU (slope 0.01) after every bias-free layer.
    icl::TaskConfig noiseless = repTask(1, 0.0);
    const auto p = icl::sampleRepresentation(noiseless, 4, 9, torch::kFloat64);
    torch::Tensor h = p.x;
    for (const auto& B : reps[0].layers) {
        h = torch::matmul(h, B.t());
        h = torch::where(h > 0, h, 0.01 * h);
    }
    const torch::Tensor y = (h * p.w.unsqueeze(1)).sum(-1);
    EXPECT_LT((y - p.y).abs().max().item<double>(), 1e-12);
    // The same seed gives the same Φ*; another seed another one.
    EXPECT_TRUE(torch::equal(icl::drawRepresentation(5, 6, 3, 7).layers[2], icl::drawRepresentation(5, 6, 3, 7).layers[2]));
    EXPECT_FALSE(torch::equal(icl::drawRepresentation(5, 6, 3, 7).layers[2], icl::drawRepresentation(5, 6, 3, 8).layers[2]));
}

// With w ~ N(0, τ²I) and noise σ, the Bayes posterior mean of y_q is τ²·φ_qᵀFᵀ(τ²FFᵀ + σ²I)⁻¹y:
// the oracle (ridge on Φ*(x) with λ = σ²/τ², a primal solve) must equal it.
TEST(Representation, OracleIsTheBayesPosteriorMean)
{
    icl::ExperimentConfig c;
    c.task = repTask();
    c.eval.baselines = {"oracle_ridge_phi", "mixture_posterior"};
    const auto p = icl::sampleRepresentation(c.task, 8, 3, torch::kFloat64);
    const torch::Tensor oracle = icl::predictBaseline("oracle_ridge_phi", p, c, {});
    const auto& phi = icl::taskRepresentations(c.task)[0];
    const double t2 = c.task.w_scale * c.task.w_scale, s2 = c.task.noise_std * c.task.noise_std;
    for (int64_t b = 0; b < 8; ++b) {
        const torch::Tensor F = phi(p.x[b].narrow(0, 0, 12));   // [N, D]
        const torch::Tensor fq = phi(p.x[b][12]);               // [D]
        const torch::Tensor C = t2 * torch::matmul(F, F.t()) + s2 * torch::eye(12, torch::kFloat64);
        const torch::Tensor alpha = torch::linalg_solve(C, p.y[b].narrow(0, 0, 12), true);
        const double want = t2 * torch::dot(torch::matmul(F.t(), alpha), fq).item<double>();
        EXPECT_NEAR(oracle[b].item<double>(), want, 1e-8);
    }
    // A mixture of one representation is the oracle itself.
    EXPECT_LT((icl::predictBaseline("mixture_posterior", p, c, {}) - oracle).abs().max().item<double>(), 1e-8);
}

// For a mixture, the posterior puts (almost) all weight on the true component when the context is
// long and noise-free, so the mixture posterior approaches the prompt's own oracle.
TEST(Representation, MixturePosteriorFindsTheComponent)
{
    icl::ExperimentConfig c;
    c.task = repTask(3, 0.01);
    c.task.n_context = 30;
    const auto p = icl::sampleRepresentation(c.task, 200, 5, torch::kFloat64);
    const torch::Tensor choice = icl::representationChoice(c.task, 200, 5);
    const auto& reps = icl::taskRepresentations(c.task);
    torch::Tensor own = torch::zeros({200}, torch::kFloat64);
    for (int64_t k = 0; k < 3; ++k) {
        const torch::Tensor pk = icl::predictOracleRidgePhi(p, reps[size_t(k)], 0.01 * 0.01 / (c.task.w_scale * c.task.w_scale));
        own = torch::where(choice == k, pk, own);
    }
    const torch::Tensor mix = icl::predictBaseline("mixture_posterior", p, c, {});
    const torch::Tensor y = p.queryY();
    const double lossOwn = icl::halfMse(own, y).item<double>(), lossMix = icl::halfMse(mix, y).item<double>();
    EXPECT_LT(lossMix, 1.05 * lossOwn + 1e-6) << "mixture " << lossMix << ", own oracle " << lossOwn;
    EXPECT_LT(lossMix, 0.2 * icl::halfMse(icl::predictZero(p), y).item<double>());
}

TEST(Representation, KnnAndAveragingFollowTheirDefinitions)
{
    icl::TaskConfig t;
    t.d = 2;
    t.n_context = 5;
    auto p = icl::sampleLinearRegression(t, 3, 1, torch::kFloat64);
    const torch::Tensor knn = icl::predictKnn(p, 3), avg = icl::predictAveraging(p);
    for (int64_t b = 0; b < 3; ++b) {
        std::vector<std::pair<double, double>> byDistance;
        for (int64_t i = 0; i < 5; ++i)
            byDistance.emplace_back((p.x[b][i] - p.x[b][5]).pow(2).sum().item<double>(), p.y[b][i].item<double>());
        std::sort(byDistance.begin(), byDistance.end());
        EXPECT_NEAR(knn[b].item<double>(), (byDistance[0].second + byDistance[1].second + byDistance[2].second) / 3, 1e-12);
        double w0 = 0, w1 = 0;
        for (int64_t i = 0; i < 5; ++i) {
            w0 += p.y[b][i].item<double>() * p.x[b][i][0].item<double>() / 5;
            w1 += p.y[b][i].item<double>() * p.x[b][i][1].item<double>() / 5;
        }
        EXPECT_NEAR(avg[b].item<double>(), w0 * p.x[b][5][0].item<double>() + w1 * p.x[b][5][1].item<double>(), 1e-12);
    }
}

// Φ* is stored in the experiment file and equals the one regenerated from the seed, bit for bit.
TEST(Representation, PhiIsStoredInTheExperimentFile)
{
    icl::ConfigRequest r;
    r.preset = "guo-representation";
    r.sets = {"task.d=4", "task.rep_dim=5", "task.n_context=6", "model.n_layers=1", "model.n_heads=1",
              "model.d_model=8", "training.batch_size=8", "training.eval_every=1", "training.checkpoint_every=1",
              "eval.n_prompts=32", "eval.bootstrap=0", "seed=11", "device=cpu"};
    r.steps = 1;
    const nlohmann::json cfg = icl::resolveConfig(r);
    const std::string path = icl::test::scratchPrefix() + "representation_phi.h5";
    icl::TrainOptions o;
    o.out_path = path;
    o.force = true;
    o.threads = 1;
    icl::train(cfg, o, {});
    const auto arrays = icl::readTaskArrays(path);
    const icl::ExperimentConfig parsed = icl::parseConfig(cfg);
    const auto& reps = icl::taskRepresentations(parsed.task);
    ASSERT_EQ(arrays.size(), reps[0].layers.size());
    for (size_t l = 0; l < arrays.size(); ++l) {
        EXPECT_EQ(arrays[l].name, "phi/0/B_" + std::to_string(l + 1));
        const torch::Tensor stored = torch::from_blob(const_cast<float*>(arrays[l].data.data()), arrays[l].shape,
                                                      torch::kFloat32).to(torch::kFloat64);
        EXPECT_TRUE(torch::equal(stored, reps[0].layers[l])) << arrays[l].name;
    }
}

TEST(Representation, ConfigErrorsNameTheKey)
{
    auto errorOf = [](const nlohmann::json& j) {
        try {
            icl::parseConfig(j);
        } catch (const icl::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(errorOf({{"task", {{"kind", "representation_mixture"}}}}).rfind("task.n_representations:", 0), 0u);
    EXPECT_EQ(errorOf({{"eval", {{"baselines", {"oracle_ridge_phi"}}}}}).rfind("eval.baselines:", 0), 0u);
    EXPECT_EQ(errorOf({{"model", {{"kind", "gpt2"}}}}).rfind("task.layout:", 0), 0u);
    EXPECT_EQ(errorOf({{"task", {{"layout", "interleaved"}}}, {"model", {{"kind", "gpt2"}, {"n_heads", 3}}}})
                  .rfind("model.d_model:", 0),
              0u);
}

} // namespace
