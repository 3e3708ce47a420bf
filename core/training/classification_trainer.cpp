#include "core/training/classification_trainer.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/training/checkpoint.h"
#include "core/training/optim.h"
#include "core/training/seeds.h"

namespace icl {

namespace {

/// Index of the fixed training-distribution evaluation batch: far above any training step.
constexpr uint64_t kEvalBatchIndex = seeds::kInitStream + 1;

} // namespace

ClassificationMetrics classificationMetrics(const torch::Tensor& logits, const FewShotBatch& batch)
{
    const int64_t B = logits.size(0);
    const torch::Tensor target = batch.queryLabels().to(logits.device());
    const torch::Tensor lg = logits.to(torch::kFloat64);
    ClassificationMetrics m;
    m.loss = torch::nn::functional::cross_entropy(lg, target).item<double>();
    const torch::Tensor predicted = lg.argmax(1);                                            // [B]
    m.accuracy = predicted.eq(target).to(torch::kFloat64).mean().item<double>();
    m.accuracy_01 = lg.narrow(1, 0, 2).argmax(1).eq(target).to(torch::kFloat64).mean().item<double>();
    const torch::Tensor inContext
        = batch.contextLabels().to(logits.device()).eq(predicted.unsqueeze(1)).any(1);      // [B]
    m.in_context_rate = inContext.to(torch::kFloat64).sum().item<double>() / double(B);
    return m;
}

ClassificationMetrics evaluateClassifier(SequenceClassifierImpl& model, const FewShotBatch& batch)
{
    torch::NoGradGuard guard;
    model.eval();
    const int64_t n = batch.batchSize(), chunk = 2048;
    std::vector<torch::Tensor> logits;
    for (int64_t b = 0; b < n; b += chunk) {
        const int64_t e = std::min(n, b + chunk);
        FewShotBatch part{batch.exemplars.narrow(0, b, e - b), batch.labels.narrow(0, b, e - b),
                          batch.classes.narrow(0, b, e - b), batch.bursty.narrow(0, b, e - b)};
        logits.push_back(model.forward(part));
    }
    model.train();
    return classificationMetrics(torch::cat(logits, 0), batch);
}

TrainResult trainClassification(const ExperimentConfig& cfg, const TrainOptions& options,
                                const CheckpointData* resumeFrom, const torch::Device& device,
                                const TrainCallback& callback)
{
    const std::string& out = options.out_path;
    const TrainingConfig& tc = cfg.training;
    const int64_t totalSteps = tc.steps;
    const bool resuming = resumeFrom != nullptr;
    int64_t step = resuming ? resumeFrom->step : 0;
    const double wallOffset = resuming ? resumeFrom->wall_time_s : 0.0;
    const auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };

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

    const FewShotClassification task(fewShotOptions(cfg.task, cfg.seed));
    SequenceClassifier model = makeSequenceClassifier(cfg, task.exemplarShape(), seeds::init(cfg.seed));
    model->to(device);
    auto optimizer = makeOptimizer(tc, model->parameters());
    if (resuming) {
        const std::string where = out + " (checkpoint " + std::to_string(step) + ")";
        loadParams(*model, resumeFrom->params, where);
        loadOptimizerState(*optimizer, *model, *resumeFrom, where);
    }

    TrainResult result;
    result.device = device.str();
    if (!report(TrainProgress::Phase::Preparing,
                "drawing " + std::to_string(cfg.eval.n_prompts) + " evaluation sequences of each kind")) {
        result.final_step = step;
        result.stopped = true;
        return result;
    }
    const int64_t nEval = cfg.eval.n_prompts;
    const FewShotBatch evalSet = task.sampleTraining(nEval, kEvalBatchIndex, torch::kFloat32, device);
    const FewShotBatch iclSet = task.sampleIclEval(nEval, 0, torch::kFloat32, device);
    const FewShotBatch iwlSet = task.sampleIwlEval(nEval, 0, torch::kFloat32, device);
    // With a common / rare split: ICL and IWL on each set as well (the authors' fewshot_common / _rare and
    // no_support_common / _rare evaluations).
    const bool split = task.hasCommonRareSplit();
    std::vector<std::pair<std::string, FewShotBatch>> splitSets;
    if (split)
        for (FewShotClassSet set : {FewShotClassSet::Common, FewShotClassSet::Rare}) {
            const std::string name = fewShotClassSetName(set);
            splitSets.push_back({"icl_accuracy_" + name, task.sampleIclEval(set, nEval, 0, torch::kFloat32, device)});
            splitSets.push_back({"iwl_accuracy_" + name, task.sampleIwlEval(set, nEval, 0, torch::kFloat32, device)});
        }

