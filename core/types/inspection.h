#pragma once
// Torch-free results of the interactive inspector (Attention page, prompt editor, patching, regression
// lens) and of `icl-cli analyze RUN.h5 attention|patching|lens`.

#include <cstdint>
#include <string>
#include <vector>

#include "core/types/matrix.h"

namespace icl {

/// One prompt in editable form: N in-context examples (x_i, y_i) and the query (x_q, y_q).
struct Prompt {
    std::vector<std::vector<double>> x;  ///< [N+1][d]: x_1 … x_N, then x_q
    std::vector<double> y;               ///< [N+1]: y_1 … y_N, then the true label y_q
    /// The task instance the prompt was drawn from: w [d] (linear tasks), w [rep_dim] (representation
    /// tasks; the mixture's component index is `component`) or w = (a, φ) (sine_regression:
    /// y = a·sin(x + φ)). Empty when unknown (e.g. a prompt read from a CSV); then resampling a row and
    /// changing the label noise are refused.
    std::vector<double> w;
    int64_t component = -1;  ///< representation_mixture: index of Φ*_k; −1 otherwise
    double noise_std = 0.0;  ///< σ of the label noise the y values were drawn with
    uint64_t seed = 0;       ///< seed the prompt was drawn from (metadata for exports)

    int64_t nContext() const { return int64_t(y.size()) - 1; }  ///< N
    int64_t dim() const { return x.empty() ? 0 : int64_t(x.front().size()); }  ///< d
};

/// Attention scores of one head: queries × keys.
struct HeadSummary {
    int64_t layer = 0;
    int64_t head = 0;
    /// Mean over query rows of the Shannon entropy (nats) of the row (softmax heads; linear heads use
    /// |score| normalised per row).
    double entropy = 0.0;
    /// Interleaved layout: mean over y_i tokens of the weight on their own x_i token (copying, von
    /// Oswald et al. §4 / Guo et al.); NaN for the pair layout.
    double copy_mass = 0.0;
    /// Weight of the query token's row on each in-context example [N] (x_i and y_i tokens summed for
    /// the interleaved layout; |score| normalised for linear heads).
    std::vector<double> query_to_example;
};

/// One predictor's answer on a prompt.
struct PredictorValue {
    std::string name;         ///< "model", "zero", "least_squares", "ridge", "gd_1", …, "oracle"
    double prediction = 0.0;  ///< ŷ_q
    double error = 0.0;       ///< the training loss on (ŷ_q, y_q), e.g. 0.5·(ŷ_q − y_q)²
};

/// Everything the Attention page shows for one prompt at one checkpoint.
struct Inspection {
    int64_t checkpoint_step = 0;
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    std::vector<std::string> token_labels;  ///< [T] query-side tokens: "x₁", "y₁", …, "query" or "e₁", …, "query"
    std::vector<std::string> key_labels;    ///< [T_keys] key-side tokens (LSA: the N context tokens only)
    /// Attention pattern of each head, index layer·n_heads + head, [T, T_keys] with the labels above.
    /// Softmax heads: weights (rows sum to 1, causal zeros for gpt2); linear (LSA) heads: the raw scores.
    std::vector<Matrix> patterns;
    std::vector<bool> softmax_head;         ///< per pattern: true when rows are a probability distribution
    std::vector<HeadSummary> heads;         ///< same order as `patterns`
    /// The model first, then every baseline of the run (eval.baselines), then those of zero, least squares,
    /// ridge and GD-1…k (k up to max(layers, eval.gd_steps)) the run does not list, then "oracle" when the task
    /// has one and the run lists no oracle baseline (oracle_ridge_phi, mixture_posterior). Errors use the
    /// run's loss.
    std::vector<PredictorValue> predictions;
    double target = 0.0;                    ///< y_q
    double elapsed_ms = 0.0;                ///< wall time of the forward pass and baselines
};

/// Regression lens (the regression analogue of the logit lens): the model's read-out applied to the
/// residual stream at the query position after each layer.
struct RegressionLens {
    int64_t checkpoint_step = 0;
    std::vector<std::string> layer_labels;  ///< [L+1] "embed", "layer 0", …
    std::vector<double> prediction;         ///< [L+1] read-out of each residual stream (last = the model's ŷ_q)
    /// Reference predictions on the same prompt: "gd_1", …, "gd_k" (k = 1 … max(L, eval GD steps)), "ridge",
    /// "least_squares", "zero" (and "oracle" when the task has one).
    std::vector<PredictorValue> references;
    double target = 0.0;
};

/// How the corrupted prompt of activation patching differs from the clean one.
enum class Corruption {
    ChangeLabel,  ///< one in-context label y_i replaced by an independent draw (i = PatchingOptions::example)
    DifferentW,   ///< every label recomputed with an independent task vector w' (same x)
    ShufflePairs, ///< the labels y_1 … y_N permuted among the examples (x fixed)
};

/// Activation patching: the clean residual stream resid_pre.{l} at one token position is written into
/// the corrupted run. effect[l][t] = (ŷ_patched − ŷ_corrupted) / (ŷ_clean − ŷ_corrupted) at the query,
/// so 0 = corrupted, 1 = clean. Row L (the last) patches resid_post.{L−1}.
struct PatchingResult {
    int64_t checkpoint_step = 0;
    Matrix effect;  ///< [L+1, T]: row labels "layer 0 (resid_pre)", …, "final (resid_post)"; column labels the tokens
    Matrix patched_prediction;  ///< [L+1, T]: ŷ_q of each patched run (same labels as `effect`)
    double clean_prediction = 0.0;      ///< mean over prompts
    double corrupted_prediction = 0.0;  ///< mean over prompts
    int64_t n_prompts = 0;
    int64_t n_skipped = 0;  ///< prompts left out because |ŷ_clean − ŷ_corrupted| < 1e-6 (effect undefined)
    std::string corruption;  ///< "change_label", "different_w" or "shuffle_pairs"
};

} // namespace icl
