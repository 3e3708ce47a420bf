#include "core/analysis/gd_alignment.h"

#include <nlohmann/json.hpp>

#include "core/analysis/gd_alignment_impl.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/training/checkpoint.h"
#include "core/training/device.h"
#include "core/training/seeds.h"

namespace icl {

std::pair<torch::Tensor, torch::Tensor> predictionsAndSensitivities(const Predictor& predict, const PromptBatch& batch)
{
    torch::AutoGradMode enable(true);
    torch::Tensor xq = batch.queryX().detach().clone().requires_grad_(true);
    torch::Tensor x = torch::cat({batch.contextX().detach(), xq.unsqueeze(1)}, 1);
    const PromptBatch b{x, batch.y, batch.w};
    torch::Tensor pred = predict(b);
    // Prompts are independent, so the gradient of the sum gives each prompt's own ∂ŷ/∂x_q.
    torch::Tensor grad = torch::autograd::grad({pred.sum()}, {xq}, {}, false, false, true)[0];
    if (!grad.defined())
        grad = torch::zeros_like(xq);
    return {pred.detach(), grad.detach()};
}

AlignmentMetrics alignmentMetrics(const Predictor& model, const Predictor& reference, const PromptBatch& batch,
                                  int64_t chunk, torch::Tensor* model_pred, torch::Tensor* ref_pred)
{
    const int64_t n = batch.batchSize();
    double predDiff = 0, cosine = 0, modelDiff = 0, refNorm = 0, modelLoss = 0, refLoss = 0;
    std::vector<torch::Tensor> mp, rp;
    for (int64_t b = 0; b < n; b += chunk) {
        const PromptBatch part = batch.slice(b, std::min(n, b + chunk));
        auto [ym, sm] = predictionsAndSensitivities(model, part);
        auto [yr, sr] = predictionsAndSensitivities(reference, part);
        ym = ym.to(torch::kCPU, torch::kFloat64);
        yr = yr.to(torch::kCPU, torch::kFloat64);
        sm = sm.to(torch::kCPU, torch::kFloat64);
        sr = sr.to(torch::kCPU, torch::kFloat64);
        const torch::Tensor y = part.queryY().to(torch::kCPU, torch::kFloat64);
        predDiff += (ym - yr).abs().sum().item<double>();
        const torch::Tensor nm = sm.norm(2, -1), nr = sr.norm(2, -1);
        cosine += ((sm * sr).sum(-1) / ((nm + 1e-8) * (nr + 1e-8))).sum().item<double>();
        modelDiff += (sm - sr).norm(2, -1).sum().item<double>();
        refNorm += nr.sum().item<double>();
        modelLoss += 0.5 * (ym - y).pow(2).sum().item<double>();
        refLoss += 0.5 * (yr - y).pow(2).sum().item<double>();
        mp.push_back(ym);
        rp.push_back(yr);
    }
    AlignmentMetrics m;
    m.prediction_difference = predDiff / double(n);
    m.model_cosine = cosine / double(n);
    m.model_difference = modelDiff / double(n);
    m.relative_model_difference = refNorm > 0 ? modelDiff / refNorm : 0.0;
    m.model_loss = modelLoss / double(n);
    m.reference_loss = refLoss / double(n);
    if (model_pred)
        *model_pred = torch::cat(mp);
    if (ref_pred)
        *ref_pred = torch::cat(rp);
    return m;
}

AlignmentResult computeGdAlignment(const std::string& path, const GdAlignmentOptions& options)
{
    const RunSummary summary = readRunSummary(path);
    if (summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    const ExperimentConfig cfg = parseConfig(nlohmann::json::parse(summary.config_json));
    const int64_t step = options.checkpoint_step < 0 ? summary.checkpoints.back().step : options.checkpoint_step;
    const CheckpointData cp = readCheckpoint(path, step);
    configureThreads(options.threads);

    // The reference: "gd_k" or "gdpp_k", fitted as during training (read back from the run's metrics
    // when it was a baseline there, else refitted on the same tuning prompts and seed).
    const std::string& ref = options.reference;
    const bool isGd = ref.rfind("gd_", 0) == 0, isGdpp = ref.rfind("gdpp_", 0) == 0;
    const std::string digits = isGd ? ref.substr(3) : isGdpp ? ref.substr(5) : "";
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || std::stoll(digits) < 1
        || (isGdpp && std::stoll(digits) < 2))
        throw Error("reference \"" + ref + "\": expected gd_k (k GD steps) or gdpp_k (k GD++ layers, k > 1)");
    ExperimentConfig refCfg = cfg;
    refCfg.eval.baselines = {isGd ? "gd" : "gd_plus_plus"};
    refCfg.eval.gd_steps = {std::stoll(digits)};
    FittedBaselines fitted = fittedFromMetrics(summary.metrics);
    if (!fitted.eta.count(ref) && !fitted.gdpp.count(ref)) {
        const PromptBatch tuning = sampleLinearRegression(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
        fitted = fitBaselines(refCfg, tuning, seeds::tuning(cfg.seed));
    }
    const double eta = isGd ? fitted.eta.at(ref) : std::nan("");

    ModelHandle model = makeModel(cfg, 0);
    loadParams(*model.module, cp.params, path + " (checkpoint " + std::to_string(step) + ")");
    model.module->eval();
    const int64_t n = options.n_prompts > 0 ? options.n_prompts : cfg.eval.n_prompts;
    const PromptBatch prompts
        = sampleLinearRegression(cfg.task, n, options.seed == 0 ? seeds::eval(cfg.seed) : options.seed);

    AlignmentResult r;
    r.reference = options.reference;
    r.reference_eta = eta;
    r.checkpoint_step = step;
    r.n_prompts = n;
    torch::Tensor mp, rp;
    r.metrics = alignmentMetrics(
        model.predict, [&](const PromptBatch& b) { return predictBaseline(ref, b, refCfg, fitted); }, prompts, 4096,
        &mp, &rp);
    const int64_t keep = std::min<int64_t>(2000, n);
    r.model_predictions.assign(mp.data_ptr<double>(), mp.data_ptr<double>() + keep);
    r.reference_predictions.assign(rp.data_ptr<double>(), rp.data_ptr<double>() + keep);

    if (options.store) {
        const AlignmentMetrics& m = r.metrics;
        nlohmann::json result = {{"reference", r.reference},
                                 {"reference_eta", eta},
                                 {"prediction_difference", m.prediction_difference},
                                 {"model_cosine", m.model_cosine},
                                 {"model_difference", m.model_difference},
                                 {"relative_model_difference", m.relative_model_difference},
                                 {"model_loss", m.model_loss},
                                 {"reference_loss", m.reference_loss}};
        nlohmann::json opts = {{"reference", options.reference}, {"n_prompts", n}, {"seed", options.seed}};
        storeAnalysis(path, "gd_alignment", step, options.seed, opts.dump(), result.dump());
    }
    return r;
}

} // namespace icl
