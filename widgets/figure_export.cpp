#include "widgets/figure_export.h"

#include <cmath>

#include <qcustomplot.h>

#include "core/error.h"
#include "core/types/figure_csv.h"
#include "core/types/matrix_csv.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_export.h"
#include "widgets/plot_view.h"

namespace icl::widgets {

namespace {

bool fail(std::string* error, const std::string& message)
{
    if (error)
        *error = message;
    return false;
}

} // namespace

int exportPixelWidth(int dpi)
{
    return int(std::lround(kExportWidthInches * dpi));
}
int exportPixelHeight(int dpi)
{
    return int(std::lround(kExportHeightInches * dpi));
}

bool exportFigure(
    const icl::Figure& figure, const std::string& path, const std::string& format, int dpi, std::string* error)
{
    if (format == "csv") {
        try {
            icl::writeFigureCsv(figure, path);
        } catch (const icl::Error& e) {
            return fail(error, e.what());
        }
        return true;
    }
    if (format != "png" && format != "svg" && format != "pdf")
        return fail(error, "unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail(error, "dpi: expected 10..2400, got " + std::to_string(dpi));
    if (!ensureExportApplication(error))
        return false;

    PlotView view;
    view.setToolBarVisible(false);
    view.setFigure(figure);
    view.resize(kExportLogicalWidth, kExportLogicalHeight);
    view.plot()->resize(kExportLogicalWidth, kExportLogicalHeight);
    return writePlotFile(view.plot(), path, format, dpi, figure.title, figure.metadata, error);
}

bool exportMatrix(const icl::Matrix& matrix, const std::map<std::string, std::string>& metadata,
    const std::string& path, const std::string& format, int dpi, double color_limit, std::string* error)
{
    if (format != "png" && format != "svg" && format != "pdf" && format != "csv")
        return fail(error, "unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail(error, "dpi: expected 10..2400, got " + std::to_string(dpi));
    if (format != "csv" && !ensureExportApplication(error))
        return false;
    if (format == "csv") {
        try {
            icl::writeMatrixCsv(matrix, metadata, path);
        } catch (const icl::Error& e) {
            return fail(error, e.what());
        }
        return true;
    }
    HeatmapView view;
    view.setMatrix(matrix);
    view.setMetadata(metadata);
    view.setColorLimit(color_limit);
    return view.exportTo(path, format, dpi, error);
}

bool exportAttentionPattern(const icl::Matrix& pattern, bool softmax,
    const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& format, int dpi,
    AttentionScale scale, std::string* error)
{
    if (format != "png" && format != "svg" && format != "pdf" && format != "csv")
        return fail(error, "unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail(error, "dpi: expected 10..2400, got " + std::to_string(dpi));
    if (format == "csv") {
        try {
            icl::writeMatrixCsv(pattern, metadata, path);
        } catch (const icl::Error& e) {
            return fail(error, e.what());
        }
        return true;
    }
    if (!ensureExportApplication(error))
        return false;
    AttentionPatternView view;
    view.setPattern(pattern, softmax);
    view.setMetadata(metadata);
    view.setScaleMode(scale);
    return view.exportTo(path, format, dpi, error);
}

} // namespace icl::widgets
