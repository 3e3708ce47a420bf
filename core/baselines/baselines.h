#pragma once
// Learning algorithms run on the same prompts as the model (docs/science.md §0, §1). Core-internal.
// Every predictor returns the query prediction [B] using the prompt's in-context examples; call it on
// batch.prefix(n) for the prediction after n examples. Computation is in float64; the result has the
// batch's dtype and device.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// Loss used throughout von Oswald et al.: 0.5·mean((ŷ − y)²). `pred`, `target` [B]. Returns a scalar.
torch::Tensor halfMse(const torch::Tensor& pred, const torch::Tensor& target);

/// Predicts 0 (the error of this baseline normalises ICL curves). Returns [B].
torch::Tensor predictZero(const PromptBatch& batch);

/// Minimum-norm least squares ŵ = X⁺y (Moore–Penrose pseudo-inverse), ŷ = ⟨ŵ, x_q⟩. Returns [B].
torch::Tensor predictLeastSquares(const PromptBatch& batch);

/// Ridge ŵ = (XᵀX + λI)⁻¹Xᵀy on the sum-of-squares objective; λ = 0 gives least squares. Returns [B].
torch::Tensor predictRidge(const PromptBatch& batch, double lambda);

/// k-nearest neighbours (Garg et al.: k = 3): the mean label of the k context inputs closest to x_q in
/// Euclidean distance (all of them when fewer than k). Returns [B].
torch::Tensor predictKnn(const PromptBatch& batch, int64_t k = 3);

/// Averaging (Garg et al.): ŵ = (1/N)·Σ y_i x_i, ŷ = ⟨ŵ, x_q⟩. Returns [B].
torch::Tensor predictAveraging(const PromptBatch& batch);

/// Oracle of Guo et al. (docs/science.md §2): ridge with penalty λ on (Φ*(x_i), y_i), ŷ = ⟨ŵ, Φ*(x_q)⟩. With
/// w ~ N(0, τ²I) and noise σ this is the Bayes posterior mean for λ = σ²/τ². Returns [B].
torch::Tensor predictOracleRidgePhi(const PromptBatch& batch, const std::function<torch::Tensor(const torch::Tensor&)>& phi,
                                    double lambda);

/// Bayes-optimal prediction for a mixture of K representations (Guo et al. mixture setting): with
/// w ~ N(0, τ²I) and noise σ, y_ctx | k ~ N(0, τ²·F_k F_kᵀ + σ²I) with F_k = Φ*_k(X); the posterior
/// weights π_k ∝ p(y_ctx | k) (uniform prior) mix the K posterior-mean predictions
/// ŷ_k = τ²·φ_k(x_q)ᵀF_kᵀ(τ²F_kF_kᵀ + σ²I)⁻¹y_ctx. σ² is floored at 1e-6·τ² to keep the covariance
/// invertible for noise-free tasks. Returns [B].
torch::Tensor predictMixturePosterior(const PromptBatch& batch,
                                      const std::vector<std::function<torch::Tensor(const torch::Tensor&)>>& phis,
                                      double tau, double sigma);

/// k steps of gradient descent from W_0 = 0 on L(W) = (1/2N)·Σ(W x_i − y_i)² with step size η:
/// W_{t+1} = W_t − (η/N)·Σ(W_t x_i − y_i) x_iᵀ (von Oswald et al. Prop. 1). Returns [B].
torch::Tensor predictGd(const PromptBatch& batch, int64_t k, double eta);

/// Best η for one GD step in closed form: with g = (1/N)·Σ y_i x_iᵀ x_q the unit-η prediction,
/// η* = E[g·y_q] / E[g²] minimises E(η g − y_q)² over the prompts of `batch`.
double closedFormEtaOneStep(const PromptBatch& batch);

/// η minimising the 0.5·MSE of k GD steps on `batch`: a grid over [lo, hi] (step (hi − lo)/250)
/// refined by golden-section search in the best grid cell to relative tolerance 1e-10. Evaluated in
/// the spectral form of GdSpectrum (one eigendecomposition per prompt, then O(B·d·k) per η), so a
/// search over 2,000 prompts of d = 20 takes milliseconds, not the minutes of iterating predictGd.
double lineSearchEta(const PromptBatch& batch, int64_t k, double lo = 0.0, double hi = 25.0);

/// Minimum of a unimodal `loss` on [a, b] by golden-section search, to relative tolerance 1e-10.
double goldenSectionMinimum(const std::function<double(double)>& loss, double a, double b);

