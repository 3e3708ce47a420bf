#include "core/analysis/gd_alignment.h"

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include "core/metrics/alignment_metrics.h"
#include "core/models/lsa_construction.h"
#include "core/analysis/run_loader.h"
#include "core/io/kinds.h"
#include "core/models/lsa.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/types/number_format.h"
#include "core/tasks/prompts.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/training/checkpoint.h"
#include "core/runtime/device.h"
#include "core/tasks/seeds.h"

namespace icl {

AlignmentResult computeGdAlignment(const std::string& path, const GdAlignmentOptions& options)
{
    configureThreads(options.threads);
    LoadedRun run = loadRun(path, options.checkpoint_step);
    const ExperimentConfig& cfg = run.config;
    const int64_t step = run.step;

    // The reference: "gd_k" or "gdpp_k", fitted as during training (read back from the run's metrics
    // when it was a baseline there, else refitted on the same tuning prompts and seed).
    const std::string& ref = options.reference;
    const bool isGd = ref.rfind("gd_", 0) == 0, isGdpp = ref.rfind("gdpp_", 0) == 0,
               isFeatures = ref.rfind("features_gd_", 0) == 0;
    const std::string digits = isGd ? ref.substr(3) : isGdpp ? ref.substr(5) : isFeatures ? ref.substr(12) : "";
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos
        || std::stoll(digits) < 1 || std::stoll(digits) > 100 || (isGdpp && std::stoll(digits) < 2))
        throw Error("reference \"" + ref + "\": expected gd_k (k GD steps, 1 <= k <= 100), gdpp_k (k GD++ layers, "
                    "2 <= k <= 100; a one-layer model has no GD++ reference) or features_gd_k");
    if (isFeatures && cfg.model.feature_dim == 0)
        throw Error("reference \"" + ref + "\": GD on meta-learned features needs a model with a feature MLP "
                    "(model.feature_dim > 0)");
    ExperimentConfig refCfg = cfg;
    refCfg.eval.baselines = {isGd ? "gd" : isGdpp ? "gd_plus_plus" : "features_gd"};
    refCfg.eval.gd_steps = {std::stoll(digits)};
    FittedBaselines fitted = run.fitted;
    if (!fitted.eta.count(ref) && !fitted.gdpp.count(ref) && !fitted.features_gd.count(ref)) {
        const PromptBatch tuning = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
        fitted = fitBaselines(refCfg, tuning, seeds::tuning(cfg.seed));
    }
    const double eta = isGdpp ? std::nan("") : isFeatures ? fitted.features_gd.at(ref).eta : fitted.eta.at(ref);

    const ModelHandle& model = run.model;
    const int64_t n = options.n_prompts > 0 ? options.n_prompts : cfg.eval.n_prompts;
    const PromptBatch prompts
        = samplePrompts(cfg.task, n, options.seed == 0 ? seeds::eval(cfg.seed) : options.seed);

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

namespace {

std::shared_ptr<LsaImpl> lsaOf(const LoadedRun& run, const std::string& path)
{
    auto lsa = std::dynamic_pointer_cast<LsaImpl>(run.model.module);
    if (!lsa)
        throw Error(path + ": this analysis needs an lsa model, the run has " + run.config.model.kind);
    return lsa;
}

/// The LSA of a run when it is the plain model of Proposition 1 (the GD construction exists only for it).
std::shared_ptr<LsaImpl> plainLsaOf(const LoadedRun& run, const std::string& path, const std::string& analysis)
{
    auto lsa = lsaOf(run, path);
    if (!lsa->options().plain())
        throw Error(path + ": " + analysis + " compares with the GD construction (Proposition 1), which exists for "
                    "the plain LSA on the pair layout only (no softmax, LayerNorm, MLP, positions or features)");
    return lsa;
}

double lossOf(const torch::Tensor& pred, const PromptBatch& b)
{
    return halfMse(pred.to(torch::kFloat64), b.queryY().to(torch::kFloat64)).item<double>();
}

/// Read-outs after each layer of an LSA: [K] tensors of query predictions [B].
std::vector<torch::Tensor> layerReadouts(LsaImpl& lsa, const PromptBatch& b)
{
    LsaCapture capture;
    lsa.forward(lsa.embed(b), lsa.contextTokens(b.nContext()), &capture);
    std::vector<torch::Tensor> out;
    for (const auto& r : capture.resid_post)
        out.push_back(lsa.readout(r));
    return out;
}

Matrix toMatrix(const std::string& name, const torch::Tensor& t)
{
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat64).contiguous();
    Matrix m;
    m.name = name;
    m.rows = c.size(0);
    m.cols = c.size(1);
    m.data.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    for (int64_t i = 0; i < m.rows; ++i)
        m.row_labels.push_back(i + 1 < m.rows ? "x" + std::to_string(i + 1) : "y");
    m.col_labels = m.row_labels;
    return m;
}

} // namespace

