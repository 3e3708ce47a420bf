#include "core/models/model.h"

#include "core/error.h"
#include "core/models/lsa.h"

namespace icl {

ModelHandle makeModel(const ExperimentConfig& config, uint64_t seed)
{
    if (config.model.kind == "lsa") {
        if (config.task.layout != "pair")
            throw Error("model.kind: lsa needs task.layout \"pair\"");
        Lsa lsa(config.task.d + 1, config.model.n_layers, config.model.n_heads, config.model.tied);
        lsa->initVarianceScaling(config.model.init_scale / double(config.model.n_layers), seed);
        return {lsa.ptr(), [lsa](const PromptBatch& b) mutable { return lsa->predict(b); }};
    }
    throw Error("model.kind: unknown model \"" + config.model.kind + "\"");
}

} // namespace icl
