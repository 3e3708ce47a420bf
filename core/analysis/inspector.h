#pragma once
// Interactive inspector: one checkpoint kept loaded so that a prompt can be edited and re-run at once
// (attention patterns, the model's prediction beside every baseline, regression lens, activation
// patching, ablations). Torch-free facade for the GUI's Attention/Patching pages and for
// `icl-cli analyze RUN.h5 attention|patching|lens`.
//
// Intended usage (one worker thread owns the Inspector):
//     Inspector insp("run.h5");                 // last checkpoint; throws icl::Error for a bad file
//     Prompt p = insp.samplePrompt(/*seed=*/7);
//     p.y[3] += 1.0;                            // edit one in-context label
//     const Inspection view = insp.inspect(p);  // patterns [L·H] × [T, T_keys], predictions, head summaries
//     const RegressionLens lens = insp.lens(p);
//     const PatchingResult patch = insp.patching(p, {});  // activation patching, default corruption

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/types/inspection.h"
#include "core/types/run_summary.h"

namespace icl {

/// An ablation applied during Inspector::inspect / lens (docs/architecture.md "Activation names and interventions").
struct Ablation {
    /// Zero: the target becomes 0. Mean: it becomes its mean, per token position, over 256 prompts of
    /// the run's task with the prompt's N (a fixed draw: samplePrompts(task, 256,
    /// mixSeed(config.seed, 0x3EA7AB1A)), run without ablations); a head's part is averaged alone.
    enum class Kind { Zero, Mean };
    Kind kind = Kind::Zero;
    /// What is ablated: "attn.out.{l}" (a layer's attention output, or one head's part of it when
    /// head ≥ 0), "mlp.out.{l}" (gpt2 only), or "resid_pre.{l}" / "resid_post.{l}" (the residual stream).
    std::string name;
    int64_t head = -1;      ///< ≥ 0: only this head's contribution (attn.out only)
    int64_t position = -1;  ///< ≥ 0: only this token position; −1 = every position
};

struct PatchingOptions {
    Corruption corruption = Corruption::ChangeLabel;
    int64_t example = 0;   ///< ChangeLabel: index i of the changed label y_i (0-based, < N)
    uint64_t seed = 1;     ///< seed of the corruption's random draws
};

/// One loaded checkpoint of an experiment. Not thread-safe: one thread at a time (the GUI keeps it on
/// its worker thread). Works for every model kind (lsa, gpt2).
class Inspector {
public:
    /// Loads checkpoint `step` (−1 = last) of `path` and the run's fitted baselines.
    /// Throws icl::Error for a file that is not an experiment, has no checkpoints or no such step.
    explicit Inspector(const std::string& path, int64_t step = -1);
    ~Inspector();
    Inspector(const Inspector&) = delete;
    Inspector& operator=(const Inspector&) = delete;

    const RunSummary& summary() const;
    int64_t checkpointStep() const;
    /// Switches to another saved checkpoint (same file). Throws icl::Error for an absent step.
    void setCheckpoint(int64_t step);

    int64_t nLayers() const;
    int64_t nHeads() const;
    int64_t nContext() const;  ///< N of the run's task
    int64_t inputDim() const;  ///< d
    /// Largest N the model accepts: gpt2 (n_positions − 1)/2 (its learned positions); 0 = no limit (lsa).
    int64_t maxContext() const;

    /// A prompt of the run's task drawn from `seed` (same distribution as training prompts).
    Prompt samplePrompt(uint64_t seed) const;
    /// Checks that `prompt` fits the run (N ≥ 1 and at most maxContext(), d components per point, finite values
    /// within ±1e6, a task instance w of the task's size or none); throws icl::Error saying what does not.
    void checkPrompt(const Prompt& prompt) const;
    /// Redraws example `index` (0 ≤ index ≤ N; N = the query) of `prompt`: new x from the task's input
    /// distribution, y from the prompt's task instance w with noise σ = prompt.noise_std.
    /// Throws icl::Error when the prompt has no task instance (empty w) or the index is out of range.
    void resampleExample(Prompt& prompt, int64_t index, uint64_t seed) const;
    /// Recomputes every label y_i = f_w(x_i) + σ·z_i with σ = `noise_std` (z from `seed`) and sets
    /// prompt.noise_std. Throws icl::Error when the prompt has no task instance.
    void relabel(Prompt& prompt, double noise_std, uint64_t seed) const;
    /// The noise-free label f_w(x) of the prompt's task instance. Throws when w is empty.
    double trueLabel(const Prompt& prompt, const std::vector<double>& x) const;

