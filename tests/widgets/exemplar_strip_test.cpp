// The exemplar tile strip on hand-made tiles: expected colours come from the grey-level and colour-scale
// closed forms, expected geometry from the tile order.

#include <cmath>

#include <QImage>

#include <gtest/gtest.h>

#include "widgets/color_scales.h"
#include "widgets/exemplar_strip.h"

using icl::widgets::ExemplarStrip;
using icl::widgets::ExemplarTile;

TEST(ExemplarStrip, ImagesAreGrayscaleOfClampedIntensities)
{
    const QImage img = ExemplarStrip::renderExemplar({ 0.0f, 1.0f, 0.5f, -0.2f, 1.7f, 0.25f }, { 2, 3 }, 0.0);
    ASSERT_EQ(img.width(), 3);
    ASSERT_EQ(img.height(), 2);
    // round(255·clamp(v, 0, 1)): 0, 255, 128 (127.5 rounds up), 0, 255, 64 (63.75).
    const int want[2][3] = { { 0, 255, 128 }, { 0, 255, 64 } };
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c)
            EXPECT_EQ(img.pixel(c, r), qRgb(want[r][c], want[r][c], want[r][c])) << r << "," << c;
    EXPECT_TRUE(ExemplarStrip::renderExemplar({ 1.0f, 2.0f }, { 2, 3 }, 0.0).isNull()) << "6 values expected";
    EXPECT_TRUE(ExemplarStrip::renderExemplar({}, { 0 }, 1.0).isNull());
}

TEST(ExemplarStrip, VectorsWrapIntoASquareBlockOnTheDivergingScaleOfTheLargestMagnitude)
{
    ExemplarStrip strip;
    std::vector<ExemplarTile> tiles(3);
    tiles[0].values = { 1.0f, -0.5f, 0.0f, 0.25f, -1.0f }; // D = 5 → 3 wide, 2 rows, one empty cell
    tiles[0].shape = { 5 };
    tiles[1].values = { 2.0f, -2.0f, 0.5f, 1.5f };         // D = 4 → 2 × 2; |2| is the largest of all vectors
    tiles[1].shape = { 4 };
    tiles[2].values = { 5.0f };                            // an image: not part of the vector scale
    tiles[2].shape = { 1, 1 };
    strip.setTiles(tiles);
    EXPECT_DOUBLE_EQ(strip.vectorLimit(), 2.0);

    const QImage a = strip.tileImage(0);
    ASSERT_EQ(a.width(), 3);
    ASSERT_EQ(a.height(), 2);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(a.pixel(i % 3, i / 3), icl::widgets::divergingColor(tiles[0].values[size_t(i)], 2.0)) << i;
    EXPECT_EQ(a.pixel(2, 1), qRgb(0xDD, 0xDD, 0xDD)) << "past D: light grey";
    // The scale's ends: −limit is its first stop, +limit its last.
    const QImage b = strip.tileImage(1);
    ASSERT_EQ(b.size(), QSize(2, 2));
    EXPECT_EQ(b.pixel(0, 0), icl::widgets::divergingStops().back().second.rgb());
    EXPECT_EQ(b.pixel(1, 0), icl::widgets::divergingStops().front().second.rgb());
    EXPECT_EQ(strip.tileImage(2).pixel(0, 0), qRgb(255, 255, 255)) << "the image tile clamps 5 to white";

    EXPECT_EQ(ExemplarStrip::renderExemplar(std::vector<float>(64, 0.0f), { 64 }, 1.0).size(), QSize(8, 8));
}

TEST(ExemplarStrip, TilesAreLeftToRightWithAWiderGapBeforeTheHighlightedOneAndHitTesting)
{
    ExemplarStrip strip;
    strip.setTileSide(40);
    std::vector<ExemplarTile> tiles(4);
    for (int i = 0; i < 4; ++i) {
        tiles[size_t(i)].values = { 0.5f };
        tiles[size_t(i)].shape = { 1, 1 };
        tiles[size_t(i)].caption = QStringLiteral("class %1\nlabel %2").arg(i).arg(i % 2);
    }
    tiles[3].highlighted = true;
    tiles[1].badge = QStringLiteral("holdout");
    strip.setTiles(tiles);
    ASSERT_EQ(strip.tiles().size(), 4u);
    EXPECT_EQ(strip.tiles()[2].caption, QStringLiteral("class 2\nlabel 0"));

    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(strip.tileRect(i).size(), QSize(40, 40));
        EXPECT_EQ(strip.tileAt(strip.tileRect(i).center()), i);
    }
    const int gap01 = strip.tileRect(1).left() - strip.tileRect(0).right();
    const int gap12 = strip.tileRect(2).left() - strip.tileRect(1).right();
    const int gap23 = strip.tileRect(3).left() - strip.tileRect(2).right();
    EXPECT_EQ(gap01, gap12);
    EXPECT_GT(gap23, gap12) << "the highlighted tile stands apart";
    EXPECT_EQ(strip.tileAt(QPoint(strip.tileRect(3).right() + 100, 10)), -1);
    EXPECT_GE(strip.sizeHint().width(), strip.tileRect(3).right());
    EXPECT_GT(strip.sizeHint().height(), 40) << "room for the captions";

    // What is drawn: the tile's grey (0.5 → 128) fills its square, enlarged 40 times without smoothing.
    strip.resize(strip.sizeHint());
    const QImage shot = strip.grab().toImage();
    const QPoint c = strip.tileRect(2).center();
    EXPECT_EQ(shot.pixel(c), qRgb(128, 128, 128));
    EXPECT_EQ(shot.pixel(strip.tileRect(2).topLeft() + QPoint(5, 5)), qRgb(128, 128, 128));

    strip.clear();
    EXPECT_TRUE(strip.tiles().empty());
    EXPECT_TRUE(strip.tileImage(0).isNull());
    EXPECT_EQ(strip.tileAt(QPoint(10, 10)), -1);
}
