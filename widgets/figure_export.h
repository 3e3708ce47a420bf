#pragma once
// Publication export of an icl::Figure. This header is deliberately free of Qt (and of torch), so
// the CLI can call it from any translation unit.

#include <map>
#include <string>

#include "core/types/algorithm_map.h"
#include "core/types/figure.h"
#include "core/types/matrix.h"
#include "widgets/attention_scale.h"

namespace icl::widgets {

/// Page size of exported figures, in inches (a single-column figure at the given DPI).
inline constexpr double kExportWidthInches = 6.4;
inline constexpr double kExportHeightInches = 4.0;

/// Formats exportFigure understands, as lowercase file suffixes.
inline constexpr const char* kExportFormats[] = { "png", "svg", "pdf", "csv" };

/// Pixel size of a PNG exported at `dpi`: round(6.4·dpi) × round(4.0·dpi).
int exportPixelWidth(int dpi);
int exportPixelHeight(int dpi);

/// Writes `figure` to `path` as "png", "svg", "pdf" or "csv", drawn off screen at 6.4 × 4.0 inches.
/// PNG has `dpi` pixels per inch; SVG and PDF are vector. The figure's metadata (experiment file,
/// checkpoint step, seed, ...) goes into the file: PNG text chunks, SVG title/description, PDF
/// title/creator/XMP metadata, CSV "# key: value" lines, and the caption drawn under the plot.
/// Returns false and sets `*error` (when non-null) to a one-line reason on failure.
/// Thread affinity: the thread of the QApplication. When no QCoreApplication exists yet, one
/// QApplication is created (offscreen platform unless QT_QPA_PLATFORM is set) and kept until exit,
/// so headless callers such as icl-cli need no Qt code of their own.
bool exportFigure(
    const icl::Figure& figure, const std::string& path, const std::string& format, int dpi, std::string* error);

/// Writes `matrix` as a heatmap (HeatmapView: diverging colour scale symmetric around 0 with its legend,
/// row/column labels, title, metadata caption) to `path` as "png" (at `dpi`), "svg", "pdf" or "csv"
/// (icl::matrixCsv). `color_limit` L maps values to [−L, L]; L <= 0 means max |value|. Returns false and
/// sets `*error` on failure. Thread affinity: as exportFigure.
bool exportMatrix(const icl::Matrix& matrix, const std::map<std::string, std::string>& metadata,
    const std::string& path, const std::string& format, int dpi, double color_limit, std::string* error);

/// Writes one head's attention pattern [T, T_keys] (rows: query tokens, columns: key tokens, labels and name from
/// the matrix) through the GUI's AttentionPatternView, so that the picture equals the Attention page's export:
/// viridis for softmax weights in `scale` mode (colour bar "attention weight"), the diverging scale for linear
/// scores, axis titles "key token" / "query token", the metadata caption. "png" (at `dpi`), "svg", "pdf" or "csv"
/// (icl::matrixCsv). Returns false and sets `*error` on failure. Thread affinity: as exportFigure.
bool exportAttentionPattern(const icl::Matrix& pattern, bool softmax,
    const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& format, int dpi,
    AttentionScale scale, std::string* error);

/// Writes one family of an algorithm map (AlgorithmMapView: heatmap layer × step on a fixed [−1, 1] colour bar with
/// the best-match curve over it; the similarity of induced weights when `weights`) to `path` as "png" (at `dpi`),
/// "svg", "pdf" or "csv" (icl::algorithmMapCsv). False and `*error` for an absent or unavailable family or a
/// failed write. Thread affinity: as exportFigure.
bool exportAlgorithmMap(const icl::AlgorithmMap& map, const std::string& family, bool weights,
    const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& format, int dpi,
    std::string* error);

} // namespace icl::widgets
