#include "core/analysis/kernel_view.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <nlohmann/json.hpp>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/analysis/kernel_attention.h"
#include "core/analysis/run_loader.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/models/lsa.h"
#include "core/tasks/prompts.h"
#include "core/runtime/device.h"
#include "core/tasks/seeds.h"

namespace icl {

namespace {

void checkOptions(const KernelViewOptions& o)
{
    if (o.n_prompts < 1 || o.n_prompts > 100000)
        throw Error("kernel view: expected 1 <= n_prompts <= 100000, got " + std::to_string(o.n_prompts));
    if (o.m.empty())
        throw Error("kernel view: the list of m (numbers of random features) is empty");
    for (int64_t m : o.m)
        if (m < 1 || m > (int64_t(1) << 20))
            throw Error("kernel view: every m must be in [1, 1048576], got " + std::to_string(m));
    if (o.seeds < 1 || o.seeds > 1000)
        throw Error("kernel view: expected 1 <= seeds <= 1000, got " + std::to_string(o.seeds));
    if (o.loss_steps < 0 || o.loss_steps > 100000)
        throw Error("kernel view: expected 0 <= loss_steps <= 100000, got " + std::to_string(o.loss_steps));
    if (!(o.loss_lambda >= 0.0) || !std::isfinite(o.loss_lambda))
        throw Error("kernel view: loss_lambda must be a finite number >= 0");
    if (o.prompt < 0 || o.prompt >= o.n_prompts)
        throw Error("kernel view: prompt " + std::to_string(o.prompt) + " is not one of the "
                    + std::to_string(o.n_prompts) + " prompts");
    if (o.scaling != "symmetric" && o.scaling != "balanced")
        throw Error("kernel view: scaling must be \"symmetric\" or \"balanced\", got \"" + o.scaling + "\"");
    if (o.matrix_m < 1 || o.matrix_m > (int64_t(1) << 20))
        throw Error("kernel view: matrix_m must be in [1, 1048576], got " + std::to_string(o.matrix_m));
}

std::vector<double> toVector(const torch::Tensor& t)
{
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/// [T, N] attention matrix of one prompt with token labels.
Matrix attentionMatrix(const std::string& name, const torch::Tensor& a, bool interleaved)
{
    Matrix m;
    m.name = name;
    m.rows = a.size(0);
    m.cols = a.size(1);
    m.data = toVector(a);
    auto token = [&](int64_t i) {
        if (interleaved)
            return std::string(i % 2 == 0 ? "x" : "y") + std::to_string(i / 2 + 1);
        return "e" + std::to_string(i + 1);
    };
    for (int64_t i = 0; i < m.rows; ++i)
        m.row_labels.push_back(i == m.rows - 1 ? std::string("query") : token(i));
    for (int64_t i = 0; i < m.cols; ++i)
        m.col_labels.push_back(token(i));
    return m;
}

nlohmann::json curveJson(const KernelErrorCurve& c)
{
    auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    return {{"mean", c.mean}, {"std", c.std}, {"slope", num(c.slope)}, {"intercept", num(c.intercept)}};
}

/// KernelViewOptions::scaling = "balanced": keys minus their prompt's mean (when `center`), then q ↦ A q, k ↦ A⁻¹ k
/// with the symmetric A that minimises E‖Aq‖² + E‖A⁻¹k‖² (A² = M, M Σ_q M = Σ_k: the geometric mean
/// of Σ_q⁻¹ and Σ_k). qᵀk is unchanged, the mean shift is one constant per query, so the attention
/// and the exact reference model are the same; the random features see smaller norms.
std::pair<torch::Tensor, torch::Tensor> balancedQueriesKeys(const torch::Tensor& q, const torch::Tensor& k,
                                                            bool center)
{
    const int64_t D = q.size(-1);
    const torch::Tensor kc = center ? k - k.mean(-2, true) : k;
    const torch::Tensor qf = q.reshape({-1, D}), kf = kc.reshape({-1, D});
    const torch::Tensor eye = torch::eye(D, q.options());
    auto second = [&](const torch::Tensor& x) {
        const torch::Tensor S = torch::matmul(x.t(), x) / double(x.size(0));
        // A tiny ridge keeps directions the data never uses invertible.
        return S + (1e-9 * S.trace().item<double>() + 1e-300) * eye;
    };
    const torch::Tensor Sq = second(qf), Sk = second(kf);
    const auto [sq, sqInv] = symmetricSqrtAndInverseSqrt(Sq);
    const torch::Tensor C = torch::matmul(torch::matmul(sq, Sk), sq);
    const torch::Tensor M = torch::matmul(torch::matmul(sqInv, symmetricSqrtAndInverseSqrt(0.5 * (C + C.t())).first), sqInv);
    const auto [A, AInv] = symmetricSqrtAndInverseSqrt(0.5 * (M + M.t()));
    return {torch::matmul(q, A), torch::matmul(kc, AInv)};
}

} // namespace

KernelView computeKernelView(const std::string& path, const KernelViewOptions& o,
                             const std::function<bool(int64_t, int64_t)>& progress)
{
    checkOptions(o);
    configureThreads(o.threads);
    LoadedRun run = loadRun(path, o.checkpoint_step);
    auto lsa = std::dynamic_pointer_cast<LsaImpl>(run.model.module);
    if (!lsa)
        throw Error(path + ": the kernel view needs an lsa model with softmax layers, the run has "
                    + run.config.model.kind);
    const LsaOptions& mo = lsa->options();
    if (mo.softmax_layers == 0)
        throw Error(path + ": the kernel view needs a softmax attention layer, but model.softmax_layers is 0 "
                           "(every layer is linear)");
    if (o.layer < 0 || o.layer >= mo.softmax_layers)
        throw Error(path + ": layer " + std::to_string(o.layer) + " is not a softmax layer (softmax layers: 0.."
                    + std::to_string(mo.softmax_layers - 1) + ")");
    if (o.head < 0 || o.head >= mo.n_heads)
        throw Error(path + ": head " + std::to_string(o.head) + " out of range (the model has "
                    + std::to_string(mo.n_heads) + " heads)");

    const ExperimentConfig& cfg = run.config;
    const int64_t work = int64_t(o.m.size()) * o.seeds + 2;
    int64_t done = 0;
    auto tick = [&] {
        if (progress && !progress(++done, work))
            throw Error("cancelled");
    };

    torch::NoGradGuard noGrad;
    const PromptBatch prompts = samplePrompts(cfg.task, o.n_prompts, seeds::eval(cfg.seed));
    LsaCapture capture;
    capture.want_qkv = true;
    lsa->forward(lsa->embed(prompts), lsa->contextTokens(prompts.nContext()), &capture);
    const auto L = size_t(o.layer);
    const torch::Tensor q = capture.q[L].select(1, o.head).to(torch::kFloat64);  // [B, T, D]
    const torch::Tensor k = capture.k[L].select(1, o.head).to(torch::kFloat64);  // [B, N, D]
    const torch::Tensor v = capture.v[L].select(1, o.head).to(torch::kFloat64);  // [B, N, D]
    const torch::Tensor pattern = capture.patterns[L].select(1, o.head).to(torch::kFloat64);  // [B, T, N]
    const int64_t N = k.size(1), D = q.size(-1);

    KernelView kv;
    kv.path = path;
    kv.checkpoint_step = run.step;
    kv.layer = o.layer;
    kv.head = o.head;
    kv.n_prompts = o.n_prompts;
    kv.n_keys = N;
    kv.n_queries = q.size(1);
    kv.head_dim = D;
    kv.attention_variant = attentionVariantName(mo.attention_variant);
    kv.variant_strength = mo.variant_strength;
    kv.seed = o.seed;
    kv.prompt = o.prompt;
    kv.matrix_m = o.matrix_m;

    // The layer's scores are qᵀk/√D: fold the scale into q and k (see KernelViewOptions::scaling).
    kv.scaling = o.scaling;
    const double c = std::pow(double(D), -0.25);
    torch::Tensor qs = q * c, ks = k * c, vs = v;
    const bool nullPair = mo.attention_variant == AttentionVariant::Regularized && mo.variant_strength > 0.0;
    // The null pair's kernel value λ is absolute, so a per-query shift of the scores is not free there:
    // the regularized variant keeps its keys uncentred.
    if (o.scaling == "balanced")
        std::tie(qs, ks) = balancedQueriesKeys(qs, ks, !nullPair);
    if (nullPair) {
        // exp(s_i) / (Σ_j exp(s_j) + λ) is softmax over one more key k_0 with k_0ᵀq = log λ and value 0.
        const int64_t B = q.size(0);
        const auto f64 = q.options();
        qs = torch::cat({qs, torch::ones({B, qs.size(1), 1}, f64)}, -1);
        torch::Tensor null = torch::zeros({B, 1, D + 1}, f64);
        null.select(-1, D).fill_(std::log(mo.variant_strength));
        ks = torch::cat({torch::cat({ks, torch::zeros({B, N, 1}, f64)}, -1), null}, 1);
        vs = torch::cat({v, torch::zeros({B, 1, v.size(-1)}, f64)}, 1);
    }

    const AttentionResult dual = referenceModelExact(qs, ks, vs);
    const torch::Tensor layerOutput = torch::matmul(pattern, v);
    kv.exact_output_max_abs = (dual.output - layerOutput).abs().max().item<double>();
    kv.exact_attention_max_abs = (dual.attention.narrow(-1, 0, N) - pattern).abs().max().item<double>();
    kv.exact_max_error = std::max(kv.exact_output_max_abs, kv.exact_attention_max_abs);
    tick();

    const torch::Tensor qn = qs.norm(2, -1), kn = ks.norm(2, -1);
    kv.query_norm_mean = qn.mean().item<double>();
    kv.query_norm_max = qn.max().item<double>();
    kv.key_norm_mean = kn.mean().item<double>();
    kv.key_norm_max = kn.max().item<double>();

    KernelSweepOptions so;
    so.m = o.m;
    so.seeds = o.seeds;
    so.seed = o.seed;
    kv.sweep = sweepRandomFeatures(qs, ks, vs, so, {}, [&](int64_t, int64_t) {
        tick();
        return true;
    });

    const int64_t mMax = *std::max_element(o.m.begin(), o.m.end());
    kv.loss.push_back(referenceLossCurve(qs, ks, vs, o.loss_steps, 0.0));
    if (o.loss_lambda > 0.0)
        kv.loss.push_back(referenceLossCurve(qs, ks, vs, o.loss_steps, o.loss_lambda));
    kv.loss.push_back(referenceLossCurve(qs, ks, vs, o.loss_steps, 0.0, drawOmega(qs.size(-1), mMax, mixSeed(o.seed, 0))));

    const int64_t p = o.prompt;
    const AttentionResult rf = referenceModelRandomFeatures(qs[p], ks[p], vs[p],
                                                            drawOmega(qs.size(-1), o.matrix_m, mixSeed(o.seed, 0)));
    kv.layer_attention = attentionMatrix("layer attention pattern", pattern[p], mo.interleaved);
    kv.exact_attention = attentionMatrix("reference model, exact kernel", dual.attention[p].narrow(-1, 0, N),
                                         mo.interleaved);
    kv.approx_attention = attentionMatrix("reference model, m = " + std::to_string(o.matrix_m) + " random features",
                                          rf.attention.narrow(-1, 0, N), mo.interleaved);
    tick();

    if (o.store) {
        nlohmann::json losses = nlohmann::json::array();
        for (const ReferenceLossCurve& lc : kv.loss)
            losses.push_back({{"kernel", lc.kernel}, {"m", lc.m}, {"lambda", lc.lambda}, {"step", lc.step},
                              {"loss", lc.loss}});
        const nlohmann::json result = {
            {"layer", kv.layer},
            {"head", kv.head},
            {"attention_variant", kv.attention_variant},
            {"variant_strength", kv.variant_strength},
            {"scaling", kv.scaling},
            {"exact_output_max_abs", kv.exact_output_max_abs},
            {"exact_attention_max_abs", kv.exact_attention_max_abs},
            {"exact_max_error", kv.exact_max_error},
            {"m", kv.sweep.m},
            {"seeds", kv.sweep.seeds},
            {"output_rmse", curveJson(kv.sweep.output_rmse)},
            {"output_max_abs", curveJson(kv.sweep.output_max_abs)},
            {"attention_rmse", curveJson(kv.sweep.attention_rmse)},
            {"attention_max_abs", curveJson(kv.sweep.attention_max_abs)},
            {"query_norm_mean", kv.query_norm_mean},
            {"key_norm_mean", kv.key_norm_mean},
            {"reference_loss", losses}};
        const nlohmann::json opts = {{"layer", o.layer},           {"head", o.head}, {"scaling", o.scaling},
                                     {"n_prompts", o.n_prompts},   {"m", o.m},
                                     {"seeds", o.seeds},           {"seed", o.seed},
                                     {"loss_steps", o.loss_steps}, {"loss_lambda", o.loss_lambda}};
        kv.id = storeAnalysis(path, "kernel", run.step, cfg.seed, opts.dump(), result.dump());
    }
    return kv;
}

} // namespace icl
