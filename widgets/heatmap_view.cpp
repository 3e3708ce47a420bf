#include "widgets/heatmap_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "core/types/matrix_csv.h"
#include "widgets/color_map_range.h"
#include "widgets/plot_export.h"

namespace icl::widgets {

namespace {

/// Diverging blue–white–red scale (ColorBrewer RdBu, reversed so that negative is blue).
QCPColorGradient divergingGradient()
{
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(0x21, 0x66, 0xAC));
    g.setColorStopAt(0.25, QColor(0x92, 0xC5, 0xDE));
    g.setColorStopAt(0.5, QColor(0xF7, 0xF7, 0xF7));
    g.setColorStopAt(0.75, QColor(0xF4, 0xA5, 0x82));
    g.setColorStopAt(1.0, QColor(0xB2, 0x18, 0x2B));
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    g.setNanHandling(QCPColorGradient::nhTransparent);
    return g;
}

} // namespace

HeatmapView::HeatmapView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_toolBar(new QToolBar(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_toolBar->setIconSize(QSize(16, 16));
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction* exportAction = m_toolBar->addAction(tr("Export…"), this, &HeatmapView::exportWithDialog);
    exportAction->setObjectName(QStringLiteral("exportAction"));
    exportAction->setToolTip(tr("Export the heatmap as PNG, SVG, PDF or its values as CSV"));
    layout->addWidget(m_toolBar);
    layout->addWidget(m_plot, 1);

    m_plot->setObjectName(QStringLiteral("heatmapPlot"));
    m_plot->setMinimumSize(200, 160);
    m_plot->setMouseTracking(true);

    QFont titleFont = font();
    titleFont.setBold(true);
    m_title = new QCPTextElement(m_plot, QString(), titleFont);
    QFont captionFont = font();
    captionFont.setPointSizeF(captionFont.pointSizeF() * 0.8);
    m_caption = new QCPTextElement(m_plot, QString(), captionFont);
    m_caption->setTextColor(QColor(0x55, 0x55, 0x55));
    m_caption->setMinimumSize(1, 0);

    // Body row: the axis rect and, to its right, the colour scale, aligned by a margin group.
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
    m_colorScale->setGradient(divergingGradient());
    m_colorScale->axis()->setNumberFormat(QStringLiteral("gbd"));
    m_colorScale->axis()->setNumberPrecision(3);
    auto* margins = new QCPMarginGroup(m_plot);
    axisRect->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_colorScale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);

    m_colorMap = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_colorMap->setColorScale(m_colorScale);
    m_colorMap->setInterpolate(false);
    m_colorMap->setTightBoundary(false);
    m_colorMap->setGradient(divergingGradient());

    // Row 0 on top, column labels above the matrix (like a printed matrix).
    m_plot->yAxis->setRangeReversed(true);
    m_plot->xAxis->setVisible(false);
    m_plot->xAxis2->setVisible(true);
    m_plot->xAxis2->setTickLabels(true);
    m_plot->xAxis2->setRangeReversed(false);
    connect(m_plot->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), m_plot->xAxis2,
        qOverload<const QCPRange&>(&QCPAxis::setRange));
    for (QCPAxis* axis : { m_plot->xAxis2, m_plot->yAxis }) {
        axis->grid()->setVisible(false);
        axis->setSubTicks(false);
        axis->setTickLength(0, 3);
    }

    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.addAction(tr("Export…"), this, &HeatmapView::exportWithDialog);
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
    rebuild();
}

HeatmapView::~HeatmapView()
{
    // Title and caption are not in the layout while hidden; the plot owns them otherwise.
    if (!m_title->layout())
        delete m_title;
    if (!m_caption->layout())
        delete m_caption;
}

void HeatmapView::setMatrix(const icl::Matrix& matrix)
{
    m_matrix = matrix;
    rebuild();
}

void HeatmapView::setMetadata(const std::map<std::string, std::string>& metadata)
{
    m_metadata = metadata;
    rebuild();
}

void HeatmapView::setColorLimit(double limit)
{
    m_limit = limit;
    rebuild();
}

double HeatmapView::colorLimit() const
{
    if (m_limit > 0)
        return m_limit;
    double m = 0.0;
    for (double v : m_matrix.data)
        if (std::isfinite(v))
            m = std::max(m, std::abs(v));
    return m > 0 ? m : 1.0;
}

void HeatmapView::setAxisLabels(const std::string& rowAxis, const std::string& colAxis)
{
    m_rowAxisLabel = rowAxis;
    m_colAxisLabel = colAxis;
    rebuild();
}

void HeatmapView::setColorLabel(const std::string& label)
{
    m_colorLabel = label;
    rebuild();
}

void HeatmapView::setCaptionVisible(bool visible)
{
    m_captionVisible = visible;
    rebuild();
}

void HeatmapView::setToolBarVisible(bool visible)
{
    m_toolBar->setVisible(visible);
}

QString HeatmapView::rowLabel(int row) const
{
    if (size_t(row) < m_matrix.row_labels.size())
        return QString::fromStdString(m_matrix.row_labels[size_t(row)]);
    return QString::number(row + 1);
}

QString HeatmapView::colLabel(int col) const
{
    if (size_t(col) < m_matrix.col_labels.size())
        return QString::fromStdString(m_matrix.col_labels[size_t(col)]);
    return QString::number(col + 1);
}

