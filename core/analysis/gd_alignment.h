#pragma once
// GD alignment (von Oswald et al. 2022): compare a trained model with gradient descent on the same
// prompts through prediction difference, model cosine and model difference. Torch-free facade.

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>
#include <string>

#include "core/types/alignment.h"
#include "core/types/matrix.h"

namespace icl {

struct GdAlignmentOptions {
    int64_t checkpoint_step = -1;  ///< -1 = last checkpoint
    std::string reference = "gd_1"; ///< "gd_k": k GD steps with the η fitted during training
    int64_t n_prompts = 0;         ///< 0 = the config's eval.n_prompts
    uint64_t seed = 0;             ///< 0 = the experiment's own evaluation prompts
    bool store = true;             ///< store under /analysis/gd_alignment/<id>
    int threads = 0;
};

/// Alignment of checkpoint `checkpoint_step` of the experiment at `path` with `reference`.
/// With seed = 0 the prompts are the run's fixed evaluation prompts. Throws icl::Error for a file
/// without checkpoints or an unknown reference. Thread affinity: worker thread.
AlignmentResult computeGdAlignment(const std::string& path, const GdAlignmentOptions& options);

/// Loss of k GD steps as a function of the step size η on the run's evaluation prompts
/// (von Oswald et al.: the η line search), next to the trained model's loss.
struct EtaScan {
    int64_t k = 1;
    std::vector<double> eta;
    std::vector<double> loss;      ///< 0.5·MSE of GD-k at each η
    double best_eta = 0.0;         ///< argmin over the grid, refined by golden-section search
    double best_loss = 0.0;
    double model_loss = 0.0;       ///< the checkpoint's loss on the same prompts
    /// η of GD-k fitted during training on the tuning prompts (closed form for k = 1, line search otherwise): the η
    /// of the alignment metrics and of the construction; NaN when the run fitted no GD-k.
    double fitted_eta = std::numeric_limits<double>::quiet_NaN();
    double fitted_loss = std::numeric_limits<double>::quiet_NaN();  ///< GD-k's loss with fitted_eta, same prompts
    int64_t checkpoint_step = 0;
};

/// Scans η ∈ [0, eta_max] on `points` grid points. Stored under /analysis/eta_scan/<id>.
EtaScan computeEtaScan(const std::string& path, int64_t checkpoint_step, int64_t k, double eta_max = 4.0,
                       int64_t points = 200, bool store = true);

/// Layer k of the model (read out after layer k: ŷ = −y-slot of the query) against k steps of GD and
/// of GD++ (von Oswald et al. Fig. 3: "K layers vs K steps").
struct LayerStepRow {
    int64_t layer = 0;                     ///< 1-based: read-out after this many layers
    double model_loss = 0.0;
    double gd_loss = 0.0;                  ///< GD with `layer` steps and its own line-searched η
    double gdpp_loss = std::numeric_limits<double>::quiet_NaN();  ///< GD++ with `layer` layers (layer > 1)
    AlignmentMetrics vs_gd;                ///< alignment of the layer-k read-out with GD-k
    AlignmentMetrics vs_gdpp;              ///< … with GD++-k (NaN fields for k = 1)
};

/// One row per layer of an LSA checkpoint. `with_gdpp` fits GD++-k for k > 1 (a few seconds each).
/// Throws icl::Error for a model that is not LSA.
std::vector<LayerStepRow> compareLayersWithSteps(const std::string& path, int64_t checkpoint_step,
                                                 bool with_gdpp = true);

/// Learned products of an LSA checkpoint next to the GD construction (Proposition 1), per layer:
/// W_KᵀW_Q (how tokens are compared) and P·W_V (what is written back), summed over heads, each
/// [d+1, d+1]. The construction's matrices use the run's fitted η for GD-K.
struct LsaWeightView {
    int64_t layer = 0;
    Matrix learned_kq;
    Matrix learned_pv;
    Matrix construction_kq;
    Matrix construction_pv;
};
std::vector<LsaWeightView> lsaWeightViews(const std::string& path, int64_t checkpoint_step);

/// Out-of-distribution evaluation (von Oswald et al. Fig. 4 and appendix): the model and GD/least squares
/// on prompts whose distribution differs from training.
/// Every α uses the same underlying random draws (scaled by α), from a seed of their own (not the run's
/// evaluation prompts), so α = 1 of x_scale/w_scale is in distribution but not the eval loss itself.
///   "x_scale": x ~ U(−α·r, α·r)^d with r the training x_range (α·N(0, I) for normal inputs);  "w_scale": w ~ N(0, (α·w_scale)²I);
///   "label_noise": context labels get N(0, α²) noise (the query target stays clean);
///   "depth": a tied model applied α times (α integer ≥ 1), compared with α GD steps.
struct OodCurve {
    std::string kind;
    std::vector<double> alpha;
    std::vector<double> model_loss;
    std::vector<double> gd_loss;             ///< GD-K with the trained η (K = model layers, or α for depth)
    std::vector<double> least_squares_loss;
    std::vector<double> zero_loss;           ///< normaliser: the loss of predicting 0
    int64_t checkpoint_step = 0;
};
OodCurve computeOod(const std::string& path, int64_t checkpoint_step, const std::string& kind,
                    std::vector<double> alpha = {}, int64_t n_prompts = 4000, bool store = true);

/// Loss along the straight line between the trained LSA (t = 0) and the GD construction (t = 1,
/// Proposition 1 with the run's fitted η for GD-K). A one-head LSA layer's function depends only on
/// the products A = W_KᵀW_Q and B = P·W_V, and only up to (c·A, B/c); so each layer's trained pair
/// is first rescaled by the c that best matches the construction's A, then both are interpolated:
///   A(t) = (1 − t)·c·A_trained + t·A_GD,  B(t) = (1 − t)·B_trained/c + t·B_GD.
/// (Interpolating the raw weights would cross a loss barrier created by the scale symmetry
/// W_Q → c·W_Q, P → P/c, which says nothing about the function.) Throws icl::Error for H > 1.
struct InterpolationCurve {
    std::vector<double> t;
    std::vector<double> loss;
    double gd_loss = 0.0;  ///< loss of GD-K itself (equals loss at t = 1)
    int64_t checkpoint_step = 0;
};
InterpolationCurve computeInterpolation(const std::string& path, int64_t checkpoint_step, int64_t points = 21);

/// The copy analysis (see CopyAnalysis) of checkpoint `checkpoint_step` (−1 = last) on `n_prompts` of
/// the run's evaluation prompts. Stored under /analysis/copy/<id>. Throws icl::Error unless the run is an
/// LSA on the interleaved layout. Thread affinity: worker thread.
CopyAnalysis computeCopyAnalysis(const std::string& path, int64_t checkpoint_step, int64_t n_prompts = 64,
                                 bool store = true);

} // namespace icl
