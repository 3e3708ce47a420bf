#include "widgets/plot_view.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <QAction>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QToolBar>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "core/types/number_format.h"
#include "widgets/figure_export.h"
#include "widgets/plot_export.h"

namespace icl::widgets {

namespace {

/// Drops points a log axis cannot show (non-positive values); NaN is kept as a gap in the line.
bool drawable(double value, bool log)
{
    return !log || std::isnan(value) || value > 0.0;
}

/// On a log y axis, a series whose largest value is below this fraction of the figure's largest is left out.
constexpr double kBelowLogAxis = 1e-6;

/// The fewest labelled ticks an axis shows (issue 49: an η scan's log axis had two around its minimum).
constexpr int kMinTicks = 4;

/// The largest step among 1, 2, 2.5 and 5 × 10^k that is at most `raw`.
double niceStep(double raw)
{
    const double decade = std::pow(10.0, std::floor(std::log10(raw)));
    double step = decade;
    for (double m : { 2.0, 2.5, 5.0 })
        if (m * decade <= raw * (1 + 1e-9))
            step = m * decade;
    return step;
}

/// Linear ticker that gives at least kMinTicks labelled ticks: QCustomPlot's readable steps can leave two or three
/// on a small range.
class LinearTicker : public QCPAxisTicker {
public:
    /// `integers`: ticks at whole numbers only (an axis that counts; a step of 2.5 becomes 5, below 1 becomes 1).
    explicit LinearTicker(bool integers = false) : m_integers(integers) { setTickCount(5); }

protected:
    double getTickStep(const QCPRange& range) override
    {
        double step = QCPAxisTicker::getTickStep(range);
        for (int i = 0; i < 8 && step > 0 && range.size() / step < double(kMinTicks); ++i)
            step = niceStep(step / 2.0 * (1 - 1e-9));
        if (m_integers && step != std::floor(step))
            step = step < 1.0 ? 1.0 : 2.0 * step;
        return step;
    }

private:
    bool m_integers;
};

/// Log ticker that labels 1, 2 and 5 × 10^k (with minor ticks at the other integer multiples)
/// when the axis spans under three decades, where powers of ten alone leave one or two labels.
class LogTicker : public QCPAxisTickerLog {
public:
    void generate(const QCPRange& range, const QLocale& locale, QChar formatChar, int precision, QVector<double>& ticks,
        QVector<double>* subTicks, QVector<QString>* tickLabels) override
    {
        if (!(range.lower > 0 && range.upper / range.lower < 1000.0)) {
            QCPAxisTickerLog::generate(range, locale, formatChar, precision, ticks, subTicks, tickLabels);
            return;
        }
        ticks.clear();
        if (subTicks)
            subTicks->clear();
        const int first = int(std::floor(std::log10(range.lower)));
        const int last = int(std::floor(std::log10(range.upper)));
        auto multiples = [&](bool all) {
            ticks.clear();
            if (subTicks)
                subTicks->clear();
            for (int k = first; k <= last; ++k) {
                const double decade = std::pow(10.0, k);
                for (int m = 1; m <= 9; ++m) {
                    const double v = m * decade;
                    if (v < range.lower || v > range.upper)
                        continue;
                    if (all || m == 1 || m == 2 || m == 5)
                        ticks.push_back(v);
                    else if (subTicks)
                        subTicks->push_back(v);
                }
            }
        };
        multiples(false);
        if (ticks.size() < kMinTicks)
            multiples(true); // under a decade: every integer multiple of 10^k
        if (ticks.size() < kMinTicks) {
            // Under a factor of about 2 (e.g. an η scan's loss from 0.8 to 1.6): evenly stepped ticks.
            ticks.clear();
            if (subTicks)
                subTicks->clear();
            const double step = niceStep((range.upper - range.lower) / double(kMinTicks));
            for (double v = std::ceil(range.lower / step) * step; v <= range.upper; v += step)
                ticks.push_back(v);
        }
        if (tickLabels) {
            tickLabels->clear();
            for (double t : ticks)
                tickLabels->push_back(locale.toString(t, 'g', 4));
        }
    }
};

} // namespace

QColor PlotView::seriesColor(int index)
{
    // Okabe & Ito (2008), ordered by contrast on white; yellow last.
    static const QColor palette[] = {
        QColor(0x00, 0x72, 0xB2), // blue
        QColor(0xD5, 0x5E, 0x00), // vermillion
        QColor(0x00, 0x9E, 0x73), // bluish green
        QColor(0xCC, 0x79, 0xA7), // reddish purple
        QColor(0xE6, 0x9F, 0x00), // orange
        QColor(0x56, 0xB4, 0xE9), // sky blue
        QColor(0x00, 0x00, 0x00), // black
        QColor(0xF0, 0xE4, 0x42), // yellow
    };
    const int n = int(sizeof palette / sizeof palette[0]);
    return palette[((index % n) + n) % n];
}

QColor PlotView::predictorColor(const std::string& predictor)
{
    std::string family = predictor;
    const size_t underscore = family.find_last_of('_');
    if (underscore != std::string::npos && underscore + 1 < family.size()
        && family.find_first_not_of("0123456789", underscore + 1) == std::string::npos)
        family.resize(underscore);  // gd_3 → gd
    static const std::map<std::string, QColor> colors = {
        {"model", QColor(0x00, 0x72, 0xB2)},            // blue
        {"gd", QColor(0xD5, 0x5E, 0x00)},               // vermillion
        {"gdpp", QColor(0x00, 0x9E, 0x73)},             // bluish green
        {"ridge", QColor(0xCC, 0x79, 0xA7)},            // reddish purple
        {"newton", QColor(0xE6, 0x9F, 0x00)},           // orange
        {"oracle_ridge_phi", QColor(0x56, 0xB4, 0xE9)}, // sky blue
        {"least_squares", QColor(0x00, 0x00, 0x00)},    // black
        {"zero", QColor(0x88, 0x88, 0x88)},             // grey: the reference every other predictor beats
        // Beyond Okabe & Ito's eight: Tol's (2021) dark colours, apart from the eight and from each other.
        {"averaging", QColor(0x99, 0x99, 0x33)},         // olive
        {"knn", QColor(0x88, 0x22, 0x55)},               // wine
        {"mixture_posterior", QColor(0x33, 0x22, 0x88)}, // indigo
        {"features_gd", QColor(0x11, 0x77, 0x33)},       // green
    };
    const auto it = colors.find(family);
    return it == colors.end() ? QColor() : it->second;
}

std::vector<QColor> PlotView::seriesColors(const icl::Figure& figure)
{
    const size_t n = figure.series.size();
    std::vector<QColor> out(n);
    std::vector<QColor> used;
    std::map<QRgb, int> members; // series of each family colour so far
    for (size_t i = 0; i < n; ++i) {
        const QColor c = predictorColor(figure.series[i].predictor);
        if (!c.isValid())
            continue;
        // The family's first series gets its colour, later ones (GD-2 after GD-1, the train loss after the model's
        // eval loss, a fit line after its points) lighter shades of it: mixed with white 26 %, 42 %, 51 %, … and
        // never past 65 %, so that a fifth Newton iteration count is still seen on white.
        const int member = members[c.rgb()]++;
        QColor shade = c;
        if (member > 0) {
            const double w = 0.65 * (1.0 - std::pow(0.6, member));
            shade = QColor::fromRgbF(float(c.redF() + (1 - c.redF()) * w), float(c.greenF() + (1 - c.greenF()) * w),
                float(c.blueF() + (1 - c.blueF()) * w));
        }
        out[i] = shade;
        used.push_back(shade);
    }
    int next = 0;
    for (size_t i = 0; i < n; ++i) {
        if (out[i].isValid())
            continue;
        // The first palette colour not taken yet; past 8 series the palette repeats.
        QColor c = seriesColor(next);
        for (int tries = 0; tries < 8 && std::find(used.begin(), used.end(), c) != used.end(); ++tries)
            c = seriesColor(++next);
        ++next;
        out[i] = c;
        used.push_back(c);
    }
    return out;
}

PlotView::PlotView(QWidget* parent)
    : QWidget(parent)
    , m_plot(new QCustomPlot(this))
    , m_toolBar(new QToolBar(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);

    m_toolBar->setIconSize(QSize(16, 16));
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction* exportAction = m_toolBar->addAction(tr("Export…"), this, &PlotView::exportWithDialog);
    exportAction->setObjectName(QStringLiteral("exportAction"));
    exportAction->setToolTip(tr("Export the plot as PNG, SVG, PDF or its data as CSV"));
    QAction* resetAction = m_toolBar->addAction(tr("Reset view"), this, &PlotView::resetView);
    resetAction->setToolTip(tr("Rescale the axes to the data (also: double-click the plot)"));
    layout->addWidget(m_toolBar);
    layout->addWidget(m_plot, 1);

    m_plot->setObjectName(QStringLiteral("plot"));
    m_plot->setMinimumSize(320, 200);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    m_plot->setMouseTracking(true);

    // Title above and caption below the axis rect; legend to the right, where it never covers data.
    QFont titleFont = font();
    titleFont.setBold(true);
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.1);
    m_title = new QCPTextElement(m_plot, QString(), titleFont);
    QFont captionFont = font();
    captionFont.setPointSizeF(captionFont.pointSizeF() * 0.8);
    m_caption = new QCPTextElement(m_plot, QString(), captionFont);
    m_caption->setTextColor(QColor(0x55, 0x55, 0x55));
    m_caption->setMinimumSize(1, 0); // wrapped by rebuild(); never widens the layout

