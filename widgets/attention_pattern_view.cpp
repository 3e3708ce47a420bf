#include "widgets/attention_pattern_view.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <QAction>
#include <QActionGroup>
#include <QEvent>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QSignalBlocker>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "widgets/color_map_range.h"
#include "widgets/color_scales.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_export.h"

namespace icl::widgets {

namespace {

QCPColorGradient gradientOf(const std::vector<std::pair<double, QColor>>& stops)
{
    QCPColorGradient g;
    g.clearColorStops();
    for (const auto& [t, c] : stops)
        g.setColorStopAt(t, c);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhNanColor); // the causal mask
    g.setNanColor(QColor::fromRgba(kMaskedColor));
    g.setLevelCount(kColorLevels);
    return g;
}

} // namespace

AttentionPatternView::AttentionPatternView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_toolBar(new QToolBar(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_toolBar->setIconSize(QSize(16, 16));
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction* exportAction = m_toolBar->addAction(tr("Export…"), this, &AttentionPatternView::exportWithDialog);
    exportAction->setObjectName(QStringLiteral("exportAction"));
    exportAction->setToolTip(tr("Export the attention pattern as PNG, SVG, PDF or its values as CSV"));
    m_toolBar->addSeparator();
    auto* modes = new QActionGroup(this);
    const struct {
        AttentionScale mode;
        QString text, name, tip;
    } modeActions[] = {
        { AttentionScale::Linear, tr("Linear"), QStringLiteral("linearScaleAction"),
            tr("Colour softmax weights linearly over 0 … 1") },
        { AttentionScale::Row, tr("÷ row max"), QStringLiteral("rowNormalizeAction"),
            tr("Colour each query row relative to its largest weight (the hover text keeps the weights)") },
        { AttentionScale::Log, tr("Log"), QStringLiteral("logScaleAction"),
            tr("Colour log₁₀ of the softmax weights over 10⁻³ … 1, so that small weights show") },
    };
    for (const auto& m : modeActions) {
        QAction* a = m_toolBar->addAction(m.text);
        a->setObjectName(m.name);
        a->setToolTip(m.tip);
        a->setCheckable(true);
        a->setChecked(m.mode == m_mode);
        modes->addAction(a);
        const AttentionScale mode = m.mode;
        connect(a, &QAction::triggered, this, [this, mode] { setScaleMode(mode); });
        m_modeActions[int(m.mode)] = a;
    }
    layout->addWidget(m_toolBar);
    layout->addWidget(m_plot, 1);

    m_plot->setObjectName(QStringLiteral("attentionPatternPlot"));
    m_plot->setMinimumSize(240, 200);
    m_plot->setMouseTracking(true);
    m_plot->installEventFilter(this);

    QFont titleFont = font();
    titleFont.setBold(true);
    m_title = new QCPTextElement(m_plot, QString(), titleFont);
    QFont captionFont = font();
    captionFont.setPointSizeF(captionFont.pointSizeF() * 0.8);
    m_caption = new QCPTextElement(m_plot, QString(), captionFont);
    m_caption->setTextColor(QColor(0x55, 0x55, 0x55));
    m_caption->setMinimumSize(1, 0);

    QCPAxisRect* axisRect = m_plot->axisRect();
    m_plot->plotLayout()->take(axisRect);
    m_plot->plotLayout()->simplify();
    auto* body = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(0, 0, body);
    body->addElement(0, 0, axisRect);
    m_colorScale = new QCPColorScale(m_plot);
    body->addElement(0, 1, m_colorScale);
    body->setColumnStretchFactor(1, 0.001);
    m_colorScale->setType(QCPAxis::atRight);
    m_colorScale->setBarWidth(12);
    m_colorScale->axis()->setNumberFormat(QStringLiteral("gbd"));
    m_colorScale->axis()->setNumberPrecision(3);
    auto* margins = new QCPMarginGroup(m_plot);
    axisRect->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_colorScale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

    m_colorMap = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_colorMap->setColorScale(m_colorScale);
    m_colorMap->setInterpolate(false);
    m_colorMap->setTightBoundary(false);

    m_frame = new QCPItemRect(m_plot);
    m_frame->setPen(QPen(QColor(0xD5, 0x5E, 0x00), 2));
    m_frame->setBrush(Qt::NoBrush);
    m_frame->setVisible(false);
    m_frame->setSelectable(false);

    // Query rows from the top, keys along the bottom.
    m_plot->yAxis->setRangeReversed(true);
    m_plot->xAxis->setLabel(tr("key token"));
    m_plot->yAxis->setLabel(tr("query token"));
    for (QCPAxis* axis : { m_plot->xAxis, m_plot->yAxis }) {
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 3);
    }

    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.addAction(tr("Export…"), this, &AttentionPatternView::exportWithDialog);
        menu.exec(m_plot->mapToGlobal(pos));
    });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        int row = 0, col = 0;
        const QString text = cellAt(event->position(), &row, &col) ? cellText(row, col) : QString();
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(m_plot->mapToGlobal(event->position().toPoint()), text, m_plot);
        m_plot->setToolTip(text);
    });
    connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        int row = 0, col = 0;
        if (event->button() == Qt::LeftButton && cellAt(event->position(), &row, &col)) {
            setSelectedQuery(row);
            Q_EMIT querySelected(row);
        }
    });
    rebuild();
}

