#pragma once
// Figures of an experiment for the GUI, `icl-cli export` and `icl-cli report`. Torch-free.

#include <string>
#include <vector>

#include "core/types/figure.h"
#include "core/types/figure_csv.h"
#include "core/types/icl_curve.h"
#include "core/types/run_summary.h"

namespace icl {

/// Names of the plots that fit this experiment ("loss", "icl_curve").
std::vector<std::string> availablePlots(const RunSummary& summary);

/// Training curves: train and eval loss against step with each baseline's eval loss on the same
/// axes (linear y, as in von Oswald et al. Fig. 2; exact baselines such as least squares on a
/// noiseless square system sit at 0). Throws icl::Error if the file has no metrics.
Figure lossFigure(const RunSummary& summary);

/// Error against number of in-context examples, with bootstrap bands.
Figure iclCurveFigure(const IclCurve& curve, const RunSummary& summary);

} // namespace icl