    std::vector<MetricsRow> pending;
    double lossSum = 0.0, lastGradNorm = 0.0, lastLr = learningRate(tc, step);
    int64_t lossCount = 0;
    bool truncatePending = resuming;
    int64_t lastCheckpoint = step;

    auto evaluateAndCommit = [&](bool withCheckpoint, double batchLoss) {
        const ClassificationMetrics e = evaluateClassifier(*model, evalSet);
        if (!std::isfinite(e.loss))
            throw Error("training diverged at step " + std::to_string(step) + ": eval loss is " + std::to_string(e.loss)
                        + "; the last checkpoint (step " + std::to_string(lastCheckpoint) + ") in " + out
                        + " is intact and resumable; lower training.lr or set training.grad_clip");
        const ClassificationMetrics icl = evaluateClassifier(*model, iclSet);
        const ClassificationMetrics iwl = evaluateClassifier(*model, iwlSet);
        MetricsRow row;
        row["step"] = double(step);
        row["train_loss"] = lossCount ? lossSum / double(lossCount) : batchLoss;
        row["eval_loss"] = e.loss;
        row["eval_accuracy"] = e.accuracy;
        row["icl_accuracy"] = icl.accuracy_01;
        row["icl_accuracy_all_labels"] = icl.accuracy;
        row["icl_in_context_rate"] = icl.in_context_rate;
        row["iwl_accuracy"] = iwl.accuracy;
        row["iwl_in_context_rate"] = iwl.in_context_rate;
        for (const auto& [key, set] : splitSets) {
            const ClassificationMetrics m = evaluateClassifier(*model, set);
            row[key] = key.rfind("icl_", 0) == 0 ? m.accuracy_01 : m.accuracy;
        }
        row["lr"] = lastLr;
        row["grad_norm"] = lastGradNorm;
        row["wall_time_s"] = wallOffset + elapsed();
        pending.push_back(row);
        CheckpointData cp;
        if (withCheckpoint) {
            cp.step = step;
            cp.train_loss = row["train_loss"];
            cp.wall_time_s = row["wall_time_s"];
            cp.params = paramsToArrays(*model);
            saveOptimizerState(*optimizer, *model, cp);
        }
        commitToExperimentFile(out, pending, withCheckpoint ? &cp : nullptr, truncatePending ? resumeFrom->step : -1);
        truncatePending = false;
        pending.clear();
        if (withCheckpoint)
            lastCheckpoint = step;
        progress.evaluated = true;
        progress.eval_loss = e.loss;
        progress.checkpointed = withCheckpoint;
        progress.checkpoint_train_loss = row["train_loss"];
        progress.wall_time_s = row["wall_time_s"];
        result.eval_loss = e.loss;
        lossSum = 0.0;
        lossCount = 0;
    };

    auto batchLoss = [&](int64_t s) {
        const FewShotBatch b = task.sampleTraining(tc.batch_size, uint64_t(s), torch::kFloat32, device);
        return torch::nn::functional::cross_entropy(model->forward(b), b.queryLabels());
    };

    if (!resuming) {
        // Step 0: the untrained model, so curves and the checkpoint timeline start at initialisation.
        double initialLoss;
        {
            torch::NoGradGuard guard;
            initialLoss = batchLoss(0).item<double>();
        }
        progress.train_loss = initialLoss;
        evaluateAndCommit(true, initialLoss);
    }

    model->train();
    bool stopped = !report(TrainProgress::Phase::Training, "training");
    const auto params = model->parameters();
    while (!stopped && step < totalSteps) {
        const double lr = learningRate(tc, step);
        setLearningRate(*optimizer, lr);
        torch::Tensor loss = batchLoss(step);
        optimizer->zero_grad();
        loss.backward();
        const double maxNorm = tc.grad_clip > 0 ? tc.grad_clip : std::numeric_limits<double>::infinity();
        const double gradNorm = torch::nn::utils::clip_grad_norm_(params, maxNorm);
        const double lossValue = loss.item<double>();
        if (!std::isfinite(lossValue) || !std::isfinite(gradNorm))
            throw Error("training diverged at step " + std::to_string(step + 1) + ": loss = " + std::to_string(lossValue)
                        + ", gradient norm = " + std::to_string(gradNorm) + "; the last checkpoint (step "
                        + std::to_string(lastCheckpoint) + ") in " + out
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
    if (result.eval_loss == 0.0 && !progress.evaluated)
        result.eval_loss = evaluateClassifier(*model, evalSet).loss;
    progress.evaluated = false;
    progress.checkpointed = false;
    report(TrainProgress::Phase::Finished, result.stopped ? "stopped" : "finished");
    return result;
}

} // namespace icl
