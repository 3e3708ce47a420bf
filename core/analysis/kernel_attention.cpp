#include "core/analysis/kernel_attention.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/tasks/linear_regression.h"

namespace icl {

namespace {

std::string shapeOf(const torch::Tensor& t)
{
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

/// q, k, v as float64, after checking q [..., T, D], k [..., N, D], v [..., N, Dv].
struct Qkv {
    torch::Tensor q, k, v;
};

Qkv checkQkv(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const char* where)
{
    const std::string shapes = std::string(where) + ": q " + shapeOf(q) + ", k " + shapeOf(k) + ", v " + shapeOf(v);
    if (!q.defined() || !k.defined() || !v.defined())
        throw Error(std::string(where) + ": q, k and v must all be given");
    if (q.dim() < 2 || k.dim() != q.dim() || v.dim() != q.dim())
        throw Error(shapes + ": expected q [..., T, D], k [..., N, D], v [..., N, Dv] of equal rank ≥ 2");
    const auto lead = q.sizes().slice(0, q.dim() - 2);
    if (k.sizes().slice(0, k.dim() - 2) != lead || v.sizes().slice(0, v.dim() - 2) != lead)
        throw Error(shapes + ": leading (batch, head) dimensions differ");
    if (k.size(-1) != q.size(-1))
        throw Error(shapes + ": q and k must have the same last dimension D");
    if (v.size(-2) != k.size(-2))
        throw Error(shapes + ": k and v must have the same number of keys N");
    if (k.size(-2) < 1)
        throw Error(shapes + ": at least one key is needed");
    const torch::Device dev = q.device();
    return {q.to(torch::kFloat64), k.to(dev, torch::kFloat64), v.to(dev, torch::kFloat64)};
}

/// `mask` as a bool tensor expanded to [..., T, N], or undefined when no mask is given.
torch::Tensor visibleKeys(const torch::Tensor& mask, const Qkv& x, const char* where)
{
    if (!mask.defined())
        return {};
    std::vector<int64_t> shape(x.q.sizes().begin(), x.q.sizes().end());
    shape.back() = x.k.size(-2);
    const bool fits = [&] {
        if (mask.dim() > int64_t(shape.size()))
            return false;
        for (int64_t i = 1; i <= mask.dim(); ++i)
            if (mask.size(-i) != 1 && mask.size(-i) != shape[shape.size() - size_t(i)])
                return false;
        return true;
    }();
    if (!fits)
        throw Error(std::string(where) + ": mask " + shapeOf(mask) + " does not broadcast to the scores "
                    + shapeOf(torch::empty(shape, torch::kBool)));
    const torch::Tensor m = (mask.to(x.q.device()) != 0).expand(shape);
    if (!m.any(-1).all().item<bool>())
        throw Error(std::string(where) + ": every query must see at least one key (a mask row is all false)");
    return m;
}

/// A matrix of kernel values known up to one factor per row: κ_ti = exp(log_scale_t)·scaled_ti.
struct ScaledKernel {
    torch::Tensor scaled;     ///< [..., R, C], zero where masked
    torch::Tensor log_scale;  ///< [..., R, 1] or [..., 1, 1]
};

/// exp(a bᵀ) [..., R, C] with each row's exponent shifted by its maximum over the visible entries.
ScaledKernel exactKernel(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& visible)
{
    torch::Tensor s = torch::matmul(a, b.transpose(-2, -1));
    if (visible.defined())
        s = s.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
    const torch::Tensor shift = s.amax(-1, true);
    return {torch::exp(s - shift), shift};
}

/// log φ(u) = ωᵀu − ‖u‖²/2 − ½·log m, [..., m].
torch::Tensor logFeatures(const torch::Tensor& u, const torch::Tensor& omega)
{
    return torch::matmul(u, omega) - 0.5 * u.pow(2).sum(-1, true) - 0.5 * std::log(double(omega.size(1)));
}

/// Random features of the queries and keys, each shifted in log space: φ(q_t) = exp(q_shift_t)·fq_t,
/// φ(k_i) = exp(k_shift)·fk_i with one k_shift for all keys of a leading index.
struct ShiftedFeatures {
    torch::Tensor fq, q_shift;  ///< [..., T, m], [..., T, 1]
    torch::Tensor fk, k_shift;  ///< [..., N, m], [..., 1, 1]
};

torch::Tensor checkedOmega(const torch::Tensor& omega, int64_t D, const torch::Device& dev, const char* where)
{
    if (!omega.defined() || omega.dim() != 2 || omega.size(0) != D || omega.size(1) < 1)
        throw Error(std::string(where) + ": omega " + (omega.defined() ? shapeOf(omega) : std::string("(none)"))
                    + " must be [D, m] with D = " + std::to_string(D) + " and m ≥ 1");
    return omega.to(dev, torch::kFloat64);
}

ShiftedFeatures shiftedFeatures(const Qkv& x, const torch::Tensor& omega)
{
    const torch::Tensor lq = logFeatures(x.q, omega), lk = logFeatures(x.k, omega);
    const torch::Tensor qs = lq.amax(-1, true), ks = lk.amax({-2, -1}, true);
    return {torch::exp(lq - qs), qs, torch::exp(lk - ks), ks};
}

/// The kernels of the shifted random features: qk = fq fkᵀ [..., T, N] and (when `with_kk`) kk = fk fkᵀ
/// [..., N, N], with q_shift [..., T, 1] and k_shift [..., 1, 1] as in ShiftedFeatures. When q and k
/// share their leading indices, these are computed a few leading indices at a time, so that the
/// features [..., m] of one slice (at most about 2^20 values) are all that is held: every value is
/// computed by the same operations on the same numbers as on the whole batch, without allocating and
/// paging in hundreds of MB per draw (m = 4096 features of 128 prompts).
struct FeatureKernels {
    torch::Tensor qk, q_shift, kk, k_shift;
};

FeatureKernels featureKernels(const Qkv& x, const torch::Tensor& omega, bool with_kk)
{
    auto whole = [&](const torch::Tensor& q, const torch::Tensor& k) {
        const ShiftedFeatures f = shiftedFeatures({q, k, torch::Tensor()}, omega);
        FeatureKernels r{torch::matmul(f.fq, f.fk.transpose(-2, -1)), f.q_shift, {}, f.k_shift};
        if (with_kk)
            r.kk = torch::matmul(f.fk, f.fk.transpose(-2, -1));
        return r;
    };
    const int64_t d = x.q.dim(), T = x.q.size(-2), N = x.k.size(-2), m = omega.size(1);
    if (d < 3 || x.k.dim() != d || x.q.sizes().slice(0, size_t(d - 2)) != x.k.sizes().slice(0, size_t(d - 2)))
        return whole(x.q, x.k);
    const std::vector<int64_t> lead(x.q.sizes().begin(), x.q.sizes().end() - 2);
    int64_t B = 1;
    for (int64_t n : lead)
        B *= n;
    const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 20) / ((T + N) * m));
    if (chunk >= B)
        return whole(x.q, x.k);
    const torch::Tensor q = x.q.reshape({B, T, x.q.size(-1)}), k = x.k.reshape({B, N, x.k.size(-1)});
    std::vector<torch::Tensor> qk, qs, kk, ks;
    for (int64_t b = 0; b < B; b += chunk) {
        const int64_t e = std::min(B, b + chunk);
        FeatureKernels f = whole(q.slice(0, b, e), k.slice(0, b, e));
        qk.push_back(f.qk);
        qs.push_back(f.q_shift);
        ks.push_back(f.k_shift);
        if (with_kk)
            kk.push_back(f.kk);
    }
    auto joined = [&](const std::vector<torch::Tensor>& parts, int64_t rows, int64_t cols) {
        std::vector<int64_t> shape = lead;
        shape.push_back(rows);
        shape.push_back(cols);
        return torch::cat(parts, 0).reshape(shape);
    };
    return {joined(qk, T, N), joined(qs, T, 1), with_kk ? joined(kk, N, N) : torch::Tensor(), joined(ks, 1, 1)};
}

/// One GD step of the reference model from its kernel matrix K [..., T, N] (= φ(k_i)ᵀφ(q_t) up to
/// a factor per row): A = K / rowsum (the η normalisation), output = A v.
AttentionResult oneStep(const torch::Tensor& kernel, const torch::Tensor& v, const char* where)
{
    const torch::Tensor z = kernel.sum(-1, true);
    if (!((z > 0) & torch::isfinite(z)).all().item<bool>())
        throw Error(std::string(where) + ": the kernel sum Σ_j φ(k_j)ᵀφ(q) of a query under- or overflowed "
                                         "(query/key norms too large for the features)");
    const torch::Tensor a = kernel / z;
    return {torch::matmul(a, v), a};
}

/// L_λ(W_s) for s = 0..steps (see referenceModelLoss) from the query-key kernel qk [..., T, N] and
/// the key-key kernel kk [..., N, N] (log_scale [..., 1, 1]), both as ScaledKernel.
torch::Tensor lossAlongSteps(const ScaledKernel& qk, const ScaledKernel& kk, const torch::Tensor& v,
                             const torch::Tensor& visible, int64_t steps, double lambda)
{
    const torch::Tensor z = qk.scaled.sum(-1);                                    // [..., T]
    const torch::Tensor vk = torch::matmul(v, v.transpose(-2, -1)) * kk.scaled;  // [..., N, N]
    torch::Tensor g2;  // ‖G_t‖² / exp(kk.log_scale), [..., T]
    if (visible.defined()) {
        const torch::Tensor m = visible.to(torch::kFloat64);
        g2 = (torch::matmul(m, vk) * m).sum(-1);
    } else {
        g2 = vk.sum({-2, -1}).unsqueeze(-1).expand_as(z);
    }
    const torch::Tensor logEta = -qk.log_scale.squeeze(-1) - torch::log(z);          // log η_t
    const torch::Tensor etaG2 = torch::exp(kk.log_scale.squeeze(-1) + logEta) * g2;  // η_t·‖G_t‖²
    const torch::Tensor etaLambda = lambda * torch::exp(logEta);                     // η_t·λ
    // W_s = η_t·g_s·G_t with g_0 = 0, g_{s+1} = (1 − η_tλ)·g_s + 1, so
    // L_λ(W_s) = −η_t g_s ‖G_t‖² + (λ/2)·η_t² g_s² ‖G_t‖² = η_t‖G_t‖²·(−g_s + η_tλ·g_s²/2).
    std::vector<torch::Tensor> loss {torch::zeros_like(z)};
    torch::Tensor g = torch::zeros_like(z);
    for (int64_t s = 1; s <= steps; ++s) {
        g = (1.0 - etaLambda) * g + 1.0;
        loss.push_back(etaG2 * (-g + 0.5 * etaLambda * g * g));
    }
    return torch::stack(loss, -1);
}

/// Per-head squared and absolute differences as [H, rest] (rank 4: heads on axis 1; else one head).
torch::Tensor perHead(const torch::Tensor& a, const torch::Tensor& b, const char* what)
{
    if (!a.defined() || !b.defined() || a.sizes() != b.sizes() || a.dim() < 2 || a.dim() > 4)
        throw Error(std::string("kernelErrors: ") + what + " shapes " + (a.defined() ? shapeOf(a) : "(none)")
                    + " and " + (b.defined() ? shapeOf(b) : "(none)")
                    + " must be equal, [T, ·], [B, T, ·] or [B, H, T, ·]");
    const torch::Tensor d = a.to(torch::kFloat64) - b.to(a.device(), torch::kFloat64);
    if (d.dim() == 4)
        return d.transpose(0, 1).reshape({d.size(1), -1});
    return d.reshape({1, -1});
}

std::vector<double> toVector(const torch::Tensor& t)
{
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/// Mean and sample standard deviation of per-seed errors.
void summarise(const std::vector<double>& values, KernelErrorCurve& curve)
{
    double mean = 0.0;
    for (double x : values)
        mean += x;
    mean /= double(values.size());
    double ss = 0.0;
    for (double x : values)
        ss += (x - mean) * (x - mean);
    curve.mean.push_back(mean);
    curve.std.push_back(values.size() > 1 ? std::sqrt(ss / double(values.size() - 1)) : 0.0);
}

void fitCurve(const std::vector<int64_t>& m, KernelErrorCurve& curve)
{
    const std::vector<double> x(m.begin(), m.end());
    std::tie(curve.slope, curve.intercept) = fitLogLogLine(x, curve.mean);
}

} // namespace

torch::Tensor drawOmega(int64_t dim, int64_t m, uint64_t seed)
{
    if (dim < 1 || m < 1)
        throw Error("drawOmega: need dim ≥ 1 and m ≥ 1, got dim = " + std::to_string(dim)
                    + ", m = " + std::to_string(m));
    auto gen = at::detail::createCPUGenerator(seed);
    return torch::randn({dim, m}, gen, torch::TensorOptions().dtype(torch::kFloat64));
}

torch::Tensor positiveRandomFeatures(const torch::Tensor& u, const torch::Tensor& omega)
{
    if (!u.defined() || u.dim() < 1)
        throw Error("positiveRandomFeatures: u must be [..., D]");
    const torch::Tensor w = checkedOmega(omega, u.size(-1), u.device(), "positiveRandomFeatures");
    return torch::exp(logFeatures(u.to(torch::kFloat64), w));
}

AttentionResult softmaxAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& mask)
{
    const Qkv x = checkQkv(q, k, v, "softmaxAttention");
    const torch::Tensor visible = visibleKeys(mask, x, "softmaxAttention");
    torch::Tensor scores = torch::matmul(x.q, x.k.transpose(-2, -1));
    if (visible.defined())
        scores = scores.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
    const torch::Tensor a = torch::softmax(scores, -1);
    return {torch::matmul(a, x.v), a};
}

