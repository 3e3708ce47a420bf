// The attention widgets (grid of thumbnails, large pattern view, row bar chart) on hand-made patterns:
// expected values come from the patterns themselves and from the colour scale's closed form.

#include <cmath>

#include <QAction>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "tests/support/qt_files.h"
#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/color_scales.h"
#include "widgets/figure_export.h"

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

TEST(ColorScales, ViridisIsThePublishedTable)
{
    // matplotlib's _viridis_data entries 0, 64, 128, 192 and 255, rounded to 8 bits (#440154 … #FDE725).
    const std::vector<QRgb>& t = icl::widgets::sequentialTable();
    ASSERT_EQ(t.size(), 256u);
    EXPECT_EQ(t[0], qRgb(0x44, 0x01, 0x54));
    EXPECT_EQ(t[64], qRgb(0x3B, 0x52, 0x8B));
    EXPECT_EQ(t[128], qRgb(0x21, 0x91, 0x8C));
    EXPECT_EQ(t[192], qRgb(0x5E, 0xC9, 0x62));
    EXPECT_EQ(t[255], qRgb(0xFD, 0xE7, 0x25));
    // Perceptual: luma (Rec. 709 weights) grows monotonically along the scale.
    auto luma = [](QRgb c) { return 0.2126 * qRed(c) + 0.7152 * qGreen(c) + 0.0722 * qBlue(c); };
    for (size_t i = 8; i < t.size(); i += 8)
        EXPECT_GT(luma(t[i]), luma(t[i - 8])) << i;
}

TEST(AttentionGrid, ThumbnailColoursFollowTheScale)
{
    using icl::widgets::AttentionScale;
    // 3 × 3 causal softmax pattern: the strict upper triangle is the mask (light grey, not the colour of weight 0).
    Matrix m;
    m.rows = 3;
    m.cols = 3;
    m.data = { 1.0, 0.0, 0.0, 0.25, 0.75, 0.0, 0.2, 0.4, 0.4 };
    const QRgb grey = qRgb(0xDD, 0xDD, 0xDD), low = qRgb(0x44, 0x01, 0x54), high = qRgb(0xFD, 0xE7, 0x25);
    const QImage lin = AttentionGrid::renderThumbnail(m, true, AttentionScale::Linear);
    ASSERT_EQ(lin.width(), 3);
    ASSERT_EQ(lin.height(), 3);
    EXPECT_EQ(lin.pixel(0, 0), high) << "weight 1";
    EXPECT_EQ(lin.pixel(1, 0), grey) << "masked";
    EXPECT_EQ(lin.pixel(2, 1), grey);
    // Linear over [0, 1]: index ⌊255·w⌋ of the table.
    EXPECT_EQ(lin.pixel(1, 1), icl::widgets::sequentialTable()[191]) << "0.75";
    EXPECT_EQ(lin.pixel(0, 1), icl::widgets::sequentialTable()[63]) << "0.25";
    EXPECT_EQ(lin.pixel(0, 2), icl::widgets::sequentialTable()[51]) << "0.2";
    // Each row ÷ its maximum: 0.75 and 0.4 are the tops of their rows.
    const QImage row = AttentionGrid::renderThumbnail(m, true, AttentionScale::Row);
    EXPECT_EQ(row.pixel(1, 1), high);
    EXPECT_EQ(row.pixel(2, 2), high);
    EXPECT_EQ(row.pixel(0, 1), icl::widgets::sequentialTable()[85]) << "0.25 / 0.75 = 1/3";
    EXPECT_EQ(row.pixel(0, 2), icl::widgets::sequentialTable()[127]) << "0.2 / 0.4";
    // log10 over [1e-3, 1]: 0.2 sits at (3 + log10 0.2) / 3 of the scale.
    const QImage log = AttentionGrid::renderThumbnail(m, true, AttentionScale::Log);
    EXPECT_EQ(log.pixel(0, 0), high);
    EXPECT_EQ(log.pixel(0, 2), icl::widgets::sequentialTable()[size_t((3.0 + std::log10(0.2)) / 3.0 * 255.0)]);
    EXPECT_EQ(log.pixel(1, 0), grey);
    // A zero weight that is not masked takes the lowest colour.
    Matrix z = m;
    z.data[1] = 0.0;
    z.data[2] = 1e-9; // not causal any more
    EXPECT_EQ(AttentionGrid::renderThumbnail(z, true, AttentionScale::Linear).pixel(1, 0), low);
    EXPECT_EQ(AttentionGrid::renderThumbnail(z, true, AttentionScale::Log).pixel(2, 0), low) << "below 1e-3";
    // Linear scores: diverging, symmetric around 0 (white at 0, red for the largest positive score).
    Matrix s;
    s.rows = 1;
    s.cols = 3;
    s.data = { -2.0, 0.0, 2.0 };
    const QImage div = AttentionGrid::renderThumbnail(s, false);
    EXPECT_EQ(div.pixel(0, 0), icl::widgets::divergingTable().front());
    EXPECT_EQ(div.pixel(2, 0), icl::widgets::divergingTable().back());
    EXPECT_GE(QColor(div.pixel(1, 0)).lightness(), 240) << "0 is near white";
    EXPECT_GT(QColor(div.pixel(2, 0)).red(), QColor(div.pixel(2, 0)).blue());
    EXPECT_GT(QColor(div.pixel(0, 0)).blue(), QColor(div.pixel(0, 0)).red());
}

