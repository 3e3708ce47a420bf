#pragma once
// A labelled bar chart (e.g. one query token's attention over the key tokens) with export.

#include <map>
#include <string>
#include <vector>

#include <QWidget>

class QCPBars;
class QCPTextElement;
class QCustomPlot;
class QToolBar;

namespace icl::widgets {

/// Data of a bar chart: one bar per label.
struct BarChart {
    std::string name;  ///< machine name (file name suggested on export)
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<std::string> labels;  ///< [n] category of each bar
    std::vector<double> values;       ///< [n] bar heights
    std::map<std::string, std::string> metadata;
};

/// Draws a BarChart: title, labelled axes (the y label names the quantity, so there is no legend), one
/// bar per category (labels thinned to what fits), the metadata caption below (always in exports, on
/// screen when setCaptionVisible); hover shows "label: value".
/// Export: PNG (chosen DPI), SVG, PDF, and CSV of the plotted values (barChartCsv).
/// Thread affinity: GUI thread only.
class BarChartView : public QWidget {
    Q_OBJECT
public:
    explicit BarChartView(QWidget* parent = nullptr);
    ~BarChartView() override;

    void setChart(const BarChart& chart);
    const BarChart& chart() const { return m_chart; }

    void setToolBarVisible(bool visible);
    /// Shows or hides the metadata caption on screen (exports always carry it).
    void setCaptionVisible(bool visible);
    QCustomPlot* plot() const { return m_plot; }
    QCPBars* bars() const { return m_bars; }

    /// Bar under `pos` (plot widget coordinates), −1 when none; and its hover text "label: value".
    int barAt(const QPointF& pos) const;
    QString barText(int index) const;

    void replotNow();

    /// Writes the chart as "png" (at `dpi`), "svg", "pdf" or "csv". Returns false and sets `*error`.
    bool exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const;
    /// "# key: value" metadata lines, a header "<x_label>,<y_label>", one line per bar (9 digits).
    static std::string barChartCsv(const BarChart& chart);

public Q_SLOTS:
    void exportWithDialog();

    /// Tick label stride of the bars (1 = every bar labelled; odd when > 1, so alternating x and y tokens both keep
    /// labels).
    int labelStride() const { return m_stride; }

Q_SIGNALS:
    void exported(const QString& path);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void rebuild();
    void updateTicks();

    BarChart m_chart;
    bool m_captionVisible = true;
    int m_stride = 1;
    QCustomPlot* m_plot = nullptr;
    QToolBar* m_toolBar = nullptr;
    QCPBars* m_bars = nullptr;
    QCPTextElement* m_title = nullptr;
    QCPTextElement* m_caption = nullptr;
};

} // namespace icl::widgets