/// lineSearchEta for several step counts at once (the grid is evaluated once for all of them).
/// Returns k → η for every k in `ks` (each k ≥ 1). Throws icl::Error for k < 1.
std::map<int64_t, double> lineSearchEtas(const PromptBatch& batch, const std::vector<int64_t>& ks,
                                         double lo = 0.0, double hi = 25.0);

/// k GD steps from W_0 = 0 in closed form. With A = (1/N)·Σ x_i x_iᵀ = Σ_j λ_j q_j q_jᵀ and
/// b = (1/N)·Σ y_i x_i, the iteration W_{t+1} = (I − ηA)W_t + ηb gives
///   W_k = Σ_{t<k} (I − ηA)^t η b,   ŷ_k = x_qᵀW_k = Σ_j c_j · η·Σ_{t<k} (1 − ηλ_j)^t,
/// with c_j = (x_qᵀq_j)(q_jᵀb): predictGd for any (k, η) from one eigendecomposition of each
/// prompt's A. The geometric sum is accumulated term by term (no division by λ_j, exact for λ_j = 0).
/// The decomposition runs on one intra-op thread; the evaluations split the prompts over the intra-op threads. Const
/// methods may be called from several threads at once.
class GdSpectrum {
public:
    /// Decomposes each prompt of `batch` (x [B, N+1, d], y [B, N+1]; the query is the last token).
    explicit GdSpectrum(const PromptBatch& batch);

    /// ŷ of k GD steps with step size η for every prompt: [B] as a vector of doubles.
    std::vector<double> predictions(int64_t k, double eta) const;
    /// 0.5·mean((ŷ_k(η) − y_q)²) over the prompts; +∞ where not finite.
    double loss(int64_t k, double eta) const;
    /// loss for k = 1 … kMax at once: element k − 1 of the result.
    std::vector<double> losses(int64_t kMax, double eta) const;

    int64_t batchSize() const { return m_B; }
    int64_t dim() const { return m_d; }

private:
    /// ŷ_k(η) for k = 1 … kMax into `pred` [B, kMax].
    void predictAll(int64_t kMax, double eta, double* pred) const;

    int64_t m_B = 0, m_d = 0;
    std::vector<double> m_lambda;  ///< [B, d] eigenvalues of A
    std::vector<double> m_coef;    ///< [B, d] c_j = (x_qᵀq_j)(q_jᵀb)
    std::vector<double> m_yq;      ///< [B] query labels
};

/// Starting scale α of Iterative Newton, M₀ = αS (Fu et al. 2023, docs/science.md §5).
enum class NewtonAlpha {
    /// α = 1/‖SSᵀ‖_F, as the authors' released code starts (the default): α·λ_max(S)² ≤ 1, so every
    /// eigendirection of S with λ > 0 converges.
    Frobenius,
    /// α = 2/‖SSᵀ‖₂ = 2/λ_max(S)², as the paper writes it. This α lies on the boundary of the convergence
    /// region 0 < α < 2/‖SSᵀ‖₂: along the top eigenvector 1 − αλ_max² = −1, so S·M_k there stays 0 for
    /// every k ≥ 1 and ŵ_k never fits that direction (see newtonFilter).
    Spectral,
};

/// "frobenius" / "spectral" (eval.newton_alpha). Throws icl::Error for another name.
NewtonAlpha newtonAlphaFromName(const std::string& name);
std::string newtonAlphaName(NewtonAlpha alpha);

/// α of NewtonAlpha for one S with eigenvalues `lambda` (any order): 1/√(Σλ⁴) or 2/max λ²; 0 when S = 0.
double newtonAlpha(const double* lambda, int64_t d, NewtonAlpha alpha);

/// Iterative Newton for least squares (Fu et al. 2023), literally: with X the context inputs [n, d] and
/// S = XᵀX, M₀ = αS, M_{k+1} = 2M_k − M_k S M_k, ŵ_k = M_k Xᵀy, ŷ = ⟨ŵ_k, x_q⟩, in float64 (batched
/// matrix products, α from the norms of SSᵀ as written). k ≥ 0. S = 0 or n = 0 predicts 0. As k → ∞,
/// S·M_k → the projector onto range(S) and ŵ_k → X⁺y, the minimum-norm least-squares solution (with
/// NewtonAlpha::Frobenius). Returns [B] in the batch's dtype.
torch::Tensor predictNewton(const PromptBatch& batch, int64_t k, NewtonAlpha alpha = NewtonAlpha::Frobenius);
/// The weights ŵ_k of predictNewton: [B, d] float64.
torch::Tensor newtonWeights(const PromptBatch& batch, int64_t k, NewtonAlpha alpha = NewtonAlpha::Frobenius);

