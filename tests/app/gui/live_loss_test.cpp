#include "app/gui/live_loss.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

using icl::TrainProgress;
using icl::gui::LiveLossCurves;

namespace {

TrainProgress report(int64_t step, double trainLoss)
{
    TrainProgress p;
    p.phase = TrainProgress::Phase::Training;
    p.step = step;
    p.total_steps = 100;
    p.train_loss = trainLoss;
    return p;
}

TrainProgress evaluated(int64_t step, double trainLoss, double evalLoss, double gd, double ls)
{
    TrainProgress p = report(step, trainLoss);
    p.evaluated = true;
    p.eval_loss = evalLoss;
    p.baselines = { { "gd_1", gd }, { "least_squares", ls } };
    return p;
}

std::vector<std::pair<double, double>> points(const icl::Series& s)
{
    std::vector<std::pair<double, double>> out;
    for (size_t i = 0; i < s.x.size(); ++i)
        out.emplace_back(s.x[i], s.y[i]);
    return out;
}

} // namespace

TEST(LiveLossCurves, KeepsTrainLossEveryStepAndEvalLossAtEvaluations)
{
    LiveLossCurves live;
    live.reset("run.h5", R"({"seed": 4})");
    TrainProgress preparing;
    preparing.phase = TrainProgress::Phase::Preparing;
    live.add(preparing); // ignored
    live.add(evaluated(0, 1.5, 1.25, 0.5, 0.125));
    live.add(report(1, 1.0));
    live.add(report(2, 0.75));
    live.add(evaluated(3, 0.5, 0.375, 0.5, 0.125));
    EXPECT_EQ(live.rows(), 4u);

    const icl::RunSummary& s = live.summary();
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double> { 0, 1, 2, 3 }));
    EXPECT_EQ(s.metrics.at("train_loss"), (std::vector<double> { 1.5, 1.0, 0.75, 0.5 }));
    const std::vector<double>& eval = s.metrics.at("eval_loss");
    ASSERT_EQ(eval.size(), 4u);
    EXPECT_EQ(eval[0], 1.25);
    EXPECT_TRUE(std::isnan(eval[1]));
    EXPECT_TRUE(std::isnan(eval[2]));
    EXPECT_EQ(eval[3], 0.375);
    EXPECT_EQ(s.metrics.at("baseline/gd_1")[3], 0.5);

    // The figure holds every series with exactly the reported points.
    const icl::Figure f = live.figure();
    ASSERT_EQ(f.series.size(), 4u); // train, eval, gd_1, least_squares
    using P = std::vector<std::pair<double, double>>;
    std::vector<P> all;
    for (const auto& series : f.series)
        all.push_back(points(series));
    auto has = [&](const P& p) { return std::find(all.begin(), all.end(), p) != all.end(); };
    EXPECT_TRUE(has(P { { 0, 1.5 }, { 1, 1.0 }, { 2, 0.75 }, { 3, 0.5 } }));
    EXPECT_TRUE(has(P { { 0, 1.25 }, { 3, 0.375 } }));
    EXPECT_TRUE(has(P { { 0, 0.5 }, { 3, 0.5 } }));
    EXPECT_TRUE(has(P { { 0, 0.125 }, { 3, 0.125 } }));
    EXPECT_EQ(f.metadata.at("experiment"), "run.h5");
}

TEST(LiveLossCurves, FinalReportForAnEvaluatedStepAddsNoSecondPoint)
{
    LiveLossCurves live;
    live.reset("run.h5", "{}");
    live.add(evaluated(10, 0.5, 0.25, 0.5, 0.125));
    live.add(report(10, 0.5)); // e.g. the Finished report of the same step
    EXPECT_EQ(live.rows(), 1u);
    EXPECT_EQ(live.summary().metrics.at("eval_loss")[0], 0.25);
}

TEST(LiveLossCurves, ThinsTrainLossOnLongRunsButKeepsEvaluations)
{
    LiveLossCurves live;
    live.reset("run.h5", "{}");
    for (int64_t step = 1; step <= 100000; ++step) {
        TrainProgress p = step % 10000 == 0 ? evaluated(step, 1.0, 0.5, 0.5, 0.125) : report(step, 1.0);
        p.total_steps = 100000;
        live.add(p);
    }
    EXPECT_LE(live.rows(), 5001u);
    EXPECT_GE(live.rows(), 2500u);
    const std::vector<double>& steps = live.summary().metrics.at("step");
    EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end()));
    EXPECT_EQ(steps.back(), 100000.0);
    const std::vector<double>& eval = live.summary().metrics.at("eval_loss");
    EXPECT_EQ(std::count_if(eval.begin(), eval.end(), [](double v) { return !std::isnan(v); }), 10);
}

TEST(LiveLossCurves, EmptyFigureHasLabelledAxes)
{
    LiveLossCurves live;
    live.reset("run.h5", "{}");
    const icl::Figure f = live.figure();
    EXPECT_TRUE(f.series.empty());
    EXPECT_FALSE(f.x_label.empty());
    EXPECT_FALSE(f.y_label.empty());
}
