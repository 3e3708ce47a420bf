// The attention widgets (grid of thumbnails, large pattern view, row bar chart) on hand-made patterns:
// expected values come from the patterns themselves and from the colour scale's closed form.

#include <cmath>

#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/color_scales.h"
#include "tests/support/qt_files.h"

using icl::Matrix;
using icl::widgets::AttentionGrid;
using icl::widgets::AttentionPatternView;
using icl::widgets::BarChart;
using icl::widgets::BarChartView;

namespace {
using icl::test::readAll;
using icl::test::svgText;

/// Causal softmax pattern over T tokens: row t puts weight on keys 0..t, the largest on key t.
Matrix causalPattern(int T, const std::string& name = "layer 0, head 1")
{
    Matrix m;
    m.name = name;
    m.rows = T;
    m.cols = T;
    m.data.assign(size_t(T) * T, 0.0);
    for (int r = 0; r < T; ++r) {
        double sum = 0.0;
        for (int c = 0; c <= r; ++c)
            sum += (c == r ? 4.0 : 1.0);
        for (int c = 0; c <= r; ++c)
            m.data[size_t(r * T + c)] = (c == r ? 4.0 : 1.0) / sum;
    }
    for (int t = 0; t < T; ++t) {
        const std::string label = t == T - 1 ? "query" : (t % 2 ? "y" : "x") + std::to_string(t / 2 + 1);
        m.row_labels.push_back(label);
        m.col_labels.push_back(label);
    }
    return m;
}

} // namespace

TEST(AttentionGrid, ThumbnailColoursFollowTheScale)
{
    // 3 × 3 softmax pattern, each row relative to its largest weight: the row maximum is darkest, 0 is
    // the scale's lightest colour.
    Matrix m;
    m.rows = 3;
    m.cols = 3;
    m.data = { 1.0, 0.0, 0.0, 0.25, 0.75, 0.0, 0.2, 0.4, 0.4 };
    const QImage img = AttentionGrid::renderThumbnail(m, true);
    ASSERT_EQ(img.width(), 3);
    ASSERT_EQ(img.height(), 3);
    EXPECT_EQ(img.pixel(0, 0), icl::widgets::sequentialColor(1.0, 1.0));
    EXPECT_EQ(img.pixel(1, 0), icl::widgets::sequentialColor(0.0, 1.0));
    EXPECT_EQ(img.pixel(1, 1), icl::widgets::sequentialColor(0.75, 0.75));
    EXPECT_EQ(img.pixel(0, 1), icl::widgets::sequentialColor(0.25, 0.75));
    EXPECT_EQ(img.pixel(0, 2), icl::widgets::sequentialColor(0.2, 0.4));
    EXPECT_EQ(img.pixel(2, 2), icl::widgets::sequentialColor(1.0, 1.0));
    EXPECT_EQ(QColor(img.pixel(1, 0)).lightness(), QColor(icl::widgets::sequentialStops().front().second).lightness());
    // Linear scores: diverging, symmetric around 0 (white at 0, red for the largest positive score).
    Matrix s;
    s.rows = 1;
    s.cols = 3;
    s.data = { -2.0, 0.0, 2.0 };
    const QImage lin = AttentionGrid::renderThumbnail(s, false);
    EXPECT_EQ(lin.pixel(0, 0), icl::widgets::divergingColor(-2.0, 2.0));
    EXPECT_EQ(lin.pixel(1, 0), icl::widgets::divergingColor(0.0, 2.0));
    EXPECT_GT(QColor(lin.pixel(2, 0)).red(), QColor(lin.pixel(2, 0)).blue());
    EXPECT_GT(QColor(lin.pixel(0, 0)).blue(), QColor(lin.pixel(0, 0)).red());
}

TEST(AttentionGrid, LongPatternsArePooledToTheThumbnailSideKeepingPeaks)
{
    Matrix m;
    const int T = 1024;
    m.rows = T;
    m.cols = T;
    m.data.assign(size_t(T) * T, 0.0);
    m.data[size_t(500 * T + 700)] = 1.0; // one sharp peak
    const QImage img = AttentionGrid::renderThumbnail(m, true);
    const int side = AttentionGrid::kThumbnailSide;
    ASSERT_LE(img.width(), side);
    ASSERT_LE(img.height(), side);
    const int block = (T + side - 1) / side;
    EXPECT_EQ(img.pixel(700 / block, 500 / block), icl::widgets::sequentialColor(1.0, 1.0)) << "max pooling keeps it";
}

