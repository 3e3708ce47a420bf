#pragma once
// A row of exemplar tiles (e.g. the in-context items and the query of a few-shot classification sequence):
// grayscale images or colour-coded vectors, each with a caption under it.

#include <cstdint>
#include <vector>

#include <QImage>
#include <QString>
#include <QWidget>

namespace icl::widgets {

/// One tile of an ExemplarStrip.
struct ExemplarTile {
    std::vector<float> values;   ///< [∏ shape] row-major
    std::vector<int64_t> shape;  ///< {rows, cols}: a grayscale image; {D}: a vector
    QString caption;             ///< text under the tile (lines separated by '\n')
    QString badge;               ///< short mark drawn over the tile's top edge (e.g. "holdout"); empty = none
    QString toolTip;             ///< hover text (the caption when empty)
    bool highlighted = false;    ///< drawn with a thick frame after a wider gap (e.g. the query)
};

/// Draws tiles left to right. Images ({rows, cols}) are grayscale with intensity clamp(v, 0, 1) (0 black,
/// 1 white). Vectors ({D}) are wrapped row-major into a block ⌈√D⌉ cells wide, each cell on the diverging
/// blue–white–red scale (color_scales.h) over ±vectorLimit(), the largest |value| of all vector tiles, so the
/// colours of different tiles compare; cells past D are light grey. A tile is scaled to tileSide() pixels,
/// nearest-neighbour when enlarged; badged tiles get an orange frame, highlighted ones a thick blue frame.
/// Hovering a tile shows its tool tip. Thread affinity: GUI thread only (renderExemplar: any thread).
class ExemplarStrip : public QWidget {
    Q_OBJECT
public:
    explicit ExemplarStrip(QWidget* parent = nullptr);

    void setTiles(std::vector<ExemplarTile> tiles);
    void clear();
    const std::vector<ExemplarTile>& tiles() const { return m_tiles; }

    /// Side of a drawn tile in pixels (default 72).
    void setTileSide(int side);
    int tileSide() const { return m_side; }

    /// Largest |value| over the vector tiles (the colour scale's limit; 0 when there are none).
    double vectorLimit() const { return m_limit; }
    /// Tile `index` rendered at its own resolution (rows × cols pixels, or the wrapped vector block).
    QImage tileImage(int index) const;
    /// Where tile `index` is drawn (the image square, without its caption), widget coordinates.
    QRect tileRect(int index) const;
    /// Tile whose square or caption is under `pos`; −1 when none.
    int tileAt(const QPoint& pos) const;

    /// The image of one exemplar (see the class comment): Format_RGB32, rows × cols for an image, ⌈D/w⌉ × w
    /// with w = ⌈√D⌉ for a vector coloured over ±`limit`. A null image for an empty or inconsistent shape.
    static QImage renderExemplar(const std::vector<float>& values, const std::vector<int64_t>& shape, double limit);

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    int captionHeight() const;

    std::vector<ExemplarTile> m_tiles;
    std::vector<QImage> m_images;
    double m_limit = 0.0;
    int m_side = 72;
};

} // namespace icl::widgets