AttentionResult referenceModelExact(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                    const torch::Tensor& mask)
{
    const Qkv x = checkQkv(q, k, v, "referenceModelExact");
    const torch::Tensor visible = visibleKeys(mask, x, "referenceModelExact");
    return oneStep(exactKernel(x.q, x.k, visible).scaled, x.v, "referenceModelExact");
}

AttentionResult referenceModelRandomFeatures(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                             const torch::Tensor& omega, const torch::Tensor& mask)
{
    const char* where = "referenceModelRandomFeatures";
    const Qkv x = checkQkv(q, k, v, where);
    const torch::Tensor visible = visibleKeys(mask, x, where);
    torch::Tensor kernel
        = featureKernels(x, checkedOmega(omega, x.q.size(-1), x.q.device(), where), false).qk;
    if (visible.defined())
        kernel = kernel * visible;
    return oneStep(kernel, x.v, where);
}

torch::Tensor referenceModelLoss(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 int64_t steps, double lambda, const torch::Tensor& omega, const torch::Tensor& mask)
{
    const char* where = "referenceModelLoss";
    if (steps < 0)
        throw Error(std::string(where) + ": steps must be ≥ 0, got " + std::to_string(steps));
    if (!(lambda >= 0.0) || !std::isfinite(lambda))
        throw Error(std::string(where) + ": lambda must be a finite number ≥ 0, got " + std::to_string(lambda));
    const Qkv x = checkQkv(q, k, v, where);
    const torch::Tensor visible = visibleKeys(mask, x, where);
    ScaledKernel qk, kk;
    if (!omega.defined()) {
        qk = exactKernel(x.q, x.k, visible);
        const torch::Tensor s = torch::matmul(x.k, x.k.transpose(-2, -1));
        const torch::Tensor shift = s.amax({-2, -1}, true);
        kk = {torch::exp(s - shift), shift};
    } else {
        const FeatureKernels f = featureKernels(x, checkedOmega(omega, x.q.size(-1), x.q.device(), where), true);
        qk = {f.qk, f.q_shift + f.k_shift};
        if (visible.defined())
            qk.scaled = qk.scaled * visible;
        kk = {f.kk, 2.0 * f.k_shift};
    }
    const torch::Tensor z = qk.scaled.sum(-1);
    if (!((z > 0) & torch::isfinite(z)).all().item<bool>())
        throw Error(std::string(where) + ": the kernel sum Σ_j φ(k_j)ᵀφ(q) of a query under- or overflowed");
    return lossAlongSteps(qk, kk, x.v, visible, steps, lambda);
}

