#pragma once
// The sweep figure: final metrics of a sweep's runs against one grid key. Drawn by `icl-cli aggregate` and by the
// GUI's ICL vs IWL page (Sweep tab) from the same table. Torch-free.

#include <cstddef>
#include <string>
#include <vector>

#include "core/types/figure.h"

namespace icl {

/// A sweep's table as `icl-cli aggregate` writes it (aggregate/table.csv): the grid keys first (`seed` among
/// them), then `step`, the final metrics (`icl_accuracy`, `iwl_accuracy`, `eval_loss`, …) and optionally `file`.
/// Cells are texts as written; an empty or non-numeric metric cell means "no value".
struct SweepTable {
    std::string source;                          ///< where the table comes from (the figure's "sweep" metadata)
    std::vector<std::string> columns;            ///< column names, in order
    size_t n_grid = 0;                           ///< the first n_grid columns are grid keys
    std::vector<std::vector<std::string>> rows;  ///< one cell per column, one row per run
};

/// Grid keys that can be an x axis: every grid column except `seed` with two or more distinct values (numbers
/// compared as numbers, so 0.9 and 0.90 are one value). In table order.
std::vector<std::string> sweepPlotColumns(const SweepTable& table);

/// ICL and IWL accuracy (a classification sweep: some run has a finite icl_accuracy) or eval loss (otherwise)
/// against grid key `x`, seeds averaged, one series per combination of the other grid keys (named by the part of
/// each key after its last '.'). A numeric key is the x axis itself, on a log axis when its values span two
/// decades or more; any other key (model.kind) gets one named tick per value in table order, markers, and the
/// metadata line `x_values` ("0 = gpt2, 1 = lstm"). Throws icl::Error when `x` is not a grid column.
Figure sweepFigure(const SweepTable& table, const std::string& x);

} // namespace icl
