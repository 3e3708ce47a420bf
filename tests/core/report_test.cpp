// Figures built from results: what a reader of the plot sees.
#include <gtest/gtest.h>

#include "core/report.h"
#include "core/error.h"
#include "core/report/sweep_figure.h"

namespace {

TEST(Report, IclCurveLeavesOutDivergingBaselinePointsAndSaysSo)
{
    icl::IclCurve c;
    c.n_examples = {1, 2, 3};
    c.checkpoint_step = 7;
    c.n_prompts = 100;
    c.series = {{"model", {1.0, 0.8, 0.6}, {0.9, 0.7, 0.5}, {1.1, 0.9, 0.7}},
                {"zero", {1.5, 1.5, 1.5}, {1.4, 1.4, 1.4}, {1.6, 1.6, 1.6}},
                {"gd_3", {200.0, 16.0, 0.5}, {150.0, 15.0, 0.4}, {250.0, 17.0, 0.6}}};
    icl::RunSummary s;
    s.path = "/tmp/run.h5";
    s.config_json = R"({"seed": 3})";
    const icl::Figure f = icl::iclCurveFigure(c, s);
    ASSERT_EQ(f.series.size(), 3u);
    // 200 and 16 exceed 10 × 1.5: only n = 3 of GD-3 is drawn, with its band.
    EXPECT_EQ(f.series[2].name, "GD, 3 steps");
    EXPECT_EQ(f.series[2].x, (std::vector<double>{3.0}));
    EXPECT_EQ(f.series[2].y, (std::vector<double>{0.5}));
    EXPECT_EQ(f.series[2].y_lower, (std::vector<double>{0.4}));
    EXPECT_EQ(f.series[0].y, (std::vector<double>{1.0, 0.8, 0.6}));  // the model is never cut
    EXPECT_TRUE(f.metadata.count("omitted"));
    EXPECT_EQ(f.metadata.at("checkpoint_step"), "7");
    EXPECT_EQ(f.metadata.at("seed"), "3");
    EXPECT_EQ(f.metadata.at("experiment"), "run.h5");
    EXPECT_FALSE(f.x_label.empty());
    EXPECT_FALSE(f.y_label.empty());
}

TEST(Report, LossFigureHoldsEveryMetricSeriesAgainstStep)
{
    icl::RunSummary s;
    s.path = "run.h5";
    s.config_json = "{}";
    s.metrics["step"] = {0, 100, 200};
    s.metrics["train_loss"] = {1.6, 0.9, 0.85};
    s.metrics["eval_loss"] = {1.65, 0.88, 0.84};
    s.metrics["baseline/gd_1"] = {0.8, 0.8, 0.8};
    s.metrics["baseline/least_squares"] = {0.0, 0.0, 0.0};
    const icl::Figure f = icl::lossFigure(s);
    ASSERT_EQ(f.series.size(), 4u);
    EXPECT_EQ(f.series[1].name, "model (eval)");
    EXPECT_EQ(f.series[1].y, s.metrics["eval_loss"]);
    EXPECT_EQ(f.series[2].name, "GD, 1 step");
    EXPECT_EQ(f.series[2].x, s.metrics["step"]);
    EXPECT_EQ(f.series[3].name, "least squares");
    // the predictor each line shows, which gives it its colour on every figure
    EXPECT_EQ(f.series[0].predictor, "");
    EXPECT_EQ(f.series[1].predictor, "model");
    EXPECT_EQ(f.series[2].predictor, "gd_1");
    EXPECT_EQ(f.series[3].predictor, "least_squares");
    EXPECT_THROW(icl::alignmentFigure(s), std::runtime_error);  // no alignment metrics recorded
}

// The ICL vs IWL figure: holdout ICL and IWL always, the common / rare curves only for a run with that split.
TEST(Report, IclIwlFigureDrawsCommonAndRareCurvesWhenRecorded)
{
    icl::RunSummary s;
    s.path = "chan.h5";
    s.config_json = "{}";
    s.metrics["step"] = {0, 500, 1000};
    s.metrics["icl_accuracy"] = {0.5, 0.6, 0.9};
    s.metrics["icl_accuracy_all_labels"] = {0.4, 0.6, 0.9};
    s.metrics["iwl_accuracy"] = {0.0, 0.1, 0.2};
    auto names = [](const icl::Figure& f) {
        std::vector<std::string> n;
        for (const auto& series : f.series)
            n.push_back(series.name);
        return n;
    };
    EXPECT_EQ(names(icl::iclIwlFigure(s)), (std::vector<std::string>{"ICL (holdout, labels {0, 1})",
                                                                      "ICL (holdout, all labels)", "IWL (no support)",
                                                                      "chance (2-way)"}));
    s.metrics["icl_accuracy_common"] = {0.5, 0.5, 0.55};
    s.metrics["icl_accuracy_rare"] = {0.5, 0.7, 0.95};
    s.metrics["iwl_accuracy_common"] = {0.0, 0.8, 1.0};
    s.metrics["iwl_accuracy_rare"] = {0.0, 0.0, 0.05};
    const icl::Figure f = icl::iclIwlFigure(s);
    ASSERT_EQ(names(f), (std::vector<std::string>{"ICL (holdout, labels {0, 1})", "ICL (holdout, all labels)",
                                                   "IWL (no support)", "ICL (common, labels {0, 1})",
                                                   "ICL (rare, labels {0, 1})", "IWL (common, no support)",
                                                   "IWL (rare, no support)", "chance (2-way)"}));
    EXPECT_EQ(f.series[4].y, s.metrics["icl_accuracy_rare"]);
    EXPECT_EQ(f.series[5].x, s.metrics["step"]);
    EXPECT_EQ(f.series[5].y, s.metrics["iwl_accuracy_common"]);
    EXPECT_EQ(f.series[5].style, icl::Series::Style::Dashed);
}

// A regression sweep (no icl_accuracy values) is drawn as final eval loss; the means are worked out by hand from
// the table; 0.5 and 0.50 are one value of the key; a key that is not a grid column is refused.
TEST(Report, SweepFigureOfARegressionSweepDrawsEvalLossAveragedOverSeeds)
{
    icl::SweepTable t;
    t.source = "runs/sweep.json";
    t.columns = {"training.lr", "seed", "step", "icl_accuracy", "eval_loss"};
    t.n_grid = 2;
    t.rows = {{"0.001", "0", "100", "", "0.5"}, {"0.001", "1", "100", "", "0.25"}, {"0.01", "0", "100", "", "2"},
              {"1e-2", "1", "100", "", "nan"}, {"0.1", "0", "100", "", "4"}};
    EXPECT_EQ(icl::sweepPlotColumns(t), (std::vector<std::string>{"training.lr"}));
    const icl::Figure f = icl::sweepFigure(t, "training.lr");
    EXPECT_EQ(f.title, "eval loss vs training.lr");
    EXPECT_EQ(f.y_label, "final eval loss");
    EXPECT_TRUE(f.log_x);  // 0.001 … 0.1 spans two decades
    ASSERT_EQ(f.series.size(), 1u);
    EXPECT_EQ(f.series[0].name, "eval loss");
    EXPECT_EQ(f.series[0].x, (std::vector<double>{0.001, 0.01, 0.1}));
    EXPECT_EQ(f.series[0].y, (std::vector<double>{0.375, 2.0, 4.0}));  // the "nan" cell is no value
    EXPECT_EQ(f.metadata.at("runs"), "5");
    EXPECT_THROW(icl::sweepFigure(t, "seed"), icl::Error);
    EXPECT_THROW(icl::sweepFigure(t, "eval_loss"), icl::Error);
}

} // namespace

