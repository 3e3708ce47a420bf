#include "core/baselines/baselines.h"
#include "core/baselines/gd_spectrum_kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <tuple>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/error.h"
#include "core/io/kinds.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"
#include "core/runtime/blas.h"
#include "core/tasks/seeds.h"

namespace icl {

namespace {

struct Float64View {
    torch::Tensor X;   // [B, n, d]
    torch::Tensor y;   // [B, n]
    torch::Tensor xq;  // [B, d]
};

Float64View float64(const PromptBatch& b)
{
    return {b.contextX().to(torch::kFloat64), b.contextY().to(torch::kFloat64), b.queryX().to(torch::kFloat64)};
}

torch::Tensor asBatch(const torch::Tensor& pred, const PromptBatch& b)
{
    return pred.to(b.x.options().dtype());
}

torch::Tensor predictWith(const torch::Tensor& w, const torch::Tensor& xq)  // [B, d], [B, d] -> [B]
{
    return (w * xq).sum(-1);
}

} // namespace

torch::Tensor halfMse(const torch::Tensor& pred, const torch::Tensor& target)
{
    return 0.5 * (pred - target).pow(2).mean();
}

torch::Tensor predictZero(const PromptBatch& batch)
{
    return torch::zeros({batch.batchSize()}, batch.x.options());
}

torch::Tensor predictLeastSquares(const PromptBatch& batch)
{
    if (batch.nContext() == 0)
        return predictZero(batch);
    Float64View v = float64(batch);
    torch::Tensor w = torch::matmul(torch::linalg::pinv(v.X), v.y.unsqueeze(-1)).squeeze(-1);  // [B, d]
    return asBatch(predictWith(w, v.xq), batch);
}

torch::Tensor predictRidge(const PromptBatch& batch, double lambda)
{
    if (lambda <= 0.0)
        return predictLeastSquares(batch);
    if (batch.nContext() == 0)
        return predictZero(batch);
    Float64View v = float64(batch);
    const int64_t d = batch.dim();
    torch::Tensor gram = torch::matmul(v.X.transpose(1, 2), v.X)
        + lambda * torch::eye(d, v.X.options()).unsqueeze(0);                      // [B, d, d]
    torch::Tensor rhs = torch::matmul(v.X.transpose(1, 2), v.y.unsqueeze(-1));      // [B, d, 1]
    torch::Tensor w = torch::linalg::solve(gram, rhs, /*left=*/true).squeeze(-1);  // [B, d]
    return asBatch(predictWith(w, v.xq), batch);
}

torch::Tensor predictKnn(const PromptBatch& batch, int64_t k)
{
    const int64_t n = batch.nContext();
    if (n == 0)
        return predictZero(batch);
    Float64View v = float64(batch);
    const torch::Tensor dist = (v.X - v.xq.unsqueeze(1)).pow(2).sum(-1);             // [B, n]
    const int64_t kk = std::min(k, n);
    const torch::Tensor idx = std::get<1>(dist.topk(kk, 1, /*largest=*/false));     // [B, kk]
    return asBatch(v.y.gather(1, idx).mean(1), batch);
}

torch::Tensor predictAveraging(const PromptBatch& batch)
{
    const int64_t n = batch.nContext();
    if (n == 0)
        return predictZero(batch);
    Float64View v = float64(batch);
    const torch::Tensor w = torch::einsum("bn,bnd->bd", {v.y, v.X}) / double(n);
    return asBatch(predictWith(w, v.xq), batch);
}

torch::Tensor predictOracleRidgePhi(const PromptBatch& batch, const std::function<torch::Tensor(const torch::Tensor&)>& phi,
                                    double lambda)
{
    const PromptBatch f{phi(batch.x.to(torch::kFloat64)), batch.y, batch.w};
    return predictRidge(f, lambda).to(batch.x.scalar_type());
}

torch::Tensor predictMixturePosterior(const PromptBatch& batch,
                                      const std::vector<std::function<torch::Tensor(const torch::Tensor&)>>& phis,
                                      double tau, double sigma)
{
    const int64_t n = batch.nContext(), B = batch.batchSize();
    if (phis.empty())
        throw Error("mixture_posterior: no representations");
    if (n == 0)
        return predictZero(batch);
    const double t2 = tau * tau, s2 = std::max(sigma * sigma, 1e-6 * t2);
    const torch::Tensor X = batch.x.to(torch::kFloat64);
    const torch::Tensor y = batch.contextY().to(torch::kFloat64).unsqueeze(-1);             // [B, n, 1]
    const torch::Tensor eye = torch::eye(n, torch::kFloat64).unsqueeze(0);
    std::vector<torch::Tensor> logLik, preds;
    for (const auto& phi : phis) {
        const torch::Tensor F = phi(X);                                                     // [B, n+1, D]
        const torch::Tensor Fc = F.narrow(1, 0, n), fq = F.select(1, n);
        const torch::Tensor C = t2 * torch::matmul(Fc, Fc.transpose(1, 2)) + s2 * eye;      // [B, n, n]
        const torch::Tensor L = torch::linalg_cholesky(C);
        const torch::Tensor alpha = torch::cholesky_solve(y, L);                            // C⁻¹y [B, n, 1]
        const torch::Tensor logDet = 2.0 * torch::log(torch::diagonal(L, 0, -2, -1)).sum(-1);
        logLik.push_back(-0.5 * (y * alpha).sum({1, 2}) - 0.5 * logDet);                    // [B] (+ const)
        preds.push_back(t2 * torch::einsum("bd,bnd,bn->b", {fq, Fc, alpha.squeeze(-1)}));
    }
    const torch::Tensor weights = torch::softmax(torch::stack(logLik, 1), 1);              // [B, K]
    (void)B;
    return asBatch((weights * torch::stack(preds, 1)).sum(1), batch);
}

double fitRidgeLambda(const PromptBatch& tuning)
{
    const torch::Tensor y = tuning.queryY().to(torch::kFloat64);
    double best = 1.0, bestLoss = std::numeric_limits<double>::infinity();
    for (int i = -8; i <= 6; ++i) {
        const double lambda = std::pow(10.0, 0.5 * i);
        const double loss = halfMse(predictRidge(tuning, lambda).to(torch::kFloat64), y).item<double>();
        if (loss < bestLoss) {
            bestLoss = loss;
            best = lambda;
        }
    }
    return best;
}

torch::Tensor predictGd(const PromptBatch& batch, int64_t k, double eta)
{
    const int64_t n = batch.nContext();
    if (n == 0 || k == 0)
        return predictZero(batch);
    Float64View v = float64(batch);
    torch::Tensor w = torch::zeros({batch.batchSize(), batch.dim()}, v.X.options());
    for (int64_t t = 0; t < k; ++t) {
        torch::Tensor residual = torch::einsum("bnd,bd->bn", {v.X, w}) - v.y;       // [B, n]
        torch::Tensor grad = torch::einsum("bn,bnd->bd", {residual, v.X}) / double(n);  // ∇L(W_t)
        w = w - eta * grad;
    }
    return asBatch(predictWith(w, v.xq), batch);
}

double closedFormEtaOneStep(const PromptBatch& batch)
{
    const torch::Tensor g = predictGd(batch, 1, 1.0).to(torch::kFloat64);
    const torch::Tensor y = batch.queryY().to(torch::kFloat64);
    const double num = (g * y).sum().item<double>();
    const double den = (g * g).sum().item<double>();
    if (den <= 0.0)
        throw Error("cannot fit the GD step size: every one-step prediction is zero");
    return num / den;
}

GdSpectrum::GdSpectrum(const PromptBatch& batch)
    : m_B(batch.batchSize())
    , m_d(batch.dim())
{
    torch::NoGradGuard noGrad;
    const int64_t n = batch.nContext();
    const torch::Tensor yq = batch.queryY().to(torch::kCPU, torch::kFloat64).contiguous();
    m_yq.assign(yq.data_ptr<double>(), yq.data_ptr<double>() + m_B);
    if (n == 0) {  // no examples: every prediction is 0
        m_lambda.assign(size_t(m_B * m_d), 0.0);
        m_coef.assign(size_t(m_B * m_d), 0.0);
        return;
    }
    // One thread: thousands of d × d eigendecompositions are too small to share (docs/performance.md,
    // "Small kernels on one thread").
    const ScopedThreads oneThread(1);
    Float64View v = float64(batch);
    const torch::Tensor X = v.X.cpu(), y = v.y.cpu(), xq = v.xq.cpu();
    const torch::Tensor A = torch::matmul(X.transpose(1, 2), X) / double(n);              // [B, d, d]
    const torch::Tensor b = torch::matmul(X.transpose(1, 2), y.unsqueeze(-1)) / double(n);  // [B, d, 1]
    const auto [lambda, Q] = torch::linalg::eigh(A, "L");                                  // [B, d], [B, d, d]
    const torch::Tensor qx = torch::matmul(Q.transpose(1, 2), xq.unsqueeze(-1)).squeeze(-1);  // [B, d]
    const torch::Tensor qb = torch::matmul(Q.transpose(1, 2), b).squeeze(-1);                 // [B, d]
    const torch::Tensor coef = (qx * qb).contiguous(), lam = lambda.contiguous();
    m_lambda.assign(lam.data_ptr<double>(), lam.data_ptr<double>() + m_B * m_d);
    m_coef.assign(coef.data_ptr<double>(), coef.data_ptr<double>() + m_B * m_d);
}

void GdSpectrum::predictAll(int64_t kMax, double eta, double* pred) const
{
    gdSpectrumPredictions(m_lambda.data(), m_coef.data(), m_B, m_d, kMax, eta, pred);
}

std::vector<double> GdSpectrum::predictions(int64_t k, double eta) const
{
    std::vector<double> all(static_cast<size_t>(m_B * k)), pred(static_cast<size_t>(m_B));
    predictAll(k, eta, all.data());
    for (int64_t b = 0; b < m_B; ++b)
        pred[size_t(b)] = all[size_t(b * k + k - 1)];
    return pred;
}

double GdSpectrum::loss(int64_t k, double eta) const
{
    return losses(k, eta).back();
}

std::vector<double> GdSpectrum::losses(int64_t kMax, double eta) const
{
    std::vector<double> pred(static_cast<size_t>(m_B * kMax));  // [B, kMax]
    predictAll(kMax, eta, pred.data());
    std::vector<double> out(size_t(kMax), 0.0);
    for (int64_t b = 0; b < m_B; ++b)
        for (int64_t t = 0; t < kMax; ++t) {
            const double e = pred[size_t(b * kMax + t)] - m_yq[size_t(b)];
            out[size_t(t)] += e * e;
        }
    for (double& l : out) {
        l = 0.5 * l / double(std::max<int64_t>(m_B, 1));
        if (!std::isfinite(l))
            l = std::numeric_limits<double>::infinity();
    }
    return out;
}

double goldenSectionMinimum(const std::function<double(double)>& loss, double a, double b)
{
    const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double fc = loss(c), fd = loss(d);
    while (b - a > 1e-10 * std::max(1.0, std::abs(b))) {
        if (fc < fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = loss(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = loss(d);
        }
    }
    return 0.5 * (a + b);
}

std::map<int64_t, double> lineSearchEtas(const PromptBatch& batch, const std::vector<int64_t>& ks, double lo, double hi)
{
    std::map<int64_t, double> out;
    if (ks.empty())
        return out;
    const int64_t kMax = *std::max_element(ks.begin(), ks.end());
    if (*std::min_element(ks.begin(), ks.end()) < 1)
        throw Error("GD step size search: the number of GD steps k must be ≥ 1");
    const GdSpectrum spectrum(batch);
    // Coarse grid, shared by every k: the best cell of each. The grid points, and then the refinements of the k,
    // are independent searches: they run on the intra-op threads, each on one, and are compared in grid order.
    const int cells = 250;
    const double h = (hi - lo) / cells;
    std::vector<std::vector<double>> grid(size_t(cells + 1));
    parallelTasks(cells + 1, [&](int64_t i) { grid[size_t(i)] = spectrum.losses(kMax, lo + double(i) * h); });
    std::vector<double> bestEta(size_t(kMax), lo), bestLoss = grid[0];
    for (int i = 1; i <= cells; ++i) {
        const double eta = lo + i * h;
        const std::vector<double>& l = grid[size_t(i)];
        for (int64_t t = 0; t < kMax; ++t)
            if (l[size_t(t)] < bestLoss[size_t(t)]) {
                bestLoss[size_t(t)] = l[size_t(t)];
                bestEta[size_t(t)] = eta;
            }
    }
    // Golden-section refinement in each k's best cell.
    std::vector<int64_t> unique(ks.begin(), ks.end());
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    std::vector<double> refined(unique.size());
    parallelTasks(int64_t(unique.size()), [&](int64_t i) {
        const int64_t k = unique[size_t(i)];
        refined[size_t(i)] = goldenSectionMinimum([&](double eta) { return spectrum.loss(k, eta); },
            std::max(lo, bestEta[size_t(k - 1)] - h), std::min(hi, bestEta[size_t(k - 1)] + h));
    });
    for (size_t i = 0; i < unique.size(); ++i)
        out[unique[i]] = refined[i];
    return out;
}

double lineSearchEta(const PromptBatch& batch, int64_t k, double lo, double hi)
{
    return lineSearchEtas(batch, {k}, lo, hi).at(k);
}

NewtonAlpha newtonAlphaFromName(const std::string& name)
{
    if (name == "frobenius")
        return NewtonAlpha::Frobenius;
    if (name == "spectral")
        return NewtonAlpha::Spectral;
    throw Error("Newton's α: expected \"frobenius\" (1/‖SSᵀ‖_F) or \"spectral\" (2/‖SSᵀ‖₂), got \"" + name + "\"");
}

std::string newtonAlphaName(NewtonAlpha alpha)
{
    return alpha == NewtonAlpha::Spectral ? "spectral" : "frobenius";
}

double newtonAlpha(const double* lambda, int64_t d, NewtonAlpha alpha)
{
    // S is symmetric positive semi-definite, so SSᵀ = S² has eigenvalues λ_j²: ‖SSᵀ‖_F = √Σλ⁴, ‖SSᵀ‖₂ = max λ².
    double sum4 = 0.0, max2 = 0.0;
    for (int64_t j = 0; j < d; ++j) {
        const double l2 = lambda[j] * lambda[j];
        sum4 += l2 * l2;
        max2 = std::max(max2, l2);
    }
    if (!(max2 > 0.0))
        return 0.0;
    return alpha == NewtonAlpha::Spectral ? 2.0 / max2 : 1.0 / std::sqrt(sum4);
}

torch::Tensor newtonWeights(const PromptBatch& batch, int64_t k, NewtonAlpha alpha)
{
    if (k < 0)
        throw Error("Iterative Newton: the number of iterations k must be ≥ 0, got " + std::to_string(k));
    if (batch.nContext() == 0)
        return torch::zeros({batch.batchSize(), batch.dim()}, torch::kFloat64);
    Float64View v = float64(batch);
    const torch::Tensor Xt = v.X.transpose(1, 2);                             // [B, d, n]
    const torch::Tensor S = torch::matmul(Xt, v.X);                           // [B, d, d]
    const torch::Tensor SSt = torch::matmul(S, S.transpose(1, 2));            // [B, d, d]
    const torch::Tensor norm = alpha == NewtonAlpha::Spectral
        ? torch::linalg::matrix_norm(SSt, 2, {-2, -1}, false, c10::nullopt)   // largest singular value
        : torch::linalg::matrix_norm(SSt, "fro", {-2, -1}, false, c10::nullopt);
    const double c = alpha == NewtonAlpha::Spectral ? 2.0 : 1.0;
    const torch::Tensor a = torch::where(norm > 0, c / norm.clamp_min(std::numeric_limits<double>::min()),
                                         torch::zeros_like(norm));            // S = 0: M stays 0
    torch::Tensor M = a.view({-1, 1, 1}) * S;
    for (int64_t t = 0; t < k; ++t)
        M = 2.0 * M - torch::matmul(torch::matmul(M, S), M);
    return torch::matmul(M, torch::matmul(Xt, v.y.unsqueeze(-1))).squeeze(-1);  // [B, d]
}

torch::Tensor predictNewton(const PromptBatch& batch, int64_t k, NewtonAlpha alpha)
{
    const torch::Tensor w = newtonWeights(batch, k, alpha);
    return asBatch(predictWith(w, batch.queryX().to(torch::kFloat64)), batch);
}

double newtonFilter(double lambda, double alpha, int64_t k)
{
    if (lambda == 0.0)
        return 0.0;
    double e = 1.0 - alpha * lambda * lambda;  // eigenvalue of I − S·M₀
    for (int64_t t = 0; t < k; ++t)
        e *= e;                                 // I − S·M_{t+1} = (I − S·M_t)²
    return (1.0 - e) / lambda;
}

double gdFilter(double lambda, double step, int64_t k)
{
    const double r = step * lambda;
    if (r == 0.0)
        return double(k) * step;
    // (1 − (1 − r)^k)/λ; for 0 < r < 1 through log1p/expm1, which keeps its digits when r is tiny.
    if (r > 0.0 && r < 1.0)
        return -std::expm1(double(k) * std::log1p(-r)) / lambda;
    return (1.0 - std::pow(1.0 - r, double(k))) / lambda;
}

double ridgeFilter(double lambda, double penalty)
{
    const double s = lambda + penalty;
    return s > 0.0 ? 1.0 / s : 0.0;
}

double ridgeLambda(const ExperimentConfig& config)
{
    if (config.eval.ridge_lambda >= 0.0)
        return config.eval.ridge_lambda;
    const double tau = config.task.w_scale;
    return config.task.noise_std * config.task.noise_std / (tau * tau);
}

torch::Tensor predictGdPlusPlus(const PromptBatch& batch, const torch::Tensor& eta, const torch::Tensor& gamma)
{
    const int64_t N = batch.nContext();
    TORCH_CHECK(eta.dim() == 1 && gamma.sizes() == eta.sizes(), "GD++ expects eta and gamma of shape [K]");
    torch::Tensor X = batch.x.to(torch::kFloat64);                  // [B, N+1, d]
    torch::Tensor r = batch.y.to(torch::kFloat64).clone();          // [B, N+1]
    r.select(1, N).zero_();
    if (N == 0)
        return torch::zeros({batch.batchSize()}, batch.x.options());
    for (int64_t l = 0; l < eta.size(0); ++l) {
        // Σ_i x_i x_iᵀ x_j = (CᵀC) x_j and Σ_i r_i x_iᵀ x_j = ⟨Cᵀr_c, x_j⟩ with C the context inputs.
        const torch::Tensor C = X.narrow(1, 0, N);                                    // [B, N, d]
        const torch::Tensor u = torch::einsum("bnd,bn->bd", {C, r.narrow(1, 0, N)});  // [B, d]
        const torch::Tensor M = torch::matmul(C.transpose(1, 2), C);                 // [B, d, d]
        r = r - (eta[l] / double(N)) * torch::einsum("btd,bd->bt", {X, u});
        X = X - gamma[l] * torch::matmul(X, M);
    }
    return (-r.select(1, N)).to(batch.x.scalar_type());
}

GdPlusPlusParams fitGdPlusPlus(const TaskConfig& task, int64_t k, uint64_t seed, bool tied, int64_t n_prompts)
{
    if (k < 1)
        throw Error("GD++ needs at least one step, got k = " + std::to_string(k));
    const PromptBatch b = samplePrompts(task, n_prompts, seed, torch::kFloat64);
    const torch::Tensor yq = b.queryY().to(torch::kFloat64);
    // Minimises the loss over (η, γ) [n] each, n = 1 (shared by the k steps) or k, from the given start.
    auto minimise = [&](torch::Tensor eta, torch::Tensor gamma) {
        eta.requires_grad_(true);
        gamma.requires_grad_(true);
        const bool shared = eta.size(0) == 1;
        torch::optim::LBFGS opt({eta, gamma}, torch::optim::LBFGSOptions(1.0)
                                                  .max_iter(100)
                                                  .history_size(20)
                                                  .tolerance_grad(1e-10)
                                                  .tolerance_change(1e-13)
                                                  .line_search_fn("strong_wolfe"));
        auto closure = [&] {
            opt.zero_grad();
            torch::Tensor l = halfMse(
                predictGdPlusPlus(b, shared ? eta.expand({k}) : eta, shared ? gamma.expand({k}) : gamma), yq);
            l.backward();
            return l;
        };
        for (int round = 0; round < 2; ++round)
            opt.step(closure);
        return std::make_pair(eta.detach(), gamma.detach());
    };
    // The loss has several local minima in the untied scalars; starting them from the tied optimum (two
    // scalars, one basin from η = 1, γ = 0 in our checks) lands in the best one we found.
    auto [eta, gamma] = minimise(torch::ones({1}, torch::kFloat64), torch::zeros({1}, torch::kFloat64));
    if (!tied && k > 1)
        std::tie(eta, gamma) = minimise(eta.expand({k}).clone(), gamma.expand({k}).clone());
    GdPlusPlusParams p;
    for (int64_t l = 0; l < k; ++l) {
        const int64_t i = eta.size(0) == 1 ? 0 : l;
        p.eta.push_back(eta[i].item<double>());
        // Untied, the last step's input transform never reaches the prediction: report it as 0.
        p.gamma.push_back(!tied && l == k - 1 ? 0.0 : gamma[i].item<double>());
        if (!std::isfinite(p.eta.back()) || !std::isfinite(p.gamma.back()))
            throw Error("the GD++ fit diverged (non-finite η or γ at step " + std::to_string(l + 1) + ")");
    }
    return p;
}

std::vector<std::string> baselineNames(const EvalConfig& eval)
{
    std::vector<std::string> names;
    for (const auto& b : eval.baselines) {
        if (b == "gd") {
            for (int64_t k : eval.gd_steps)
                names.push_back("gd_" + std::to_string(k));
        } else if (b == "features_gd") {
            for (int64_t k : eval.gd_steps)
                names.push_back("features_gd_" + std::to_string(k));
        } else if (b == "gd_plus_plus") {
            for (int64_t k : eval.gd_steps)
                if (k > 1)
                    names.push_back("gdpp_" + std::to_string(k));
        } else if (b == "newton") {
            for (int64_t k : eval.newton_steps)
                names.push_back("newton_" + std::to_string(k));
        } else {
            names.push_back(b);
        }
    }
    return names;
}

PromptBatch withFeatures(const PromptBatch& batch, const FeatureMap& phi)
{
    if (!phi)
        throw Error("features_gd: no feature map φ");
    return {phi(batch.x), batch.y, batch.w};
}

namespace {

// Fits run on one intra-op thread (ScopedThreads(1)): floating-point reductions split over a different
// number of threads round differently, and over thousands of Adam steps that changes the fitted
// baseline. With one thread a refit in an analysis equals the fit made during training whatever
// --threads each used.

/// ReLU MLP with seeded He-scaled (fan-in, variance 2/fan_in) weights and zero biases.
struct FeatureMlpImpl : torch::nn::Module {
    std::vector<torch::nn::Linear> layers;
    FeatureMlpImpl(int64_t in, std::vector<int64_t> widths, uint64_t seed)
    {
        auto gen = at::detail::createCPUGenerator(seed);
        torch::NoGradGuard guard;
        for (size_t i = 0; i < widths.size(); ++i) {
            auto lin = register_module(std::to_string(i), torch::nn::Linear(in, widths[i]));
            lin->weight.copy_(torch::randn(lin->weight.sizes(), gen, torch::kFloat32) * std::sqrt(2.0 / double(in)));
            lin->bias.zero_();
            layers.push_back(lin);
            in = widths[i];
        }
    }
    torch::Tensor forward(torch::Tensor h)
    {
        for (size_t i = 0; i < layers.size(); ++i) {
            h = layers[i]->forward(h);
            if (i + 1 < layers.size())
                h = torch::relu(h);
        }
        return h;
    }
};
TORCH_MODULE(FeatureMlp);

/// k GD steps on the read-out over features F [B, N+1, F] (differentiable in F and η). Returns [B].
torch::Tensor gdOnFeatures(const torch::Tensor& F, const torch::Tensor& y, int64_t k, const torch::Tensor& eta)
{
    const int64_t N = F.size(1) - 1;
    const torch::Tensor C = F.narrow(1, 0, N), yc = y.narrow(1, 0, N);
    torch::Tensor w = torch::zeros({F.size(0), F.size(2)}, F.options());
    for (int64_t t = 0; t < k; ++t) {
        const torch::Tensor r = torch::einsum("bnf,bf->bn", {C, w}) - yc;
        w = w - eta / double(N) * torch::einsum("bn,bnf->bf", {r, C});
    }
    return (w * F.select(1, N)).sum(-1);
}

} // namespace

FeaturesGd fitFeaturesGd(const ExperimentConfig& config, int64_t k, uint64_t seed, int64_t steps, int64_t batch,
                         double lr)
{
    if (config.model.feature_dim <= 0)
        throw Error("features_gd: needs a model with a feature MLP (model.feature_dim > 0)");
    static std::mutex mutex;
    static std::map<std::string, FeaturesGd> cache;
    nlohmann::json key = {{"task", toJson(config)["task"]},   {"widths", config.model.feature_mlp},
                          {"dim", config.model.feature_dim}, {"k", k},
                          {"seed", seed},                    {"steps", steps},
                          {"batch", batch},                  {"lr", lr}};
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key.dump()); it != cache.end())
        return it->second;