    m_plot->legend->setVisible(true);
    QFont legendFont = font();
    legendFont.setPointSizeF(legendFont.pointSizeF() * 0.9);
    m_plot->legend->setFont(legendFont);
    m_plot->legend->setBorderPen(QPen(QColor(0xBB, 0xBB, 0xBB)));
    m_plot->axisRect()->insetLayout()->take(m_plot->legend);
    // The axis rect and the legend share one row (a sub-grid), so the full-width title and caption
    // rows never change the width of the legend column. Grids join the plot before they get children.
    QCPAxisRect* axisRect = m_plot->axisRect();
    m_plot->plotLayout()->take(axisRect);
    m_plot->plotLayout()->simplify();
    auto* body = new QCPLayoutGrid;
    m_plot->plotLayout()->addElement(0, 0, body);
    body->addElement(0, 0, axisRect);
    auto* legendColumn = new QCPLayoutGrid;
    body->addElement(0, 1, legendColumn);
    body->setColumnStretchFactor(1, 0.001);
    legendColumn->addElement(0, 0, m_plot->legend);
    legendColumn->addElement(1, 0, new QCPLayoutElement(m_plot)); // pushes the legend to the top
    legendColumn->setRowStretchFactor(0, 0.001);
    legendColumn->setMargins(QMargins(0, 10, 6, 0));
    // Below the axis rect, for a plot too narrow for the legend beside it (placeLegend): in the body only while it
    // holds the legend (an empty grid's maximum width of 0 would pin the axis rect to its minimum).
    auto* legendRow = new QCPLayoutGrid;
    body->addElement(1, 0, legendRow);
    legendRow->setMargins(QMargins(0, 0, 0, 0));
    body->take(legendRow);
    body->simplify();
    m_body = body;
    m_legendColumn = legendColumn;
    m_legendRow = legendRow;
    // Every replot (resize, export at its own size) places the legend for the width it is drawn at.
    connect(m_plot, &QCustomPlot::beforeReplot, this, &PlotView::placeLegend);

