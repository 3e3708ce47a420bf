#pragma once
// Loading a checkpoint of a few-shot classification run (Chan et al. 2022, docs/science.md §4) into a live
// sequence classifier, for the ICL vs IWL evaluation and the sequence viewer. Core-internal (LibTorch).

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/sequence_classifier.h"
#include "core/tasks/fewshot_classification.h"

namespace icl {

/// A few-shot classification checkpoint ready for evaluation: the run's config and summary, its task
/// (class split, labels and exemplar source rebuilt from the config and experiment seed, as in training) and
/// the classifier with the checkpoint's parameters (eval mode, CPU, float32). `source` is the task's loaded
/// exemplar source, to share with variants of the task (FewShotClassification's second argument); the last image
/// source loaded is kept and reused while its options and files (paths, sizes, modification times) are unchanged.
struct LoadedClassificationRun {
    RunSummary summary;
    ExperimentConfig config;
    int64_t step = 0;
    std::shared_ptr<const ExemplarSource> source;
    std::shared_ptr<const FewShotClassification> task;
    SequenceClassifier model{nullptr};
};

/// Loads checkpoint `step` (−1 = last) of the few-shot classification run at `path`. `analysis` names the
/// caller in the error for a run of another task ("the ICL vs IWL evaluation"). Throws icl::Error for a file
/// that is not a few-shot classification run, holds no checkpoint, lacks `step`, or whose parameters do not fit
/// its config (and for exemplar files that cannot be loaded). Blocks on disk I/O; any thread.
LoadedClassificationRun loadClassificationRun(const std::string& path, int64_t step, const std::string& analysis);

} // namespace icl
