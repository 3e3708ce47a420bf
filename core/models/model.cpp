#include "core/models/model.h"

#include "core/error.h"
#include "core/io/kinds.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"

namespace icl {

LsaOptions lsaOptions(const ExperimentConfig& config)
{
    const ModelConfig& m = config.model;
    LsaOptions o;
    o.input_dim = config.task.d;
    o.n_layers = m.n_layers;
    o.n_heads = m.n_heads;
    o.tied = m.tied;
    o.softmax_layers = m.softmax_layers;
    o.layer_norm = m.layer_norm;
    o.mlp = m.mlp;
    o.interleaved = layoutOf(config.task) == TaskLayout::Interleaved;
    o.pos_dim = m.positions == "sinusoidal" ? m.pos_dim : 0;
    o.feature_mlp = m.feature_mlp;
    o.feature_dim = m.feature_dim;
    o.attention_variant = attentionVariantFromName(m.attention_variant);
    o.variant_strength = m.variant_strength;
    o.augment_hidden = m.augment_hidden;
    return o;
}

ModelHandle makeModel(const ExperimentConfig& config, uint64_t seed)
{
    // Callers that read the config from a file check it against that file's budget first (naming the file); this
    // is the backstop for every other caller (a config from the command line).
    checkModelMemory(config, MemoryBudget("the config"));
    if (kindOf(config.model) == ModelKind::Lsa) {
        const LsaOptions o = lsaOptions(config);
        if (o.tied && o.softmax_layers > 0 && o.softmax_layers < o.n_layers)
            throw Error("model.softmax_layers: a tied stack shares one layer, so it is all softmax or all linear");
        Lsa lsa(o);
        lsa->initVarianceScaling(config.model.init_scale / double(config.model.n_layers), seed);
        ModelHandle h{lsa.ptr(), [lsa](const PromptBatch& b) mutable { return lsa->predict(b); }, {}, {}};
        if (o.feature_dim > 0)
            h.features = [lsa](const torch::Tensor& x) mutable { return lsa->features(x); };
        return h;
    }
    if (kindOf(config.model) == ModelKind::Gpt2) {
        if (layoutOf(config.task) != TaskLayout::Interleaved)
            throw Error("model.kind: gpt2 needs task.layout \"interleaved\"");
        Gpt2Options o;
        o.input_dim = config.task.d;
        o.n_layers = config.model.n_layers;
        o.n_heads = config.model.n_heads;
        o.d_model = config.model.d_model;
        o.n_positions = config.model.n_positions > 0 ? config.model.n_positions : 2 * config.task.n_context + 1;
        Gpt2 gpt(o, seed);
        ModelHandle h{gpt.ptr(), [gpt](const PromptBatch& b) mutable { return gpt->predict(b); }, {}, {}};
        h.predict_all = [gpt](const PromptBatch& b) mutable { return gpt->predictAll(b); };
        return h;
    }
    throw Error("model.kind: unknown model \"" + config.model.kind + "\"");
}

} // namespace icl
