#include "core/report.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace icl {

namespace {

std::map<std::string, std::string> runMetadata(const RunSummary& summary)
{
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(summary.path).filename().string();
    try {
        const auto cfg = nlohmann::json::parse(summary.config_json);
        if (cfg.contains("seed"))
            m["seed"] = cfg["seed"].dump();
        if (cfg.value("preset", "") != "")
            m["preset"] = cfg["preset"].get<std::string>() + " (" + cfg.value("scale", "") + ")";
    } catch (const std::exception&) {
    }
    return m;
}

std::string prettyBaseline(const std::string& name)
{
    if (name == "least_squares")
        return "least squares";
    if (name.rfind("gd_", 0) == 0)
        return "GD, " + name.substr(3) + " step" + (name.substr(3) == "1" ? "" : "s");
    return name;
}

} // namespace

std::vector<std::string> availablePlots(const RunSummary& summary)
{
    std::vector<std::string> plots;
    if (summary.metrics.count("eval_loss"))
        plots.push_back("loss");
    if (!summary.checkpoints.empty())
        plots.push_back("icl_curve");
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
    auto add = [&](const std::string& key, const std::string& label, Series::Style style) {
        auto it = summary.metrics.find(key);
        if (it == summary.metrics.end())
            return;
        Series s;
        s.name = label;
        s.style = style;
        for (size_t i = 0; i < it->second.size() && i < steps->second.size(); ++i) {
            if (std::isnan(it->second[i]))
                continue;
            s.x.push_back(steps->second[i]);
            s.y.push_back(it->second[i]);
        }
        f.series.push_back(std::move(s));
    };
    add("train_loss", "train loss", Series::Style::Line);
    add("eval_loss", "model (eval)", Series::Style::Line);
    for (const auto& [key, values] : summary.metrics)
        if (key.rfind("baseline/", 0) == 0)
            add(key, prettyBaseline(key.substr(9)), Series::Style::Dashed);
    return f;
}

Figure iclCurveFigure(const IclCurve& curve, const RunSummary& summary)
{
    Figure f;
    f.name = "icl_curve";
    f.title = "In-context learning: error vs. number of in-context examples";
    f.x_label = "number of in-context examples";
    f.y_label = "loss  " + curve.loss_name;
    f.metadata = runMetadata(summary);
    f.metadata["checkpoint_step"] = std::to_string(curve.checkpoint_step);
    f.metadata["n_prompts"] = std::to_string(curve.n_prompts);
    for (const auto& s : curve.series) {
        Series out;
        out.name = s.name == "model" ? "model" : prettyBaseline(s.name);
        out.style = s.name == "model" ? Series::Style::Line : Series::Style::Dashed;
        for (size_t i = 0; i < s.error.size(); ++i) {
            out.x.push_back(double(curve.n_examples[i]));
            out.y.push_back(s.error[i]);
        }
        out.y_lower = s.ci_lower;
        out.y_upper = s.ci_upper;
        f.series.push_back(std::move(out));
    }
    return f;
}

} // namespace icl
