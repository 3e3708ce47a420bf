#pragma once
// Linear probes on every layer of a trained GPT-2 (Guo et al. 2023, docs/science.md §2). Torch-free facade.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/types/probe.h"

namespace icl {

struct ProbeOptions {
    int64_t checkpoint_step = -1;     ///< -1 = last checkpoint
    std::string target = "phi";       ///< "x", "phi" (Φ*(x_i); representation tasks), "y", "oracle", "gd_1"
    std::string positions = "x";      ///< "x" (x_i tokens), "y" (y_i tokens) or "query" (the last token)
    int64_t n_fit = 512;              ///< prompts the probes are fitted on
    int64_t n_test = 512;             ///< other prompts they are scored on
    uint64_t seed = 0;                ///< prompt seed (0: streams derived from the experiment seed)
    bool store = true;                ///< store under /analysis/probe/<id>
    int threads = 0;
};

/// Closed-form ridge probes (λ by 5-fold cross-validation) from the residual stream after the
/// embedding and after each block (activations `embed`, `resid_post.{l}`) at the chosen positions to the
/// chosen target; fitted on one set of prompts, scored on another (normalised MSE = test MSE / test
/// target variance). Targets at example i: x_i, Φ*(x_i), y_i, or the prediction of y_i by the oracle
/// (ridge on Φ*, λ = σ²/τ²) or by one GD step (the run's η) from the i − 1 earlier examples; at the query
/// position the ones of the query. Prompts: fit samplePrompts(task, n_fit, mixSeed(s, 0x9B0E0001)), test
/// samplePrompts(task, n_test, mixSeed(s, 0x9B0E0002)), s = seed or, when 0, the experiment's seed; the
/// model runs on them in forward passes of kProbeFirstLookPrompts prompts. Throws icl::Error for a model
/// that is not gpt2, a target the task lacks (phi, oracle without a representation) or an unknown name.
/// Thread affinity: worker thread.
ProbeCurve computeProbe(const std::string& path, const ProbeOptions& options);

/// Prompts of the first look computeProbes shows first (per set: fit and test); also the chunk size of
/// its forward passes.
inline constexpr int64_t kProbeFirstLookPrompts = 16;

/// computeProbe for several targets (options.target is ignored) from one forward pass over the fit prompts
/// and one over the test prompts (each curve equals computeProbe's for its target). Curves come back in
/// `targets` order; a target that fails (e.g. phi without Φ*) is left out and its icl::Error message appended
/// to `errors` (thrown when `errors` is null); errors of the run itself are always thrown. `progress` gets
/// (done, total) and returns false to cancel: icl::Error("cancelled"). When `first_look` is given and either
/// set has more than kProbeFirstLookPrompts prompts, it first receives the curves of the first
/// kProbeFirstLookPrompts fit and test prompts (reused by the full result). With options.store each full
/// curve is stored as computeProbe stores it. Thread affinity: worker thread (the callbacks run on it).
std::vector<ProbeCurve> computeProbes(const std::string& path, const ProbeOptions& options,
                                      const std::vector<std::string>& targets,
                                      std::vector<std::string>* errors = nullptr,
                                      const std::function<bool(int64_t, int64_t)>& progress = {},
                                      const std::function<void(const std::vector<ProbeCurve>&)>& first_look = {});

} // namespace icl
