#pragma once
// The algorithm map: which algorithm, at which step, does layer ℓ of a model compute? Torch-free facade for the
// GUI's Algorithm map page and `icl-cli analyze RUN algorithm-map` (docs/science.md §5).
//
// Every layer ℓ = 1 … L of a checkpoint is read out at the query (LSA: −y-slot after layer ℓ; GPT-2: a ridge
// probe per layer at the x tokens) and compared with GD-k, GD++, Iterative Newton-k and ridge over a λ path on
// the same prompts, by Fu et al.'s two similarities (of errors, of induced weights; docs/science.md §5). Per
// prompt and prefix one eigendecomposition of XᵀX gives every GD, Newton and ridge step (core/baselines).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/types/algorithm_map.h"

namespace icl {

struct AlgorithmMapOptions {
    int64_t checkpoint_step = -1;  ///< −1 = last checkpoint
    int64_t n_prompts = 1000;      ///< evaluation prompts (similarity of errors)
    int64_t n_fit_prompts = 256;   ///< GPT-2: prompts the per-layer probes are fitted on (other draws)
    int64_t n_weight_contexts = 16;  ///< contexts for the similarity of induced weights (the first evaluation prompts)
    int64_t n_weight_queries = 0;    ///< query points per context; 0 = 2d + 1 (at least d + 1)
    int64_t newton_max_k = 20;       ///< Newton grid 1 … newton_max_k
    int64_t gd_max_k = 1000;         ///< GD grid: gd_points log-spaced integers in 1 … gd_max_k
    int64_t gd_points = 25;
    std::vector<double> ridge_lambdas;  ///< ridge path (sum-of-squares penalty); empty = 10^3, 10^2.5, …, 10^-4
    /// GD's step size: ≤ 0 = automatic (models that predict at every prefix: s = 1/‖XᵀX‖₂ per prompt and prefix;
    /// query-only models: η of the run's fitted gd_L, L = layers, refitted as the trainer fits it when absent —
    /// the η of the GD construction); > 0 = this η on the mean objective for every prompt.
    double gd_eta = 0.0;
    std::string newton_alpha;        ///< "frobenius", "spectral"; empty = the run's eval.newton_alpha
    /// Middle layers of the fits (1-based, inclusive); 0 = drop the first and last quarter: ⌊L/4⌋ + 1 … L − ⌊L/4⌋.
    int64_t middle_first = 0;
    int64_t middle_last = 0;
    /// Families to compute (any of "gd", "gdpp", "newton", "ridge"); empty = all. A family that does not apply is
    /// kept with its reason (AlgorithmFamilyMap::unavailable), unless it was asked for by name: then it throws.
    std::vector<std::string> families;
    uint64_t seed = 0;      ///< prompt seed; 0 = streams derived from the experiment seed
    int64_t n_scatter = 256;  ///< query predictions kept for the scatter (first evaluation prompts)
    bool store = true;      ///< store under /analysis/algorithm_map/<id> (not for a first look)
    int threads = 0;
};

/// Evaluation prompts of the first look (and of its probes' fit set): the first ones of the full draw.
inline constexpr int64_t kAlgorithmMapFirstLookPrompts = 64;

/// The map of one checkpoint of the experiment at `path`. `progress` gets (done, total) steps and returns false
/// to cancel: icl::Error("cancelled"). When `first_look` is given and n_prompts > kAlgorithmMapFirstLookPrompts, it
/// first receives the map on the first kAlgorithmMapFirstLookPrompts evaluation (and probe) prompts.
/// Prompts: evaluation samplePrompts(task, n_prompts, mixSeed(s, 0xA16A0001)), probe fit mixSeed(s, 0xA16A0002),
/// weight queries mixSeed(s, 0xA16A0003), s = seed or the experiment's seed.
/// Throws icl::Error (one line naming the file) for a run that is not a regression task ("… is not a regression
/// task: the map compares layers with regression algorithms"), a model that is not lsa or gpt2, a model without
/// layers, an unknown family, a family asked for by name that does not apply, or bad counts.
/// Thread affinity: worker thread (the callbacks run on it).
AlgorithmMap computeAlgorithmMap(const std::string& path, const AlgorithmMapOptions& options,
                                 const std::function<bool(int64_t, int64_t)>& progress = {},
                                 const std::function<void(const AlgorithmMap&)>& first_look = {});

/// The same map for several checkpoints (empty `steps`: every checkpoint of the file that is not damaged, in
/// order): the evaluation prompts and the algorithms are computed once; each map is stored when options.store.
/// `progress` counts over all of them; `each` (optional) receives every map as it is done.
std::vector<AlgorithmMap> computeAlgorithmMaps(const std::string& path, const AlgorithmMapOptions& options,
                                               std::vector<int64_t> steps,
                                               const std::function<bool(int64_t, int64_t)>& progress = {},
                                               const std::function<void(const AlgorithmMap&)>& each = {});

/// Why the map does not apply to a run (a non-regression task, a model kind without layers to read), or "".
std::string algorithmMapUnavailableReason(const std::string& task_kind, const std::string& model_kind,
                                          int64_t n_layers);

/// The map as JSON (the stored result and `icl-cli analyze … algorithm-map --json`): {"checkpoint_step", "layers",
/// "readout", "positions", "n_prompts", …, "families": {"gd": {"steps", "sim_errors": [[layer × step]],
/// "sim_weights", "best_step", "best_similarity", "best_step_weights", "fit": {kind, first_layer, last_layer,
/// slope, intercept, r2, spearman}, "fit_linear"}, "newton": …, "gdpp": {"unavailable": "why"}, "ridge": …}}.
/// Non-finite numbers are written as null. The scatter predictions are not part of it.
std::string algorithmMapToJson(const AlgorithmMap& map);

/// Parses algorithmMapToJson's text (from a file: untrusted). Checks every shape (matrices [layers × steps], one
/// best step per layer) and throws icl::Error naming `source` and the key for anything else.
AlgorithmMap algorithmMapFromJson(const std::string& text, const std::string& source);

/// The maps stored in the experiment at `path` (/analysis/algorithm_map/*), in id order; damaged entries (checksum)
/// are left out by the reader, malformed ones throw icl::Error naming the file and the id.
std::vector<AlgorithmMap> readStoredAlgorithmMaps(const std::string& path);

} // namespace icl
