#include "core/training/trainer.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/analysis/gd_alignment_impl.h"
#include "core/analysis/lsa_construction.h"
#include "core/models/lsa.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/tasks/sine_regression.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/tasks/linear_regression.h"
#include "core/tasks/representation.h"
#include "core/training/checkpoint.h"
#include "core/training/classification_trainer.h"
#include "core/training/device.h"
#include "core/training/optim.h"
#include "core/training/seeds.h"

namespace icl {

namespace {

double evalLoss(const ModelHandle& model, const PromptBatch& eval)
{
    torch::NoGradGuard guard;
    model.module->eval();
    double sum = 0.0;
    const int64_t chunk = 4096, n = eval.batchSize();
    for (int64_t b = 0; b < n; b += chunk) {
        PromptBatch part = eval.slice(b, std::min(n, b + chunk));
        torch::Tensor err = (model.predict(part) - part.queryY()).to(torch::kFloat64);
        sum += 0.5 * err.pow(2).sum().item<double>();
    }
    model.module->train();
    return sum / double(n);
}

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
        const GdPlusPlusParams p = it != fitted.gdpp.end() ? it->second : fitGdPlusPlus(cfg.task, K, seeds::tuning(cfg.seed));
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
        if (cfg.task.kind == "representation" || cfg.task.kind == "representation_mixture") {
            // Φ* goes into the file (/task/phi/<k>/B_<l>) so other tools can recompute Φ*(x).
            std::vector<NamedArray> arrays;
            const auto& reps = taskRepresentations(cfg.task);
            for (size_t k = 0; k < reps.size(); ++k)
                for (size_t l = 0; l < reps[k].layers.size(); ++l) {
                    const torch::Tensor B = reps[k].layers[l].to(torch::kFloat32).contiguous();
                    NamedArray a;
                    a.name = "phi/" + std::to_string(k) + "/B_" + std::to_string(l + 1);
                    a.shape = B.sizes().vec();
                    a.data.assign(B.data_ptr<float>(), B.data_ptr<float>() + B.numel());
                    arrays.push_back(std::move(a));
                }
            storeTaskArrays(out, arrays);
        }
    }

    if (cfg.task.kind == "fewshot_classification")
        return trainClassification(cfg, options, resuming ? &resumeFrom : nullptr, device, callback);

