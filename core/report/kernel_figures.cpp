#include "core/report/kernel_figures.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/types/number_format.h"

namespace icl {

namespace {

std::map<std::string, std::string> viewMetadata(const KernelView& v)
{
    return {{"experiment", std::filesystem::path(v.path).filename().string()},
            {"checkpoint_step", std::to_string(v.checkpoint_step)},
            {"layer", std::to_string(v.layer)},
            {"head", std::to_string(v.head)},
            {"prompts", std::to_string(v.n_prompts)},
            {"scaling", v.scaling},
            {"seed", std::to_string(v.seed)}};
}

} // namespace

Figure kernelErrorFigure(const KernelView& view)
{
    Figure f;
    f.name = "kernel_error";
    f.title = "Random-feature error vs m";
    f.x_label = "number of random features m";
    f.y_label = "RMSE";
    f.log_x = true;
    f.log_y = true;
    f.metadata = viewMetadata(view);
    const KernelSweep& s = view.sweep;
    const std::vector<double> m(s.m.begin(), s.m.end());
    auto add = [&](const KernelErrorCurve& c, const std::string& what) {
        Series e;
        e.name = what + " (slope " + formatSignificant(c.slope) + ")";
        e.style = Series::Style::Markers;
        e.x = m;
        e.y = c.mean;
        for (size_t i = 0; i < c.mean.size(); ++i) {
            // A ±1 std band, kept positive for the log axis.
            e.y_lower.push_back(std::max(c.mean[i] - c.std[i], 0.1 * c.mean[i]));
            e.y_upper.push_back(c.mean[i] + c.std[i]);
        }
        f.series.push_back(e);
        if (std::isfinite(c.slope)) {
            Series fit;
            fit.name = what + " fit";
            fit.style = Series::Style::Line;
            fit.x = m;
            for (double x : m)
                fit.y.push_back(std::exp(c.intercept + c.slope * std::log(x)));
            f.series.push_back(fit);
        }
    };
    add(s.output_rmse, "output");
    add(s.attention_rmse, "attention");
    if (!m.empty() && !s.output_rmse.mean.empty()) {
        Series guide;
        guide.name = "m^(-1/2)";
        guide.style = Series::Style::Dashed;
        guide.x = m;
        for (double x : m)
            guide.y.push_back(s.output_rmse.mean[0] * std::sqrt(m[0] / x));
        f.series.push_back(guide);
    }
    return f;
}

Figure referenceLossFigure(const KernelView& view)
{
    Figure f;
    f.name = "reference_loss";
    f.title = "Reference model: loss along GD steps";
    f.x_label = "GD step";
    f.x_integer = true;
    f.y_label = "−Σ vᵀWφ(k) + (λ/2)‖W‖²";
    f.metadata = viewMetadata(view);
    for (const ReferenceLossCurve& c : view.loss) {
        Series s;
        s.name = c.kernel == "exact" ? "exact" : "m=" + std::to_string(c.m);
        s.name += ", λ=" + formatSignificant(c.lambda);
        s.style = c.kernel == "exact" ? Series::Style::Line : Series::Style::Dashed;
        s.x.assign(c.step.begin(), c.step.end());
        s.y = c.loss;
        f.series.push_back(s);
    }
    return f;
}

std::string variantLabel(const RunSummary& run)
{
    try {
        const auto cfg = nlohmann::json::parse(run.config_json);
        const auto& model = cfg.at("model");
        const std::string variant = model.value("attention_variant", std::string("softmax"));
        if (model.value("softmax_layers", int64_t(0)) == 0)
            return "linear attention";
        if (variant == "softmax")
            return "softmax";
        const double strength = model.value("variant_strength", 0.0);
        const char* symbol = variant == "regularized" ? "λ" : variant == "augmented" ? "α" : "β";
        return variant + " " + symbol + "=" + formatSignificant(strength);
    } catch (const std::exception&) {
        return std::filesystem::path(run.path).filename().string();
    }
}

Figure variantLossFigure(const std::vector<RunSummary>& runs)
{
    Figure f;
    f.name = "variant_loss";
    f.title = "Attention variants on the same task: evaluation loss";
    f.x_label = "training step";
    f.y_label = "eval loss  0.5·(ŷ − y)²";
    f.log_y = true;
    std::string files;
    for (const RunSummary& run : runs) {
        auto step = run.metrics.find("step");
        auto loss = run.metrics.find("eval_loss");
        if (step == run.metrics.end() || loss == run.metrics.end())
            continue;
        Series s;
        s.name = variantLabel(run) + " (" + std::filesystem::path(run.path).filename().string() + ")";
        for (size_t i = 0; i < step->second.size() && i < loss->second.size(); ++i)
            if (std::isfinite(loss->second[i]) && loss->second[i] > 0) {
                s.x.push_back(step->second[i]);
                s.y.push_back(loss->second[i]);
            }
        files += (files.empty() ? "" : ", ") + std::filesystem::path(run.path).filename().string();
        f.series.push_back(s);
    }
    if (!runs.empty()) {
        auto step = runs[0].metrics.find("step");
        auto ls = runs[0].metrics.find("baseline/gd_1");
        if (step != runs[0].metrics.end() && ls != runs[0].metrics.end()) {
            Series s;
            s.name = "one GD step (baseline)";
            s.style = Series::Style::Dashed;
            for (size_t i = 0; i < step->second.size() && i < ls->second.size(); ++i)
                if (std::isfinite(ls->second[i]) && ls->second[i] > 0) {
                    s.x.push_back(step->second[i]);
                    s.y.push_back(ls->second[i]);
                }
            if (!s.x.empty())
                f.series.push_back(s);
        }
    }
    f.metadata["experiments"] = files;
    return f;
}

} // namespace icl
