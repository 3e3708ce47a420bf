#include "core/analysis/icl_iwl.h"

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/training/checkpoint.h"
#include "core/training/classification_trainer.h"
#include "core/training/device.h"

namespace icl {

IclIwlResult computeIclIwl(const std::string& path, const IclIwlOptions& options,
                           const std::function<bool(int64_t, int64_t)>& progress)
{
    const RunSummary summary = readRunSummary(path);
    ExperimentConfig config;
    try {
        config = parseConfig(nlohmann::json::parse(summary.config_json));
    } catch (const nlohmann::json::exception&) {
        throw Error(path + ": damaged /config (not JSON)");
    }
    if (config.task.kind != "fewshot_classification")
        throw Error(path + ": the ICL vs IWL evaluation needs a few-shot classification run (task.kind "
                    "\"fewshot_classification\"), this one is \"" + config.task.kind + "\"");
    if (summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    if (options.threads > 0)
        configureThreads(options.threads);
    IclIwlResult r;
    r.checkpoint_step = options.checkpoint_step < 0 ? summary.checkpoints.back().step : options.checkpoint_step;
    const CheckpointData cp = readCheckpoint(path, r.checkpoint_step);
    const FewShotClassification task(fewShotOptions(config.task, config.seed));
    SequenceClassifier model = makeSequenceClassifier(config, task.exemplarShape(), 0);
    loadParams(*model, cp.params, path + " (checkpoint " + std::to_string(r.checkpoint_step) + ")");
    model->eval();
    r.n_sequences = options.n_sequences > 0 ? options.n_sequences : config.eval.n_prompts;
    auto step = [&](int64_t done) {
        if (progress && !progress(done, 2))
            throw Error("cancelled");
    };
    step(0);
    const ClassificationMetrics icl = evaluateClassifier(*model, task.sampleIclEval(r.n_sequences, options.seed));
    step(1);
    const ClassificationMetrics iwl = evaluateClassifier(*model, task.sampleIwlEval(r.n_sequences, options.seed));
    step(2);
    r.icl_accuracy = icl.accuracy_01;
    r.icl_accuracy_all_labels = icl.accuracy;
    r.icl_in_context_rate = icl.in_context_rate;
    r.iwl_accuracy = iwl.accuracy;
    r.iwl_in_context_rate = iwl.in_context_rate;
    return r;
}

} // namespace icl
