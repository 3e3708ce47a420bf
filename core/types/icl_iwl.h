#pragma once
// Torch-free result of the ICL-vs-IWL evaluation of a few-shot classification run (Chan et al. 2022).

#include <cstdint>

namespace icl {

/// Accuracies of one checkpoint on fresh (or the run's own) evaluation sequences (docs/science.md §4).
struct IclIwlResult {
    int64_t checkpoint_step = 0;
    int64_t n_sequences = 0;               ///< per evaluation
    double icl_accuracy = 0.0;             ///< holdout classes, 2-way 4-shot, argmax over labels {0, 1} (chance 0.5)
    double icl_accuracy_all_labels = 0.0;  ///< the same sequences, argmax over the whole vocabulary
    double icl_in_context_rate = 0.0;      ///< the output is a label present in the context
    double iwl_accuracy = 0.0;             ///< training classes, no support in the context, argmax over all labels
    double iwl_in_context_rate = 0.0;
    /// With a common / rare split of the training classes (task.n_common_classes > 0; the authors' fewshot_common /
    /// _rare and no_support_common / _rare evaluations); otherwise false and the four accuracies 0.
    bool common_rare_split = false;
    double icl_accuracy_common = 0.0;  ///< 2 common classes, 4 shots each, labels {0, 1}, argmax over {0, 1}
    double icl_accuracy_rare = 0.0;    ///< the same on rare classes
    double iwl_accuracy_common = 0.0;  ///< query and context from common classes, no support, argmax over all labels
    double iwl_accuracy_rare = 0.0;    ///< the same on rare classes
};

} // namespace icl