    m_plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_plot, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        QMenu menu(this);
        menu.addAction(tr("Export…"), this, &PlotView::exportWithDialog);
        menu.addAction(tr("Reset view"), this, &PlotView::resetView);
        menu.exec(m_plot->mapToGlobal(pos));
    });
    connect(m_plot, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
    connect(m_plot, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
        // Hover text: the nearest data point within a few pixels.
        const QPointF pos = event->position();
        double best = 8.0;
        QString text;
        for (size_t i = 0; i < m_seriesGraphs.size(); ++i) {
            QCPGraph* graph = m_seriesGraphs[i];
            QVariant details;
            const double distance = graph->selectTest(pos, false, &details);
            if (distance < 0 || distance >= best)
                continue;
            const QCPDataSelection selection = details.value<QCPDataSelection>();
            if (selection.isEmpty())
                continue;
            const auto it = graph->data()->at(selection.dataRange().begin());
            best = distance;
            text = QStringLiteral("%1\n%2 = %3\n%4 = %5")
                       .arg(graph->name(), m_plot->xAxis->label(),
                           QString::fromStdString(icl::formatFullPrecision(it->key)), m_plot->yAxis->label(),
                           QString::fromStdString(icl::formatFullPrecision(it->value)));
        }
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(m_plot->mapToGlobal(pos.toPoint()), text, m_plot);
        m_plot->setToolTip(text);
    });

    rebuild();
}

