#include "widgets/bar_chart_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <QAction>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "widgets/plot_export.h"

namespace icl::widgets {

namespace {

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos)
        return s;
    std::string q = "\"";
    for (char c : s)
        q += (c == '"') ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

} // namespace

BarChartView::BarChartView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_toolBar(new QToolBar(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_toolBar->setIconSize(QSize(16, 16));
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction* exportAction = m_toolBar->addAction(tr("Export…"), this, &BarChartView::exportWithDialog);
    exportAction->setObjectName(QStringLiteral("exportAction"));
    exportAction->setToolTip(tr("Export the chart as PNG, SVG, PDF or its values as CSV"));
    layout->addWidget(m_toolBar);
    layout->addWidget(m_plot, 1);

    m_plot->setObjectName(QStringLiteral("barChartPlot"));
    m_plot->setMinimumSize(240, 140);
    m_plot->setMouseTracking(true);

    QFont titleFont = font();
    titleFont.setBold(true);
    m_title = new QCPTextElement(m_plot, QString(), titleFont);
    QFont captionFont = font();
    captionFont.setPointSizeF(captionFont.pointSizeF() * 0.8);
    m_caption = new QCPTextElement(m_plot, QString(), captionFont);
    m_caption->setTextColor(QColor(0x55, 0x55, 0x55));
    m_caption->setMinimumSize(1, 0);

    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.8);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(QColor(0x00, 0x72, 0xB2));
    m_plot->xAxis->grid()->setVisible(false);
    m_plot->xAxis->setSubTicks(false);
    m_plot->xAxis->setTickLength(0, 3);

    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.addAction(tr("Export…"), this, &BarChartView::exportWithDialog);
        menu.exec(m_plot->mapToGlobal(pos));
    });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        const QString text = barText(barAt(event->position()));
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(m_plot->mapToGlobal(event->position().toPoint()), text, m_plot);
        m_plot->setToolTip(text);
    });
    rebuild();
}

BarChartView::~BarChartView()
{
    if (!m_title->layout())
        delete m_title;
    if (!m_caption->layout())
        delete m_caption;
}

void BarChartView::setChart(const BarChart& chart)
{
    m_chart = chart;
    rebuild();
}

void BarChartView::setToolBarVisible(bool visible)
{
    m_toolBar->setVisible(visible);
}

void BarChartView::setCaptionVisible(bool visible)
{
    m_captionVisible = visible;
    rebuild();
}

void BarChartView::rebuild()
{
    QCPLayoutGrid* grid = m_plot->plotLayout();
    if (m_title->layout())
        grid->take(m_title);
    if (m_caption->layout())
        grid->take(m_caption);
    grid->simplify();
    QString caption;
    for (const auto& [key, value] : m_chart.metadata)
        caption += (caption.isEmpty() ? QString() : QStringLiteral(" · ")) + QString::fromStdString(key + ": " + value);
    m_title->setText(QString::fromStdString(m_chart.title));
    m_caption->setText(wrapCaption(caption, m_caption->font(), kExportLogicalWidth - 40));
    if (!m_chart.title.empty()) {
        grid->insertRow(0);
        grid->addElement(0, 0, m_title);
    }
    if (m_captionVisible && !caption.isEmpty()) {
        const int row = grid->rowCount();
        grid->insertRow(row);
        grid->addElement(row, 0, m_caption);
    }

    const int n = int(std::min(m_chart.labels.size(), m_chart.values.size()));
    QVector<double> keys(n), values(n);
    double lo = 0.0, hi = 0.0;
    for (int i = 0; i < n; ++i) {
        keys[i] = i;
        values[i] = m_chart.values[size_t(i)];
        if (std::isfinite(values[i])) {
            lo = std::min(lo, values[i]);
            hi = std::max(hi, values[i]);
        }
    }
    m_bars->setData(keys, values, true);
    m_bars->setName(QString::fromStdString(m_chart.y_label));
    m_plot->xAxis->setLabel(QString::fromStdString(m_chart.x_label));
    m_plot->yAxis->setLabel(QString::fromStdString(m_chart.y_label));
    updateTicks();
    m_plot->xAxis->setRange(-0.6, std::max(n, 1) - 0.4);
    const double pad = 0.05 * std::max(hi - lo, 1e-12);
    m_plot->yAxis->setRange(lo < 0 ? lo - pad : 0.0, hi > 0 ? hi + pad : (lo < 0 ? pad : 1.0));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void BarChartView::updateTicks()
{
    // Level of detail: label every k-th bar so that rotated labels never overlap (the Attention pattern's rule: a
    // smaller font on dense axes, then an odd stride).
    const int n = int(std::min(m_chart.labels.size(), m_chart.values.size()));
    QFont tickFont = font();
    if (n > 12)
        tickFont.setPointSizeF(tickFont.pointSizeF() * 0.85);
    m_plot->xAxis->setTickLabelFont(tickFont);
    const QFontMetrics fm(tickFont);
    const int rectW = m_plot->axisRect()->width();
    const int axisW = rectW > 10 ? rectW : std::max(200, m_plot->width() - 100);
    int widest = 0;
    for (int i = 0; i < n && i < 64; ++i)
        widest = std::max(widest, fm.horizontalAdvance(QString::fromStdString(m_chart.labels[size_t(i)])));
    const double pitch = n > 12 ? fm.height() : widest + 8;
    int stride = n > 0 ? std::max(1, int(std::ceil(pitch * n / axisW))) : 1;
    if (stride > 1 && stride % 2 == 0)
        ++stride;
    m_stride = stride;
    auto ticks = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    int last = 0;
    for (int i = 0; i < n; i += stride) {
        ticks->addTick(i, QString::fromStdString(m_chart.labels[size_t(i)]));
        last = i;
    }
    if (n > 1 && last != n - 1) { // the last bar (the query) in place of the tick before it when they would crowd
        if (last > 0 && n - 1 - last < stride)
            ticks->ticks().remove(last);
        ticks->addTick(n - 1, QString::fromStdString(m_chart.labels[size_t(n - 1)]));
    }
    m_plot->xAxis->setTicker(ticks);
    m_plot->xAxis->setTickLabelRotation(n > 12 ? 90 : 0);
}

void BarChartView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    // Relabel for the new size once QCustomPlot has laid itself out.
    QMetaObject::invokeMethod(
        this,
        [this] {
            const int before = m_stride;
            updateTicks();
            if (before != m_stride)
                m_plot->replot(QCustomPlot::rpQueuedReplot);
        },
        Qt::QueuedConnection);
}

