#pragma once
// Linear probes (Guo et al. 2023, arXiv 2310.10616): closed-form ridge regression from a layer's activations
// to a target, λ chosen by K-fold cross-validation on the fit set, scored on held-out rows by normalised MSE.
// Objective, closed form and numerics: docs/science.md §2, "The probe's fit". Core-internal (LibTorch); pure
// tensor math. Shapes: features [n, p], targets [n, q] (any floating dtype, same device; p > n works).
// Errors: icl::Error naming the offending shape or value. Thread affinity: any thread; no shared state.
//
// Intended usage (rows = token positions of many prompts, flattened):
//     const ProbeScore s = scoreProbe(fit_h, fit_phi, test_h, test_phi);          // one layer
//     const std::vector<ProbeScore> per_layer = probeLayers(fit_hs, fit_phi, test_hs, test_phi);
//     const ProbeCurve curve = makeProbeCurve("phi", "x", per_layer, n_fit, n_test);

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/types/probe.h"

namespace icl {

/// A fitted probe: ŷ = Wᵀx + b.
struct RidgeProbe {
    torch::Tensor weights;  ///< W [p, q], float64
    torch::Tensor bias;     ///< b [q], float64
    double lambda = 0.0;
};

/// The default penalty grid: 10^-6, 10^-5, …, 10^3 (10 values).
std::vector<double> defaultLambdaGrid();

/// Closed-form ridge probe with an unpenalised intercept (objective above). `lambda` ≥ 0.
RidgeProbe fitRidgeProbe(const torch::Tensor& features, const torch::Tensor& targets, double lambda);

/// Predictions of `probe` for features [n, p]: [n, q], float64 on the features' device.
torch::Tensor predictProbe(const RidgeProbe& probe, const torch::Tensor& features);

/// Cross-validation curve of the penalty.
struct LambdaCv {
    std::vector<double> grid;      ///< the grid, sorted ascending, duplicates removed
    std::vector<double> mean_mse;  ///< [grid.size()] mean over folds of the fold's validation MSE
    double best_lambda = 0.0;      ///< argmin of mean_mse; ties (within 1e-12 relative) go to the larger λ
    double best_mse = 0.0;
};

/// K-fold cross-validation of the penalty on (features, targets). Rows are assigned to folds by a
/// permutation drawn from `seed` (row at permuted position i goes to fold i mod K, so fold sizes differ
/// by at most one); each fold is validated on a probe fitted, centring included, on the other K − 1.
/// Validation MSE is the mean over the fold's rows and target dimensions. Needs folds ≥ 2 and
/// n ≥ folds; every grid value must be finite and ≥ 0.
LambdaCv crossValidateLambda(const torch::Tensor& features, const torch::Tensor& targets,
                             const std::vector<double>& grid, int folds = 5, uint64_t seed = 0);

/// crossValidateLambda(…).best_lambda.
double chooseLambdaByCv(const torch::Tensor& features, const torch::Tensor& targets,
                        const std::vector<double>& grid, int folds = 5, uint64_t seed = 0);

/// Chooses λ by crossValidateLambda on the fit set, refits on the whole fit set with it and scores the
/// probe on the test set (definitions of the scores in core/types/probe.h). The fit and test sets must
/// have the same p and q.
ProbeScore scoreProbe(const torch::Tensor& fit_features, const torch::Tensor& fit_targets,
                      const torch::Tensor& test_features, const torch::Tensor& test_targets,
                      const std::vector<double>& grid = defaultLambdaGrid(), int folds = 5, uint64_t seed = 0);

/// One scoreProbe per layer: fit_layers[l] [n_fit, p_l] and test_layers[l] [n_test, p_l] (typically
/// L + 1 entries: the embedding and each block's residual stream; widths may differ between layers)
/// against the same targets. Every layer uses the same fold assignment (`seed`).
std::vector<ProbeScore> probeLayers(const std::vector<torch::Tensor>& fit_layers, const torch::Tensor& fit_targets,
                                    const std::vector<torch::Tensor>& test_layers, const torch::Tensor& test_targets,
                                    const std::vector<double>& grid = defaultLambdaGrid(), int folds = 5,
                                    uint64_t seed = 0);

/// probeLayers for several targets on the same layers: fit_targets[t] [n_fit, q_t] and test_targets[t]
/// [n_test, q_t]; returns scores[t][l]. Each layer's features are centred, cross-validated and
/// decomposed once for all targets; every target's scores equal probeLayers on that target alone (the
/// same operations on its columns, so bit for bit). Needs at least one target.
std::vector<std::vector<ProbeScore>> probeLayersForTargets(const std::vector<torch::Tensor>& fit_layers,
                                                           const std::vector<torch::Tensor>& fit_targets,
                                                           const std::vector<torch::Tensor>& test_layers,
                                                           const std::vector<torch::Tensor>& test_targets,
                                                           const std::vector<double>& grid = defaultLambdaGrid(),
                                                           int folds = 5, uint64_t seed = 0);

/// Packs per-layer scores into the torch-free curve; layer labels from probeLayerLabels(scores.size() − 1).
ProbeCurve makeProbeCurve(const std::string& target, const std::string& positions,
                          const std::vector<ProbeScore>& scores, int64_t n_fit, int64_t n_test);

} // namespace icl
