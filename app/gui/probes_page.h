#pragma once
// Probes page (Guo et al. 2023, docs/science.md §2): normalised error of linear probes on every residual-
// stream layer of a GPT-2, one line per target, at the chosen kind of position.

#include <cstdint>
#include <map>
#include <vector>

#include <QStringList>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"
#include "core/analysis/probe_analysis.h"
#include "core/types/probe.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// For the selected checkpoint: icl::computeProbe for each checked target (x, phi, y, oracle, gd_1;
/// phi and oracle only on representation tasks) at the chosen positions (x, y or query tokens),
/// drawn with icl::probeFigure. Follows the checkpoint timeline; the probes are fitted on a worker
/// thread (AnalysisRunner) while the page is active by one icl::computeProbes for every checked target
/// (one forward pass shared by all); a first look on the first icl::kProbeFirstLookPrompts fit and test
/// prompts is shown first and then replaced by the full result; a superseded or cancelled batch stops
/// at its next forward chunk or target and its result is dropped. Nothing is written to the
/// experiment file. gpt2 runs only; others get a message instead.
/// Thread affinity: GUI thread only.
class ProbesPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit ProbesPage(QWidget* parent = nullptr);

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

    /// The curves shown (one per checked target, in page order).
    const std::vector<icl::ProbeCurve>& curves() const { return m_curves; }
    widgets::PlotView* plot() const { return m_views.plot; }
    QString cancelledMessage() const override { return tr("Probes cancelled (the running probe finishes first)"); }
    QString doneMessage() const override { return tr("Probes: analysis done"); }
    QCheckBox* targetCheck(const QString& target) const;
    QLabel* summaryLabel() const { return m_views.summary; }

private:
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    /// Plots `curves` and their summary line; a first look keeps the status line saying that the rest follows.
    void showCurves(const std::vector<icl::ProbeCurve>& curves, bool firstLook);

    int64_t m_nFit = 512;
    int64_t m_nTest = 512;
    std::vector<icl::ProbeCurve> m_curves;

    QComboBox* m_positions = nullptr;
    std::map<QString, QCheckBox*> m_targets;
    SummaryAndPlot m_views;
};

} // namespace icl::gui
