#include "plot_export.h"

#include "core/error.h"
#include "core/types/figure_csv.h"

namespace icl::cli {

bool plotImagesAvailable()
{
    return false;
}

void exportPlot(const Figure& figure, const std::string& path, const std::string& format, int)
{
    if (format == "csv")
        return writeFigureCsv(figure, path);
    throw Error("--format " + format + ": this icl-cli was built without the GUI (ICL_BUILD_GUI=OFF); only csv "
                "export is available");
}

} // namespace icl::cli
