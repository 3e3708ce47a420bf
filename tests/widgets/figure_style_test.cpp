// PlotView's part of the figure style (issue 49 item 3): enough ticks on every axis, log axes that say which series
// are below their range, a legend that never takes half a narrow plot, and one colour per predictor family with
// lighter shades for a family's later series.

#include <cmath>

#include <QApplication>
#include <QTemporaryDir>

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include "widgets/plot_export.h"
#include "widgets/plot_view.h"
#include "tests/support/plot_helpers.h"

using icl::Figure;
using icl::Series;
using icl::widgets::PlotView;

namespace {
using icl::test::predictorSeries;

/// The labelled ticks QCustomPlot draws on `axis` within its range, after a replot at the export size.
int ticksInRange(QCPAxis* axis)
{
    int n = 0;
    for (double t : axis->tickVector())
        n += axis->range().contains(t) ? 1 : 0;
    return n;
}

void drawAtExportSize(PlotView& view, int width = 640, int height = 400)
{
    view.setToolBarVisible(false);
    view.plot()->setViewport(QRect(0, 0, width, height));
    view.replotNow();
}

} // namespace

// The η scan's log y axis spanned 0.80 … 2.6 with two labelled ticks (1 and 2).
TEST(FigureStyle, ALogAxisOverLessThanADecadeHasAtLeastFourTicks)
{
    Figure f;
    f.log_y = true;
    f.series = { predictorSeries("GD, 1 step", "gd_1", { 0, 1, 2, 3, 4 }, { 1.7, 0.85, 0.80, 1.6, 2.6 }) };
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view);
    EXPECT_GE(ticksInRange(view.plot()->yAxis), 4) << view.plot()->yAxis->range().lower << " … "
                                                   << view.plot()->yAxis->range().upper;
    // Under a factor of 1.1: evenly stepped ticks.
    f.series[0].y = { 0.800, 0.802, 0.805, 0.810, 0.812 };
    view.setFigure(f);
    drawAtExportSize(view);
    EXPECT_GE(ticksInRange(view.plot()->yAxis), 4);
}

TEST(FigureStyle, ALinearAxisWithASmallRangeHasAtLeastFourTicks)
{
    for (const std::vector<double>& y : { std::vector<double> { 0.8044, 0.8046 }, { 0.80, 0.81 }, { 0.0, 1.0 },
             { 1e-5, 3e-5 }, { 100.0, 101.0 } }) {
        Figure f;
        f.series = { predictorSeries("model", "model", { 0, 1 }, y) };
        PlotView view;
        view.setFigure(f);
        drawAtExportSize(view, 640, 300);
        EXPECT_GE(ticksInRange(view.plot()->yAxis), 4) << y[0] << " … " << y[1];
        EXPECT_GE(ticksInRange(view.plot()->xAxis), 4);
    }
}

// Least squares on a noiseless square system sits at float noise (1e-11) on a loss axis of 0.1 … 3: it is left
// off the log axis (which would otherwise span ten decades) and its legend entry says so.
TEST(FigureStyle, ALogAxisSaysWhichSeriesAreBelowItsRange)
{
    Figure f;
    f.log_y = true;
    f.series = { predictorSeries("model", "model", { 1, 2, 3 }, { 3.0, 1.0, 0.1 }),
        predictorSeries("least squares", "least_squares", { 1, 2, 3 }, { 1e-11, 3.92246e-11, 2e-11 }) };
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view);
    EXPECT_EQ(view.seriesGraph(1)->name(), QString::fromUtf8("least squares (≤ 3.922e-11, below the axis)"));
    EXPECT_EQ(view.seriesGraph(1)->dataCount(), 0);
    EXPECT_GT(view.plot()->yAxis->range().lower, 1e-3);  // the axis is the model's
    EXPECT_EQ(view.seriesGraph(0)->name(), "model");
    // A linear axis draws it at 0 as it is.
    f.log_y = false;
    view.setFigure(f);
    EXPECT_EQ(view.seriesGraph(1)->name(), "least squares");
    EXPECT_EQ(view.seriesGraph(1)->dataCount(), 3);
}

// A GPT-2 run's η scan: GD-4's loss spans 0.029 … 2.7e6, and the trained model's line (1.12) and the best-η marker
// (0.0290) were listed as "below the axis" and not drawn, though both lie inside or next to the curve's span.
TEST(FigureStyle, ASeriesInsideAnotherSeriesSpanIsDrawnOnALogAxis)
{
    Figure f;
    f.log_y = true;
    f.series = { predictorSeries("GD, 4 steps", "gd_4", { 0, 0.65, 2, 4 }, { 0.975, 0.0294, 4e3, 2.7e6 }),
        predictorSeries("trained model", "model", { 0, 4 }, { 1.12, 1.12 }),
        predictorSeries("best η", "", { 0.66 }, { 0.0290 }) }; // the refined minimum, below the grid's
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view);
    for (int i : { 1, 2 }) {
        EXPECT_EQ(view.seriesGraph(i)->name().indexOf(QStringLiteral("below the axis")), -1)
            << view.seriesGraph(i)->name().toStdString();
        EXPECT_GT(view.seriesGraph(i)->dataCount(), 0);
    }
    EXPECT_LE(view.plot()->yAxis->range().lower, 0.0290);
}

