#pragma once
// Layers × heads grid of attention-pattern thumbnails (the Attention page's overview).

#include <cstdint>
#include <vector>

#include <QImage>
#include <QWidget>

#include "core/types/matrix.h"
#include "widgets/attention_scale.h"

namespace icl::widgets {

/// Draws one thumbnail per head, layer l in row l and head h in column h, each the head's attention
/// pattern [T, T_keys] (query rows top to bottom, key columns left to right) as a QImage, coloured exactly as
/// the large AttentionPatternView in the same scale mode (attentionColoring: softmax heads on the sequential
/// scale, linear over [0, 1], ÷ row max or log₁₀; linear heads on the diverging scale; the causal mask grey),
/// with a colour-bar legend under the grid that names the scale and its range. Patterns larger than
/// kThumbnailSide cells are max-pooled (largest |value| of each block) to at most kThumbnailSide × kThumbnailSide
/// pixels once in setPatterns, so a repaint only scales cached images (a 12 × 8 grid of 1,024-token patterns
/// redraws in milliseconds). Clicking a thumbnail selects its head (headSelected). Thread affinity: GUI thread only.
class AttentionGrid : public QWidget {
    Q_OBJECT
public:
    /// Largest side of a cached thumbnail image, in pixels.
    static constexpr int kThumbnailSide = 96;

    explicit AttentionGrid(QWidget* parent = nullptr);

    /// Replaces the patterns: `patterns` has nLayers·nHeads entries, index layer·nHeads + head, and
    /// `softmax` one flag per pattern (true: rows are probability distributions). Keeps the selected
    /// head when it still exists.
    void setPatterns(int64_t nLayers, int64_t nHeads, const std::vector<icl::Matrix>& patterns,
        const std::vector<bool>& softmax);
    /// Same as setPatterns with thumbnails already rendered in `mode` (renderThumbnail, e.g. on a worker thread so
    /// that the GUI thread only paints): `thumbnails` and `softmax` have nLayers·nHeads entries,
    /// `largest` the largest |value| of each pattern (for tooltips). `patterns` (optional, same order) lets a later
    /// setScaleMode re-render; when `mode` is not the grid's mode they are re-rendered now.
    void setThumbnails(int64_t nLayers, int64_t nHeads, std::vector<QImage> thumbnails,
        const std::vector<bool>& softmax, std::vector<double> largest, AttentionScale mode = AttentionScale::Linear,
        std::vector<icl::Matrix> patterns = {});
    /// The colour-scale mode of every thumbnail (that of the large view); re-renders the patterns it has.
    void setScaleMode(AttentionScale mode);
    AttentionScale scaleMode() const { return m_mode; }
    /// Text of the legend under the grid, e.g. "attention weight 0 – 1".
    QString legendText() const;
    /// Where the legend's colour bar is drawn (empty when there is none).
    QRect legendBarRect() const;
    void clear();

    int64_t nLayers() const { return m_layers; }
    int64_t nHeads() const { return m_heads; }
    /// Selects a head without emitting headSelected (−1, −1: none).
    void setSelectedHead(int layer, int head);
    int selectedLayer() const { return m_selectedLayer; }
    int selectedHead() const { return m_selectedHead; }

    /// Cached thumbnail of head (layer, head) (null image when absent).
    QImage thumbnail(int layer, int head) const;
    /// Where head (layer, head) is drawn, in widget coordinates (empty when absent).
    QRect thumbnailRect(int layer, int head) const;
    /// Head under `pos`; false outside every thumbnail.
    bool headAt(const QPoint& pos, int* layer, int* head) const;

    /// The thumbnail image of one pattern (see the class comment for the colour scale and pooling).
    /// Thread-safe (QImage only): may run on a worker thread.
    static QImage renderThumbnail(const icl::Matrix& pattern, bool softmax,
        AttentionScale mode = AttentionScale::Linear, int maxSide = kThumbnailSide);

    /// Largest |value| of a pattern (finite entries; 0 for an empty one). Thread-safe.
    static double largestMagnitude(const icl::Matrix& pattern);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    /// The user clicked the thumbnail of head `head` in layer `layer`.
    void headSelected(int layer, int head);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Geometry {
        int left = 0;
        int top = 0;
        int cell = 0;
        int gap = 0;
    };
    Geometry geometry() const;
    void renderAll();

    int64_t m_layers = 0;
    int64_t m_heads = 0;
    std::vector<QImage> m_thumbnails;
    std::vector<icl::Matrix> m_patterns; ///< what the thumbnails show (empty when only images were given)
    AttentionScale m_mode = AttentionScale::Linear;
    std::vector<bool> m_softmax;
    std::vector<double> m_scaleMax; ///< colour scale limit of each thumbnail (for tooltips)
    int m_selectedLayer = -1;
    int m_selectedHead = -1;
};

} // namespace icl::widgets
