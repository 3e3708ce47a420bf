#pragma once
// ICL curve (Garg et al. 2022): error at each number of in-context examples for the model and
// every baseline, on the same fresh prompts, with bootstrap 95% confidence intervals.
// Torch-free header.

#include <cstdint>
#include <functional>
#include <string>

#include "core/types/icl_curve.h"

namespace icl {

struct IclCurveOptions {
    int64_t checkpoint_step = -1;  ///< -1 = last checkpoint
    int64_t n_prompts = 0;         ///< 0 = the run's eval.n_prompts
    /// 0 = the run's own fixed evaluation prompts (so the model's error at N equals its eval loss);
    /// any other value draws fresh prompts from that seed
    uint64_t seed = 0;
    int threads = 0;
    bool store = false;            ///< also store the result under /analysis/icl_curve/<id>
};

/// Computes the curve for the experiment at `path`. The progress callback gets (done, total) and
/// returns false to cancel (then icl::Error("cancelled") is thrown).
/// Thread affinity: worker thread.
IclCurve computeIclCurve(const std::string& path, const IclCurveOptions& options,
                         const std::function<bool(int64_t, int64_t)>& progress = {});

} // namespace icl
