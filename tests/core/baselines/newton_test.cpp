// Iterative Newton (Fu et al. 2023) and the spectral filters of the algorithm map against hand-computed cases,
// closed forms (least squares, the minimum-norm solution) and an independent plain double-precision loop.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/baselines/baselines.h"
#include "tests/support/core_checks.h"

namespace {
using icl::NewtonAlpha;
using icl::test::linearPrompts;
using icl::test::maxAbsDiff;

/// One prompt x [1, n+1, d], y [1, n+1] from rows of X, labels y and a query (its label 0).
icl::PromptBatch newtonPrompt(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                              const std::vector<double>& xq)
{
    const int64_t n = int64_t(X.size()), d = int64_t(xq.size());
    torch::Tensor x = torch::zeros({1, n + 1, d}, torch::kFloat64), t = torch::zeros({1, n + 1}, torch::kFloat64);
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < d; ++j)
            x[0][i][j] = X[size_t(i)][size_t(j)];
        t[0][i] = y[size_t(i)];
    }
    for (int64_t j = 0; j < d; ++j)
        x[0][n][j] = xq[size_t(j)];
    return {x, t, torch::zeros({1, d}, torch::kFloat64)};
}

/// The paper's iteration written out with plain loops over std::vector (no LibTorch): S = XᵀX, α from
/// ‖SSᵀ‖ (the spectral norm by power iteration on SSᵀ), M₀ = αS, M ← 2M − MSM k times, ŷ = x_qᵀ M Xᵀy.
double newtonByPlainLoops(const std::vector<std::vector<double>>& X, const std::vector<double>& y,
                          const std::vector<double>& xq, int64_t k, bool spectral)
{
    const size_t n = X.size(), d = xq.size();
    using Mat = std::vector<std::vector<double>>;
    auto mul = [d](const Mat& A, const Mat& B) {
        Mat C(d, std::vector<double>(d, 0.0));
        for (size_t i = 0; i < d; ++i)
            for (size_t l = 0; l < d; ++l)
                for (size_t j = 0; j < d; ++j)
                    C[i][j] += A[i][l] * B[l][j];
        return C;
    };
    Mat S(d, std::vector<double>(d, 0.0));
    for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < d; ++i)
            for (size_t j = 0; j < d; ++j)
                S[i][j] += X[r][i] * X[r][j];
    Mat SSt(d, std::vector<double>(d, 0.0));
    for (size_t i = 0; i < d; ++i)
        for (size_t j = 0; j < d; ++j)
            for (size_t l = 0; l < d; ++l)
                SSt[i][j] += S[i][l] * S[j][l];
    double norm = 0.0;
    if (spectral) {
        std::vector<double> v(d, 1.0);
        for (int it = 0; it < 5000; ++it) {
            std::vector<double> u(d, 0.0);
            for (size_t i = 0; i < d; ++i)
                for (size_t j = 0; j < d; ++j)
                    u[i] += SSt[i][j] * v[j];
            double s = 0.0;
            for (double e : u)
                s += e * e;
            norm = std::sqrt(s);  // ‖SSᵀv‖ with ‖v‖ = 1 → the largest eigenvalue of SSᵀ
            for (size_t i = 0; i < d; ++i)
                v[i] = u[i] / norm;
        }
    } else {
        for (const auto& row : SSt)
            for (double e : row)
                norm += e * e;
        norm = std::sqrt(norm);
    }
    const double alpha = (spectral ? 2.0 : 1.0) / norm;
    Mat M = S;
    for (auto& row : M)
        for (double& e : row)
            e *= alpha;
    for (int64_t t = 0; t < k; ++t) {
        const Mat MSM = mul(mul(M, S), M);
        for (size_t i = 0; i < d; ++i)
            for (size_t j = 0; j < d; ++j)
                M[i][j] = 2.0 * M[i][j] - MSM[i][j];
    }
    std::vector<double> Xty(d, 0.0);
    for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < d; ++i)
            Xty[i] += X[r][i] * y[r];
    double pred = 0.0;
    for (size_t i = 0; i < d; ++i)
        for (size_t j = 0; j < d; ++j)
            pred += xq[i] * M[i][j] * Xty[j];
    return pred;
}

