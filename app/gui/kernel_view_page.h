#pragma once
// Kernel view page (Ren & Liu 2023, docs/science.md §3): a trained softmax-attention layer next to the
// one-step contrastive reference model, exactly and with m positive random features.

#include <cstdint>
#include <vector>

#include <QStringList>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"

namespace icl::gui {

/// For the selected checkpoint, softmax layer and head: the exact-kernel reference model's attention
/// matrix next to the random-feature one for one prompt, error vs number of random features m on
/// log-log axes with the fitted slope, the reference model's loss over GD steps, and the evaluation
/// loss curves of attention variants trained on the same task (experiment files found next to the
/// shown one, plus files the user adds). Follows the checkpoint timeline; the analysis runs on a
/// worker thread (AnalysisRunner) while the page is active; superseded results are dropped and a
/// cancelled analysis stops at its next progress report. Nothing is written to the experiment file.
/// Thread affinity: GUI thread only.
class KernelViewPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit KernelViewPage(QWidget* parent = nullptr);

    /// Adds experiment files to the variant comparison (ignores files already shown). Files that do
    /// not open are reported in the variants status line.
    void addVariantFiles(const QStringList& paths);
    QStringList variantFiles() const { return m_variantFiles; }

    /// lsa models with at least one softmax layer; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);

    QSpinBox* layerChooser() const { return m_layer; }
    QComboBox* featuresChooser() const { return m_matrixM; }
    widgets::HeatmapView* exactHeatmap() const { return m_exact; }
    widgets::HeatmapView* approxHeatmap() const { return m_approx; }
    widgets::PlotView* errorPlot() const { return m_errorPlot; }
    widgets::PlotView* lossPlot() const { return m_lossPlot; }
    widgets::PlotView* variantPlot() const { return m_variantPlot; }
    QLabel* summaryLabel() const { return m_summaryLabel; }
    QString cancelledMessage() const override { return tr("Kernel view cancelled"); }
    QString doneMessage() const override { return tr("Kernel view: analysis done"); }

private:
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    void runVariants();

    quint64 m_variantGeneration = 0;
    QStringList m_variantFiles;   ///< the shown file first, then siblings and added files

    QSpinBox* m_layer = nullptr;
    QSpinBox* m_head = nullptr;
    QSpinBox* m_prompt = nullptr;
    QComboBox* m_matrixM = nullptr;
    QLabel* m_summaryLabel = nullptr;
    widgets::HeatmapView* m_exact = nullptr;
    widgets::HeatmapView* m_approx = nullptr;
    widgets::PlotView* m_errorPlot = nullptr;
    widgets::PlotView* m_lossPlot = nullptr;
    widgets::PlotView* m_variantPlot = nullptr;
    QLabel* m_variantStatus = nullptr;
    QPushButton* m_addVariants = nullptr;
};

} // namespace icl::gui
