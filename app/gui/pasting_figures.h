#pragma once
// What the Pasting page draws before a result (the figures of a result are icl::pastingIclCurvesFigure and
// icl::pastingLossCurvesFigure, core/report.h), and the parent's facts the page shows.

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

/// The two figures before any result: the titles and labelled axes of pastingIclCurvesFigure (`icl` true) or
/// pastingLossCurvesFigure, no series.
icl::Figure pastingEmptyFigure(bool icl);

} // namespace icl::gui
