#pragma once
// Algorithm map page (Fu et al. 2023, von Oswald et al. 2022; docs/science.md §5): which algorithm, at which step,
// does each layer compute? A heatmap layer × step per family (GD, GD++, Iterative Newton, ridge) with the
// best-matching step drawn over it, the checkpoint timeline, a click on a cell for the layer's against the
// algorithm's predictions, and the best steps across training.

#include <cstdint>
#include <vector>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "core/analysis/algorithm_map.h"
#include "core/types/algorithm_map.h"
#include "core/types/run_summary.h"

namespace icl::widgets {
class AlgorithmMapView;
}

namespace icl::gui {

/// For the selected checkpoint: icl::computeAlgorithmMap (first look on icl::kAlgorithmMapFirstLookPrompts prompts,
/// then the full map) on a worker, drawn by a widgets::AlgorithmMapView for the chosen family and similarity.
/// Families that do not apply to the run (GD++ without fitted scalars) are greyed out in the family selector with
/// the reason as tool tip. A click on a cell plots that layer's query predictions against the algorithm step's on
/// the same prompts. "Across training" computes the map for every checkpoint (icl::computeAlgorithmMaps) and plots
/// k*(ℓ) of the chosen family against the training step. Nothing is written to the experiment file.
/// Regression runs of lsa and gpt2 models only; others get the reason instead. Thread affinity: GUI thread only.
class AlgorithmMapPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit AlgorithmMapPage(QWidget* parent = nullptr);
    ~AlgorithmMapPage() override;

    /// Regression tasks with an lsa or gpt2 model (algorithmMapUnavailableReason); `why` gets the reason otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);

    /// Evaluation prompts of the map (default 1000); re-runs when changed.
    void setPromptCount(int64_t n);
    /// Shows `family` ("gd", "gdpp", "newton", "ridge"); false when it is unknown or greyed out.
    bool setFamily(const QString& family);
    /// Shows the similarity of induced weights (true) or of errors (false).
    void setShowWeights(bool weights);
    /// The scatter of layer map().layers[layerIndex] against step `stepIndex` of the shown family (what a click on
    /// that cell shows); false when the cell does not exist.
    bool showCell(int layerIndex, int stepIndex);
    /// Starts the map of every checkpoint (the button "Across training").
    void computeAcrossTraining();

    const icl::AlgorithmMap& map() const { return m_map; }
    const std::vector<icl::AlgorithmMap>& trainingMaps() const { return m_trainingMaps; }
    widgets::AlgorithmMapView* mapView() const { return m_view; }
    widgets::PlotView* scatterPlot() const { return m_scatter; }
    widgets::PlotView* trainingPlot() const { return m_training; }
    QComboBox* familyChooser() const { return m_family; }
    QComboBox* similarityChooser() const { return m_similarity; }
    QLabel* summaryLabel() const { return m_summaryLine; }
    widgets::PlotView* currentPlot() const override { return m_scatter; }
    bool exportCurrentPlot() override;
    QString cancelledMessage() const override { return tr("Algorithm map cancelled"); }
    QString doneMessage() const override { return tr("Algorithm map: analysis done"); }

private:
    bool bind(const icl::RunSummary& summary, QString* why) override;
    void compute() override;
    void showMap(const icl::AlgorithmMap& map);
    void redraw();
    void updateFamilies();
    void showTraining();
    QString currentFamily() const;

    icl::AlgorithmMap m_map;
    std::vector<icl::AlgorithmMap> m_trainingMaps;
    int64_t m_prompts = 1000;
    int m_cellLayer = -1;
    int m_cellStep = -1;

    QComboBox* m_family = nullptr;
    QComboBox* m_similarity = nullptr;
    QSpinBox* m_promptsSpin = nullptr;
    QPushButton* m_acrossTraining = nullptr;
    QLabel* m_summaryLine = nullptr;
    widgets::AlgorithmMapView* m_view = nullptr;
    widgets::PlotView* m_scatter = nullptr;
    widgets::PlotView* m_training = nullptr;
};

} // namespace icl::gui
