#pragma once
// Figures of an experiment for the GUI, `icl-cli export` and `icl-cli report`. Torch-free.

#include <string>
#include <vector>

#include "core/analysis/gd_alignment.h"
#include "core/analysis/pasting.h"
#include "core/types/alignment.h"
#include "core/types/algorithm_map.h"
#include "core/types/algorithm_map_matrix.h"
#include "core/types/figure.h"
#include "core/types/figure_csv.h"
#include "core/types/icl_curve.h"
#include "core/types/inspection.h"
#include "core/types/probe.h"
#include "core/types/run_summary.h"

namespace icl {

/// Names of the plots that fit this experiment ("loss", "icl_curve", "alignment", "eta_scan"; for a few-shot
/// classification run "loss" and "icl_iwl"; "pasting_icl_curve" and "pasting_loss" for a parent with a stored
/// pasting result, drawn from the latest; "algorithm_map", "algorithm_map_best_step" for a run with a stored
/// algorithm map, and "algorithm_map_training" when more than one is stored).
std::vector<std::string> availablePlots(const RunSummary& summary);

/// Training curves: train and eval loss against step with each baseline's eval loss on the same
/// axes (linear y, as in von Oswald et al. Fig. 2; exact baselines such as least squares on a
/// noiseless square system sit at 0). Throws icl::Error if the file has no metrics.
Figure lossFigure(const RunSummary& summary);

/// Error against number of in-context examples, with bootstrap bands.
Figure iclCurveFigure(const IclCurve& curve, const RunSummary& summary);

/// GD alignment over training (von Oswald et al. Fig. 2, right): model cosine and relative model
/// difference against each aligned reference, and prediction difference, against step. Throws
/// icl::Error when the run recorded no alignment metrics (eval.alignment empty).
Figure alignmentFigure(const RunSummary& summary);

/// Model vs reference predictions on the same prompts (a scatter; the diagonal is perfect agreement).
Figure predictionScatterFigure(const AlignmentResult& result, const RunSummary& summary);

/// Loss of GD-k against η, with the model's loss as a horizontal line.
Figure etaScanFigure(const EtaScan& scan, const RunSummary& summary);

/// Model, GD, least squares and zero predictor against α for one out-of-distribution kind.
Figure oodFigure(const OodCurve& curve, const RunSummary& summary);

/// Linear probes (Guo et al. 2023): normalised test MSE per residual-stream layer (x = 0 for the
/// embedding, l + 1 after block l, ticks labelled "embed", "block 0", …), one line per target; 1 means
/// the probe does no better than predicting the mean. The curves should share one kind of position.
Figure probeFigure(const std::vector<ProbeCurve>& curves, const RunSummary& summary);

/// Regression lens (issue 5): the read-out of the residual stream at the query after the embedding and
/// after each layer (x = 0, 1, …, L with ticks "embed", "layer 0", …), GD after k steps as markers at x = k
/// (the zero predictor at the embedding), the other references on the same prompt (ridge, least squares,
/// oracle, GD-k beyond L) and the true label y_q as horizontal dashed lines. The run's metadata (when
/// `summary` has a path) and `metadata` (prompt, checkpoint) go into the figure.
Figure lensFigure(const RegressionLens& lens, const RunSummary& summary,
                  const std::map<std::string, std::string>& metadata = {});

/// Few-shot classification (Chan et al. 2022, docs/science.md §4): ICL accuracy on holdout classes (labels {0, 1},
/// and over all labels) and IWL accuracy on no-support sequences against training step, with the 2-way
/// chance level. Throws icl::Error for a run without these metrics.
Figure iclIwlFigure(const RunSummary& summary);

/// Layer pasting (Guo et al. 2023, docs/science.md): 0.5·MSE at the query against n = 0..N in-context examples for
/// the pasted model, the scratch model (when trained), ridge with the Bayes λ (dashed) and the zero predictor's
/// query loss (a dashed horizontal line). `o` are the options the result was computed with and `parent` the
/// parent's summary; metadata: experiment, checkpoint_step, seed, cut_layer, embedding, steps, eval_prompts (and
/// pasted_file). Name "pasting_icl_curve".
Figure pastingIclCurvesFigure(const PastingResult& r, const PastingOptions& o, const RunSummary& parent);

/// Layer pasting: loss against training step — the pasted and the scratch model's training loss (mean since the
/// previous evaluation) and evaluation loss, with ridge and zero as dashed horizontal lines; the same metadata.
/// Name "pasting_loss".
Figure pastingLossCurvesFigure(const PastingResult& r, const PastingOptions& o, const RunSummary& parent);

/// The algorithm map (docs/science.md §5): the best-matching step k*(ℓ) of every available family against the
/// layer (markers; log y), with each family's fit over the middle layers as a dashed line (legend: kind, slope, R²).
/// Name "algorithm_map_best_step".
Figure algorithmMapBestStepFigure(const AlgorithmMap& map, const RunSummary& summary);

/// k*(ℓ) of `family` against the training step, one line per layer, from maps of several checkpoints (any
/// order). Throws icl::Error when no map has the family available. Name "algorithm_map_training".
Figure algorithmMapTrainingFigure(const std::vector<AlgorithmMap>& maps, const std::string& family,
                                  const RunSummary& summary);

/// One cell of the algorithm map: the layer's prediction against the algorithm's on the map's n_scatter prompts
/// (markers) with the diagonal ŷ_layer = ŷ_algorithm (dashed), for layer index `layerIndex` and step index
/// `stepIndex` of `family` (indices into map.layers and the family's steps). Name "algorithm_map_scatter". Throws
/// icl::Error for a family that is not available, an index out of range or a map without scatter predictions.
Figure algorithmMapCellFigure(const AlgorithmMap& map, const std::string& family, int64_t layerIndex, int64_t stepIndex,
                              const RunSummary& summary);

/// Metadata of an exported algorithm-map heatmap: the run's (experiment, seed, preset), checkpoint_step, family,
/// similarity ("errors" or "induced weights"), readout, prompts, and Newton's α or GD's step rule.
std::map<std::string, std::string> algorithmMapMetadata(const AlgorithmMap& map, const std::string& family, bool weights,
                                                        const RunSummary& summary);

} // namespace icl