    torch::AutoGradMode enable(true);
    const ScopedThreads oneThread(1);
    std::vector<int64_t> widths = config.model.feature_mlp;
    widths.push_back(config.model.feature_dim);
    FeatureMlp mlp(config.task.d, widths, mixSeed(seed, 0xFEA7));
    torch::Tensor eta = torch::full({}, 0.1, torch::kFloat32).requires_grad_(true);
    auto params = mlp->parameters();
    params.push_back(eta);
    torch::optim::Adam opt(params, torch::optim::AdamOptions(lr));
    for (int64_t t = 0; t < steps; ++t) {
        const double progress = steps > 1 ? double(t) / double(steps - 1) : 1.0;
        const double lrNow = lr * (0.01 + 0.99 * 0.5 * (1.0 + std::cos(M_PI * progress)));
        for (auto& group : opt.param_groups())
            group.options().set_lr(lrNow);
        const PromptBatch b = samplePrompts(config.task, batch, mixSeed(seed, 0xFEA70000ULL + uint64_t(t)));
        opt.zero_grad();
        torch::Tensor loss = halfMse(gdOnFeatures(mlp->forward(b.x), b.y, k, eta), b.queryY());
        loss.backward();
        torch::nn::utils::clip_grad_norm_(params, 10.0);
        opt.step();
    }
    mlp->eval();
    FeaturesGd fit;
    fit.eta = eta.item<double>();
    fit.phi = [mlp](const torch::Tensor& x) mutable {
        return mlp->forward(x.to(torch::kFloat32)).to(x.scalar_type());
    };
    cache[key.dump()] = fit;
    return fit;
}

