#include "core/training/regression_evaluation.h"

#include <algorithm>

#include "core/metrics/alignment_metrics.h"
#include "core/io/kinds.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"  // samplePrompts of every regression task
#include "core/tasks/seeds.h"

namespace icl {

void storeFixedTaskArrays(const ExperimentConfig& config, const std::string& path)
{
    if (!isRepresentationTask(kindOf(config.task)))
        return;
    std::vector<NamedArray> arrays;
    const auto& reps = taskRepresentations(config.task);
    for (size_t k = 0; k < reps.size(); ++k)
        for (size_t l = 0; l < reps[k].layers.size(); ++l) {
            const torch::Tensor B = reps[k].layers[l].to(torch::kFloat32).contiguous();
            NamedArray a;
            a.name = "phi/" + std::to_string(k) + "/B_" + std::to_string(l + 1);
            a.shape = B.sizes().vec();
            a.data.assign(B.data_ptr<float>(), B.data_ptr<float>() + B.numel());
            arrays.push_back(std::move(a));
        }
    storeTaskArrays(path, arrays);
}

double evalLoss(const ModelHandle& model, const PromptBatch& eval)
{
    c10::InferenceMode guard;  // no graph, no version counters: evaluation only reads the model
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

RegressionEvaluation::RegressionEvaluation(const ExperimentConfig& config, const torch::Device& device)
    : m_config(config)
{
    const PromptBatch evalCpu = samplePrompts(config.task, config.eval.n_prompts, seeds::eval(config.seed));
    m_tuning = samplePrompts(config.task, config.eval.n_prompts, seeds::tuning(config.seed));
    m_fitted = fitBaselines(config, m_tuning, seeds::tuning(config.seed));
    for (const auto& name : baselineNames(config.eval))
        m_baselineLoss[name] = halfMse(predictBaseline(name, evalCpu, config, m_fitted).to(torch::kFloat64),
                                       evalCpu.queryY().to(torch::kFloat64))
                                   .item<double>();
    m_eval = evalCpu.to(device);
}

double RegressionEvaluation::evaluate(const ModelHandle& model, MetricsRow& row) const
{
    const double eval = evalLoss(model, m_eval);
    for (const auto& [name, value] : m_baselineLoss)
        row["baseline/" + name] = value;
    for (const auto& [name, value] : fittedToMetrics(m_fitted))
        row[name] = value;
    for (const auto& reference : m_config.eval.alignment) {
        const AlignmentMetrics a = alignmentMetrics(
            model.predict, [&](const PromptBatch& b) { return predictBaseline(reference, b, m_config, m_fitted); },
            m_eval);
        const std::string prefix = "alignment/" + reference + "/";
        row[prefix + "prediction_difference"] = a.prediction_difference;
        row[prefix + "model_cosine"] = a.model_cosine;
        row[prefix + "model_difference"] = a.model_difference;
        row[prefix + "relative_model_difference"] = a.relative_model_difference;
    }
    return eval;
}

} // namespace icl
