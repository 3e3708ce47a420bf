#pragma once
// ICL vs IWL evaluation of a few-shot classification checkpoint (Chan et al. 2022, docs/science.md §4).
// Torch-free facade for `icl-cli analyze RUN.h5 icl-iwl` and the GUI's ICL vs IWL page.

#include <cstdint>
#include <functional>
#include <string>

#include "core/types/icl_iwl.h"

namespace icl {

struct IclIwlOptions {
    int64_t checkpoint_step = -1;  ///< −1 = last checkpoint
    int64_t n_sequences = 0;       ///< sequences per evaluation; 0 = the run's eval.n_prompts
    /// 0 = the run's own evaluation sequences (so the result equals the metrics stored at that step); any other
    /// value draws fresh sequences from that index
    uint64_t seed = 0;
    int threads = 0;               ///< LibTorch intra-op threads (0 = keep)
};

/// Evaluates checkpoint `options.checkpoint_step` of the few-shot classification run at `path` on ICL
/// sequences (2 holdout classes, labels {0, 1}) and IWL sequences (training classes, no support), and with a
/// common / rare split (task.n_common_classes > 0) on ICL and IWL sequences of the common and of the rare classes.
/// The progress callback gets (done, total) and returns false to cancel (icl::Error("cancelled")). Throws
/// icl::Error for a file that is not a few-shot classification run or an absent checkpoint. `first_look`
/// (when given) receives the result as soon as the ICL sequences are evaluated, with the IWL and common /
/// rare fields NaN (half the work). Thread affinity: worker thread (the callbacks run on it).
IclIwlResult computeIclIwl(const std::string& path, const IclIwlOptions& options,
                           const std::function<bool(int64_t, int64_t)>& progress = {},
                           const std::function<void(const IclIwlResult&)>& first_look = {});

} // namespace icl
