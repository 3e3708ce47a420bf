#include "core/analysis/algorithm_map.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/analysis/algorithm_map_impl.h"
#include "core/analysis/probe.h"
#include "core/analysis/run_loader.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/checked_size.h"
#include "core/io/experiment_file.h"
#include "core/io/kinds.h"
#include "core/io/memory_budget.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/models/names.h"
#include "core/tasks/prompts.h"
#include "core/runtime/blas.h"
#include "core/tasks/seeds.h"

namespace icl {

namespace algorithm_map {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> gdStepGrid(int64_t max_k, int64_t points)
{
    std::vector<double> out;
    if (max_k <= 1 || points <= 1)
        return {1.0};
    for (int64_t i = 0; i < points; ++i) {
        const double k = std::round(std::pow(double(max_k), double(i) / double(points - 1)));
        if (out.empty() || k > out.back())
            out.push_back(k);
    }
    return out;
}

std::vector<double> defaultRidgePath()
{
    std::vector<double> out;
    for (int i = 0; i <= 14; ++i)
        out.push_back(std::pow(10.0, 3.0 - 0.5 * i));
    return out;
}

namespace {

/// Cosine of two length-n strided vectors; NaN when either is zero.
double cosine(const double* a, const double* b, int64_t n, int64_t stride)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double x = a[i * stride], y = b[i * stride];
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    if (!(aa > 0.0) || !(bb > 0.0))
        return kNaN;
    return ab / (std::sqrt(aa) * std::sqrt(bb));
}

/// Mean of the finite entries; NaN when there are none.
double finiteMean(const std::vector<double>& v)
{
    double s = 0.0;
    int64_t n = 0;
    for (double x : v)
        if (std::isfinite(x)) {
            s += x;
            ++n;
        }
    return n ? s / double(n) : kNaN;
}

} // namespace

double similarityOfErrors(const double* a, const double* b, int64_t prompts, int64_t positions)
{
    if (positions == 1)
        return cosine(a, b, prompts, 1);
    std::vector<double> c(static_cast<size_t>(prompts));
    for (int64_t p = 0; p < prompts; ++p)
        c[size_t(p)] = cosine(a + p * positions, b + p * positions, positions, 1);
    return finiteMean(c);
}

double similarityOfWeights(const double* a, const double* b, int64_t contexts, int64_t d)
{
    std::vector<double> c(static_cast<size_t>(contexts));
    for (int64_t w = 0; w < contexts; ++w)
        c[size_t(w)] = cosine(a + w * d, b + w * d, d, 1);
    return finiteMean(c);
}

namespace {

std::vector<double> ranks(const std::vector<double>& v)
{
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]])
            ++j;
        const double mean = 0.5 * double(i + j) + 1.0;  // ranks 1-based, ties share the mean
        for (size_t t = i; t <= j; ++t)
            r[order[t]] = mean;
        i = j + 1;
    }
    return r;
}

double pearson(const std::vector<double>& x, const std::vector<double>& y)
{
    const size_t n = x.size();
    if (n < 2)
        return kNaN;
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / double(n);
    const double my = std::accumulate(y.begin(), y.end(), 0.0) / double(n);
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    if (!(sxx > 0.0) || !(syy > 0.0))
        return kNaN;
    return sxy / std::sqrt(sxx * syy);
}

} // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y)
{
    if (x.size() != y.size() || x.size() < 2)
        return kNaN;
    return pearson(ranks(x), ranks(y));
}

AlgorithmMapFit fitBestSteps(const std::vector<double>& best, int64_t first, int64_t last, const std::string& kind)
{
    AlgorithmMapFit f;
    f.kind = kind;
    const int64_t L = int64_t(best.size());
    f.first_layer = std::max<int64_t>(1, first);
    f.last_layer = std::min(L, last);
    const bool log = kind != "linear";
    std::vector<double> x, y;
    for (int64_t l = f.first_layer; l <= f.last_layer; ++l) {
        const double b = best[size_t(l - 1)];
        if (!std::isfinite(b) || (log && !(b > 0.0)))
            continue;
        x.push_back(double(l));
        y.push_back(log ? std::log10(b) : b);
    }
    if (x.size() < 2)
        return f;
    const double n = double(x.size());
    const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n, my = std::accumulate(y.begin(), y.end(), 0.0) / n;
    double sxy = 0.0, sxx = 0.0, syy = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
        syy += (y[i] - my) * (y[i] - my);
    }
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    if (syy > 0.0 && x.size() > 2) { // two points always fit: R² = 1 would say nothing
        double ssr = 0.0;
        for (size_t i = 0; i < x.size(); ++i) {
            const double e = y[i] - (f.intercept + f.slope * x[i]);
            ssr += e * e;
        }
        f.r2 = 1.0 - ssr / syy;
        f.spearman = spearman(x, y);
    }
    return f;
}

void defaultMiddleLayers(int64_t L, int64_t* first, int64_t* last)
{
    *first = L / 4 + 1;
    *last = L - L / 4;
}

void finishFamily(AlgorithmFamilyMap& f, int64_t layers, int64_t middle_first, int64_t middle_last)
{
    f.best_step.assign(size_t(layers), kNaN);
    f.best_similarity.assign(size_t(layers), kNaN);
    f.best_step_weights.assign(size_t(layers), kNaN);
    const int64_t S = f.nSteps();
    for (int64_t l = 0; l < layers && S > 0; ++l) {
        double be = -std::numeric_limits<double>::infinity(), bw = be;
        for (int64_t s = 0; s < S; ++s) {
            const double e = f.errorsAt(l, s), w = f.weightsAt(l, s);
            if (std::isfinite(e) && e > be) {
                be = e;
                f.best_step[size_t(l)] = f.steps[size_t(s)];
                f.best_similarity[size_t(l)] = e;
            }
            if (std::isfinite(w) && w > bw) {
                bw = w;
                f.best_step_weights[size_t(l)] = f.steps[size_t(s)];
            }
        }
    }
    const std::string kind = f.family == "gd" ? "log_linear" : f.family == "ridge" ? "log_lambda" : "linear";
    f.fit = fitBestSteps(f.best_step, middle_first, middle_last, kind);
    f.fit_linear = fitBestSteps(f.best_step, middle_first, middle_last, "linear");
}

