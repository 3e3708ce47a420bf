#include "widgets/heatmap_view.h"
#include "tests/support/qt_files.h"

#include <QFile>
#include <QImage>
#include <QImageReader>
#include <QMouseEvent>
#include <QTemporaryDir>

#include <gtest/gtest.h>
#include <qcustomplot.h>

using icl::Matrix;
using icl::widgets::HeatmapView;

namespace {
using icl::test::readAll;

/// 3 × 4 matrix with distinct values, negative and positive, max |value| = 8.
Matrix testMatrix()
{
    Matrix m;
    m.name = "W_K^T W_Q (layer 1)";
    m.rows = 3;
    m.cols = 4;
    m.data = { 1.5, -2.0, 0.0, 3.25, //
        -8.0, 0.5, 4.0, -0.125, //
        2.0, 6.0, -1.0, 0.75 };
    m.row_labels = { "x1", "x2", "y" };
    m.col_labels = { "c1", "c2", "c3", "y" };
    return m;
}

} // namespace

TEST(HeatmapView, ValuesRoundTripIntoTheColorMap)
{
    HeatmapView view;
    const Matrix m = testMatrix();
    view.setMatrix(m);
    QCPColorMapData* data = view.colorMap()->data();
    ASSERT_EQ(data->keySize(), 4); // columns
    ASSERT_EQ(data->valueSize(), 3); // rows
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c)
            EXPECT_EQ(data->cell(c, r), m.data[size_t(r * 4 + c)]) << r << "," << c;
    // Cell (c, r) sits at key c, value r.
    double key = 0, value = 0;
    data->cellToCoord(2, 1, &key, &value);
    EXPECT_DOUBLE_EQ(key, 2.0);
    EXPECT_DOUBLE_EQ(value, 1.0);
}

TEST(HeatmapView, DivergingScaleIsSymmetricAroundZero)
{
    HeatmapView view;
    view.setMatrix(testMatrix());
    EXPECT_DOUBLE_EQ(view.colorLimit(), 8.0);
    EXPECT_DOUBLE_EQ(view.colorMap()->dataRange().lower, -8.0);
    EXPECT_DOUBLE_EQ(view.colorMap()->dataRange().upper, 8.0);
    EXPECT_DOUBLE_EQ(view.colorScale()->dataRange().lower, -8.0);
    EXPECT_DOUBLE_EQ(view.colorScale()->dataRange().upper, 8.0);
    // Blue below zero, white at zero, red above.
    QCPColorGradient g = view.colorScale()->gradient();
    const QCPRange range(-8.0, 8.0);
    auto colorOf = [&](double v) {
        QRgb rgb = 0;
        g.colorize(&v, range, &rgb, 1);
        return QColor(rgb);
    };
    const QColor lo = colorOf(-8.0), mid = colorOf(0.0), hi = colorOf(8.0);
    EXPECT_GT(lo.blue(), lo.red());
    EXPECT_GT(hi.red(), hi.blue());
    EXPECT_GT(mid.lightness(), 230);
    view.setColorLimit(2.0);
    EXPECT_DOUBLE_EQ(view.colorScale()->dataRange().upper, 2.0);
    EXPECT_DOUBLE_EQ(view.colorScale()->dataRange().lower, -2.0);

    Matrix zero;
    zero.rows = zero.cols = 2;
    zero.data = { 0, 0, 0, 0 };
    HeatmapView empty;
    empty.setMatrix(zero);
    EXPECT_DOUBLE_EQ(empty.colorLimit(), 1.0);
}

TEST(HeatmapView, TickLabelsAndTitleComeFromTheMatrix)
{
    HeatmapView view;
    view.setMatrix(testMatrix());
    auto rowTicker = view.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    auto colTicker = view.plot()->xAxis2->ticker().dynamicCast<QCPAxisTickerText>();
    ASSERT_TRUE(rowTicker);
    ASSERT_TRUE(colTicker);
    EXPECT_EQ(rowTicker->ticks().value(0), "x1");
    EXPECT_EQ(rowTicker->ticks().value(2), "y");
    EXPECT_EQ(colTicker->ticks().value(1), "c2");
    EXPECT_EQ(colTicker->ticks().value(3), "y");
    EXPECT_TRUE(view.plot()->yAxis->rangeReversed()); // row 0 on top
    bool sawTitle = false;
    for (QCPLayoutElement* e : view.plot()->plotLayout()->elements(true))
        if (auto* t = qobject_cast<QCPTextElement*>(e))
            sawTitle = sawTitle || t->text() == "W_K^T W_Q (layer 1)";
    EXPECT_TRUE(sawTitle);
}

// A caption longer than the 640-pixel export width (the patching metadata with an absolute experiment
// path) is broken into lines at the " · " separators, each within the width, none lost.
TEST(HeatmapView, LongCaptionWrapsWithinTheExportWidth)
{
    HeatmapView view;
    view.setMatrix(testMatrix());
    const std::map<std::string, std::string> metadata = {
        {"changed_label", "y_4"}, {"checkpoint_step", "1000"}, {"corruption", "change_label"},
        {"corruption_seed", "0"}, {"experiment", "/tmp/runs/vonoswald-lsa-1layer-20261130-002751.h5"},
        {"prompt_seed", "3"}};
    view.setMetadata(metadata);
    QString caption;
    for (QCPLayoutElement* e : view.plot()->plotLayout()->elements(true))
        if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->text().contains("prompt_seed"))
            caption = t->text();
    ASSERT_FALSE(caption.isEmpty());
    const QStringList lines = caption.split('\n');
    EXPECT_GE(lines.size(), 2) << caption.toStdString();
    QFont font;
    for (QCPLayoutElement* e : view.plot()->plotLayout()->elements(true))
        if (auto* t = qobject_cast<QCPTextElement*>(e); t && t->text() == caption)
            font = t->font();
    const QFontMetrics metrics(font);
    for (const QString& line : lines)
        EXPECT_LE(metrics.horizontalAdvance(line), 640 - 40) << line.toStdString();
    for (const auto& [key, value] : metadata)
        EXPECT_TRUE(caption.contains(QString::fromStdString(key + ": " + value))) << key;
}

