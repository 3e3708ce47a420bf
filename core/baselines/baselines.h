#pragma once
// Learning algorithms run on the same prompts as the model (PAPERS.md §0, §1). Core-internal.
// Every predictor returns the query prediction [B] using the prompt's in-context examples; call it on
// batch.prefix(n) for the prediction after n examples. Computation is in float64; the result has the
// batch's dtype and device.

#include <cstdint>
#include <map>
#include <string>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Loss used throughout von Oswald et al.: 0.5·mean((ŷ − y)²). `pred`, `target` [B]. Returns a scalar.
torch::Tensor halfMse(const torch::Tensor& pred, const torch::Tensor& target);

/// Predicts 0 (the error of this baseline normalises ICL curves). Returns [B].
torch::Tensor predictZero(const PromptBatch& batch);

/// Minimum-norm least squares ŵ = X⁺y (Moore–Penrose pseudo-inverse), ŷ = ⟨ŵ, x_q⟩. Returns [B].
torch::Tensor predictLeastSquares(const PromptBatch& batch);

/// Ridge ŵ = (XᵀX + λI)⁻¹Xᵀy on the sum-of-squares objective; λ = 0 gives least squares. Returns [B].
torch::Tensor predictRidge(const PromptBatch& batch, double lambda);

/// k steps of gradient descent from W_0 = 0 on L(W) = (1/2N)·Σ(W x_i − y_i)² with step size η:
/// W_{t+1} = W_t − (η/N)·Σ(W_t x_i − y_i) x_iᵀ (von Oswald et al. Prop. 1). Returns [B].
torch::Tensor predictGd(const PromptBatch& batch, int64_t k, double eta);

/// Best η for one GD step in closed form: with g = (1/N)·Σ y_i x_iᵀ x_q the unit-η prediction,
/// η* = E[g·y_q] / E[g²] minimises E(η g − y_q)² over the prompts of `batch`.
double closedFormEtaOneStep(const PromptBatch& batch);

/// η minimising the 0.5·MSE of k GD steps on `batch`: a grid over [lo, hi] (step (hi − lo)/250)
/// refined by golden-section search in the best grid cell to relative tolerance 1e-10.
double lineSearchEta(const PromptBatch& batch, int64_t k, double lo = 0.0, double hi = 25.0);

/// Ridge penalty of the config: eval.ridge_lambda when ≥ 0, else the Bayes choice σ²/w_scale².
double ridgeLambda(const ExperimentConfig& config);

/// Baseline names of a config in display order: "zero", "least_squares", "ridge", "gd_1", "gd_2", …
std::vector<std::string> baselineNames(const EvalConfig& eval);

/// Fits η of every GD-k baseline on `tuning` prompts (closed form for k = 1, line search otherwise).
/// Returns "gd_k" -> η.
std::map<std::string, double> fitGdEtas(const PromptBatch& tuning, const EvalConfig& eval);

/// Query predictions [B] of baseline `name` ("zero", "least_squares", "ridge", "gd_k").
/// Throws icl::Error for an unknown name or a GD baseline missing from `etas`.
torch::Tensor predictBaseline(const std::string& name, const PromptBatch& batch, const ExperimentConfig& config,
                              const std::map<std::string, double>& etas);

} // namespace icl