namespace {

constexpr uint64_t kEvalStream = 0xA16A0001ULL, kFitStream = 0xA16A0002ULL, kQueryStream = 0xA16A0003ULL;
const char* const kFamilies[] = {"gd", "gdpp", "newton", "ridge"};

std::vector<double> toVector(const torch::Tensor& t)
{
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/// One algorithm family on the evaluation prompts: residuals [steps][B·P], induced weights [steps][W·d] and the
/// query predictions [steps][B] (for the scatter).
struct FamilyData {
    std::string name, step_name, unavailable;
    std::vector<double> steps;
    std::vector<std::vector<double>> residual, weights, query;
};

/// Everything that does not depend on the checkpoint: the prompts and the algorithms on them.
struct AlgorithmSide {
    int64_t B = 0, P = 0, N = 0, d = 0, W = 0, M = 0;
    bool prefixes = false;
    PromptBatch eval;                // float64 [B, N+1, d]
    PromptBatch weightPrompts;       // float64 [W·M, N+1, d]: context w of the evaluation prompts, M drawn queries
    std::vector<double> target;      // [B·P] y_{i+1}: the label each residual is about
    std::vector<FamilyData> families;
    std::string gd_step, newton_alpha;
    double gd_eta = kNaN;
};

/// Per prompt and prefix (i examples, i = 1 … N; or only i = N) the spectrum of S_i = Σ_{j≤i} x_j x_jᵀ: eigenvalues
/// λ [B·P, d] (clamped at 0: S is positive semi-definite), and c_j = (q_jᵀ Σ_{j≤i} y_j x_j)(q_jᵀ x_{i+1}) so that a
/// spectral filter f predicts Σ_j f(λ_j) c_j; for the weights also the eigenvectors.
struct Spectra {
    std::vector<double> lambda, coef;
    torch::Tensor Q, u;  ///< only with `keepVectors`: [B·P, d, d] and q_jᵀXᵀy [B·P, d]
};

Spectra spectra(const PromptBatch& p, bool prefixes, bool keepVectors)
{
    const ScopedThreads oneThread(1);  // thousands of d × d eigendecompositions (core/runtime/blas.h)
    torch::NoGradGuard guard;
    const int64_t N = p.nContext(), d = p.dim(), B = p.batchSize();
    const torch::Tensor X = p.contextX(), y = p.contextY();
    torch::Tensor S, b, next;
    if (prefixes) {
        S = (X.unsqueeze(-1) * X.unsqueeze(-2)).cumsum(1);                 // [B, N, d, d]
        b = (X * y.unsqueeze(-1)).cumsum(1);                               // [B, N, d]
        next = p.x.narrow(1, 1, N);                                        // x_{i+1} (x_q for i = N)
    } else {
        S = torch::matmul(X.transpose(1, 2), X).unsqueeze(1);              // [B, 1, d, d]
        b = torch::matmul(X.transpose(1, 2), y.unsqueeze(-1)).squeeze(-1).unsqueeze(1);
        next = p.queryX().unsqueeze(1);
    }
    const int64_t P = S.size(1);
    const auto [lam, Q] = torch::linalg::eigh(S.reshape({B * P, d, d}), "L");
    const torch::Tensor u = torch::matmul(Q.transpose(1, 2), b.reshape({B * P, d, 1})).squeeze(-1);
    const torch::Tensor v = torch::matmul(Q.transpose(1, 2), next.reshape({B * P, d, 1})).squeeze(-1);
    Spectra s;
    s.lambda = toVector(lam.clamp_min(0.0));
    s.coef = toVector(u * v);
    if (keepVectors) {
        s.Q = Q;
        s.u = u;
    }
    return s;
}

/// Evaluation prompts laid out as residual positions: the label of each position and its number of examples.
void positionTargets(const PromptBatch& p, bool prefixes, std::vector<double>* target)
{
    const int64_t N = p.nContext();
    *target = toVector(prefixes ? p.y.narrow(1, 1, N) : p.queryY());  // [B, P] row-major
}

/// The step rule of a GD filter for a position with `n` examples and spectrum λ [d].
double gdStepFor(const AlgorithmSide& a, const double* lambda, int64_t n)
{
    if (a.gd_step == "fixed")
        return a.gd_eta / double(n);
    const double top = *std::max_element(lambda, lambda + a.d);
    return top > 0.0 ? 1.0 / top : 0.0;
}

/// A spectral family's query predictions at every position of `sp` for every step: pred[s][pos].
template <class Filter>
std::vector<std::vector<double>> spectralPredictions(const Spectra& sp, int64_t positions, int64_t d, size_t steps,
                                                     Filter filterAll)
{
    std::vector<std::vector<double>> pred(steps, std::vector<double>(size_t(positions), 0.0));
    std::vector<double> f(steps * size_t(d));
    for (int64_t pos = 0; pos < positions; ++pos) {
        const double* lambda = sp.lambda.data() + pos * d;
        filterAll(pos, lambda, f.data());  // f[s·d + j]
        const double* c = sp.coef.data() + pos * d;
        for (size_t s = 0; s < steps; ++s) {
            double sum = 0.0;
            for (int64_t j = 0; j < d; ++j)
                sum += f[s * size_t(d) + size_t(j)] * c[j];
            pred[s][size_t(pos)] = sum;
        }
    }
    return pred;
}

/// ŵ = Q·(f ⊙ u) for every step from the full-context spectra of the W weight contexts: weights[s][W·d].
template <class Filter>
std::vector<std::vector<double>> spectralWeights(const Spectra& sp, int64_t W, int64_t d, size_t steps, Filter filterAll)
{
    std::vector<std::vector<double>> out(steps, std::vector<double>(size_t(W * d), 0.0));
    const torch::Tensor Q = sp.Q.contiguous(), u = sp.u.contiguous();
    const double* q = Q.data_ptr<double>();
    const double* uu = u.data_ptr<double>();
    std::vector<double> f(steps * size_t(d));
    for (int64_t w = 0; w < W; ++w) {
        filterAll(w, sp.lambda.data() + w * d, f.data());
        for (size_t s = 0; s < steps; ++s)
            for (int64_t r = 0; r < d; ++r) {
                double sum = 0.0;
                for (int64_t j = 0; j < d; ++j)
                    sum += q[(w * d + r) * d + j] * f[s * size_t(d) + size_t(j)] * uu[w * d + j];
                out[s][size_t(w * d + r)] = sum;
            }
    }
    return out;
}

int64_t examplesAt(const AlgorithmSide& a, int64_t pos) { return a.prefixes ? pos % a.P + 1 : a.N; }

/// Residuals pred − target and the query predictions (last position of each prompt) of one family's predictions.
void finishPredictions(const AlgorithmSide& a, FamilyData& f, std::vector<std::vector<double>> pred)
{
    for (auto& p : pred) {
        std::vector<double> q(static_cast<size_t>(a.B));
        for (int64_t b = 0; b < a.B; ++b)
            q[size_t(b)] = p[size_t(b * a.P + a.P - 1)];
        for (size_t i = 0; i < p.size(); ++i)
            p[i] -= a.target[i];
        f.query.push_back(std::move(q));
        f.residual.push_back(std::move(p));
    }
}

/// The prompts of the induced weights: context w (the first W evaluation prompts) with queries[w·M + m] [W·M, d].
PromptBatch withQueries(const PromptBatch& eval, int64_t W, const torch::Tensor& queries)
{
    const int64_t M = queries.size(0) / W, N = eval.nContext();
    torch::Tensor x = eval.x.narrow(0, 0, W).repeat_interleave(M, 0).clone();  // [W·M, N+1, d]
    torch::Tensor y = eval.y.narrow(0, 0, W).repeat_interleave(M, 0).clone();
    x.select(1, N).copy_(queries.to(x.scalar_type()));
    y.select(1, N).zero_();  // never read
    return {x, y, eval.w.narrow(0, 0, W).repeat_interleave(M, 0)};
}

/// The algorithm side of a map (every family asked for), on `a.eval` and the weight contexts.
void computeAlgorithms(AlgorithmSide& a, const LoadedRun& run, const AlgorithmMapOptions& o,
                       const std::vector<std::string>& families, const std::string& path)
{
    const int64_t B = a.B, d = a.d, W = a.W, positions = B * a.P;
    const Spectra sp = spectra(a.eval, a.prefixes, false);
    const PromptBatch contexts = a.eval.slice(0, W);
    const Spectra wsp = spectra(contexts, false, true);
    const NewtonAlpha alpha = newtonAlphaFromName(a.newton_alpha);
    for (const std::string& name : families) {
        FamilyData f;
        f.name = name;
        f.step_name = name == "ridge" ? "lambda" : "k";
        if (name == "newton" || name == "gd") {
            const bool newton = name == "newton";
            std::vector<int64_t> ks;
            if (newton)
                for (int64_t k = 1; k <= o.newton_max_k; ++k)
                    ks.push_back(k);
            else
                for (double k : gdStepGrid(o.gd_max_k, o.gd_points))
                    ks.push_back(int64_t(k));
            for (int64_t k : ks)
                f.steps.push_back(double(k));
            const size_t S = ks.size();
            auto filters = [&](int64_t n, const double* lambda, double* out) {
                if (newton) {
                    // e^(2^k) by one squaring per step: the whole grid k = 1 … K in K squarings.
                    const double al = newtonAlpha(lambda, d, alpha);
                    for (int64_t j = 0; j < d; ++j) {
                        double e = 1.0 - al * lambda[j] * lambda[j];
                        for (size_t s = 0, k = 0; s < S; ++s) {
                            for (; int64_t(k) < ks[s]; ++k)
                                e *= e;
                            out[s * size_t(d) + size_t(j)] = lambda[j] > 0.0 ? (1.0 - e) / lambda[j] : 0.0;
                        }
                    }
                } else {
                    const double step = gdStepFor(a, lambda, n);
                    for (size_t s = 0; s < S; ++s)
                        for (int64_t j = 0; j < d; ++j)
                            out[s * size_t(d) + size_t(j)] = gdFilter(lambda[j], step, ks[s]);
                }
            };
            finishPredictions(a, f, spectralPredictions(sp, positions, d, S, [&](int64_t pos, const double* l, double* out) {
                                  filters(examplesAt(a, pos), l, out);
                              }));
            f.weights = spectralWeights(wsp, W, d, S, [&](int64_t, const double* l, double* out) { filters(a.N, l, out); });
        } else if (name == "ridge") {
            f.steps = o.ridge_lambdas.empty() ? defaultRidgePath() : o.ridge_lambdas;
            const size_t S = f.steps.size();
            auto filters = [&](int64_t, const double* lambda, double* out) {
                for (size_t s = 0; s < S; ++s)
                    for (int64_t j = 0; j < d; ++j)
                        out[s * size_t(d) + size_t(j)] = ridgeFilter(lambda[j], f.steps[s]);
            };
            finishPredictions(a, f, spectralPredictions(sp, positions, d, S, filters));
            f.weights = spectralWeights(wsp, W, d, S, filters);
        } else {  // gdpp: the run's fitted scalars, one step per fitted K
            for (const auto& [key, p] : run.fitted.gdpp) {
                const std::string digits = key.substr(5);
                if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 4)
                    continue;
                const int64_t K = std::stoll(digits);
                if (K >= 1 && int64_t(p.eta.size()) == K && int64_t(p.gamma.size()) == K)
                    f.steps.push_back(double(K));
            }
            std::sort(f.steps.begin(), f.steps.end());
            if (f.steps.empty()) {
                f.unavailable = "this run has no fitted GD++ scalars; training fits them when eval.baselines "
                                "lists \"gd_plus_plus\", one set for each k > 1 of eval.gd_steps";
                a.families.push_back(std::move(f));
                continue;
            }
            torch::NoGradGuard guard;
            std::vector<std::vector<double>> pred;
            // GD++ is linear in x_q (the query's input and residual are updated from the context only), so its
            // induced weights are its predictions at the basis vectors e_1 … e_d.
            const PromptBatch basis
                = withQueries(a.eval, W, torch::eye(d, torch::kFloat64).repeat({W, 1}));
            for (double K : f.steps) {
                const GdPlusPlusParams& p = run.fitted.gdpp.at("gdpp_" + std::to_string(int64_t(K)));
                const torch::Tensor eta = torch::tensor(p.eta, torch::kFloat64), gamma = torch::tensor(p.gamma, torch::kFloat64);
                std::vector<double> all(static_cast<size_t>(positions));
                if (a.prefixes) {
                    for (int64_t i = 1; i <= a.N; ++i) {
                        const std::vector<double> q = toVector(predictGdPlusPlus(a.eval.firstPoints(i), eta, gamma));
                        for (int64_t b = 0; b < B; ++b)
                            all[size_t(b * a.P + i - 1)] = q[size_t(b)];
                    }
                } else {
                    all = toVector(predictGdPlusPlus(a.eval, eta, gamma));
                }
                pred.push_back(std::move(all));
                f.weights.push_back(toVector(predictGdPlusPlus(basis, eta, gamma)));
            }
            finishPredictions(a, f, std::move(pred));
        }
        a.families.push_back(std::move(f));
    }
    (void)path;
}

/// Per-layer predictions of the model at the residual positions and its induced weights.
struct ModelSide {
    std::vector<std::vector<double>> residual;  ///< per layer [B·P]
    std::vector<std::vector<double>> query;     ///< per layer [B]
    std::vector<std::vector<double>> weights;   ///< per layer [W·d]
    std::vector<double> probe_r2, probe_lambda;
};

/// Slopes of least squares with an intercept of ŷ [W·M] on the queries [W·M, d], per context: [W·d].
std::vector<double> inducedWeights(const torch::Tensor& pred, const torch::Tensor& queries, int64_t W)
{
    const int64_t M = queries.size(0) / W, d = queries.size(1);
    const torch::Tensor A = torch::cat({queries.to(torch::kFloat64), torch::ones({W * M, 1}, torch::kFloat64)}, 1)
                                .view({W, M, d + 1});
    const torch::Tensor beta = torch::matmul(torch::linalg::pinv(A), pred.to(torch::kFloat64).view({W, M, 1}));
    return toVector(beta.squeeze(-1).narrow(1, 0, d));
}

AlgorithmMap assemble(const AlgorithmSide& a, const ModelSide& m, int64_t nEval, int64_t L, const AlgorithmMapOptions& o,
                      int64_t step)
{
    AlgorithmMap map;
    map.checkpoint_step = step;
    for (int64_t l = 1; l <= L; ++l)
        map.layers.push_back(l);
    map.positions = a.prefixes ? "prefixes" : "query";
    map.n_prompts = nEval;
    map.n_weight_contexts = a.W;
    map.n_weight_queries = a.M;
    map.n_context = a.N;
    map.dim = a.d;
    map.newton_alpha = a.newton_alpha;
    map.gd_step = a.gd_step;
    map.gd_eta = a.gd_eta;
    map.probe_r2 = m.probe_r2;
    map.probe_lambda = m.probe_lambda;
    int64_t first = o.middle_first, last = o.middle_last;
    if (first <= 0 || last <= 0) {
        int64_t f0 = 0, l0 = 0;
        defaultMiddleLayers(L, &f0, &l0);
        first = first > 0 ? first : f0;
        last = last > 0 ? last : l0;
    }
    map.n_scatter = std::min(o.n_scatter, nEval);
    for (int64_t l = 0; l < L; ++l)
        map.scatter_model.insert(map.scatter_model.end(), m.query[size_t(l)].begin(),
                                 m.query[size_t(l)].begin() + map.n_scatter);
    for (int64_t b = 0; b < map.n_scatter; ++b)
        map.scatter_target.push_back(a.target[size_t(b * a.P + a.P - 1)]);
    for (const FamilyData& fd : a.families) {
        AlgorithmFamilyMap f;
        f.family = fd.name;
        f.step_name = fd.step_name;
        f.unavailable = fd.unavailable;
        std::vector<double> scatter;
        if (f.available()) {
            f.steps = fd.steps;
            const int64_t S = int64_t(fd.steps.size());
            f.sim_errors.assign(size_t(L * S), kNaN);
            f.sim_weights.assign(size_t(L * S), kNaN);
            for (int64_t l = 0; l < L; ++l)
                for (int64_t s = 0; s < S; ++s) {
                    f.sim_errors[size_t(l * S + s)] = similarityOfErrors(m.residual[size_t(l)].data(),
                                                                         fd.residual[size_t(s)].data(), nEval, a.P);
                    f.sim_weights[size_t(l * S + s)]
                        = similarityOfWeights(m.weights[size_t(l)].data(), fd.weights[size_t(s)].data(), a.W, a.d);
                }
            finishFamily(f, L, first, last);
            for (int64_t s = 0; s < S; ++s)
                scatter.insert(scatter.end(), fd.query[size_t(s)].begin(), fd.query[size_t(s)].begin() + map.n_scatter);
        } else {
            f.best_step.assign(size_t(L), kNaN);
            f.best_similarity.assign(size_t(L), kNaN);
            f.best_step_weights.assign(size_t(L), kNaN);
            const std::string kind = f.family == "gd" ? "log_linear" : f.family == "ridge" ? "log_lambda" : "linear";
            f.fit = fitBestSteps(f.best_step, first, last, kind);
            f.fit_linear = fitBestSteps(f.best_step, first, last, "linear");
        }
        map.families.push_back(std::move(f));
        map.scatter_algorithm.push_back(std::move(scatter));
    }
    return map;
}

/// The checkpoint-independent part, ready for any checkpoint of the run.
struct MapPlan {
    std::string path;
    AlgorithmMapOptions o;
    std::vector<std::string> families;
    ExperimentConfig config;
    uint64_t seedBase = 0;
    AlgorithmSide a;
    PromptBatch fit;      // float64 [n_fit, N+1, d] (GPT-2)
    torch::Tensor queries;  // [W·M, d]
    bool gpt = false;
    int64_t L = 0;
};

void checkOptions(const AlgorithmMapOptions& o, const std::string& path)
{
    auto bad = [&](const std::string& what) { throw Error(path + ": algorithm map: " + what); };
    if (o.n_prompts < 2 || o.n_prompts > 1000000)
        bad("expected 2 … 1,000,000 evaluation prompts, got " + std::to_string(o.n_prompts));
    if (o.n_fit_prompts < 8 || o.n_fit_prompts > 1000000)
        bad("expected 8 … 1,000,000 probe prompts, got " + std::to_string(o.n_fit_prompts));
    if (o.n_weight_contexts < 1 || o.n_weight_contexts > 100000)
        bad("expected 1 … 100,000 weight contexts, got " + std::to_string(o.n_weight_contexts));
    if (o.n_weight_queries < 0 || o.n_weight_queries > 100000)
        bad("expected 0 … 100,000 weight queries, got " + std::to_string(o.n_weight_queries));
    if (o.newton_max_k < 1 || o.newton_max_k > 60)
        bad("the Newton grid goes up to 1 … 60 iterations, got " + std::to_string(o.newton_max_k));
    if (o.gd_max_k < 1 || o.gd_max_k > 1000000 || o.gd_points < 1 || o.gd_points > 1000)
        bad("the GD grid needs 1 ≤ largest k ≤ 1,000,000 and 1 … 1,000 points");
    if (!(o.gd_eta <= 0.0 || std::isfinite(o.gd_eta)))
        bad("GD's step size must be finite");
    if (o.ridge_lambdas.size() > 1000)
        bad("at most 1,000 ridge penalties");
    for (double l : o.ridge_lambdas)
        if (!std::isfinite(l) || l < 0.0)
            bad("ridge penalties must be finite and ≥ 0, got " + std::to_string(l));
    if (o.middle_first < 0 || o.middle_last < 0 || (o.middle_first > 0 && o.middle_last > 0 && o.middle_first > o.middle_last))
        bad("the middle layers must be 1-based with first ≤ last");
    if (o.n_scatter < 0)
        bad("the scatter needs ≥ 0 prompts");
    for (const std::string& f : o.families)
        if (std::find(std::begin(kFamilies), std::end(kFamilies), f) == std::end(kFamilies))
            bad("unknown family \"" + f + "\" (expected gd, gdpp, newton or ridge)");
    if (!o.newton_alpha.empty())
        newtonAlphaFromName(o.newton_alpha);
}

/// Builds the plan from the run at its first requested checkpoint (the config and the fitted baselines are the
/// run's, whatever the checkpoint).
MapPlan makePlan(const std::string& path, const AlgorithmMapOptions& o, const LoadedRun& run)
{
    MapPlan plan;
    plan.path = path;
    plan.o = o;
    plan.config = run.config;
    const ExperimentConfig& cfg = run.config;
    const std::string why = algorithmMapUnavailableReason(cfg.task.kind, cfg.model.kind, cfg.model.n_layers);
    if (!why.empty())
        throw Error(path + ": " + why);
    plan.gpt = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module) != nullptr;
    plan.L = cfg.model.n_layers;
    for (const char* f : kFamilies)
        if (o.families.empty() || std::find(o.families.begin(), o.families.end(), f) != o.families.end())
            plan.families.push_back(f);
    plan.seedBase = o.seed == 0 ? cfg.seed : o.seed;
    AlgorithmSide& a = plan.a;
    a.N = cfg.task.n_context;
    a.d = cfg.task.d;
    a.B = o.n_prompts;
    a.prefixes = plan.gpt;  // GPT-2 predicts at every x token; the LSA at the query only
    a.P = a.prefixes ? a.N : 1;
    a.W = std::min(o.n_weight_contexts, o.n_prompts);
    a.M = o.n_weight_queries > 0 ? std::max(o.n_weight_queries, a.d + 1) : 2 * a.d + 1;
    a.newton_alpha = o.newton_alpha.empty() ? cfg.eval.newton_alpha : o.newton_alpha;