TEST(AttentionGrid, AThumbnailPixelIsTheLargeMapsColourOfItsCellInEveryMode)
{
    using icl::widgets::AttentionScale;
    Matrix m = causalPattern(7);
    m.data[size_t(6 * 7 + 0)] = 0.004; // small weights, where the modes differ most
    m.data[size_t(6 * 7 + 1)] = 0.0004;
    Matrix lsa = m;
    for (size_t i = 0; i < lsa.data.size(); ++i)
        lsa.data[i] = std::sin(double(i)) * 3.0;
    AttentionPatternView view;
    view.resize(700, 600);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    for (bool softmax : { true, false })
        for (AttentionScale mode : { AttentionScale::Linear, AttentionScale::Row, AttentionScale::Log }) {
            const Matrix& p = softmax ? m : lsa;
            view.setPattern(p, softmax);
            view.setScaleMode(mode);
            view.replotNow();
            const QImage shot = view.plot()->grab().toImage();
            AttentionGrid grid;
            grid.setPatterns(1, 1, { p }, { softmax });
            grid.setScaleMode(mode);
            const QImage thumb = grid.thumbnail(0, 0);
            ASSERT_EQ(thumb.width(), 7);
            for (int r = 0; r < 7; ++r)
                for (int c = 0; c < 7; ++c)
                    EXPECT_EQ(
                        QColor(shot.pixel(view.cellCenter(r, c).toPoint())).rgb(), QColor(thumb.pixel(c, r)).rgb())
                        << "softmax " << softmax << " mode " << icl::widgets::attentionScaleName(mode) << " cell " << r
                        << "," << c;
        }
    // The grid's legend names the scale and its range.
    AttentionGrid grid;
    grid.setPatterns(1, 2, { m, m }, { true, true });
    EXPECT_EQ(grid.legendText(), QStringLiteral("attention weight 0 – 1"));
    grid.setScaleMode(AttentionScale::Log);
    EXPECT_EQ(grid.legendText(), QStringLiteral("attention weight 10⁻³ – 1 (log)"));
    grid.resize(300, 200);
    grid.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&grid));
    const QImage g = grid.grab().toImage();
    const QRect bar = grid.legendBarRect();
    ASSERT_FALSE(bar.isEmpty());
    auto near = [](QRgb a, QRgb b) {
        return std::abs(qRed(a) - qRed(b)) <= 8 && std::abs(qGreen(a) - qGreen(b)) <= 8
            && std::abs(qBlue(a) - qBlue(b)) <= 8;
    };
    EXPECT_TRUE(near(g.pixel(bar.left() + 1, bar.center().y()), qRgb(0x44, 0x01, 0x54))) << "colour bar: low end";
    EXPECT_TRUE(near(g.pixel(bar.right() - 1, bar.center().y()), qRgb(0xFD, 0xE7, 0x25))) << "high end";
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
    // Softmax: sequential scale over [0, 1].
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