FittedBaselines fitBaselines(const ExperimentConfig& config, const PromptBatch& tuning, uint64_t seed)
{
    FittedBaselines f;
    const auto names = baselineNames(config.eval);
    // Dense Gaussian w with Gaussian noise: σ²/w_scale² is the Bayes penalty, so the config's λ stands. Any
    // other task (sparse w, representations, sine) gets λ chosen on held-out prompts.
    const bool gaussianLinear
        = kindOf(config.task) == TaskKind::LinearRegression || kindOf(config.task) == TaskKind::NoisyLinearRegression;
    if (!gaussianLinear && std::find(names.begin(), names.end(), "ridge") != names.end())
        f.ridge_lambda = fitRidgeLambda(tuning);
    for (const auto& name : baselineNames(config.eval)) {
        if (name.rfind("gd_", 0) == 0) {
            const int64_t k = std::stoll(name.substr(3));
            f.eta[name] = (k == 1) ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, k);
        } else if (name.rfind("gdpp_", 0) == 0) {
            f.gdpp[name] = fitGdPlusPlus(config.task, std::stoll(name.substr(5)), seed, config.eval.gdpp_tied);
        } else if (name.rfind("features_gd_", 0) == 0) {
            f.features_gd[name] = fitFeaturesGd(config, std::stoll(name.substr(12)), seed,
                                                config.eval.features_gd_steps);
        }
    }
    return f;
}