EtaScan computeEtaScan(const std::string& path, int64_t checkpoint_step, int64_t k, double eta_max, int64_t points,
                       bool store)
{
    if (k < 1 || k > 1000 || points < 2 || !(eta_max > 0))
        throw Error("eta-scan: expected 1 <= k <= 1000, points >= 2 and eta_max > 0");
    LoadedRun run = loadRun(path, checkpoint_step);
    torch::NoGradGuard guard;
    const PromptBatch prompts = samplePrompts(run.config.task, run.config.eval.n_prompts,
                                                       seeds::eval(run.config.seed));
    EtaScan s;
    s.k = k;
    s.checkpoint_step = run.step;
    // Every grid point from one eigendecomposition per prompt (GdSpectrum: predictGd in closed form, equal
    // to iterating it up to rounding) instead of `points` iterated GD runs over all prompts.
    const GdSpectrum spectrum(prompts);
    for (int64_t i = 0; i < points; ++i) {
        const double eta = eta_max * double(i) / double(points - 1);
        s.eta.push_back(eta);
        s.loss.push_back(spectrum.loss(k, eta));
    }
    s.best_eta = lineSearchEta(prompts, k, 0.0, eta_max);
    s.best_loss = lossOf(predictGd(prompts, k, s.best_eta), prompts);
    s.model_loss = lossOf(run.model.predict(prompts), prompts);
    const auto fitted = run.fitted.eta.find("gd_" + std::to_string(k));
    if (fitted != run.fitted.eta.end() && std::isfinite(fitted->second)) {
        s.fitted_eta = fitted->second;
        s.fitted_loss = spectrum.loss(k, s.fitted_eta);
    }
    if (store) {
        nlohmann::json result = {{"k", k}, {"eta", s.eta}, {"loss", s.loss}, {"best_eta", s.best_eta},
                                 {"best_loss", s.best_loss}, {"model_loss", s.model_loss}};
        nlohmann::json opts = {{"k", k}, {"eta_max", eta_max}, {"points", points}};
        storeAnalysis(path, "eta_scan", run.step, run.config.seed, opts.dump(), result.dump());
    }
    return s;
}

std::vector<LayerStepRow> compareLayersWithSteps(const std::string& path, int64_t checkpoint_step, bool with_gdpp)
{
    LoadedRun run = loadRun(path, checkpoint_step);
    auto lsa = lsaOf(run, path);
    const ExperimentConfig& cfg = run.config;
    const PromptBatch prompts = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::eval(cfg.seed));
    const PromptBatch tuning = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
    std::vector<LayerStepRow> rows;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t k = 1; k <= lsa->nLayers(); ++k) {
        LayerStepRow row;
        row.layer = k;
        const Predictor readout = [&, k](const PromptBatch& b) { return layerReadouts(*lsa, b)[size_t(k - 1)]; };
        auto fitIt = run.fitted.eta.find("gd_" + std::to_string(k));
        const double eta = fitIt != run.fitted.eta.end() ? fitIt->second
                                                         : (k == 1 ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, k));
        // The layer's read-out and its sensitivities are computed once for both references.
        std::vector<Predictor> refs{[&](const PromptBatch& b) { return predictGd(b, k, eta); }};
        torch::Tensor e, g;
        if (with_gdpp && k > 1) {
            const std::string name = "gdpp_" + std::to_string(k);
            auto it = run.fitted.gdpp.find(name);
            const GdPlusPlusParams p = it != run.fitted.gdpp.end() ? it->second
                                                                   : fitGdPlusPlus(cfg.task, k, seeds::tuning(cfg.seed), cfg.eval.gdpp_tied);
            e = torch::tensor(p.eta, torch::kFloat64);
            g = torch::tensor(p.gamma, torch::kFloat64);
            refs.push_back([&](const PromptBatch& b) { return predictGdPlusPlus(b, e, g); });
        }
        const std::vector<AlignmentMetrics> m = alignmentMetricsAgainst(readout, refs, prompts);
        row.vs_gd = m[0];
        row.model_loss = row.vs_gd.model_loss;
        row.gd_loss = row.vs_gd.reference_loss;
        row.vs_gdpp = {nan, nan, nan, nan, nan, nan};
        if (m.size() > 1) {
            row.vs_gdpp = m[1];
            row.gdpp_loss = row.vs_gdpp.reference_loss;
        }
        rows.push_back(row);
    }
    return rows;
}