int BarChartView::barAt(const QPointF& pos) const
{
    const int n = int(std::min(m_chart.labels.size(), m_chart.values.size()));
    if (n == 0 || !m_plot->axisRect()->rect().contains(pos.toPoint()))
        return -1;
    const int i = int(std::lround(m_plot->xAxis->pixelToCoord(pos.x())));
    return (i >= 0 && i < n) ? i : -1;
}

QString BarChartView::barText(int index) const
{
    if (index < 0 || size_t(index) >= m_chart.labels.size() || size_t(index) >= m_chart.values.size())
        return QString();
    return QStringLiteral("%1: %2").arg(QString::fromStdString(m_chart.labels[size_t(index)]),
        QString::number(m_chart.values[size_t(index)], 'g', 6));
}

void BarChartView::replotNow()
{
    updateTicks();
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

std::string BarChartView::barChartCsv(const BarChart& chart)
{
    std::ostringstream out;
    out << "# title: " << chart.title << "\n";
    for (const auto& [key, value] : chart.metadata)
        out << "# " << key << ": " << value << "\n";
    out << csvField(chart.x_label) << "," << csvField(chart.y_label) << "\n";
    for (size_t i = 0; i < chart.labels.size() && i < chart.values.size(); ++i) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", chart.values[i]);
        out << csvField(chart.labels[i]) << "," << (std::isnan(chart.values[i]) ? "" : buf) << "\n";
    }
    return out.str();
}

bool BarChartView::exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const
{
    if (format == "csv") {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (f)
            f << barChartCsv(m_chart);
        if (!f) {
            if (error)
                *error = "cannot write " + path;
            return false;
        }
        return true;
    }
    if (!ensureExportApplication(error))
        return false;
    BarChartView view;
    view.setToolBarVisible(false);
    view.resize(kExportLogicalWidth, kExportLogicalHeight);
    view.plot()->resize(kExportLogicalWidth, kExportLogicalHeight);
    view.setChart(m_chart);
    return writePlotFile(view.plot(), path, format, dpi, m_chart.title, m_chart.metadata, error);
}

void BarChartView::exportWithDialog()
{
    QString base = QString::fromStdString(m_chart.name);
    if (base.isEmpty())
        base = QStringLiteral("bar_chart");
    ExportTarget target;
    if (!askExportTarget(this, tr("Export bar chart"), base, &target))
        return;
    std::string error;
    if (!exportTo(target.path, target.format, target.dpi, &error)) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(error));
        return;
    }
    Q_EMIT exported(QString::fromStdString(target.path));
}

} // namespace icl::widgets