PlotView::~PlotView()
{
    // Title and caption are not in the layout while their text is empty; the plot owns them otherwise.
    if (!m_title->layout())
        delete m_title;
    if (!m_caption->layout())
        delete m_caption;
    if (!m_legendRow->layout())
        delete m_legendRow;
}

void PlotView::setFigure(const icl::Figure& figure)
{
    m_figure = figure;
    rebuild();
}

QCPGraph* PlotView::seriesGraph(int index) const
{
    if (index < 0 || size_t(index) >= m_seriesGraphs.size())
        return nullptr;
    return m_seriesGraphs[size_t(index)];
}

void PlotView::setToolBarVisible(bool visible)
{
    m_toolBar->setVisible(visible);
}

void PlotView::replotNow()
{
    m_plot->replot(QCustomPlot::rpImmediateRefresh);
}

void PlotView::rebuild()
{
    m_plot->clearGraphs();
    m_seriesGraphs.clear();

    // Layout rows: [title], axis rect + legend, [caption].
    QCPLayoutGrid* grid = m_plot->plotLayout();
    if (m_title->layout())
        grid->take(m_title);
    if (m_caption->layout())
        grid->take(m_caption);
    grid->simplify();
    const QString title = QString::fromStdString(m_figure.title);
    const QString caption = QString::fromStdString(m_figure.caption());
    m_title->setText(title);
    m_caption->setText(wrapCaption(caption, m_caption->font(), kExportLogicalWidth - 40));
    if (!title.isEmpty()) {
        grid->insertRow(0);
        grid->addElement(0, 0, m_title);
    }
    if (!caption.isEmpty()) {
        const int row = grid->rowCount();
        grid->insertRow(row);
        grid->addElement(row, 0, m_caption);
    }

    QCPAxis* xAxis = m_plot->xAxis;
    QCPAxis* yAxis = m_plot->yAxis;
    xAxis->setLabel(QString::fromStdString(m_figure.x_label));
    yAxis->setLabel(QString::fromStdString(m_figure.y_label));
    auto configureAxis = [](QCPAxis* axis, bool log) {
        if (log) {
            axis->setScaleType(QCPAxis::stLogarithmic);
            axis->setTicker(QSharedPointer<QCPAxisTickerLog>(new LogTicker));
            axis->setNumberFormat(QStringLiteral("eb"));
            axis->setNumberPrecision(0);
        } else {
            axis->setScaleType(QCPAxis::stLinear);
            axis->setTicker(QSharedPointer<QCPAxisTicker>(new LinearTicker));
            axis->setNumberFormat(QStringLiteral("gbd"));
            axis->setNumberPrecision(6);
        }
    };
    configureAxis(xAxis, m_figure.log_x);
    if (!m_figure.log_x && m_figure.x_integer)
        xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new LinearTicker(true)));
    if (!m_figure.log_x && !m_figure.x_ticks.empty() && m_figure.x_ticks.size() == m_figure.x_tick_labels.size()) {
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        for (size_t i = 0; i < m_figure.x_ticks.size(); ++i)
            ticker->addTick(m_figure.x_ticks[i], QString::fromStdString(m_figure.x_tick_labels[i]));
        xAxis->setTicker(ticker);
    }
    configureAxis(yAxis, m_figure.log_y);

    bool anyData = false;
    const std::vector<QColor> colors = seriesColors(m_figure);
    // On a log y axis, a series far below all others (least squares of a noiseless square system: float noise
    // near 1e-11) would stretch the axis over ten decades and flatten every other line: it is left out of the
    // axis and its legend entry says so (issue 49).
    // Only a series that lies far below every value of the others too is left out: one inside or near another
    // series' span (a model's loss line and the best-η marker by a GD curve that spans eight decades) is drawn.
    double top = 0.0;
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> seriesTop(m_figure.series.size(), 0.0), seriesBottom(m_figure.series.size(), inf);
    if (m_figure.log_y)
        for (size_t i = 0; i < m_figure.series.size(); ++i) {
            const icl::Series& s = m_figure.series[i];
            for (size_t k = 0; k < s.y.size() && k < s.x.size(); ++k)
                if (std::isfinite(s.y[k]) && s.y[k] > 0 && drawable(s.x[k], m_figure.log_x)) {
                    seriesTop[i] = std::max(seriesTop[i], s.y[k]);
                    seriesBottom[i] = std::min(seriesBottom[i], s.y[k]);
                }
            top = std::max(top, seriesTop[i]);
        }
    auto farBelow = [&](size_t i) { return seriesTop[i] > 0 && seriesTop[i] < kBelowLogAxis * top; };
    double othersBottom = inf;  // the lowest value of the series that stay on the axis
    for (size_t i = 0; i < m_figure.series.size(); ++i)
        if (!farBelow(i))
            othersBottom = std::min(othersBottom, seriesBottom[i]);
    for (size_t i = 0; i < m_figure.series.size(); ++i) {
        const icl::Series& series = m_figure.series[i];
        const QColor color = colors[i];
        const size_t n = std::min(series.x.size(), series.y.size());
        const bool hasBand = series.y_lower.size() >= n && series.y_upper.size() >= n && !series.y_lower.empty();

        if (hasBand) {
            QVector<double> bx, lo, hi;
            for (size_t k = 0; k < n; ++k) {
                if (!drawable(series.x[k], m_figure.log_x) || !drawable(series.y_lower[k], m_figure.log_y)
                    || !drawable(series.y_upper[k], m_figure.log_y))
                    continue;
                bx.push_back(series.x[k]);
                lo.push_back(series.y_lower[k]);
                hi.push_back(series.y_upper[k]);
            }
            QCPGraph* lower = m_plot->addGraph(xAxis, yAxis);
            QCPGraph* upper = m_plot->addGraph(xAxis, yAxis);
            lower->setName(QString::fromStdString(series.name) + QStringLiteral(" (lower)"));
            upper->setName(QString::fromStdString(series.name) + QStringLiteral(" (upper)"));
            lower->setData(bx, lo);
            upper->setData(bx, hi);
            QColor edge = color;
            edge.setAlpha(90);
            lower->setPen(QPen(edge, 0.5));
            upper->setPen(QPen(edge, 0.5));
            QColor fill = color;
            fill.setAlpha(50);
            upper->setBrush(fill);
            upper->setChannelFillGraph(lower);
            lower->removeFromLegend();
            upper->removeFromLegend();
            lower->setSelectable(QCP::stNone);
            upper->setSelectable(QCP::stNone);
        }

        const bool belowAxis = m_figure.log_y && farBelow(i) && seriesTop[i] < kBelowLogAxis * othersBottom;
        QVector<double> x, y;
        x.reserve(int(n));
        y.reserve(int(n));
        for (size_t k = 0; k < n && !belowAxis; ++k) {
            if (!drawable(series.x[k], m_figure.log_x) || !drawable(series.y[k], m_figure.log_y))
                continue;
            x.push_back(series.x[k]);
            y.push_back(series.y[k]);
        }
        anyData = anyData || !x.isEmpty();

        QCPGraph* graph = m_plot->addGraph(xAxis, yAxis);
        QString name = QString::fromStdString(series.name);
        if (belowAxis)
            name += tr(" (≤ %1, below the axis)").arg(QString::fromStdString(icl::formatSignificant(seriesTop[i])));
        else if (x.isEmpty() && n > 0 && (m_figure.log_x || m_figure.log_y))
            name += tr(" (≤ 0: not on the log axis)");  // listed, so a missing line is not a mystery
        graph->setName(name);
        graph->setData(x, y);
        QPen pen(color, 2.0);
        pen.setCapStyle(Qt::FlatCap);
        switch (series.style) {
        case icl::Series::Style::Line:
            graph->setLineStyle(QCPGraph::lsLine);
            break;
        case icl::Series::Style::Dashed:
            pen.setStyle(Qt::DashLine);
            pen.setWidthF(1.6);
            graph->setLineStyle(QCPGraph::lsLine);
            break;
        case icl::Series::Style::Markers:
            graph->setLineStyle(QCPGraph::lsNone);
            graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, color, color, 6));
            break;
        }
        graph->setPen(pen);
        m_seriesGraphs.push_back(graph);
    }
    m_plot->legend->setVisible(!m_figure.series.empty());

    if (anyData) {
        resetView();
    } else {
        xAxis->setRange(m_figure.log_x ? QCPRange(1, 10) : QCPRange(0, 1));
        yAxis->setRange(m_figure.log_y ? QCPRange(1e-3, 1) : QCPRange(0, 1));
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void PlotView::placeLegend()
{
    QCPLegend* legend = m_plot->legend;
    // Beside the axis rect while it takes at most a third of the width; otherwise below it, in as many columns as
    // fit (the Attention page's lens plot and narrow panes: the legend took half the plot).
    int widest = 0;
    int items = 0;  // a wrapped legend's grid has empty cells: item(i) is null there
    for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i)) {
            widest = std::max(widest, item->minimumOuterSizeHint().width());
            ++items;
        }
    const int width = std::max(1, m_plot->viewport().width());
    const int margins = legend->margins().left() + legend->margins().right() + 20;
    const bool below = items > 0 && widest + margins > width / 3;
    QCPLayoutGrid* from = below ? m_legendColumn : m_legendRow;
    QCPLayoutGrid* to = below ? m_legendRow : m_legendColumn;
    if (legend->layout() == from) {
        from->take(legend);
        from->simplify();
        if (to == m_legendColumn) {
            m_body->take(m_legendRow);
            m_body->simplify();
            to->insertRow(0); // the column: the legend (row 0) above a spacer that pushes it to the top
            to->addElement(0, 0, legend);
            to->setRowStretchFactor(0, 0.001);
        } else {
            to->addElement(0, 0, legend);
            m_body->addElement(1, 0, m_legendRow);
            m_body->setRowStretchFactor(1, 0.001);
        }
    }
    m_legendBelow = below;
    if (below) {
        const int columns = std::max(1, std::min(items, (width - 40) / std::max(1, widest + 8)));
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, false);
        legend->setWrap(columns);
    } else {
        legend->setWrap(0);
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst, false);
    }
    legend->setFillOrder(legend->fillOrder(), true); // re-flows the items for the new wrap
}

