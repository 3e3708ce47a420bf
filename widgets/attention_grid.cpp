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
constexpr int kLegendHeight = 22; // colour bar and its text under the grid
constexpr int kLegendBarWidth = 96;
constexpr int kLegendBarHeight = 10;

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

QImage AttentionGrid::renderThumbnail(const icl::Matrix& pattern, bool softmax, AttentionScale mode, int maxSide)
{
    const int rows = int(pattern.rows), cols = int(pattern.cols);
    if (rows <= 0 || cols <= 0 || pattern.data.size() < size_t(rows) * size_t(cols))
        return QImage();
    // The large view's colouring, so that a thumbnail pixel of a short prompt is the colour of its cell there.
    const AttentionColoring coloring = attentionColoring(pattern, softmax, mode);
    // Blocks of br × bc cells become one pixel (max-pooled by |value|, so a sharp peak stays visible; a block
    // entirely under the causal mask stays masked).
    const int br = (rows + maxSide - 1) / maxSide, bc = (cols + maxSide - 1) / maxSide;
    const int h = (rows + br - 1) / br, w = (cols + bc - 1) / bc;
    QImage image(w, h, QImage::Format_RGB32);
    for (int y = 0; y < h; ++y) {
        auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
        const int r0 = y * br, r1 = std::min(rows, r0 + br);
        for (int x = 0; x < w; ++x) {
            const int c0 = x * bc, c1 = std::min(cols, c0 + bc);
            double best = std::nan("");
            for (int r = r0; r < r1; ++r) {
                const double* row = coloring.values.data() + size_t(r) * size_t(cols);
                for (int c = c0; c < c1; ++c)
                    if (!std::isnan(row[c]) && (std::isnan(best) || std::abs(row[c]) > std::abs(best)))
                        best = row[c];
            }
            line[x] = attentionColor(coloring, best);
        }
    }
    return image;
}

void AttentionGrid::renderAll()
{
    const size_t n = size_t(m_layers * m_heads);
    m_thumbnails.assign(n, QImage());
    for (size_t i = 0; i < n && i < m_patterns.size(); ++i)
        m_thumbnails[i] = renderThumbnail(m_patterns[i], m_softmax[i], m_mode);
}

void AttentionGrid::setScaleMode(AttentionScale mode)
{
    if (mode == m_mode)
        return;
    m_mode = mode;
    if (!m_patterns.empty())
        renderAll();
    update();
}

void AttentionGrid::setPatterns(
    int64_t nLayers, int64_t nHeads, const std::vector<icl::Matrix>& patterns, const std::vector<bool>& softmax)
{
    m_layers = std::max<int64_t>(0, nLayers);
    m_heads = std::max<int64_t>(0, nHeads);
    const size_t n = size_t(m_layers * m_heads);
    m_softmax.assign(n, true);
    m_scaleMax.assign(n, 0.0);
    m_patterns.assign(patterns.begin(), patterns.begin() + std::ptrdiff_t(std::min(n, patterns.size())));
    for (size_t i = 0; i < n && i < patterns.size(); ++i) {
        m_softmax[i] = i < softmax.size() ? bool(softmax[i]) : true;
        m_scaleMax[i] = largestMagnitude(patterns[i]);
    }
    renderAll();
    if (m_selectedLayer >= m_layers || m_selectedHead >= m_heads) {
        m_selectedLayer = -1;
        m_selectedHead = -1;
    }
    updateGeometry();
    update();
}

void AttentionGrid::setThumbnails(int64_t nLayers, int64_t nHeads, std::vector<QImage> thumbnails,
    const std::vector<bool>& softmax, std::vector<double> largest, AttentionScale mode,
    std::vector<icl::Matrix> patterns)
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
    m_patterns = std::move(patterns);
    if (m_patterns.size() > n)
        m_patterns.resize(n);
    if (mode != m_mode && !m_patterns.empty())
        renderAll(); // rendered in another mode (the user switched while the worker ran)
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
    const int availW = width() - kLabelWidth - 2, availH = height() - kLabelHeight - 2 - kLegendHeight;
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
        kLabelHeight + int(std::max<int64_t>(1, m_layers)) * pitch + 4 + kLegendHeight);
}

QSize AttentionGrid::minimumSizeHint() const
{
    return QSize(kLabelWidth + int(std::max<int64_t>(1, m_heads)) * kMinCell,
        kLabelHeight + int(std::min<int64_t>(std::max<int64_t>(1, m_layers), 4)) * kMinCell + kLegendHeight);
}

QString AttentionGrid::legendText() const
{
    const bool anySoftmax = std::find(m_softmax.begin(), m_softmax.end(), true) != m_softmax.end();
    const bool anyLinear = std::find(m_softmax.begin(), m_softmax.end(), false) != m_softmax.end();
    if (m_softmax.empty())
        return QString();
    QString text;
    if (anySoftmax) {
        switch (m_mode) {
        case AttentionScale::Linear:
            text = tr("attention weight 0 – 1");
            break;
        case AttentionScale::Row:
            text = tr("attention weight ÷ row max 0 – 1");
            break;
        case AttentionScale::Log:
            text = tr("attention weight 10⁻³ – 1 (log)");
            break;
        }
    }
    if (anyLinear) {
        // Short enough for the thumbnails' width at 1280 × 800.
        const QString linear = m_mode == AttentionScale::Row ? tr("attention score ÷ row |max|")
                                                             : tr("attention score, ± head max");
        text = anySoftmax ? text + tr("; linear heads: %1").arg(linear) : linear;
    }
    return text;
}

QRect AttentionGrid::legendBarRect() const
{
    if (m_layers <= 0 || m_heads <= 0)
        return QRect();
    const QRect last = thumbnailRect(int(m_layers) - 1, 0);
    return QRect(kLabelWidth, last.bottom() + 8, kLegendBarWidth, kLegendBarHeight);
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
    // Legend: the colour bar of the scale in use, its name and range.
    const QRect bar = legendBarRect();
    const bool anySoftmax = std::find(m_softmax.begin(), m_softmax.end(), true) != m_softmax.end();
    const std::vector<QRgb>& table = anySoftmax ? sequentialTable() : divergingTable();
    for (int x = 0; x < bar.width(); ++x) {
        const int index = bar.width() > 1 ? x * (int(table.size()) - 1) / (bar.width() - 1) : 0;
        p.fillRect(QRect(bar.left() + x, bar.top(), 1, bar.height()), QColor(table[size_t(index)]));
    }
    p.setPen(QPen(QColor(0x88, 0x88, 0x88), 1));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    p.setPen(palette().color(QPalette::Text));
    const QRect text(bar.right() + 6, bar.top() - 4, width() - bar.right() - 8, bar.height() + 8);
    p.drawText(
        text, Qt::AlignLeft | Qt::AlignVCenter, p.fontMetrics().elidedText(legendText(), Qt::ElideRight, text.width()));
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
                ? tr("softmax weights, %1 (largest: %2)")
                      .arg(legendText().section(QLatin1Char(';'), 0, 0))
                      .arg(m_scaleMax[i], 0, 'g', 3)
                : tr("linear scores, colour scale ±%1")
                      .arg(m_mode == AttentionScale::Row ? 1.0 : m_scaleMax[i], 0, 'g', 3);
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
