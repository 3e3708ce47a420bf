#include "core/training/trainer.h"

#include <cmath>
#include <filesystem>
#include <memory>

#include "core/metrics/alignment_metrics.h"
#include "core/models/lsa_construction.h"
#include "core/io/kinds.h"
#include "core/models/lsa.h"
#include "core/models/lsa_fused.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/tasks/prompts.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/tasks/linear_regression.h"
#include "core/tasks/representation.h"
#include "core/training/checkpoint.h"
#include "core/training/classification_trainer.h"
#include "core/runtime/device.h"
#include "core/training/optim.h"
#include "core/training/run_file_lock.h"
#include "core/tasks/seeds.h"
#include "core/training/sharded_step.h"
#include "core/runtime/blas.h"
#include "core/training/regression_evaluation.h"
#include "core/training/training_loop.h"

namespace icl {

namespace {

/// Sets an LSA to the GD or GD++ construction of model.init with the run's fitted step sizes
/// (refitted on the tuning prompts when the config does not list that baseline).
void applyConstruction(const ExperimentConfig& cfg, const FittedBaselines& fitted, const PromptBatch& tuning,
                       torch::nn::Module& module)
{
    auto* lsa = dynamic_cast<LsaImpl*>(&module);
    if (!lsa)
        throw Error("model.init: " + cfg.model.init + " needs an lsa model");
    const int64_t K = cfg.model.n_layers, N = cfg.task.n_context;
    torch::NoGradGuard guard;
    if (cfg.model.init == "gd_construction") {
        auto it = fitted.eta.find("gd_" + std::to_string(K));
        const double eta = it != fitted.eta.end() ? it->second
                                                  : (K == 1 ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, K));
        applyGdConstruction(*lsa, eta, N);
    } else {
        auto it = fitted.gdpp.find("gdpp_" + std::to_string(K));
        const GdPlusPlusParams p = it != fitted.gdpp.end() ? it->second : fitGdPlusPlus(cfg.task, K, seeds::tuning(cfg.seed), cfg.eval.gdpp_tied);
        std::vector<double> eta = p.eta, gamma = p.gamma;
        if (lsa->tied()) {
            // One shared layer: the mean of the per-layer scalars.
            double e = 0, g = 0;
            for (size_t l = 0; l < eta.size(); ++l)
                e += eta[l] / double(eta.size()), g += gamma[l] / double(gamma.size());
            eta = {e};
            gamma = {g};
        }
        applyGdPlusPlusConstruction(*lsa, eta, gamma, N);
    }
}

} // namespace

