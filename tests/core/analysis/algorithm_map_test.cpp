// The algorithm map (core/analysis/algorithm_map.h) on runs whose answer is known: an LSA holding the GD
// construction is GD step ℓ at layer ℓ exactly; the map's algorithm predictions equal the baselines computed
// directly; its arithmetic (similarities, best steps, fits) against hand values; bad input refused.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <tuple>

#include "core/analysis/algorithm_map.h"
#include "core/analysis/algorithm_map_impl.h"
#include "core/models/lsa_construction.h"
#include "core/baselines/baselines.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "tests/support/core_checks.h"
#include "tests/support/file_damage.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/tiny_models.h"

namespace {

constexpr double kMapEta = 0.6;

/// An LSA of `layers` untied layers holding the GD construction with η = kMapEta (d = 5, N = 8), stored as a
/// run whose fitted η of GD-K is kMapEta (as training stores it).
std::string writeMapConstructionRun(const std::string& name, int64_t layers)
{
    const std::string path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(path);
    icl::test::writeGdConstructionRun(path,
                                      {"eval.n_prompts=200", "eval.baselines=[\"zero\",\"least_squares\",\"gd\"]",
                                       "eval.gd_steps=[" + std::to_string(layers) + "]", "eval.alignment=[]"},
                                      layers, false, kMapEta);
    return path;
}

int64_t stepIndex(const icl::AlgorithmFamilyMap& f, double step)
{
    for (int64_t s = 0; s < f.nSteps(); ++s)
        if (f.steps[size_t(s)] == step)
            return s;
    return -1;
}

TEST(AlgorithmMap, GdConstructionMatchesGdStepLAtLayerL)
{
    const std::string path = writeMapConstructionRun("map_construction_k3.h5", 3);
    icl::AlgorithmMapOptions o;
    o.n_prompts = 400;
    o.store = false;
    const icl::AlgorithmMap map = icl::computeAlgorithmMap(path, o);
    EXPECT_EQ(map.readout, "y_slot");
    EXPECT_EQ(map.positions, "query");
    EXPECT_EQ(map.gd_step, "fixed");
    EXPECT_DOUBLE_EQ(map.gd_eta, kMapEta);
    const icl::AlgorithmFamilyMap* gd = map.family("gd");
    ASSERT_NE(gd, nullptr);
    ASSERT_TRUE(gd->available());
    ASSERT_EQ(map.layers, (std::vector<int64_t>{1, 2, 3}));
    for (int64_t l = 1; l <= 3; ++l) {
        const int64_t s = stepIndex(*gd, double(l));
        ASSERT_GE(s, 0) << "GD grid lacks k = " << l;
        // The float32 model equals GD-ℓ in float64 up to rounding: similarity 1 to 1e-6, both measures.
        EXPECT_NEAR(gd->errorsAt(l - 1, s), 1.0, 1e-6) << "layer " << l;
        EXPECT_NEAR(gd->weightsAt(l - 1, s), 1.0, 1e-6) << "layer " << l;
        EXPECT_DOUBLE_EQ(gd->best_step[size_t(l - 1)], double(l));
        // Another step is measurably different, so the diagonal is not a property of any map.
        for (double other : {1.0, 2.0, 3.0})
            if (other != double(l))
                EXPECT_LT(gd->errorsAt(l - 1, stepIndex(*gd, other)), 1.0 - 1e-3) << "layer " << l << ", k " << other;
    }
    // GD++ was not fitted for this run: on the map with its reason.
    const icl::AlgorithmFamilyMap* gdpp = map.family("gdpp");
    ASSERT_NE(gdpp, nullptr);
    EXPECT_FALSE(gdpp->available());
    EXPECT_NE(gdpp->unavailable.find("gd_plus_plus"), std::string::npos);
}

TEST(AlgorithmMap, AlgorithmPredictionsEqualTheBaselines)
{
    // The map's query predictions (the scatter) of Newton-k, GD-k and ridge equal predictNewton / predictGd /
    // predictRidge on the same evaluation prompts (documented draw: mixSeed(seed, 0xA16A0001)).
    const std::string path = writeMapConstructionRun("map_construction_k2.h5", 2);
    icl::AlgorithmMapOptions o;
    o.n_prompts = 50;
    o.n_scatter = 50;
    o.seed = 7;
    o.store = false;
    o.ridge_lambdas = {10.0, 0.1};
    const icl::AlgorithmMap map = icl::computeAlgorithmMap(path, o);
    icl::ConfigRequest r;
    r.preset = "vonoswald-lsa-multilayer";
    r.sets = {"task.d=5", "task.n_context=8"};
    const icl::ExperimentConfig cfg = icl::parseConfig(icl::resolveConfig(r));
    const icl::PromptBatch p = icl::samplePrompts(cfg.task, 50, icl::mixSeed(7, 0xA16A0001ULL), torch::kFloat64);
    ASSERT_EQ(map.n_scatter, 50);
    auto scatterOf = [&](const std::string& family, int64_t s) {
        for (size_t f = 0; f < map.families.size(); ++f)
            if (map.families[f].family == family)
                return torch::tensor(std::vector<double>(map.scatter_algorithm[f].begin() + s * 50,
                                                         map.scatter_algorithm[f].begin() + (s + 1) * 50),
                                     torch::kFloat64);
        return torch::Tensor();
    };
    const icl::AlgorithmFamilyMap* newton = map.family("newton");
    for (int64_t k : {1, 4, 20})
        EXPECT_LE(icl::test::maxAbsDiff(scatterOf("newton", stepIndex(*newton, double(k))), icl::predictNewton(p, k)),
                  1e-9)
            << "Newton-" << k;
    const icl::AlgorithmFamilyMap* gd = map.family("gd");
    for (double k : {1.0, 3.0, 100.0})
        EXPECT_LE(icl::test::maxAbsDiff(scatterOf("gd", stepIndex(*gd, k)), icl::predictGd(p, int64_t(k), kMapEta)), 1e-9)
            << "GD-" << k;
    EXPECT_LE(icl::test::maxAbsDiff(scatterOf("ridge", 0), icl::predictRidge(p, 10.0)), 1e-10);
    EXPECT_LE(icl::test::maxAbsDiff(scatterOf("ridge", 1), icl::predictRidge(p, 0.1)), 1e-10);
    // The targets are the prompts' query labels.
    EXPECT_LE(icl::test::maxAbsDiff(torch::tensor(map.scatter_target, torch::kFloat64), p.queryY()), 0.0);
}

TEST(AlgorithmMap, Gpt2MapReadsEveryLayerThroughProbesOnPrefixes)
{
    const std::string& path = icl::test::tinyRun(icl::test::TinyRun::Gpt2);
    icl::AlgorithmMapOptions o;
    o.n_prompts = 100;
    o.n_fit_prompts = 40;
    o.n_weight_contexts = 4;
    o.gd_points = 8;
    o.store = true;
    int firstLooks = 0;
    icl::AlgorithmMap first;
    const icl::AlgorithmMap map = icl::computeAlgorithmMap(path, o, {}, [&](const icl::AlgorithmMap& m) {
        ++firstLooks;
        first = m;
    });
    EXPECT_EQ(firstLooks, 1);
    EXPECT_TRUE(first.first_look);
    EXPECT_EQ(first.n_prompts, icl::kAlgorithmMapFirstLookPrompts);
    EXPECT_FALSE(map.first_look);
    EXPECT_EQ(map.readout, "probe");
    EXPECT_EQ(map.positions, "prefixes");
    EXPECT_EQ(map.gd_step, "spectral");
    EXPECT_EQ(map.layers.size(), 2u);
    EXPECT_EQ(map.probe_r2.size(), 2u);
    for (const auto& f : map.families) {
        if (!f.available())
            continue;
        ASSERT_EQ(f.sim_errors.size(), 2 * f.steps.size()) << f.family;
        for (double v : f.sim_errors)
            EXPECT_TRUE(std::isfinite(v) && v >= -1.0 - 1e-12 && v <= 1.0 + 1e-12) << f.family;
    }
    EXPECT_FALSE(map.family("gdpp")->available());
    // Stored and read back: the same numbers.
    const std::vector<icl::AlgorithmMap> stored = icl::readStoredAlgorithmMaps(path);
    ASSERT_FALSE(stored.empty());
    const icl::AlgorithmMap& back = stored.back();
    EXPECT_EQ(back.checkpoint_step, map.checkpoint_step);
    ASSERT_EQ(back.families.size(), map.families.size());
    for (size_t f = 0; f < map.families.size(); ++f) {
        const icl::AlgorithmFamilyMap &got = back.families[f], &want = map.families[f];
        EXPECT_EQ(std::tie(got.family, got.steps, got.sim_errors, got.unavailable),
                  std::tie(want.family, want.steps, want.sim_errors, want.unavailable));
    }
    // Asked for by name, GD++ is refused with the reason.
    o.families = {"gdpp"};
    icl::test::expectError([&] { icl::computeAlgorithmMap(path, o); }, "does not apply");
}

TEST(AlgorithmMap, AcrossTrainingOneMapPerCheckpointAndCancel)
{
    const std::string& path = icl::test::tinyRun(icl::test::TinyRun::Lsa);
    icl::AlgorithmMapOptions o;
    o.n_prompts = 80;
    o.store = false;
    const std::vector<icl::AlgorithmMap> maps = icl::computeAlgorithmMaps(path, o, {});
    ASSERT_EQ(maps.size(), 3u);  // checkpoints 0, 10, 20
    EXPECT_EQ(maps[0].checkpoint_step, 0);
    EXPECT_EQ(maps[2].checkpoint_step, 20);
    icl::test::expectError([&] { icl::computeAlgorithmMaps(path, o, {}, [](int64_t, int64_t) { return false; }); },
                           "cancelled");

    // A damaged checkpoint is left out; the others are mapped.
    const std::string damaged = icl::test::scratchPrefix() + "algorithm_map_damaged.h5";
    std::filesystem::copy_file(path, damaged, std::filesystem::copy_options::overwrite_existing);
    icl::test::overwriteNumberAttribute(damaged, "/checkpoints/000000010", "train_loss", 1234.5);
    const std::vector<icl::AlgorithmMap> left = icl::computeAlgorithmMaps(damaged, o, {});
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].checkpoint_step, 0);
    EXPECT_EQ(left[1].checkpoint_step, 20);
}

