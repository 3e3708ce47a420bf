#pragma once
// Linear probes on every layer of a trained GPT-2 (Guo et al. 2023, PAPERS.md §2). Torch-free facade.

#include <cstdint>
#include <string>

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
/// position the ones of the query. Throws icl::Error for a model that is not gpt2, a target the task
/// lacks (phi, oracle without a representation) or an unknown name. Thread affinity: worker thread.
ProbeCurve computeProbe(const std::string& path, const ProbeOptions& options);

} // namespace icl
