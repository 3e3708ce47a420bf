#pragma once
// Parts of the GD alignment page: the strip of the selected checkpoint's alignment metrics and the weights tab
// (learned W_KᵀW_Q and P·W_V next to the GD construction, layer by layer).

#include <map>
#include <string>
#include <vector>

#include <QFrame>
#include <QString>
#include <QTableWidget>
#include <QWidget>

#include "app/gui/gui_forward.h"
#include "core/analysis/gd_alignment.h"

namespace icl::gui {

/// The weights tab's note (on the view and in every exported heatmap's caption, metadata key "sign"): W_KᵀW_Q and
/// P·W_V are determined up to a joint sign, so a learned pair may show the opposite signs of the construction.
extern const char* const kSignNote;

/// "gd_2" → "GD-2", "gdpp_3" → "GD++-3", "features_gd_1" → "features + GD-1".
QString prettyReference(const std::string& ref);
/// A metric with 4 significant digits (formatValue), "—" for NaN (not computed).
QString metricText(double v);
/// A tab's status line (object name `objectName`), hidden while empty.
QLabel* makeTabStatusLabel(const QString& objectName, QWidget* parent);

/// The selected checkpoint against its GD reference: model cosine, prediction difference, model difference,
/// relative model difference, model loss and the reference's loss (object names "modelCosineValue", …; the title
/// "metricsTitle"). Thread affinity: GUI thread only.
class AlignmentMetricsStrip : public QFrame {
    Q_OBJECT
public:
    explicit AlignmentMetricsStrip(QWidget* parent = nullptr);
    /// "Checkpoint STEP vs REF" while the metrics are computed ("…").
    void setPending(qint64 step, const QString& reference);
    /// The metrics of `result` and its η and number of prompts.
    void showResult(const icl::AlignmentResult& result);
    /// "—" in every value (the computation failed).
    void clear();

private:
    void setValues(const QString& text);

    QLabel* m_title = nullptr;
    std::vector<QLabel*> m_values; ///< in the order of AlignmentMetrics' fields shown
    std::vector<QString> m_tips;   ///< each value's tool tip (its full-precision value is appended)
};

/// The weights tab: a layer chooser and four heatmaps (learned and constructed W_KᵀW_Q above, P·W_V below),
/// each with its own colour scale. Thread affinity: GUI thread only.
class LsaWeightsTab : public QWidget {
    Q_OBJECT
public:
    /// `status` is the tab's status line (placed between the controls and the heatmaps).
    LsaWeightsTab(QLabel* status, QWidget* parent = nullptr);
    /// Shows `views` (one per layer; "tied layer" when `tied`), keeping the chosen layer; `metadata` goes with
    /// every heatmap's export (plus "layer").
    void setViews(
        const std::vector<icl::LsaWeightView>& views, bool tied, const std::map<std::string, std::string>& metadata);
    /// No weights (the read failed).
    void clear();
    /// Opens the export dialog of the heatmap that has the focus (the learned W_KᵀW_Q by default); false when empty.
    bool exportFocused();

    QComboBox* layerChooser() const { return m_layer; }
    /// Learned (construction=false) or constructed W_KᵀW_Q (kq=true) / P·W_V heatmap.
    widgets::HeatmapView* heatmap(bool kq, bool construction) const;

private:
    void showLayer(int index);

    std::vector<icl::LsaWeightView> m_views;
    std::map<std::string, std::string> m_metadata;
    QComboBox* m_layer = nullptr;
    widgets::HeatmapView* m_kq = nullptr;
    widgets::HeatmapView* m_kqConstruction = nullptr;
    widgets::HeatmapView* m_pv = nullptr;
    widgets::HeatmapView* m_pvConstruction = nullptr;
};

/// K layers vs K steps: one row per layer k with the model's, GD-k's and GD++-k's losses and the cosines
/// (object name "layerStepTable"). Thread affinity: GUI thread only.
class LayerStepTable : public QTableWidget {
    Q_OBJECT
public:
    explicit LayerStepTable(QWidget* parent = nullptr);
    void setRows(const std::vector<icl::LayerStepRow>& rows);
};

} // namespace icl::gui
