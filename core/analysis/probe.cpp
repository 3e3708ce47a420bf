#include "core/analysis/probe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
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

/// Ridge solutions W(λ) = (M + nλ·I)⁻¹ R for any λ, from the symmetric matrix M and right-hand side R:
/// primal form M = G = XcᵀXc [p, p], R = C = XcᵀYc [p, q], W = the solution; dual form M = K = XcXcᵀ
/// [n, n], R = Yc [n, q], W = Xcᵀ·(the solution). For λ > 0 the system is solved by a Cholesky factor of
/// M + nλ·I (cached per λ and shared by every target of the same features) when the shift dominates
/// rounding, nλ ≥ 100·max(rows, cols)·ε·‖M‖_F (so the directions the eigendecomposition would drop
/// are shifted 100× past their rounding noise and agree with it to rounding); for smaller λ, λ = 0,
/// or an M + nλ·I that is not numerically positive definite, through one eigendecomposition
/// M = V diag(s) Vᵀ: W = V diag(1/(s + nλ)) Vᵀ R with directions s ≤ max(rows, cols)·ε·s_max dropped
/// (exact zeros up to rounding, as a pseudo-inverse does). The Cholesky solve is the cheaper of the two
/// (docs/performance.md, "Probes").
class RidgePath {
public:
    RidgePath() = default;

    static RidgePath primal(const torch::Tensor& gram, const torch::Tensor& cross, int64_t n)
    {
        return RidgePath(gram, cross, n, std::max<int64_t>(n, gram.size(0)), torch::Tensor());
    }

    static RidgePath dual(const torch::Tensor& xc, const torch::Tensor& yc)
    {
        return RidgePath(torch::matmul(xc, xc.transpose(0, 1)), yc, xc.size(0), std::max(xc.size(0), xc.size(1)), xc);
    }

    /// From centred data, choosing the cheaper form.
    static RidgePath fromCentred(const torch::Tensor& xc, const torch::Tensor& yc)
    {
        if (xc.size(1) <= xc.size(0))
            return primal(torch::matmul(xc.transpose(0, 1), xc), torch::matmul(xc.transpose(0, 1), yc), xc.size(0));
        return dual(xc, yc);
    }

    /// The same matrix (and its factorisations) for other targets: `rhs` is XcᵀYc [p, q'] (primal) or
    /// Yc [n, q'] (dual).
    RidgePath retarget(const torch::Tensor& rhs) const
    {
        RidgePath r = *this;
        r.rhs_ = rhs;
        return r;
    }

    torch::Tensor weights(double lambda) const  // [p, q]
    {
        torch::Tensor w;  // primal: [p, q]; dual: [n, q]
        const torch::Tensor factor = shared_->cholesky(lambda, n_, size_for_tol_);
        if (factor.defined()) {
            w = torch::cholesky_solve(rhs_, factor);
        } else {
            const Spectrum& sp = shared_->spectrum(size_for_tol_);
            const torch::Tensor proj = torch::matmul(sp.basis.transpose(0, 1), rhs_);  // [r, q]
            w = torch::matmul(sp.basis, proj / (sp.eig + static_cast<double>(n_) * lambda).unsqueeze(1));
        }
        return xc_.defined() ? torch::matmul(xc_.transpose(0, 1), w) : w;
    }

private:
    struct Spectrum {
        torch::Tensor eig;    // [r]
        torch::Tensor basis;  // [m, r]
    };
    /// What every target of the same features shares: M, its Cholesky factors by λ, its spectrum.
    struct Shared {
        torch::Tensor sym;
        std::vector<std::pair<double, torch::Tensor>> factors;  // λ → lower factor (undefined: not PD)
        std::optional<Spectrum> spec;

        double frobenius = -1.0;  // ‖M‖_F, computed on first use

        /// The lower Cholesky factor of M + nλ·I, or undefined when the eigendecomposition must be used.
        torch::Tensor cholesky(double lambda, int64_t n, int64_t size_for_tol)
        {
            for (const auto& [l, f] : factors)
                if (l == lambda)
                    return f;
            if (frobenius < 0.0)
                frobenius = sym.norm().item<double>();  // the 2-norm of all entries
            const double shift = static_cast<double>(n) * lambda;
            if (!(shift > 0.0)
                || shift < 100.0 * static_cast<double>(size_for_tol) * std::numeric_limits<double>::epsilon() * frobenius)
                return torch::Tensor();
            const torch::Tensor shifted = sym + shift * torch::eye(sym.size(0), sym.options());
            auto [factor, info] = torch::linalg_cholesky_ex(shifted, /*upper=*/false, /*check_errors=*/false);
            if (info.item<int64_t>() != 0)
                factor = torch::Tensor();
            factors.emplace_back(lambda, factor);
            return factor;
        }

