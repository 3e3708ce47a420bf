#pragma once
// Training loop of the few-shot classification task (Chan et al. 2022, docs/science.md §4). Core-internal
// (LibTorch); reached through train() (core/training/trainer.h) for task.kind "fewshot_classification".

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/sequence_classifier.h"
#include "core/tasks/fewshot_classification.h"
#include "core/training/trainer.h"

namespace icl {

/// Accuracy of a classifier on one evaluation set (docs/science.md §4, "Evaluation").
struct ClassificationMetrics {
    double loss = 0.0;             ///< mean cross-entropy of the query label over the whole vocabulary
    double accuracy = 0.0;         ///< argmax over all labels equals the query label
    double accuracy_01 = 0.0;      ///< argmax over labels {0, 1} only equals the query label (ICL evaluation; chance 0.5)
    double in_context_rate = 0.0;  ///< the argmax over all labels is a label present in the context
};

/// Evaluates query logits [B, n_labels] against `batch` (labels [B, L+1]). Pure function of its inputs.
ClassificationMetrics classificationMetrics(const torch::Tensor& logits, const FewShotBatch& batch);

/// Evaluates `model` on `batch` in chunks (no gradients, eval mode; restores train mode).
ClassificationMetrics evaluateClassifier(SequenceClassifierImpl& model, const FewShotBatch& batch);

/// Trains the sequence classifier of `config` on its FewShotClassification task and writes the
/// experiment file (already created, or `resume_from` its last checkpoint): batch s is
/// task.sampleTraining(batch_size, s), loss = cross-entropy on the query label. Every eval_every steps
/// the metrics eval_loss / eval_accuracy (fresh training-distribution sequences), icl_accuracy (holdout
/// classes, labels {0, 1}, argmax over {0, 1}), icl_accuracy_all_labels, icl_in_context_rate,
/// iwl_accuracy, iwl_in_context_rate are stored, each on eval.n_prompts fixed sequences.
/// Throws icl::Error on divergence (the last checkpoint stays intact). Thread affinity: as train().
TrainResult trainClassification(const ExperimentConfig& config, const TrainOptions& options,
                                const CheckpointData* resume_from, const torch::Device& device,
                                const TrainCallback& callback);

} // namespace icl
