#include "core/baselines/baselines.h"

#include <cmath>

#include "core/error.h"

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

double lineSearchEta(const PromptBatch& batch, int64_t k, double lo, double hi)
{
    const torch::Tensor y = batch.queryY().to(torch::kFloat64);
    auto loss = [&](double eta) {
        const double l = halfMse(predictGd(batch, k, eta).to(torch::kFloat64), y).item<double>();
        return std::isfinite(l) ? l : std::numeric_limits<double>::infinity();
    };
    const int cells = 250;
    const double h = (hi - lo) / cells;
    double bestEta = lo, bestLoss = loss(lo);
    for (int i = 1; i <= cells; ++i) {
        const double eta = lo + i * h;
        const double l = loss(eta);
        if (l < bestLoss) {
            bestLoss = l;
            bestEta = eta;
        }
    }
    double a = std::max(lo, bestEta - h), b = std::min(hi, bestEta + h);
    const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
    double c = b - phi * (b - a), dd = a + phi * (b - a);
    double fc = loss(c), fd = loss(dd);
    while (b - a > 1e-10 * std::max(1.0, std::abs(b))) {
        if (fc < fd) {
            b = dd;
            dd = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = loss(c);
        } else {
            a = c;
            c = dd;
            fc = fd;
            dd = a + phi * (b - a);
            fd = loss(dd);
        }
    }
    return 0.5 * (a + b);
}

double ridgeLambda(const ExperimentConfig& config)
{
    if (config.eval.ridge_lambda >= 0.0)
        return config.eval.ridge_lambda;
    const double tau = config.task.w_scale;
    return config.task.noise_std * config.task.noise_std / (tau * tau);
}

std::vector<std::string> baselineNames(const EvalConfig& eval)
{
    std::vector<std::string> names;
    for (const auto& b : eval.baselines) {
        if (b == "gd") {
            for (int64_t k : eval.gd_steps)
                names.push_back("gd_" + std::to_string(k));
        } else {
            names.push_back(b);
        }
    }
    return names;
}

std::map<std::string, double> fitGdEtas(const PromptBatch& tuning, const EvalConfig& eval)
{
    std::map<std::string, double> etas;
    if (std::find(eval.baselines.begin(), eval.baselines.end(), "gd") == eval.baselines.end())
        return etas;
    for (int64_t k : eval.gd_steps)
        etas["gd_" + std::to_string(k)] = (k == 1) ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, k);
    return etas;
}

torch::Tensor predictBaseline(const std::string& name, const PromptBatch& batch, const ExperimentConfig& config,
                              const std::map<std::string, double>& etas)
{
    if (name == "zero")
        return predictZero(batch);
    if (name == "least_squares")
        return predictLeastSquares(batch);
    if (name == "ridge")
        return predictRidge(batch, ridgeLambda(config));
    if (name.rfind("gd_", 0) == 0) {
        auto it = etas.find(name);
        if (it == etas.end())
            throw Error("baseline " + name + ": no fitted step size η");
        return predictGd(batch, std::stoll(name.substr(3)), it->second);
    }
    throw Error("unknown baseline \"" + name + "\"");
}

} // namespace icl
