#pragma once
// Colour scales shared by the attention views: one definition for the QImage thumbnails and the
// QCustomPlot heatmaps, so that a thumbnail and its large view use the same colours.

#include <utility>
#include <vector>

#include <QColor>
#include <QRgb>

#include "core/types/matrix.h"
#include "widgets/attention_scale.h"

namespace icl::widgets {

/// Number of entries of every colour table (and of the QCustomPlot gradients built from them).
inline constexpr int kColorLevels = 256;

/// Colour of NaN cells: the causal mask (future keys) of a softmax pattern, light grey, which neither scale uses.
inline constexpr QRgb kMaskedColor = 0xFFDDDDDD;

/// Sequential perceptual scale (viridis: dark purple → yellow) for values in [0, max], e.g. softmax attention
/// weights. 256 entries, index 0 = position 0.
const std::vector<QRgb>& sequentialTable();
/// Diverging blue–white–red scale (ColorBrewer RdBu reversed) for values in [−L, L] symmetric around 0,
/// e.g. linear-attention (LSA) scores or patching effects; 256 entries.
const std::vector<QRgb>& divergingTable();

/// The tables as gradient stops (position i·(1/255), colour i): a QCustomPlot gradient with 256 levels built from
/// them reproduces each table entry exactly.
const std::vector<std::pair<double, QColor>>& sequentialStops();
const std::vector<std::pair<double, QColor>>& divergingStops();

/// Table index of `value` on a scale over [lower, upper], computed as QCustomPlot 2.1's QCPColorGradient::colorize
/// does (truncated, clamped to 0 … 255), so a QImage and a QCPColorMap colour a value alike. `logarithmic`: the
/// index of ln(value/lower) / ln(upper/lower) (lower > 0). −1 for NaN.
int scaleIndex(double value, double lower, double upper, bool logarithmic = false);

/// Colour of `value` on the sequential scale over [0, max] (values outside are clamped; NaN is kMaskedColor).
QRgb sequentialColor(double value, double max);
/// Colour of `value` on the diverging scale over [−limit, limit] (clamped; NaN is kMaskedColor).
QRgb divergingColor(double value, double limit);

/// How one attention pattern [T, T_keys] is coloured in a scale mode: the values drawn (`values`, row-major, NaN for
/// masked cells), the range and scale type of the colour bar, and which table. Shared by AttentionPatternView and
/// AttentionGrid so that a thumbnail and the large map agree cell by cell.
struct AttentionColoring {
    bool diverging = false; ///< linear (LSA) scores: diverging table; else sequential
    bool logarithmic = false; ///< colour-bar data scale is log₁₀
    double lower = 0.0;
    double upper = 1.0;
    std::vector<double> values; ///< [rows·cols] the values coloured
};

/// The colouring of `pattern` (`softmax`: rows are probability distributions) in `mode`. Softmax: Linear over
/// [0, 1], Row: each row ÷ its largest weight over [0, 1], Log: max(weight, 10⁻³) over [10⁻³, 1] logarithmic; the
/// causal mask (a square pattern whose whole strict upper triangle is exactly 0) is NaN. Linear scores: diverging
/// over [−L, L] with L the largest |score| (Row: each row ÷ its largest |score|, L = 1; Log does not apply).
AttentionColoring attentionColoring(const icl::Matrix& pattern, bool softmax, AttentionScale mode);
/// Colour of one value of a colouring (kMaskedColor for NaN).
QRgb attentionColor(const AttentionColoring& coloring, double value);
/// True when `pattern` is square with a strict upper triangle that is exactly 0 (a causal softmax head's mask).
bool hasCausalMask(const icl::Matrix& pattern);

} // namespace icl::widgets
