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
    QStringList variantFiles() const { return m_variants.files; }

    /// lsa models with at least one softmax layer; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);

    QSpinBox* layerChooser() const { return m_choose.layer; }
    QComboBox* featuresChooser() const { return m_features; }
    widgets::HeatmapView* exactHeatmap() const { return m_views.exact; }
    widgets::HeatmapView* approxHeatmap() const { return m_views.approx; }
    widgets::PlotView* errorPlot() const { return m_views.error; }
    widgets::PlotView* lossPlot() const { return m_views.loss; }
    widgets::PlotView* variantPlot() const { return m_variants.plot; }
    QLabel* summaryLabel() const { return m_views.summary; }
    QString cancelledMessage() const override { return tr("Kernel view cancelled"); }
    QString doneMessage() const override { return tr("Kernel view: analysis done"); }

private:
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    void runVariants();

    /// Which attention matrix is shown: softmax layer, head and evaluation prompt.
    struct MatrixChoosers {
        QSpinBox* layer = nullptr;
        QSpinBox* head = nullptr;
        QSpinBox* prompt = nullptr;
    } m_choose;
    QComboBox* m_features = nullptr; ///< the number of random features m of the approximated matrix
    /// The kernel view of the chosen matrix: its summary line, the exact and the random-feature attention
    /// matrices, error vs m and the reference model's loss over GD steps.
    struct KernelViews {
        QLabel* summary = nullptr;
        widgets::HeatmapView* exact = nullptr;
        widgets::HeatmapView* approx = nullptr;
        widgets::PlotView* error = nullptr;
        widgets::PlotView* loss = nullptr;
    } m_views;
    /// The variant comparison: its files, the generation that drops superseded readings, plot and status line.
    struct Variants {
        QStringList files; ///< the shown file first, then siblings and added files
        quint64 generation = 0;
        widgets::PlotView* plot = nullptr;
        QLabel* status = nullptr;
    } m_variants;
};

} // namespace icl::gui
