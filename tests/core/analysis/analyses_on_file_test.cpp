// The von Oswald analyses run on an experiment file whose checkpoint holds the exact GD construction
// (Proposition 1). Whatever the analysis, the right answer is then known in closed form: the model *is*
// K steps of GD with the stored η, so it aligns perfectly with GD-K, its weights equal the construction,
// the interpolation path is flat, and iterating a tied construction L times equals L GD steps.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/analysis/gd_alignment.h"
#include "core/error.h"
#include "core/models/lsa_construction.h"
#include "core/baselines/baselines.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/checkpoint.h"
#include "core/tasks/seeds.h"
#include "core/tasks/prompts.h"
#include "core/analysis/run_loader.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_models.h"
#include "tests/support/tiny_runs.h"
#include "tests/support/core_checks.h"
#include "tests/support/file_damage.h"

namespace {

constexpr double kEta = 0.6;

std::string writeConstructionRun(const std::string& name, int64_t layers, bool tied)
{
    const std::string path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(path);
    icl::test::writeGdConstructionRun(path,
                                      {std::string("model.tied=") + (tied ? "true" : "false"), "eval.n_prompts=800",
                                       "eval.baselines=[\"zero\",\"least_squares\",\"gd\"]",
                                       "eval.gd_steps=[" + std::to_string(layers) + "]", "eval.alignment=[]"},
                                      layers, tied, kEta);
    return path;
}

TEST(AnalysesOnFile, TheConstructionAlignsPerfectlyWithGd)
{
    const std::string path = writeConstructionRun("construction_k3.h5", 3, false);
    icl::GdAlignmentOptions o;
    o.reference = "gd_3";
    o.store = false;
    const icl::AlignmentResult r = icl::computeGdAlignment(path, o);
    EXPECT_EQ(r.checkpoint_step, 10);
    EXPECT_DOUBLE_EQ(r.reference_eta, kEta);
    EXPECT_NEAR(r.metrics.model_cosine, 1.0, 1e-5);        // float32 model vs float64 GD
    EXPECT_LT(r.metrics.relative_model_difference, 1e-4);
    EXPECT_NEAR(r.metrics.model_loss, r.metrics.reference_loss, 1e-4 * r.metrics.reference_loss);
}

TEST(AnalysesOnFile, LearnedWeightsEqualTheConstruction)
{
    const std::string path = writeConstructionRun("construction_k2.h5", 2, false);
    const auto views = icl::lsaWeightViews(path, -1);
    ASSERT_EQ(views.size(), 2u);
    for (const auto& v : views) {
        ASSERT_EQ(v.learned_kq.rows, 6);
        for (size_t i = 0; i < v.learned_kq.data.size(); ++i) {
            EXPECT_NEAR(v.learned_kq.data[i], v.construction_kq.data[i], 1e-6);
            EXPECT_NEAR(v.learned_pv.data[i], v.construction_pv.data[i], 1e-6);
        }
        // P·W_V of the construction: only the (y, y) entry, −η/N.
        EXPECT_NEAR(v.construction_pv.at(5, 5), -kEta / 8.0, 1e-7);
        EXPECT_NEAR(v.construction_kq.at(0, 0), 1.0, 1e-7);
    }
}

TEST(AnalysesOnFile, InterpolationToTheConstructionIsFlat)
{
    const std::string path = writeConstructionRun("construction_interp.h5", 2, false);
    const auto c = icl::computeInterpolation(path, -1, 5);
    ASSERT_EQ(c.loss.size(), 5u);
    for (double l : c.loss)
        EXPECT_NEAR(l, c.gd_loss, 1e-4 * c.gd_loss);
}

TEST(AnalysesOnFile, IteratingATiedConstructionIsMoreGdSteps)
{
    const std::string path = writeConstructionRun("construction_tied.h5", 2, true);
    const auto c = icl::computeOod(path, -1, "depth", {1, 2, 4, 6}, 500, false);
    ASSERT_EQ(c.model_loss.size(), 4u);
    for (size_t i = 0; i < c.alpha.size(); ++i)
        EXPECT_NEAR(c.model_loss[i], c.gd_loss[i], 1e-4 * c.gd_loss[i]) << "α = " << c.alpha[i];
    EXPECT_LT(c.model_loss[3], c.model_loss[0]);  // more GD steps help on noiseless data
    EXPECT_THROW(icl::computeOod(writeConstructionRun("construction_untied.h5", 2, false), -1, "depth", {}, 100,
                                 false),
                 std::runtime_error);
}

TEST(AnalysesOnFile, LayerReadoutsAreTheGdIterates)
{
    // Layer k of a K-layer construction is k GD steps with the construction's η. The table's GD-k uses
    // the file's η for k = K (the stored baseline) and a line search on other prompts for k < K, so:
    // layer K is exactly GD-K; layer 1 points the same way as GD-1 (W_1 ∝ η); layer 2 is no better than
    // GD-2 with a tuned η (up to the difference between tuning and evaluation prompts).
    const std::string path = writeConstructionRun("construction_layers.h5", 3, false);
    const auto rows = icl::compareLayersWithSteps(path, -1, false);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_NEAR(rows[0].vs_gd.model_cosine, 1.0, 1e-5);
    EXPECT_GE(rows[1].model_loss, rows[1].gd_loss * 0.99);
    EXPECT_NEAR(rows[2].vs_gd.model_cosine, 1.0, 1e-5);
    EXPECT_NEAR(rows[2].model_loss, rows[2].gd_loss, 1e-4 * rows[2].gd_loss);
    EXPECT_LT(rows[2].model_loss, rows[0].model_loss);
}

} // namespace