std::vector<LsaWeightView> lsaWeightViews(const std::string& path, int64_t checkpoint_step)
{
    LoadedRun run = loadRun(path, checkpoint_step);
    auto lsa = plainLsaOf(run, path, "the weight view");
    torch::NoGradGuard guard;
    const int64_t K = lsa->nLayers(), N = run.config.task.n_context, D = lsa->tokenDim();
    auto etaIt = run.fitted.eta.find("gd_" + std::to_string(K));
    const double eta = etaIt != run.fitted.eta.end() ? etaIt->second : 1.0;
    Lsa construction(D, K, 1, false);
    construction->to(torch::kFloat64);
    applyGdConstruction(*construction, eta, N);
    std::vector<LsaWeightView> out;
    const int64_t blocks = lsa->tied() ? 1 : K;
    for (int64_t l = 0; l < blocks; ++l) {
        const LsaLayerWeights& w = lsa->layer(l);
        const LsaLayerWeights& c = construction->layer(l);
        auto kq = [](const LsaLayerWeights& x) { return torch::einsum("hed,hef->df", {x.w_k, x.w_q}); };
        auto pv = [](const LsaLayerWeights& x) { return torch::einsum("hfe,hed->fd", {x.w_o, x.w_v}); };
        LsaWeightView v;
        v.layer = l + 1;
        // Labels in the figure style: Unicode ᵀ, subscripts as _K, _Q, _V (Unicode has no subscript Q), 4 digits.
        v.learned_kq = toMatrix("learned W_KᵀW_Q (layer " + std::to_string(l + 1) + ")", kq(w));
        v.learned_pv = toMatrix("learned P·W_V (layer " + std::to_string(l + 1) + ")", pv(w));
        v.construction_kq = toMatrix("GD construction W_KᵀW_Q", kq(c));
        v.construction_pv = toMatrix("GD construction P·W_V (η = " + formatSignificant(eta) + ")", pv(c));
        out.push_back(std::move(v));
    }
    return out;
}

