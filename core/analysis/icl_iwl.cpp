#include "core/analysis/icl_iwl.h"

#include <limits>

#include "core/analysis/classification_run.h"
#include "core/error.h"
#include "core/training/classification_trainer.h"
#include "core/runtime/device.h"

namespace icl {

IclIwlResult computeIclIwl(const std::string& path, const IclIwlOptions& options,
                           const std::function<bool(int64_t, int64_t)>& progress,
                           const std::function<void(const IclIwlResult&)>& first_look)
{
    if (options.threads > 0)
        configureThreads(options.threads);
    LoadedClassificationRun run
        = loadClassificationRun(path, options.checkpoint_step, "the ICL vs IWL evaluation");
    const FewShotClassification& task = *run.task;
    SequenceClassifierImpl& model = *run.model;
    IclIwlResult r;
    r.checkpoint_step = run.step;
    r.n_sequences = options.n_sequences > 0 ? options.n_sequences : run.config.eval.n_prompts;
    r.common_rare_split = task.hasCommonRareSplit();
    const int64_t total = r.common_rare_split ? 6 : 2;
    auto step = [&](int64_t done) {
        if (progress && !progress(done, total))
            throw Error("cancelled");
    };
    step(0);
    const ClassificationMetrics icl = evaluateClassifier(model, task.sampleIclEval(r.n_sequences, options.seed));
    step(1);
    if (first_look) {
        IclIwlResult first = r;
        first.icl_accuracy = icl.accuracy_01;
        first.icl_accuracy_all_labels = icl.accuracy;
        first.icl_in_context_rate = icl.in_context_rate;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        first.iwl_accuracy = first.iwl_in_context_rate = nan;
        first.icl_accuracy_common = first.icl_accuracy_rare = first.iwl_accuracy_common = first.iwl_accuracy_rare = nan;
        first_look(first);
    }
    const ClassificationMetrics iwl = evaluateClassifier(model, task.sampleIwlEval(r.n_sequences, options.seed));
    step(2);
    r.icl_accuracy = icl.accuracy_01;
    r.icl_accuracy_all_labels = icl.accuracy;
    r.icl_in_context_rate = icl.in_context_rate;
    r.iwl_accuracy = iwl.accuracy;
    r.iwl_in_context_rate = iwl.in_context_rate;
    if (r.common_rare_split) {
        const int64_t n = r.n_sequences;
        const uint64_t seed = options.seed;
        r.icl_accuracy_common
            = evaluateClassifier(model, task.sampleIclEval(FewShotClassSet::Common, n, seed)).accuracy_01;
        step(3);
        r.icl_accuracy_rare = evaluateClassifier(model, task.sampleIclEval(FewShotClassSet::Rare, n, seed)).accuracy_01;
        step(4);
        r.iwl_accuracy_common
            = evaluateClassifier(model, task.sampleIwlEval(FewShotClassSet::Common, n, seed)).accuracy;
        step(5);
        r.iwl_accuracy_rare = evaluateClassifier(model, task.sampleIwlEval(FewShotClassSet::Rare, n, seed)).accuracy;
        step(6);
    }
    return r;
}

} // namespace icl
