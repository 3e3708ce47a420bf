#pragma once
// Option sets of the small models and tasks that the LibTorch tests and benchmarks build (core_tests,
// core_benchmarks): the sizes as arguments, every other field at its default; and experiment files holding one
// checkpoint of a freshly initialised model or of the GD construction. One definition each, so that the test files
// can also be compiled together (unity build, ICL_UNITY_BUILD).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/models/lsa_construction.h"
#include "core/models/model.h"
#include "core/tasks/fewshot_classification.h"
#include "core/training/checkpoint.h"

namespace icl::test {

/// A task of kind `kind` on d = `d` with N = `n_context` in-context examples; every other field at its default.
inline icl::TaskConfig taskConfig(const std::string& kind, int64_t d, int64_t n_context)
{
    icl::TaskConfig t;
    t.kind = kind;
    t.d = d;
    t.n_context = n_context;
    return t;
}

/// The representation task of Guo et al.: x ∈ R^d through `rep_layers` leaky-ReLU layers to Φ*(x) ∈ R^rep_dim, N =
/// `n_context`; every other field at its default.
inline icl::TaskConfig representationTask(int64_t d, int64_t rep_dim, int64_t rep_layers, int64_t n_context)
{
    icl::TaskConfig t = taskConfig("representation", d, n_context);
    t.rep_dim = rep_dim;
    t.rep_layers = rep_layers;
    return t;
}

/// A GPT-2 of Garg et al. on d = `input_dim` inputs: `n_layers` blocks of `n_heads` heads, width `d_model`,
/// sequences of at most `n_positions` tokens (2N + 1 for N in-context examples).
inline icl::Gpt2Options gpt2Options(int64_t input_dim, int64_t n_layers, int64_t n_heads, int64_t d_model,
                                    int64_t n_positions)
{
    icl::Gpt2Options o;
    o.input_dim = input_dim;
    o.n_layers = n_layers;
    o.n_heads = n_heads;
    o.d_model = d_model;
    o.n_positions = n_positions;
    return o;
}

/// Chan et al.'s few-shot classification task: `n_classes` training classes, `n_holdout` holdout classes,
/// synthetic exemplars of dimension `exemplar_dim`, generator seed `seed`.
inline icl::FewShotOptions fewShotOptions(int64_t n_classes, int64_t n_holdout, int64_t exemplar_dim, uint64_t seed)
{
    icl::FewShotOptions o;
    o.n_classes = n_classes;
    o.n_holdout = n_holdout;
    o.exemplar_dim = exemplar_dim;
    o.seed = seed;
    return o;
}

/// Linear self-attention of von Oswald et al. on d = `input_dim`: `n_layers` layers of `n_heads` heads (linear
/// attention in every layer unless the caller sets softmax_layers).
inline icl::LsaOptions lsaOptions(int64_t input_dim, int64_t n_layers, int64_t n_heads)
{
    icl::LsaOptions o;
    o.input_dim = input_dim;
    o.n_layers = n_layers;
    o.n_heads = n_heads;
    return o;
}

/// Creates the experiment file `path` for the resolved config `config` and commits one checkpoint at `step`
/// (metrics: step, eval_loss = 1) holding the parameters of icl::makeModel(config, `model_seed`), each first moved
/// by N(0, noise²) noise drawn after torch::manual_seed(3) when `noise` > 0 (so that every layer matters).
/// Throws icl::Error as the writers do. CPU, calling thread.
inline void writeModelRun(const std::string& path, const nlohmann::json& config, uint64_t model_seed, int64_t step,
                          double noise = 0.0)
{
    icl::createExperimentFile(path, config.dump(), false);
    icl::ModelHandle m = icl::makeModel(icl::parseConfig(config), model_seed);
    if (noise > 0) {
        torch::NoGradGuard guard;
        torch::manual_seed(3);
        for (auto& p : m.module->parameters())
            p.add_(torch::randn(p.sizes()) * noise);
    }
    icl::CheckpointData cp;
    cp.step = step;
    cp.params = icl::paramsToArrays(*m.module);
    icl::commitToExperimentFile(path, {{{"step", double(step)}, {"eval_loss", 1.0}}}, &cp);
}

/// Creates the experiment file `path` for preset vonoswald-lsa-multilayer with d = 5, N = 8 and the `--set`
/// overrides `sets`, and commits at step 10 an LSA of `layers` layers (tied or not) holding the GD construction of
/// von Oswald et al. with step size `eta` (icl::applyGdConstruction), with the metric baseline_eta/gd_<layers> = eta
/// as training stores the fitted η of GD-K. Throws icl::Error as the writers do.
inline void writeGdConstructionRun(const std::string& path, std::vector<std::string> sets, int64_t layers, bool tied,
                                   double eta)
{
    icl::ConfigRequest r;
    r.preset = "vonoswald-lsa-multilayer";
    r.sets = {"task.d=5", "task.n_context=8", "model.n_layers=" + std::to_string(layers)};
    r.sets.insert(r.sets.end(), sets.begin(), sets.end());
    icl::createExperimentFile(path, icl::resolveConfig(r).dump(), false);
    icl::Lsa lsa(6, layers, 1, tied);
    icl::applyGdConstruction(*lsa, eta, 8);
    icl::CheckpointData cp;
    cp.step = 10;
    cp.params = icl::paramsToArrays(*lsa);
    icl::commitToExperimentFile(path, {{{"step", 10.0}, {"baseline_eta/gd_" + std::to_string(layers), eta}}}, &cp);
}

} // namespace icl::test