ReferenceLossCurve referenceLossCurve(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      int64_t steps, double lambda, const torch::Tensor& omega,
                                      const torch::Tensor& mask)
{
    const torch::Tensor loss = referenceModelLoss(q, k, v, steps, lambda, omega, mask);
    ReferenceLossCurve c;
    c.kernel = omega.defined() ? "random_features" : "exact";
    c.m = omega.defined() ? omega.size(1) : 0;
    c.lambda = lambda;
    for (int64_t s = 0; s <= steps; ++s)
        c.step.push_back(s);
    c.loss = toVector(loss.reshape({-1, steps + 1}).mean(0));
    return c;
}

KernelErrors kernelErrors(const AttentionResult& approx, const AttentionResult& exact)
{
    const torch::Tensor out = perHead(approx.output, exact.output, "output");
    const torch::Tensor att = perHead(approx.attention, exact.attention, "attention");
    if (out.size(0) != att.size(0))
        throw Error("kernelErrors: outputs have " + std::to_string(out.size(0)) + " heads, attention matrices "
                    + std::to_string(att.size(0)));
    KernelErrors e;
    e.output_mse = toVector(out.pow(2).mean(1));
    e.output_max_abs = toVector(out.abs().amax(1));
    e.attention_mse = toVector(att.pow(2).mean(1));
    e.attention_max_abs = toVector(att.abs().amax(1));
    return e;
}