FittedBaselines fittedFromMetrics(const std::map<std::string, std::vector<double>>& metrics)
{
    FittedBaselines f;
    for (const auto& [key, values] : metrics) {
        if (values.empty() || !std::isfinite(values.back()))
            continue;
        if (key == "baseline_lambda/ridge") {
            f.ridge_lambda = values.back();
        } else if (key.rfind("baseline_eta/", 0) == 0) {
            f.eta[key.substr(13)] = values.back();
        } else if (key.rfind("baseline_param/", 0) == 0) {
            // baseline_param/gdpp_k/eta_l or …/gamma_l
            const std::string rest = key.substr(15);
            const auto slash = rest.find('/');
            const auto under = rest.rfind('_');
            if (slash == std::string::npos || under == std::string::npos || under < slash)
                continue;
            const std::string name = rest.substr(0, slash);
            const std::string what = rest.substr(slash + 1, under - slash - 1);
            const size_t layer = std::stoul(rest.substr(under + 1));
            auto& p = f.gdpp[name];
            auto& vec = what == "eta" ? p.eta : p.gamma;
            if (vec.size() <= layer)
                vec.resize(layer + 1, std::nan(""));
            vec[layer] = values.back();
        }
    }
    return f;
}

std::map<std::string, double> fittedToMetrics(const FittedBaselines& fitted)
{
    std::map<std::string, double> m;
    for (const auto& [name, eta] : fitted.eta)
        m["baseline_eta/" + name] = eta;
    if (fitted.ridge_lambda >= 0)
        m["baseline_lambda/ridge"] = fitted.ridge_lambda;
    for (const auto& [name, fg] : fitted.features_gd)
        m["baseline_param/" + name + "/eta"] = fg.eta;  // informative only; φ is refitted on load
    for (const auto& [name, p] : fitted.gdpp)
        for (size_t l = 0; l < p.eta.size(); ++l) {
            m["baseline_param/" + name + "/eta_" + std::to_string(l)] = p.eta[l];
            m["baseline_param/" + name + "/gamma_" + std::to_string(l)] = p.gamma[l];
        }
    return m;
}

