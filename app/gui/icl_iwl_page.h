#pragma once
// ICL vs IWL page (Chan et al. 2022, PAPERS.md §4): for a few-shot classification run, the in-context and
// in-weights accuracies over training and the on-demand evaluation of the selected checkpoint.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QStringList>
#include <QWidget>

#include "core/analysis/icl_iwl.h"
#include "core/types/icl_iwl.h"
#include "core/types/run_summary.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace icl::widgets {
class PlotView;
} // namespace icl::widgets

namespace icl::gui {

class AnalysisRunner;

/// For a `fewshot_classification` run: icl::iclIwlFigure of the file's metrics (ICL accuracy on holdout
/// classes over labels {0, 1} and over all labels, IWL accuracy on no-support sequences, against training
/// step; redrawn while the run trains), and a panel with icl::computeIclIwl of the checkpoint selected on
/// the timeline (ICL and IWL accuracies and the rates at which the output is a label present in the
/// context). The evaluation runs on a worker thread (AnalysisRunner) while the page is active; a
/// superseded or cancelled evaluation stops at its next progress report and its result is dropped. With
/// 0 sequences (the default) it uses the run's own evaluation sequences, so its numbers equal the metrics
/// stored at that step. For any other task the page shows one line saying what it is for. Nothing is
/// written to the experiment file. A second tab reads an aggregated sweep (DIR/aggregate/table.csv written by
/// `icl-cli aggregate`) and draws the final ICL and IWL accuracy against a chosen numeric grid column, one
/// line per combination of the other non-seed columns, averaged over seeds (as the aggregate's own plots).
/// Thread affinity: GUI thread only.
class IclIwlPage : public QWidget {
    Q_OBJECT
public:
    explicit IclIwlPage(QWidget* parent = nullptr);
    ~IclIwlPage() override;

    /// Shows a file at checkpoint `step` (the evaluation runs when the page is active).
    void showExperiment(const icl::RunSummary& summary, qint64 step);
    /// Redraws the curves from a newer summary of the same file (live training); another file is shown anew.
    void updateTrainingCurves(const icl::RunSummary& summary);
    /// Follows the timeline.
    void selectCheckpoint(qint64 step);
    /// The page is on screen (runs a pending evaluation) or not.
    void setActive(bool active);
    bool isBusy() const;
    /// Drops queued work and stops the running evaluation at its next progress report.
    void cancel();

    /// Sequences per evaluation (0 = the run's own evaluation sequences); re-runs the evaluation when it changes.
    void setSequenceCount(int64_t n);
    /// The options of the next (or shown) evaluation, for the selected checkpoint.
    icl::IclIwlOptions options() const;

    /// True when the open run is a few-shot classification run.
    bool isSupported() const { return m_supported; }
    qint64 checkpointStep() const { return m_step; }
    /// The last evaluation shown (empty before the first one).
    const std::optional<icl::IclIwlResult>& result() const { return m_result; }

    widgets::PlotView* plot() const { return m_plot; }
    QSpinBox* sequenceChooser() const { return m_sequences; }
    /// The one-line message shown instead of the page for runs of another task (hidden otherwise).
    QLabel* messageLabel() const { return m_message; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* checkpointLabel() const { return m_checkpointValue; }
    QLabel* iclAccuracyLabel() const { return m_iclValue; }
    QLabel* iclAllLabelsLabel() const { return m_iclAllValue; }
    QLabel* iwlAccuracyLabel() const { return m_iwlValue; }
    QLabel* iclInContextLabel() const { return m_iclInContextValue; }
    QLabel* iwlInContextLabel() const { return m_iwlInContextValue; }

    /// Reads DIR/aggregate/table.csv (or DIR/table.csv, or the CSV file itself) and shows the sweep tab. On a
    /// missing or malformed table shows the reason in sweepStatusLabel() and returns false.
    bool openSweep(const QString& dir);
    /// Numeric grid columns of the open sweep with at least two values (seed excluded), in table order.
    QStringList sweepColumns() const;
    /// Draws ICL and IWL accuracy against grid column `column` (one of sweepColumns()); false if it is not one.
    bool setSweepColumn(const QString& column);
    /// Asks for a sweep directory and opens it.
    void openSweepWithDialog();
    /// The plot of the tab on screen.
    widgets::PlotView* currentPlot() const;
    QTabWidget* tabs() const { return m_tabs; }
    widgets::PlotView* sweepPlot() const { return m_sweepPlot; }
    QComboBox* sweepColumnChooser() const { return m_sweepColumn; }
    QPushButton* openSweepButton() const { return m_openSweep; }
    QLabel* sweepStatusLabel() const { return m_sweepStatus; }

    /// How the panel writes a fraction of `n` sequences: the value with 4 decimals and the count ("0.8125 (52/64)").
    static QString fractionText(double value, int64_t n);

Q_SIGNALS:
    void busyStarted();
    void progressChanged(int percent, const QString& text);
    void busyFinished();

private:
    void run();
    bool ready() const;
    void clearPanel();
    void showCurves();
    void showSweep();

    /// The open sweep table: column names and one row of cells per run (numbers parsed where they are numbers).
    struct SweepTable {
        QString path;
        QStringList columns;           ///< grid columns, "step", then the metrics
        int n_grid = 0;                ///< the grid columns come first
        std::vector<QStringList> rows; ///< cells as written
    };
    SweepTable m_sweep;

    AnalysisRunner* m_runner = nullptr;
    icl::RunSummary m_summary;
    std::string m_path;
    bool m_supported = false;
    qint64 m_step = -1;
    bool m_active = false;
    bool m_stale = false;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; ///< the running evaluation's cancel flag
    std::optional<icl::IclIwlResult> m_result;

    QLabel* m_message = nullptr;
    QWidget* m_content = nullptr;
    QSpinBox* m_sequences = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_checkpointValue = nullptr;
    QLabel* m_iclValue = nullptr;
    QLabel* m_iclAllValue = nullptr;
    QLabel* m_iwlValue = nullptr;
    QLabel* m_iclInContextValue = nullptr;
    QLabel* m_iwlInContextValue = nullptr;
    widgets::PlotView* m_plot = nullptr;
    QTabWidget* m_tabs = nullptr;
    QPushButton* m_openSweep = nullptr;
    QComboBox* m_sweepColumn = nullptr;
    QLabel* m_sweepStatus = nullptr;
    widgets::PlotView* m_sweepPlot = nullptr;
};

} // namespace icl::gui
