#include "core/analysis/classification_run.h"

#include "core/error.h"
#include "core/training/checkpoint.h"

namespace icl {

LoadedClassificationRun loadClassificationRun(const std::string& path, int64_t step, const std::string& analysis)
{
    LoadedClassificationRun r;
    r.summary = readRunSummary(path);
    try {
        r.config = parseConfig(nlohmann::json::parse(r.summary.config_json));
    } catch (const nlohmann::json::exception&) {
        throw Error(path + ": damaged /config (not JSON)");
    }
    if (r.config.task.kind != "fewshot_classification")
        throw Error(path + ": " + analysis + " needs a few-shot classification run (task.kind "
                    "\"fewshot_classification\"), this one is \"" + r.config.task.kind + "\"");
    if (r.summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    if (step < -1)
        throw Error("checkpoint " + std::to_string(step) + ": expected a step >= 0 (or -1 for the last)");
    r.step = step < 0 ? r.summary.checkpoints.back().step : step;
    const CheckpointData cp = readCheckpoint(path, r.step);
    const FewShotOptions options = fewShotOptions(r.config.task, r.config.seed);
    r.source = makeExemplarSource(options);
    r.task = std::make_shared<const FewShotClassification>(options, r.source);
    r.model = makeSequenceClassifier(r.config, r.task->exemplarShape(), 0);
    loadParams(*r.model, cp.params, path + " (checkpoint " + std::to_string(r.step) + ")");
    r.model->eval();
    return r;
}

} // namespace icl
