#include "core/analysis/probe_analysis.h"

#include <nlohmann/json.hpp>

#include "core/analysis/probe.h"
#include "core/analysis/run_loader.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/io/kinds.h"
#include "core/models/gpt2.h"
#include "core/models/names.h"
#include "core/tasks/representation.h"
#include "core/tasks/sine_regression.h"
#include "core/training/device.h"
#include "core/training/seeds.h"

namespace icl {

namespace {

/// The prompts whose "query" is x_{i+1} after the first i examples: x [B, i+1, d].
PromptBatch upTo(const PromptBatch& p, int64_t i)
{
    return {p.x.narrow(1, 0, i + 1), p.y.narrow(1, 0, i + 1), p.w};
}

/// Targets [B, P, q] at the P probed positions of each prompt.
torch::Tensor targetsFor(const ProbeOptions& o, const PromptBatch& p, const ExperimentConfig& cfg,
                         const FittedBaselines& fitted)
{
    const int64_t N = p.nContext();
    const bool query = o.positions == "query";
    torch::NoGradGuard guard;
    const bool rep = isRepresentationTask(kindOf(cfg.task));
    if (o.target == "x")
        return query ? p.queryX().unsqueeze(1) : p.contextX();
    if (o.target == "y")
        return (query ? p.queryY().unsqueeze(1) : p.contextY()).unsqueeze(-1);
    if (o.target == "phi") {
        if (!rep)
            throw Error("probe target \"phi\": the task has no representation Φ* (task.kind " + cfg.task.kind + ")");
        const torch::Tensor f = taskRepresentations(cfg.task)[0](p.x.to(torch::kFloat64)).to(p.x.scalar_type());
        return query ? f.narrow(1, N, 1) : f.narrow(1, 0, N);
    }
    if (o.target == "oracle" || o.target.rfind("gd_", 0) == 0) {
        if (o.target == "oracle" && !rep)
            throw Error("probe target \"oracle\": needs a representation task");
        const std::string name = o.target == "oracle" ? "oracle_ridge_phi" : o.target;
        if (name != "oracle_ridge_phi" && !fitted.eta.count(name))
            throw Error("probe target \"" + o.target + "\": no fitted step size (add it to eval.gd_steps)");
        std::vector<torch::Tensor> cols;
        const int64_t first = query ? N : 0, last = query ? N : N - 1;
        for (int64_t i = first; i <= last; ++i)  // prediction of y_{i+1} from the first i examples
            cols.push_back(i == 0 ? torch::zeros({p.batchSize()}, p.x.options())
                                  : predictBaseline(name, upTo(p, i), cfg, fitted).to(p.x.scalar_type()));
        return torch::stack(cols, 1).unsqueeze(-1);
    }
    throw Error("probe target \"" + o.target + "\": expected x, phi, y, oracle or gd_k");
}

} // namespace

ProbeCurve computeProbe(const std::string& path, const ProbeOptions& o)
{
    if (o.positions != "x" && o.positions != "y" && o.positions != "query")
        throw Error("probe positions \"" + o.positions + "\": expected x, y or query");
    if (o.n_fit < 8 || o.n_test < 8)
        throw Error("probe: expected at least 8 fit and 8 test prompts");
    configureThreads(o.threads);
    LoadedRun run = loadRun(path, o.checkpoint_step);
    auto gpt = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module);
    if (!gpt)
        throw Error(path + ": probes read the residual stream of a gpt2 model; this run has " + run.config.model.kind);
    const ExperimentConfig& cfg = run.config;
    const int64_t N = cfg.task.n_context, L = cfg.model.n_layers;

    auto layersAndTargets = [&](int64_t n, uint64_t stream) {
        const PromptBatch p = samplePrompts(cfg.task, n, o.seed == 0 ? mixSeed(cfg.seed, stream) : mixSeed(o.seed, stream));
        ActivationCapture capture;
        capture.names.insert(actName(Act::Embed));
        for (int64_t l = 0; l < L; ++l)
            capture.names.insert(actName(Act::ResidPost, l));
        {
            torch::NoGradGuard guard;
            gpt->predictAll(p, &capture);
        }
        // token index of each probed position: x_i at 2i, y_i at 2i + 1, the query at 2N
        torch::Tensor idx = o.positions == "x" ? torch::arange(0, 2 * N, 2)
                            : o.positions == "y" ? torch::arange(1, 2 * N, 2)
                                                 : torch::full({1}, 2 * N, torch::kLong);
        std::vector<torch::Tensor> layers;
        for (int64_t l = -1; l < L; ++l) {
            const torch::Tensor r = capture.values.at(l < 0 ? actName(Act::Embed) : actName(Act::ResidPost, l));
            const torch::Tensor sel = r.index_select(1, idx);  // [B, P, D]
            layers.push_back(sel.reshape({-1, sel.size(2)}).to(torch::kFloat64));
        }
        const torch::Tensor t = targetsFor(o, p, cfg, run.fitted);
        return std::make_pair(layers, t.reshape({-1, t.size(2)}).to(torch::kFloat64));
    };
    const auto [fitLayers, fitTargets] = layersAndTargets(o.n_fit, 0x9B0E0001);
    const auto [testLayers, testTargets] = layersAndTargets(o.n_test, 0x9B0E0002);
    const auto scores = probeLayers(fitLayers, fitTargets, testLayers, testTargets);
    ProbeCurve c = makeProbeCurve(o.target, o.positions, scores, fitTargets.size(0), testTargets.size(0));
    c.checkpoint_step = run.step;
    if (o.store) {
        nlohmann::json result = {{"target", c.target},         {"positions", c.positions},
                                 {"layers", c.layer_labels},    {"normalized_mse", c.normalised_mse},
                                 {"lambda", c.lambda},          {"n_fit", c.n_fit},
                                 {"n_test", c.n_test}};
        nlohmann::json opts = {{"target", o.target}, {"positions", o.positions}, {"n_fit", o.n_fit},
                               {"n_test", o.n_test}, {"seed", o.seed}};
        storeAnalysis(path, "probe", run.step, o.seed, opts.dump(), result.dump());
    }
    return c;
}

} // namespace icl