FittedBaselines fittedOrRefit(const ExperimentConfig& config, const std::map<std::string, std::vector<double>>& metrics)
{
    FittedBaselines f = fittedFromMetrics(metrics);
    std::vector<std::string> missing;
    for (const auto& name : baselineNames(config.eval)) {
        const bool absent = (name.rfind("gd_", 0) == 0 && !f.eta.count(name))
            || (name.rfind("gdpp_", 0) == 0 && !f.gdpp.count(name))
            || (name.rfind("features_gd_", 0) == 0 && !f.features_gd.count(name));  // φ is not stored
        if (absent)
            missing.push_back(name);
    }
    if (missing.empty())
        return f;
    const PromptBatch tuning = samplePrompts(config.task, config.eval.n_prompts, seeds::tuning(config.seed));
    for (const auto& name : missing) {
        // Refit one baseline exactly as the trainer fitted it (same tuning prompts and seed).
        ExperimentConfig one = config;
        const bool gdpp = name.rfind("gdpp_", 0) == 0, feat = name.rfind("features_gd_", 0) == 0;
        one.eval.baselines = {gdpp ? "gd_plus_plus" : feat ? "features_gd" : "gd"};
        one.eval.gd_steps = {std::stoll(name.substr(gdpp ? 5 : feat ? 12 : 3))};
        const FittedBaselines g = fitBaselines(one, tuning, seeds::tuning(config.seed));
        for (const auto& [n, v] : g.eta)
            f.eta[n] = v;
        for (const auto& [n, v] : g.gdpp)
            f.gdpp[n] = v;
        for (const auto& [n, v] : g.features_gd)
            f.features_gd[n] = v;
    }
    return f;
}

