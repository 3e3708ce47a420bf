#include "widgets/figure_export.h"
#include "tests/support/plot_helpers.h"
#include "tests/support/qt_files.h"

#include <cmath>

#include <QFile>
#include <QImage>
#include <QImageReader>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using icl::Figure;
using icl::Series;
using icl::widgets::exportFigure;

namespace {
using namespace icl::test;

Figure testFigure()
{
    Figure f = figureOf("in-context examples", "squared error",
        { seriesOf("transformer model", { 1, 2, 3 }, { 0.75, 0.5, 0.125 }),
            seriesOf("least squares", { 1, 2, 3 }, { 0.875, 0.375, 0.0625 }, Series::Style::Dashed) });
    f.name = "icl_curve";
    f.title = "ICL error";
    f.metadata = { { "experiment", "runs/demo.h5" }, { "checkpoint_step", "4000" }, { "seed", "7" } };
    return f;
}

/// The bytes of testFigure() exported as `format` at 300 dpi into a temporary folder; a failure shows the error.
::testing::AssertionResult exportedTestFigure(const char* format, QByteArray* bytes)
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("fig.") + QLatin1String(format));
    std::string error;
    if (!exportFigure(testFigure(), path.toStdString(), format, 300, &error))
        return ::testing::AssertionFailure() << "export as " << format << ": " << error;
    *bytes = readAll(path);
    return ::testing::AssertionSuccess();
}

} // namespace

TEST(FigureExport, PngHasThePublicationSizeAtTheRequestedDpi)
{
    QTemporaryDir dir;
    for (int dpi : { 300, 150 }) {
        const QString path = dir.filePath(QStringLiteral("fig%1.png").arg(dpi));
        std::string error;
        ASSERT_TRUE(exportFigure(testFigure(), path.toStdString(), "png", dpi, &error)) << error;
        QImage image(path);
        ASSERT_FALSE(image.isNull());
        // 6.4 × 4.0 inches.
        EXPECT_EQ(image.width(), int(std::lround(6.4 * dpi)));
        EXPECT_EQ(image.height(), int(std::lround(4.0 * dpi)));
        EXPECT_NEAR(image.dotsPerMeterX() * 0.0254, dpi, 0.5);
    }
}

TEST(FigureExport, PngCarriesMetadataAndIsNotBlank)
{
    QTemporaryDir dir;
    const QString path = dir.filePath("fig.png");
    std::string error;
    ASSERT_TRUE(exportFigure(testFigure(), path.toStdString(), "png", 100, &error)) << error;
    QImageReader reader(path);
    EXPECT_EQ(reader.text("experiment"), "runs/demo.h5");
    EXPECT_EQ(reader.text("checkpoint_step"), "4000");
    EXPECT_EQ(reader.text("seed"), "7");
    EXPECT_EQ(reader.text("Title"), "ICL error");
    QImage image = reader.read();
    ASSERT_FALSE(image.isNull());
    int dark = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x)
            dark += qGray(image.pixel(x, y)) < 128;
    EXPECT_GT(dark, 500); // axes, ticks, labels and lines were drawn
}

TEST(FigureExport, SvgIsXmlWithSeriesNamesAndMetadata)
{
    QByteArray svg;
    ASSERT_TRUE(exportedTestFigure("svg", &svg));
    const SvgContent content = svgContent(svg);
    ASSERT_TRUE(content.error.isEmpty()) << content.error.toStdString();
    EXPECT_TRUE(content.has_svg);
    EXPECT_EQ(content.title, "ICL error");
    EXPECT_TRUE(content.desc.contains("experiment: runs/demo.h5")) << content.desc.toStdString();
    EXPECT_TRUE(content.desc.contains("seed: 7"));
    EXPECT_TRUE(content.text.contains("transformer model")) << content.text.toStdString();
    EXPECT_TRUE(content.text.contains("least squares"));
    EXPECT_TRUE(content.text.contains("in-context examples"));
}

TEST(FigureExport, PdfIsAPdfWithTitleAndMetadata)
{
    QByteArray pdf;
    ASSERT_TRUE(exportedTestFigure("pdf", &pdf));
    ASSERT_GT(pdf.size(), 1000);
    EXPECT_TRUE(pdf.startsWith("%PDF"));
    EXPECT_TRUE(pdf.contains("runs/demo.h5")); // XMP packet
    EXPECT_TRUE(pdf.contains("<icl:seed>7</icl:seed>"));
    // Page of 6.4 × 4.0 inches = 460.8 × 288 pt.
    EXPECT_TRUE(pdf.contains("/MediaBox [0 0 460.8") || pdf.contains("/MediaBox [0 0 461"))
        << pdf.left(4000).toStdString();
}

TEST(FigureExport, CsvHoldsThePlottedValues)
{
    QByteArray bytes;
    ASSERT_TRUE(exportedTestFigure("csv", &bytes));
    const QString csv = QString::fromUtf8(bytes);
    EXPECT_TRUE(csv.contains("# experiment: runs/demo.h5"));
    EXPECT_TRUE(csv.contains("in-context examples,transformer model,least squares\n")) << csv.toStdString();
    EXPECT_TRUE(csv.contains("\n1,0.75,0.875\n"));
    EXPECT_TRUE(csv.contains("\n2,0.5,0.375\n"));
    EXPECT_TRUE(csv.contains("\n3,0.125,0.0625\n"));
}

TEST(FigureExport, RejectsUnknownFormatAndUnwritablePath)
{
    std::string error;
    EXPECT_FALSE(exportFigure(testFigure(), "/tmp/x.gif", "gif", 300, &error));
    EXPECT_NE(error.find("gif"), std::string::npos);
    error.clear();
    EXPECT_FALSE(exportFigure(testFigure(), "/nonexistent-dir/x.png", "png", 300, &error));
    EXPECT_NE(error.find("/nonexistent-dir/x.png"), std::string::npos) << error;
    error.clear();
    EXPECT_FALSE(exportFigure(testFigure(), "/nonexistent-dir/x.csv", "csv", 300, &error));
    EXPECT_FALSE(error.empty());
    error.clear();
    EXPECT_FALSE(exportFigure(testFigure(), "/nonexistent-dir/x.pdf", "pdf", 300, &error));
    EXPECT_FALSE(error.empty());
}