TEST(AttentionGrid, ClickingAThumbnailSelectsItsHead)
{
    AttentionGrid grid;
    grid.resize(400, 300);
    std::vector<Matrix> patterns;
    for (int i = 0; i < 6; ++i)
        patterns.push_back(causalPattern(5 + i));
    grid.setPatterns(3, 2, patterns, std::vector<bool>(6, true));
    grid.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
    QSignalSpy spy(&grid, &AttentionGrid::headSelected);
    const QRect r = grid.thumbnailRect(2, 1);
    ASSERT_FALSE(r.isEmpty());
    QTest::mouseClick(&grid, Qt::LeftButton, {}, r.center());
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), 2);
    EXPECT_EQ(spy.at(0).at(1).toInt(), 1);
    EXPECT_EQ(grid.selectedLayer(), 2);
    EXPECT_EQ(grid.selectedHead(), 1);
    // Thumbnails rendered elsewhere (the page renders them on its worker) are shown as given.
    std::vector<QImage> images;
    for (const Matrix& p : patterns)
        images.push_back(AttentionGrid::renderThumbnail(p, true));
    AttentionGrid other;
    other.setThumbnails(3, 2, images, std::vector<bool>(6, true), std::vector<double>(6, 1.0));
    for (int l = 0; l < 3; ++l)
        for (int h = 0; h < 2; ++h)
            EXPECT_EQ(other.thumbnail(l, h), grid.thumbnail(l, h)) << l << "," << h;
    // Distinct thumbnails and no overlap between neighbours.
    EXPECT_FALSE(grid.thumbnailRect(2, 0).intersects(r));
    EXPECT_EQ(grid.thumbnail(1, 0).width(), 7);
    const QImage shot = grid.grab().toImage();
    EXPECT_EQ(shot.pixel(grid.thumbnailRect(0, 0).center()) == shot.pixel(1, 1), false) << "thumbnails are drawn";
}

TEST(AttentionPatternView, HoverTextNamesQueryKeyAndValueAndClickSelectsTheRow)
{
    AttentionPatternView view;
    view.resize(600, 500);
    const Matrix m = causalPattern(7);
    view.setPattern(m, true);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.replotNow();
    // Softmax: sequential scale over [0, largest weight].
    EXPECT_DOUBLE_EQ(view.colorLower(), 0.0);
    EXPECT_DOUBLE_EQ(view.colorUpper(), 1.0); // row 0 has all its weight on key 0
    QCPColorMapData* data = view.colorMap()->data();
    ASSERT_EQ(data->keySize(), 7);
    ASSERT_EQ(data->valueSize(), 7);
    EXPECT_EQ(data->cell(2, 4), m.at(4, 2));
    const QPointF centre = view.cellCenter(4, 2);
    int row = -1, col = -1;
    ASSERT_TRUE(view.cellAt(centre, &row, &col));
    EXPECT_EQ(row, 4);
    EXPECT_EQ(col, 2);
    EXPECT_EQ(view.cellText(4, 2), QStringLiteral("x3 → x2: %1").arg(QString::number(m.at(4, 2), 'g', 6)));
    QSignalSpy spy(&view, &AttentionPatternView::querySelected);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, centre.toPoint());
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toInt(), 4);
    EXPECT_EQ(view.selectedQuery(), 4);
    // Rows scaled to their maximum: colours change, the hover text keeps the weight.
    view.setRowNormalized(true);
    EXPECT_DOUBLE_EQ(view.colorUpper(), 1.0);
    double rowMax = 0.0;
    for (int c = 0; c < 7; ++c)
        rowMax = std::max(rowMax, m.at(4, c));
    EXPECT_DOUBLE_EQ(data->cell(2, 4), m.at(4, 2) / rowMax);
    EXPECT_EQ(view.cellText(4, 2), QStringLiteral("x3 → x2: %1").arg(QString::number(m.at(4, 2), 'g', 6)));
    EXPECT_EQ(view.colorScale()->axis()->label(), QStringLiteral("attention weight ÷ row maximum"));
    view.setRowNormalized(false);
    // Linear scores: symmetric diverging range.
    Matrix s = m;
    s.data[3] = -3.0;
    view.setPattern(s, false);
    EXPECT_DOUBLE_EQ(view.colorLower(), -3.0);
    EXPECT_DOUBLE_EQ(view.colorUpper(), 3.0);
    EXPECT_EQ(view.colorScale()->axis()->label(), QStringLiteral("attention score (linear)"));
}

