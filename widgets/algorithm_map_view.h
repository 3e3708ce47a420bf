#pragma once
// The algorithm map of one family as a heatmap (layer × step, similarity in [−1, 1] on a colour bar) with the
// best-matching step of every layer drawn over it, hover values, a click signal per cell, and export to
// PNG/SVG/PDF/CSV (docs/science.md §5).

#include <map>
#include <string>

#include <QWidget>

#include "core/types/algorithm_map.h"

class QCPCurve;
class QToolBar;

namespace icl::widgets {

class HeatmapView;

/// Shows one family of an icl::AlgorithmMap: rows are layers (layer 1 on top), columns the family's steps (GD's
/// log-spaced k, Newton's k, ridge's λ from large to small), cells the similarity of errors or of induced weights
/// on a diverging colour scale fixed to [−1, 1]; the best step per layer is a line with markers over the cells.
/// An unavailable family shows no cells and its reason as the title. Thread affinity: GUI thread only.
class AlgorithmMapView : public QWidget {
    Q_OBJECT
public:
    explicit AlgorithmMapView(QWidget* parent = nullptr);
    ~AlgorithmMapView() override;

    /// Draws `family` of `map` (similarity of induced weights when `weights`, else of errors).
    void setMap(const icl::AlgorithmMap& map, const std::string& family, bool weights);
    void setMetadata(const std::map<std::string, std::string>& metadata);
    const icl::AlgorithmMap& map() const { return m_map; }
    const std::string& family() const { return m_family; }
    bool showsWeights() const { return m_weights; }

    HeatmapView* heatmap() const { return m_heatmap; }
    /// The best-match curve: one point (column of k*(ℓ), row ℓ − 1) per layer that has a best step, in layer order.
    QCPCurve* bestCurve() const { return m_best; }

    /// Writes what is shown to `path` as "png" (at `dpi`), "svg", "pdf" (6.4 × 4.0 inches, caption included) or
    /// "csv" (algorithmMapCsv: the matrix, the best step and its similarity per layer). False and `*error` on failure.
    bool exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const;

public Q_SLOTS:
    void exportWithDialog();

Q_SIGNALS:
    /// A click on the cell of layer map().layers[layerIndex] and step index `stepIndex` of the shown family.
    void cellClicked(int layerIndex, int stepIndex);
    void exported(const QString& path);

private:
    void rebuild();

    icl::AlgorithmMap m_map;
    std::string m_family;
    bool m_weights = false;
    std::map<std::string, std::string> m_metadata;
    QToolBar* m_toolBar = nullptr;
    HeatmapView* m_heatmap = nullptr;
    QCPCurve* m_best = nullptr;

    friend bool exportAlgorithmMap(const icl::AlgorithmMap&, const std::string&, bool,
        const std::map<std::string, std::string>&, const std::string&, const std::string&, int, std::string*);
};

} // namespace icl::widgets
