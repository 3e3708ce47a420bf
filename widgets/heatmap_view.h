#pragma once
// A QCustomPlot heatmap of an icl::Matrix (core/types/matrix.h) with export to PNG/SVG/PDF/CSV.

#include <map>
#include <string>

#include <QWidget>

#include "core/types/matrix.h"

class QCPColorMap;
class QCPColorScale;
class QCPTextElement;
class QCustomPlot;
class QToolBar;

namespace icl::widgets {

/// Draws one Matrix as a grid of cells: row 0 at the top, a diverging blue–white–red colour scale
/// symmetric around 0 with its legend to the right, row/column tick labels from the matrix labels,
/// the matrix name as title and the metadata caption (experiment, checkpoint) under the plot.
/// Hovering a cell shows its row label, column label and value.
/// Thread affinity: GUI thread only.
class HeatmapView : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapView(QWidget* parent = nullptr);
    ~HeatmapView() override;

    /// Replaces the drawn matrix (full redraw). Missing labels become 1-based indices.
    void setMatrix(const icl::Matrix& matrix);
    const icl::Matrix& matrix() const { return m_matrix; }

    /// Metadata written into exported files and shown as caption (when the caption is visible).
    void setMetadata(const std::map<std::string, std::string>& metadata);
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }

    /// Colour scale limit L: values map to [−L, L]. L <= 0 (the default) means max |value|.
    void setColorLimit(double limit);
    /// The limit in use (never 0: an all-zero matrix uses 1).
    double colorLimit() const;

    /// Axis titles: the rows' (left) and the columns' (top), e.g. "layer" and "token position". Empty: none.
    void setAxisLabels(const std::string& rowAxis, const std::string& colAxis);
    /// Title of the colour legend (e.g. "patching effect"). Empty: none.
    void setColorLabel(const std::string& label);

    /// Shows or hides the metadata caption on screen (exports always carry it).
    void setCaptionVisible(bool visible);
    void setToolBarVisible(bool visible);

    QCustomPlot* plot() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_colorMap; }
    QCPColorScale* colorScale() const { return m_colorScale; }

    /// Cell under `pos` (plot widget coordinates); false outside the matrix.
    bool cellAt(const QPointF& pos, int* row, int* col) const;
    /// Centre of a cell in plot widget coordinates.
    QPointF cellCenter(int row, int col) const;
    /// Hover text of a cell: "row <label>, column <label>\nvalue = <v>".
    QString cellText(int row, int col) const;

    /// Draws pending changes now (screenshots, export).
    void replotNow();

    /// Writes the heatmap to `path` as "png" (at `dpi`), "svg", "pdf" (6.4 × 4.0 inches, caption
    /// included) or "csv" (matrixCsv). Returns false and sets `*error` on failure.
    bool exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const;

    /// The matrix as CSV: "# key: value" metadata lines, a header `row,<col labels>`, one line per
    /// row starting with its label; values with 9 significant digits.
    static std::string matrixCsv(const icl::Matrix& matrix, const std::map<std::string, std::string>& metadata);

public Q_SLOTS:
    /// Asks for a file name and format (and the DPI for PNG) and exports the heatmap.
    void exportWithDialog();

Q_SIGNALS:
    void exported(const QString& path);

private:
    void rebuild();
    QString rowLabel(int row) const;
    QString colLabel(int col) const;

    icl::Matrix m_matrix;
    std::map<std::string, std::string> m_metadata;
    double m_limit = 0.0;
    std::string m_rowAxisLabel;
    std::string m_colAxisLabel;
    std::string m_colorLabel;
    bool m_captionVisible = true;
    QCustomPlot* m_plot = nullptr;
    QToolBar* m_toolBar = nullptr;
    QCPColorMap* m_colorMap = nullptr;
    QCPColorScale* m_colorScale = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPTextElement* m_caption = nullptr;
};

} // namespace icl::widgets
