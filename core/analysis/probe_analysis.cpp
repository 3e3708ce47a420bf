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
#include "core/tasks/prompts.h"
#include "core/runtime/blas.h"
#include "core/runtime/device.h"
#include "core/tasks/seeds.h"

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
    return computeProbes(path, o, {o.target}).at(0);
}

std::vector<ProbeCurve> computeProbes(const std::string& path, const ProbeOptions& o,
                                      const std::vector<std::string>& targets, std::vector<std::string>* errors,
                                      const std::function<bool(int64_t, int64_t)>& progress,
                                      const std::function<void(const std::vector<ProbeCurve>&)>& first_look)
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
    const int64_t chunk = kProbeFirstLookPrompts;
    auto prompts = [&](int64_t n, uint64_t stream) {
        return samplePrompts(cfg.task, n, o.seed == 0 ? mixSeed(cfg.seed, stream) : mixSeed(o.seed, stream));
    };
    const PromptBatch fitP = prompts(o.n_fit, 0x9B0E0001), testP = prompts(o.n_test, 0x9B0E0002);
    const int64_t chunks = (o.n_fit + chunk - 1) / chunk + (o.n_test + chunk - 1) / chunk;
    const int64_t total = chunks + 1;  // the forward chunks, then the probes
    int64_t done = 0;
    auto step = [&] {
        if (progress && !progress(done, total))
            throw Error("cancelled");
        ++done;
    };

    // token index of each probed position: x_i at 2i, y_i at 2i + 1, the query at 2N
    const torch::Tensor idx = o.positions == "x" ? torch::arange(0, 2 * N, 2)
                              : o.positions == "y" ? torch::arange(1, 2 * N, 2)
                                                   : torch::full({1}, 2 * N, torch::kLong);
    // The residual stream of every layer (embed, resid_post.{l}) at the probed positions of prompts
    // [begin, end), in forward passes of `chunk` prompts: L + 1 tensors [(end − begin)·P, D] float64.
    auto layersOf = [&](const PromptBatch& p, int64_t begin, int64_t end) {
        std::vector<std::vector<torch::Tensor>> parts(static_cast<size_t>(L + 1));
        for (int64_t b = begin; b < end; b += chunk) {
            step();
            ActivationCapture capture;
            capture.names.insert(actName(Act::Embed));
            for (int64_t l = 0; l < L; ++l)
                capture.names.insert(actName(Act::ResidPost, l));
            {
                torch::NoGradGuard guard;
                gpt->predictAll(p.slice(b, std::min(end, b + chunk)), &capture);
            }
            for (int64_t l = -1; l < L; ++l) {
                const torch::Tensor r = capture.values.at(l < 0 ? actName(Act::Embed) : actName(Act::ResidPost, l));
                const torch::Tensor sel = r.index_select(1, idx);  // [b, P, D]
                parts[static_cast<size_t>(l + 1)].push_back(sel.reshape({-1, sel.size(2)}).to(torch::kFloat64));
            }
        }
        std::vector<torch::Tensor> layers;
        for (const auto& pieces : parts)
            layers.push_back(torch::cat(pieces, 0));
        return layers;
    };
    auto flat = [](const torch::Tensor& t) { return t.reshape({-1, t.size(2)}).to(torch::kFloat64); };
    // Every target's probes on the given activations (one cross-validation per layer shared by all
    // targets); a target whose values cannot be computed goes to `failed` (or is thrown).
    auto fit = [&](const std::vector<torch::Tensor>& fitLayers, const PromptBatch& fitPrompts,
                   const std::vector<torch::Tensor>& testLayers, const PromptBatch& testPrompts,
                   std::vector<std::string>* failed) {
        // Hundreds of small kernels (the baselines' per-position fits, the 5 folds × 10 penalties of
        // every layer): one thread, no worker wake-ups (core/runtime/blas.h).
        const ScopedThreads oneThread(1);
        std::vector<std::string> names;
        std::vector<torch::Tensor> fitTargets, testTargets;
        for (const std::string& target : targets) {
            ProbeOptions ot = o;
            ot.target = target;
            try {
                torch::Tensor ft = flat(targetsFor(ot, fitPrompts, cfg, run.fitted));
                torch::Tensor tt = flat(targetsFor(ot, testPrompts, cfg, run.fitted));
                names.push_back(target);
                fitTargets.push_back(ft);
                testTargets.push_back(tt);
            } catch (const Error& e) {
                if (!failed)
                    throw;
                failed->push_back(e.what());
            }
        }
        std::vector<ProbeCurve> curves;
        if (names.empty())
            return curves;
        const auto scores = probeLayersForTargets(fitLayers, fitTargets, testLayers, testTargets);
        for (size_t t = 0; t < names.size(); ++t) {
            ProbeCurve c = makeProbeCurve(names[t], o.positions, scores[t], fitTargets[t].size(0),
                                          testTargets[t].size(0));
            c.checkpoint_step = run.step;
            curves.push_back(std::move(c));
        }
        return curves;
    };

    const int64_t firstFit = std::min(o.n_fit, chunk), firstTest = std::min(o.n_test, chunk);
    std::vector<torch::Tensor> fitLayers = layersOf(fitP, 0, firstFit);
    std::vector<torch::Tensor> testLayers = layersOf(testP, 0, firstTest);
    if (first_look && (firstFit < o.n_fit || firstTest < o.n_test)) {
        std::vector<std::string> ignored;  // the full pass reports them
        first_look(fit(fitLayers, fitP.slice(0, firstFit), testLayers, testP.slice(0, firstTest), &ignored));
    }
    auto extend = [&](std::vector<torch::Tensor>& layers, const PromptBatch& p, int64_t begin, int64_t end) {
        if (begin >= end)
            return;
        const std::vector<torch::Tensor> rest = layersOf(p, begin, end);
        for (size_t l = 0; l < layers.size(); ++l)
            layers[l] = torch::cat({layers[l], rest[l]}, 0);
    };
    extend(fitLayers, fitP, firstFit, o.n_fit);
    extend(testLayers, testP, firstTest, o.n_test);
    step();
    std::vector<ProbeCurve> curves = fit(fitLayers, fitP, testLayers, testP, errors);
    if (progress)
        progress(total, total);
    if (o.store) {
        nlohmann::json opts = {{"positions", o.positions}, {"n_fit", o.n_fit}, {"n_test", o.n_test}, {"seed", o.seed}};
        for (const ProbeCurve& c : curves) {
            nlohmann::json result = {{"target", c.target},         {"positions", c.positions},
                                     {"layers", c.layer_labels},    {"normalized_mse", c.normalised_mse},
                                     {"lambda", c.lambda},          {"n_fit", c.n_fit},
                                     {"n_test", c.n_test}};
            opts["target"] = c.target;
            storeAnalysis(path, "probe", run.step, o.seed, opts.dump(), result.dump());
        }
    }
    return curves;
}

} // namespace icl
