#include "core/analysis/run_loader.h"

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/kinds.h"
#include "core/training/checkpoint.h"

namespace icl {

LoadedRun loadRun(const std::string& path, int64_t step)
{
    LoadedRun r;
    r.summary = readRunSummary(path);
    if (r.summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    r.config = parseConfig(parseBoundedJson(r.summary.config_json, path + ": /config"));
    // The run file's config sizes the model: refused in one line before a tensor is allocated (a run file may come
    // from anyone; --max-memory of analyze and eval sets the budget).
    checkModelMemory(r.config, MemoryBudget(path));
    if (kindOf(r.config.task) == TaskKind::FewshotClassification)
        throw Error(path + ": a few-shot classification run (Chan et al.); this analysis is for the regression tasks "
                    "(use the ICL vs IWL evaluation)");
    r.step = checkpointToRead(r.summary, step);
    const CheckpointData cp = readCheckpoint(path, r.step, CheckpointParts::ParamsOnly);
    r.model = makeModel(r.config, 0);
    loadParams(*r.model.module, cp.params, path + " (checkpoint " + std::to_string(r.step) + ")");
    r.model.module->eval();
    r.fitted = fittedOrRefit(r.config, r.summary.metrics);
    return r;
}

} // namespace icl
