#pragma once
// The large view of one head's attention pattern: token labels on both axes, colour legend, hover text,
// row selection, export to PNG/SVG/PDF/CSV.

#include <map>
#include <string>

#include <QWidget>

#include "core/types/matrix.h"
#include "widgets/attention_scale.h"

class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QCPTextElement;
class QCustomPlot;
class QToolBar;

namespace icl::widgets {

/// Draws one attention pattern [T, T_keys] (Matrix rows = query tokens from the top, columns = key
/// tokens, labels from the matrix, its name as title). Softmax patterns use the sequential scale (viridis) in the
/// toolbar's scale mode (AttentionScale: linear over [0, 1], each row ÷ its maximum, or log₁₀ over [10⁻³, 1]) with
/// the legend "attention weight", the causal mask in light grey; linear (LSA) patterns the diverging scale
/// symmetric around 0 with the legend "attention score" (attentionColoring). Token labels are thinned to what fits
/// (a smaller font on dense axes, then an odd stride so that neither x nor y tokens drop out), so a 1,024-token
/// pattern draws in one colour-map image. Hovering a cell shows "query token → key token: value"; clicking a cell
/// selects its query row (querySelected) and frames it (on screen only: exports carry no frame).
/// Thread affinity: GUI thread only.
class AttentionPatternView : public QWidget {
    Q_OBJECT
public:
    explicit AttentionPatternView(QWidget* parent = nullptr);
    ~AttentionPatternView() override;

    /// Replaces the pattern. `softmax`: rows are probability distributions (sequential scale).
    void setPattern(const icl::Matrix& pattern, bool softmax);
    void clear();
    const icl::Matrix& pattern() const { return m_pattern; }
    bool isSoftmax() const { return m_softmax; }

    /// Metadata written into exported files and shown as caption (experiment, checkpoint, seed, prompt).
    void setMetadata(const std::map<std::string, std::string>& metadata);
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }

    /// The colour-scale mode (toolbar "Linear" / "÷ row max" / "Log"; Linear by default). Row shows the structure
    /// of diffuse rows next to peaked ones, Log the small weights. Hover text and CSV keep the pattern's values.
    /// Emits scaleModeChanged when it changes.
    void setScaleMode(AttentionScale mode);
    AttentionScale scaleMode() const { return m_mode; }
    /// setScaleMode(Row) or setScaleMode(Linear).
    void setRowNormalized(bool on) { setScaleMode(on ? AttentionScale::Row : AttentionScale::Linear); }
    bool isRowNormalized() const { return m_mode == AttentionScale::Row; }

    /// Frames query row `row` (−1: none) without emitting querySelected.
    void setSelectedQuery(int row);
    int selectedQuery() const { return m_selectedRow; }

    /// Colour scale range in use: [0, 1] for softmax ([10⁻³, 1] in Log), [−L, L] for linear patterns ([−1, 1]
    /// with rows normalised).
    double colorLower() const;
    double colorUpper() const;
    /// Tick label stride of each axis (1 = every token labelled).
    int keyLabelStride() const { return m_keyStride; }
    int queryLabelStride() const { return m_queryStride; }

    void setToolBarVisible(bool visible);
    void setCaptionVisible(bool visible);

    QCustomPlot* plot() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_colorMap; }
    QCPColorScale* colorScale() const { return m_colorScale; }

    /// Cell under `pos` (plot widget coordinates); false outside the pattern.
    bool cellAt(const QPointF& pos, int* row, int* col) const;
    /// Centre of a cell in plot widget coordinates.
    QPointF cellCenter(int row, int col) const;
    /// Hover text of a cell: "<query label> → <key label>: <value>" (6 significant digits).
    QString cellText(int row, int col) const;

    /// Draws pending changes now (screenshots, export).
    void replotNow();

    /// Writes the view to `path` as "png" (at `dpi`), "svg", "pdf" (6.4 × 4.0 inches, caption included)
    /// or "csv" (the pattern matrix, HeatmapView::matrixCsv). Returns false and sets `*error` on failure.
    bool exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const;

public Q_SLOTS:
    void exportWithDialog();

Q_SIGNALS:
    /// The user clicked a cell of query row `row`.
    void querySelected(int row);
    void scaleModeChanged(icl::widgets::AttentionScale mode);
    void exported(const QString& path);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rebuild();
    void updateTicks();
    void updateSelectionFrame();
    QString rowLabel(int row) const;
    QString colLabel(int col) const;

    icl::Matrix m_pattern;
    bool m_softmax = true;
    std::map<std::string, std::string> m_metadata;
    int m_selectedRow = -1;
    bool m_captionVisible = true;
    AttentionScale m_mode = AttentionScale::Linear;
    double m_lower = 0.0; ///< colour range of the last rebuild
    double m_upper = 1.0;
    class QAction* m_modeActions[3] = {};
    int m_keyStride = 1;
    int m_queryStride = 1;
    QCustomPlot* m_plot = nullptr;
    QToolBar* m_toolBar = nullptr;
    QCPColorMap* m_colorMap = nullptr;
    QCPColorScale* m_colorScale = nullptr;
    QCPItemRect* m_frame = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPTextElement* m_caption = nullptr;
};

} // namespace icl::widgets