        const Spectrum& spectrum(int64_t size_for_tol)
        {
            if (!spec) {
                auto [s, v] = torch::linalg::eigh(sym, "L");  // ascending
                const double s_max = s.numel() > 0 ? s.max().item<double>() : 0.0;
                const double tol = static_cast<double>(size_for_tol) * std::numeric_limits<double>::epsilon() * s_max;
                const torch::Tensor keep = (s > tol).nonzero().squeeze(1);
                spec = Spectrum {s.index_select(0, keep), v.index_select(1, keep)};
            }
            return *spec;
        }
    };

    RidgePath(const torch::Tensor& sym, const torch::Tensor& rhs, int64_t n, int64_t size_for_tol,
              const torch::Tensor& xc)
        : n_(n), size_for_tol_(size_for_tol), rhs_(rhs), xc_(xc), shared_(std::make_shared<Shared>())
    {
        shared_->sym = sym;
    }

    int64_t n_ = 0;
    int64_t size_for_tol_ = 0;
    torch::Tensor rhs_;  // primal C [p, q]; dual Yc [n, q]
    torch::Tensor xc_;   // dual only
    std::shared_ptr<Shared> shared_;
};

RidgeProbe fitChecked(const torch::Tensor& x, const torch::Tensor& y, double lambda)
{
    const torch::Tensor xm = x.mean(0), ym = y.mean(0);
    const torch::Tensor w = RidgePath::fromCentred(x - xm, y - ym).weights(lambda);
    return {w, ym - torch::matmul(xm, w), lambda};
}