KernelSweep sweepRandomFeatures(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const KernelSweepOptions& options, const torch::Tensor& mask,
                                const std::function<bool(int64_t, int64_t)>& progress)
{
    if (options.m.empty())
        throw Error("sweepRandomFeatures: the list of m is empty");
    for (int64_t m : options.m)
        if (m < 1)
            throw Error("sweepRandomFeatures: every m must be ≥ 1, got " + std::to_string(m));
    if (options.seeds < 1)
        throw Error("sweepRandomFeatures: seeds must be ≥ 1, got " + std::to_string(options.seeds));
    torch::NoGradGuard noGrad;

    const AttentionResult exact = softmaxAttention(q, k, v, mask);
    const AttentionResult dual = referenceModelExact(q, k, v, mask);
    KernelSweep sweep;
    sweep.m = options.m;
    sweep.seeds = options.seeds;
    sweep.exact_output_max_abs = (dual.output - exact.output).abs().max().item<double>();
    sweep.exact_attention_max_abs = (dual.attention - exact.attention).abs().max().item<double>();

    const int64_t total = int64_t(options.m.size()) * options.seeds;
    int64_t done = 0;
    for (int64_t m : options.m) {
        std::vector<double> outRmse, outMax, attRmse, attMax;
        for (int64_t s = 0; s < options.seeds; ++s) {
            const torch::Tensor omega = drawOmega(q.size(-1), m, mixSeed(options.seed, uint64_t(s)));
            const AttentionResult rf = referenceModelRandomFeatures(q, k, v, omega, mask);
            const torch::Tensor dOut = rf.output - exact.output, dAtt = rf.attention - exact.attention;
            outRmse.push_back(dOut.pow(2).mean().sqrt().item<double>());
            outMax.push_back(dOut.abs().max().item<double>());
            attRmse.push_back(dAtt.pow(2).mean().sqrt().item<double>());
            attMax.push_back(dAtt.abs().max().item<double>());
            if (progress && !progress(++done, total))
                throw Error("cancelled");
        }
        summarise(outRmse, sweep.output_rmse);
        summarise(outMax, sweep.output_max_abs);
        summarise(attRmse, sweep.attention_rmse);
        summarise(attMax, sweep.attention_max_abs);
    }
    fitCurve(sweep.m, sweep.output_rmse);
    fitCurve(sweep.m, sweep.output_max_abs);
    fitCurve(sweep.m, sweep.attention_rmse);
    fitCurve(sweep.m, sweep.attention_max_abs);
    return sweep;
}

