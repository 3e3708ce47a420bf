#pragma once
// ICL curve (Garg et al. 2022): error at each number of in-context examples n for the model and
// every baseline, on the same prompts, with bootstrap 95% confidence intervals. As in Garg et al.,
// the point at n is the prediction of y_{n+1} at x_{n+1} from the first n examples (at n = N, the
// prompt's query), so a causal model's whole curve comes from one forward pass.
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
/// returns false to cancel (then icl::Error("cancelled") is thrown). Over more than 64 prompts,
/// `preview` (when given) first receives the curve on the first 64 prompts (the same draws) — a first
/// look within about a second on the paper-scale models, before the full pass (for a causal model, the
/// first 64 prompts' forward pass is reused by the full curve).
/// Thread affinity: worker thread (both callbacks run on it).
IclCurve computeIclCurve(const std::string& path, const IclCurveOptions& options,
                         const std::function<bool(int64_t, int64_t)>& progress = {},
                         const std::function<void(const IclCurve&)>& preview = {});

} // namespace icl