    // Memory: the residual arrays of every step and layer, the probe features, one captured chunk.
    MemoryBudget budget(path);
    const uint64_t positions = checked::mul(uint64_t(a.B), uint64_t(a.P), "algorithm map positions");
    const uint64_t steps = uint64_t(o.newton_max_k) + uint64_t(o.gd_points) + 15 + o.ridge_lambdas.size() + 16;
    budget.charge(checked::mul(checked::mul(positions, steps + uint64_t(plan.L) * 2, "residuals"), 16, "residuals"),
                  "the residuals of every algorithm step and layer");
    budget.charge(checked::elementCount({a.B, a.N + 1, a.d, a.d, 8}, "prefix spectra"), "the prefix spectra");
    if (plan.gpt)
        budget.charge(checked::elementCount({o.n_fit_prompts, a.N + 1, cfg.model.d_model, plan.L, 12}, "probe features"),
                      "the probes' residual-stream features");

    a.eval = samplePrompts(cfg.task, a.B, mixSeed(plan.seedBase, kEvalStream), torch::kFloat64);
    positionTargets(a.eval, a.prefixes, &a.target);
    plan.queries = samplePrompts(cfg.task, a.W * a.M, mixSeed(plan.seedBase, kQueryStream), torch::kFloat64).queryX();
    a.weightPrompts = withQueries(a.eval, a.W, plan.queries);
    if (plan.gpt)
        plan.fit = samplePrompts(cfg.task, o.n_fit_prompts, mixSeed(plan.seedBase, kFitStream), torch::kFloat64);

