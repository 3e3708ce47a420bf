#include "widgets/figure_export.h"

#include <cmath>

#include <qcustomplot.h>

#include "core/error.h"
#include "core/types/figure_csv.h"
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

} // namespace icl::widgets
