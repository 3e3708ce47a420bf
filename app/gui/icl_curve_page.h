#pragma once
// ICL curve page (Garg et al. 2022): the model and every baseline against the number of in-context
// examples, with bootstrap 95% confidence intervals, for the selected checkpoint.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <QWidget>

#include "core/analysis/icl_curve.h"
#include "core/types/icl_curve.h"
#include "core/types/run_summary.h"

class QLabel;
class QSpinBox;

namespace icl::widgets {
class PlotView;
} // namespace icl::widgets

namespace icl::gui {

class AnalysisRunner;

/// For the selected checkpoint: icl::computeIclCurve on the run's evaluation prompts (or as many
/// prompts as the chooser says), drawn with icl::iclCurveFigure. Works for every model kind. Follows
/// the checkpoint timeline; the analysis runs on a worker thread (AnalysisRunner) while the page is
/// active; a superseded or cancelled analysis stops at its next progress report and its result is
/// dropped. Nothing is written to the experiment file.
/// Thread affinity: GUI thread only.
class IclCurvePage : public QWidget {
    Q_OBJECT
public:
    explicit IclCurvePage(QWidget* parent = nullptr);
    ~IclCurvePage() override;

    /// Shows a file at checkpoint `step` (the analysis runs when the page is active).
    void showExperiment(const icl::RunSummary& summary, qint64 step);
    /// Follows the timeline.
    void selectCheckpoint(qint64 step);
    /// The page is on screen (runs a pending analysis) or not.
    void setActive(bool active);
    bool isBusy() const;
    /// Drops queued work and stops the running analysis at its next progress report.
    void cancel();

    /// Number of prompts (0 = the run's eval.n_prompts); re-runs the analysis when it changes.
    void setPromptCount(int64_t n);
    /// The options of the next (or shown) analysis, for the selected checkpoint.
    icl::IclCurveOptions options() const;

    qint64 checkpointStep() const { return m_step; }
    /// The last result shown (empty before the first one).
    const icl::IclCurve& curve() const { return m_curve; }
    widgets::PlotView* plot() const { return m_plot; }
    QSpinBox* promptChooser() const { return m_prompts; }
    QLabel* summaryLabel() const { return m_summaryLabel; }
    QLabel* statusLabel() const { return m_status; }

Q_SIGNALS:
    void busyStarted();
    void progressChanged(int percent, const QString& text);
    void busyFinished();

private:
    void run();
    /// Plots `curve` and its summary line; a preview (computed on the first prompts only) keeps the
    /// status line saying that the rest is still being computed.
    void showCurve(const icl::IclCurve& curve, bool preview);
    bool ready() const;

    AnalysisRunner* m_runner = nullptr;
    icl::RunSummary m_summary;
    std::string m_path;
    qint64 m_step = -1;
    bool m_active = false;
    bool m_stale = false;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; ///< the running analysis's cancel flag
    icl::IclCurve m_curve;

    QSpinBox* m_prompts = nullptr;
    QLabel* m_summaryLabel = nullptr;
    QLabel* m_status = nullptr;
    widgets::PlotView* m_plot = nullptr;
};

} // namespace icl::gui
