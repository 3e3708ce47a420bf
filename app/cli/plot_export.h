#pragma once
// Plot export for the CLI. PNG/SVG/PDF render through the GUI's QCustomPlot views off-screen
// (only when built with ICL_BUILD_GUI); CSV always works.

#include <string>

#include "core/types/figure.h"

namespace icl::cli {

/// True when PNG, SVG and PDF can be written by this build.
bool plotImagesAvailable();

/// Writes `figure` as `format` ("png", "svg", "pdf", "csv") to `path`. Throws icl::Error on failure
/// or when images are requested from a build without the GUI.
void exportPlot(const Figure& figure, const std::string& path, const std::string& format, int dpi);

} // namespace icl::cli
