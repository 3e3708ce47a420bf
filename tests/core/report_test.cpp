// Figures built from results: what a reader of the plot sees.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/report.h"
#include "core/error.h"
#include "core/report/sweep_figure.h"
#include "core/types/number_format.h"

namespace {

/// The summary of the run file `path` holding config `config_json` and the metric series `metrics`.
icl::RunSummary reportRunSummary(const std::string& path, const std::string& config_json,
                                 std::map<std::string, std::vector<double>> metrics = {})
{
    icl::RunSummary s;
    s.path = path;
    s.config_json = config_json;
    s.metrics = std::move(metrics);
    return s;
}

TEST(Report, IclCurveLeavesOutDivergingBaselinePointsAndSaysSo)
{
    icl::IclCurve c;
    c.n_examples = {1, 2, 3};
    c.checkpoint_step = 7;
    c.n_prompts = 100;
    c.series = {{"model", {1.0, 0.8, 0.6}, {0.9, 0.7, 0.5}, {1.1, 0.9, 0.7}},
                {"zero", {1.5, 1.5, 1.5}, {1.4, 1.4, 1.4}, {1.6, 1.6, 1.6}},
                {"gd_3", {200.0, 16.0, 0.5}, {150.0, 15.0, 0.4}, {250.0, 17.0, 0.6}}};
    const icl::RunSummary s = reportRunSummary("/tmp/run.h5", R"({"seed": 3})");
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
    icl::RunSummary s = reportRunSummary("run.h5", "{}",
                                         {{"step", {0, 100, 200}},
                                          {"train_loss", {1.6, 0.9, 0.85}},
                                          {"eval_loss", {1.65, 0.88, 0.84}},
                                          {"baseline/gd_1", {0.8, 0.8, 0.8}},
                                          {"baseline/least_squares", {0.0, 0.0, 0.0}}});
    const icl::Figure f = icl::lossFigure(s);
    ASSERT_EQ(f.series.size(), 4u);
    EXPECT_EQ(f.series[0].name, "model (eval)");
    EXPECT_EQ(f.series[0].y, s.metrics["eval_loss"]);
    EXPECT_EQ(f.series[1].name, "train loss");
    EXPECT_EQ(f.series[1].y, s.metrics["train_loss"]);
    EXPECT_EQ(f.series[2].name, "GD, 1 step");
    EXPECT_EQ(f.series[2].x, s.metrics["step"]);
    EXPECT_EQ(f.series[3].name, "least squares");
    // the predictor each line shows, which gives it its colour on every figure
    // (the train loss is the model's too: a lighter shade of its colour)
    EXPECT_EQ(f.series[0].predictor, "model");
    EXPECT_EQ(f.series[1].predictor, "model");
    EXPECT_EQ(f.series[2].predictor, "gd_1");
    EXPECT_EQ(f.series[3].predictor, "least_squares");
    EXPECT_THROW(icl::alignmentFigure(s), std::runtime_error);  // no alignment metrics recorded
}

// The ICL vs IWL figure: holdout ICL and IWL always, the common / rare curves only for a run with that split.
TEST(Report, IclIwlFigureDrawsCommonAndRareCurvesWhenRecorded)
{
    icl::RunSummary s = reportRunSummary("chan.h5", "{}",
                                         {{"step", {0, 500, 1000}},
                                          {"icl_accuracy", {0.5, 0.6, 0.9}},
                                          {"icl_accuracy_all_labels", {0.4, 0.6, 0.9}},
                                          {"iwl_accuracy", {0.0, 0.1, 0.2}}});
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
    const icl::RunSummary s = reportRunSummary("run.h5", "{}");
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

namespace {

/// The most significant digits of any number written in `text` ("1.4937" → 5, "0.0921924" → 6, "3.922e-11" → 4,
/// "3000" → 1: an integer's trailing zeros are not significant).
int mostSignificantDigits(const std::string& text)
{
    int most = 0;
    size_t i = 0;
    while (i < text.size()) {
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
            ++i;
            continue;
        }
        std::string intPart, fracPart;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
            intPart += text[i++];
        if (i + 1 < text.size() && text[i] == '.' && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
            ++i;
            while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
                fracPart += text[i++];
        }
        std::string digits = intPart + fracPart;
        digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));  // leading zeros
        if (fracPart.empty())
            digits.erase(std::min(digits.find_last_not_of('0') + 1, digits.size()));  // an integer's trailing zeros
        most = std::max(most, int(digits.size()));
    }
    return most;
}

