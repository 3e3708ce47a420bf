#include "plot_export.h"

#include "core/error.h"
#include <fstream>

#include "core/types/algorithm_map_matrix.h"
#include "core/types/figure_csv.h"
#include "core/types/matrix_csv.h"

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

void exportHeatmap(const Matrix& matrix, const std::map<std::string, std::string>& metadata, const std::string& path,
                   const std::string& format, int, double)
{
    if (format == "csv")
        return writeMatrixCsv(matrix, metadata, path);
    throw Error("--format " + format + ": this icl-cli was built without the GUI (ICL_BUILD_GUI=OFF); only csv "
                "export is available");
}

void exportAttentionPlot(const Matrix& pattern, bool, const std::map<std::string, std::string>& metadata,
                         const std::string& path, const std::string& format, int, const std::string& scale)
{
    if (scale != "linear" && scale != "row" && scale != "log")
        throw Error("--attention-scale " + scale + ": expected linear, row or log");
    if (format == "csv")
        return writeMatrixCsv(pattern, metadata, path);
    throw Error("--format " + format + ": this icl-cli was built without the GUI (ICL_BUILD_GUI=OFF); only csv "
                "export is available");
}

void exportAlgorithmMapPlot(const AlgorithmMap& map, const std::string& family, bool weights,
                            const std::map<std::string, std::string>& metadata, const std::string& path,
                            const std::string& format, int)
{
    if (format != "csv")
        throw Error("--format " + format + ": this icl-cli was built without the GUI (ICL_BUILD_GUI=OFF); only csv "
                    "export is available");
    const AlgorithmFamilyMap& f = algorithmMapFamily(map, family);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (out)
        out << algorithmMapCsv(map, f, weights, metadata);
    if (!out)
        throw Error("cannot write " + path);
}

} // namespace icl::cli