TEST(AnalysesOnFile, EtaScanEqualsIteratedGdAtEveryEtaAndTheModelAtItsOwnEta)
{
    const std::string path = writeConstructionRun("eta_scan_construction.h5", 2, false);
    const icl::EtaScan scan = icl::computeEtaScan(path, -1, 2, 4.0, 41, false);
    const icl::LoadedRun run = icl::loadRun(path, -1);
    const icl::PromptBatch prompts
        = icl::samplePrompts(run.config.task, run.config.eval.n_prompts, icl::seeds::eval(run.config.seed));
    ASSERT_EQ(scan.eta.size(), 41u);
    for (size_t i = 0; i < scan.eta.size(); ++i) {
        EXPECT_DOUBLE_EQ(scan.eta[i], 4.0 * double(i) / 40.0);
        // independent: GD iterated step by step on the same prompts (predictGd hands its float64
        // predictions back in the prompts' float32, hence the tolerance)
        const torch::Tensor e = icl::predictGd(prompts, 2, scan.eta[i]).to(torch::kFloat64)
                                - prompts.queryY().to(torch::kFloat64);
        const double want = 0.5 * e.pow(2).mean().item<double>();
        EXPECT_NEAR(scan.loss[i], want, 1e-7 * (1.0 + want)) << "eta " << scan.eta[i];
    }
    // The model is two GD steps with η = kEta: its loss is the scan's at η = kEta (grid point 6).
    EXPECT_NEAR(scan.loss[6], scan.model_loss, 1e-4 * scan.model_loss);
    EXPECT_LE(scan.best_loss, scan.loss[6] * (1.0 + 1e-12));
}

