#pragma once
// ICL vs IWL page (Chan et al. 2022, docs/science.md §4): for a few-shot classification run, the in-context and
// in-weights accuracies over training and the on-demand evaluation of the selected checkpoint.

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include <QStringList>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "app/gui/sequence_view.h"
#include "app/gui/sweep_view.h"
#include "core/analysis/icl_iwl.h"
#include "core/types/fewshot_sequence.h"
#include "core/types/icl_iwl.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// For a `fewshot_classification` run: icl::iclIwlFigure of the file's metrics (ICL accuracy on holdout
/// classes over labels {0, 1} and over all labels, IWL accuracy on no-support sequences, against training
/// step; redrawn while the run trains), and a panel with icl::computeIclIwl of the checkpoint selected on
/// the timeline (ICL and IWL accuracies and the rates at which the output is a label present in the
/// context; with a common / rare split also ICL and IWL accuracy on common and on rare classes). The
/// evaluation runs on a worker thread (AnalysisRunner) while the page is active; a superseded or cancelled
/// evaluation stops at its next progress report and its result is dropped. With 0 sequences (the default)
/// it uses the run's own evaluation sequences, so its numbers equal the metrics stored at that step. For any
/// other task the page shows one line saying what it is for. Nothing is written to the experiment file. A
/// second tab reads an aggregated sweep (DIR/aggregate/table.csv written by `icl-cli aggregate`) and draws
/// the final ICL and IWL accuracy against a chosen grid column, one line per combination of the other
/// non-seed columns, averaged over seeds (as the aggregate's own plots: a numeric column spanning two decades
/// or more on a log axis, a non-numeric one such as model.kind as named ticks with markers).
/// A third tab, the sequence viewer, shows one sequence drawn by icl::sampleFewShotSequence (a training
/// sequence as drawn, bursty or i.i.d., an ICL or an IWL evaluation sequence; seed chosen or resampled with
/// Ctrl+R) as a row of exemplar tiles with their classes and labels (holdout and rare classes marked, the query
/// highlighted), and the selected checkpoint's prediction at the query: true and predicted label, the
/// prediction over {0, 1} for ICL sequences, whether the prediction is a label of the context, and the five
/// most probable labels as a bar chart. It runs on the same worker thread when its tab is on screen.
/// Thread affinity: GUI thread only.
class IclIwlPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit IclIwlPage(QWidget* parent = nullptr);

    /// Redraws the curves from a newer summary of the same file (live training); another file is shown anew.
    /// Drops queued work and stops the running evaluation at its next progress report.
    void cancelJobs() override;
    QString cancelledMessage() const override { return tr("ICL vs IWL evaluation cancelled"); }
    QString doneMessage() const override { return tr("ICL vs IWL: evaluation done"); }

    /// Sequences per evaluation (0 = the run's own evaluation sequences); re-runs the evaluation when it changes.
    void setSequenceCount(int64_t n);
    /// The options of the next (or shown) evaluation, for the selected checkpoint.
    icl::IclIwlOptions options() const;

    /// True when the open run is a few-shot classification run.
    bool isSupported() const { return m_supported; }
    /// The last evaluation shown (empty before the first one).
    const std::optional<icl::IclIwlResult>& result() const { return m_result; }

    widgets::PlotView* plot() const { return m_plot; }
    QLabel* checkpointLabel() const { return m_panel[CheckpointRow]; }
    QLabel* iclAccuracyLabel() const { return m_panel[IclRow]; }
    QLabel* iclAllLabelsLabel() const { return m_panel[IclAllLabelsRow]; }
    QLabel* iwlAccuracyLabel() const { return m_panel[IwlRow]; }
    QLabel* iclInContextLabel() const { return m_panel[IclInContextRow]; }
    QLabel* iwlInContextLabel() const { return m_panel[IwlInContextRow]; }
    /// ICL and IWL accuracy on common and on rare classes: rows shown only for a run with a common / rare split.
    QLabel* iclCommonLabel() const { return m_panel[IclCommonRow]; }
    QLabel* iclRareLabel() const { return m_panel[IclRareRow]; }
    QLabel* iwlCommonLabel() const { return m_panel[IwlCommonRow]; }
    QLabel* iwlRareLabel() const { return m_panel[IwlRareRow]; }

    /// Reads DIR/aggregate/table.csv (or DIR/table.csv, or the CSV file itself) and shows the sweep tab. On a
    /// missing or malformed table shows the reason in sweepView()->statusLabel() and returns false.
    bool openSweep(const QString& dir);
    /// Grid columns of the open sweep with at least two values (seed excluded), in table order: numeric ones
    /// (p_bursty, number of classes, Zipf α) and others such as model.kind (gpt2, lstm, rnn).
    QStringList sweepColumns() const { return m_sweepView->sweepColumns(); }
    /// Draws ICL and IWL accuracy against grid column `column` (one of sweepColumns()); false if it is not one.
    bool setSweepColumn(const QString& column) { return m_sweepView->setSweepColumn(column); }
    /// The plot of the tab on screen (none on the sequence tab; see exportCurrentPlot).
    widgets::PlotView* currentPlot() const override;
    /// Opens the export dialog of the plot or chart of the tab on screen; false when it has none.
    bool exportCurrentPlot() override;
    /// Tab names for `icl-workbench --page icl-iwl --tab NAME`: "training", "sweep", "sequence".
    static QStringList tabNames();
    /// Shows the tab called `name` (one of tabNames()); false for another name.
    bool showTab(const QString& name);

    /// Sequence viewer: the kind and seed of the sequence to show (redraws when the tab is on screen).
    void setSequence(icl::FewShotSequenceKind kind, uint64_t seed);
    icl::FewShotSequenceKind sequenceKind() const;
    uint64_t sequenceSeed() const;
    /// Draws the next seed (the Resample button, Ctrl+R).
    void resampleSequence();
    /// The sequence shown (empty before the first one, after an error and for another run).
    const std::optional<icl::FewShotSequence>& sequence() const { return m_sequenceView->sequence(); }
    /// The sequence viewer tab and the sweep tab, whose controls the tests and the command line reach.
    SequenceView* sequenceView() const { return m_sequenceView; }
    SweepView* sweepView() const { return m_sweepView; }
    QTabWidget* tabs() const { return m_tabs; }

    /// How the panel writes a fraction of `n` sequences: the value with 4 decimals and the count ("0.8125 (52/64)").
    static QString fractionText(double value, int64_t n);

