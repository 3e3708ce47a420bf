#include "core/training/classification_trainer.h"

#include <cmath>

#include "core/error.h"
#include "core/training/checkpoint.h"
#include "core/training/optim.h"
#include "core/tasks/seeds.h"
#include "core/training/training_loop.h"

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
    TrainingLoop loop(tc, options, resumeFrom, callback);
    const FewShotClassification task(fewShotOptions(cfg.task, cfg.seed));
    SequenceClassifier model = makeSequenceClassifier(cfg, task.exemplarShape(), seeds::init(cfg.seed));
    model->to(device);
    auto optimizer = makeOptimizer(tc, model->parameters());
    if (resumeFrom) {
        const std::string where = out + " (checkpoint " + std::to_string(loop.step()) + ")";
        loadParams(*model, resumeFrom->params, where);
        loadOptimizerState(*optimizer, *model, *resumeFrom, where);
    }

    if (!loop.report(TrainProgress::Phase::Preparing,
                     "drawing " + std::to_string(cfg.eval.n_prompts) + " evaluation sequences of each kind"))
        return loop.stoppedBeforeTraining(device.str());
    const int64_t nEval = cfg.eval.n_prompts;
    const FewShotBatch evalSet = task.sampleTraining(nEval, kEvalBatchIndex, torch::kFloat32, device);
    const FewShotBatch iclSet = task.sampleIclEval(nEval, 0, torch::kFloat32, device);
    const FewShotBatch iwlSet = task.sampleIwlEval(nEval, 0, torch::kFloat32, device);
    // With a common / rare split: ICL and IWL on each set as well (the authors' fewshot_common / _rare and
    // no_support_common / _rare evaluations).
    std::vector<std::pair<std::string, FewShotBatch>> splitSets;
    if (task.hasCommonRareSplit())
        for (FewShotClassSet set : {FewShotClassSet::Common, FewShotClassSet::Rare}) {
            const std::string name = fewShotClassSetName(set);
            splitSets.push_back({"icl_accuracy_" + name, task.sampleIclEval(set, nEval, 0, torch::kFloat32, device)});
            splitSets.push_back({"iwl_accuracy_" + name, task.sampleIwlEval(set, nEval, 0, torch::kFloat32, device)});
        }

    TrainingLoop::Hooks hooks;
    hooks.loss = [&](int64_t step) {
        const FewShotBatch b = task.sampleTraining(tc.batch_size, uint64_t(step), torch::kFloat32, device);
        return torch::nn::functional::cross_entropy(model->forward(b), b.queryLabels());
    };
    hooks.evaluate = [&](MetricsRow& row) {
        const ClassificationMetrics e = evaluateClassifier(*model, evalSet);
        if (!std::isfinite(e.loss))
            return e.loss;  // diverged: the loop stops with a message
        const ClassificationMetrics icl = evaluateClassifier(*model, iclSet);
        const ClassificationMetrics iwl = evaluateClassifier(*model, iwlSet);
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
        return e.loss;
    };
    return loop.run(*model, *optimizer, hooks, device.str());
}

} // namespace icl
