#pragma once
// Kernel view page (Ren & Liu 2023, PAPERS.md §3): a trained softmax-attention layer next to the
// one-step contrastive reference model, exactly and with m positive random features.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <QStringList>
#include <QWidget>

#include "core/types/run_summary.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QStackedWidget;

namespace icl::widgets {
class HeatmapView;
class PlotView;
} // namespace icl::widgets

namespace icl::gui {

class AnalysisRunner;

/// For the selected checkpoint, softmax layer and head: the exact-kernel reference model's attention
/// matrix next to the random-feature one for one prompt, error vs number of random features m on
/// log-log axes with the fitted slope, the reference model's loss over GD steps, and the evaluation
/// loss curves of attention variants trained on the same task (experiment files found next to the
/// shown one, plus files the user adds). Follows the checkpoint timeline; the analysis runs on a
/// worker thread (AnalysisRunner) while the page is active; superseded results are dropped and a
/// cancelled analysis stops at its next progress report. Nothing is written to the experiment file.
/// Thread affinity: GUI thread only.
class KernelViewPage : public QWidget {
    Q_OBJECT
public:
    explicit KernelViewPage(QWidget* parent = nullptr);
    ~KernelViewPage() override;

    /// Shows a file at checkpoint `step` (the analysis runs when the page is active).
    void showExperiment(const icl::RunSummary& summary, qint64 step);
    /// Follows the timeline.
    void selectCheckpoint(qint64 step);
    /// The page is on screen (runs a pending analysis) or not.
    void setActive(bool active);
    bool isBusy() const;
    /// Drops queued work and stops the running analysis at its next progress report.
    void cancel();

    /// Adds experiment files to the variant comparison (ignores files already shown). Files that do
    /// not open are reported in the variants status line.
    void addVariantFiles(const QStringList& paths);
    QStringList variantFiles() const { return m_variantFiles; }

    /// lsa models with at least one softmax layer; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);

    qint64 checkpointStep() const { return m_step; }
    QSpinBox* layerChooser() const { return m_layer; }
    QSpinBox* headChooser() const { return m_head; }
    QSpinBox* promptChooser() const { return m_prompt; }
    QComboBox* featuresChooser() const { return m_matrixM; }
    widgets::HeatmapView* exactHeatmap() const { return m_exact; }
    widgets::HeatmapView* approxHeatmap() const { return m_approx; }
    widgets::PlotView* errorPlot() const { return m_errorPlot; }
    widgets::PlotView* lossPlot() const { return m_lossPlot; }
    widgets::PlotView* variantPlot() const { return m_variantPlot; }
    QLabel* summaryLabel() const { return m_summaryLabel; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* messageLabel() const { return m_message; }

Q_SIGNALS:
    void busyStarted();
    void progressChanged(int percent, const QString& text);
    void busyFinished();

private:
    void runKernel();
    void runVariants();
    bool ready() const;

    AnalysisRunner* m_runner = nullptr;
    icl::RunSummary m_summary;
    std::string m_path;
    qint64 m_step = -1;
    bool m_supported = false;
    bool m_active = false;
    bool m_stale = false;
    quint64 m_generation = 0;
    quint64 m_variantGeneration = 0;
    std::shared_ptr<std::atomic<bool>> m_stop; ///< the running analysis's cancel flag
    std::shared_ptr<std::atomic<int>> m_percent;
    QStringList m_variantFiles;   ///< the shown file first, then siblings and added files

    QStackedWidget* m_stack = nullptr;
    QLabel* m_message = nullptr;
    QSpinBox* m_layer = nullptr;
    QSpinBox* m_head = nullptr;
    QSpinBox* m_prompt = nullptr;
    QComboBox* m_matrixM = nullptr;
    QLabel* m_summaryLabel = nullptr;
    QLabel* m_status = nullptr;
    widgets::HeatmapView* m_exact = nullptr;
    widgets::HeatmapView* m_approx = nullptr;
    widgets::PlotView* m_errorPlot = nullptr;
    widgets::PlotView* m_lossPlot = nullptr;
    widgets::PlotView* m_variantPlot = nullptr;
    QLabel* m_variantStatus = nullptr;
    QPushButton* m_addVariants = nullptr;
};

} // namespace icl::gui