void PlotView::resetView()
{
    m_plot->rescaleAxes();
    // A little air around the data: 5% on linear axes, a factor on log axes.
    auto pad = [](QCPAxis* axis) {
        const QCPRange r = axis->range();
        if (axis->scaleType() == QCPAxis::stLogarithmic) {
            if (r.lower > 0 && r.upper > 0) {
                const double f = std::pow(r.upper / r.lower, 0.05);
                axis->setRange(r.lower / f, r.upper * f);
            }
        } else {
            const double margin = 0.05 * r.size();
            axis->setRange(r.lower - margin, r.upper + margin);
        }
    };
    pad(m_plot->yAxis);
    // Scatter plots (a markers series with many points) get the same air on x, so that the markers
    // at the extremes are not cut in half by the axis rect.
    bool scatter = false;
    for (const icl::Series& s : m_figure.series)
        scatter = scatter || (s.style == icl::Series::Style::Markers && s.x.size() > 2);
    if (scatter)
        pad(m_plot->xAxis);
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void PlotView::exportWithDialog()
{
    const QString base = m_figure.name.empty() ? QStringLiteral("figure") : QString::fromStdString(m_figure.name);
    ExportTarget target;
    if (!askExportTarget(this, tr("Export plot"), base, &target))
        return;
    const QString path = QString::fromStdString(target.path);
    std::string error;
    if (!exportFigure(m_figure, target.path, target.format, target.dpi, &error)) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(error));
        return;
    }
    Q_EMIT exported(path);
}

} // namespace icl::widgets