void HeatmapView::rebuild()
{
    QCPLayoutGrid* grid = m_plot->plotLayout();
    if (m_title->layout())
        grid->take(m_title);
    if (m_caption->layout())
        grid->take(m_caption);
    grid->simplify();
    const QString title = QString::fromStdString(m_matrix.name);
    QString caption;
    for (const auto& [key, value] : m_metadata)
        caption += (caption.isEmpty() ? QString() : QStringLiteral(" · ")) + QString::fromStdString(key + ": " + value);
    m_title->setText(title);
    m_caption->setText(wrapCaption(caption, m_caption->font(), kExportLogicalWidth - 40));
    if (!title.isEmpty()) {
        grid->insertRow(0);
        grid->addElement(0, 0, m_title);
    }
    if (m_captionVisible && !caption.isEmpty()) {
        const int row = grid->rowCount();
        grid->insertRow(row);
        grid->addElement(row, 0, m_caption);
    }

    const int rows = int(std::max<int64_t>(0, m_matrix.rows));
    const int cols = int(std::max<int64_t>(0, m_matrix.cols));
    const bool valid = rows > 0 && cols > 0 && m_matrix.data.size() >= size_t(rows) * size_t(cols);
    QCPColorMapData* data = m_colorMap->data();
    if (valid) {
        data->setSize(cols, rows);
        data->setRange(colorMapCellRange(cols), colorMapCellRange(rows));
        for (int r = 0; r < rows; ++r)
            for (int c = 0; c < cols; ++c)
                data->setCell(c, r, m_matrix.at(r, c));
    } else {
        data->clear();
    }
    const double limit = colorLimit();
    m_colorMap->setDataRange(QCPRange(-limit, limit));
    m_colorScale->setDataRange(QCPRange(-limit, limit));

    auto colTicks = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    for (int c = 0; c < cols; ++c)
        colTicks->addTick(c, colLabel(c));
    auto rowTicks = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    for (int r = 0; r < rows; ++r)
        rowTicks->addTick(r, rowLabel(r));
    m_plot->yAxis->setLabel(QString::fromStdString(m_rowAxisLabel));
    m_plot->xAxis2->setLabel(QString::fromStdString(m_colAxisLabel));
    m_colorScale->axis()->setLabel(QString::fromStdString(m_colorLabel));
    m_plot->xAxis2->setTicker(colTicks);
    m_plot->yAxis->setTicker(rowTicks);
    m_plot->xAxis2->setTickLabelRotation(cols > 16 ? 90 : 0);
    m_plot->xAxis->setRange(-0.5, std::max(cols, 1) - 0.5);
    m_plot->xAxis2->setRange(-0.5, std::max(cols, 1) - 0.5);
    m_plot->yAxis->setRange(-0.5, std::max(rows, 1) - 0.5);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

bool HeatmapView::cellAt(const QPointF& pos, int* row, int* col) const
{
    if (m_matrix.rows <= 0 || m_matrix.cols <= 0 || !m_plot->axisRect()->rect().contains(pos.toPoint()))
        return false;
    const double key = m_plot->xAxis->pixelToCoord(pos.x());
    const double value = m_plot->yAxis->pixelToCoord(pos.y());
    const int c = int(std::lround(key)), r = int(std::lround(value));
    if (c < 0 || r < 0 || c >= m_matrix.cols || r >= m_matrix.rows)
        return false;
    if (row)
        *row = r;
    if (col)
        *col = c;
    return true;
}

QPointF HeatmapView::cellCenter(int row, int col) const
{
    return QPointF(m_plot->xAxis->coordToPixel(col), m_plot->yAxis->coordToPixel(row));
}

QString HeatmapView::cellText(int row, int col) const
{
    if (row < 0 || col < 0 || row >= m_matrix.rows || col >= m_matrix.cols)
        return QString();
    return tr("row %1, column %2\nvalue = %3")
        .arg(rowLabel(row), colLabel(col), QString::number(m_matrix.at(row, col), 'g', 6));
}

void HeatmapView::replotNow()
{
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

std::string HeatmapView::matrixCsv(const icl::Matrix& matrix, const std::map<std::string, std::string>& metadata)
{
    return icl::matrixCsv(matrix, metadata);
}

bool HeatmapView::exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const
{
    if (format == "csv") {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (f)
            f << matrixCsv(m_matrix, m_metadata);
        if (!f) {
            if (error)
                *error = "cannot write " + path;
            return false;
        }
        return true;
    }
    if (!ensureExportApplication(error))
        return false;
    // Drawn off screen at the publication size, caption included, no toolbar.
    HeatmapView view;
    view.setToolBarVisible(false);
    view.m_matrix = m_matrix;
    view.m_metadata = m_metadata;
    view.m_limit = m_limit;
    view.m_rowAxisLabel = m_rowAxisLabel;
    view.m_colAxisLabel = m_colAxisLabel;
    view.m_colorLabel = m_colorLabel;
    view.m_captionVisible = true;
    view.rebuild();
    view.resize(kExportLogicalWidth, kExportLogicalHeight);
    view.plot()->resize(kExportLogicalWidth, kExportLogicalHeight);
    return writePlotFile(view.plot(), path, format, dpi, m_matrix.name, m_metadata, error);
}

void HeatmapView::exportWithDialog()
{
    QString base = QString::fromStdString(m_matrix.name).toLower();
    for (QChar& c : base)
        if (!c.isLetterOrNumber())
            c = '_';
    if (base.isEmpty())
        base = QStringLiteral("heatmap");
    ExportTarget target;
    if (!askExportTarget(this, tr("Export heatmap"), base, &target))
        return;
    const QString path = QString::fromStdString(target.path);
    std::string error;
    if (!exportTo(target.path, target.format, target.dpi, &error)) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(error));
        return;
    }
    Q_EMIT exported(path);
}

} // namespace icl::widgets
