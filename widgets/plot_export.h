#pragma once
// Writes a QCustomPlot to PNG/SVG/PDF at the publication size, with metadata. Shared by the Figure
// exporter (figure_export.h) and HeatmapView. Qt header: not for Qt-free callers.

#include <map>
#include <string>

class QCustomPlot;
class QFont;
class QString;
class QWidget;

namespace icl::widgets {

/// Logical size of exported plots: 100 logical pixels per inch, 6.4 × 4.0 inches.
inline constexpr int kExportLogicalDpi = 100;
inline constexpr int kExportLogicalWidth = 640;
inline constexpr int kExportLogicalHeight = 400;

/// The caption under a plot: its " · "-separated parts joined into lines no wider than `budget` logical pixels in
/// `font` (a part wider than that gets a line of its own). Thread affinity: the QApplication's thread.
QString wrapCaption(const QString& caption, const QFont& font, int budget);

/// Makes sure a QApplication exists on this thread (creating one on the offscreen platform for
/// headless callers). Returns false and sets `*error` when that is impossible.
bool ensureExportApplication(std::string* error);

/// Renders `plot` at kExportLogicalWidth × kExportLogicalHeight into `path` as "png" (at `dpi`),
/// "svg" or "pdf", with `title` and `metadata` in the file (PNG text chunks, SVG title/description,
/// PDF title and XMP). The plot is laid out again at that size for the export (legend placement, ticks), then at
/// its own viewport again.
/// Returns false and sets `*error` (when non-null) to a one-line reason on failure.
/// Thread affinity: the QApplication's thread.
bool writePlotFile(QCustomPlot* plot, const std::string& path, const std::string& format, int dpi,
    const std::string& title, const std::map<std::string, std::string>& metadata, std::string* error);

/// Where and how the user chose to export: a path with its format's suffix, the format ("png",
/// "svg", "pdf" or "csv") and, for PNG, the resolution.
struct ExportTarget {
    std::string path;
    std::string format;
    int dpi = 300;
};

/// The folder the export dialog opens in: MainWindow sets the open experiment's folder ("" = the working
/// directory, the default). Thread affinity: GUI thread.
void setExportDirectory(const QString& dir);

/// The path the export dialog suggests for `base`: `base`.png in the export directory (setExportDirectory) unless
/// `base` is absolute. Thread affinity: GUI thread.
QString suggestedExportPath(const QString& base);

/// Asks for an export file (PNG/SVG/PDF/CSV filters, suggestedExportPath(`base`)) and, for PNG, the DPI.
/// Returns false when the user cancels. Thread affinity: GUI thread.
bool askExportTarget(QWidget* parent, const QString& title, const QString& base, ExportTarget* target);

} // namespace icl::widgets
