#include "widgets/plot_view.h"
#include "tests/support/plot_helpers.h"

#include <QAction>
#include <QApplication>
#include <QMouseEvent>
#include <QToolBar>

#include <gtest/gtest.h>
#include <qcustomplot.h>

using icl::Figure;
using icl::Series;
using icl::widgets::PlotView;

namespace {
using namespace icl::test;

/// The texts of the plot's layout (title and caption rows).
std::vector<QString> textElements(QCustomPlot* plot)
{
    std::vector<QString> texts;
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
        if (auto* t = qobject_cast<QCPTextElement*>(e))
            texts.push_back(t->text());
    return texts;
}

Figure lossLikeFigure()
{
    Figure f = figureOf("step", "loss",
        { seriesOf("train loss", { 0, 10, 20, 30 }, { 2.0, 1.0, 0.5, 0.25 }),
            seriesOf("gd_1", { 0, 10, 20, 30 }, { 0.3, 0.3, 0.3, 0.3 }, Series::Style::Dashed) });
    f.name = "loss";
    f.title = "Training loss";
    f.log_y = true;
    f.metadata = { { "experiment", "run.h5" }, { "seed", "3" }, { "checkpoint_step", "30" } };
    return f;
}

} // namespace

TEST(PlotView, DrawsEverySeriesWithItsData)
{
    PlotView view;
    view.setFigure(lossLikeFigure());
    QCustomPlot* plot = view.plot();
    ASSERT_EQ(plot->graphCount(), 2);
    EXPECT_EQ(plot->graph(0)->name(), "train loss");
    EXPECT_EQ(plot->graph(1)->name(), "gd_1");
    const std::vector<std::pair<double, double>> train = { { 0, 2.0 }, { 10, 1.0 }, { 20, 0.5 }, { 30, 0.25 } };
    EXPECT_EQ(graphPoints(plot->graph(0)), train);
    const std::vector<std::pair<double, double>> gd = { { 0, 0.3 }, { 10, 0.3 }, { 20, 0.3 }, { 30, 0.3 } };
    EXPECT_EQ(graphPoints(plot->graph(1)), gd);
    EXPECT_EQ(view.seriesGraph(1), plot->graph(1));
    EXPECT_EQ(view.seriesGraph(2), nullptr);
}

TEST(PlotView, LabelsAxesLegendTitleAndCaption)
{
    PlotView view;
    view.setFigure(lossLikeFigure());
    QCustomPlot* plot = view.plot();
    EXPECT_EQ(plot->xAxis->label(), "step");
    EXPECT_EQ(plot->yAxis->label(), "loss");
    EXPECT_TRUE(plot->legend->visible());
    ASSERT_EQ(plot->legend->itemCount(), 2);
    EXPECT_TRUE(plot->legend->hasItemWithPlottable(plot->graph(0)));
    EXPECT_TRUE(plot->legend->hasItemWithPlottable(plot->graph(1)));
    const std::vector<QString> texts = textElements(plot);
    EXPECT_NE(std::find(texts.begin(), texts.end(), "Training loss"), texts.end());
    // Metadata in key order, as Figure::caption documents it.
    EXPECT_NE(
        std::find(texts.begin(), texts.end(), QString::fromUtf8("checkpoint_step: 30 · experiment: run.h5 · seed: 3")),
        texts.end());
}

