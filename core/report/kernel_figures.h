#pragma once
// Figures of the kernel view (Ren & Liu 2023, docs/science.md §3) and of runs of attention variants, drawn by the
// GUI's Kernel view page. Torch-free.

#include <string>
#include <vector>

#include "core/analysis/kernel_view.h"
#include "core/types/figure.h"
#include "core/types/run_summary.h"

namespace icl {

/// Error of the random-feature reference model vs m on log-log axes: output and attention RMSE (mean
/// over seeds with a ±1 std band) and the fitted lines, with the slope in the series names, and the
/// m^{-1/2} guide through the first output point.
Figure kernelErrorFigure(const KernelView& view);

/// Reference-model training loss against the GD step (KernelView::loss).
Figure referenceLossFigure(const KernelView& view);

/// Evaluation loss against training step of several runs (e.g. renliu-kernel and its variants on the
/// same task), one series per run named by its variant and strength (or file name), plus the first
/// run's one-GD-step baseline (gd_1) when recorded. Runs without metrics are skipped.
Figure variantLossFigure(const std::vector<RunSummary>& runs);

/// "softmax", or "regularized λ=0.5" etc. from a run's config (file name when the config is unreadable).
std::string variantLabel(const RunSummary& run);

} // namespace icl
