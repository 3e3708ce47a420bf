#pragma once
// The Train page's list of a run's checkpoints: step, training loss and wall time, imported ones marked.

#include <cstdint>

#include <QString>
#include <QTableWidget>

#include "core/types/run_summary.h"

namespace icl::gui {

/// A loss with 4 significant digits, "–" for NaN.
QString formatLoss(double v);
/// A duration as m:ss or h:mm:ss, "–" when negative or not finite.
QString formatDuration(double seconds);

/// One row per checkpoint (object name "checkpointTable"; the step in Qt::UserRole of column 0). An imported
/// checkpoint (trained elsewhere) shows "—" as its wall time. Thread affinity: GUI thread only.
class CheckpointTable : public QTableWidget {
    Q_OBJECT
public:
    explicit CheckpointTable(QWidget* parent = nullptr);
    /// Every checkpoint of `summary`, those of its import provenance (/import) marked as imported.
    void showRun(const icl::RunSummary& summary);
    /// Appends a row (a checkpoint written while training) and scrolls to it.
    /// A non-empty `damaged` (CheckpointInfo::damaged) shows "damaged" instead of its numbers, the damage as tooltip.
    void addCheckpoint(int64_t step, double trainLoss, double wallTime, bool imported = false,
                       const QString& damaged = QString());
    /// Selects and shows the row of `step` (none: nothing changes).
    void selectStep(qint64 step);
};

} // namespace icl::gui