TEST(IterativeNewton, HandComputedTwoDimensionalCase)
{
    // X = diag(√3, 1)·R with R a 45° rotation, so S = Rᵀ·diag(3, 1)·R is not diagonal; y = (√3, 1) makes
    // Xᵀy = Rᵀ(3, 1). In S's eigenbasis M_k has eigenvalues m_k(λ), m₀ = αλ, m_{k+1} = 2m_k − λm_k², so
    // ŵ_k = Rᵀ(3·m_k(3), m_k(1)) and, with the query x_q = Rᵀ(1, 1), ŷ_k = 3·m_k(3) + m_k(1).
    const double c = std::sqrt(0.5), r3 = std::sqrt(3.0);
    const std::vector<std::vector<double>> X = {{r3 * c, -r3 * c}, {c, c}};  // rows of diag(√3, 1)·R
    const std::vector<double> y = {r3, 1.0}, xq = {2 * c, 0.0};              // x_q = Rᵀ(1, 1)
    const icl::PromptBatch b = newtonPrompt(X, y, xq);
    // The paper's α = 2/‖SSᵀ‖₂ = 2/9: m(3) = 2/3, 0, 0, …; m(1) = 2/9, 32/81, 4160/6561.
    const double spectral[] = {3 * 2.0 / 3 + 2.0 / 9, 32.0 / 81, 4160.0 / 6561};
    for (int64_t k = 0; k < 3; ++k)
        EXPECT_NEAR(icl::predictNewton(b, k, NewtonAlpha::Spectral).item<double>(), spectral[k], 1e-13) << "k " << k;
    // The code's α = 1/‖SSᵀ‖_F = 1/√82: m₁(λ) = αλ(2 − αλ²).
    const double a = 1.0 / std::sqrt(82.0);
    const double m1at3 = a * 3 * (2 - 9 * a), m1at1 = a * (2 - a);
    EXPECT_NEAR(icl::predictNewton(b, 0, NewtonAlpha::Frobenius).item<double>(), 3 * 3 * a + a, 1e-13);
    EXPECT_NEAR(icl::predictNewton(b, 1, NewtonAlpha::Frobenius).item<double>(), 3 * m1at3 + m1at1, 1e-13);
    // Least squares here is ŵ = Rᵀ(1, 1), ŷ = 2: Frobenius converges to it, the paper's α never fits λ = 3.
    EXPECT_NEAR(icl::predictNewton(b, 40, NewtonAlpha::Frobenius).item<double>(), 2.0, 1e-12);
    EXPECT_NEAR(icl::predictNewton(b, 12, NewtonAlpha::Spectral).item<double>(), 1.0, 1e-9);
}

TEST(IterativeNewton, KZeroIsAlphaTimesSXty)
{
    const icl::PromptBatch b = linearPrompts(40, 5, 12, 11);
    const torch::Tensor X = b.contextX(), Xt = X.transpose(1, 2), S = torch::matmul(Xt, X);
    const torch::Tensor lambda = torch::linalg::eigvalsh(S, "L");  // [B, d]
    const torch::Tensor l2 = lambda * lambda;
    const torch::Tensor Xty = torch::matmul(Xt, b.contextY().unsqueeze(-1));
    for (NewtonAlpha a : {NewtonAlpha::Frobenius, NewtonAlpha::Spectral}) {
        const torch::Tensor alpha
            = a == NewtonAlpha::Frobenius ? 1.0 / (l2 * l2).sum(-1).sqrt() : 2.0 / std::get<0>(l2.max(-1));
        const torch::Tensor w = alpha.view({-1, 1}) * torch::matmul(S, Xty).squeeze(-1);
        EXPECT_LE(maxAbsDiff(icl::newtonWeights(b, 0, a), w), 1e-10 * w.abs().max().item<double>());
    }
}

TEST(IterativeNewton, ConvergesToLeastSquares)
{
    // Overdetermined (n = 30 > d = 6): ŵ_k → (XᵀX)⁻¹Xᵀy, quadratically once αλ_min² is no longer tiny.
    const icl::PromptBatch b = linearPrompts(50, 6, 30, 12, 0.4);
    const torch::Tensor ls = icl::predictLeastSquares(b);
    EXPECT_LE(maxAbsDiff(icl::predictNewton(b, 30), ls), 1e-9);
    // … and not after one step (the test could not pass with ŵ = least squares at every k).
    EXPECT_GE(maxAbsDiff(icl::predictNewton(b, 1), ls), 1e-2);
}