TEST(PlotView, LogAxesWhenTheFigureAsks)
{
    PlotView view;
    Figure f = lossLikeFigure();
    view.setFigure(f);
    EXPECT_EQ(view.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    EXPECT_FALSE(view.plot()->yAxis->ticker().dynamicCast<QCPAxisTickerLog>().isNull());
    EXPECT_EQ(view.plot()->xAxis->scaleType(), QCPAxis::stLinear);

    f.log_y = false;
    f.log_x = true;
    f.series[0].x = { 1, 10, 100, 1000 };
    view.setFigure(f);
    EXPECT_EQ(view.plot()->yAxis->scaleType(), QCPAxis::stLinear);
    EXPECT_EQ(view.plot()->xAxis->scaleType(), QCPAxis::stLogarithmic);
    // The axes cover the data after a new figure.
    EXPECT_LE(view.plot()->xAxis->range().lower, 1.0);
    EXPECT_GE(view.plot()->xAxis->range().upper, 1000.0);
}

TEST(PlotView, ACountingAxisTicksWholeNumbersOnly)
{
    // In-context examples 0 … 15: QCustomPlot's readable step on this range is 2.5 (ticks at 2.5, 7.5).
    Figure f = figureOf("number of in-context examples", "error",
        { seriesOf("model", { 0, 3, 6, 9, 12, 15 }, { 1.0, 0.8, 0.5, 0.3, 0.1, 0.05 }) });
    const auto ticksOf = [](PlotView& view) {
        QCPAxis* x = view.plot()->xAxis;
        QVector<double> ticks, subTicks;
        QVector<QString> labels;
        x->ticker()->generate(x->range(), QLocale::c(), 'g', 6, ticks, &subTicks, &labels);
        return ticks;
    };
    PlotView view;
    view.setFigure(f);
    bool fractional = false;
    for (double t : ticksOf(view))
        fractional = fractional || t != std::floor(t);
    ASSERT_TRUE(fractional) << "the range no longer shows the fractional default; choose another";

    f.x_integer = true;
    view.setFigure(f);
    const QVector<double> ticks = ticksOf(view);
    EXPECT_GE(ticks.size(), 3);
    for (double t : ticks)
        EXPECT_EQ(t, std::floor(t)) << t;
}

TEST(PlotView, LogAxisOmitsNonPositiveValues)
{
    Figure f = figureOf("n", "error", { seriesOf("least_squares", { 1, 2, 3 }, { 1.0, 0.0, 0.1 }) });
    f.log_y = true;
    PlotView view;
    view.setFigure(f);
    ASSERT_EQ(view.plot()->graphCount(), 1);
    const std::vector<std::pair<double, double>> expected = { { 1, 1.0 }, { 3, 0.1 } };
    EXPECT_EQ(graphPoints(view.plot()->graph(0)), expected);
}

TEST(PlotView, BaselinesDashedAndSeriesColoursDistinct)
{
    PlotView view;
    view.setFigure(lossLikeFigure());
    EXPECT_EQ(view.seriesGraph(0)->pen().style(), Qt::SolidLine);
    EXPECT_EQ(view.seriesGraph(1)->pen().style(), Qt::DashLine);
    EXPECT_NE(view.seriesGraph(0)->pen().color(), view.seriesGraph(1)->pen().color());
    for (int i = 0; i < 8; ++i)
        for (int j = i + 1; j < 8; ++j)
            EXPECT_NE(PlotView::seriesColor(i), PlotView::seriesColor(j)) << i << " " << j;
}

// A predictor keeps its colour whatever else a figure holds and in whatever order (issue 49: "zero" was light blue,
// yellow or orange depending on the page).
TEST(PlotView, APredictorHasTheSameColourOnEveryFigure)
{
    auto series = [](const std::string& name, const std::string& predictor) {
        Series s;
        s.name = name;
        s.predictor = predictor;
        s.x = {1, 2};
        s.y = {1, 2};
        return s;
    };
    Figure a;
    a.series = {series("train loss", ""), series("model (eval)", "model"), series("zero", "zero"),
                series("GD, 1 step", "gd_1")};
    Figure b;
    b.series = {series("zero", "zero"), series("GD, 2 steps", "gd_2"), series("model", "model"),
                series("GD, 1 step", "gd_1"), series("scratch", "")};
    const std::vector<QColor> ca = PlotView::seriesColors(a), cb = PlotView::seriesColors(b);
    ASSERT_EQ(ca.size(), 4u);
    ASSERT_EQ(cb.size(), 5u);
    EXPECT_EQ(ca[2], cb[0]);  // zero
    EXPECT_EQ(ca[1], cb[2]);  // model
    EXPECT_EQ(ca[3], cb[1]);  // the first GD series of each figure has GD's colour
    EXPECT_EQ(ca[2], QColor(0x88, 0x88, 0x88));
    EXPECT_EQ(ca[1], PlotView::seriesColor(0));  // the model is the palette's first colour, blue
    EXPECT_EQ(PlotView::predictorColor("gd_12"), PlotView::predictorColor("gd"));
    EXPECT_FALSE(PlotView::predictorColor("some_new_baseline").isValid());
    // Within one figure every series differs, also a second member of a family and series without a predictor.
    for (const auto* colors : {&ca, &cb})
        for (size_t i = 0; i < colors->size(); ++i)
            for (size_t j = i + 1; j < colors->size(); ++j)
                EXPECT_NE((*colors)[i], (*colors)[j]) << i << " " << j;
    // The view draws with them.
    PlotView view;
    view.setFigure(b);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(view.seriesGraph(i)->pen().color(), cb[size_t(i)]) << i;
}

// A series with values but none a log axis can draw is still listed, with the reason.
TEST(PlotView, ASeriesWithNothingOnTheLogAxisSaysSoInTheLegend)
{
    Figure f = figureOf(
        "", "", { seriesOf("model", { 1, 2 }, { 1.0, 0.5 }), seriesOf("least squares", { 1, 2 }, { 0.0, -1e-12 }) });
    f.log_y = true;
    PlotView view;
    view.setFigure(f);
    EXPECT_EQ(view.seriesGraph(0)->name(), "model");
    EXPECT_EQ(view.seriesGraph(1)->name(), QString::fromUtf8("least squares (≤ 0: not on the log axis)"));
}

TEST(PlotView, ConfidenceBandIsATranslucentFillOutsideTheLegend)
{
    Series s = seriesOf("model", { 1, 2, 3 }, { 0.9, 0.5, 0.2 });
    s.y_lower = { 0.8, 0.4, 0.1 };
    s.y_upper = { 1.0, 0.6, 0.3 };
    const Figure f = figureOf("number of in-context examples", "squared error", { s });
    PlotView view;
    view.setFigure(f);
    QCustomPlot* plot = view.plot();
    ASSERT_EQ(plot->graphCount(), 3); // lower edge, upper edge, line
    QCPGraph* line = view.seriesGraph(0);
    ASSERT_NE(line, nullptr);
    const std::vector<std::pair<double, double>> y = { { 1, 0.9 }, { 2, 0.5 }, { 3, 0.2 } };
    EXPECT_EQ(graphPoints(line), y);
    QCPGraph* filled = nullptr;
    for (int i = 0; i < plot->graphCount(); ++i)
        if (plot->graph(i)->channelFillGraph())
            filled = plot->graph(i);
    ASSERT_NE(filled, nullptr);
    const std::vector<std::pair<double, double>> upper = { { 1, 1.0 }, { 2, 0.6 }, { 3, 0.3 } };
    const std::vector<std::pair<double, double>> lower = { { 1, 0.8 }, { 2, 0.4 }, { 3, 0.1 } };
    EXPECT_EQ(graphPoints(filled), upper);
    EXPECT_EQ(graphPoints(filled->channelFillGraph()), lower);
    EXPECT_GT(filled->brush().color().alpha(), 0);
    EXPECT_LT(filled->brush().color().alpha(), 255);
    EXPECT_EQ(plot->legend->itemCount(), 1);
}

TEST(PlotView, MarkersStyleDrawsPointsWithoutLine)
{
    const Figure f
        = figureOf("x", "y", { seriesOf("model vs GD", { 0.1, 0.2 }, { 0.1, 0.25 }, Series::Style::Markers) });
    PlotView view;
    view.setFigure(f);
    EXPECT_EQ(view.seriesGraph(0)->lineStyle(), QCPGraph::lsNone);
    EXPECT_NE(view.seriesGraph(0)->scatterStyle().shape(), QCPScatterStyle::ssNone);
}

TEST(PlotView, NewFigureReplacesTheOldOne)
{
    PlotView view;
    view.setFigure(lossLikeFigure());
    view.setFigure(figureOf("a", "b", { seriesOf("only", { 1 }, { 2 }) }));
    ASSERT_EQ(view.plot()->graphCount(), 1);
    EXPECT_EQ(view.plot()->graph(0)->name(), "only");
    EXPECT_EQ(view.figure().series.size(), 1u);
    EXPECT_EQ(view.plot()->xAxis->label(), "a");
    // No title and no metadata: no empty text rows are left in the layout.
    EXPECT_TRUE(textElements(view.plot()).empty());
}

TEST(PlotView, OffersExportInToolbarAndContextMenu)
{
    PlotView view;
    auto* toolBar = view.findChild<QToolBar*>();
    ASSERT_NE(toolBar, nullptr);
    bool found = false;
    for (QAction* a : toolBar->actions())
        found = found || a->text() == QString::fromUtf8("Export…");
    EXPECT_TRUE(found);
    EXPECT_EQ(view.plot()->contextMenuPolicy(), Qt::CustomContextMenu);
}

TEST(PlotView, HoverShowsSeriesNameAndValuesOfTheNearestPoint)
{
    PlotView view;
    view.resize(800, 500);
    view.setFigure(lossLikeFigure());
    view.replotNow(); // lays out the axes so data coordinates map to pixels
    QCustomPlot* plot = view.plot();
    // The train-loss point (20, 0.5).
    const QPointF pos(plot->xAxis->coordToPixel(20), plot->yAxis->coordToPixel(0.5));
    QMouseEvent move(QEvent::MouseMove, pos, plot->mapToGlobal(pos), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &move);
    const QString tip = plot->toolTip();
    EXPECT_TRUE(tip.contains("train loss")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("step = 20")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("loss = 0.5")) << tip.toStdString();

    // Far from every line: no hover text.
    const QPointF empty(plot->xAxis->coordToPixel(5), plot->yAxis->coordToPixel(0.05));
    QMouseEvent away(QEvent::MouseMove, empty, plot->mapToGlobal(empty), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(plot, &away);
    EXPECT_TRUE(plot->toolTip().isEmpty()) << plot->toolTip().toStdString();
}

TEST(PlotView, LongCaptionWrapsAndNeverSqueezesTheLegend)
{
    Figure f = lossLikeFigure();
    f.metadata["experiment"] = "vonoswald-lsa-1layer-20261130-002751-with-a-long-name.h5";
    f.metadata["preset"] = "vonoswald-lsa-1layer (quick)";
    PlotView view;
    view.setToolBarVisible(false);
    view.setFigure(f);
    QCustomPlot* plot = view.plot();
    plot->setViewport(QRect(0, 0, 640, 400)); // the export size (the view is never shown)
    view.replotNow();
    EXPECT_GE(plot->legend->outerRect().width(), plot->legend->minimumOuterSizeHint().width());
    bool wrapped = false;
    for (QCPLayoutElement* e : plot->plotLayout()->elements(true))
        if (auto* t = qobject_cast<QCPTextElement*>(e))
            wrapped = wrapped || (t->text().contains('\n') && t->text().contains("seed: 3"));
    EXPECT_TRUE(wrapped);
    EXPECT_LE(plot->axisRect()->outerRect().right(), plot->legend->outerRect().left());
}

TEST(PlotView, ScatterHasRoomAroundTheExtremeMarkersOnBothAxes)
{
    Figure f = figureOf(
        "", "", { seriesOf("prompts", { -2.0, 0.0, 1.0, 2.0 }, { -1.0, 0.5, 0.0, 1.0 }, Series::Style::Markers) });
    f.title = "scatter";
    PlotView view;
    view.setFigure(f);
    EXPECT_LT(view.plot()->xAxis->range().lower, -2.0);
    EXPECT_GT(view.plot()->xAxis->range().upper, 2.0);
    EXPECT_LT(view.plot()->yAxis->range().lower, -1.0);
    EXPECT_GT(view.plot()->yAxis->range().upper, 1.0);
}
