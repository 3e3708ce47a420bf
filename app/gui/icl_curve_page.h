#pragma once
// ICL curve page (Garg et al. 2022): the model and every baseline against the number of in-context
// examples, with bootstrap 95% confidence intervals, for the selected checkpoint.

#include <cstdint>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"
#include "core/analysis/icl_curve.h"
#include "core/types/icl_curve.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// For the selected checkpoint: icl::computeIclCurve on the run's evaluation prompts (or as many
/// prompts as the chooser says), drawn with icl::iclCurveFigure. Works for every model kind. Follows
/// the checkpoint timeline; the analysis runs on a worker thread (AnalysisRunner) while the page is
/// active; a superseded or cancelled analysis stops at its next progress report and its result is
/// dropped. Nothing is written to the experiment file.
/// Thread affinity: GUI thread only.
class IclCurvePage : public AnalysisPage {
    Q_OBJECT
public:
    explicit IclCurvePage(QWidget* parent = nullptr);

    /// Number of prompts (0 = the run's eval.n_prompts); re-runs the analysis when it changes.
    void setPromptCount(int64_t n);
    /// The options of the next (or shown) analysis, for the selected checkpoint.
    icl::IclCurveOptions options() const;

    /// The last result shown (empty before the first one).
    const icl::IclCurve& curve() const { return m_curve; }
    widgets::PlotView* plot() const { return m_views.plot; }
    QString cancelledMessage() const override { return tr("ICL curve cancelled"); }
    QString doneMessage() const override { return tr("ICL curve: analysis done"); }
    QLabel* summaryLabel() const { return m_views.summary; }

private:
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    /// Plots `curve` and its summary line; a preview (computed on the first prompts only) keeps the
    /// status line saying that the rest is still being computed.
    void showCurve(const icl::IclCurve& curve, bool preview);

    icl::IclCurve m_curve;

    QSpinBox* m_prompts = nullptr;
    SummaryAndPlot m_views;
};

} // namespace icl::gui