TEST(IterativeNewton, ConvergesToTheMinimumNormSolutionWhenRankDeficient)
{
    // n = 3 < d = 8: S has rank 3. M_k is a polynomial in S without constant term, so ŵ_k stays in range(S) =
    // range(Xᵀ) and converges to the minimum-norm interpolant X⁺y = Xᵀ(XXᵀ)⁻¹y.
    const icl::PromptBatch b = linearPrompts(40, 8, 3, 13);
    const torch::Tensor X = b.contextX(), y = b.contextY().unsqueeze(-1);
    const torch::Tensor w
        = torch::matmul(X.transpose(1, 2), torch::linalg::solve(torch::matmul(X, X.transpose(1, 2)), y, true))
              .squeeze(-1);
    EXPECT_LE(maxAbsDiff(icl::newtonWeights(b, 40), w), 1e-9);
    // Rank deficient in the other way: a repeated input direction (x_2 = 2·x_1) in an n = 4, d = 3 prompt.
    const icl::PromptBatch r = newtonPrompt({{1, 0, 1}, {2, 0, 2}, {0, 1, 0}, {1, 1, 1}}, {1, 2, 3, 4}, {1, 1, 0});
    const torch::Tensor pinv = torch::matmul(torch::linalg::pinv(r.contextX()), r.contextY().unsqueeze(-1)).squeeze(-1);
    EXPECT_LE(maxAbsDiff(icl::newtonWeights(r, 40), pinv), 1e-9);
}

TEST(IterativeNewton, PaperAlphaLeavesTheTopEigendirectionUnfitted)
{
    // α = 2/λ_max²: 1 − αλ_max² = −1, whose square is 1, so S·M_k = 0 along q_max for every k ≥ 1 and the limit
    // is least squares without its q_max component (rounding, doubled by each iteration, lets it creep back only
    // after ~50 iterations).
    const icl::PromptBatch b = linearPrompts(30, 5, 20, 14);
    const torch::Tensor X = b.contextX(), S = torch::matmul(X.transpose(1, 2), X);
    const auto [lambda, Q] = torch::linalg::eigh(S, "L");
    const torch::Tensor qmax = Q.select(2, 4);  // eigenvalues ascending: the last column
    const torch::Tensor ls = torch::matmul(torch::linalg::pinv(X), b.contextY().unsqueeze(-1)).squeeze(-1);
    const torch::Tensor want = ls - (ls * qmax).sum(-1, true) * qmax;
    EXPECT_LE(maxAbsDiff(icl::newtonWeights(b, 20, NewtonAlpha::Spectral), want), 1e-6);
    EXPECT_GE(maxAbsDiff(icl::newtonWeights(b, 20, NewtonAlpha::Frobenius), want), 1e-2);
}

TEST(IterativeNewton, EqualsAnIndependentPlainLoop)
{
    const icl::PromptBatch b = linearPrompts(6, 4, 9, 15, 0.2);
    for (int64_t p = 0; p < 6; ++p) {
        std::vector<std::vector<double>> X(9, std::vector<double>(4));
        std::vector<double> y(9), xq(4);
        for (int64_t i = 0; i < 9; ++i) {
            for (int64_t j = 0; j < 4; ++j)
                X[size_t(i)][size_t(j)] = b.x[p][i][j].item<double>();
            y[size_t(i)] = b.y[p][i].item<double>();
        }
        for (int64_t j = 0; j < 4; ++j)
            xq[size_t(j)] = b.x[p][9][j].item<double>();
        const icl::PromptBatch one = b.slice(p, p + 1);
        for (int64_t k : {0, 1, 2, 3, 5, 8, 13, 20})
            for (bool spectral : {false, true}) {
                const double want = newtonByPlainLoops(X, y, xq, k, spectral);
                const double got
                    = icl::predictNewton(one, k, spectral ? NewtonAlpha::Spectral : NewtonAlpha::Frobenius).item<double>();
                EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::abs(want))) << "prompt " << p << ", k " << k;
            }
    }
}