TEST(HeatmapView, HoverShowsRowColumnAndValueOfTheCell)
{
    HeatmapView view;
    view.resize(500, 400);
    view.setMatrix(testMatrix());
    view.show();
    view.replotNow();
    EXPECT_EQ(view.cellText(1, 2), "row x2, column c3\nvalue = 4");
    const QPointF center = view.cellCenter(1, 2);
    int row = -1, col = -1;
    ASSERT_TRUE(view.cellAt(center, &row, &col));
    EXPECT_EQ(row, 1);
    EXPECT_EQ(col, 2);
    // A real mouse move over the cell sets the plot's tooltip.
    QMouseEvent move(
        QEvent::MouseMove, center, view.plot()->mapToGlobal(center), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QCoreApplication::sendEvent(view.plot(), &move);
    EXPECT_EQ(view.plot()->toolTip(), "row x2, column c3\nvalue = 4");
    // Row 0 is drawn above row 2.
    EXPECT_LT(view.cellCenter(0, 0).y(), view.cellCenter(2, 0).y());
    EXPECT_FALSE(view.cellAt(QPointF(1, 1), &row, &col));
}

TEST(HeatmapView, ExportsValidPngSvgPdfAndCsv)
{
    QTemporaryDir dir;
    HeatmapView view;
    view.setMatrix(testMatrix());
    view.setMetadata({ { "experiment", "runs/demo.h5" }, { "checkpoint_step", "300" } });
    std::string error;

    const QString png = dir.filePath("h.png");
    ASSERT_TRUE(view.exportTo(png.toStdString(), "png", 100, &error)) << error;
    QImageReader reader(png);
    EXPECT_EQ(reader.text("experiment"), "runs/demo.h5");
    EXPECT_EQ(reader.text("Title"), "W_K^T W_Q (layer 1)");
    const QImage image = reader.read();
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.width(), 640);
    EXPECT_EQ(image.height(), 400);
    int red = 0, blue = 0;
    for (int y = 0; y < image.height(); ++y)
        for (int x = 0; x < image.width(); ++x) {
            const QColor c = image.pixelColor(x, y);
            red += c.red() > 150 && c.blue() < 90;
            blue += c.blue() > 150 && c.red() < 90;
        }
    EXPECT_GT(red, 500); // positive cells
    EXPECT_GT(blue, 500); // negative cells

    const QString svg = dir.filePath("h.svg");
    ASSERT_TRUE(view.exportTo(svg.toStdString(), "svg", 300, &error)) << error;
    const icl::test::SvgContent content = icl::test::svgContent(readAll(svg));
    ASSERT_TRUE(content.error.isEmpty()) << content.error.toStdString();
    EXPECT_TRUE(content.has_svg);
    EXPECT_EQ(content.title, "W_K^T W_Q (layer 1)");
    EXPECT_TRUE(content.desc.contains("checkpoint_step: 300")) << content.desc.toStdString();

    const QString pdf = dir.filePath("h.pdf");
    ASSERT_TRUE(view.exportTo(pdf.toStdString(), "pdf", 300, &error)) << error;
    const QByteArray pdfBytes = readAll(pdf);
    EXPECT_TRUE(pdfBytes.startsWith("%PDF"));
    EXPECT_TRUE(pdfBytes.contains("runs/demo.h5"));

    const QString csv = dir.filePath("h.csv");
    ASSERT_TRUE(view.exportTo(csv.toStdString(), "csv", 300, &error)) << error;
    const QString text = QString::fromUtf8(readAll(csv));
    EXPECT_TRUE(text.contains("# title: W_K^T W_Q (layer 1)\n"));
    EXPECT_TRUE(text.contains("# experiment: runs/demo.h5\n"));
    EXPECT_TRUE(text.contains("\nrow,c1,c2,c3,y\n")) << text.toStdString();
    EXPECT_TRUE(text.contains("\nx1,1.5,-2,0,3.25\n"));
    EXPECT_TRUE(text.contains("\nx2,-8,0.5,4,-0.125\n"));
    EXPECT_TRUE(text.contains("\ny,2,6,-1,0.75\n"));

    EXPECT_FALSE(view.exportTo("/nonexistent-dir/h.csv", "csv", 300, &error));
    EXPECT_FALSE(view.exportTo("/tmp/h.gif", "gif", 300, &error));
    EXPECT_NE(error.find("gif"), std::string::npos);
}

// A 1-layer model's algorithm map is one row: QCustomPlot drew nothing for a cell range of 0 … 0.
TEST(HeatmapView, ASingleRowIsDrawn)
{
    Matrix m;
    m.name = "one layer";
    m.rows = 1;
    m.cols = 3;
    m.data = { 1.0, 1.0, 1.0 }; // the top of the diverging scale: deep red
    HeatmapView view;
    view.setMatrix(m);
    view.plot()->setViewport(QRect(0, 0, 640, 400));
    view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    const QImage image = view.plot()->toPixmap(640, 400).toImage();
    const QPoint centre = view.plot()->axisRect()->rect().center();
    const QColor c(image.pixel(centre));
    EXPECT_GT(c.red(), c.blue() + 60) << c.name().toStdString();
    EXPECT_LT(c.green(), 120) << c.name().toStdString();
}