// The Attention page's lens plot: a 460 px wide plot whose legend beside the data took half of it.
TEST(FigureStyle, ANarrowPlotPutsItsLegendBelowInColumns)
{
    Figure f;
    for (const char* name : { "model (regression lens)", "GD-k (k = layers)", "ridge", "least squares",
             "oracle (ridge on Φ*(x))", "true label y_q" })
        f.series.push_back(predictorSeries(name, "", { 0, 1, 2 }, { 0.1, 0.5, 0.6 }));
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view, 100, 100); // a child widget before its first layout
    drawAtExportSize(view, 460, 300);
    QCustomPlot* plot = view.plot();
    EXPECT_TRUE(view.legendBelow());
    EXPECT_GE(plot->legend->outerRect().top(), plot->axisRect()->outerRect().bottom());
    EXPECT_GE(plot->axisRect()->outerRect().width(), 460 * 3 / 4);
    EXPECT_GE(plot->legend->columnCount(), 2);
    EXPECT_LE(plot->legend->rowCount(), 3);
    // Wide enough: beside the data again.
    drawAtExportSize(view, 1400, 500);
    EXPECT_FALSE(view.legendBelow());
    EXPECT_LE(plot->axisRect()->outerRect().right(), plot->legend->outerRect().left());
    EXPECT_EQ(plot->legend->columnCount(), 1);
    EXPECT_GE(plot->axisRect()->outerRect().width(), 1400 / 2) << plot->legend->minimumOuterSizeHint().width() << " "
        << plot->legend->rowCount() << "x" << plot->legend->columnCount() << " legend rect " << plot->legend->outerRect().width()
        << " parent " << (plot->legend->layout() ? plot->legend->layout()->outerRect().width() : -1);
}

// A legend wrapped into columns whose last row is not full has empty grid cells; placing it again (the next replot)
// read them as items and crashed the Kernel view and the GD alignment training tab at start.
TEST(FigureStyle, AWrappedLegendWithAnUnevenLastRowIsPlacedAgain)
{
    Figure f;
    for (const char* name : { "exact, λ=0", "exact, λ=1", "m=4096, λ=0", "least squares (reference)", "zero" })
        f.series.push_back(predictorSeries(name, "", { 0, 1, 2 }, { 0.1, 0.5, 0.6 }));
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view, 460, 300);
    ASSERT_TRUE(view.legendBelow());
    ASSERT_GT(view.plot()->legend->rowCount() * view.plot()->legend->columnCount(), 5); // an empty cell
    drawAtExportSize(view, 470, 300);
    drawAtExportSize(view, 1400, 500);
    EXPECT_FALSE(view.legendBelow());
    EXPECT_EQ(view.plot()->legend->itemCount(), 5);
}

// `icl-cli report` drew the alignment figure with its legend beside the data at 640 logical pixels, where it took
// almost half the width: an export only drew the layout of the widget's last replot at its own size.
TEST(FigureStyle, AnExportLaysTheLegendOutAtTheExportSize)
{
    Figure f;
    for (const char* name : { "model cosine vs GD, 1 step", "prediction difference vs GD, 1 step",
             "relative model difference vs GD, 1 step" })
        f.series.push_back(predictorSeries(name, "", { 0, 1, 2 }, { 0.1, 0.5, 0.6 }));
    PlotView view;
    view.setFigure(f);
    drawAtExportSize(view, 1400, 500);
    ASSERT_FALSE(view.legendBelow());
    std::vector<std::pair<int, bool>> layouts; // (viewport width, legend below) at every layout
    QObject::connect(view.plot(), &QCustomPlot::afterLayout, [&] {
        layouts.emplace_back(view.plot()->viewport().width(), view.legendBelow());
    });
    std::string error;
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("legend_at_export_size.png")).toStdString();
    ASSERT_TRUE(icl::widgets::writePlotFile(view.plot(), path, "png", 100, "t", {}, &error)) << error;
    ASSERT_FALSE(layouts.empty());
    EXPECT_EQ(layouts.front(), std::make_pair(icl::widgets::kExportLogicalWidth, true));
    EXPECT_EQ(view.plot()->viewport().width(), 1400); // the widget's own size again
}

// Every predictor of the pages has a colour of its own (GPT-2's 3-nearest neighbours and averaging changed colour
// between pages), and a family's later series (GD-2 after GD-1, the train loss after the model's eval loss) get
// lighter shades of the family's colour, never another family's.
TEST(FigureStyle, EveryPredictorFamilyHasItsOwnColourAndLaterMembersLighterShades)
{
    const char* families[] = { "model", "zero", "averaging", "knn", "least_squares", "ridge", "gd", "gdpp", "newton",
        "oracle_ridge_phi", "mixture_posterior", "features_gd" };
    std::vector<QColor> seen;
    for (const char* fam : families) {
        const QColor c = PlotView::predictorColor(fam);
        ASSERT_TRUE(c.isValid()) << fam;
        for (const QColor& other : seen)
            EXPECT_NE(c, other) << fam;
        seen.push_back(c);
    }
    Figure f;
    f.series = { predictorSeries("GD, 1 step", "gd_1", { 0, 1 }, { 1, 1 }),
        predictorSeries("GD, 2 steps", "gd_2", { 0, 1 }, { 1, 1 }),
        predictorSeries("GD, 3 steps", "gd_3", { 0, 1 }, { 1, 1 }) };
    const std::vector<QColor> c = PlotView::seriesColors(f);
    const QColor gd = PlotView::predictorColor("gd");
    EXPECT_EQ(c[0], gd);
    for (size_t i = 1; i < c.size(); ++i) {
        EXPECT_GT(c[i].lightnessF(), c[i - 1].lightnessF()) << i;
        EXPECT_NEAR(c[i].hueF(), gd.hueF(), 0.02) << i;  // the same hue, mixed with white
        for (const QColor& other : seen)
            EXPECT_NE(c[i], other) << i;
    }
}