/// Spectral filters: for S = XᵀX = Σ_j λ_j q_j q_jᵀ each algorithm below returns ŵ = Σ_j f(λ_j)(q_jᵀXᵀy) q_j,
/// so one eigendecomposition per prompt gives every step (the algorithm map, core/analysis/algorithm_map.h).
/// Newton: M_k commutes with S and I − S·M_{k+1} = (I − S·M_k)², so f_k(λ) = (1 − (1 − αλ²)^(2^k))/λ, and 0 at
/// λ = 0 (M₀'s eigenvalue αλ vanishes there and the iteration keeps it 0). The power is taken by k squarings.
double newtonFilter(double lambda, double alpha, int64_t k);
/// GD from w = 0 on ½‖Xw − y‖² with step s: w_{t+1} = w_t − s·Xᵀ(Xw_t − y), f_k(λ) = s·Σ_{t<k}(1 − sλ)^t =
/// (1 − (1 − sλ)^k)/λ, and k·s at λ = 0. (predictGd's mean objective with step η is s = η/n.)
double gdFilter(double lambda, double step, int64_t k);
/// Ridge with penalty μ ≥ 0 on the sum of squares: f(λ) = 1/(λ + μ), 0 where λ + μ = 0 (the pseudo-inverse).
double ridgeFilter(double lambda, double penalty);

/// Ridge penalty of the config: eval.ridge_lambda when ≥ 0, else the Bayes choice σ²/w_scale².
double ridgeLambda(const ExperimentConfig& config);

/// GD++ (von Oswald et al. 2022, §4): K layers, each updating every token with the pre-layer values
///   x_j ← x_j − γ_l·Σ_{i≤N} x_i x_iᵀ x_j,   r_j ← r_j − (η_l/N)·Σ_{i≤N} r_i x_iᵀ x_j,
/// where r_i starts as y_i for context tokens and 0 for the query, and ŷ_q = −r_q after K layers.
/// With γ = 0 this is plain GD (K steps with per-step η_l); γ > 0 preconditions the inputs by
/// (I − γ·XᵀX) — the curvature correction. `eta`, `gamma` are [K] float64 tensors; the result [B]
/// is differentiable in them (used to fit them).
torch::Tensor predictGdPlusPlus(const PromptBatch& batch, const torch::Tensor& eta, const torch::Tensor& gamma);

/// Per-layer scalars of a GD++ baseline.
struct GdPlusPlusParams {
    std::vector<double> eta;
    std::vector<double> gamma;
};

/// Fits the GD++ scalars (η_l, γ_l) to minimise the half squared query error on `n_prompts` float64 prompts
/// drawn once from `seed`: full-batch L-BFGS with a strong-Wolfe line search, first for one shared (η, γ)
/// from η = 1, γ = 0, then (untied) for the k pairs from that optimum — the loss has several local minima in
/// the untied scalars, and this start found the best one in our checks. The paper trains the scalars with
/// Adam (lr 1e-3, batches of 512), which is far from converged after thousands of steps: on d = N = 10,
/// K = 3 Adam reached a held-out loss of 0.27–0.29 after 3,000 steps, this fit 0.21–0.22 (η ≈ 22, 6.5, 7.5;
/// checked with an independent PyTorch fit). `tied` keeps one (η, γ) for the k steps — the recurrent GD++
/// that a tied LSA (one layer applied k times) is compared with (von Oswald et al. Fig. 4); the result then
/// holds k equal entries. Untied, the last step's γ never reaches the prediction and is reported as 0.
/// Throws icl::Error when the fit is not finite. Deterministic for a seed; a few seconds on one core.
GdPlusPlusParams fitGdPlusPlus(const TaskConfig& task, int64_t k, uint64_t seed, bool tied = false,
                               int64_t n_prompts = 4096);

/// An input representation φ: x [..., d] -> φ(x) [..., F].
using FeatureMap = std::function<torch::Tensor(const torch::Tensor&)>;