TEST(AlgorithmMap, RefusesWhatHasNoMap)
{
    EXPECT_NE(icl::algorithmMapUnavailableReason("fewshot_classification", "gpt2", 2).find("not a regression task"),
              std::string::npos);
    EXPECT_NE(icl::algorithmMapUnavailableReason("linear_regression", "lstm", 2).find("lsa or gpt2"), std::string::npos);
    EXPECT_NE(icl::algorithmMapUnavailableReason("linear_regression", "gpt2", 0).find("no layers"), std::string::npos);
    EXPECT_EQ(icl::algorithmMapUnavailableReason("linear_regression", "lsa", 1), "");
    const std::string& path = icl::test::tinyRun(icl::test::TinyRun::Lsa);
    icl::AlgorithmMapOptions o;
    o.store = false;
    o.families = {"bfgs"};
    icl::test::expectError([&] { icl::computeAlgorithmMap(path, o); }, "unknown family \"bfgs\"");
    o.families = {};
    o.n_prompts = 1;
    icl::test::expectError([&] { icl::computeAlgorithmMap(path, o); }, "evaluation prompts");
}

TEST(AlgorithmMapJson, RoundTripsAndRefusesBadShapes)
{
    icl::AlgorithmMap m;
    m.checkpoint_step = 5;
    m.layers = {1, 2};
    m.readout = "y_slot";
    m.positions = "query";
    m.newton_alpha = "frobenius";
    m.gd_step = "fixed";
    m.gd_eta = 0.5;
    icl::AlgorithmFamilyMap f;
    f.family = "newton";
    f.step_name = "k";
    f.steps = {1, 2, 3};
    f.sim_errors = {0.1, 0.9, 0.5, 0.2, std::nan(""), 0.3};
    f.sim_weights = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    icl::algorithm_map::finishFamily(f, 2, 1, 2);
    m.families.push_back(f);
    icl::AlgorithmFamilyMap g;
    g.family = "gdpp";
    g.unavailable = "no fit";
    m.families.push_back(g);
    const icl::AlgorithmMap back = icl::algorithmMapFromJson(icl::algorithmMapToJson(m), "test");
    ASSERT_EQ(back.families.size(), 2u);
    const icl::AlgorithmFamilyMap* n = back.family("newton");
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->steps, f.steps);
    EXPECT_EQ(n->best_step, (std::vector<double>{2, 3}));
    EXPECT_TRUE(std::isnan(n->sim_errors[4]));
    EXPECT_EQ(back.family("gdpp")->unavailable, "no fit");
    // One row too short, an unknown family, a wrong layer list: each refused naming the key.
    nlohmann::json j = nlohmann::json::parse(icl::algorithmMapToJson(m));
    nlohmann::json bad = j;
    bad["families"]["newton"]["sim_errors"][1] = {0.1};
    icl::test::expectError([&] { icl::algorithmMapFromJson(bad.dump(), "file.h5"); },
                           "file.h5: families.newton.sim_errors[1]");
    bad = j;
    bad["families"]["lbfgs"] = {{"unavailable", "x"}};
    icl::test::expectError([&] { icl::algorithmMapFromJson(bad.dump(), "file.h5"); }, "unknown family");
    bad = j;
    bad["layers"] = {1, 3};
    icl::test::expectError([&] { icl::algorithmMapFromJson(bad.dump(), "file.h5"); }, "layers[1]");
    icl::test::expectError([&] { icl::algorithmMapFromJson("[1, 2", "file.h5"); }, "file.h5");
}

