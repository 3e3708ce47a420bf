#pragma once
// GD alignment page (von Oswald et al. 2022): how closely a trained LSA follows gradient descent.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "core/analysis/gd_alignment.h"

namespace icl::gui {

class AlignmentMetricsStrip;
class LayerStepTable;
class LsaWeightsTab;

/// Tabs: alignment metrics over training (from the file's metrics), model vs GD-K predictions of
/// the selected checkpoint, learned W_KᵀW_Q and P·W_V next to the GD construction, the η scan, K
/// layers vs K steps of GD and GD++, and out-of-distribution curves; above them, the selected
/// checkpoint's alignment metrics vs GD-K. Follows the checkpoint timeline: the checkpoint analyses
/// run (on a worker thread, AnalysisRunner) when the page is active and the checkpoint or file
/// changes; results of superseded jobs are dropped by a per-analysis generation counter. Nothing is
/// written to the experiment file. Needs an LSA model; other runs get a message instead.
/// Thread affinity: GUI thread only.
class GdAlignmentPage : public AnalysisPage {
    Q_OBJECT
public:
    /// Checkpoint analyses, in the order they run.
    enum Analysis { Metrics = 0, Weights, EtaScan, Ood, Layers, Copy, AnalysisCount };

    explicit GdAlignmentPage(QWidget* parent = nullptr);
    ~GdAlignmentPage() override;

    /// A running job wrote new rows to `summary`'s file: redraws the alignment-over-training plot (the
    /// paper's figure, live while training). A file other than the one shown is opened instead
    /// (showExperiment at its last checkpoint). Checkpoint analyses are not re-run.
    /// Drops queued analyses and the result of the running one (which runs to its end).
    void cancelJobs() override;
    QString cancelledMessage() const override { return tr("Analyses cancelled (a running computation finishes first)"); }
    QString doneMessage() const override { return tr("GD alignment: analyses done"); }

    /// Selects a tab by name: training, scatter, weights, eta, layers, ood, copy. False if unknown.
    bool showTab(const QString& name);
    static QStringList tabNames();

    /// The plot of the visible tab (nullptr on the weights and layers tabs).
    widgets::PlotView* currentPlot() const override;
    /// Opens the export dialog of the visible tab's plot (the learned W_KᵀW_Q on the weights tab).
    bool exportCurrentPlot() override;

    /// "lsa" models only; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);

    /// The reference the checkpoint is compared with: the first of the config's eval.alignment
    /// ("features_gd_1" for the sine preset), else "gd_K" with K the number of layers.
    std::string reference() const;

    QTabWidget* tabs() const { return m_tabs; }
    widgets::PlotView* alignmentPlot() const { return m_alignment.plot; }
    widgets::PlotView* scatterPlot() const { return m_scatter.plot; }
    widgets::PlotView* etaPlot() const { return m_eta.plot; }
    widgets::PlotView* oodPlot() const { return m_ood.plot; }
    QTableWidget* layerTable() const;
    QComboBox* layerChooser() const;
    QComboBox* oodKindChooser() const { return m_oodKind; }
    /// The copy analysis (interleaved runs): G[k][j] heatmap and its own/next/other summary.
    widgets::HeatmapView* copyHeatmap() const { return m_copyHeatmap; }
    QLabel* copySummary() const { return m_copySummary; }
    QCheckBox* gdppCheck() const { return m_withGdpp; }
    /// Learned (construction=false) or constructed W_KᵀW_Q (kq=true) / P·W_V heatmap.
    widgets::HeatmapView* heatmap(bool kq, bool construction) const;

private:
    /// The alignment-over-training plot at once; the checkpoint analyses (compute) when shown.
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    void runMetrics();
    void runWeights();
    void runEtaScan();
    void runOod();
    void runLayers();
    void runCopy();
    /// Runs `work` on the worker as analysis `which` (a newer run of the same analysis drops its result):
    /// `show(result)` on the GUI thread; on an error `clear()` and the error in `status`.
    template <class Result>
    void runAnalysis(Analysis which, const QString& label, QLabel* status, std::function<Result()> work,
        std::function<void(const Result&)> show, std::function<void()> clear);
    void showAlignmentOverTraining();
    void setStatus(QLabel* label, const QString& text, bool error = false, bool pending = false);
    std::map<std::string, std::string> metadata() const;

    int64_t m_layers = 1;
    int64_t m_linearLayers = 1; ///< layers without softmax: the number of GD steps they compare with
    bool m_tied = false;
    bool m_interleaved = false;
    std::string m_reference;
    std::array<quint64, AnalysisCount> m_analysisGeneration {};
    QString m_currentJob;

    /// A tab's plot and its status line.
    struct PlotTab {
        widgets::PlotView* plot = nullptr;
        QLabel* status = nullptr;
    };
    /// Adds a tab of `controls` (optional) above a plot, with its status line; object names `plotName`,
    /// `statusName`.
    PlotTab addPlotTab(QWidget* controls, const QString& plotName, const QString& statusName, const QString& title,
        const QString& toolTip);
    /// Adds a tab of `controls` (optional), a status line (object name `statusName`) and `body`.
    void addTab(QWidget* controls, QLabel* status, QWidget* body, const QString& title, const QString& toolTip);

    AlignmentMetricsStrip* m_metrics = nullptr;
    QTabWidget* m_tabs = nullptr;
    PlotTab m_alignment; ///< over training
    PlotTab m_scatter;   ///< model vs GD
    PlotTab m_eta;       ///< η scan
    PlotTab m_ood;       ///< out of distribution
    LsaWeightsTab* m_weights = nullptr;
    QLabel* m_weightsStatus = nullptr;
    QSpinBox* m_etaK = nullptr;
    QCheckBox* m_withGdpp = nullptr;
    LayerStepTable* m_layerTable = nullptr;
    QLabel* m_layersStatus = nullptr;
    QComboBox* m_oodKind = nullptr;
    widgets::HeatmapView* m_copyHeatmap = nullptr;
    QLabel* m_copySummary = nullptr;
    QLabel* m_copyStatus = nullptr;
};

} // namespace icl::gui