/// "MLP features + GD on the output layer" (von Oswald et al. 2022, §5, the baseline of the sine
/// experiment): an MLP φ of the model's architecture (model.feature_mlp hidden widths, ReLU, output
/// model.feature_dim) and a step size η, meta-trained together so that k GD steps from w = 0 on the
/// linear read-out over φ, w ← w − (η/N)·Σ_i (wᵀφ(x_i) − y_i)·φ(x_i), predict ŷ = wᵀφ(x_q) well.
struct FeaturesGd {
    FeatureMap phi;
    double eta = 0.0;
};

/// Step sizes and scalars of every parametrised baseline of a config.
struct FittedBaselines {
    std::map<std::string, double> eta;               ///< "gd_k" -> η
    std::map<std::string, GdPlusPlusParams> gdpp;    ///< "gdpp_k" -> per-layer (η, γ)
    std::map<std::string, FeaturesGd> features_gd;   ///< "features_gd_k" -> meta-learned (φ, η)
    double ridge_lambda = -1.0;                      ///< "ridge" on raw x: λ chosen on held-out prompts (< 0: the config's)
};

/// The prompts with every input x_i (and x_q) replaced by φ(x_i): x [B, N+1, F]; y and w unchanged.
PromptBatch withFeatures(const PromptBatch& batch, const FeatureMap& phi);

/// Meta-trains FeaturesGd for k steps: Adam (learning rate `lr`, cosine-decayed to lr/100) on `steps`
/// batches of `batch` fresh prompts of `config.task` drawn from `seed`, minimising the 0.5·MSE of the
/// k-step prediction; φ starts from He-scaled weights, η from 0.1. Runs on one intra-op thread, so it is
/// deterministic for a seed whatever the thread setting. Results
/// are cached per (config, k, seed, steps) within the process, so analyses refit at most once.
/// Throws icl::Error when the config's model has no feature MLP (model.feature_dim = 0).
FeaturesGd fitFeaturesGd(const ExperimentConfig& config, int64_t k, uint64_t seed, int64_t steps, int64_t batch = 512,
                         double lr = 1e-3);

/// λ of the raw-x ridge baseline minimising its 0.5·MSE on `tuning` prompts over the grid
/// 10^-4, 10^-3.5, …, 10^3 (Guo et al.: "ridge on raw x, λ chosen on held-out prompts").
double fitRidgeLambda(const PromptBatch& tuning);

/// Baseline names of a config in display order: "zero", "least_squares", "ridge", "gd_1", …, "gdpp_2", …
/// (GD++ is defined for k > 1 only), "newton_k" for each k of eval.newton_steps when "newton" is listed.
std::vector<std::string> baselineNames(const EvalConfig& eval);

/// Fits every parametrised baseline: η of GD-k on `tuning` prompts (closed form for k = 1, line search
/// otherwise), GD++ scalars by fitGdPlusPlus from `seed`, features + GD by fitFeaturesGd from `seed`.
FittedBaselines fitBaselines(const ExperimentConfig& config, const PromptBatch& tuning, uint64_t seed);

/// Recovers fitted baselines from a run's metrics ("baseline_eta/gd_k", "baseline_param/gdpp_k/eta_l",
/// "baseline_param/gdpp_k/gamma_l"). Missing entries stay missing.
FittedBaselines fittedFromMetrics(const std::map<std::string, std::vector<double>>& metrics);

/// The metric entries that fittedFromMetrics reads back.
std::map<std::string, double> fittedToMetrics(const FittedBaselines& fitted);

/// Fitted baselines of a finished run: read from its metrics; any that are missing are refitted
/// exactly as the trainer fits them (same tuning prompts and seed), so results agree with training.
FittedBaselines fittedOrRefit(const ExperimentConfig& config, const std::map<std::string, std::vector<double>>& metrics);

/// Query predictions [B] of baseline `name` ("zero", "least_squares", "ridge", "knn", "averaging",
/// "oracle_ridge_phi" (representation tasks), "mixture_posterior" (mixtures), "gd_k", "gdpp_k",
/// "features_gd_k" — the last runs GD-k on withFeatures(batch, φ) with its meta-learned φ and η — and
/// "newton_k": predictNewton with eval.newton_alpha).
/// Throws icl::Error for an unknown name or a baseline missing from `fitted`.
torch::Tensor predictBaseline(const std::string& name, const PromptBatch& batch, const ExperimentConfig& config,
                              const FittedBaselines& fitted);

} // namespace icl
