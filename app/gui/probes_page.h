#pragma once
// Probes page (Guo et al. 2023, PAPERS.md §2): normalised error of linear probes on every residual-
// stream layer of a GPT-2, one line per target, at the chosen kind of position.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QStringList>
#include <QWidget>

#include "core/analysis/probe_analysis.h"
#include "core/types/probe.h"
#include "core/types/run_summary.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QStackedWidget;

namespace icl::widgets {
class PlotView;
} // namespace icl::widgets

namespace icl::gui {

class AnalysisRunner;

/// For the selected checkpoint: icl::computeProbe for each checked target (x, phi, y, oracle, gd_1;
/// phi and oracle only on representation tasks) at the chosen positions (x, y or query tokens),
/// drawn with icl::probeFigure. Follows the checkpoint timeline; the probes are fitted on a worker
/// thread (AnalysisRunner) while the page is active by one icl::computeProbes for every checked target
/// (one forward pass shared by all); a first look on the first icl::kProbeFirstLookPrompts fit and test
/// prompts is shown first and then replaced by the full result; a superseded or cancelled batch stops
/// at its next forward chunk or target and its result is dropped. Nothing is written to the
/// experiment file. gpt2 runs only; others get a message instead.
/// Thread affinity: GUI thread only.
class ProbesPage : public QWidget {
    Q_OBJECT
public:
    explicit ProbesPage(QWidget* parent = nullptr);
    ~ProbesPage() override;

    /// Shows a file at checkpoint `step` (the probes run when the page is active).
    void showExperiment(const icl::RunSummary& summary, qint64 step);
    /// Follows the timeline.
    void selectCheckpoint(qint64 step);
    /// The page is on screen (runs pending probes) or not.
    void setActive(bool active);
    bool isBusy() const;
    /// Drops queued work; the running batch stops before its next target.
    void cancel();

    /// gpt2 models only; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);
    /// Targets in page order: x, phi, y, oracle, gd_1.
    static QStringList targetNames();
    /// Targets the run's task supports (phi and oracle need a representation task).
    static QStringList supportedTargets(const icl::RunSummary& summary);

    /// Prompts the probes are fitted on and scored on (defaults 512 each); re-runs when changed.
    void setPromptCounts(int64_t nFit, int64_t nTest);
    /// Position kind: "x", "y" or "query"; false if unknown.
    bool setPositions(const QString& positions);
    /// Checks or unchecks a target (ignored when the task does not support it).
    void setTargetChecked(const QString& target, bool checked);
    /// Checked (and supported) targets, in page order.
    QStringList checkedTargets() const;
    /// The options of the probe for `target` at the selected checkpoint and positions.
    icl::ProbeOptions options(const QString& target) const;

    qint64 checkpointStep() const { return m_step; }
    /// The curves shown (one per checked target, in page order).
    const std::vector<icl::ProbeCurve>& curves() const { return m_curves; }
    widgets::PlotView* plot() const { return m_plot; }
    QComboBox* positionChooser() const { return m_positions; }
    QCheckBox* targetCheck(const QString& target) const;
    QLabel* summaryLabel() const { return m_summaryLabel; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* messageLabel() const { return m_message; }

Q_SIGNALS:
    void busyStarted();
    void progressChanged(int percent, const QString& text);
    void busyFinished();
    /// The first look (fewer prompts) is on screen; the full result follows.
    void firstLookShown();

private:
    void run();
    void requestRun();
    void showCurves(const std::vector<icl::ProbeCurve>& curves, bool firstLook);
    bool ready() const;

    AnalysisRunner* m_runner = nullptr;
    icl::RunSummary m_summary;
    std::string m_path;
    qint64 m_step = -1;
    int64_t m_nFit = 512;
    int64_t m_nTest = 512;
    bool m_supported = false;
    bool m_active = false;
    bool m_stale = false;
    quint64 m_generation = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; ///< the running batch's cancel flag
    std::vector<icl::ProbeCurve> m_curves;

    QStackedWidget* m_stack = nullptr;
    QLabel* m_message = nullptr;
    QComboBox* m_positions = nullptr;
    std::map<QString, QCheckBox*> m_targets;
    QLabel* m_summaryLabel = nullptr;
    QLabel* m_status = nullptr;
    widgets::PlotView* m_plot = nullptr;
};

} // namespace icl::gui
