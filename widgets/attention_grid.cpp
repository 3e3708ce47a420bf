#include "widgets/attention_grid.h"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "widgets/color_scales.h"

namespace icl::widgets {

namespace {

constexpr int kLabelWidth = 28;  // "L11" left of each row
constexpr int kLabelHeight = 16; // "H7" above each column
constexpr int kMinCell = 24;

} // namespace

double AttentionGrid::largestMagnitude(const icl::Matrix& m)
{
    double mx = 0.0;
    for (double v : m.data)
        if (std::isfinite(v))
            mx = std::max(mx, std::abs(v));
    return mx;
}

AttentionGrid::AttentionGrid(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("attentionGrid"));
    setMouseTracking(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

QImage AttentionGrid::renderThumbnail(const icl::Matrix& pattern, bool softmax, int maxSide)
{
    const int rows = int(pattern.rows), cols = int(pattern.cols);
    if (rows <= 0 || cols <= 0 || pattern.data.size() < size_t(rows) * size_t(cols))
        return QImage();
    const double limit = largestMagnitude(pattern);
    // Softmax rows are normalised by their largest weight: causal heads put weight 1 on the first key of
    // the first row and spread thin over later rows, which a per-head scale would leave almost white.
    std::vector<double> rowScale(size_t(rows), limit > 0 ? 1.0 / limit : 0.0);
    if (softmax)
        for (int r = 0; r < rows; ++r) {
            double mx = 0.0;
            const double* row = pattern.data.data() + size_t(r) * size_t(cols);
            for (int c = 0; c < cols; ++c)
                if (std::isfinite(row[c]))
                    mx = std::max(mx, row[c]);
            rowScale[size_t(r)] = mx > 0 ? 1.0 / mx : 0.0;
        }
    // Blocks of br × bc cells become one pixel (max-pooled by |value|, so a sharp peak stays visible).
    const int br = (rows + maxSide - 1) / maxSide, bc = (cols + maxSide - 1) / maxSide;
    const int h = (rows + br - 1) / br, w = (cols + bc - 1) / bc;
    QImage image(w, h, QImage::Format_RGB32);
    const std::vector<QRgb>& table = softmax ? sequentialTable() : divergingTable();
    for (int y = 0; y < h; ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        const int r0 = y * br, r1 = std::min(rows, r0 + br);
        for (int x = 0; x < w; ++x) {
            const int c0 = x * bc, c1 = std::min(cols, c0 + bc);
            double best = 0.0;
            for (int r = r0; r < r1; ++r) {
                const double* row = pattern.data.data() + size_t(r) * size_t(cols);
                const double rs = rowScale[size_t(r)];
                if (softmax) { // weights are ≥ 0: the largest is the largest |value|
                    double mx = 0.0;
                    for (int c = c0; c < c1; ++c)
                        mx = std::max(mx, row[c]);
                    best = std::max(best, mx * rs);
                } else {
                    for (int c = c0; c < c1; ++c)
                        if (std::abs(row[c] * rs) > std::abs(best))
                            best = row[c] * rs;
                }
            }
            double t = softmax ? best : 0.5 + 0.5 * best;
            t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
            line[x] = table[size_t(t * 255.0 + 0.5)];
        }
    }
    return image;
}

void AttentionGrid::setPatterns(
    int64_t nLayers, int64_t nHeads, const std::vector<icl::Matrix>& patterns, const std::vector<bool>& softmax)
{
    m_layers = std::max<int64_t>(0, nLayers);
    m_heads = std::max<int64_t>(0, nHeads);
    const size_t n = size_t(m_layers * m_heads);
    m_thumbnails.assign(n, QImage());
    m_softmax.assign(n, true);
    m_scaleMax.assign(n, 0.0);
    for (size_t i = 0; i < n && i < patterns.size(); ++i) {
        m_softmax[i] = i < softmax.size() ? bool(softmax[i]) : true;
        m_thumbnails[i] = renderThumbnail(patterns[i], m_softmax[i]);
        m_scaleMax[i] = largestMagnitude(patterns[i]);
    }
    if (m_selectedLayer >= m_layers || m_selectedHead >= m_heads) {
        m_selectedLayer = -1;
        m_selectedHead = -1;
    }
    updateGeometry();
    update();
}

void AttentionGrid::setThumbnails(int64_t nLayers, int64_t nHeads, std::vector<QImage> thumbnails,
    const std::vector<bool>& softmax, std::vector<double> largest)
{
    m_layers = std::max<int64_t>(0, nLayers);
    m_heads = std::max<int64_t>(0, nHeads);
    const size_t n = size_t(m_layers * m_heads);
    m_thumbnails = std::move(thumbnails);
    m_thumbnails.resize(n);
    m_softmax.assign(n, true);
    for (size_t i = 0; i < n && i < softmax.size(); ++i)
        m_softmax[i] = softmax[i];
    m_scaleMax = std::move(largest);
    m_scaleMax.resize(n, 0.0);
    if (m_selectedLayer >= m_layers || m_selectedHead >= m_heads) {
        m_selectedLayer = -1;
        m_selectedHead = -1;
    }
    updateGeometry();
    update();
}

void AttentionGrid::clear()
{
    setPatterns(0, 0, {}, {});
}

void AttentionGrid::setSelectedHead(int layer, int head)
{
    m_selectedLayer = layer;
    m_selectedHead = head;
    update();
}

QImage AttentionGrid::thumbnail(int layer, int head) const
{
    if (layer < 0 || head < 0 || layer >= m_layers || head >= m_heads)
        return QImage();
    return m_thumbnails[size_t(layer * m_heads + head)];
}

AttentionGrid::Geometry AttentionGrid::geometry() const
{
    Geometry g;
    g.left = kLabelWidth;
    g.top = kLabelHeight;
    if (m_layers <= 0 || m_heads <= 0)
        return g;
    const int availW = width() - kLabelWidth - 2, availH = height() - kLabelHeight - 2;
    const int pitch = std::max(4, int(std::min(availW / m_heads, availH / m_layers)));
    g.gap = std::clamp(pitch / 12, 2, 6);
    g.cell = std::max(2, pitch - g.gap);
    return g;
}

QRect AttentionGrid::thumbnailRect(int layer, int head) const
{
    if (layer < 0 || head < 0 || layer >= m_layers || head >= m_heads)
        return QRect();
    const Geometry g = geometry();
    const int pitch = g.cell + g.gap;
    return QRect(g.left + head * pitch + g.gap / 2, g.top + layer * pitch + g.gap / 2, g.cell, g.cell);
}

bool AttentionGrid::headAt(const QPoint& pos, int* layer, int* head) const
{
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h)
            if (thumbnailRect(l, h).contains(pos)) {
                if (layer)
                    *layer = l;
                if (head)
                    *head = h;
                return true;
            }
    return false;
}

QSize AttentionGrid::sizeHint() const
{
    const int pitch = 64;
    return QSize(kLabelWidth + int(std::max<int64_t>(1, m_heads)) * pitch + 4,
        kLabelHeight + int(std::max<int64_t>(1, m_layers)) * pitch + 4);
}

QSize AttentionGrid::minimumSizeHint() const
{
    return QSize(kLabelWidth + int(std::max<int64_t>(1, m_heads)) * kMinCell,
        kLabelHeight + int(std::min<int64_t>(std::max<int64_t>(1, m_layers), 4)) * kMinCell);
}

void AttentionGrid::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (m_layers <= 0 || m_heads <= 0) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap, tr("No attention patterns"));
        return;
    }
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p.setFont(small);
    p.setPen(palette().color(QPalette::Text));
    for (int h = 0; h < m_heads; ++h) {
        const QRect r = thumbnailRect(0, h);
        p.drawText(QRect(r.left(), 0, r.width(), kLabelHeight), Qt::AlignCenter, QStringLiteral("H%1").arg(h));
    }
    for (int l = 0; l < m_layers; ++l) {
        const QRect r = thumbnailRect(l, 0);
        p.drawText(QRect(0, r.top(), kLabelWidth - 2, r.height()), Qt::AlignRight | Qt::AlignVCenter,
            QStringLiteral("L%1").arg(l));
    }
    // Nearest-neighbour scaling keeps the cells of short prompts crisp.
    p.setRenderHint(QPainter::SmoothPixmapTransform, false);
    for (int l = 0; l < m_layers; ++l)
        for (int h = 0; h < m_heads; ++h) {
            const QRect r = thumbnailRect(l, h);
            const QImage& img = m_thumbnails[size_t(l * m_heads + h)];
            if (!img.isNull())
                p.drawImage(r, img);
            p.setPen(QPen(QColor(0xBB, 0xBB, 0xBB), 1));
            p.drawRect(r.adjusted(0, 0, -1, -1));
        }
    if (m_selectedLayer >= 0 && m_selectedHead >= 0) {
        const QRect r = thumbnailRect(m_selectedLayer, m_selectedHead);
        p.setPen(QPen(QColor(0xD5, 0x5E, 0x00), 3));
        p.drawRect(r.adjusted(-2, -2, 1, 1));
    }
}

void AttentionGrid::mousePressEvent(QMouseEvent* event)
{
    int layer = 0, head = 0;
    if (event->button() == Qt::LeftButton && headAt(event->position().toPoint(), &layer, &head)) {
        setSelectedHead(layer, head);
        Q_EMIT headSelected(layer, head);
        return;
    }
    QWidget::mousePressEvent(event);
}

bool AttentionGrid::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        int layer = 0, head = 0;
        if (headAt(help->pos(), &layer, &head)) {
            const size_t i = size_t(layer * m_heads + head);
            const QString scale = m_softmax[i]
                ? tr("softmax weights, each row relative to its largest weight (largest: %1)").arg(m_scaleMax[i], 0, 'g', 3)
                : tr("linear scores, colour scale ±%1").arg(m_scaleMax[i], 0, 'g', 3);
            QToolTip::showText(help->globalPos(), tr("layer %1, head %2\n%3\nclick to show it large")
                                                      .arg(layer)
                                                      .arg(head)
                                                      .arg(scale),
                this);
        } else {
            QToolTip::hideText();
            event->ignore();
        }
        return true;
    }
    return QWidget::event(event);
}

} // namespace icl::widgets