TrainResult train(const nlohmann::json& configJson, const TrainOptions& options, const TrainCallback& callback)
{
    namespace fs = std::filesystem;
    if (options.out_path.empty())
        throw Error("no output file given (--out RUN.h5)");
    const std::string& out = options.out_path;
    const RunFileLock claim(out);  // one trainer per file at a time

    ExperimentConfig cfg;
    CheckpointData resumeFrom;
    bool resuming = false, restartEmpty = false;
    if (options.resume) {
        if (!fs::exists(out))
            throw Error(out + ": cannot resume: no such file");
        RunSummary summary = readRunSummary(out);
        nlohmann::json stored;
        try {
            stored = nlohmann::json::parse(summary.config_json);
        } catch (const std::exception&) {
            throw Error(out + ": damaged /config (not JSON)");
        }
        cfg = parseConfig(stored);
        if (options.steps > 0)
            cfg.training.steps = options.steps;
        // A run stopped before its step-0 checkpoint (e.g. a Slurm task preempted while preparing) holds only its
        // config: nothing to lose, so it starts again from that config.
        restartEmpty = summary.checkpoints.empty();
        if (!restartEmpty) {
            resumeFrom = readCheckpoint(out, summary.checkpoints.back().step);
            resuming = true;
        }
    } else {
        cfg = parseConfig(configJson);
    }

    const torch::Device device = resolveDevice(cfg.device);  // before touching the file
    configureThreads(options.threads);
    if (!resuming) {
        createExperimentFile(out, toJson(cfg).dump(2), options.force || restartEmpty);
        storeFixedTaskArrays(cfg, out);
    }

    if (kindOf(cfg.task) == TaskKind::FewshotClassification)
        return trainClassification(cfg, options, resuming ? &resumeFrom : nullptr, device, callback);

    const TrainingConfig& tc = cfg.training;
    TrainingLoop loop(tc, options, resuming ? &resumeFrom : nullptr, callback);
    ModelHandle model = makeModel(cfg, seeds::init(cfg.seed));
    model.module->to(device);
    auto optimizer = makeOptimizer(tc, model.module->parameters());
    if (resuming) {
        const std::string where = out + " (checkpoint " + std::to_string(loop.step()) + ")";
        loadParams(*model.module, resumeFrom.params, where);
        loadOptimizerState(*optimizer, *model.module, resumeFrom, where);
    }

    // Fixed evaluation prompts, and separate prompts on which GD's step size η is fitted.
    if (!loop.report(TrainProgress::Phase::Preparing,
                     "drawing " + std::to_string(cfg.eval.n_prompts) + " evaluation prompts and fitting baselines"))
        return loop.stoppedBeforeTraining(device.str());
    const RegressionEvaluation evaluation(cfg, device);
    if (!resuming && cfg.model.init != "variance_scaling")
        applyConstruction(cfg, evaluation.fitted(), evaluation.tuning(), *model.module);
    const std::map<std::string, double>& baselineLoss = evaluation.baselineLoss();
    loop.setBaselines(baselineLoss);

    TrainingLoop::Hooks hooks;
    hooks.loss = [&](int64_t step) {
        // The curriculum stage is a function of the step alone, so a resumed run draws the same prompts.
        const PromptBatch batch = samplePrompts(trainingTask(cfg, step), tc.batch_size, seeds::train(cfg.seed, step),
                                                torch::kFloat32, device);
        // Models that predict at every prefix learn from all of them (Garg et al.: MSE over all positions).
        return model.predict_all ? halfMse(model.predict_all(batch).flatten(), batch.y.flatten())
                                 : halfMse(model.predict(batch), batch.queryY());
    };
    // Linear LSA models train with the closed-form fused step (the same loss and gradients as autograd).
    std::unique_ptr<FusedLsa> fused;
    if (auto* lsa = dynamic_cast<LsaImpl*>(model.module.get());
        lsa && options.fused && !model.predict_all && FusedLsa::supports(lsa->options()))
        fused = std::make_unique<FusedLsa>(*lsa);
    if (fused)
        hooks.loss_and_grad = [&](int64_t step) {
            const PromptBatch batch = samplePrompts(trainingTask(cfg, step), tc.batch_size,
                                                    seeds::train(cfg.seed, step), torch::kFloat32, device);
            return fused->lossAndGrad(batch);
        };
    // training.shards > 1: the batch's gradient in parts on worker threads (core/training/sharded_step.h).
    std::unique_ptr<ShardedGradient> sharded;
    if (!fused && tc.shards > 1) {
        // On a GPU the shards run one after another (one worker): the kernels already fill the device.
        const int threads = device.is_cpu() ? (options.threads > 0 ? options.threads : defaultThreads()) : 1;
        sharded = std::make_unique<ShardedGradient>(model.module->parameters(), tc.shards, threads);
        hooks.loss_and_grad = [&](int64_t step) {
            const PromptBatch batch = samplePrompts(trainingTask(cfg, step), tc.batch_size,
                                                    seeds::train(cfg.seed, step), torch::kFloat32, device);
            // The batch loss (halfMse over every prediction) as a sum over shards: each shard's half sum of
            // squares divided by the batch's count of predictions.
            const double count = double(model.predict_all ? batch.y.numel() : batch.batchSize());
            return sharded->lossAndGrad([&](int64_t s) {
                const auto [begin, end] = shardBounds(batch.batchSize(), tc.shards, s);
                const PromptBatch part = batch.slice(begin, end);
                const torch::Tensor error = model.predict_all ? model.predict_all(part).flatten() - part.y.flatten()
                                                              : model.predict(part) - part.queryY();
                return 0.5 * error.square().sum() / count;
            });
        };
    }
    hooks.evaluate = [&](MetricsRow& row) {
        const double eval = evaluation.evaluate(model, row);
        if (tc.curriculum.enabled) {
            // Size of the latest training batch (step 0: of the first one).
            const CurriculumStage stage = curriculumStage(cfg, std::max<int64_t>(loop.step() - 1, 0));
            row["curriculum/dims"] = double(stage.dims);
            row["curriculum/points"] = double(stage.n_context + 1);
        }
        return eval;
    };
    TrainResult result = loop.run(*model.module, *optimizer, hooks, device.str());
    result.baselines = baselineLoss;
    return result;
}

} // namespace icl
