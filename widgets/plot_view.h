#pragma once
// A QCustomPlot view of an icl::Figure (core/types/figure.h) with export to PNG/SVG/PDF/CSV.

#include <QWidget>

#include "core/types/figure.h"

class QCPGraph;
class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QToolBar;
class QAction;

namespace icl::widgets {

/// Draws one Figure: title, labelled axes, legend with the series names, log axes when the figure
/// asks, confidence bands as translucent fills, dashed baselines, one colour-blind-safe colour per
/// series, and the metadata caption in small type under the plot (also in exported files).
/// Thread affinity: GUI thread only.
class PlotView : public QWidget {
    Q_OBJECT
public:
    explicit PlotView(QWidget* parent = nullptr);
    ~PlotView() override;

    /// Replaces the drawn figure (full redraw, axes rescaled to the data).
    void setFigure(const icl::Figure& figure);
    const icl::Figure& figure() const { return m_figure; }

    /// The underlying plot (for tests and exporters).
    QCustomPlot* plot() const { return m_plot; }

    /// The graph drawing series `index` of the figure (its line, not its band), or nullptr.
    QCPGraph* seriesGraph(int index) const;

    /// Shows or hides the toolbar above the plot (hidden for off-screen export).
    void setToolBarVisible(bool visible);

    /// True while the legend sits below the axis rect (a plot too narrow for it beside the data).
    bool legendBelow() const { return m_legendBelow; }

    /// Draws pending changes now instead of on the next event-loop pass (screenshots, export).
    void replotNow();

    /// The palette used for series, in order (Okabe & Ito 2008, colour-blind safe).
    static QColor seriesColor(int index);

    /// The fixed colour of a predictor family ("model", "zero", "least_squares", "ridge", "gd", "gdpp", "newton",
    /// …; "gd_3" is family "gd"), or an invalid QColor for one without a colour of its own.
    static QColor predictorColor(const std::string& predictor);

    /// The colour of each series of `figure`: a predictor's family colour (the first series of a family gets it),
    /// then the palette's unused colours in order for the rest, so "zero" looks the same on every page and export.
    static std::vector<QColor> seriesColors(const icl::Figure& figure);

public Q_SLOTS:
    /// Asks for a file name and format (and the DPI for PNG) and exports the figure.
    void exportWithDialog();
    /// Rescales the axes to the data (after zooming or dragging).
    void resetView();

Q_SIGNALS:
    /// Emitted after an export succeeded (path of the written file).
    void exported(const QString& path);

private:
    void rebuild();
    /// Puts the legend beside the axis rect, or below it in several columns when beside it would take more than a
    /// third of the plot's width.
    void placeLegend();

    icl::Figure m_figure;
    QCustomPlot* m_plot = nullptr;
    QToolBar* m_toolBar = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPTextElement* m_caption = nullptr;
    std::vector<QCPGraph*> m_seriesGraphs;
    QCPLayoutGrid* m_body = nullptr; ///< the axis rect, the legend column beside it and, when used, the row below
    QCPLayoutGrid* m_legendColumn = nullptr;
    QCPLayoutGrid* m_legendRow = nullptr;
    bool m_legendBelow = false;
};

} // namespace icl::widgets
