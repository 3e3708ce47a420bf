#include "core/analysis/probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/error.h"

namespace icl {

namespace {

std::string shapeOf(const torch::Tensor& t)
{
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

/// A defined, floating, 2-D tensor with at least one row and one column.
void checkMatrix(const torch::Tensor& t, const std::string& what)
{
    if (!t.defined())
        throw Error(what + ": tensor is undefined");
    if (t.dim() != 2)
        throw Error(what + ": expected a 2-D tensor [n, width], got shape " + shapeOf(t));
    if (t.size(0) == 0)
        throw Error(what + ": no rows (shape " + shapeOf(t) + ")");
    if (t.size(1) == 0)
        throw Error(what + ": no columns (shape " + shapeOf(t) + ")");
    if (!t.is_floating_point())
        throw Error(what + ": expected a floating-point tensor, got " + std::string(c10::toString(t.scalar_type())));
}

/// One fast reduction instead of an elementwise isfinite (which is ~20× slower on the CPU): a NaN or
/// infinity makes the sum non-finite; so would finite values summing beyond 1e308, which no probe fits.
void checkFinite(const torch::Tensor& t, const std::string& what)
{
    if (!std::isfinite(t.sum().item<double>()))
        throw Error(what + ": contains NaN or infinite values");
}

/// Checks features [n, p] and targets [n, q] of one set and returns them as float64.
std::pair<torch::Tensor, torch::Tensor> checkedSet(const torch::Tensor& features, const torch::Tensor& targets,
                                                   const std::string& set)
{
    checkMatrix(features, set + " features");
    checkMatrix(targets, set + " targets");
    if (features.size(0) != targets.size(0))
        throw Error(set + " features " + shapeOf(features) + " and targets " + shapeOf(targets)
                    + " have different numbers of rows");
    if (features.device() != targets.device())
        throw Error(set + " features and targets are on different devices");
    torch::Tensor x = features.to(torch::kFloat64), y = targets.to(torch::kFloat64);
    checkFinite(x, set + " features");
    checkFinite(y, set + " targets");
    return {x, y};
}

void checkLambda(double lambda)
{
    if (!std::isfinite(lambda) || lambda < 0.0)
        throw Error("ridge probe: lambda must be finite and >= 0, got " + std::to_string(lambda));
}

std::vector<double> checkedGrid(const std::vector<double>& grid)
{
    if (grid.empty())
        throw Error("ridge probe: the lambda grid is empty");
    for (double l : grid)
        checkLambda(l);
    std::vector<double> sorted = grid;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    return sorted;
}

/// Ridge solutions for every λ from one eigendecomposition. Primal form from the centred Gram
/// G = XcᵀXc [p, p] and cross term C = XcᵀYc [p, q]:  W(λ) = V diag(1/(s + nλ)) Vᵀ C.
/// Dual form from Xc [n, p], Yc [n, q] with K = XcXcᵀ = U diag(s) Uᵀ:  W(λ) = Xcᵀ U diag(1/(s + nλ)) Uᵀ Yc.
/// Directions with s ≤ max(rows, cols)·ε·s_max are dropped (exact zeros up to rounding).
class RidgePath {
public:
    static RidgePath primal(const torch::Tensor& gram, const torch::Tensor& cross, int64_t n)
    {
        RidgePath r;
        r.n_ = n;
        r.decompose(gram, std::max<int64_t>(n, gram.size(0)));
        r.proj_ = torch::matmul(r.basis_.transpose(0, 1), cross);  // [r, q]
        return r;
    }

    static RidgePath dual(const torch::Tensor& xc, const torch::Tensor& yc)
    {
        RidgePath r;
        r.n_ = xc.size(0);
        r.xc_ = xc;
        r.decompose(torch::matmul(xc, xc.transpose(0, 1)), std::max(xc.size(0), xc.size(1)));
        r.proj_ = torch::matmul(r.basis_.transpose(0, 1), yc);  // [r, q]
        return r;
    }

    /// From centred data, choosing the cheaper form.
    static RidgePath fromCentred(const torch::Tensor& xc, const torch::Tensor& yc)
    {
        if (xc.size(1) <= xc.size(0))
            return primal(torch::matmul(xc.transpose(0, 1), xc), torch::matmul(xc.transpose(0, 1), yc), xc.size(0));
        return dual(xc, yc);
    }

    torch::Tensor weights(double lambda) const  // [p, q]
    {
        const torch::Tensor scaled = proj_ / (eig_ + static_cast<double>(n_) * lambda).unsqueeze(1);
        const torch::Tensor w = torch::matmul(basis_, scaled);  // primal: [p, q]; dual: [n, q]
        return xc_.defined() ? torch::matmul(xc_.transpose(0, 1), w) : w;
    }

private:
    void decompose(const torch::Tensor& sym, int64_t size_for_tol)
    {
        auto [s, v] = torch::linalg::eigh(sym, "L");  // ascending
        const double s_max = s.numel() > 0 ? s.max().item<double>() : 0.0;
        const double tol = static_cast<double>(size_for_tol) * std::numeric_limits<double>::epsilon() * s_max;
        const torch::Tensor keep = (s > tol).nonzero().squeeze(1);
        eig_ = s.index_select(0, keep);
        basis_ = v.index_select(1, keep);
    }

    int64_t n_ = 0;
    torch::Tensor eig_;    // [r]
    torch::Tensor basis_;  // primal V [p, r]; dual U [n, r]
    torch::Tensor proj_;   // [r, q]
    torch::Tensor xc_;     // dual only
};

RidgeProbe fitChecked(const torch::Tensor& x, const torch::Tensor& y, double lambda)
{
    const torch::Tensor xm = x.mean(0), ym = y.mean(0);
    const torch::Tensor w = RidgePath::fromCentred(x - xm, y - ym).weights(lambda);
    return {w, ym - torch::matmul(xm, w), lambda};
}

torch::Tensor predictChecked(const RidgeProbe& probe, const torch::Tensor& x)
{
    return torch::matmul(x, probe.weights) + probe.bias;
}

double meanSquaredError(const torch::Tensor& pred, const torch::Tensor& target)
{
    return (pred - target).pow(2).mean().item<double>();
}

uint64_t splitmix64(uint64_t& state)
{
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// Fold of each row: a Fisher–Yates permutation from `seed`, row at permuted position i in fold i mod K.
std::vector<int64_t> foldOf(int64_t n, int folds, uint64_t seed)
{
    std::vector<int64_t> perm(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        perm[static_cast<size_t>(i)] = i;
    uint64_t state = seed;
    for (int64_t i = n - 1; i > 0; --i) {
        const auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
    }
    std::vector<int64_t> fold(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        fold[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i % folds;
    return fold;
}

LambdaCv crossValidateChecked(const torch::Tensor& x_in, const torch::Tensor& y_in, const std::vector<double>& grid_in,
                              int folds, uint64_t seed)
{
    const std::vector<double> grid = checkedGrid(grid_in);
    const int64_t n = x_in.size(0), p = x_in.size(1);
    if (folds < 2)
        throw Error("ridge probe: cross-validation needs at least 2 folds, got " + std::to_string(folds));
    if (n < folds)
        throw Error("ridge probe: cross-validation with " + std::to_string(folds) + " folds needs at least "
                    + std::to_string(folds) + " rows, got " + std::to_string(n));

    // Centre on the whole set first: the fold statistics below are then differences of sums of small
    // numbers, so the per-fold centring loses nothing to cancellation. MSEs are unaffected.
    const torch::Tensor x = x_in - x_in.mean(0), y = y_in - y_in.mean(0);
    const std::vector<int64_t> fold = foldOf(n, folds, seed);
    const auto long_opts = torch::TensorOptions().dtype(torch::kLong);

    std::vector<torch::Tensor> train_idx(static_cast<size_t>(folds)), x_val, y_val;
    for (int k = 0; k < folds; ++k) {
        std::vector<int64_t> val, train;
        for (int64_t i = 0; i < n; ++i)
            (fold[static_cast<size_t>(i)] == k ? val : train).push_back(i);
        const torch::Tensor val_idx = torch::tensor(val, long_opts).to(x.device());
        x_val.push_back(x.index_select(0, val_idx));
        y_val.push_back(y.index_select(0, val_idx));
        train_idx[static_cast<size_t>(k)] = torch::tensor(train, long_opts).to(x.device());
    }
    const bool primal = p <= n - (n + folds - 1) / folds;  // p ≤ the smallest training part

    // Primal form: per-fold sufficient statistics, training statistics by subtraction from the totals
    // (two passes of Gram products over the data instead of K).
    torch::Tensor gram_all, cross_all, sx_all, sy_all;
    std::vector<torch::Tensor> gram_k, cross_k, sx_k, sy_k;
    if (primal) {
        for (int k = 0; k < folds; ++k) {
            const torch::Tensor& xv = x_val[static_cast<size_t>(k)];
            const torch::Tensor& yv = y_val[static_cast<size_t>(k)];
            gram_k.push_back(torch::matmul(xv.transpose(0, 1), xv));
            cross_k.push_back(torch::matmul(xv.transpose(0, 1), yv));
            sx_k.push_back(xv.sum(0));
            sy_k.push_back(yv.sum(0));
        }
        gram_all = torch::stack(gram_k).sum(0);
        cross_all = torch::stack(cross_k).sum(0);
        sx_all = torch::stack(sx_k).sum(0);
        sy_all = torch::stack(sy_k).sum(0);
    }

    std::vector<double> total(grid.size(), 0.0);
    for (int k = 0; k < folds; ++k) {
        const auto ku = static_cast<size_t>(k);
        const torch::Tensor& xv = x_val[ku];
        const torch::Tensor& yv = y_val[ku];
        const int64_t n_tr = train_idx[ku].size(0);
        torch::Tensor xm, ym;
        RidgePath path;
        if (primal) {
            xm = (sx_all - sx_k[ku]) / static_cast<double>(n_tr);
            ym = (sy_all - sy_k[ku]) / static_cast<double>(n_tr);
            const torch::Tensor gram = (gram_all - gram_k[ku]) - static_cast<double>(n_tr) * torch::outer(xm, xm);
            const torch::Tensor cross = (cross_all - cross_k[ku]) - static_cast<double>(n_tr) * torch::outer(xm, ym);
            path = RidgePath::primal(gram, cross, n_tr);
        } else {
            const torch::Tensor xt = x.index_select(0, train_idx[ku]);
            const torch::Tensor yt = y.index_select(0, train_idx[ku]);
            xm = xt.mean(0);
            ym = yt.mean(0);
            path = RidgePath::dual(xt - xm, yt - ym);
        }
        const torch::Tensor xv_c = xv - xm, yv_c = yv - ym;
        for (size_t g = 0; g < grid.size(); ++g)
            total[g] += meanSquaredError(torch::matmul(xv_c, path.weights(grid[g])), yv_c);
    }

    LambdaCv cv;
    cv.grid = grid;
    for (double t : total)
        cv.mean_mse.push_back(t / folds);
    size_t best = 0;
    for (size_t g = 1; g < grid.size(); ++g)
        if (cv.mean_mse[g] <= cv.mean_mse[best] * (1.0 + 1e-12))
            best = g;
    cv.best_lambda = grid[best];
    cv.best_mse = cv.mean_mse[best];
    return cv;
}

ProbeScore scoreChecked(const torch::Tensor& xf, const torch::Tensor& yf, const torch::Tensor& xt,
                        const torch::Tensor& yt, const std::vector<double>& grid, int folds, uint64_t seed)
{
    if (xf.size(1) != xt.size(1))
        throw Error("ridge probe: fit features have " + std::to_string(xf.size(1)) + " columns, test features "
                    + std::to_string(xt.size(1)));
    if (yf.size(1) != yt.size(1))
        throw Error("ridge probe: fit targets have " + std::to_string(yf.size(1)) + " columns, test targets "
                    + std::to_string(yt.size(1)));
    if (xf.device() != xt.device())
        throw Error("ridge probe: fit and test sets are on different devices");
    const LambdaCv cv = crossValidateChecked(xf, yf, grid, folds, seed);
    const RidgeProbe probe = fitChecked(xf, yf, cv.best_lambda);
    ProbeScore s;
    s.lambda = cv.best_lambda;
    s.cv_mse = cv.best_mse;
    s.mse = meanSquaredError(predictChecked(probe, xt), yt);
    s.target_variance = yt.var(0, /*unbiased=*/false).mean().item<double>();
    s.normalised_mse = s.target_variance > 0.0 ? s.mse / s.target_variance : std::numeric_limits<double>::quiet_NaN();
    s.r2 = 1.0 - s.normalised_mse;
    return s;
}

} // namespace

std::vector<double> defaultLambdaGrid()
{
    std::vector<double> grid;
    for (int e = -6; e <= 3; ++e)
        grid.push_back(std::pow(10.0, e));
    return grid;
}

RidgeProbe fitRidgeProbe(const torch::Tensor& features, const torch::Tensor& targets, double lambda)
{
    checkLambda(lambda);
    const auto [x, y] = checkedSet(features, targets, "probe");
    return fitChecked(x, y, lambda);
}

torch::Tensor predictProbe(const RidgeProbe& probe, const torch::Tensor& features)
{
    checkMatrix(features, "probe features");
    if (!probe.weights.defined() || !probe.bias.defined() || probe.weights.dim() != 2 || probe.bias.dim() != 1
        || probe.weights.size(1) != probe.bias.size(0))
        throw Error("predictProbe: the probe is not fitted (weights [p, q], bias [q] expected)");
    if (features.size(1) != probe.weights.size(0))
        throw Error("predictProbe: features " + shapeOf(features) + " do not match probe weights "
                    + shapeOf(probe.weights));
    return predictChecked(probe, features.to(probe.weights.options()));
}

LambdaCv crossValidateLambda(const torch::Tensor& features, const torch::Tensor& targets,
                             const std::vector<double>& grid, int folds, uint64_t seed)
{
    const auto [x, y] = checkedSet(features, targets, "probe");
    return crossValidateChecked(x, y, grid, folds, seed);
}

double chooseLambdaByCv(const torch::Tensor& features, const torch::Tensor& targets, const std::vector<double>& grid,
                        int folds, uint64_t seed)
{
    return crossValidateLambda(features, targets, grid, folds, seed).best_lambda;
}

ProbeScore scoreProbe(const torch::Tensor& fit_features, const torch::Tensor& fit_targets,
                      const torch::Tensor& test_features, const torch::Tensor& test_targets,
                      const std::vector<double>& grid, int folds, uint64_t seed)
{
    const auto [xf, yf] = checkedSet(fit_features, fit_targets, "fit");
    const auto [xt, yt] = checkedSet(test_features, test_targets, "test");
    return scoreChecked(xf, yf, xt, yt, grid, folds, seed);
}

std::vector<ProbeScore> probeLayers(const std::vector<torch::Tensor>& fit_layers, const torch::Tensor& fit_targets,
                                    const std::vector<torch::Tensor>& test_layers, const torch::Tensor& test_targets,
                                    const std::vector<double>& grid, int folds, uint64_t seed)
{
    if (fit_layers.empty())
        throw Error("probeLayers: no layers");
    if (fit_layers.size() != test_layers.size())
        throw Error("probeLayers: " + std::to_string(fit_layers.size()) + " fit layers but "
                    + std::to_string(test_layers.size()) + " test layers");
    checkMatrix(fit_targets, "fit targets");
    checkMatrix(test_targets, "test targets");
    const torch::Tensor yf = fit_targets.to(torch::kFloat64), yt = test_targets.to(torch::kFloat64);
    checkFinite(yf, "fit targets");
    checkFinite(yt, "test targets");
    std::vector<ProbeScore> scores;
    for (size_t l = 0; l < fit_layers.size(); ++l) {
        const std::string where = "layer " + std::to_string(l) + ": ";
        try {
            const auto [xf, yf_l] = checkedSet(fit_layers[l], yf, "fit");
            const auto [xt, yt_l] = checkedSet(test_layers[l], yt, "test");
            scores.push_back(scoreChecked(xf, yf_l, xt, yt_l, grid, folds, seed));
        } catch (const Error& e) {
            throw Error("probeLayers: " + where + e.what());
        }
    }
    return scores;
}

ProbeCurve makeProbeCurve(const std::string& target, const std::string& positions,
                          const std::vector<ProbeScore>& scores, int64_t n_fit, int64_t n_test)
{
    ProbeCurve c;
    c.target = target;
    c.positions = positions;
    c.layer_labels = probeLayerLabels(static_cast<int64_t>(scores.size()) - 1);
    if (scores.empty())
        c.layer_labels.clear();
    for (const ProbeScore& s : scores) {
        c.normalised_mse.push_back(s.normalised_mse);
        c.mse.push_back(s.mse);
        c.r2.push_back(s.r2);
        c.lambda.push_back(s.lambda);
    }
    c.n_fit = n_fit;
    c.n_test = n_test;
    return c;
}

} // namespace icl
