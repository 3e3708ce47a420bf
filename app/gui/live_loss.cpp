#include "app/gui/live_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/report.h"

namespace icl::gui {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kMaxTrainPoints = 5000;
} // namespace

void LiveLossCurves::reset(const std::string& path, const std::string& config_json)
{
    m_stride = 1;
    m_summary = {};
    m_summary.path = path;
    m_summary.config_json = config_json;
}

void LiveLossCurves::resume(const icl::RunSummary& saved)
{
    reset(saved.path, saved.config_json);
    m_summary.metrics = saved.metrics;
    auto steps = m_summary.metrics.find("step");
    if (steps == m_summary.metrics.end() || saved.checkpoints.empty())
        return;
    const double last = double(saved.checkpoints.back().step);
    size_t keep = 0;
    while (keep < steps->second.size() && steps->second[keep] <= last)
        ++keep;
    for (auto& [key, column] : m_summary.metrics)
        column.resize(std::min(column.size(), keep));
}

size_t LiveLossCurves::rows() const
{
    auto it = m_summary.metrics.find("step");
    return it == m_summary.metrics.end() ? 0 : it->second.size();
}

void LiveLossCurves::add(const icl::TrainProgress& progress)
{
    if (progress.phase == icl::TrainProgress::Phase::Preparing)
        return;
    if (!progress.evaluated && progress.step % m_stride != 0)
        return;
    appendRow(progress, progress.evaluated);
    if (rows() > size_t(kMaxTrainPoints))
        thin();
}

void LiveLossCurves::thin()
{
    // Doubles the stride and drops the rows off it, keeping every evaluation.
    m_stride *= 2;
    auto& metrics = m_summary.metrics;
    const std::vector<double> steps = metrics["step"];
    const std::vector<double> eval = metrics["eval_loss"];
    std::vector<size_t> keep;
    for (size_t i = 0; i < steps.size(); ++i)
        if (!std::isnan(eval[i]) || int64_t(steps[i]) % m_stride == 0 || i + 1 == steps.size())
            keep.push_back(i);
    for (auto& [key, column] : metrics) {
        std::vector<double> kept;
        kept.reserve(keep.size());
        for (size_t i : keep)
            kept.push_back(column[i]);
        column.swap(kept);
    }
}

void LiveLossCurves::appendRow(const icl::TrainProgress& progress, bool evaluated)
{
    auto& metrics = m_summary.metrics;
    const size_t n = rows();
    // A report for a step already recorded (e.g. the final report after the last evaluation)
    // updates that row instead of adding a second point.
    const bool sameStep = n > 0 && metrics["step"].back() == double(progress.step);
    auto set = [&](const std::string& key, double value) {
        std::vector<double>& column = metrics[key];
        column.resize(n, kNaN); // a series first seen now has no earlier values
        if (sameStep) {
            if (!std::isnan(value) || column.empty())
                column.back() = value;
        } else {
            column.push_back(value);
        }
    };
    if (sameStep && !evaluated)
        return;
    set("step", double(progress.step));
    set("train_loss", progress.train_loss);
    set("lr", progress.lr);
    set("grad_norm", progress.grad_norm);
    set("eval_loss", evaluated ? progress.eval_loss : kNaN);
    for (const auto& [name, loss] : progress.baselines)
        set("baseline/" + name, evaluated ? loss : kNaN);
    // Series not reported at this step get NaN so every column keeps the same length.
    const size_t length = metrics["step"].size();
    for (auto& [key, column] : metrics)
        column.resize(length, kNaN);
}

icl::Figure LiveLossCurves::figure() const
{
    if (rows() == 0) {
        icl::Figure f;
        f.name = "loss";
        f.title = "Training: model vs. baselines on the evaluation prompts";
        f.x_label = "training step";
        f.y_label = "loss";
        f.log_y = true;
        return f;
    }
    return icl::lossFigure(m_summary);
}

} // namespace icl::gui
