#pragma once
// Pasting experiment of Guo et al. 2023 (docs/science.md §2). Torch-free facade.
//
// A trained GPT-2 parent with L blocks is cut at layer ℓ: blocks ℓ..L−1, ln_final and read_out stay frozen
// and a new embedding ("linear": read-in and positions; "transformer1": the same plus one new block) is trained
// alone on plain linear regression, beside a same-shape model trained from scratch on the same batches; the
// label scale options and why: docs/science.md §2, "Pasting". The pasted model is itself a GPT-2 with
// L − ℓ (+1) blocks, stored as an ordinary experiment file (metrics also scratch/…, baseline/ridge), linked
// to its parent by /analysis/pasting_parent/<id> there and /analysis/pasting/<id> in the parent.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/io/config.h"

namespace icl {

struct PastingOptions {
    int64_t checkpoint_step = -1;       ///< parent checkpoint; -1 = last
    int64_t cut_layer = 0;              ///< ℓ, 0 ≤ ℓ ≤ L − 1: blocks ℓ..L−1 are kept
    std::string embedding = "linear";   ///< "linear" or "transformer1"
    int64_t steps = 1000;               ///< Adam steps for the pasted and for the scratch model each
    double lr = 1e-3;                   ///< Adam (β = 0.9, 0.999) learning rate η (the peak rate under "cosine")
    /// η over the steps: "constant" (η throughout) or "cosine" (η·½(1 + cos(π t / steps)), decaying to 0 at
    /// the last step; no warm-up). Same schedule for the pasted and the scratch model. Other values throw.
    std::string schedule = "constant";
    int64_t batch_size = 64;
    int64_t n_eval = 1280;              ///< fixed evaluation prompts (same for every model and baseline)
    int64_t eval_every = 100;           ///< evaluation (loss curve) period in steps
    double w_scale = 0.0;               ///< τ of w ~ N(0, τ²I_d); 0 = the parent's task.w_scale
    uint64_t seed = 0;                  ///< 0 = the parent's seed
    /// τ from matchedWScale (the linear labels get the parent task's signal variance, so that the frozen
    /// read-out sees labels of the scale it was trained on) instead of the parent's task.w_scale. Throws
    /// icl::Error together with w_scale > 0.
    bool match_label_variance = false;
    /// Rescale the linear task as a whole to the parent's label variance: τ = c·τ_p and σ = c·σ_p with c from
    /// matchedLabelScale, so the labels have the variance the frozen read-out was trained on while the task
    /// keeps its signal-to-noise ratio (and so ridge's λ = σ²/τ² and every loss ratio of the task at (τ_p, σ_p),
    /// losses themselves scaled by c²). Throws icl::Error together with w_scale > 0 or match_label_variance.
    bool match_label_scale = false;
    /// Initialise the new module from the parent instead of GPT-2's random initialisation (it stays
    /// trainable): "linear" (ℓ = 0 only) copies the read-in and positions, so the pasted model is an exact
    /// copy of the parent before training (the "frozen copy" check); "transformer1" (ℓ ≥ 1) copies the
    /// read-in, the positions and block ℓ − 1 into the new block, so for ℓ = 1 the pasted model starts as
    /// the parent (a warm start: the new module must turn the parent's Φ* into a representation for
    /// linear ICL). The scratch model is never initialised from the parent.
    bool copy_parent_embedding = false;
    /// With copy_parent_embedding and "transformer1": the new block's MLP output (W_out, b_out) starts at
    /// zero, so the new block starts as the parent's block ℓ − 1 without its MLP — the parent's attention
    /// (which copies x_i to the y-tokens) kept, its computation of Φ* dropped — and the read-in can write a
    /// linear feature of x where the frozen blocks read Φ*(x). Throws icl::Error without those two options.
    bool zero_new_mlp = false;
    bool train_scratch = true;          ///< also train the same-size model from scratch
    /// With train_scratch on a machine with ≥ 2 hardware threads: train the pasted and the scratch model side
    /// by side, each on its own thread with one intra-op thread (`threads` is then not used), instead of one
    /// after the other on `threads` intra-op threads (faster for small models: docs/performance.md, "Pasting
    /// side by side"). Each model's numbers depend on its intra-op thread count only, so either is deterministic.
    bool concurrent = true;
    std::string out_path;               ///< new experiment file for the pasted model; "" = none
    bool overwrite = false;             ///< replace an existing out_path
    bool store = true;                  ///< store /analysis/pasting/<id> in the parent
    int threads = 0;                    ///< intra-op threads (0 = the default); see concurrent
};

/// The τ of the linear task whose signal ⟨w, x⟩, w ~ N(0, τ²I_d), has the variance of the parent task's
/// signal ⟨w, Φ*(x)⟩, w ~ N(0, τ_p²I_D): τ = τ_p·(E‖Φ*(x)‖² / E‖x‖²)^{1/2} (a mixture: E‖Φ*‖² averaged over
/// its K representations, each drawn with probability 1/K). Both expectations are sample means over the x of
/// `n_prompts` prompts of `task` (every position; samplePrompts(task, n_prompts, seed)); a task without a
/// representation gives τ_p exactly. Throws icl::Error for a non-regression task.
double matchedWScale(const TaskConfig& task, int64_t n_prompts, uint64_t seed);

/// The factor c that gives the linear task y = ⟨w, x⟩ + σz (w ~ N(0, τ²I_d), the parent's τ and σ) the label
/// variance of the parent task y = ⟨w, Φ*(x)⟩ + σz (w ~ N(0, τ²I_D)) when τ and σ are both multiplied by c:
/// c = ((τ²E‖Φ*(x)‖² + σ²) / (τ²E‖x‖² + σ²))^{1/2}, the expectations as in matchedWScale (same prompts); 1 for
/// a task without a representation. Throws icl::Error for a non-regression task or a zero label variance.
double matchedLabelScale(const TaskConfig& task, int64_t n_prompts, uint64_t seed);

struct PastingResult {
    int64_t parent_step = 0;
    int64_t parent_layers = 0;          ///< L
    int64_t cut_layer = 0;
    std::string embedding;
    int64_t pasted_layers = 0;          ///< blocks of the pasted (and scratch) model
    int64_t trainable_pasted = 0;       ///< trainable parameters of the pasted model
    int64_t trainable_scratch = 0;      ///< parameters of the scratch model
    int64_t steps = 0;
    double w_scale = 0.0;               ///< τ of the linear task
    double noise_std = 0.0;             ///< σ of the linear task
    double ridge_lambda = 0.0;          ///< Bayes choice σ²/τ²
    /// Final 0.5·MSE at the query on the evaluation prompts; scratch_loss is NaN without train_scratch.
    double pasted_loss = 0.0, scratch_loss = 0.0, ridge_loss = 0.0, zero_loss = 0.0;
    bool frozen_unchanged = true;       ///< the frozen parameters are bitwise equal to the parent's
    /// ICL curves: 0.5·MSE of the prediction of y_{n+1} from the first n examples, n = 0..N.
    std::vector<int64_t> n_examples;
    std::vector<double> pasted_curve, scratch_curve, ridge_curve;
    /// Loss curves: at each evaluation step, the mean training loss since the previous one and the eval loss.
    std::vector<int64_t> curve_steps;
    std::vector<double> pasted_train, pasted_eval, scratch_train, scratch_eval;
    std::string out_path;               ///< the new experiment file ("" when none)
    std::string analysis_id;            ///< id under /analysis/pasting in the parent ("" when not stored)
    double wall_time_s = 0.0;
};

/// Runs the pasting experiment on the parent at `parent_path`. The progress callback gets (done, total)
/// training steps (pasted and scratch together) and returns false to cancel (icl::Error("cancelled")).
/// Throws icl::Error for a parent that is not gpt2, ℓ out of range, an unknown embedding, bad sizes, or a
/// frozen parameter that changed. Thread affinity: worker thread.
PastingResult computePasting(const std::string& parent_path, const PastingOptions& options,
                             const std::function<bool(int64_t, int64_t)>& progress = {});

/// A pasting result stored in its parent (/analysis/pasting/<id>) by computePasting with `store`.
struct StoredPasting {
    std::string id;          ///< "0001", "0002", … in the order they were stored
    std::string created;     ///< ISO 8601 time of storing
    /// As computed, with analysis_id = id (frozen_unchanged is true: a pasting that changed a frozen parameter
    /// throws before it is stored). scratch_loss is NaN where no scratch model was trained.
    PastingResult result;
    /// The options as far as they are stored: checkpoint_step, cut_layer, embedding, steps, lr, schedule,
    /// concurrent, batch_size, n_eval, match_label_scale, copy_parent_embedding, zero_new_mlp, out_path, the
    /// seed used, τ as used (w_scale; 0 with match_label_scale, which sets it); train_scratch from whether a
    /// scratch curve is stored. eval_every and match_label_variance are not stored and keep their defaults.
    PastingOptions options;
};

/// Every pasting result stored in the parent at `parent_path`, oldest first; empty when there is none. A
/// damaged result is left out (readRunSummary lists it). Throws icl::Error for a file that cannot be opened
/// or a stored result whose JSON is not a pasting result. Torch-free; thread-safe.
std::vector<StoredPasting> readStoredPastings(const std::string& parent_path);

} // namespace icl
