#include "core/tasks/prompts.h"

#include "core/error.h"
#include "core/io/kinds.h"
#include "core/tasks/representation.h"
#include "core/tasks/sine_regression.h"

namespace icl {

PromptBatch samplePrompts(const TaskConfig& task, int64_t batch, uint64_t seed, torch::Dtype dtype,
                          const torch::Device& device)
{
    const std::optional<TaskKind> kind = kindFromName<TaskKind>(task.kind);
    if (kind && isLinearRegression(*kind))
        return sampleLinearRegression(task, batch, seed, dtype, device);
    if (kind == TaskKind::SineRegression)
        return sampleSineRegression(task, batch, seed, dtype, device);
    if (kind && isRepresentationTask(*kind))
        return sampleRepresentation(task, batch, seed, dtype, device);
    throw Error("task.kind: no prompt generator for \"" + task.kind + "\"");
}

} // namespace icl