    if (o.gd_eta > 0.0) {
        a.gd_step = "fixed";
        a.gd_eta = o.gd_eta;
    } else if (a.prefixes) {
        a.gd_step = "spectral";
    } else {
        // The η of GD-L the run fitted (the GD construction's η), else fitted as the trainer fits it.
        a.gd_step = "fixed";
        auto it = run.fitted.eta.find("gd_" + std::to_string(plan.L));
        if (it != run.fitted.eta.end()) {
            a.gd_eta = it->second;
        } else {
            const PromptBatch tuning = samplePrompts(cfg.task, cfg.eval.n_prompts, seeds::tuning(cfg.seed));
            a.gd_eta = plan.L == 1 ? closedFormEtaOneStep(tuning) : lineSearchEta(tuning, plan.L);
        }
    }
    // A family asked for by name must apply.
    computeAlgorithms(a, run, o, plan.families, path);
    for (const FamilyData& f : a.families)
        if (!f.unavailable.empty() && !o.families.empty())
            throw Error(path + ": algorithm map: family \"" + f.name + "\" does not apply: " + f.unavailable);
    return plan;
}

/// Runs one checkpoint's model side and assembles its map (and the first look).
AlgorithmMap mapCheckpoint(const MapPlan& plan, LoadedRun& run, const std::function<bool()>& tick,
                           const std::function<void(const AlgorithmMap&)>& first_look)
{
    const AlgorithmSide& a = plan.a;
    const AlgorithmMapOptions& o = plan.o;
    const int64_t L = plan.L, N = a.N;
    const int64_t chunk = kAlgorithmMapFirstLookPrompts;
    const int64_t firstEval = std::min(a.B, chunk);
    const bool wantFirstLook = bool(first_look) && a.B > chunk;
    auto check = [&] {
        if (tick && !tick())
            throw Error("cancelled");
    };
    torch::NoGradGuard guard;
    ModelSide m;
    m.residual.assign(size_t(L), std::vector<double>(size_t(a.B * a.P), 0.0));
    m.query.assign(size_t(L), std::vector<double>(size_t(a.B), 0.0));

    // Stores the per-layer predictions pred[l] [c, P] of evaluation prompts [begin, begin + c).
    auto keep = [&](const std::vector<torch::Tensor>& pred, int64_t begin) {
        for (int64_t l = 0; l < L; ++l) {
            const std::vector<double> v = toVector(pred[size_t(l)]);
            const int64_t c = int64_t(v.size()) / a.P;
            for (int64_t b = 0; b < c; ++b) {
                for (int64_t p = 0; p < a.P; ++p) {
                    const size_t at = size_t((begin + b) * a.P + p);
                    m.residual[size_t(l)][at] = v[size_t(b * a.P + p)] - a.target[at];
                }
                m.query[size_t(l)][size_t(begin + b)] = v[size_t(b * a.P + a.P - 1)];
            }
        }
    };
    auto emitFirstLook = [&](const ModelSide& part) {
        AlgorithmMap fl = assemble(a, part, firstEval, L, o, run.step);
        fl.first_look = true;
        fl.readout = plan.gpt ? "probe" : "y_slot";
        fl.n_fit_prompts = plan.gpt ? std::min(o.n_fit_prompts, chunk) : 0;
        first_look(fl);
    };

    if (!plan.gpt) {
        auto lsa = std::dynamic_pointer_cast<LsaImpl>(run.model.module);
        // −y-slot of the query after each layer: L tensors [c] (von Oswald et al.'s read-out, exact).
        auto layers = [&](const PromptBatch& p64) {
            const PromptBatch p = {p64.x.to(torch::kFloat32), p64.y.to(torch::kFloat32), p64.w.to(torch::kFloat32)};
            ActivationCapture capture;
            for (int64_t l = 0; l < L; ++l)
                capture.names.insert(actName(Act::ResidPost, l));
            lsa->forward(lsa->embed(p), lsa->contextTokens(p.nContext()), &capture);
            std::vector<torch::Tensor> out;
            for (int64_t l = 0; l < L; ++l)
                out.push_back(lsa->readout(capture.values.at(actName(Act::ResidPost, l))).to(torch::kFloat64).unsqueeze(1));
            return out;
        };
        const int64_t lsaChunk = 1024;
        const std::vector<torch::Tensor> wq = layers(a.weightPrompts);
        for (int64_t l = 0; l < L; ++l)
            m.weights.push_back(inducedWeights(wq[size_t(l)], plan.queries, a.W));
        check();
        for (int64_t b = 0; b < a.B; b += (b == 0 ? firstEval : lsaChunk)) {
            const int64_t c = std::min(a.B - b, b == 0 ? firstEval : lsaChunk);
            keep(layers(a.eval.slice(b, b + c)), b);
            check();
            if (b == 0 && wantFirstLook)
                emitFirstLook(m);
        }
        AlgorithmMap map = assemble(a, m, a.B, L, o, run.step);
        map.readout = "y_slot";
        return map;
    }

    auto gpt = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module);
    const torch::Tensor xTokens = torch::arange(0, 2 * N + 1, 2);  // x_1 … x_N, x_q: predictions of y_1 … y_q
    // Residual stream after every block at the x tokens of prompts p: L tensors [c, N+1, D] float32.
    auto features = [&](const PromptBatch& p64) {
        const PromptBatch p = {p64.x.to(torch::kFloat32), p64.y.to(torch::kFloat32), p64.w.to(torch::kFloat32)};
        ActivationCapture capture;
        for (int64_t l = 0; l < L; ++l)
            capture.names.insert(actName(Act::ResidPost, l));
        gpt->predictAll(p, &capture);
        std::vector<torch::Tensor> out;
        for (int64_t l = 0; l < L; ++l)
            out.push_back(capture.values.at(actName(Act::ResidPost, l)).index_select(1, xTokens).contiguous());
        return out;
    };
    // Fit features, in chunks: fitParts[l] holds [c·(N+1), D] pieces; the targets y_1 … y_q alike.
    std::vector<std::vector<torch::Tensor>> fitParts(static_cast<size_t>(L));
    std::vector<torch::Tensor> fitTargets;
    int64_t fitDone = 0;
    auto extendFit = [&](int64_t upTo) {
        for (; fitDone < upTo; fitDone += chunk) {
            const int64_t c = std::min(upTo - fitDone, chunk);
            const std::vector<torch::Tensor> f = features(plan.fit.slice(fitDone, fitDone + c));
            for (int64_t l = 0; l < L; ++l)
                fitParts[size_t(l)].push_back(f[size_t(l)].reshape({c * (N + 1), -1}));
            fitTargets.push_back(plan.fit.y.narrow(0, fitDone, c).reshape({-1, 1}));
            check();
        }
        fitDone = upTo;
    };
    auto probes = [&] {
        const ScopedThreads oneThread(1);  // the folds × penalties of every layer are small kernels
        std::vector<RidgeProbe> out;
        const torch::Tensor t = torch::cat(fitTargets, 0).to(torch::kFloat64);
        for (int64_t l = 0; l < L; ++l) {
            const torch::Tensor f = torch::cat(fitParts[size_t(l)], 0).to(torch::kFloat64);
            const double lambda = chooseLambdaByCv(f, t, defaultLambdaGrid(), 5, plan.seedBase);
            out.push_back(fitRidgeProbe(f, t, lambda));
        }
        return out;
    };
    // Per-layer probe predictions at the residual positions (x_2 … x_q: from i = 1 … N examples): [c, N].
    auto predictions = [&](const std::vector<torch::Tensor>& f, const std::vector<RidgeProbe>& pr) {
        std::vector<torch::Tensor> out;
        for (int64_t l = 0; l < L; ++l) {
            const torch::Tensor x = f[size_t(l)];
            const torch::Tensor y = predictProbe(pr[size_t(l)], x.reshape({-1, x.size(2)})).view({x.size(0), N + 1});
            out.push_back(y.narrow(1, 1, N));
        }
        return out;
    };
    auto weightsWith = [&](const std::vector<torch::Tensor>& wf, const std::vector<RidgeProbe>& pr) {
        std::vector<std::vector<double>> out;
        for (int64_t l = 0; l < L; ++l)
            out.push_back(inducedWeights(predictProbe(pr[size_t(l)], wf[size_t(l)].to(torch::kFloat64)).view({-1}),
                                         plan.queries, a.W));
        return out;
    };
    // The weight prompts' residual stream at their query: L tensors [W·M, D].
    std::vector<std::vector<torch::Tensor>> wParts(static_cast<size_t>(L));
    for (int64_t b = 0; b < a.W * a.M; b += chunk) {
        const int64_t c = std::min(a.W * a.M - b, chunk);
        const std::vector<torch::Tensor> f = features(a.weightPrompts.slice(b, b + c));
        for (int64_t l = 0; l < L; ++l)
            wParts[size_t(l)].push_back(f[size_t(l)].select(1, N));
        check();
    }
    std::vector<torch::Tensor> wFeatures;
    for (int64_t l = 0; l < L; ++l)
        wFeatures.push_back(torch::cat(wParts[size_t(l)], 0));
    wParts.clear();

    const std::vector<torch::Tensor> firstFeatures = features(a.eval.slice(0, firstEval));
    check();
    if (wantFirstLook) {
        // Probes fitted on the first fit prompts, read on the first evaluation prompts.
        extendFit(std::min(o.n_fit_prompts, chunk));
        const std::vector<RidgeProbe> pr = probes();
        keep(predictions(firstFeatures, pr), 0);
        m.weights = weightsWith(wFeatures, pr);
        emitFirstLook(m);
    }
    extendFit(o.n_fit_prompts);
    const std::vector<RidgeProbe> pr = probes();
    check();
    keep(predictions(firstFeatures, pr), 0);
    for (int64_t b = firstEval; b < a.B; b += chunk) {
        const int64_t c = std::min(a.B - b, chunk);
        keep(predictions(features(a.eval.slice(b, b + c)), pr), b);
        check();
    }
    m.weights = weightsWith(wFeatures, pr);
    // Probe R² on the evaluation positions, per layer.
    double mean = 0.0, var = 0.0;
    for (double t : a.target)
        mean += t / double(a.target.size());
    for (double t : a.target)
        var += (t - mean) * (t - mean);
    for (int64_t l = 0; l < L; ++l) {
        double ssr = 0.0;
        for (double r : m.residual[size_t(l)])
            ssr += r * r;
        m.probe_r2.push_back(var > 0.0 ? 1.0 - ssr / var : kNaN);
        m.probe_lambda.push_back(pr[size_t(l)].lambda);
    }
    AlgorithmMap map = assemble(a, m, a.B, L, o, run.step);
    map.readout = "probe";
    map.n_fit_prompts = o.n_fit_prompts;
    return map;
}

