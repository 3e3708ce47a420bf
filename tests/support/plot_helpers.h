#pragma once
// Helpers the widget and GUI tests share to build small figures and read back what a QCustomPlot draws. Header only
// (the widget tests may be compiled together, ICL_UNITY_BUILD); Qt and core/types only, no LibTorch.

#include <string>
#include <utility>
#include <vector>

#include <qcustomplot.h>

#include "core/types/figure.h"

namespace icl::test {

/// (key, value) of every point of a QCustomPlot graph, in key order.
inline std::vector<std::pair<double, double>> graphPoints(QCPGraph* graph)
{
    std::vector<std::pair<double, double>> out;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        out.emplace_back(it->key, it->value);
    return out;
}

/// A series named `name` through the points (x[i], y[i]), drawn in `style`.
inline Series seriesOf(
    std::string name, std::vector<double> x, std::vector<double> y, Series::Style style = Series::Style::Line)
{
    Series s;
    s.name = std::move(name);
    s.x = std::move(x);
    s.y = std::move(y);
    s.style = style;
    return s;
}

/// A solid series named `name` of the predictor `predictor` (the colour it is drawn in) through (x[i], y[i]).
inline Series predictorSeries(std::string name, std::string predictor, std::vector<double> x, std::vector<double> y)
{
    Series s = seriesOf(std::move(name), std::move(x), std::move(y));
    s.predictor = std::move(predictor);
    return s;
}

/// A figure with the axis labels `x_label`, `y_label` and the series `series` (no name, title or metadata).
inline Figure figureOf(std::string x_label, std::string y_label, std::vector<Series> series)
{
    Figure f;
    f.x_label = std::move(x_label);
    f.y_label = std::move(y_label);
    f.series = std::move(series);
    return f;
}

} // namespace icl::test