AttentionPatternView::~AttentionPatternView()
{
    if (!m_title->layout())
        delete m_title;
    if (!m_caption->layout())
        delete m_caption;
}

void AttentionPatternView::setPattern(const icl::Matrix& pattern, bool softmax)
{
    m_pattern = pattern;
    m_softmax = softmax;
    // A log scale applies to softmax weights only; linear scores (any sign) keep their linear scale.
    if (QAction* log = m_modeActions[int(AttentionScale::Log)]) {
        log->setEnabled(softmax);
        log->setToolTip(softmax ? tr("Colour log₁₀ of the softmax weights over 10⁻³ … 1, so that small weights show")
                                : tr("Log scale: for softmax weights only (this head's scores are linear, of any sign)"));
    }
    if (m_selectedRow >= m_pattern.rows)
        m_selectedRow = -1;
    rebuild();
}

void AttentionPatternView::clear()
{
    m_selectedRow = -1;
    setPattern(icl::Matrix {}, true);
}

void AttentionPatternView::setMetadata(const std::map<std::string, std::string>& metadata)
{
    m_metadata = metadata;
    rebuild();
}

void AttentionPatternView::setSelectedQuery(int row)
{
    m_selectedRow = (row >= 0 && row < m_pattern.rows) ? row : -1;
    updateSelectionFrame();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

double AttentionPatternView::colorLower() const
{
    return m_lower;
}

double AttentionPatternView::colorUpper() const
{
    return m_upper;
}

void AttentionPatternView::setScaleMode(AttentionScale mode)
{
    if (mode == m_mode)
        return;
    m_mode = mode;
    for (QAction* a : m_modeActions) {
        const QSignalBlocker block(a);
        a->setChecked(a == m_modeActions[int(mode)]);
    }
    rebuild();
    Q_EMIT scaleModeChanged(mode);
}

void AttentionPatternView::setToolBarVisible(bool visible)
{
    m_toolBar->setVisible(visible);
}

void AttentionPatternView::setCaptionVisible(bool visible)
{
    m_captionVisible = visible;
    rebuild();
}

QString AttentionPatternView::rowLabel(int row) const
{
    if (size_t(row) < m_pattern.row_labels.size())
        return QString::fromStdString(m_pattern.row_labels[size_t(row)]);
    return QString::number(row + 1);
}

QString AttentionPatternView::colLabel(int col) const
{
    if (size_t(col) < m_pattern.col_labels.size())
        return QString::fromStdString(m_pattern.col_labels[size_t(col)]);
    return QString::number(col + 1);
}

void AttentionPatternView::rebuild()
{
    QCPLayoutGrid* grid = m_plot->plotLayout();
    if (m_title->layout())
        grid->take(m_title);
    if (m_caption->layout())
        grid->take(m_caption);
    grid->simplify();
    const QString title = QString::fromStdString(m_pattern.name);
    QString caption;
    for (const auto& [key, value] : m_metadata)
        caption += (caption.isEmpty() ? QString() : QStringLiteral(" · ")) + QString::fromStdString(key + ": " + value);
    m_title->setText(title);
    const int budget = m_plot->width() > 200 ? std::min(kExportLogicalWidth, m_plot->width()) - 40 : kExportLogicalWidth - 40;
    m_caption->setText(wrapCaption(caption, m_caption->font(), budget));
    if (!title.isEmpty()) {
        grid->insertRow(0);
        grid->addElement(0, 0, m_title);
    }
    if (m_captionVisible && !caption.isEmpty()) {
        const int row = grid->rowCount();
        grid->insertRow(row);
        grid->addElement(row, 0, m_caption);
    }

    const int rows = int(std::max<int64_t>(0, m_pattern.rows));
    const int cols = int(std::max<int64_t>(0, m_pattern.cols));
    const bool valid = rows > 0 && cols > 0 && m_pattern.data.size() >= size_t(rows) * size_t(cols);
    const AttentionColoring coloring = attentionColoring(m_pattern, m_softmax, m_mode);
    QCPColorMapData* data = m_colorMap->data();
    if (valid) {
        data->setSize(cols, rows);
        data->setRange(colorMapCellRange(cols), colorMapCellRange(rows));
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                data->setCell(c, r, coloring.values[size_t(r) * size_t(cols) + size_t(c)]);
    } else {
        data->clear();
    }
    m_lower = coloring.lower;
    m_upper = coloring.upper;
    const QCPRange range(m_lower, m_upper);
    const QCPColorGradient gradient = gradientOf(coloring.diverging ? divergingStops() : sequentialStops());
    const QCPAxis::ScaleType scaleType = coloring.logarithmic ? QCPAxis::stLogarithmic : QCPAxis::stLinear;
    m_colorScale->setGradient(gradient);
    m_colorMap->setGradient(gradient);
    m_colorScale->setDataScaleType(scaleType);
    m_colorMap->setDataScaleType(scaleType);
    m_colorMap->setDataRange(range);
    m_colorScale->setDataRange(range);
    if (coloring.logarithmic) {
        auto ticker = QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog);
        m_colorScale->axis()->setTicker(ticker);
        m_colorScale->axis()->setNumberFormat(QStringLiteral("eb"));
        m_colorScale->axis()->setNumberPrecision(0);
    } else {
        m_colorScale->axis()->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_colorScale->axis()->setNumberFormat(QStringLiteral("gbd"));
        m_colorScale->axis()->setNumberPrecision(3);
    }
    QString legend = m_softmax ? tr("attention weight") : tr("attention score (linear)");
    if (m_mode == AttentionScale::Row)
        legend += tr(" ÷ row maximum");
    else if (m_mode == AttentionScale::Log && m_softmax)
        legend += tr(" (log scale)");
    m_colorScale->axis()->setLabel(legend);

    m_plot->xAxis->setRange(-0.5, std::max(cols, 1) - 0.5);
    m_plot->yAxis->setRange(-0.5, std::max(rows, 1) - 0.5);
    updateTicks();
    updateSelectionFrame();
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

static int labelStride(int count, double pitch, int room)
{
    if (count <= 0)
        return 1;
    int stride = std::max(1, int(std::ceil(pitch * count / std::max(1, room))));
    // Odd strides: prompts alternate x and y tokens, an even stride would label only one kind.
    if (stride > 1 && stride % 2 == 0)
        ++stride;
    return stride;
}

void AttentionPatternView::updateTicks()
{
    const int rows = int(std::max<int64_t>(0, m_pattern.rows));
    const int cols = int(std::max<int64_t>(0, m_pattern.cols));
    // Level of detail: label every k-th token so that labels never overlap; dense axes use a smaller font first.
    // The axis rect size is estimated from the widget before the first layout.
    QFont tickFont = font();
    if (std::max(rows, cols) > 12)
        tickFont.setPointSizeF(tickFont.pointSizeF() * 0.85);
    m_plot->xAxis->setTickLabelFont(tickFont);
    m_plot->yAxis->setTickLabelFont(tickFont);
    const QFontMetrics fm(tickFont);
    const int lineHeight = fm.height();
    const QRect ar = m_plot->axisRect()->rect();
    const int axisW = ar.width() > 10 ? ar.width() : std::max(100, m_plot->width() - 160);
    const int axisH = ar.height() > 10 ? ar.height() : std::max(80, m_plot->height() - 120);
    const bool rotate = cols > 12;
    int widest = 0;
    for (int c = 0; c < cols && c < 64; ++c)
        widest = std::max(widest, fm.horizontalAdvance(colLabel(c)));
    const double keyPitch = rotate ? lineHeight : widest + 8;
    m_keyStride = labelStride(cols, keyPitch, axisW);
    m_queryStride = labelStride(rows, lineHeight, axisH);
    // Every stride-th token, and the last one (the query) in place of the tick before it when they would crowd.
    auto ticksOf = [](int count, int stride, const auto& label) {
        auto ticks = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
        for (int i = 0; i < count; i += stride)
            ticks->addTick(i, label(i));
        const int last = count > 0 ? (count - 1) / stride * stride : 0;
        if (count > 1 && last != count - 1) {
            if (last > 0 && count - 1 - last < stride)
                ticks->ticks().remove(last);
            ticks->addTick(count - 1, label(count - 1));
        }
        return ticks;
    };
    auto colTicks = ticksOf(cols, m_keyStride, [this](int c) { return colLabel(c); });
    auto rowTicks = ticksOf(rows, m_queryStride, [this](int r) { return rowLabel(r); });
    m_plot->xAxis->setTicker(colTicks);
    m_plot->yAxis->setTicker(rowTicks);
    m_plot->xAxis->setTickLabelRotation(rotate ? 90 : 0);
}

void AttentionPatternView::updateSelectionFrame()
{
    if (m_selectedRow < 0 || m_pattern.cols <= 0) {
        m_frame->setVisible(false);
        return;
    }
    m_frame->topLeft->setCoords(-0.5, m_selectedRow - 0.5);
    m_frame->bottomRight->setCoords(double(m_pattern.cols) - 0.5, m_selectedRow + 0.5);
    m_frame->setVisible(true);
}

bool AttentionPatternView::eventFilter(QObject* watched, QEvent* event)
{
    if (watched == m_plot && event->type() == QEvent::Resize) {
        // Relabel for the new size after QCustomPlot has laid itself out.
        QMetaObject::invokeMethod(
            this,
            [this] {
                const int key = m_keyStride, query = m_queryStride;
                updateTicks();
                if (key != m_keyStride || query != m_queryStride)
                    m_plot->replot(QCustomPlot::rpQueuedReplot);
            },
            Qt::QueuedConnection);
    }
    return QWidget::eventFilter(watched, event);
}

bool AttentionPatternView::cellAt(const QPointF& pos, int* row, int* col) const
{
    if (m_pattern.rows <= 0 || m_pattern.cols <= 0 || !m_plot->axisRect()->rect().contains(pos.toPoint()))
        return false;
    const double key = m_plot->xAxis->pixelToCoord(pos.x());
    const double value = m_plot->yAxis->pixelToCoord(pos.y());
    const int c = int(std::lround(key)), r = int(std::lround(value));
    if (c < 0 || r < 0 || c >= m_pattern.cols || r >= m_pattern.rows)
        return false;
    if (row)
        *row = r;
    if (col)
        *col = c;
    return true;
}

QPointF AttentionPatternView::cellCenter(int row, int col) const
{
    return QPointF(m_plot->xAxis->coordToPixel(col), m_plot->yAxis->coordToPixel(row));
}

QString AttentionPatternView::cellText(int row, int col) const
{
    if (row < 0 || col < 0 || row >= m_pattern.rows || col >= m_pattern.cols)
        return QString();
    return QStringLiteral("%1 → %2: %3").arg(rowLabel(row), colLabel(col), QString::number(m_pattern.at(row, col), 'g', 6));
}

void AttentionPatternView::replotNow()
{
    updateTicks();
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

bool AttentionPatternView::exportTo(
    const std::string& path, const std::string& format, int dpi, std::string* error) const
{
    if (format == "csv") {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (f)
            f << HeatmapView::matrixCsv(m_pattern, m_metadata);
        if (!f) {
            if (error)
                *error = "cannot write " + path;
            return false;
        }
        return true;
    }
    if (!ensureExportApplication(error))
        return false;
    AttentionPatternView view;
    view.setToolBarVisible(false);
    view.m_metadata = m_metadata;
    view.m_captionVisible = true;
    view.m_pattern = m_pattern;
    view.m_softmax = m_softmax;
    view.m_mode = m_mode;
    view.m_selectedRow = -1; // the selection frame is on screen only
    view.resize(kExportLogicalWidth, kExportLogicalHeight);
    view.plot()->resize(kExportLogicalWidth, kExportLogicalHeight);
    view.rebuild();
    return writePlotFile(view.plot(), path, format, dpi, m_pattern.name, m_metadata, error);
}

void AttentionPatternView::exportWithDialog()
{
    QString base = QString::fromStdString(m_pattern.name).toLower();
    for (QChar& c : base)
        if (!c.isLetterOrNumber())
            c = '_';
    if (base.isEmpty())
        base = QStringLiteral("attention_pattern");
    ExportTarget target;
    if (!askExportTarget(this, tr("Export attention pattern"), base, &target))
        return;
    std::string error;
    if (!exportTo(target.path, target.format, target.dpi, &error)) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(error));
        return;
    }
    Q_EMIT exported(QString::fromStdString(target.path));
}

} // namespace icl::widgets
