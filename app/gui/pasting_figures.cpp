#include "app/gui/pasting_figures.h"

#include "core/io/config.h"
#include "core/report.h"

namespace icl::gui {

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

icl::Figure pastingEmptyFigure(bool icl)
{
    // The builders' frame (name, axis labels, the title without the cut layer), without series or metadata.
    const icl::PastingResult none;
    icl::Figure f = icl ? pastingIclCurvesFigure(none, {}, {}) : pastingLossCurvesFigure(none, {}, {});
    f.title.erase(f.title.find(" (pasted at"));
    f.series.clear();
    f.metadata.clear();
    f.title += " — press Run to paste and train"; // an empty frame says what fills it
    return f;
}

} // namespace icl::gui
