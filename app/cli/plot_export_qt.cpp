// Qt side of the CLI's plot export. This unit includes Qt and the widgets library, never LibTorch.
#include "plot_export.h"

#include <QApplication>
#include <QTemporaryDir>

#include "core/error.h"
#include "core/types/figure_csv.h"
#include "widgets/figure_export.h"

namespace icl::cli {

namespace {

void ensureApplication()
{
    if (QApplication::instance())
        return;
    // Export never shows a window: render off-screen whether or not a display exists.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    // Qt warns on stderr when XDG_RUNTIME_DIR is unset (headless machines, CI); give it a private one.
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
        static QTemporaryDir runtimeDir;
        if (runtimeDir.isValid())
            qputenv("XDG_RUNTIME_DIR", runtimeDir.path().toLocal8Bit());
    }
    static int argc = 1;
    static char name[] = "icl-cli";
    static char* argv[] = {name, nullptr};
    // Deliberately never destroyed: destroying a QApplication from a static destructor at exit
    // crashes once Qt's own statics are gone.
    new QApplication(argc, argv);
}

} // namespace

bool plotImagesAvailable()
{
    return true;
}

void exportPlot(const Figure& figure, const std::string& path, const std::string& format, int dpi)
{
    if (format == "csv")
        return writeFigureCsv(figure, path);
    ensureApplication();
    std::string error;
    if (!icl::widgets::exportFigure(figure, path, format, dpi, &error))
        throw Error(path + ": " + error);
}

void exportHeatmap(const Matrix& matrix, const std::map<std::string, std::string>& metadata, const std::string& path,
                   const std::string& format, int dpi, double color_limit)
{
    if (format != "csv")
        ensureApplication();
    std::string error;
    if (!icl::widgets::exportMatrix(matrix, metadata, path, format, dpi, color_limit, &error))
        throw Error(path + ": " + error);
}

void exportAttentionPlot(const Matrix& pattern, bool softmax, const std::map<std::string, std::string>& metadata,
                         const std::string& path, const std::string& format, int dpi, const std::string& scale)
{
    icl::widgets::AttentionScale mode = icl::widgets::AttentionScale::Linear;
    if (!icl::widgets::parseAttentionScale(scale, &mode))
        throw Error("--attention-scale " + scale + ": expected linear, row or log");
    if (format != "csv")
        ensureApplication();
    std::string error;
    if (!icl::widgets::exportAttentionPattern(pattern, softmax, metadata, path, format, dpi, mode, &error))
        throw Error(path + ": " + error);
}

void exportAlgorithmMapPlot(const AlgorithmMap& map, const std::string& family, bool weights,
                            const std::map<std::string, std::string>& metadata, const std::string& path,
                            const std::string& format, int dpi)
{
    if (format != "csv")
        ensureApplication();
    std::string error;
    if (!icl::widgets::exportAlgorithmMap(map, family, weights, metadata, path, format, dpi, &error))
        throw Error(path + ": " + error);
}

} // namespace icl::cli