std::pair<torch::Tensor, torch::Tensor> symmetricSqrtAndInverseSqrt(const torch::Tensor& S)
{
    auto [values, vectors] = torch::linalg_eigh(S);
    // Eigenvalues below 1e-12 of the largest are rounding noise of the products that formed S (they
    // can come out negative, e.g. −1.7e-10 beside 0.55 for keys that span fewer directions than D):
    // raised to that floor, the inverse stays finite and S^{1/2}·S^{-1/2} = I still holds.
    const torch::Tensor floor = values.max().clamp_min(1e-300) * 1e-12;
    const torch::Tensor r = torch::max(values, floor).sqrt();
    return {torch::matmul(vectors * r, vectors.t()), torch::matmul(vectors / r, vectors.t())};
}

std::pair<double, double> fitLogLogLine(const std::vector<double>& x, const std::vector<double>& y)
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (x.size() != y.size() || x.size() < 2)
        return {nan, nan};
    double mx = 0.0, my = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        if (!(x[i] > 0.0) || !(y[i] > 0.0) || !std::isfinite(x[i]) || !std::isfinite(y[i]))
            return {nan, nan};
        mx += std::log(x[i]);
        my += std::log(y[i]);
    }
    mx /= double(x.size());
    my /= double(x.size());
    double sxx = 0.0, sxy = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double dx = std::log(x[i]) - mx;
        sxx += dx * dx;
        sxy += dx * (std::log(y[i]) - my);
    }
    if (!(sxx > 0.0))
        return {nan, nan};
    const double slope = sxy / sxx;
    return {slope, my - slope * mx};
}

} // namespace icl