TEST(AlgorithmMapArithmetic, SimilaritiesBestStepsAndFits)
{
    using namespace icl::algorithm_map;
    // Per prompt cosine over positions: prompt 0 identical (1), prompt 1 opposite (−1), prompt 2 zero (skipped).
    const double a2[] = {1, 2, 3, 1, 0, 0, 0, 0, 0};
    const double b2[] = {2, 4, 6, -1, 0, 0, 1, 1, 1};
    EXPECT_DOUBLE_EQ(similarityOfErrors(a2, b2, 3, 3), 0.0);  // mean of 1 and −1; the zero row is left out
    const double c[] = {1, 0, 1, 1};
    const double e[] = {0, 1, 1, 1};
    EXPECT_NEAR(similarityOfErrors(c, e, 4, 1), 2.0 / 3.0, 1e-15);  // one vector over prompts
    EXPECT_NEAR(similarityOfWeights(c, e, 2, 2), 0.5 * (0.0 + 1.0), 1e-15);
    // Log grid: 1 … 1000 without duplicates, both ends included.
    const std::vector<double> grid = gdStepGrid(1000, 25);
    EXPECT_EQ(grid.front(), 1.0);
    EXPECT_EQ(grid.back(), 1000.0);
    for (size_t i = 1; i < grid.size(); ++i)
        EXPECT_GT(grid[i], grid[i - 1]);
    // Spearman: monotone = 1, reversed = −1, ties averaged (x = 1,2,3,4; y = 1,2,2,3 → ρ = 0.948683…).
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
    EXPECT_NEAR(spearman({1, 2, 3, 4}, {1, 2, 2, 3}), 3.0 / std::sqrt(10.0), 1e-12);
    // Fits over layers 2 … 4 of best steps 9, 3, 6, 9, 100: linear y = 3ℓ − 3 exactly; log-linear of 1, 10, 100.
    const icl::AlgorithmMapFit lin = fitBestSteps({9, 3, 6, 9, 100}, 2, 4, "linear");
    EXPECT_NEAR(lin.slope, 3.0, 1e-12);
    EXPECT_NEAR(lin.intercept, -3.0, 1e-12);
    EXPECT_NEAR(lin.r2, 1.0, 1e-12);
    EXPECT_NEAR(lin.spearman, 1.0, 1e-12);
    const icl::AlgorithmMapFit lg = fitBestSteps({1, 10, 100}, 1, 3, "log_linear");
    EXPECT_NEAR(lg.slope, 1.0, 1e-12);
    EXPECT_NEAR(lg.r2, 1.0, 1e-12);
    // Fewer than two layers: no fit; two: the line through them, but no R² or rank correlation.
    EXPECT_TRUE(std::isnan(fitBestSteps({1, 2}, 2, 2, "linear").slope));
    const icl::AlgorithmMapFit two = fitBestSteps({1, 2, 4}, 2, 3, "linear");
    EXPECT_NEAR(two.slope, 2.0, 1e-12);
    EXPECT_TRUE(std::isnan(two.r2));
    EXPECT_TRUE(std::isnan(two.spearman));
    int64_t first = 0, last = 0;
    defaultMiddleLayers(12, &first, &last);
    EXPECT_EQ(first, 4);
    EXPECT_EQ(last, 9);
}

} // namespace
