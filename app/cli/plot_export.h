#pragma once
// Plot export for the CLI. PNG/SVG/PDF render through the GUI's QCustomPlot views off-screen
// (only when built with ICL_BUILD_GUI); CSV always works.

#include <map>
#include <string>

#include "core/types/algorithm_map.h"
#include "core/types/figure.h"
#include "core/types/matrix.h"

namespace icl::cli {

/// True when PNG, SVG and PDF can be written by this build.
bool plotImagesAvailable();

/// Writes `figure` as `format` ("png", "svg", "pdf", "csv") to `path`. Throws icl::Error on failure
/// or when images are requested from a build without the GUI.
void exportPlot(const Figure& figure, const std::string& path, const std::string& format, int dpi);

/// Writes `matrix` as a heatmap (colour scale symmetric around 0; `color_limit` <= 0: max |value|) in
/// `format` ("png", "svg", "pdf", "csv") to `path`, with `metadata` in the file. Throws icl::Error on
/// failure or when images are requested from a build without the GUI.
void exportHeatmap(const Matrix& matrix, const std::map<std::string, std::string>& metadata, const std::string& path,
                   const std::string& format, int dpi, double color_limit = 0.0);

/// Writes one head's attention pattern as the Attention page exports it (AttentionPatternView: viridis for softmax
/// weights in `scale` mode — "linear", "row" or "log" — with the colour bar "attention weight", the diverging scale
/// for linear scores, axis titles "key token" / "query token") in `format` to `path` (csv: the matrix). Throws
/// icl::Error on failure, for an unknown `scale`, or when images are requested from a build without the GUI.
void exportAttentionPlot(const Matrix& pattern, bool softmax, const std::map<std::string, std::string>& metadata,
                         const std::string& path, const std::string& format, int dpi, const std::string& scale);

/// Writes one family of an algorithm map (heatmap layer × step with the best-match curve; induced weights when
/// `weights`) as `format` to `path` (csv: icl::algorithmMapCsv). Throws icl::Error for an absent or unavailable
/// family, a failed write, or images from a build without the GUI.
void exportAlgorithmMapPlot(const AlgorithmMap& map, const std::string& family, bool weights,
                            const std::map<std::string, std::string>& metadata, const std::string& path,
                            const std::string& format, int dpi);

} // namespace icl::cli