/// Everything a reader sees of a figure: title, axis labels, legend entries and caption.
std::vector<std::string> shownTexts(const icl::Figure& f)
{
    std::vector<std::string> out = {f.title, f.x_label, f.y_label, f.caption()};
    for (const icl::Series& s : f.series)
        out.push_back(s.name);
    return out;
}

} // namespace

// The figure style's number format (issue 49 item 3: η = 1.4937181828736623, metrics 0.0921924, 3.92246e-11,
// 11.9529 on screen): 4 significant digits, values worked out by hand.
TEST(FigureStyle, NumbersShowFourSignificantDigits)
{
    EXPECT_EQ(icl::formatSignificant(1.4937181828736623), "1.494");
    EXPECT_EQ(icl::formatSignificant(3.92246e-11), "3.922e-11");
    EXPECT_EQ(icl::formatSignificant(11.9529), "11.95");
    EXPECT_EQ(icl::formatSignificant(0.0921924), "0.09219");
    EXPECT_EQ(icl::formatSignificant(1.50595), "1.506");
    EXPECT_EQ(icl::formatSignificant(-0.804472), "-0.8045");
    EXPECT_EQ(icl::formatSignificant(0.5), "0.5");
    EXPECT_EQ(icl::formatSignificant(12345.6), "1.235e+04");
    EXPECT_EQ(icl::formatSignificant(3000.0), "3000");  // steps and counts in full
    EXPECT_EQ(icl::formatSignificant(20000.0), "20000");
    EXPECT_EQ(icl::formatSignificant(0.0), "0");
    EXPECT_EQ(icl::formatSignificant(std::nan("")), "—");
    EXPECT_EQ(icl::formatSignificant(1.4937181828736623, 6), "1.49372");
    // Tool tips: the shortest text that reads back as the same double.
    EXPECT_EQ(icl::formatFullPrecision(1.4937181828736623), "1.4937181828736623");
    EXPECT_EQ(icl::formatFullPrecision(0.1), "0.1");
    EXPECT_EQ(mostSignificantDigits("η = 1.4937181828736623, 3000 steps, 3.922e-11"), 17);
    EXPECT_EQ(mostSignificantDigits("η = 1.494, 3000 steps, 3.922e-11, 0.09219"), 4);
}

// The η scan names both of its η in the legend and the caption, with 4 significant digits: the scan's minimum on
// the evaluation prompts and the η fitted in training (the one the alignment header shows).
TEST(FigureStyle, EtaScanFigureExplainsItsTwoEtaWithFourDigits)
{
    // k, the η grid and GD-k's loss on it, the best η and its loss, the model's loss, the fitted η and its loss,
    // the checkpoint step (icl::EtaScan's fields in order).
    icl::EtaScan scan{1,           {0.0, 1.0, 2.0, 3.0}, {1.7, 0.85, 0.9, 1.6}, 1.5059461234, 0.803055123,
                            0.804472123, 1.4937181828736623,   0.8031113,             3000};
    const icl::RunSummary s = reportRunSummary("run.h5", R"({"seed": 0})");
    const icl::Figure f = icl::etaScanFigure(scan, s);
    for (const std::string& text : shownTexts(f))
        EXPECT_LE(mostSignificantDigits(text), 4) << text;
    ASSERT_EQ(f.series.size(), 4u);
    EXPECT_EQ(f.series[2].name, "best η = 1.506 (scan's minimum)");
    EXPECT_EQ(f.series[2].x, (std::vector<double>{scan.best_eta}));
    EXPECT_EQ(f.series[3].name, "fitted η = 1.494 (training's GD-1)");
    EXPECT_EQ(f.series[3].x, (std::vector<double>{scan.fitted_eta}));
    EXPECT_EQ(f.series[3].y, (std::vector<double>{scan.fitted_loss}));
    EXPECT_EQ(f.metadata.at("best_eta").rfind("1.506 (", 0), 0u) << f.metadata.at("best_eta");
    EXPECT_NE(f.metadata.at("fitted_eta").find("fitted in training"), std::string::npos);
    // A run that fitted no GD-k: no second η.
    scan.fitted_eta = std::nan("");
    EXPECT_EQ(icl::etaScanFigure(scan, s).series.size(), 3u);
}