TEST(AttentionPatternView, ThousandTokenLabelsAreThinnedToWhatFits)
{
    AttentionPatternView view;
    view.resize(700, 600);
    view.setPattern(causalPattern(1024), true);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.replotNow();
    EXPECT_GT(view.keyLabelStride(), 1);
    EXPECT_GT(view.queryLabelStride(), 1);
    const int shownKeys = (1024 + view.keyLabelStride() - 1) / view.keyLabelStride();
    EXPECT_LE(shownKeys * QFontMetrics(view.plot()->xAxis->tickLabelFont()).height(),
        view.plot()->axisRect()->width() + 200);
    // Short prompts keep every label.
    view.setPattern(causalPattern(9), true);
    view.replotNow();
    EXPECT_EQ(view.keyLabelStride(), 1);
    EXPECT_EQ(view.queryLabelStride(), 1);
}

TEST(AttentionPatternView, ExportsCarryLabelsLegendMetadataAndTheMatrix)
{
    QTemporaryDir dir;
    AttentionPatternView view;
    const Matrix m = causalPattern(5, "layer 1, head 0");
    view.setPattern(m, true);
    view.setMetadata({ { "experiment", "runs/demo.h5" }, { "checkpoint_step", "300" }, { "seed", "7" } });
    std::string error;
    const QString svg = dir.filePath("a.svg");
    ASSERT_TRUE(view.exportTo(svg.toStdString(), "svg", 300, &error)) << error;
    const QString text = svgText(svg);
    EXPECT_TRUE(text.contains("key token")) << text.toStdString();
    EXPECT_TRUE(text.contains("query token"));
    EXPECT_TRUE(text.contains("attention weight")) << "colour legend";
    EXPECT_TRUE(text.contains("layer 1, head 0"));
    EXPECT_TRUE(text.contains("x2")) << "token labels";
    EXPECT_TRUE(text.contains("checkpoint_step: 300")) << "caption";
    const QString pdf = dir.filePath("a.pdf");
    ASSERT_TRUE(view.exportTo(pdf.toStdString(), "pdf", 300, &error)) << error;
    EXPECT_TRUE(readAll(pdf).startsWith("%PDF"));
    EXPECT_TRUE(readAll(pdf).contains("<icl:checkpoint_step>300</icl:checkpoint_step>"));
    const QString png = dir.filePath("a.png");
    ASSERT_TRUE(view.exportTo(png.toStdString(), "png", 150, &error)) << error;
    EXPECT_EQ(QImage(png).width(), 960);
    const QString csv = dir.filePath("a.csv");
    ASSERT_TRUE(view.exportTo(csv.toStdString(), "csv", 300, &error)) << error;
    const QStringList lines = QString::fromUtf8(readAll(csv)).split('\n', Qt::SkipEmptyParts);
    QStringList rows;
    for (const QString& l : lines)
        if (!l.startsWith('#'))
            rows << l;
    ASSERT_EQ(rows.size(), 6);
    EXPECT_EQ(rows[0], "row,x1,y1,x2,y2,query");
    for (int r = 0; r < 5; ++r) {
        const QStringList cells = rows[r + 1].split(',');
        ASSERT_EQ(cells.size(), 6);
        EXPECT_EQ(cells[0].toStdString(), m.row_labels[size_t(r)]);
        for (int c = 0; c < 5; ++c)
            EXPECT_NEAR(cells[c + 1].toDouble(), m.at(r, c), 1e-9 * std::max(1.0, std::abs(m.at(r, c))));
    }
}

TEST(BarChartView, BarsEqualTheDataAndExportsCarryLabels)
{
    BarChart chart;
    chart.name = "row";
    chart.title = "attention of query";
    chart.x_label = "key token";
    chart.y_label = "attention weight";
    chart.labels = { "x1", "y1", "query" };
    chart.values = { 0.25, 0.5, 0.25 };
    chart.metadata = { { "seed", "3" } };
    BarChartView view;
    view.resize(500, 300);
    view.setChart(chart);
    ASSERT_EQ(view.bars()->data()->size(), 3);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(view.bars()->data()->at(i)->value, chart.values[size_t(i)]);
    EXPECT_EQ(view.barText(1), "y1: 0.5");
    QTemporaryDir dir;
    std::string error;
    const QString svg = dir.filePath("b.svg");
    ASSERT_TRUE(view.exportTo(svg.toStdString(), "svg", 300, &error)) << error;
    const QString text = svgText(svg);
    EXPECT_TRUE(text.contains("key token"));
    EXPECT_TRUE(text.contains("attention weight"));
    EXPECT_TRUE(text.contains("query"));
    const QString csv = dir.filePath("b.csv");
    ASSERT_TRUE(view.exportTo(csv.toStdString(), "csv", 300, &error)) << error;
    EXPECT_TRUE(readAll(csv).contains("key token,attention weight\nx1,0.25\ny1,0.5\nquery,0.25\n"));
}
