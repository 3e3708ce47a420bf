#pragma once
// Loss curves of a run in progress, built from its TrainProgress reports. Qt-free.

#include <cstdint>
#include <string>

#include "core/types/figure.h"
#include "core/types/run_summary.h"
#include "core/types/train_progress.h"

namespace icl::gui {

/// Accumulates progress reports as metric rows (as in an experiment file's /metrics) and draws
/// them with icl::lossFigure, so the live plot looks like the saved one. Train loss is kept for
/// every step (thinned to at most 5000 rows on long runs); eval and baseline losses at the steps
/// where the model was evaluated (NaN elsewhere, which lossFigure skips).
/// Thread affinity: none (plain data); the GUI uses it on its thread.
class LiveLossCurves {
public:
    /// Starts a new run: `path` and `config_json` label the figure like the file will.
    void reset(const std::string& path, const std::string& config_json);

    /// Continues a saved run (resume): starts from its metrics up to its last checkpoint, which is
    /// where training picks up again.
    void resume(const icl::RunSummary& saved);

    /// Adds one report (reports of the Preparing phase are ignored).
    void add(const icl::TrainProgress& progress);

    /// Number of metric rows kept so far.
    size_t rows() const;

    /// The metrics in RunSummary form ("step", "train_loss", "eval_loss", "baseline/<name>").
    const icl::RunSummary& summary() const { return m_summary; }

    /// The loss figure, or an empty figure with labelled axes before the first report.
    icl::Figure figure() const;

private:
    void appendRow(const icl::TrainProgress& progress, bool evaluated);
    void thin();

    icl::RunSummary m_summary;
    int64_t m_stride = 1; ///< keep train loss of every m_stride-th step (doubles past 5000 rows)
};

} // namespace icl::gui
