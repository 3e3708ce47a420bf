#pragma once
// Torch-free result of the ICL-curve analysis: error against number of in-context examples.

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// Squared error of one predictor at each prefix length, averaged over prompts.
struct IclCurveSeries {
    std::string name;              ///< "model", "zero", "least_squares", "ridge", "gd_1", ...
    std::vector<double> error;     ///< [n_examples.size()] mean loss (same normalisation as training)
    std::vector<double> ci_lower;  ///< bootstrap 95% interval of the mean
    std::vector<double> ci_upper;
};

struct IclCurve {
    std::vector<int64_t> n_examples;  ///< prefix lengths: 0..N for causal models (gpt2) on zero-mean-w tasks, else 1..N
    std::vector<IclCurveSeries> series;
    int64_t checkpoint_step = 0;
    int64_t n_prompts = 0;
    std::string loss_name;            ///< e.g. "0.5·squared error"
};

} // namespace icl
