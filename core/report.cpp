#include "core/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/config.h"
#include "core/io/display_text.h"
#include "core/types/number_format.h"

namespace icl {

namespace {

// Text from a file (its name, config strings, a baseline or analysis name) goes into a figure's title, legend
// and metadata escaped (control characters as \xNN): figures are shown in the GUI, drawn into PNG/SVG/PDF
// and written as CSV comments.
std::string fromFile(const std::string& text)
{
    return escapeForDisplay(text);
}

std::map<std::string, std::string> runMetadata(const RunSummary& summary)
{
    std::map<std::string, std::string> m;
    m["experiment"] = fromFile(std::filesystem::path(summary.path).filename().string());
    try {
        const auto cfg = parseBoundedJson(summary.config_json, summary.path);
        if (cfg.contains("seed"))
            m["seed"] = fromFile(cfg["seed"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        if (cfg.value("preset", "") != "")
            m["preset"] = fromFile(cfg["preset"].get<std::string>() + " (" + cfg.value("scale", "") + ")");
    } catch (const std::exception&) {
    }
    return m;
}

std::string prettyBaselineRaw(const std::string& name)
{
    if (name == "least_squares")
        return "least squares";
    if (name.rfind("gd_", 0) == 0)
        return "GD, " + name.substr(3) + " step" + (name.substr(3) == "1" ? "" : "s");
    if (name.rfind("gdpp_", 0) == 0)
        return "GD++, " + name.substr(5) + " layers";
    if (name.rfind("newton_", 0) == 0)
        return "Newton, " + name.substr(7) + " iteration" + (name.substr(7) == "1" ? "" : "s");
    if (name == "oracle_ridge_phi")
        return "oracle (ridge on Φ*(x))";
    if (name == "mixture_posterior")
        return "Bayes mixture posterior";
    if (name == "knn")
        return "3-nearest neighbours";
    if (name.rfind("features_gd_", 0) == 0)
        return "MLP features + GD, " + name.substr(12) + " step" + (name.substr(12) == "1" ? "" : "s");
    return name;
}

/// A baseline's name as legends show it ("gd_2" → "GD, 2 steps"); an unknown name (from a file) escaped.
std::string prettyBaseline(const std::string& name)
{
    return fromFile(prettyBaselineRaw(name));
}

const char* kLossLabel = "loss  0.5·(ŷ − y)²";

/// Metadata of both pasting figures (written into exported files and the caption).
std::map<std::string, std::string> pastingMetadata(
    const PastingResult& r, const PastingOptions& o, const RunSummary& parent)
{
    std::map<std::string, std::string> m;
    m["experiment"] = fromFile(std::filesystem::path(parent.path).filename().string());
    m["checkpoint_step"] = std::to_string(r.parent_step);
    const uint64_t seed = o.seed != 0 || !parent.config ? o.seed : parent.config->seed;
    m["seed"] = std::to_string(seed);
    m["cut_layer"] = std::to_string(r.cut_layer);
    m["embedding"] = fromFile(r.embedding);
    m["steps"] = std::to_string(r.steps);
    m["eval_prompts"] = std::to_string(o.n_eval);
    if (!r.out_path.empty())
        m["pasted_file"] = fromFile(std::filesystem::path(r.out_path).filename().string());
    return m;
}

Series constant(const std::string& name, double value, double x0, double x1)
{
    Series s;
    s.name = name;
    s.predictor = name == "ridge" || name == "zero" ? name : "";
    s.x = { x0, x1 };
    s.y = { value, value };
    s.style = Series::Style::Dashed;
    return s;
}

Series line(const std::string& name, const std::vector<double>& x, const std::vector<double>& y)
{
    Series s;
    s.name = name;
    s.x = x;
    s.y = y;
    return s;
}

std::vector<double> toDouble(const std::vector<int64_t>& v)
{
    return std::vector<double>(v.begin(), v.end());
}

} // namespace

Figure pastingIclCurvesFigure(
    const PastingResult& r, const PastingOptions& o, const RunSummary& parent)
{
    Figure f;
    f.name = "pasting_icl_curve";
    f.title
        = "ICL error vs. in-context examples (pasted at ℓ = " + std::to_string(r.cut_layer) + ", " + fromFile(r.embedding)
          + ")";
    f.x_label = "number of in-context examples";
    f.x_integer = true;
    f.y_label = kLossLabel;
    f.metadata = pastingMetadata(r, o, parent);
    const std::vector<double> n = toDouble(r.n_examples);
    f.series.push_back(line("pasted", n, r.pasted_curve));
    if (!r.scratch_curve.empty())
        f.series.push_back(line("scratch", n, r.scratch_curve));
    Series ridge = line("ridge", n, r.ridge_curve);
    ridge.predictor = "ridge";
    ridge.style = Series::Style::Dashed;
    f.series.push_back(std::move(ridge));
    if (!n.empty())
        f.series.push_back(constant("zero", r.zero_loss, n.front(), n.back()));
    return f;
}

Figure pastingLossCurvesFigure(
    const PastingResult& r, const PastingOptions& o, const RunSummary& parent)
{
    Figure f;
    f.name = "pasting_loss";
    f.title = "Loss during training (pasted at ℓ = " + std::to_string(r.cut_layer) + ", " + fromFile(r.embedding) + ")";
    f.x_label = "training step";
    f.y_label = kLossLabel;
    f.metadata = pastingMetadata(r, o, parent);
    // Training losses are means since the previous evaluation (NaN, a gap, at step 0).
    const std::vector<double> steps = toDouble(r.curve_steps);
    f.series.push_back(line("pasted train", steps, r.pasted_train));
    f.series.push_back(line("pasted eval", steps, r.pasted_eval));
    if (o.train_scratch) {
        f.series.push_back(line("scratch train", steps, r.scratch_train));
        f.series.push_back(line("scratch eval", steps, r.scratch_eval));
    }
    if (!steps.empty()) {
        f.series.push_back(constant("ridge", r.ridge_loss, steps.front(), steps.back()));
        f.series.push_back(constant("zero", r.zero_loss, steps.front(), steps.back()));
    }
    return f;
}

std::vector<std::string> availablePlots(const RunSummary& summary)
{
    std::vector<std::string> plots;
    if (summary.metrics.count("eval_loss"))
        plots.push_back("loss");
    if (summary.metrics.count("icl_accuracy")) {
        // A few-shot classification run (Chan et al.): accuracies, not regression curves.
        plots.push_back("icl_iwl");
        return plots;
    }
    if (!summary.checkpoints.empty())
        plots.push_back("icl_curve");
    for (const auto& [key, values] : summary.metrics)
        if (key.rfind("alignment/", 0) == 0) {
            plots.push_back("alignment");
            break;
        }
    try {
        if (!summary.checkpoints.empty() && parseBoundedJson(summary.config_json, summary.path)["model"]["kind"] == "lsa")
            plots.push_back("eta_scan");
    } catch (const std::exception&) {
    }
    const auto pastings = summary.analyses.find("pasting");
    if (pastings != summary.analyses.end() && pastings->second > 0) {
        plots.push_back("pasting_icl_curve");
        plots.push_back("pasting_loss");
    }
    const auto maps = summary.analyses.find("algorithm_map");
    if (maps != summary.analyses.end() && maps->second > 0) {
        plots.push_back("algorithm_map");
        plots.push_back("algorithm_map_best_step");
        if (maps->second > 1)
            plots.push_back("algorithm_map_training");
    }
    return plots;
}

Figure lossFigure(const RunSummary& summary)
{
    auto steps = summary.metrics.find("step");
    if (steps == summary.metrics.end() || steps->second.empty())
        throw Error(summary.path + ": no training metrics to plot");
    Figure f;
    f.name = "loss";
    f.title = "Training: model vs. baselines on the evaluation prompts";
    f.x_label = "training step";
    f.y_label = "loss  0.5·(ŷ − y)²";
    f.metadata = runMetadata(summary);
    if (!summary.checkpoints.empty())
        f.metadata["checkpoint_step"] = std::to_string(summary.checkpoints.back().step);
    auto add = [&](const std::string& key, const std::string& label, Series::Style style,
                   const std::string& predictor) {
        auto it = summary.metrics.find(key);
        if (it == summary.metrics.end())
            return;
        Series s;
        s.name = label;
        s.predictor = predictor;
        s.style = style;
        for (size_t i = 0; i < it->second.size() && i < steps->second.size(); ++i) {
            if (std::isnan(it->second[i]))
                continue;
            s.x.push_back(steps->second[i]);
            s.y.push_back(it->second[i]);
        }
        if (!s.x.empty())  // an imported run has no train loss: no empty legend entry
            f.series.push_back(std::move(s));
    };
    // The model's evaluation loss first: it gets the model's colour, the loss on the training batches (the model's
    // second series) a lighter shade of it (widgets/plot_view.h).
    add("eval_loss", "model (eval)", Series::Style::Line, "model");
    add("train_loss", "train loss", Series::Style::Line, "model");
    for (const auto& [key, values] : summary.metrics)
        if (key.rfind("baseline/", 0) == 0)
            add(key, prettyBaseline(key.substr(9)), Series::Style::Dashed, key.substr(9));
    return f;
}

Figure iclCurveFigure(const IclCurve& curve, const RunSummary& summary)
{
    Figure f;
    f.name = "icl_curve";
    f.x_label = "number of in-context examples";
    f.x_integer = true;
    f.y_label = "loss  0.5·(ŷ − y)²";
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(curve.checkpoint_step);
    f.metadata["n_prompts"] = std::to_string(curve.n_prompts);
    f.metadata["bands"] = "bootstrap 95% confidence interval of the mean";
    f.title = "ICL error vs. number of in-context examples (bands: 95% CI)";
    // GD-k and GD++-k keep the step sizes fitted for N examples; with few examples they can diverge
    // (errors of 10³–10⁵), which would flatten every other curve. Such points — error above 10× the
    // zero predictor's at the same n — are left out of the plot (the CSV of `icl-cli eval` keeps them).
    const IclCurveSeries* zero = nullptr;
    for (const auto& s : curve.series)
        if (s.name == "zero")
            zero = &s;
    bool dropped = false;
    for (const auto& s : curve.series) {
        Series out;
        out.name = s.name == "model" ? "model" : prettyBaseline(s.name);
        out.predictor = s.name;
        out.style = s.name == "model" ? Series::Style::Line : Series::Style::Dashed;
        for (size_t i = 0; i < s.error.size(); ++i) {
            if (zero && s.name != "model" && s.error[i] > 10.0 * zero->error[i]) {
                dropped = true;
                continue;
            }
            out.x.push_back(double(curve.n_examples[i]));
            out.y.push_back(s.error[i]);
            out.y_lower.push_back(s.ci_lower[i]);
            out.y_upper.push_back(s.ci_upper[i]);
        }
        f.series.push_back(std::move(out));
    }
    if (dropped)
        f.metadata["omitted"] = "baseline points with error > 10x the zero predictor (diverging step size)";
    return f;
}

Figure alignmentFigure(const RunSummary& summary)
{
    auto steps = summary.metrics.find("step");
    Figure f;
    f.name = "alignment";
    f.title = "Alignment of the model with gradient descent during training";
    f.x_label = "training step";
    f.y_label = "cosine / difference";
    f.metadata = runMetadata(summary);
    for (const auto& [key, values] : summary.metrics) {
        if (key.rfind("alignment/", 0) != 0 || steps == summary.metrics.end())
            continue;
        const std::string rest = key.substr(10);
        const auto slash = rest.find('/');
        const std::string ref = rest.substr(0, slash), metric = rest.substr(slash + 1);
        if (metric == "model_difference")
            continue;  // the relative difference is on the same scale as the cosine
        Series s;
        const std::string label = metric == "model_cosine"             ? "model cosine"
                                  : metric == "relative_model_difference" ? "relative model difference"
                                                                          : "prediction difference";
        s.name = label + " vs " + prettyBaseline(ref);
        s.style = metric == "model_cosine" ? Series::Style::Line : Series::Style::Dashed;
        for (size_t i = 0; i < values.size() && i < steps->second.size(); ++i)
            if (!std::isnan(values[i])) {
                s.x.push_back(steps->second[i]);
                s.y.push_back(values[i]);
            }
        f.series.push_back(std::move(s));
    }
    if (f.series.empty())
        throw Error(summary.path + ": no alignment metrics recorded (set eval.alignment, e.g. [\"gd_1\"])");
    return f;
}

Figure predictionScatterFigure(const AlignmentResult& r, const RunSummary& summary)
{
    Figure f;
    f.name = "prediction_scatter";
    f.title = "Model vs " + prettyBaseline(r.reference) + " predictions on the same prompts";
    f.x_label = "prediction of " + prettyBaseline(r.reference);
    f.y_label = "model prediction";
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(r.checkpoint_step);
    Series s;
    s.name = "prompts";
    s.predictor = "model";  // the model's predictions (y), in the model's colour
    s.style = Series::Style::Markers;
    s.x = r.reference_predictions;
    s.y = r.model_predictions;
    double lo = 0, hi = 0;
    for (double v : s.x) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    Series diag;
    diag.name = "y = x";
    diag.style = Series::Style::Dashed;
    diag.x = {lo, hi};
    diag.y = {lo, hi};
    f.series = {s, diag};
    return f;
}

Figure etaScanFigure(const EtaScan& scan, const RunSummary& summary)
{
    Figure f;
    f.name = "eta_scan";
    const std::string gdName = "GD-" + std::to_string(scan.k);
    f.title = "GD with " + std::to_string(scan.k) + " step" + (scan.k == 1 ? "" : "s") + ": loss against step size η";
    f.x_label = "step size η";
    f.y_label = "loss  0.5·(ŷ − y)²";
    f.log_y = true;  // GD's loss explodes for large η; a linear axis hides the minimum
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(scan.checkpoint_step);
    // Two η, two sets of prompts: the scan's minimum on the evaluation prompts, and the η fitted in training on the
    // tuning prompts (the GD-k of the alignment metrics, the construction and the loss curves).
    f.metadata["best_eta"] = formatSignificant(scan.best_eta) + " (minimum of this scan, evaluation prompts)";
    if (std::isfinite(scan.fitted_eta))
        f.metadata["fitted_eta"] = formatSignificant(scan.fitted_eta) + " (" + gdName
                                   + " fitted in training on the tuning prompts"
                                   + (scan.k == 1 ? ", closed form" : ", line search") + "; used by the other views)";
    Series gd;
    gd.name = "GD, " + std::to_string(scan.k) + " step" + (scan.k == 1 ? "" : "s");
    gd.predictor = "gd_" + std::to_string(scan.k);
    gd.x = scan.eta;
    gd.y = scan.loss;
    Series model;
    model.name = "trained model";
    model.predictor = "model";
    model.style = Series::Style::Dashed;
    model.x = {scan.eta.front(), scan.eta.back()};
    model.y = {scan.model_loss, scan.model_loss};
    Series best;
    best.name = "best η = " + formatSignificant(scan.best_eta) + " (scan's minimum)";
    best.style = Series::Style::Markers;
    best.x = {scan.best_eta};
    best.y = {scan.best_loss};
    f.series = {gd, model, best};
    if (std::isfinite(scan.fitted_eta) && std::isfinite(scan.fitted_loss)) {
        Series fitted;
        fitted.name = "fitted η = " + formatSignificant(scan.fitted_eta) + " (training's " + gdName + ")";
        fitted.style = Series::Style::Markers;
        fitted.x = {scan.fitted_eta};
        fitted.y = {scan.fitted_loss};
        f.series.push_back(std::move(fitted));
    }
    return f;
}

Figure oodFigure(const OodCurve& c, const RunSummary& summary)
{
    Figure f;
    f.name = "ood_" + c.kind;
    const std::string what = c.kind == "x_scale"       ? "input range α (x ~ U(−α, α))"
                             : c.kind == "w_scale"     ? "task scale α (w ~ N(0, α²I))"
                             : c.kind == "label_noise" ? "context label noise σ"
                                                       : "number of layer applications";
    f.title = "Out of distribution: " + what;
    f.x_label = what;
    f.y_label = "loss  0.5·(ŷ − y)²";
    f.log_y = c.kind == "x_scale" || c.kind == "w_scale";
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(c.checkpoint_step);
    auto add = [&](const std::string& name, const std::vector<double>& y, Series::Style style,
                   const std::string& predictor) {
        Series s;
        s.name = name;
        s.predictor = predictor;
        s.style = style;
        double top = 0;
        for (double v : y)
            top = std::max(top, v);
        for (size_t i = 0; i < y.size(); ++i)
            // On a log axis, exact-zero baselines (least squares on noiseless square systems sit at
            // 1e-11…1e-6 float noise) are left out rather than drawn as a spurious trend.
            if (!f.log_y || y[i] > 1e-6 * std::max(1.0, top)) {
                s.x.push_back(c.alpha[i]);
                s.y.push_back(y[i]);
            }
        if (s.x.empty() && !y.empty())
            s.name += " (≈ 0, below the log axis)";  // in the legend, so the missing line is explained
        else if (s.x.size() < y.size())
            s.name += " (points ≈ 0 not drawn)";
        f.series.push_back(s);
    };
    add("model", c.model_loss, Series::Style::Line, "model");
    add(c.kind == "depth" ? "GD, same number of steps" : "GD (trained depth, fitted η)", c.gd_loss,
        Series::Style::Dashed, "gd");
    if (c.kind != "label_noise")
        add("least squares", c.least_squares_loss, Series::Style::Dashed, "least_squares");
    add("zero", c.zero_loss, Series::Style::Dashed, "zero");
    return f;
}

Figure probeFigure(const std::vector<ProbeCurve>& curves, const RunSummary& summary)
{
    Figure f;
    f.name = "probe";
    f.title = "Linear probes: normalised error per layer";
    f.x_label = "layer (residual stream after the embedding and after each block)";
    f.y_label = "normalised MSE  (1 = no information)";
    f.metadata = runMetadata(summary);
    size_t layers = 0;
    for (const ProbeCurve& c : curves) {
        Series s;
        s.name = c.target == "phi"    ? "Φ*(x)"
                 : c.target == "oracle" ? "oracle prediction"
                 : c.target == "gd_1"   ? "GD, 1 step prediction"
                                        : c.target;
        for (size_t l = 0; l < c.normalised_mse.size(); ++l) {
            s.x.push_back(double(l));
            s.y.push_back(c.normalised_mse[l]);
        }
        f.series.push_back(std::move(s));
        if (c.layer_labels.size() > layers) {
            layers = c.layer_labels.size();
            f.x_ticks.clear();
            f.x_tick_labels = c.layer_labels;
            for (size_t l = 0; l < layers; ++l)
                f.x_ticks.push_back(double(l));
        }
    }
    if (!curves.empty()) {
        const ProbeCurve& c = curves.front();
        f.metadata["checkpoint_step"] = std::to_string(c.checkpoint_step);
        f.metadata["positions"] = c.positions == "query" ? "query token" : c.positions + " tokens";
        f.metadata["n_fit"] = std::to_string(c.n_fit);
        f.metadata["n_test"] = std::to_string(c.n_test);
    }
    return f;
}

Figure lensFigure(const RegressionLens& lens, const RunSummary& summary, const std::map<std::string, std::string>& metadata)
{
    Figure f;
    f.name = "lens";
    f.title = "Regression lens: read-out of each layer at the query";
    f.x_label = "residual stream after";
    f.y_label = "prediction ŷ_q";
    if (!summary.path.empty())
        f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(lens.checkpoint_step);
    for (const auto& [key, value] : metadata)
        f.metadata[fromFile(key)] = fromFile(value);
    const size_t n = lens.prediction.size();
    Series model;
    model.name = "model (regression lens)";
    model.predictor = "model";
    for (size_t i = 0; i < n; ++i) {
        model.x.push_back(double(i));
        model.y.push_back(lens.prediction[i]);
        f.x_ticks.push_back(double(i));
        std::string label = i < lens.layer_labels.size() ? lens.layer_labels[i] : std::to_string(i);
        if (n > 4 && label.rfind("layer ", 0) == 0)
            label = "L" + label.substr(6);  // deep models: "L3" keeps the ticks apart
        f.x_tick_labels.push_back(label);
    }
    f.series.push_back(std::move(model));
    // GD after k steps sits at x = k, next to the residual stream after k layers (von Oswald et al.: one LSA
    // layer ≈ one GD step); k = 0 is the zero predictor at the embedding.
    std::map<std::string, double> refs;
    for (const PredictorValue& r : lens.references)
        refs[r.name] = r.prediction;
    Series gd;
    gd.name = "GD-k (k = layers)";
    gd.predictor = "gd";
    gd.style = Series::Style::Markers;
    if (n > 0 && refs.count("zero")) {
        gd.x.push_back(0.0);
        gd.y.push_back(refs["zero"]);
    }
    for (size_t k = 1; k < n; ++k)
        if (refs.count("gd_" + std::to_string(k))) {
            gd.x.push_back(double(k));
            gd.y.push_back(refs["gd_" + std::to_string(k)]);
        }
    if (!gd.x.empty())
        f.series.push_back(std::move(gd));
    const double x1 = n > 1 ? double(n - 1) : 1.0;
    auto flat = [&](const std::string& name, double value, const std::string& predictor) {
        Series s;
        s.name = name;
        s.predictor = predictor;
        s.style = Series::Style::Dashed;
        s.x = {0.0, x1};
        s.y = {value, value};
        f.series.push_back(std::move(s));
    };
    for (const PredictorValue& r : lens.references) {
        const bool gdStep = r.name.rfind("gd_", 0) == 0;
        if (r.name == "zero" || (gdStep && std::stoll(r.name.substr(3)) < int64_t(n)))
            continue;  // on the GD-k markers
        std::string name = r.name;
        if (gdStep)
            name = "GD-" + r.name.substr(3);
        else if (name == "least_squares")
            name = "least squares";
        else if (name == "oracle_ridge_phi")
            name = "oracle (ridge on Φ*(x))";
        flat(name, r.prediction, r.name);
    }
    flat("true label y_q", lens.target, "");
    return f;
}

Figure iclIwlFigure(const RunSummary& summary)
{
    auto steps = summary.metrics.find("step");
    if (steps == summary.metrics.end() || !summary.metrics.count("icl_accuracy"))
        throw Error(summary.path + ": no ICL/IWL accuracies (not a few-shot classification run)");
    Figure f;
    f.name = "icl_iwl";
    f.title = "In-context vs in-weights learning over training";
    f.x_label = "training step";
    f.y_label = "accuracy";
    f.metadata = runMetadata(summary);
    const std::vector<std::pair<std::string, std::string>> series = {
        {"icl_accuracy", "ICL (holdout, labels {0, 1})"},
        {"icl_accuracy_all_labels", "ICL (holdout, all labels)"},
        {"iwl_accuracy", "IWL (no support)"},
        // A run with a common / rare split (task.n_common_classes > 0) also has these.
        {"icl_accuracy_common", "ICL (common, labels {0, 1})"},
        {"icl_accuracy_rare", "ICL (rare, labels {0, 1})"},
        {"iwl_accuracy_common", "IWL (common, no support)"},
        {"iwl_accuracy_rare", "IWL (rare, no support)"}};
    for (const auto& [key, name] : series) {
        auto it = summary.metrics.find(key);
        if (it == summary.metrics.end())
            continue;
        Series s;
        s.name = name;
        if (key == "iwl_accuracy_common" || key == "iwl_accuracy_rare")
            s.style = Series::Style::Dashed;
        s.x = steps->second;
        s.y = it->second;
        s.x.resize(std::min(s.x.size(), s.y.size()));
        s.y.resize(s.x.size());
        f.series.push_back(std::move(s));
    }
    if (!steps->second.empty()) {
        Series chance;
        chance.name = "chance (2-way)";
        chance.style = Series::Style::Dashed;
        chance.x = {steps->second.front(), steps->second.back()};
        chance.y = {0.5, 0.5};
        f.series.push_back(std::move(chance));
    }
    return f;
}

Figure algorithmMapCellFigure(const AlgorithmMap& map, const std::string& family, int64_t layerIndex, int64_t stepIndex,
                              const RunSummary& summary)
{
    size_t fi = 0;
    while (fi < map.families.size() && map.families[fi].family != family)
        ++fi;
    if (fi == map.families.size() || !map.families[fi].available())
        throw Error("algorithm map: the family '" + family + "' is not available");
    const AlgorithmFamilyMap& f = map.families[fi];
    const int64_t n = map.n_scatter;
    if (layerIndex < 0 || stepIndex < 0 || layerIndex >= int64_t(map.layers.size()) || stepIndex >= f.nSteps())
        throw Error("algorithm map: no cell at layer index " + std::to_string(layerIndex) + ", step index "
                    + std::to_string(stepIndex));
    if (n <= 0 || fi >= map.scatter_algorithm.size())
        throw Error("algorithm map: the map holds no per-prompt predictions");
    const std::vector<double>& alg = map.scatter_algorithm[fi];
    Figure fig;
    fig.name = "algorithm_map_scatter";
    fig.title = "Layer " + std::to_string(map.layers[size_t(layerIndex)]) + " vs " + algorithmFamilyTitle(family) + " "
              + algorithmStepLabel(f, f.steps[size_t(stepIndex)]);
    fig.x_label = "algorithm's prediction ŷ_q";
    fig.y_label = "layer's prediction ŷ_q";
    Series pts;
    pts.name = "prompts (" + std::to_string(n) + ")";
    pts.style = Series::Style::Markers;
    double lo = 0.0, hi = 0.0;
    for (int64_t b = 0; b < n; ++b) {
        const double x = alg[size_t(stepIndex * n + b)], y = map.scatter_model[size_t(layerIndex * n + b)];
        pts.x.push_back(x);
        pts.y.push_back(y);
        if (std::isfinite(x) && std::isfinite(y)) {
            lo = std::min({lo, x, y});
            hi = std::max({hi, x, y});
        }
    }
    Series diagonal;
    diagonal.name = "ŷ_layer = ŷ_algorithm";
    diagonal.style = Series::Style::Dashed;
    diagonal.x = {lo, hi};
    diagonal.y = {lo, hi};
    fig.series = {pts, diagonal};
    fig.metadata = algorithmMapMetadata(map, family, false, summary);
    fig.metadata["similarity_of_errors"] = formatSignificant(f.errorsAt(layerIndex, stepIndex));
    return fig;
}

Figure algorithmMapBestStepFigure(const AlgorithmMap& map, const RunSummary& summary)
{
    Figure f;
    f.name = "algorithm_map_best_step";
    f.title = "Best-matching step per layer (similarity of errors)";
    f.x_label = "layer ℓ";
    f.y_label = "best step k*(ℓ) (ridge: λ*)";
    f.log_y = true;
    for (int64_t l : map.layers) {
        f.x_ticks.push_back(double(l));
        f.x_tick_labels.push_back(std::to_string(l));
    }
    for (const AlgorithmFamilyMap& fam : map.families) {
        if (!fam.available())
            continue;
        Series s;
        s.name = algorithmFamilyTitle(fam.family) + (fam.step_name == "lambda" ? " λ*" : " k*");
        s.predictor = fam.family;  // the family's colour; its fit line below gets the lighter shade
        s.style = Series::Style::Markers;
        for (size_t l = 0; l < map.layers.size() && l < fam.best_step.size(); ++l)
            if (std::isfinite(fam.best_step[l]) && fam.best_step[l] > 0) {
                s.x.push_back(double(map.layers[l]));
                s.y.push_back(fam.best_step[l]);
            }
        f.series.push_back(s);
        // The family's own fit over the middle layers, drawn over them.
        const AlgorithmMapFit& fit = fam.fit;
        if (std::isfinite(fit.slope)) {
            Series line;
            char name[160], r2[32] = "—";
            if (std::isfinite(fit.r2))
                std::snprintf(r2, sizeof r2, "%.3f", fit.r2);
            std::snprintf(name, sizeof name, "%s fit (%s, slope %.3g, R² %s)", algorithmFamilyTitle(fam.family).c_str(),
                          fit.kind.c_str(), fit.slope, r2);
            line.name = name;
            line.predictor = fam.family;
            line.style = Series::Style::Dashed;
            for (int64_t l = fit.first_layer; l <= fit.last_layer; ++l) {
                const double y = fit.intercept + fit.slope * double(l);
                const double v = fit.kind == "linear" ? y : std::pow(10.0, y);
                if (v > 0) {
                    line.x.push_back(double(l));
                    line.y.push_back(v);
                }
            }
            f.series.push_back(line);
        }
    }
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(map.checkpoint_step);
    f.metadata["readout"] = map.readout;
    f.metadata["prompts"] = std::to_string(map.n_prompts);
    f.metadata["newton_alpha"] = map.newton_alpha;
    return f;
}

Figure algorithmMapTrainingFigure(const std::vector<AlgorithmMap>& maps, const std::string& family,
                                  const RunSummary& summary)
{
    Figure f;
    f.name = "algorithm_map_training";
    f.title = "Best-matching " + algorithmFamilyTitle(family) + " step of every layer across training";
    f.x_label = "training step";
    f.y_label = family == "ridge" ? "best λ*(ℓ)" : "best step k*(ℓ)";
    f.log_y = family != "newton" && family != "gdpp";
    std::vector<const AlgorithmMap*> ordered;
    for (const AlgorithmMap& m : maps)
        ordered.push_back(&m);
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const AlgorithmMap* a, const AlgorithmMap* b) { return a->checkpoint_step < b->checkpoint_step; });
    size_t layers = 0;
    for (const AlgorithmMap* m : ordered)
        layers = std::max(layers, m->layers.size());
    for (size_t l = 0; l < layers; ++l) {
        Series s;
        s.name = "layer " + std::to_string(l + 1);
        for (const AlgorithmMap* m : ordered) {
            const AlgorithmFamilyMap* fam = m->family(family);
            if (!fam || !fam->available() || l >= fam->best_step.size() || !std::isfinite(fam->best_step[l]))
                continue;
            s.x.push_back(double(m->checkpoint_step));
            s.y.push_back(fam->best_step[l]);
        }
        if (!s.x.empty())
            f.series.push_back(s);
    }
    if (f.series.empty())
        throw Error("algorithm map: no stored map has the family \"" + family + "\"");
    f.metadata = runMetadata(summary);
    f.metadata["family"] = family;
    f.metadata["checkpoints"] = std::to_string(ordered.size());
    return f;
}

std::map<std::string, std::string> algorithmMapMetadata(const AlgorithmMap& map, const std::string& family, bool weights,
                                                        const RunSummary& summary)
{
    std::map<std::string, std::string> m = runMetadata(summary);
    m["checkpoint_step"] = std::to_string(map.checkpoint_step);
    m["family"] = family;
    m["similarity"] = weights ? "induced weights" : "errors";
    m["readout"] = map.readout;
    m["prompts"] = std::to_string(map.n_prompts);
    if (family == "newton")
        m["newton_alpha"] = map.newton_alpha;
    if (family == "gd")
        m["gd_step"] = map.gd_step == "fixed" ? "η = " + formatSignificant(map.gd_eta) : std::string("η = 1/‖XᵀX‖₂");
    return m;
}

} // namespace icl