OodCurve computeOod(const std::string& path, int64_t checkpoint_step, const std::string& kind,
                    std::vector<double> alpha, int64_t n_prompts, bool store)
{
    static const std::vector<std::string> kinds = {"x_scale", "w_scale", "label_noise", "depth"};
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end())
        throw Error("ood: unknown kind \"" + kind + "\" (expected x_scale, w_scale, label_noise or depth)");
    LoadedRun run = loadRun(path, checkpoint_step);
    const ExperimentConfig& cfg = run.config;
    if (alpha.empty()) {
        if (kind == "depth") {
            for (int64_t k = 1; k <= 2 * cfg.model.n_layers + 2; ++k)
                alpha.push_back(double(k));
        } else if (kind == "label_noise") {
            alpha = {0.0, 0.1, 0.25, 0.5, 0.75, 1.0};
        } else {
            alpha = {0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0};
        }
    }
    for (double a : alpha) {
        const bool ok = kind == "depth" ? (a >= 1 && a <= 1000 && a == std::floor(a))
                        : kind == "label_noise" ? (a >= 0 && a <= 1e6)
                                                : (a > 0 && a <= 1e6);
        if (!ok)
            throw Error("ood " + kind + ": α = " + nlohmann::json(a).dump() + " is out of range ("
                        + (kind == "depth" ? "an integer number of layers in [1, 1000]"
                           : kind == "label_noise" ? "a noise level >= 0" : "a scale > 0") + ")");
    }
    std::shared_ptr<LsaImpl> lsa;
    if (kind == "depth") {
        lsa = lsaOf(run, path);
        if (!lsa->tied())
            throw Error("ood depth: iterating beyond the training depth needs a tied (recurrent) LSA; this model is untied");
    }
    if (kind == "w_scale" && kindOf(cfg.task) == TaskKind::SineRegression)
        throw Error("ood w_scale: sine_regression has no task vector w (amplitude and phase instead)");
    torch::NoGradGuard guard;
    // K GD steps for K linear layers; softmax layers (the interleaved copy layer) do no GD step.
    const int64_t K = std::max<int64_t>(1, cfg.model.n_layers - cfg.model.softmax_layers);
    auto etaFor = [&](int64_t k) {
        auto it = run.fitted.eta.find("gd_" + std::to_string(k));
        if (it != run.fitted.eta.end())
            return it->second;
        const PromptBatch tuning = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
        return k == 1 ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, k);
    };
    OodCurve c;
    c.kind = kind;
    c.alpha = alpha;
    c.checkpoint_step = run.step;
    const double trainedEta = etaFor(K);
    for (size_t i = 0; i < alpha.size(); ++i) {
        const double a = alpha[i];
        TaskConfig task = cfg.task;
        if (kind == "x_scale")
            task.x_range = a * cfg.task.x_range;  // U(−α·r, α·r): α = 1 is the training distribution
        if (kind == "w_scale")
            task.w_scale = a * cfg.task.w_scale;
        // Common random numbers: every α uses the same underlying draws (scaled), so rows differ only by α.
        PromptBatch b = samplePrompts(task, n_prompts, mixSeed(cfg.seed, 777));
        if (kind == "x_scale" && task.x_distribution == "normal") {
            if (kindOf(cfg.task) == TaskKind::SineRegression)
                throw Error("ood x_scale: needs uniform inputs for sine_regression");
            b.x = b.x * a, b.y = b.y * a;  // y is positively homogeneous in x (linear, or bias-free leaky ReLU Φ*)
        }
        if (kind == "label_noise") {
            auto gen = at::detail::createCPUGenerator(mixSeed(cfg.seed, 999));
            torch::Tensor noise = a * torch::randn({n_prompts, cfg.task.n_context}, gen, b.y.options());
            b.y = b.y.clone();
            b.y.narrow(1, 0, cfg.task.n_context).add_(noise);
        }
        torch::Tensor pred;
        int64_t gdSteps = K;
        double eta = trainedEta;
        if (kind == "depth") {
            gdSteps = int64_t(a);
            if (gdSteps < 1 || double(gdSteps) != a)
                throw Error("ood depth: α must be an integer number of layers >= 1, got " + std::to_string(a));
            LsaOptions deeper = lsa->options();
            deeper.n_layers = gdSteps;
            deeper.softmax_layers = deeper.softmax_layers > 0 ? gdSteps : 0;
            Lsa iterated(deeper);
            loadParams(*iterated, paramsToArrays(*lsa), path);
            pred = iterated->predict(b);
            eta = trainedEta;  // the GD comparison keeps the η of the trained depth, as the layer does
        } else {
            pred = run.model.predict(b);
        }
        c.model_loss.push_back(lossOf(pred, b));
        c.gd_loss.push_back(lossOf(predictGd(b, gdSteps, eta), b));
        c.least_squares_loss.push_back(lossOf(predictLeastSquares(b), b));
        c.zero_loss.push_back(lossOf(predictZero(b), b));
    }
    if (store) {
        nlohmann::json result = {{"kind", kind},     {"alpha", c.alpha}, {"model_loss", c.model_loss},
                                 {"gd_loss", c.gd_loss}, {"least_squares_loss", c.least_squares_loss},
                                 {"zero_loss", c.zero_loss}};
        nlohmann::json opts = {{"kind", kind}, {"alpha", alpha}, {"n_prompts", n_prompts}};
        storeAnalysis(path, "ood", run.step, cfg.seed, opts.dump(), result.dump());
    }
    return c;
}