nlohmann::json numberOrNull(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

nlohmann::json numbers(const std::vector<double>& v)
{
    nlohmann::json out = nlohmann::json::array();
    for (double x : v)
        out.push_back(numberOrNull(x));
    return out;
}

nlohmann::json rows(const std::vector<double>& m, int64_t cols)
{
    nlohmann::json out = nlohmann::json::array();
    for (size_t r = 0; cols > 0 && r * size_t(cols) < m.size(); ++r)
        out.push_back(numbers(std::vector<double>(m.begin() + long(r * size_t(cols)), m.begin() + long((r + 1) * size_t(cols)))));
    return out;
}

nlohmann::json fitJson(const AlgorithmMapFit& f)
{
    return {{"kind", f.kind},
            {"first_layer", f.first_layer},
            {"last_layer", f.last_layer},
            {"slope", numberOrNull(f.slope)},
            {"intercept", numberOrNull(f.intercept)},
            {"r2", numberOrNull(f.r2)},
            {"spearman", numberOrNull(f.spearman)}};
}

void storeMap(const std::string& path, const AlgorithmMap& map, const AlgorithmMapOptions& o, uint64_t seed)
{
    nlohmann::json opts = {{"n_prompts", o.n_prompts},         {"n_fit_prompts", o.n_fit_prompts},
                           {"n_weight_contexts", o.n_weight_contexts}, {"n_weight_queries", map.n_weight_queries},
                           {"newton_max_k", o.newton_max_k},   {"gd_max_k", o.gd_max_k},
                           {"gd_points", o.gd_points},         {"gd_eta", o.gd_eta},
                           {"newton_alpha", map.newton_alpha}, {"middle_first", o.middle_first},
                           {"middle_last", o.middle_last},     {"families", o.families},
                           {"seed", o.seed}};
    if (!o.ridge_lambdas.empty())
        opts["ridge_lambdas"] = o.ridge_lambdas;
    storeAnalysis(path, "algorithm_map", map.checkpoint_step, seed, opts.dump(), algorithmMapToJson(map));
}

} // namespace

