#pragma once
// Torch-free results of linear probes (Guo et al. 2023, docs/science.md §2): how well a closed-form ridge
// probe decodes a target (x_i, Φ*(x_i), y_i, the oracle's prediction, …) from the residual stream after
// the embedding and after each block, fitted on one set of prompts and scored on another.

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// Test-set score of one probe. Definitions (Y the test targets [n_test, q], Ŷ the probe's predictions):
///   mse             = mean over rows and target dimensions of (Ŷ − Y)²,
///   target_variance = mean over target dimensions of the per-dimension population variance of Y
///                     (mean squared deviation from the test set's own mean, divisor n_test),
///   normalised_mse  = mse / target_variance: 0 = perfect, 1 = no better than predicting the test mean,
///   r2              = 1 − normalised_mse (the variance-weighted R²; it equals the usual R² when q = 1).
/// normalised_mse and r2 are NaN when the test targets are constant (target_variance = 0).
struct ProbeScore {
    double normalised_mse = 0.0;
    double mse = 0.0;
    double r2 = 0.0;
    double target_variance = 0.0;
    double lambda = 0.0;   ///< ridge penalty chosen by cross-validation on the fit set
    double cv_mse = 0.0;   ///< mean validation MSE of that λ over the folds
};

/// Normalised probe error per layer, for one target at one kind of position — one line of the Probes
/// page and of `icl-cli analyze … probe`. All per-layer vectors have layer_labels.size() entries.
struct ProbeCurve {
    std::string target;                      ///< "x", "phi", "y", "oracle", "gd_1", …
    std::string positions;                   ///< "x", "y", "query"
    std::vector<std::string> layer_labels;   ///< "embed", "block 0", "block 1", …
    std::vector<double> normalised_mse;      ///< test MSE / test target variance (1 = no information)
    std::vector<double> mse;                 ///< plain test MSE
    std::vector<double> r2;                  ///< 1 − normalised_mse
    std::vector<double> lambda;              ///< λ chosen by cross-validation, per layer
    int64_t n_fit = 0;                       ///< rows (token positions) the probes were fitted on
    int64_t n_test = 0;                      ///< rows they were scored on
    int64_t checkpoint_step = 0;
};

/// Labels of the residual-stream layers of a model with `n_blocks` blocks: "embed", "block 0", …,
/// "block {n_blocks − 1}" (n_blocks + 1 labels; activation names `embed`, `resid_post.{l}`).
inline std::vector<std::string> probeLayerLabels(int64_t n_blocks)
{
    std::vector<std::string> labels{"embed"};
    for (int64_t l = 0; l < n_blocks; ++l)
        labels.push_back("block " + std::to_string(l));
    return labels;
}

} // namespace icl