torch::Tensor predictBaseline(const std::string& name, const PromptBatch& batch, const ExperimentConfig& config,
                              const FittedBaselines& fitted)
{
    if (name == "zero")
        return predictZero(batch);
    if (name == "least_squares")
        return predictLeastSquares(batch);
    if (name == "ridge")
        return predictRidge(batch, fitted.ridge_lambda >= 0 ? fitted.ridge_lambda : ridgeLambda(config));
    if (name == "knn")
        return predictKnn(batch, 3);
    if (name == "averaging")
        return predictAveraging(batch);
    if (name == "oracle_ridge_phi" || name == "mixture_posterior") {
        if (!isRepresentationTask(kindOf(config.task)))
            throw Error("baseline " + name + ": needs a representation task");
        const auto& reps = taskRepresentations(config.task);
        if (name == "oracle_ridge_phi") {
            // The prompt's own Φ* (for a mixture: the one it was drawn with is unknown here, so use Φ*_1;
            // mixture_posterior is the Bayes-optimal baseline there).
            const double tau = config.task.w_scale, sigma = config.task.noise_std;
            return predictOracleRidgePhi(batch, reps[0], sigma * sigma / (tau * tau));
        }
        std::vector<std::function<torch::Tensor(const torch::Tensor&)>> phis;
        for (const auto& r : reps)
            phis.push_back(r);
        return predictMixturePosterior(batch, phis, config.task.w_scale, config.task.noise_std);
    }
    if (name.rfind("gd_", 0) == 0) {
        auto it = fitted.eta.find(name);
        if (it == fitted.eta.end())
            throw Error("baseline " + name + ": no fitted step size η");
        return predictGd(batch, std::stoll(name.substr(3)), it->second);
    }
    if (name.rfind("features_gd_", 0) == 0) {
        auto it = fitted.features_gd.find(name);
        if (it == fitted.features_gd.end() || !it->second.phi)
            throw Error("baseline " + name + ": no meta-learned features and step size η");
        return predictGd(withFeatures(batch, it->second.phi), std::stoll(name.substr(12)), it->second.eta);
    }
    if (name.rfind("newton_", 0) == 0) {
        const std::string k = name.substr(7);
        if (k.empty() || k.size() > 3 || k.find_first_not_of("0123456789") != std::string::npos)
            throw Error("baseline " + name + ": expected newton_k with k an integer ≥ 0");
        return predictNewton(batch, std::stoll(k), newtonAlphaFromName(config.eval.newton_alpha));
    }
    if (name.rfind("gdpp_", 0) == 0) {
        auto it = fitted.gdpp.find(name);
        if (it == fitted.gdpp.end() || it->second.eta.size() != size_t(std::stoll(name.substr(5))))
            throw Error("baseline " + name + ": no fitted GD++ parameters");
        const auto& p = it->second;
        return predictGdPlusPlus(batch, torch::tensor(p.eta, torch::kFloat64), torch::tensor(p.gamma, torch::kFloat64));
    }
    throw Error("unknown baseline \"" + name + "\"");
}

} // namespace icl
