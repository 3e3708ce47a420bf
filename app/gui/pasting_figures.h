#pragma once
// What the Pasting page draws: the ICL curves and the loss curves of a pasting result (Guo et al. 2023,
// docs/science.md), and the parent's facts the page shows.

#include <cstdint>
#include <string>

#include "core/analysis/pasting.h"
#include "core/types/figure.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// Parent facts the page needs from the config: model kind, L, d_model, task.w_scale, seed.
struct ParentConfig {
    std::string kind;
    int64_t n_layers = 0;
    int64_t d_model = 0;
    double w_scale = 0.0;
    uint64_t seed = 0;
};

/// The parent's facts from its typed config (all zero when the config was not read).
ParentConfig parentConfig(const icl::RunSummary& summary);

/// ICL curves of a result: 0.5·MSE at the query against n = 0..N in-context examples for the pasted model, the
/// scratch model (when trained), ridge with the Bayes λ, and the zero predictor's query loss as a horizontal line.
/// `o` are the options the result was computed with; metadata: experiment, checkpoint_step, seed, cut_layer,
/// embedding, steps, eval_prompts (and pasted_file).
icl::Figure pastingIclCurvesFigure(
    const icl::PastingResult& r, const icl::PastingOptions& o, const icl::RunSummary& parent);
/// Loss over training steps: pasted and scratch training (mean since the previous evaluation) and evaluation
/// losses, with ridge and zero as horizontal lines; the same metadata.
icl::Figure pastingLossCurvesFigure(
    const icl::PastingResult& r, const icl::PastingOptions& o, const icl::RunSummary& parent);

/// The two figures before any result: the titles and labelled axes of pastingIclCurvesFigure (`icl` true) or
/// pastingLossCurvesFigure, no series.
icl::Figure pastingEmptyFigure(bool icl);

} // namespace icl::gui