    /// Runs the model on `prompt` (any N ≥ 1 up to the model's maximum; d must match) with the given
    /// ablations, and every baseline on the same prompt. The query's label y_q may be NaN (unknown, e.g.
    /// a prompt read from a file): the predictions do not read it, the errors and `target` are then NaN
    /// (the same holds for lens() and the patching functions). Throws icl::Error for a prompt of the wrong
    /// shape or an ablation that matches nothing (e.g. a layer the model does not have).
    /// Predictions: "model", the run's baselines (baselineNames order, predictBaseline in float64),
    /// then zero, least squares, ridge, GD-1 … GD-L and newton_k for k of eval.newton_steps (Iterative
    /// Newton with eval.newton_alpha) where the run does not list them, then "oracle" when the task has one: the noise-free label f_w(x_q) for linear and sine tasks
    /// with a known w; for representation tasks ridge on Φ*_k(x) with the Bayes penalty σ²/τ² (k = the
    /// prompt's component), or the mixture posterior when the component is unknown.
    /// Models under a million parameters run on one intra-op thread here (one prompt is too little
    /// work to share; see BM_InspectPromptEdit).
    Inspection inspect(const Prompt& prompt, const std::vector<Ablation>& ablations = {});

    /// Regression lens on `prompt` (see RegressionLens). Its last prediction equals inspect()'s model
    /// prediction exactly. gpt2: final LayerNorm + read-out of each residual stream at the query's
    /// x-token; lsa: −(y-slot of the query token). GD-k uses the run's fitted η of gd_k, else η fitted
    /// here once (closed form for k = 1, line search otherwise) on 2,000 fresh prompts of the task.
    RegressionLens lens(const Prompt& prompt, const std::vector<Ablation>& ablations = {});

    /// Activation patching from `clean` into its corruption (PatchingOptions), one prompt. The
    /// progress callback gets (rows done, L + 1) and returns false to cancel (icl::Error("cancelled")).
    /// Rows are computed from the final one up to layer 0 (the cheapest first: the blocks before the
    /// patched layer are not run); after each, `rows` (when given) receives the result so far, the rows
    /// not yet computed NaN — a first look within a fraction of a second. Both callbacks run on the
    /// calling thread.
    PatchingResult patching(const Prompt& clean, const PatchingOptions& options,
                            const std::function<bool(int64_t, int64_t)>& progress = {},
                            const std::function<void(const PatchingResult&)>& rows = {});

    /// Activation patching averaged over `n_prompts` prompts of the run's task (samplePrompt(mixSeed(seed,
    /// i)), each corrupted with options.seed mixed with i): effect is the mean over the prompts that
    /// are not skipped (|ŷ_clean − ŷ_corrupted| < 1e-6), patched_prediction, clean_prediction and
    /// corrupted_prediction the means over all. Progress gets (layers done, (L+1)·n_prompts).
    /// Throws icl::Error for n_prompts < 1, on cancel ("cancelled"), and when every prompt is skipped.
    PatchingResult patchingOverPrompts(uint64_t seed, int64_t n_prompts, const PatchingOptions& options,
                                       const std::function<bool(int64_t, int64_t)>& progress = {});

    /// Activation patching between two given prompts of the same N (patching() is this on
    /// (clean, corrupt(clean, options))). With clean == corrupted every patched prediction equals the
    /// clean one and the effect is undefined (NaN, n_skipped = 1).
    PatchingResult patchPrompts(const Prompt& clean, const Prompt& corrupted,
                                const std::function<bool(int64_t, int64_t)>& progress = {},
                                const std::function<void(const PatchingResult&)>& rows = {});

    /// The corrupted prompt patching() uses for `clean` and `options` (shown in the GUI):
    /// ChangeLabel: y_i = f_{w'}(x_i) + σ·z with w' (and for a mixture the component) an independent
    /// draw from the task's prior; DifferentW: every label (query included) from such a w', which the
    /// result holds as its w; ShufflePairs: y_1 … y_N permuted (never the identity; N ≥ 2). Draws
    /// from options.seed. Throws icl::Error for an example index outside [0, N).
    Prompt corrupt(const Prompt& clean, const PatchingOptions& options) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Name of a corruption as written in JSON and on the CLI: "change_label", "different_w", "shuffle_pairs".
std::string corruptionName(Corruption c);
/// Inverse of corruptionName. Throws icl::Error for an unknown name.
Corruption corruptionFromName(const std::string& name);

} // namespace icl
