#pragma once
// Kernel view of a trained softmax-attention layer (Ren & Liu 2023, docs/science.md §3). Torch-free facade
// over core/analysis/kernel_attention.h, for the CLI (`icl-cli analyze RUN.h5 kernel`) and the GUI's
// Kernel view page.
//
// Intended usage (worker thread):
//     KernelViewOptions o;  o.layer = 0;  o.head = 0;
//     const KernelView kv = computeKernelView("run.h5", o, [](int64_t done, int64_t total) { return true; });
//     kv.exact_max_error;           // layer vs one-step reference model with the exact kernel (≤ 1e-5)
//     kv.sweep.output_rmse.slope;   // random-feature error vs m on log-log axes (≈ −0.5)

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/types/kernel_view.h"
#include "core/types/matrix.h"

namespace icl {

struct KernelViewOptions {
    int64_t checkpoint_step = -1;  ///< −1 = last checkpoint
    int64_t layer = 0;             ///< 0-based softmax layer (0 ≤ layer < model.softmax_layers)
    int64_t head = 0;              ///< 0-based head
    int64_t n_prompts = 128;       ///< the first n of the run's evaluation prompts (seed = eval stream)
    std::vector<int64_t> m = {16, 64, 256, 1024, 4096};  ///< numbers of random features
    int64_t seeds = 5;             ///< draws of the random features per m
    uint64_t seed = 0;             ///< random-feature seed (draw s uses mixSeed(seed, s))
    int64_t loss_steps = 20;       ///< GD steps of the reference-model loss curves
    double loss_lambda = 1.0;      ///< norm-penalty λ of the second exact-kernel loss curve (> 0 converges)
    int64_t prompt = 0;            ///< prompt whose attention matrices are returned (< n_prompts)
    int64_t matrix_m = 256;        ///< m of the random-feature attention matrix returned for `prompt`
    /// How the layer's scores qᵀk/√D are split between the queries and keys the random features see.
    /// Every choice gives the same scores up to one constant per query, so the same attention and
    /// exact-kernel reference model; only the random-feature variance, which grows with ‖q + k‖²,
    /// differs. "symmetric": q·D^{-1/4}, k·D^{-1/4}. "balanced": after the symmetric split, the keys
    /// of each prompt minus their mean (not for the regularized variant, whose null pair has an
    /// absolute kernel value), then q ↦ A q, k ↦ A⁻¹ k with the symmetric A minimising
    /// E‖Aq‖² + E‖A⁻¹k‖² over the prompts (A² = geometric mean of Σ_q⁻¹ and Σ_k).
    std::string scaling = "balanced";
    bool store = true;             ///< store under /analysis/kernel/<id>
    int threads = 0;               ///< LibTorch intra-op threads (0 = keep)
};

/// Everything the Kernel view shows for one layer and head of a checkpoint.
///
/// The layer's queries, keys and values are captured on the prompts; the 1/√D score scale is split
/// between them as KernelViewOptions::scaling says.
/// For the "regularized" variant (softmax with an extra null pair of kernel value λ) the reference
/// model gets that pair explicitly: q ↦ (q, 1), k ↦ (k, 0), and a key (0, log λ) with value 0, so its
/// attention matrices have N + 1 columns (the last is the null pair; only the first N are compared
/// with the layer's pattern, and the matrices returned drop it).
struct KernelView {
    std::string path;
    int64_t checkpoint_step = 0;
    int64_t layer = 0;
    int64_t head = 0;
    int64_t n_prompts = 0;
    int64_t n_keys = 0;              ///< in-context tokens N (keys and values)
    int64_t n_queries = 0;           ///< tokens T (every token is a query)
    int64_t head_dim = 0;            ///< D
    std::string attention_variant;   ///< the model's variant ("softmax", …)
    std::string scaling;             ///< KernelViewOptions::scaling used
    double variant_strength = 0.0;
    uint64_t seed = 0;

    /// The layer's own output (pattern·v) and pattern against the exact-kernel reference model after one
    /// GD step (max |difference| over prompts, queries and entries).
    double exact_output_max_abs = 0.0;
    double exact_attention_max_abs = 0.0;
    double exact_max_error = 0.0;    ///< max of the two

    /// Random-feature reference model against softmax attention over m and seeds, with fitted slopes.
    KernelSweep sweep;

    /// Mean and max norm of the (symmetrically scaled) queries and keys the features see: the random
    /// features' variance grows with ‖q + k‖², so the 1/√m regime needs them small.
    double query_norm_mean = 0.0, query_norm_max = 0.0;
    double key_norm_mean = 0.0, key_norm_max = 0.0;

    /// Reference-model training loss along GD steps (mean over queries): exact kernel with λ = 0
    /// (linear in the step: no negative pairs), exact kernel with λ = loss_lambda, and m random
    /// features (m = the largest swept) with λ = 0.
    std::vector<ReferenceLossCurve> loss;

    /// Attention matrices [T, N] of prompt `prompt`: the layer's pattern, the exact-kernel reference
    /// model and the random-feature one with matrix_m features (seed mixSeed(seed, 0)).
    Matrix layer_attention;
    Matrix exact_attention;
    Matrix approx_attention;
    int64_t prompt = 0;
    int64_t matrix_m = 0;

    std::string id;  ///< /analysis/kernel/<id> when stored, else empty
};

/// The kernel view of softmax layer `options.layer`, head `options.head`, of a checkpoint of the
/// experiment at `path`. `progress` gets (done, total) work units and returns false to cancel
/// (icl::Error("cancelled") is thrown). Throws icl::Error for a model that is not lsa, a layer that
/// is not a softmax layer, a head out of range or bad options. Thread affinity: worker thread.
KernelView computeKernelView(const std::string& path, const KernelViewOptions& options,
                             const std::function<bool(int64_t, int64_t)>& progress = {});

} // namespace icl