private:
    /// Binds a file: clears the panel and the sequence viewer and draws the curves; false for a run that is not
    /// fewshot_classification.
    bool bind(const icl::RunSummary& summary, QString* why) override;
    /// Two results, each stale on its own: the evaluation of the checkpoint (computed when shown) and the sequence
    /// viewer (drawn when its tab is shown).
    bool isStale() const override;
    void markStale() override;
    void refresh() override;
    void compute() override;
    /// Fills the panel; a first look (ICL only, IWL still NaN) says so in the status line.
    void showResult(const icl::IclIwlResult& r, bool firstLook);
    void clearPanel();
    void showCurves();
    bool sequenceReady() const;
    void runSequence();


    std::optional<icl::IclIwlResult> m_result;

    QWidget* m_content = nullptr;
    QSpinBox* m_sequences = nullptr;
    /// The value rows of the "Selected checkpoint" panel, in order; the last four (ICL and IWL accuracy on common
    /// and on rare classes) are shown only for a run with a common / rare split.
    enum PanelRow {
        CheckpointRow,
        IclRow,
        IclAllLabelsRow,
        IwlRow,
        IclInContextRow,
        IwlInContextRow,
        IclCommonRow,
        IclRareRow,
        IwlCommonRow,
        IwlRareRow,
        PanelRowCount
    };
    std::array<QLabel*, PanelRowCount> m_panel {}; ///< the value label of each PanelRow
    QFormLayout* m_panelForm = nullptr;
    widgets::PlotView* m_plot = nullptr;
    QTabWidget* m_tabs = nullptr;
    SweepView* m_sweepView = nullptr;

    // Sequence viewer tab.
    SequenceView* m_sequenceView = nullptr;
    bool m_sequenceStale = false;
    bool m_sequencePending = false;
    quint64 m_sequenceGeneration = 0;
};

} // namespace icl::gui
