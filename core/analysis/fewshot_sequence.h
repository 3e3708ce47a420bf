#pragma once
// Sequence viewer of a few-shot classification run (Chan et al. 2022, docs/science.md §4): one sampled training
// or evaluation sequence and a checkpoint's prediction at its query. Torch-free facade for the GUI's
// ICL vs IWL page (Sequence tab) and `icl-cli analyze RUN.h5 icl-iwl --show-sequence KIND`.
//
// Intended usage (on a worker thread):
//     const icl::FewShotSequence s = icl::sampleFewShotSequence("run.h5", -1, icl::FewShotSequenceKind::Icl, 7);
//     s.items[i].exemplar, s.items[i].label   // the 8 in-context pairs, then the query (s.items.back())
//     s.predicted_label, s.topLabels(5)       // the model's answer and its most probable labels

#include <cstdint>
#include <string>

#include "core/types/fewshot_sequence.h"

namespace icl {

/// Draws one sequence of `kind` with index `seed` from the task of the few-shot classification run at `path`
/// (its class split, labels and exemplar source, rebuilt from the stored config as in training) and runs
/// checkpoint `step` (−1 = last) on it: the same forward and logits that the ICL/IWL metrics (computeIclIwl,
/// the trainer's evaluation) read, softmax in float64. The draw is FewShotClassification::sampleTraining,
/// sampleIclEval or sampleIwlEval with batch size 1 and index `seed` (so the same arguments give the same
/// sequence, and "icl"/"iwl" with seed s show the first sequence of the evaluation set with index s);
/// training_bursty / training_iid draw from the same task with p_bursty set to 1 / 0. Exemplars are the
/// float32 values the model reads, [D] or [rows, cols] row-major, within-class noise included.
/// Throws icl::Error for a file that is not a few-shot classification run, an absent checkpoint, or an ICL
/// sequence of a run with fewer than 2 holdout classes. Loads the checkpoint on every call (blocks on disk
/// I/O); any thread.
FewShotSequence sampleFewShotSequence(const std::string& path, int64_t step, FewShotSequenceKind kind, uint64_t seed);

} // namespace icl