std::string unavailableReason(const std::string& task_kind, const std::string& model_kind, int64_t n_layers)
{
    const std::optional<TaskKind> task = kindFromName<TaskKind>(task_kind);
    if (task == TaskKind::FewshotClassification || !task)
        return "the algorithm map does not exist for task.kind \"" + task_kind
               + "\": it is not a regression task, and the map compares each layer's predictions of real-valued labels "
                 "with regression algorithms (GD, GD++, Iterative Newton, ridge)";
    if (model_kind != "lsa" && model_kind != "gpt2")
        return "the algorithm map reads the layers of an lsa or gpt2 model; this run has model.kind \"" + model_kind
               + "\"";
    if (n_layers < 1)
        return "the model has no layers to read";
    return {};
}

namespace {

std::vector<AlgorithmMap> computeAlgorithmMapsImpl(const std::string& path, const AlgorithmMapOptions& o,
                                                   std::vector<int64_t> steps,
                                                   const std::function<bool(int64_t, int64_t)>& progress,
                                                   const std::function<void(const AlgorithmMap&)>& each,
                                                   const std::function<void(const AlgorithmMap&)>& first_look)
{
    checkOptions(o, path);
    configureThreads(o.threads);
    const RunSummary summary = readRunSummary(path);
    const ExperimentConfig cfg = parseConfig(parseBoundedJson<nlohmann::json>(summary.config_json, path + ": /config"));
    const std::string why = algorithmMapUnavailableReason(cfg.task.kind, cfg.model.kind, cfg.model.n_layers);
    if (!why.empty())
        throw Error(path + ": " + why);
    if (summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    if (steps.empty()) // every checkpoint whose record is intact: one damaged checkpoint does not stop the others
        for (const auto& c : summary.checkpoints)
            if (c.damaged.empty())
                steps.push_back(c.step);
    if (steps.empty())
        (void)lastUsableCheckpoint(summary); // throws: every checkpoint is damaged
    // Progress units per checkpoint: the forward chunks (weights, fit, evaluation) and the assembly.
    const bool gpt = cfg.model.kind == "gpt2";
    const int64_t chunk = kAlgorithmMapFirstLookPrompts, W = std::min(o.n_weight_contexts, o.n_prompts);
    const int64_t M = o.n_weight_queries > 0 ? std::max(o.n_weight_queries, cfg.task.d + 1) : 2 * cfg.task.d + 1;
    auto chunks = [](int64_t n, int64_t c) { return (n + c - 1) / c; };
    const int64_t perCheckpoint = gpt ? chunks(W * M, chunk) + 2 + chunks(o.n_fit_prompts, chunk) + chunks(o.n_prompts, chunk)
                                      : 2 + chunks(o.n_prompts, 1024);
    const int64_t total = 1 + int64_t(steps.size()) * perCheckpoint;
    int64_t done = 0;
    auto tick = [&] {
        if (progress && !progress(std::min(done, total - 1), total))
            return false;
        ++done;
        return true;
    };
    if (!tick())
        throw Error("cancelled");
    std::vector<AlgorithmMap> out;
    std::unique_ptr<MapPlan> plan;
    for (size_t i = 0; i < steps.size(); ++i) {
        LoadedRun run = loadRun(path, steps[i]);
        if (!plan)
            plan = std::make_unique<MapPlan>(makePlan(path, o, run));
        AlgorithmMap map = mapCheckpoint(*plan, run, tick, i == 0 ? first_look : std::function<void(const AlgorithmMap&)>());
        if (o.store)
            storeMap(path, map, o, o.seed);
        if (each)
            each(map);
        out.push_back(std::move(map));
    }
    if (progress)
        progress(total, total);
    return out;
}

nlohmann::json familyJson(const AlgorithmFamilyMap& f)
{
    if (!f.available())
        return {{"unavailable", f.unavailable}};
    return {{"step_name", f.step_name},
            {"steps", numbers(f.steps)},
            {"sim_errors", rows(f.sim_errors, f.nSteps())},
            {"sim_weights", rows(f.sim_weights, f.nSteps())},
            {"best_step", numbers(f.best_step)},
            {"best_similarity", numbers(f.best_similarity)},
            {"best_step_weights", numbers(f.best_step_weights)},
            {"fit", fitJson(f.fit)},
            {"fit_linear", fitJson(f.fit_linear)}};
}

/// Readers of an untrusted stored map: each throws icl::Error "<source>: <key>: …".
struct MapReader {
    std::string source;
    [[noreturn]] void fail(const std::string& key, const std::string& what) const
    {
        throw Error(source + ": " + key + ": " + what);
    }
    const nlohmann::json& at(const nlohmann::json& obj, const std::string& key, const std::string& where) const
    {
        if (!obj.is_object() || !obj.contains(key))
            fail(where + key, "missing");
        return obj.at(key);
    }
    double number(const nlohmann::json& v, const std::string& key) const
    {
        if (v.is_null())
            return kNaN;
        if (!v.is_number())
            fail(key, "expected a number or null");
        return v.get<double>();
    }
    int64_t integer(const nlohmann::json& v, const std::string& key, int64_t lo, int64_t hi) const
    {
        if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
            fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return v.get<int64_t>();
    }
    std::string text(const nlohmann::json& v, const std::string& key) const
    {
        if (!v.is_string() || v.get<std::string>().size() > 4096)
            fail(key, "expected a string");
        return v.get<std::string>();
    }
    std::vector<double> list(const nlohmann::json& v, const std::string& key, size_t size) const
    {
        if (!v.is_array() || v.size() != size)
            fail(key, "expected an array of " + std::to_string(size) + " numbers");
        std::vector<double> out;
        for (size_t i = 0; i < v.size(); ++i)
            out.push_back(number(v[i], key + "[" + std::to_string(i) + "]"));
        return out;
    }
    std::vector<double> matrix(const nlohmann::json& v, const std::string& key, size_t rows, size_t cols) const
    {
        if (!v.is_array() || v.size() != rows)
            fail(key, "expected " + std::to_string(rows) + " rows (one per layer)");
        std::vector<double> out;
        for (size_t r = 0; r < rows; ++r) {
            const std::vector<double> row = list(v[r], key + "[" + std::to_string(r) + "]", cols);
            out.insert(out.end(), row.begin(), row.end());
        }
        return out;
    }
    AlgorithmMapFit fit(const nlohmann::json& v, const std::string& key) const
    {
        AlgorithmMapFit f;
        if (!v.is_object())
            fail(key, "expected an object");
        f.kind = text(at(v, "kind", key + "."), key + ".kind");
        f.first_layer = integer(at(v, "first_layer", key + "."), key + ".first_layer", 0, 100000);
        f.last_layer = integer(at(v, "last_layer", key + "."), key + ".last_layer", 0, 100000);
        f.slope = number(at(v, "slope", key + "."), key + ".slope");
        f.intercept = number(at(v, "intercept", key + "."), key + ".intercept");
        f.r2 = number(at(v, "r2", key + "."), key + ".r2");
        f.spearman = number(at(v, "spearman", key + "."), key + ".spearman");
        return f;
    }
};

} // namespace

std::string toJsonText(const AlgorithmMap& map)
{
    nlohmann::json families = nlohmann::json::object();
    for (const AlgorithmFamilyMap& f : map.families)
        families[f.family] = familyJson(f);
    nlohmann::json j = {{"checkpoint_step", map.checkpoint_step},
                        {"layers", map.layers},
                        {"readout", map.readout},
                        {"positions", map.positions},
                        {"n_prompts", map.n_prompts},
                        {"n_fit_prompts", map.n_fit_prompts},
                        {"n_weight_contexts", map.n_weight_contexts},
                        {"n_weight_queries", map.n_weight_queries},
                        {"n_context", map.n_context},
                        {"d", map.dim},
                        {"newton_alpha", map.newton_alpha},
                        {"gd_step", map.gd_step},
                        {"gd_eta", numberOrNull(map.gd_eta)},
                        {"probe_r2", numbers(map.probe_r2)},
                        {"probe_lambda", numbers(map.probe_lambda)},
                        {"families", families}};
    return j.dump();
}

AlgorithmMap fromJsonText(const std::string& text, const std::string& source)
{
    const MapReader r{source};
    const nlohmann::json j = parseBoundedJson<nlohmann::json>(text, source);
    if (!j.is_object())
        r.fail("result", "expected a JSON object");
    AlgorithmMap map;
    map.checkpoint_step = r.integer(r.at(j, "checkpoint_step", ""), "checkpoint_step", 0,
                                    std::numeric_limits<int64_t>::max());
    const nlohmann::json& layers = r.at(j, "layers", "");
    if (!layers.is_array() || layers.empty() || layers.size() > 1000)
        r.fail("layers", "expected an array of 1 … 1,000 layers");
    for (size_t l = 0; l < layers.size(); ++l)
        map.layers.push_back(r.integer(layers[l], "layers[" + std::to_string(l) + "]", int64_t(l) + 1, int64_t(l) + 1));
    const size_t L = map.layers.size();
    map.readout = r.text(r.at(j, "readout", ""), "readout");
    map.positions = r.text(r.at(j, "positions", ""), "positions");
    if (map.positions != "prefixes" && map.positions != "query")
        r.fail("positions", "expected \"prefixes\" or \"query\"");
    map.n_prompts = r.integer(r.at(j, "n_prompts", ""), "n_prompts", 0, 100000000);
    map.n_fit_prompts = r.integer(r.at(j, "n_fit_prompts", ""), "n_fit_prompts", 0, 100000000);
    map.n_weight_contexts = r.integer(r.at(j, "n_weight_contexts", ""), "n_weight_contexts", 0, 100000000);
    map.n_weight_queries = r.integer(r.at(j, "n_weight_queries", ""), "n_weight_queries", 0, 100000000);
    map.n_context = r.integer(r.at(j, "n_context", ""), "n_context", 0, 100000000);
    map.dim = r.integer(r.at(j, "d", ""), "d", 0, 100000000);
    map.newton_alpha = r.text(r.at(j, "newton_alpha", ""), "newton_alpha");
    map.gd_step = r.text(r.at(j, "gd_step", ""), "gd_step");
    map.gd_eta = r.number(r.at(j, "gd_eta", ""), "gd_eta");
    // Per-layer probe numbers (GPT-2), or empty arrays (the LSA's exact read-out).
    const nlohmann::json& r2 = r.at(j, "probe_r2", "");
    map.probe_r2 = r.list(r2, "probe_r2", r2.is_array() && r2.empty() ? 0 : L);
    const nlohmann::json& lambdas = r.at(j, "probe_lambda", "");
    map.probe_lambda = r.list(lambdas, "probe_lambda", lambdas.is_array() && lambdas.empty() ? 0 : L);
    const nlohmann::json& families = r.at(j, "families", "");
    if (!families.is_object())
        r.fail("families", "expected an object");
    for (const auto& [name, v] : families.items())
        if (std::find(std::begin(kFamilies), std::end(kFamilies), name) == std::end(kFamilies))
            r.fail("families." + name, "unknown family (expected gd, gdpp, newton or ridge)");
    for (const char* name : kFamilies) {
        if (!families.contains(name))
            continue;
        const std::string key = std::string("families.") + name;
        const nlohmann::json& v = families.at(name);
        if (!v.is_object())
            r.fail(key, "expected an object");
        AlgorithmFamilyMap f;
        f.family = name;
        f.step_name = std::string(name) == "ridge" ? "lambda" : "k";
        if (v.contains("unavailable")) {
            f.unavailable = r.text(v.at("unavailable"), key + ".unavailable");
            if (f.unavailable.empty())
                r.fail(key + ".unavailable", "expected the reason");
            f.best_step.assign(L, kNaN);
            f.best_similarity.assign(L, kNaN);
            f.best_step_weights.assign(L, kNaN);
            map.families.push_back(std::move(f));
            continue;
        }
        const nlohmann::json& steps = r.at(v, "steps", key + ".");
        if (!steps.is_array() || steps.empty() || steps.size() > 100000 || steps.size() * L > 10000000)
            r.fail(key + ".steps", "expected an array of 1 … 100,000 steps");
        f.steps = r.list(steps, key + ".steps", steps.size());
        for (double s : f.steps)
            if (!std::isfinite(s))
                r.fail(key + ".steps", "expected finite steps");
        const size_t S = f.steps.size();
        f.sim_errors = r.matrix(r.at(v, "sim_errors", key + "."), key + ".sim_errors", L, S);
        f.sim_weights = r.matrix(r.at(v, "sim_weights", key + "."), key + ".sim_weights", L, S);
        f.best_step = r.list(r.at(v, "best_step", key + "."), key + ".best_step", L);
        f.best_similarity = r.list(r.at(v, "best_similarity", key + "."), key + ".best_similarity", L);
        f.best_step_weights = r.list(r.at(v, "best_step_weights", key + "."), key + ".best_step_weights", L);
        f.fit = r.fit(r.at(v, "fit", key + "."), key + ".fit");
        f.fit_linear = r.fit(r.at(v, "fit_linear", key + "."), key + ".fit_linear");
        map.families.push_back(std::move(f));
    }
    return map;
}

std::vector<AlgorithmMap> readStored(const std::string& path)
{
    std::vector<AlgorithmMap> out;
    for (const StoredAnalysis& s : readStoredAnalyses(path, "algorithm_map"))
        out.push_back(algorithmMapFromJson(s.result_json, path + ": /analysis/algorithm_map/" + s.id));
    return out;
}

} // namespace algorithm_map

