#pragma once
// The Attention page's views of the heads: the layers × heads grid of thumbnails and the head summaries (left
// column), the selected head's pattern large with its query row and the regression lens below (middle column).

#include <map>
#include <string>

#include <QObject>
#include <QString>

#include "app/gui/gui_forward.h"
#include "core/types/figure.h"
#include "core/types/inspection.h"

class QSplitter;

namespace icl::gui {

class HeadSummaryTable;

/// Builds the left and middle columns of the Attention page into its splitter and shows one inspection in them.
/// Remembers the view last clicked (the plot File ▸ Export current plot writes). Thread affinity: GUI thread.
class AttentionHeadViews : public QObject {
    Q_OBJECT
public:
    /// Adds the two columns to `columns` (as its next two widgets).
    explicit AttentionHeadViews(QSplitter* columns);

    /// Empties every view.
    void clear();
    /// Shows the pattern of head (layer, head) of `in` large, with `query`'s row as a bar chart; `meta` is the
    /// export metadata of the page (the row chart adds layer, head and query_token).
    void showHead(const icl::Inspection& in, int layer, int head, int query, std::map<std::string, std::string> meta);
    /// Shows the query-row tab (after a click on a row of the pattern).
    void showQueryRow();
    /// Shows the tab "query-row" or "lens".
    void showTab(const QString& name);
    /// Opens the export dialog of the view last clicked (the pattern by default).
    void exportCurrent();

    widgets::AttentionGrid* grid() const { return m_grid; }
    HeadSummaryTable* headTable() const { return m_headTable; }
    widgets::AttentionPatternView* patternView() const { return m_patternView; }
    widgets::BarChartView* rowChart() const { return m_rowChart; }
    widgets::PlotView* lensPlot() const { return m_lensPlot; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    widgets::AttentionGrid* m_grid = nullptr;
    HeadSummaryTable* m_headTable = nullptr;
    widgets::AttentionPatternView* m_patternView = nullptr;
    widgets::BarChartView* m_rowChart = nullptr;
    widgets::PlotView* m_lensPlot = nullptr;
    QTabWidget* m_lowerTabs = nullptr;
    QWidget* m_currentView = nullptr;
};

} // namespace icl::gui