InterpolationCurve computeInterpolation(const std::string& path, int64_t checkpoint_step, int64_t points)
{
    if (points < 2)
        throw Error("interpolation: expected at least 2 points");
    LoadedRun run = loadRun(path, checkpoint_step);
    auto lsa = plainLsaOf(run, path, "the interpolation");
    torch::NoGradGuard guard;
    const ExperimentConfig& cfg = run.config;
    const int64_t K = lsa->nLayers();
    auto etaIt = run.fitted.eta.find("gd_" + std::to_string(K));
    const PromptBatch prompts = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::eval(cfg.seed));
    const double eta = etaIt != run.fitted.eta.end() ? etaIt->second : lineSearchEta(prompts, K);
    if (lsa->nHeads() != 1)
        throw Error("interpolation: defined for one-head LSA models (this one has " + std::to_string(lsa->nHeads())
                    + " heads)");
    Lsa construction(lsa->tokenDim(), K, 1, lsa->tied());
    applyGdConstruction(*construction, eta, cfg.task.n_context);
    Lsa mixed(lsa->tokenDim(), K, 1, lsa->tied());
    const int64_t D = lsa->tokenDim(), blocks = lsa->tied() ? 1 : K;
    const torch::Tensor eye = torch::eye(D).unsqueeze(0);
    InterpolationCurve c;
    c.checkpoint_step = run.step;
    for (int64_t i = 0; i < points; ++i) {
        const double t = double(i) / double(points - 1);
        for (int64_t l = 0; l < blocks; ++l) {
            const LsaLayerWeights& a = lsa->layer(l);
            const LsaLayerWeights& b = construction->layer(l);
            LsaLayerWeights& m = mixed->layer(l);
            // The pair (W_KᵀW_Q, P·W_V) is defined up to (c·A, B/c), sign included: first pick the c
            // that brings the trained W_KᵀW_Q closest to the construction's (least squares in c).
            const torch::Tensor kqA = torch::matmul(a.w_k.transpose(1, 2), a.w_q);
            const torch::Tensor kqB = torch::matmul(b.w_k.transpose(1, 2), b.w_q);
            const double norm = kqA.pow(2).sum().item<double>();
            const double scale = norm > 0 ? (kqA * kqB).sum().item<double>() / norm : 1.0;
            const double cs = std::abs(scale) > 1e-12 ? scale : 1.0;
            // W_KᵀW_Q goes into W_Q with W_K = I; P·W_V into W_V with P = I.
            m.w_q.copy_((1.0 - t) * cs * kqA + t * kqB);
            m.w_k.copy_(eye);
            m.w_v.copy_((1.0 - t) / cs * torch::matmul(a.w_o, a.w_v) + t * torch::matmul(b.w_o, b.w_v));
            m.w_o.copy_(eye);
        }
        c.t.push_back(t);
        c.loss.push_back(lossOf(mixed->predict(prompts), prompts));
    }
    c.gd_loss = lossOf(predictGd(prompts, K, eta), prompts);
    return c;
}

} // namespace icl

namespace icl {

CopyAnalysis computeCopyAnalysis(const std::string& path, int64_t checkpoint_step, int64_t n_prompts, bool store)
{
    if (n_prompts < 1 || n_prompts > 100000)
        throw Error("copy analysis: expected 1 <= n_prompts <= 100000");
    LoadedRun run = loadRun(path, checkpoint_step);
    auto lsa = lsaOf(run, path);
    if (!lsa->options().interleaved)
        throw Error(path + ": the copy analysis needs the interleaved layout (task.layout = \"interleaved\"), "
                    "this run uses \"" + run.config.task.layout + "\"");
    const ExperimentConfig& cfg = run.config;
    const PromptBatch prompts = samplePrompts(cfg.task, n_prompts, seeds::eval(cfg.seed));
    CopyAnalysis a = summariseCopy(copyGradientNorms(*lsa, prompts), cfg.task.n_context);
    a.checkpoint_step = run.step;
    a.n_prompts = n_prompts;
    if (store) {
        nlohmann::json result = {{"own", a.own},
                                 {"next", a.next},
                                 {"other", a.other},
                                 {"own_next_ratio", a.ownNextRatio()},
                                 {"next_other_ratio", a.nextOtherRatio()},
                                 {"tokens", a.tokens},
                                 {"gradient_norm", a.gradient_norm}};
        nlohmann::json opts = {{"n_prompts", n_prompts}, {"layer", 1}};
        storeAnalysis(path, "copy", run.step, cfg.seed, opts.dump(), result.dump());
    }
    return a;
}

} // namespace icl
