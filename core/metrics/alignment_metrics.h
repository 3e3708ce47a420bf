#pragma once
// Core-internal metrics of a predictor against a reference (von Oswald et al. 2022, §3: prediction and
// sensitivity alignment) and of an LSA stack's copy behaviour (LibTorch). Used by training and the analyses.

#include <functional>
#include <vector>

#include <torch/torch.h>

#include "core/tasks/linear_regression.h"
#include "core/types/alignment.h"

namespace icl {

using Predictor = std::function<torch::Tensor(const PromptBatch&)>;

/// Query predictions ŷ [B] and sensitivities ∂ŷ/∂x_q [B, d] of `predict` by autograd.
/// The predictor must be differentiable in the query input.
std::pair<torch::Tensor, torch::Tensor> predictionsAndSensitivities(const Predictor& predict, const PromptBatch& batch);

/// AlignmentMetrics of `model` against `reference` on `batch` (processed in chunks of `chunk` prompts).
/// If `model_pred`/`ref_pred` are given they receive the predictions [B] (float64, CPU).
AlignmentMetrics alignmentMetrics(const Predictor& model, const Predictor& reference, const PromptBatch& batch,
                                  int64_t chunk = 4096, torch::Tensor* model_pred = nullptr,
                                  torch::Tensor* ref_pred = nullptr);

/// alignmentMetrics of `model` against each of `references`, with the model's predictions and
/// sensitivities computed once per chunk for all of them; entry r equals alignmentMetrics(model,
/// references[r], …) (the same operations). `ref_pred` receives the first reference's predictions.
std::vector<AlignmentMetrics> alignmentMetricsAgainst(const Predictor& model, const std::vector<Predictor>& references,
                                                     const PromptBatch& batch, int64_t chunk = 4096,
                                                     torch::Tensor* model_pred = nullptr,
                                                     torch::Tensor* ref_pred = nullptr);

class LsaImpl;
/// Copy-analysis gradient norms of an interleaved LSA stack on `batch`: G [T, T] (float64, CPU) with
/// G[k][j] = mean over prompts of ‖∂(resid_post.0 at token k)/∂(data part of input token j)‖_F,
/// by one backward pass per output coordinate. Throws icl::Error for a pair-layout model.
torch::Tensor copyGradientNorms(LsaImpl& lsa, const PromptBatch& batch);

/// own / next / other summary of G (see CopyAnalysis) over the x-tokens k = 0, 2, …, 2N−2.
CopyAnalysis summariseCopy(const torch::Tensor& G, int64_t n_examples);

} // namespace icl
