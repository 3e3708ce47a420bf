#include "app/gui/pasting_figures.h"

#include <exception>
#include <filesystem>

#include "core/io/config.h"

namespace icl::gui {

namespace {

const char* kLossLabel = "loss  0.5·(ŷ − y)²";

/// Metadata of both pasting figures (written into exported files and the caption).
std::map<std::string, std::string> pastingMetadata(
    const icl::PastingResult& r, const icl::PastingOptions& o, const icl::RunSummary& parent)
{
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(parent.path).filename().string();
    m["checkpoint_step"] = std::to_string(r.parent_step);
    uint64_t seed = o.seed;
    if (seed == 0) {
        try {
            seed = parentConfig(parent).seed;
        } catch (const std::exception&) {
        }
    }
    m["seed"] = std::to_string(seed);
    m["cut_layer"] = std::to_string(r.cut_layer);
    m["embedding"] = r.embedding;
    m["steps"] = std::to_string(r.steps);
    m["eval_prompts"] = std::to_string(o.n_eval);
    if (!r.out_path.empty())
        m["pasted_file"] = std::filesystem::path(r.out_path).filename().string();
    return m;
}

icl::Series constant(const std::string& name, double value, double x0, double x1)
{
    icl::Series s;
    s.name = name;
    s.x = { x0, x1 };
    s.y = { value, value };
    s.style = icl::Series::Style::Dashed;
    return s;
}

icl::Series line(const std::string& name, const std::vector<double>& x, const std::vector<double>& y)
{
    icl::Series s;
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

ParentConfig parentConfig(const icl::RunSummary& summary)
{
    ParentConfig p;
    if (!summary.config)
        return p;
    p.kind = summary.config->model.kind;
    p.n_layers = summary.config->model.n_layers;
    p.d_model = summary.config->model.d_model;
    p.w_scale = summary.config->task.w_scale;
    p.seed = summary.config->seed;
    return p;
}

icl::Figure pastingIclCurvesFigure(
    const icl::PastingResult& r, const icl::PastingOptions& o, const icl::RunSummary& parent)
{
    icl::Figure f;
    f.name = "pasting_icl_curve";
    f.title
        = "ICL error vs. in-context examples (pasted at ℓ = " + std::to_string(r.cut_layer) + ", " + r.embedding + ")";
    f.x_label = "number of in-context examples";
    f.y_label = kLossLabel;
    f.metadata = pastingMetadata(r, o, parent);
    const std::vector<double> n = toDouble(r.n_examples);
    f.series.push_back(line("pasted", n, r.pasted_curve));
    if (!r.scratch_curve.empty())
        f.series.push_back(line("scratch", n, r.scratch_curve));
    icl::Series ridge = line("ridge", n, r.ridge_curve);
    ridge.style = icl::Series::Style::Dashed;
    f.series.push_back(std::move(ridge));
    if (!n.empty())
        f.series.push_back(constant("zero", r.zero_loss, n.front(), n.back()));
    return f;
}

icl::Figure pastingLossCurvesFigure(
    const icl::PastingResult& r, const icl::PastingOptions& o, const icl::RunSummary& parent)
{
    icl::Figure f;
    f.name = "pasting_loss";
    f.title = "Loss during training (pasted at ℓ = " + std::to_string(r.cut_layer) + ", " + r.embedding + ")";
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

icl::Figure pastingEmptyFigure(bool icl)
{
    // The builders' frame (name, axis labels, the title without the cut layer), without series or metadata.
    const icl::PastingResult none;
    icl::Figure f = icl ? pastingIclCurvesFigure(none, {}, {}) : pastingLossCurvesFigure(none, {}, {});
    f.title.erase(f.title.find(" (pasted at"));
    f.series.clear();
    f.metadata.clear();
    return f;
}

} // namespace icl::gui