std::string algorithmMapUnavailableReason(const std::string& task_kind, const std::string& model_kind, int64_t n_layers)
{
    return algorithm_map::unavailableReason(task_kind, model_kind, n_layers);
}

std::string algorithmMapToJson(const AlgorithmMap& map)
{
    return algorithm_map::toJsonText(map);
}

AlgorithmMap algorithmMapFromJson(const std::string& text, const std::string& source)
{
    return algorithm_map::fromJsonText(text, source);
}

std::vector<AlgorithmMap> readStoredAlgorithmMaps(const std::string& path)
{
    return algorithm_map::readStored(path);
}

std::vector<AlgorithmMap> computeAlgorithmMaps(const std::string& path, const AlgorithmMapOptions& options,
                                               std::vector<int64_t> steps,
                                               const std::function<bool(int64_t, int64_t)>& progress,
                                               const std::function<void(const AlgorithmMap&)>& each)
{
    return algorithm_map::computeAlgorithmMapsImpl(path, options, std::move(steps), progress, each, {});
}

AlgorithmMap computeAlgorithmMap(const std::string& path, const AlgorithmMapOptions& options,
                                 const std::function<bool(int64_t, int64_t)>& progress,
                                 const std::function<void(const AlgorithmMap&)>& first_look)
{
    return algorithm_map::computeAlgorithmMapsImpl(path, options, {options.checkpoint_step}, progress, {}, first_look)
        .at(0);
}

} // namespace icl
