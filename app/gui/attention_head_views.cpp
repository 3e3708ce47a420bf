#include "app/gui/attention_head_views.h"

#include <initializer_list>

#include <QEvent>
#include <QSplitter>
#include <QTabWidget>

#include "app/gui/attention_tables.h"
#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/plot_view.h"

namespace icl::gui {

AttentionHeadViews::AttentionHeadViews(QSplitter* columns)
    : QObject(columns)
{
    // --- left: thumbnails and head summaries ---
    auto* left = new QSplitter(Qt::Vertical, columns);
    left->setChildrenCollapsible(false);
    m_grid = new widgets::AttentionGrid(left);
    m_grid->setToolTip(tr("Attention pattern of every head (layer × head); click one to show it large"));
    m_headTable = new HeadSummaryTable(left);
    left->addWidget(m_grid);
    left->addWidget(m_headTable);
    left->setStretchFactor(0, 3);
    left->setStretchFactor(1, 2);

    // --- middle: the selected head large; its query row and the regression lens below ---
    auto* middle = new QSplitter(Qt::Vertical, columns);
    middle->setChildrenCollapsible(false);
    m_patternView = new widgets::AttentionPatternView(middle);
    m_patternView->setObjectName(QStringLiteral("attentionPatternView"));
    m_patternView->setCaptionVisible(false); // the page's heading says it; exports carry the caption
    // The thumbnails follow the large view's colour-scale mode.
    connect(
        m_patternView, &widgets::AttentionPatternView::scaleModeChanged, m_grid, &widgets::AttentionGrid::setScaleMode);
    m_lowerTabs = new QTabWidget(middle);
    m_lowerTabs->setObjectName(QStringLiteral("attentionLowerTabs"));
    m_rowChart = new widgets::BarChartView(m_lowerTabs);
    m_rowChart->setObjectName(QStringLiteral("attentionRowChart"));
    m_rowChart->setCaptionVisible(false); // the heading says it; exports carry the caption
    m_lensPlot = new widgets::PlotView(m_lowerTabs);
    m_lensPlot->setObjectName(QStringLiteral("attentionLensPlot"));
    m_lowerTabs->addTab(m_rowChart, tr("Query row"));
    m_lowerTabs->addTab(m_lensPlot, tr("Regression lens"));
    middle->addWidget(m_patternView);
    middle->addWidget(m_lowerTabs);
    middle->setStretchFactor(0, 2);
    middle->setStretchFactor(1, 1);

    columns->addWidget(left);
    columns->addWidget(middle);

    m_currentView = m_patternView;
    for (QWidget* view : std::initializer_list<QWidget*> { m_patternView, m_rowChart, m_lensPlot })
        for (QWidget* child : view->findChildren<QWidget*>())
            child->installEventFilter(this);
}

bool AttentionHeadViews::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::MouseButtonPress) {
        auto* w = qobject_cast<QWidget*>(watched);
        for (QWidget* view : std::initializer_list<QWidget*> { m_patternView, m_rowChart, m_lensPlot })
            if (w && (view == w || view->isAncestorOf(w)))
                m_currentView = view;
    }
    return QObject::eventFilter(watched, event);
}

void AttentionHeadViews::clear()
{
    m_grid->clear();
    m_patternView->clear();
    m_rowChart->setChart(widgets::BarChart {});
    m_lensPlot->setFigure(icl::Figure {});
    m_headTable->setRowCount(0);
}

void AttentionHeadViews::showHead(
    const icl::Inspection& in, int layer, int head, int query, std::map<std::string, std::string> meta)
{
    const size_t index = size_t(layer * in.n_heads + head);
    if (index >= in.patterns.size())
        return;
    const icl::Matrix& pattern = in.patterns[index];
    const bool softmax = index < in.softmax_head.size() ? bool(in.softmax_head[index]) : true;
    m_patternView->setMetadata(meta);
    m_patternView->setPattern(pattern, softmax);
    m_patternView->setSelectedQuery(query);

    widgets::BarChart chart;
    chart.name = "attention_row";
    const std::string token = size_t(query) < in.token_labels.size() ? in.token_labels[size_t(query)] : "?";
    chart.title = "Attention of " + token + " (layer " + std::to_string(layer) + ", head " + std::to_string(head) + ")";
    chart.x_label = "key token";
    chart.y_label = softmax ? "attention weight" : "attention score (linear)";
    chart.labels = in.key_labels;
    if (query >= 0 && query < pattern.rows)
        for (int64_t c = 0; c < pattern.cols; ++c)
            chart.values.push_back(pattern.at(query, c));
    chart.labels.resize(chart.values.size());
    meta["layer"] = std::to_string(layer);
    meta["head"] = std::to_string(head);
    meta["query_token"] = token;
    chart.metadata = meta;
    m_rowChart->setChart(chart);
}

void AttentionHeadViews::showQueryRow()
{
    m_lowerTabs->setCurrentWidget(m_rowChart);
}

void AttentionHeadViews::showTab(const QString& name)
{
    if (name == QLatin1String("lens")) {
        m_lowerTabs->setCurrentWidget(m_lensPlot);
        m_currentView = m_lensPlot;
    } else if (name == QLatin1String("query-row")) {
        m_lowerTabs->setCurrentWidget(m_rowChart);
        m_currentView = m_rowChart;
    }
}

void AttentionHeadViews::exportCurrent()
{
    if (m_currentView == m_rowChart)
        m_rowChart->exportWithDialog();
    else if (m_currentView == m_lensPlot)
        m_lensPlot->exportWithDialog();
    else
        m_patternView->exportWithDialog();
}

} // namespace icl::gui