/// fitChecked for several targets ys[t] [n, q_t] with penalties lambdas[t], sharing the
/// decomposition of the features (each probe equals its own fitChecked: same operations per target).
std::vector<RidgeProbe> fitCheckedTargets(const torch::Tensor& x, const std::vector<torch::Tensor>& ys,
                                          const std::vector<double>& lambdas)
{
    const torch::Tensor xm = x.mean(0), xc = x - xm;
    const bool primal = xc.size(1) <= xc.size(0);
    std::vector<RidgeProbe> probes;
    RidgePath first;
    for (size_t t = 0; t < ys.size(); ++t) {
        const torch::Tensor ym = ys[t].mean(0), yc = ys[t] - ym;
        if (t == 0)
            first = RidgePath::fromCentred(xc, yc);
        const RidgePath path = t == 0 ? first : first.retarget(primal ? torch::matmul(xc.transpose(0, 1), yc) : yc);
        const torch::Tensor w = path.weights(lambdas[t]);
        probes.push_back({w, ym - torch::matmul(xm, w), lambdas[t]});
    }
    return probes;
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

/// K-fold cross-validation of λ for several targets ys[t] [n, q_t] on the same features: the fold
/// statistics and eigendecompositions of the features are shared, and each target's curve equals
/// its own single-target run (the same operations on its columns).
std::vector<LambdaCv> crossValidateTargets(const torch::Tensor& x_in, const std::vector<torch::Tensor>& ys_in,
                                           const std::vector<double>& grid_in, int folds, uint64_t seed)
{
    const std::vector<double> grid = checkedGrid(grid_in);
    const int64_t n = x_in.size(0), p = x_in.size(1);
    const size_t nt = ys_in.size();
    if (folds < 2)
        throw Error("ridge probe: cross-validation needs at least 2 folds, got " + std::to_string(folds));
    if (n < folds)
        throw Error("ridge probe: cross-validation with " + std::to_string(folds) + " folds needs at least "
                    + std::to_string(folds) + " rows, got " + std::to_string(n));

    // Centre on the whole set first: the fold statistics below are then differences of sums of small
    // numbers, so the per-fold centring loses nothing to cancellation. MSEs are unaffected.
    const torch::Tensor x = x_in - x_in.mean(0);
    std::vector<torch::Tensor> ys;
    for (const torch::Tensor& y : ys_in)
        ys.push_back(y - y.mean(0));
    const std::vector<int64_t> fold = foldOf(n, folds, seed);
    const auto long_opts = torch::TensorOptions().dtype(torch::kLong);

    // x_val[k], y_val[t][k]: the validation rows of fold k
    std::vector<torch::Tensor> train_idx(static_cast<size_t>(folds)), x_val;
    std::vector<std::vector<torch::Tensor>> y_val(nt);
    for (int k = 0; k < folds; ++k) {
        std::vector<int64_t> val, train;
        for (int64_t i = 0; i < n; ++i)
            (fold[static_cast<size_t>(i)] == k ? val : train).push_back(i);
        const torch::Tensor val_idx = torch::tensor(val, long_opts).to(x.device());
        x_val.push_back(x.index_select(0, val_idx));
        for (size_t t = 0; t < nt; ++t)
            y_val[t].push_back(ys[t].index_select(0, val_idx));
        train_idx[static_cast<size_t>(k)] = torch::tensor(train, long_opts).to(x.device());
    }
    const bool primal = p <= n - (n + folds - 1) / folds;  // p ≤ the smallest training part

    // Primal form: per-fold sufficient statistics, training statistics by subtraction from the totals
    // (two passes of Gram products over the data instead of K).
    torch::Tensor gram_all, sx_all;
    std::vector<torch::Tensor> gram_k, sx_k, cross_all(nt), sy_all(nt);
    std::vector<std::vector<torch::Tensor>> cross_k(nt), sy_k(nt);
    if (primal) {
        for (int k = 0; k < folds; ++k) {
            const torch::Tensor& xv = x_val[static_cast<size_t>(k)];
            gram_k.push_back(torch::matmul(xv.transpose(0, 1), xv));
            sx_k.push_back(xv.sum(0));
            for (size_t t = 0; t < nt; ++t) {
                const torch::Tensor& yv = y_val[t][static_cast<size_t>(k)];
                cross_k[t].push_back(torch::matmul(xv.transpose(0, 1), yv));
                sy_k[t].push_back(yv.sum(0));
            }
        }
        gram_all = torch::stack(gram_k).sum(0);
        sx_all = torch::stack(sx_k).sum(0);
        for (size_t t = 0; t < nt; ++t) {
            cross_all[t] = torch::stack(cross_k[t]).sum(0);
            sy_all[t] = torch::stack(sy_k[t]).sum(0);
        }
    }

    std::vector<std::vector<double>> total(nt, std::vector<double>(grid.size(), 0.0));
    for (int k = 0; k < folds; ++k) {
        const auto ku = static_cast<size_t>(k);
        const torch::Tensor& xv = x_val[ku];
        const int64_t n_tr = train_idx[ku].size(0);
        torch::Tensor xm, gram, xt_c;
        RidgePath first;
        if (primal) {
            xm = (sx_all - sx_k[ku]) / static_cast<double>(n_tr);
            gram = (gram_all - gram_k[ku]) - static_cast<double>(n_tr) * torch::outer(xm, xm);
        } else {
            const torch::Tensor xt = x.index_select(0, train_idx[ku]);
            xm = xt.mean(0);
            xt_c = xt - xm;
        }
        const torch::Tensor xv_c = xv - xm;
        for (size_t t = 0; t < nt; ++t) {
            torch::Tensor ym;
            RidgePath path;
            if (primal) {
                ym = (sy_all[t] - sy_k[t][ku]) / static_cast<double>(n_tr);
                const torch::Tensor cross
                    = (cross_all[t] - cross_k[t][ku]) - static_cast<double>(n_tr) * torch::outer(xm, ym);
                path = t == 0 ? RidgePath::primal(gram, cross, n_tr) : first.retarget(cross);
            } else {
                const torch::Tensor yt = ys[t].index_select(0, train_idx[ku]);
                ym = yt.mean(0);
                path = t == 0 ? RidgePath::dual(xt_c, yt - ym) : first.retarget(yt - ym);
            }
            if (t == 0)
                first = path;
            const torch::Tensor yv_c = y_val[t][ku] - ym;
            for (size_t g = 0; g < grid.size(); ++g)
                total[t][g] += meanSquaredError(torch::matmul(xv_c, path.weights(grid[g])), yv_c);
        }
    }

    std::vector<LambdaCv> out;
    for (size_t t = 0; t < nt; ++t) {
        LambdaCv cv;
        cv.grid = grid;
        for (double v : total[t])
            cv.mean_mse.push_back(v / folds);
        size_t best = 0;
        for (size_t g = 1; g < grid.size(); ++g)
            if (cv.mean_mse[g] <= cv.mean_mse[best] * (1.0 + 1e-12))
                best = g;
        cv.best_lambda = grid[best];
        cv.best_mse = cv.mean_mse[best];
        out.push_back(cv);
    }
    return out;
}

LambdaCv crossValidateChecked(const torch::Tensor& x, const torch::Tensor& y, const std::vector<double>& grid,
                              int folds, uint64_t seed)
{
    return crossValidateTargets(x, {y}, grid, folds, seed).at(0);
}

/// scoreChecked for several targets on the same features (yfs[t] [n_fit, q_t], yts[t] [n_test, q_t]):
/// one cross-validation and one refit sharing the features' decompositions; each score equals its
/// own single-target run.
std::vector<ProbeScore> scoreCheckedTargets(const torch::Tensor& xf, const std::vector<torch::Tensor>& yfs,
                                            const torch::Tensor& xt, const std::vector<torch::Tensor>& yts,
                                            const std::vector<double>& grid, int folds, uint64_t seed)
{
    if (xf.size(1) != xt.size(1))
        throw Error("ridge probe: fit features have " + std::to_string(xf.size(1)) + " columns, test features "
                    + std::to_string(xt.size(1)));
    for (size_t t = 0; t < yfs.size(); ++t)
        if (yfs[t].size(1) != yts[t].size(1))
            throw Error("ridge probe: fit targets have " + std::to_string(yfs[t].size(1))
                        + " columns, test targets " + std::to_string(yts[t].size(1)));
    if (xf.device() != xt.device())
        throw Error("ridge probe: fit and test sets are on different devices");
    const std::vector<LambdaCv> cvs = crossValidateTargets(xf, yfs, grid, folds, seed);
    std::vector<double> lambdas;
    for (const LambdaCv& cv : cvs)
        lambdas.push_back(cv.best_lambda);
    const std::vector<RidgeProbe> probes = fitCheckedTargets(xf, yfs, lambdas);
    std::vector<ProbeScore> scores;
    for (size_t t = 0; t < yfs.size(); ++t) {
        ProbeScore s;
        s.lambda = cvs[t].best_lambda;
        s.cv_mse = cvs[t].best_mse;
        s.mse = meanSquaredError(predictChecked(probes[t], xt), yts[t]);
        s.target_variance = yts[t].var(0, /*unbiased=*/false).mean().item<double>();
        s.normalised_mse
            = s.target_variance > 0.0 ? s.mse / s.target_variance : std::numeric_limits<double>::quiet_NaN();
        s.r2 = 1.0 - s.normalised_mse;
        scores.push_back(s);
    }
    return scores;
}

ProbeScore scoreChecked(const torch::Tensor& xf, const torch::Tensor& yf, const torch::Tensor& xt,
                        const torch::Tensor& yt, const std::vector<double>& grid, int folds, uint64_t seed)
{
    return scoreCheckedTargets(xf, {yf}, xt, {yt}, grid, folds, seed).at(0);
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
    return probeLayersForTargets(fit_layers, {fit_targets}, test_layers, {test_targets}, grid, folds, seed).at(0);
}

std::vector<std::vector<ProbeScore>> probeLayersForTargets(const std::vector<torch::Tensor>& fit_layers,
                                                           const std::vector<torch::Tensor>& fit_targets,
                                                           const std::vector<torch::Tensor>& test_layers,
                                                           const std::vector<torch::Tensor>& test_targets,
                                                           const std::vector<double>& grid, int folds, uint64_t seed)
{
    if (fit_layers.empty())
        throw Error("probeLayers: no layers");
    if (fit_layers.size() != test_layers.size())
        throw Error("probeLayers: " + std::to_string(fit_layers.size()) + " fit layers but "
                    + std::to_string(test_layers.size()) + " test layers");
    if (fit_targets.empty() || fit_targets.size() != test_targets.size())
        throw Error("probeLayers: " + std::to_string(fit_targets.size()) + " fit targets but "
                    + std::to_string(test_targets.size()) + " test targets");
    std::vector<torch::Tensor> yfs, yts;
    for (size_t t = 0; t < fit_targets.size(); ++t) {
        checkMatrix(fit_targets[t], "fit targets");
        checkMatrix(test_targets[t], "test targets");
        yfs.push_back(fit_targets[t].to(torch::kFloat64));
        yts.push_back(test_targets[t].to(torch::kFloat64));
        checkFinite(yfs.back(), "fit targets");
        checkFinite(yts.back(), "test targets");
    }
    std::vector<std::vector<ProbeScore>> scores(fit_targets.size());
    for (size_t l = 0; l < fit_layers.size(); ++l) {
        const std::string where = "layer " + std::to_string(l) + ": ";
        try {
            std::vector<torch::Tensor> yf_l, yt_l;
            torch::Tensor xf, xt;
            for (size_t t = 0; t < yfs.size(); ++t) {
                const auto [f, yf] = checkedSet(fit_layers[l], yfs[t], "fit");
                const auto [e, yt] = checkedSet(test_layers[l], yts[t], "test");
                xf = f;
                xt = e;
                yf_l.push_back(yf);
                yt_l.push_back(yt);
            }
            const std::vector<ProbeScore> s = scoreCheckedTargets(xf, yf_l, xt, yt_l, grid, folds, seed);
            for (size_t t = 0; t < s.size(); ++t)
                scores[t].push_back(s[t]);
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
