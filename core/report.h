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
/// axes (log y). Throws icl::Error if the file has no metrics.
Figure lossFigure(const RunSummary& summary);

/// Error against number of in-context examples, with bootstrap bands.
Figure iclCurveFigure(const IclCurve& curve, const RunSummary& summary);

} // namespace icl