// On the log axis of x_scale, least squares of a noiseless square system (float noise, 1e-11) is left out; the
// legend says why its line is missing. Every line names its predictor.
TEST(Report, OodFigureSaysWhichLineIsBelowTheLogAxis)
{
    icl::OodCurve c;
    c.kind = "x_scale";
    c.alpha = {0.5, 1.0, 2.0};
    c.model_loss = {0.1, 0.2, 3.0};
    c.gd_loss = {0.2, 0.3, 5.0};
    c.least_squares_loss = {1e-11, 2e-11, 4e-11};
    icl::RunSummary s;
    s.path = "run.h5";
    s.config_json = "{}";
    const icl::Figure f = icl::oodFigure(c, s);
    ASSERT_EQ(f.series.size(), 4u);  // model, GD, least squares, zero (none recorded here: an empty line)
    EXPECT_TRUE(f.log_y);
    EXPECT_EQ(f.series[2].name, "least squares (≈ 0, below the log axis)");
    EXPECT_TRUE(f.series[2].x.empty());
    EXPECT_EQ(f.series[0].predictor, "model");
    EXPECT_EQ(f.series[1].predictor, "gd");
    EXPECT_EQ(f.series[2].predictor, "least_squares");
    c.least_squares_loss = {1e-11, 0.05, 0.5};
    EXPECT_EQ(icl::oodFigure(c, s).series[2].name, "least squares (points ≈ 0 not drawn)");
}
