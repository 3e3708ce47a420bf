#include "widgets/exemplar_strip.h"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include "widgets/color_scales.h"

namespace icl::widgets {

namespace {

constexpr int kMargin = 6;
constexpr int kGap = 12;        ///< between tiles
constexpr int kExtraGap = 18;   ///< added before a highlighted tile
const QColor kBadgeColor(0xD5, 0x5E, 0x00);
const QColor kHighlightColor(0x00, 0x72, 0xB2);

QFont smallFont(const QFont& base)
{
    QFont f = base;
    f.setPointSizeF(base.pointSizeF() * 0.85);
    return f;
}

} // namespace

ExemplarStrip::ExemplarStrip(QWidget* parent)
    : QWidget(parent)
{
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

QImage ExemplarStrip::renderExemplar(const std::vector<float>& values, const std::vector<int64_t>& shape, double limit)
{
    if (shape.size() == 2) {
        const int64_t rows = shape[0], cols = shape[1];
        if (rows <= 0 || cols <= 0 || int64_t(values.size()) != rows * cols)
            return {};
        QImage img(int(cols), int(rows), QImage::Format_RGB32);
        for (int64_t r = 0; r < rows; ++r) {
            auto* line = reinterpret_cast<QRgb*>(img.scanLine(int(r)));
            for (int64_t c = 0; c < cols; ++c) {
                const float v = values[size_t(r * cols + c)];
                const int g = std::isnan(v) ? 0 : int(std::lround(std::clamp(double(v), 0.0, 1.0) * 255.0));
                line[c] = qRgb(g, g, g);
            }
        }
        return img;
    }
    if (shape.size() != 1 || shape[0] <= 0 || int64_t(values.size()) != shape[0])
        return {};
    const int64_t d = shape[0];
    const int64_t w = int64_t(std::ceil(std::sqrt(double(d)) - 1e-9)), h = (d + w - 1) / w;
    QImage img(int(w), int(h), QImage::Format_RGB32);
    for (int64_t i = 0; i < w * h; ++i)
        img.setPixel(int(i % w), int(i / w),
            i < d ? divergingColor(values[size_t(i)], limit > 0 ? limit : 1.0) : divergingColor(std::nan(""), 1.0));
    return img;
}

void ExemplarStrip::setTiles(std::vector<ExemplarTile> tiles)
{
    m_tiles = std::move(tiles);
    m_limit = 0.0;
    for (const ExemplarTile& t : m_tiles)
        if (t.shape.size() == 1)
            for (float v : t.values)
                if (std::isfinite(v))
                    m_limit = std::max(m_limit, double(std::abs(v)));
    m_images.clear();
    for (const ExemplarTile& t : m_tiles)
        m_images.push_back(renderExemplar(t.values, t.shape, m_limit));
    updateGeometry();
    update();
}

void ExemplarStrip::clear()
{
    setTiles({});
}

void ExemplarStrip::setTileSide(int side)
{
    m_side = std::max(8, side);
    updateGeometry();
    update();
}

QImage ExemplarStrip::tileImage(int index) const
{
    return index >= 0 && index < int(m_images.size()) ? m_images[size_t(index)] : QImage();
}

int ExemplarStrip::captionHeight() const
{
    int lines = 1;
    for (const ExemplarTile& t : m_tiles)
        lines = std::max(lines, int(t.caption.count(QLatin1Char('\n'))) + 1);
    return lines * QFontMetrics(smallFont(font())).lineSpacing() + 4;
}

QRect ExemplarStrip::tileRect(int index) const
{
    if (index < 0 || index >= int(m_tiles.size()))
        return {};
    int left = kMargin;
    for (int i = 0; i < index; ++i)
        left += m_side + kGap + (m_tiles[size_t(i + 1)].highlighted ? kExtraGap : 0);
    return QRect(left, kMargin, m_side, m_side);
}

int ExemplarStrip::tileAt(const QPoint& pos) const
{
    for (int i = 0; i < int(m_tiles.size()); ++i) {
        const QRect r = tileRect(i);
        if (QRect(r.left() - kGap / 2, r.top(), r.width() + kGap, r.height() + 4 + captionHeight()).contains(pos))
            return i;
    }
    return -1;
}

QSize ExemplarStrip::sizeHint() const
{
    const int n = std::max(1, int(m_tiles.size()));
    const QRect last = m_tiles.empty() ? QRect(kMargin, kMargin, m_side, m_side) : tileRect(n - 1);
    return { last.right() + 1 + kMargin, kMargin + m_side + 4 + captionHeight() + kMargin };
}

QSize ExemplarStrip::minimumSizeHint() const
{
    return sizeHint();
}

void ExemplarStrip::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QFont small = smallFont(font());
    p.setFont(small);
    if (m_tiles.empty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("No sequence"));
        return;
    }
    const QFontMetrics fm(small);
    for (int i = 0; i < int(m_tiles.size()); ++i) {
        const ExemplarTile& t = m_tiles[size_t(i)];
        const QRect r = tileRect(i);
        const QImage& img = m_images[size_t(i)];
        if (!img.isNull()) {
            // Enlarged: crisp cells; reduced (large images): smooth.
            p.setRenderHint(QPainter::SmoothPixmapTransform, img.width() > r.width() || img.height() > r.height());
            p.drawImage(r, img);
        } else {
            p.fillRect(r, QColor(0xDD, 0xDD, 0xDD));
        }
        if (t.highlighted) {
            p.setPen(QPen(kHighlightColor, 3));
            p.drawRect(r.adjusted(-2, -2, 1, 1));
        } else if (!t.badge.isEmpty()) {
            p.setPen(QPen(kBadgeColor, 2));
            p.drawRect(r.adjusted(-1, -1, 0, 0));
        } else {
            p.setPen(QPen(QColor(0xBB, 0xBB, 0xBB), 1));
            p.drawRect(r.adjusted(0, 0, -1, -1));
        }
        if (!t.badge.isEmpty()) {
            const QString text = fm.elidedText(t.badge, Qt::ElideRight, r.width() - 4);
            const QRect badge(r.left(), r.top(), fm.horizontalAdvance(text) + 6, fm.height());
            p.fillRect(badge, kBadgeColor);
            p.setPen(Qt::white);
            p.drawText(badge, Qt::AlignCenter, text);
        }
        // Caption: centred under the tile, each line elided to the tile's pitch.
        p.setPen(palette().color(QPalette::Text));
        const int width = r.width() + kGap - 2;
        int y = r.bottom() + 4;
        for (const QString& line : t.caption.split(QLatin1Char('\n'))) {
            QFont f = small;
            f.setBold(t.highlighted);
            p.setFont(f);
            p.drawText(QRect(r.center().x() - width / 2, y, width, fm.lineSpacing()), Qt::AlignHCenter | Qt::AlignTop,
                QFontMetrics(f).elidedText(line, Qt::ElideRight, width));
            y += fm.lineSpacing();
        }
        p.setFont(small);
    }
}

bool ExemplarStrip::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int i = tileAt(help->pos());
        if (i >= 0) {
            const ExemplarTile& t = m_tiles[size_t(i)];
            QToolTip::showText(help->globalPos(), t.toolTip.isEmpty() ? t.caption : t.toolTip, this);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace icl::widgets