TEST(AnalysesOnFile, ADamagedLastCheckpointOrOptimizerStateDoesNotStopAnAnalysis)
{
    namespace fs = std::filesystem;
    const std::string& tiny = icl::test::tinyRun(icl::test::TinyRun::Lsa); // checkpoints 0, 10, 20
    const icl::CheckpointData intact = icl::readCheckpoint(tiny, 20);
    ASSERT_FALSE(intact.optimizer.empty()) << "the last checkpoint keeps the optimizer state";

    // Damaged optimizer state: resuming is refused, an analysis reads the intact parameters.
    const std::string optimizer = icl::test::scratchPrefix() + "damaged_optimizer.h5";
    fs::copy_file(tiny, optimizer, fs::copy_options::overwrite_existing);
    const std::string dataset = "/checkpoints/000000020/optimizer/" + intact.optimizer.front().name;
    icl::test::flipBit(optimizer, icl::test::dataOffset(optimizer, dataset), 0);
    EXPECT_EQ(icl::test::errorOf([&] { icl::readCheckpoint(optimizer, 20); }),
              optimizer + ": damaged: " + dataset + " (checksum mismatch)");
    const icl::CheckpointData params = icl::readCheckpoint(optimizer, 20, icl::CheckpointParts::ParamsOnly);
    EXPECT_TRUE(params.optimizer.empty());
    ASSERT_EQ(params.params.size(), intact.params.size());
    for (size_t i = 0; i < params.params.size(); ++i) {
        EXPECT_EQ(params.params[i].name, intact.params[i].name);
        EXPECT_EQ(params.params[i].data, intact.params[i].data) << params.params[i].name;
    }
    EXPECT_EQ(icl::loadRun(optimizer, -1).step, 20);

    // The last checkpoint's record damaged: the default is the last usable one; naming it is refused.
    const std::string record = icl::test::scratchPrefix() + "damaged_last_checkpoint.h5";
    fs::copy_file(tiny, record, fs::copy_options::overwrite_existing);
    icl::test::overwriteNumberAttribute(record, "/checkpoints/000000020", "train_loss", 1234.5);
    const icl::RunSummary summary = icl::readRunSummary(record);
    ASSERT_EQ(summary.checkpoints.size(), 3u);
    EXPECT_FALSE(summary.checkpoints.back().damaged.empty());
    EXPECT_EQ(icl::lastUsableCheckpoint(summary), 10);
    EXPECT_EQ(icl::loadRun(record, -1).step, 10);
    EXPECT_EQ(icl::test::errorOf([&] { icl::loadRun(record, 20); }),
              record + ": damaged: /checkpoints/000000020 (checksum mismatch)");

    // Every checkpoint damaged: one line naming the last one's damage.
    icl::test::overwriteNumberAttribute(record, "/checkpoints/000000000", "train_loss", 1234.5);
    icl::test::overwriteNumberAttribute(record, "/checkpoints/000000010", "train_loss", 1234.5);
    EXPECT_EQ(icl::test::errorOf([&] { icl::lastUsableCheckpoint(icl::readRunSummary(record)); }),
              record + ": damaged: /checkpoints/000000020 (checksum mismatch); every checkpoint of the file is damaged");
    icl::RunSummary none;
    none.path = "empty.h5";
    EXPECT_EQ(icl::test::errorOf([&] { icl::lastUsableCheckpoint(none); }), "empty.h5: the file holds no checkpoint");
}

TEST(AnalysesOnFile, AnAbsentCheckpointIsRefusedWithTheSavedSteps)
{
    icl::RunSummary summary;
    summary.path = "run.h5";
    for (int64_t step = 0; step <= 1100; step += 100) {
        icl::CheckpointInfo c;
        c.step = step;
        summary.checkpoints.push_back(c);
    }
    EXPECT_EQ(icl::checkpointToRead(summary, 300), 300);
    EXPECT_EQ(icl::checkpointToRead(summary, -1), 1100);
    // Twelve saved steps: the first and last five are listed.
    EXPECT_EQ(icl::test::errorOf([&] { icl::checkpointToRead(summary, 50); }),
              "run.h5: no checkpoint at step 50 (saved: 0, 100, 200, 300, 400, …, 700, 800, 900, 1000, 1100)");
    EXPECT_EQ(icl::test::errorOf([&] { icl::checkpointToRead(summary, -5); }),
              "checkpoint -5: expected a saved step or -1 for the last one not damaged (saved: 0, 100, 200, 300, "
              "400, …, 700, 800, 900, 1000, 1100)");
    summary.checkpoints.resize(2);
    EXPECT_EQ(icl::test::errorOf([&] { icl::checkpointToRead(summary, 7); }),
              "run.h5: no checkpoint at step 7 (saved: 0, 100)");
}
