#pragma once
// Colour scales shared by the attention views: one definition for the QImage thumbnails and the
// QCustomPlot heatmaps, so that a thumbnail and its large view use the same colours.

#include <utility>
#include <vector>

#include <QColor>
#include <QRgb>

namespace icl::widgets {

/// Sequential white → dark blue scale (ColorBrewer "Blues") for values in [0, max], e.g. softmax
/// attention weights. Stops as (position in [0, 1], colour).
const std::vector<std::pair<double, QColor>>& sequentialStops();
/// Diverging blue–white–red scale (ColorBrewer RdBu reversed) for values in [−L, L] symmetric around 0,
/// e.g. linear-attention (LSA) scores or patching effects.
const std::vector<std::pair<double, QColor>>& divergingStops();

/// 256-entry lookup table of a scale (index 0 = position 0, 255 = position 1), linear RGB
/// interpolation between the stops.
const std::vector<QRgb>& sequentialTable();
const std::vector<QRgb>& divergingTable();

/// Colour of `value` on the sequential scale over [0, max] (values outside are clamped; NaN is light grey).
QRgb sequentialColor(double value, double max);
/// Colour of `value` on the diverging scale over [−limit, limit] (clamped; NaN is light grey).
QRgb divergingColor(double value, double limit);

} // namespace icl::widgets