    const TrainingConfig& tc = cfg.training;
    const int64_t totalSteps = tc.steps;
    int64_t step = resuming ? resumeFrom.step : 0;
    const double wallOffset = resuming ? resumeFrom.wall_time_s : 0.0;
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };

    TrainProgress progress;
    progress.start_step = step;
    progress.step = step;
    progress.total_steps = totalSteps;
    auto report = [&](TrainProgress::Phase phase, const std::string& message) {
        progress.phase = phase;
        progress.message = message;
        progress.elapsed_s = elapsed();
        return callback ? callback(progress) : true;
    };

    ModelHandle model = makeModel(cfg, seeds::init(cfg.seed));
    model.module->to(device);
    auto optimizer = makeOptimizer(tc, model.module->parameters());
    const std::string where = out + " (checkpoint " + std::to_string(step) + ")";
    if (resuming) {
        loadParams(*model.module, resumeFrom.params, where);
        loadOptimizerState(*optimizer, *model.module, resumeFrom, where);
    }

    // Fixed evaluation prompts, and separate prompts on which GD's step size η is fitted.
    TrainResult result;
    result.device = device.str();
    if (!report(TrainProgress::Phase::Preparing,
                "drawing " + std::to_string(cfg.eval.n_prompts) + " evaluation prompts and fitting baselines")) {
        result.final_step = step;
        result.stopped = true;
        return result;
    }
    const PromptBatch evalCpu = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::eval(cfg.seed));
    const PromptBatch tuning = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
    const FittedBaselines fitted = fitBaselines(cfg, tuning, seeds::tuning(cfg.seed));
    std::map<std::string, double> baselineLoss;
    for (const auto& name : baselineNames(cfg.eval))
        baselineLoss[name] = halfMse(predictBaseline(name, evalCpu, cfg, fitted).to(torch::kFloat64),
                                     evalCpu.queryY().to(torch::kFloat64))
                                 .item<double>();
    if (!resuming && cfg.model.init != "variance_scaling")
        applyConstruction(cfg, fitted, tuning, *model.module);
    const PromptBatch evalSet = evalCpu.to(device);
    progress.baselines = baselineLoss;

    std::vector<MetricsRow> pending;
    double lossSum = 0.0, lastGradNorm = 0.0, lastLr = learningRate(tc, step);
    int64_t lossCount = 0;
    bool truncatePending = resuming;
    int64_t lastCheckpoint = step;

    auto evaluateAndCommit = [&](bool withCheckpoint, double batchLoss) {
        const double eval = evalLoss(model, evalSet);
        if (!std::isfinite(eval))
            throw Error("training diverged at step " + std::to_string(step) + ": eval loss is "
                        + std::to_string(eval) + "; the last checkpoint (step " + std::to_string(lastCheckpoint)
                        + ") in " + out + " is intact and resumable; lower training.lr or set training.grad_clip");
        MetricsRow row;
        row["step"] = double(step);
        row["train_loss"] = lossCount ? lossSum / double(lossCount) : batchLoss;
        row["eval_loss"] = eval;
        row["lr"] = lastLr;
        row["grad_norm"] = lastGradNorm;
        row["wall_time_s"] = wallOffset + elapsed();
        for (const auto& [name, value] : baselineLoss)
            row["baseline/" + name] = value;
        for (const auto& [name, value] : fittedToMetrics(fitted))
            row[name] = value;
        if (tc.curriculum.enabled) {
            // Size of the latest training batch (step 0: of the first one).
            const CurriculumStage stage = curriculumStage(cfg, std::max<int64_t>(step - 1, 0));
            row["curriculum/dims"] = double(stage.dims);
            row["curriculum/points"] = double(stage.n_context + 1);
        }
        for (const auto& reference : cfg.eval.alignment) {
            const AlignmentMetrics a = alignmentMetrics(
                model.predict, [&](const PromptBatch& b) { return predictBaseline(reference, b, cfg, fitted); },
                evalSet);
            const std::string prefix = "alignment/" + reference + "/";
            row[prefix + "prediction_difference"] = a.prediction_difference;
            row[prefix + "model_cosine"] = a.model_cosine;
            row[prefix + "model_difference"] = a.model_difference;
            row[prefix + "relative_model_difference"] = a.relative_model_difference;
        }
        pending.push_back(row);
        CheckpointData cp;
        if (withCheckpoint) {
            cp.step = step;
            cp.train_loss = row["train_loss"];
            cp.wall_time_s = row["wall_time_s"];
            cp.params = paramsToArrays(*model.module);
            saveOptimizerState(*optimizer, *model.module, cp);
        }
        commitToExperimentFile(out, pending, withCheckpoint ? &cp : nullptr,
                               truncatePending ? resumeFrom.step : -1);
        truncatePending = false;
        pending.clear();
        if (withCheckpoint)
            lastCheckpoint = step;
        progress.evaluated = true;
        progress.eval_loss = eval;
        progress.checkpointed = withCheckpoint;
        progress.checkpoint_train_loss = row["train_loss"];
        progress.wall_time_s = row["wall_time_s"];
        result.eval_loss = eval;
        lossSum = 0.0;
        lossCount = 0;
    };

    if (!resuming) {
        // Step 0: the untrained model, so curves and the checkpoint timeline start at initialisation.
        double initialLoss;
        {
            torch::NoGradGuard guard;
            PromptBatch b = samplePrompts(trainingTask(cfg, 0), tc.batch_size, seeds::train(cfg.seed, 0),
                                          torch::kFloat32, device);
            initialLoss = halfMse(model.predict(b), b.queryY()).item<double>();
        }
        progress.train_loss = initialLoss;
        evaluateAndCommit(true, initialLoss);
    }

    model.module->train();
    bool stopped = !report(TrainProgress::Phase::Training, "training");
    const auto params = model.module->parameters();
    while (!stopped && step < totalSteps) {
        const double lr = learningRate(tc, step);
        setLearningRate(*optimizer, lr);
        // The curriculum stage is a function of the step alone, so a resumed run draws the same prompts.
        PromptBatch batch = samplePrompts(trainingTask(cfg, step), tc.batch_size, seeds::train(cfg.seed, step),
                                          torch::kFloat32, device);
        // Models that predict at every prefix learn from all of them (Garg et al.: MSE over all positions).
        torch::Tensor loss = model.predict_all ? halfMse(model.predict_all(batch).flatten(), batch.y.flatten())
                                               : halfMse(model.predict(batch), batch.queryY());
        optimizer->zero_grad();
        loss.backward();
        const double maxNorm = tc.grad_clip > 0 ? tc.grad_clip : std::numeric_limits<double>::infinity();
        const double gradNorm = torch::nn::utils::clip_grad_norm_(params, maxNorm);
        const double lossValue = loss.item<double>();
        if (!std::isfinite(lossValue) || !std::isfinite(gradNorm))
            throw Error("training diverged at step " + std::to_string(step + 1) + ": loss = "
                        + std::to_string(lossValue) + ", gradient norm = " + std::to_string(gradNorm)
                        + "; the last checkpoint (step " + std::to_string(lastCheckpoint) + ") in " + out
                        + " is intact and resumable; lower training.lr or set training.grad_clip");
        optimizer->step();
        ++step;
        lossSum += lossValue;
        ++lossCount;
        lastGradNorm = gradNorm;
        lastLr = lr;

        progress.step = step;
        progress.train_loss = lossValue;
        progress.lr = lr;
        progress.grad_norm = gradNorm;
        progress.evaluated = false;
        progress.checkpointed = false;
        const bool last = step == totalSteps;
        const bool checkpointNow = last || step % tc.checkpoint_every == 0;
        if (checkpointNow || step % tc.eval_every == 0)
            evaluateAndCommit(checkpointNow, lossValue);
        stopped = !report(TrainProgress::Phase::Training, "training");
        if (stopped && lastCheckpoint != step)
            evaluateAndCommit(true, lossValue);  // stop: keep everything up to this step
    }

    result.final_step = step;
    result.stopped = stopped && step < totalSteps;
    result.baselines = baselineLoss;
    if (result.eval_loss == 0.0 && !progress.evaluated)
        result.eval_loss = evalLoss(model, evalSet);
    progress.evaluated = false;
    progress.checkpointed = false;
    report(TrainProgress::Phase::Finished, result.stopped ? "stopped" : "finished");
    return result;
}

} // namespace icl
