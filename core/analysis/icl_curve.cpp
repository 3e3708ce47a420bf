#include "core/analysis/icl_curve.h"

#include <ATen/CPUGeneratorImpl.h>

#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/kinds.h"
#include "core/tasks/prompts.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/runtime/blas.h"
#include "core/training/checkpoint.h"
#include "core/runtime/device.h"
#include "core/tasks/seeds.h"

namespace icl {

namespace {

/// Mean of per-prompt losses [P] and the 2.5/97.5 percentiles of `resamples` bootstrap means.
IclCurveSeries* seriesFor(IclCurve& curve, const std::string& name)
{
    for (auto& s : curve.series)
        if (s.name == name)
            return &s;
    curve.series.push_back({name, {}, {}, {}});
    return &curve.series.back();
}

void addPoint(IclCurveSeries& s, const torch::Tensor& losses, const torch::Tensor& resampleIdx)
{
    const torch::Tensor l = losses.to(torch::kFloat64);
    s.error.push_back(l.mean().item<double>());
    if (!resampleIdx.defined()) {
        s.ci_lower.push_back(s.error.back());
        s.ci_upper.push_back(s.error.back());
        return;
    }
    // resampleIdx holds the bootstrap counts [R, P]: each row's resampled mean is counts·l / P.
    const torch::Tensor means = torch::matmul(resampleIdx, l) / double(l.size(0));  // [R]
    const torch::Tensor sorted = std::get<0>(means.sort());
    const int64_t R = sorted.size(0);
    s.ci_lower.push_back(sorted[std::min<int64_t>(R - 1, int64_t(0.025 * R))].item<double>());
    s.ci_upper.push_back(sorted[std::min<int64_t>(R - 1, int64_t(0.975 * R))].item<double>());
}

} // namespace

/// Bootstrap counts [R, P]: row r counts how often each of P prompts is drawn in resample r.
torch::Tensor bootstrapCounts(int64_t resamples, int64_t P, uint64_t seed)
{
    if (resamples <= 0)
        return {};
    auto gen = at::detail::createCPUGenerator(seed);
    const torch::Tensor idx
        = torch::randint(P, {resamples, P}, gen, torch::TensorOptions().dtype(torch::kLong));
    return torch::zeros({resamples, P}, torch::kFloat64)
        .scatter_add_(1, idx, torch::ones({resamples, P}, torch::kFloat64));
}

IclCurve computeIclCurve(const std::string& path, const IclCurveOptions& options,
                         const std::function<bool(int64_t, int64_t)>& progress,
                         const std::function<void(const IclCurve&)>& preview)
{
    const RunSummary summary = readRunSummary(path);
    if (summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    const ExperimentConfig cfg = parseConfig(parseBoundedJson(summary.config_json, path + ": /config"));
    if (kindOf(cfg.task) == TaskKind::FewshotClassification)
        throw Error(path + ": a few-shot classification run (Chan et al.); the ICL curve is for the regression tasks "
                    "(use the ICL vs IWL evaluation)");
    checkModelMemory(cfg, MemoryBudget(path));  // the run file's config sizes the model (eval --max-memory)
    const int64_t step = checkpointToRead(summary, options.checkpoint_step);
    CheckpointData cp = readCheckpoint(path, step, CheckpointParts::ParamsOnly);
    configureThreads(options.threads);
    torch::NoGradGuard guard;

    ModelHandle model = makeModel(cfg, 0);
    loadParams(*model.module, cp.params, path + " (checkpoint " + std::to_string(step) + ")");
    model.module->eval();

    // GD step sizes as fitted during training (same η the loss curves used).
    const FittedBaselines fitted = fittedOrRefit(cfg, summary.metrics);

    const int64_t nPrompts = options.n_prompts > 0 ? options.n_prompts : cfg.eval.n_prompts;
    const PromptBatch prompts = samplePrompts(
        cfg.task, nPrompts, options.seed == 0 ? seeds::eval(cfg.seed) : mixSeed(options.seed, 1));
    const int64_t N = cfg.task.n_context;
    const auto names = baselineNames(cfg.eval);

    // After n examples the query is x_{n+1} (Garg et al.'s per-position evaluation), so a causal model
    // (gpt2) gives every point of the curve from one forward pass over the whole prompts: its
    // prediction at the x_{n+1} token sees exactly the n examples before it. Other models (lsa) run
    // once per n on the first n + 1 points. Chunks of prompts keep memory flat and cancel responsive.
    // A causal model also predicts y_1 from x_1 alone (n = 0, the start of Garg et al.'s Fig. 2) on the tasks
    // whose w is zero-mean, where every baseline's prediction from no example is 0; LSA curves start at n = 1.
    const TaskKind task = kindOf(cfg.task);
    const bool zeroMeanW = task != TaskKind::SineRegression;
    const int64_t firstN = model.predict_all && zeroMeanW ? 0 : 1;
    const int64_t chunk = 64, nChunks = model.predict_all ? (nPrompts + chunk - 1) / chunk : 0;
    const bool withPreview = preview && nPrompts > chunk;
    const int64_t total = nChunks + (withPreview ? 2 : 1) * (N + 1 - firstN);
    int64_t done = 0;
    auto tick = [&] {
        if (progress && !progress(done++, total))
            throw Error("cancelled");
    };

    // The curve over the first P prompts; `all` [P, N+1] holds a causal model's predictions.
    auto curveOf = [&](int64_t P, const torch::Tensor& all, const torch::Tensor& resampleIdx) {
        IclCurve curve;
        curve.checkpoint_step = step;
        curve.n_prompts = P;
        curve.loss_name = "0.5·squared error";
        const PromptBatch used = P == nPrompts ? prompts : prompts.slice(0, P);
        for (int64_t n = firstN; n <= N; ++n) {
            tick();
            const PromptBatch b = used.firstPoints(n);
            const torch::Tensor y = b.queryY().to(torch::kFloat64);
            curve.n_examples.push_back(n);
            auto lossOf = [&](const torch::Tensor& pred) { return 0.5 * (pred.to(torch::kFloat64) - y).pow(2); };
            addPoint(*seriesFor(curve, "model"), lossOf(all.defined() ? all.select(1, n) : model.predict(b)),
                     resampleIdx);
            // With no example every baseline returns the prior mean of y given x, 0 (w is zero-mean).
            // The baselines are many small per-prompt kernels: one thread (core/runtime/blas.h).
            const ScopedThreads oneThread(1);
            for (const auto& name : names)
                addPoint(*seriesFor(curve, name),
                         lossOf(n == 0 ? torch::zeros_like(y) : predictBaseline(name, b, cfg, fitted)), resampleIdx);
        }
        return curve;
    };

    torch::Tensor all;  // [P, N+1] causal predictions
    if (model.predict_all) {
        std::vector<torch::Tensor> parts;
        for (int64_t c = 0; c < nChunks; ++c) {
            tick();
            parts.push_back(model.predict_all(prompts.slice(c * chunk, std::min(nPrompts, (c + 1) * chunk))));
            if (c == 0 && withPreview)  // a first look on the first chunk's prompts
                preview(curveOf(chunk, parts.front().to(torch::kFloat64),
                                bootstrapCounts(cfg.eval.bootstrap, chunk, mixSeed(options.seed, 4))));
        }
        all = torch::cat(parts, 0).to(torch::kFloat64);
    } else if (withPreview) {  // a first look on the first prompts, then every prompt
        preview(curveOf(chunk, torch::Tensor(), bootstrapCounts(cfg.eval.bootstrap, chunk, mixSeed(options.seed, 4))));
    }
    IclCurve curve = curveOf(nPrompts, all, bootstrapCounts(cfg.eval.bootstrap, nPrompts, mixSeed(options.seed, 3)));
    if (progress)
        progress(total, total);

    if (options.store) {
        nlohmann::json result, opts;
        result["n_examples"] = curve.n_examples;
        for (const auto& s : curve.series)
            result["series"][s.name] = {{"error", s.error}, {"ci_lower", s.ci_lower}, {"ci_upper", s.ci_upper}};
        opts = {{"n_prompts", nPrompts}, {"seed", options.seed}, {"checkpoint_step", step}};
        storeAnalysis(path, "icl_curve", step, options.seed, opts.dump(), result.dump());
    }
    return curve;
}

} // namespace icl