/// Labels of an axis's text ticker.
QStringList tickLabels(QCPAxis* axis)
{
    auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(axis->ticker());
    return ticker ? QStringList(ticker->ticks().values()) : QStringList();
}

TEST(AttentionPatternView, DensePromptsKeepBothTokenKindsAmongTheLabels)
{
    // About the size of the Attention page's pattern at 1280 × 800.
    AttentionPatternView view;
    view.resize(410, 420);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.setPattern(causalPattern(21), true);
    view.replotNow();
    QCoreApplication::processEvents();
    view.replotNow();
    EXPECT_EQ(view.keyLabelStride(), 1) << "N = 10: every token labelled";
    EXPECT_EQ(view.queryLabelStride(), 1);
    EXPECT_EQ(tickLabels(view.plot()->yAxis).size(), 21);
    // 81 tokens cannot all be labelled: the stride is odd, so x and y tokens both keep labels.
    view.setPattern(causalPattern(81), true);
    view.replotNow();
    for (QCPAxis* axis : { view.plot()->xAxis, view.plot()->yAxis }) {
        const QStringList labels = tickLabels(axis);
        ASSERT_GT(labels.size(), 1);
        ASSERT_LT(labels.size(), 81);
        int xs = 0, ys = 0;
        for (const QString& l : labels) {
            xs += l.startsWith('x');
            ys += l.startsWith('y');
        }
        EXPECT_GT(xs, 3) << labels.join(' ').toStdString();
        EXPECT_GT(ys, 3) << labels.join(' ').toStdString();
        EXPECT_TRUE(labels.contains(QStringLiteral("query"))) << "the last token keeps its label";
    }
    EXPECT_EQ(view.keyLabelStride() % 2, 1);
    EXPECT_EQ(view.queryLabelStride() % 2, 1);
    // Hover still names every token.
    EXPECT_TRUE(view.cellText(1, 0).startsWith(QStringLiteral("y1 → x1")));
}

TEST(AttentionPatternView, LogScaleShowsSmallWeightsAndTheFrameStaysOffExports)
{
    using icl::widgets::AttentionScale;
    AttentionPatternView view;
    view.resize(600, 500);
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    view.setPattern(causalPattern(7), true);
    QSignalSpy modes(&view, &AttentionPatternView::scaleModeChanged);
    view.findChild<QAction*>(QStringLiteral("logScaleAction"))->trigger();
    ASSERT_EQ(modes.count(), 1);
    EXPECT_EQ(view.scaleMode(), AttentionScale::Log);
    EXPECT_DOUBLE_EQ(view.colorLower(), 1e-3);
    EXPECT_DOUBLE_EQ(view.colorUpper(), 1.0);
    EXPECT_EQ(view.colorScale()->dataScaleType(), QCPAxis::stLogarithmic);
    EXPECT_EQ(view.colorScale()->axis()->label(), QStringLiteral("attention weight (log scale)"));
    EXPECT_TRUE(std::isnan(view.colorMap()->data()->cell(3, 0))) << "the causal mask";
    view.setScaleMode(AttentionScale::Linear);
    EXPECT_EQ(view.findChild<QAction*>(QStringLiteral("linearScaleAction"))->isChecked(), true);
    // A linear-attention head (scores of any sign) offers no log scale; a softmax head again does.
    view.setPattern(causalPattern(7), false);
    EXPECT_FALSE(view.findChild<QAction*>(QStringLiteral("logScaleAction"))->isEnabled());
    view.setPattern(causalPattern(7), true);
    EXPECT_TRUE(view.findChild<QAction*>(QStringLiteral("logScaleAction"))->isEnabled());

    // The orange selection frame is on screen, never in an export.
    view.setSelectedQuery(3);
    view.replotNow();
    auto orangePixels = [](const QImage& img) {
        int n = 0;
        for (int y = 0; y < img.height(); ++y)
            for (int x = 0; x < img.width(); ++x) {
                const QColor c(img.pixel(x, y));
                n += std::abs(c.red() - 0xD5) < 30 && std::abs(c.green() - 0x5E) < 30 && c.blue() < 40;
            }
        return n;
    };
    EXPECT_GT(orangePixels(view.plot()->grab().toImage()), 50) << "the frame is drawn on screen";
    QTemporaryDir dir;
    std::string error;
    const QString png = dir.filePath("framed.png");
    ASSERT_TRUE(view.exportTo(png.toStdString(), "png", 100, &error)) << error;
    EXPECT_EQ(orangePixels(QImage(png)), 0);
    EXPECT_EQ(view.selectedQuery(), 3) << "the view keeps its selection";
}