TEST(SpectralFilters, NewtonFilterEqualsTheIteration)
{
    // ŵ_k = Σ_j f_k(λ_j)(q_jᵀXᵀy)q_j from one eigendecomposition equals the matrix iteration for every k.
    for (int64_t n : {3, 12}) {
        const icl::PromptBatch b = linearPrompts(20, 6, n, 16 + uint64_t(n));
        const torch::Tensor X = b.contextX(), S = torch::matmul(X.transpose(1, 2), X);
        const auto [lambda, Q] = torch::linalg::eigh(S, "L");
        const torch::Tensor u = torch::matmul(Q.transpose(1, 2), torch::matmul(X.transpose(1, 2), b.contextY().unsqueeze(-1)))
                                    .squeeze(-1);  // q_jᵀXᵀy [B, d]
        for (NewtonAlpha a : {NewtonAlpha::Frobenius, NewtonAlpha::Spectral})
            for (int64_t k : {0, 1, 4, 10, 20}) {
                torch::Tensor f = torch::zeros_like(lambda);
                for (int64_t p = 0; p < 20; ++p) {
                    std::vector<double> l(6);
                    for (int64_t j = 0; j < 6; ++j)
                        l[size_t(j)] = lambda[p][j].item<double>();
                    // Eigenvalues of a rank-deficient S come out as ±1e-15: the filter treats them as λ.
                    const double alpha = icl::newtonAlpha(l.data(), 6, a);
                    for (int64_t j = 0; j < 6; ++j)
                        f[p][j] = icl::newtonFilter(l[size_t(j)], alpha, k);
                }
                const torch::Tensor w = torch::matmul(Q, (f * u).unsqueeze(-1)).squeeze(-1);
                const torch::Tensor want = icl::newtonWeights(b, k, a);
                EXPECT_LE(maxAbsDiff(w, want), 1e-9 * std::max(1.0, want.abs().max().item<double>()))
                    << "n " << n << ", k " << k;
            }
    }
}

TEST(SpectralFilters, GdAndRidgeFiltersEqualTheirBaselines)
{
    const int64_t n = 10, d = 5;
    const icl::PromptBatch b = linearPrompts(25, d, n, 18, 0.3);
    const torch::Tensor X = b.contextX(), S = torch::matmul(X.transpose(1, 2), X);
    const auto [lambda, Q] = torch::linalg::eigh(S, "L");
    const torch::Tensor u
        = torch::matmul(Q.transpose(1, 2), torch::matmul(X.transpose(1, 2), b.contextY().unsqueeze(-1))).squeeze(-1);
    const torch::Tensor v = torch::matmul(Q.transpose(1, 2), b.queryX().unsqueeze(-1)).squeeze(-1);  // q_jᵀx_q
    auto viaFilter = [&](const std::function<double(double)>& filter) {
        torch::Tensor f = torch::zeros_like(lambda);
        for (int64_t p = 0; p < 25; ++p)
            for (int64_t j = 0; j < d; ++j)
                f[p][j] = filter(lambda[p][j].item<double>());
        return (f * u * v).sum(-1);
    };
    const double eta = 0.3;  // predictGd's mean objective: step s = η/n on the sum of squares
    for (int64_t k : {1, 2, 7, 30})
        EXPECT_LE(maxAbsDiff(viaFilter([&](double l) { return icl::gdFilter(l, eta / n, k); }), icl::predictGd(b, k, eta)),
                  1e-10)
            << "k " << k;
    for (double mu : {0.01, 1.0, 30.0})
        EXPECT_LE(maxAbsDiff(viaFilter([&](double l) { return icl::ridgeFilter(l, mu); }), icl::predictRidge(b, mu)),
                  1e-10)
            << "λ " << mu;
    // λ = 0 in the GD filter: k steps along a flat direction add k·s (the limit of (1 − (1 − sλ)^k)/λ).
    EXPECT_DOUBLE_EQ(icl::gdFilter(0.0, 0.25, 8), 2.0);
    EXPECT_NEAR(icl::gdFilter(1e-300, 0.25, 8), 2.0, 1e-12);
}

TEST(IterativeNewton, IsABaselineOfTheConfig)
{
    icl::EvalConfig e;
    e.baselines = {"zero", "newton"};
    e.newton_steps = {0, 3};
    EXPECT_EQ(icl::baselineNames(e), (std::vector<std::string>{"zero", "newton_0", "newton_3"}));
    icl::ExperimentConfig c;
    c.task.d = 4;
    c.task.n_context = 7;
    c.eval = e;
    const icl::PromptBatch b = linearPrompts(10, 4, 7, 19);
    EXPECT_LE(maxAbsDiff(icl::predictBaseline("newton_3", b, c, {}), icl::predictNewton(b, 3)), 0.0);
    c.eval.newton_alpha = "spectral";
    EXPECT_LE(maxAbsDiff(icl::predictBaseline("newton_3", b, c, {}), icl::predictNewton(b, 3, NewtonAlpha::Spectral)),
              0.0);
    EXPECT_THROW(icl::predictBaseline("newton_x", b, c, {}), icl::Error);
}

} // namespace