TEST(AttentionPatternView, TheCliExportIsTheViewsExport)
{
    // widgets::exportAttentionPattern (what icl-cli export --plot attention calls) draws the same picture as the
    // Attention page's export of the same head.
    using icl::widgets::AttentionScale;
    const Matrix m = causalPattern(9, "Attention pattern, layer 0, head 1");
    const std::map<std::string, std::string> meta = { { "experiment", "demo.h5" }, { "seed", "2" } };
    QTemporaryDir dir;
    std::string error;
    for (AttentionScale mode : { AttentionScale::Linear, AttentionScale::Log }) {
        AttentionPatternView view;
        view.setPattern(m, true);
        view.setMetadata(meta);
        view.setScaleMode(mode);
        const QString gui = dir.filePath("gui.png"), cli = dir.filePath("cli.png");
        ASSERT_TRUE(view.exportTo(gui.toStdString(), "png", 100, &error)) << error;
        ASSERT_TRUE(icl::widgets::exportAttentionPattern(m, true, meta, cli.toStdString(), "png", 100, mode, &error))
            << error;
        const QImage a(gui), b(cli);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_TRUE(a.convertToFormat(QImage::Format_RGB32) == b.convertToFormat(QImage::Format_RGB32))
            << icl::widgets::attentionScaleName(mode);
        const QString svg = dir.filePath("cli.svg");
        ASSERT_TRUE(icl::widgets::exportAttentionPattern(m, true, meta, svg.toStdString(), "svg", 100, mode, &error));
        const QString text = svgText(svg);
        EXPECT_TRUE(text.contains("attention weight")) << "colour bar title";
        EXPECT_TRUE(text.contains("key token"));
        EXPECT_TRUE(text.contains("query token"));
        EXPECT_TRUE(text.contains("y4")) << "token labels";
        if (mode == AttentionScale::Linear)
            EXPECT_FALSE(text.contains("-1")) << "no −1 … 1 scale";
    }
    EXPECT_FALSE(icl::widgets::exportAttentionPattern(
        m, true, meta, dir.filePath("x.gif").toStdString(), "gif", 100, AttentionScale::Linear, &error));
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

TEST(BarChartView, LabelsEveryBarThatFitsWithOddStrides)
{
    BarChart chart;
    chart.x_label = "key token";
    chart.y_label = "attention weight";
    for (int t = 0; t < 81; ++t) {
        chart.labels.push_back(t == 80 ? "query" : (t % 2 ? "y" : "x") + std::to_string(t / 2 + 1));
        chart.values.push_back(1.0 / 81);
    }
    BarChartView view;
    view.resize(1100, 300); // the query-row chart at 1920 wide
    view.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
    std::vector<std::string> few(chart.labels.begin(), chart.labels.begin() + 21);
    BarChart small = chart;
    small.labels = few;
    small.values.resize(21);
    view.setChart(small);
    view.replotNow();
    EXPECT_EQ(view.labelStride(), 1) << "21 bars: every one labelled";
    EXPECT_EQ(tickLabels(view.plot()->xAxis).size(), 21);
    view.resize(400, 300);
    view.setChart(chart);
    view.replotNow();
    ASSERT_GT(view.labelStride(), 1);
    EXPECT_EQ(view.labelStride() % 2, 1);
    const QStringList labels = tickLabels(view.plot()->xAxis);
    EXPECT_TRUE(std::any_of(labels.begin(), labels.end(), [](const QString& l) { return l.startsWith('y'); }))
        << labels.join(' ').toStdString();
    EXPECT_TRUE(std::any_of(labels.begin(), labels.end(), [](const QString& l) { return l.startsWith('x'); }));
    EXPECT_TRUE(labels.contains(QStringLiteral("query")));
}
