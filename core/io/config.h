#pragma once
// Experiment configuration: JSON parsing, validation with key-path errors, presets and overrides.
// Torch-free; safe to include from the app.
//
// Intended usage:
//   ConfigRequest req;  req.preset = "vonoswald-lsa-1layer";  req.scale = "quick";
//   req.sets = {"training.lr=5e-4"};
//   nlohmann::json cfg = resolveConfig(req);          // validated, every default filled in
//   ExperimentConfig typed = parseConfig(cfg);          // typed view used by the trainer
//
// Each key is declared once, in the schema of config.cpp (buildSchema; its reference in
// core/io/config_schema.h, docs/config.md); the kinds are enums in core/io/kinds.h (kindOf).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/memory_budget.h"

namespace icl {

/// `task` section: `linear_regression` (y = ⟨w, x⟩ + σ·z), Garg et al. 2022's
/// `sparse_linear_regression` (w has exactly `sparsity` non-zero coordinates) and
/// `noisy_linear_regression` (y = ⟨w, x⟩ + σ·z with σ = noise_std > 0), `sine_regression`
/// (von Oswald et al. §5: y = a·sin(x + φ), d = 1, a ~ U(amplitude_min, amplitude_max) and
/// φ ~ U(phase_min, phase_max) drawn independently per prompt), or the representation tasks below.
struct TaskConfig {
    std::string kind = "linear_regression";
    std::string layout = "pair";            ///< "pair" (e_i = (x_i, y_i)) or "interleaved" (x and y tokens)
    int64_t d = 10;                         ///< input dimension
    int64_t n_context = 10;                 ///< N, number of in-context examples
    std::string x_distribution = "uniform"; ///< "uniform" (U(−x_range, x_range)^d) or "normal" (N(0, I_d))
    double x_range = 1.0;
    /// Ill-conditioned inputs (Fu et al. 2023): x ~ N(0, Σ) with Σ = diag(λ_1 … λ_d') over the d' active
    /// coordinates, eigenvalues log-spaced λ_j ∝ κ^(−(j−1)/(d'−1)) from the largest to the largest/κ and scaled to
    /// mean 1 (E‖x‖² = d', as for N(0, I)). 1 = isotropic. Needs x_distribution "normal" and a linear task.
    double x_condition_number = 1.0;
    double w_scale = 1.0;                   ///< w ~ N(0, w_scale²·I_d)
    double noise_std = 0.0;                 ///< σ of Gaussian label noise on y_i (and y_q)
    /// sparse_linear_regression (Garg et al. 2022): k, the number of non-zero coordinates of w. The
    /// support is a uniformly random k-subset of the active coordinates, drawn per prompt; the
    /// non-zeros are N(0, w_scale²). Garg et al.'s default k = 3. Ignored by the other kinds.
    int64_t sparsity = 3;
    double amplitude_min = 0.1;             ///< sine_regression: a ~ U(amplitude_min, amplitude_max)
    double amplitude_max = 5.0;
    double phase_min = 0.0;                 ///< sine_regression: φ ~ U(phase_min, phase_max) (radians)
    double phase_max = 3.14159265358979323846;
    /// representation (Guo et al. 2023): y = ⟨w, Φ*(x)⟩ + noise_std·z with Φ* a fixed rep_layers-layer
    /// bias-free MLP R^d → R^rep_dim (random orthogonal matrices, leaky ReLU 0.01), drawn once from the
    /// experiment seed; w ~ N(0, w_scale²·I_rep_dim). representation_mixture: n_representations such
    /// Φ*_1…Φ*_K, one chosen uniformly per prompt.
    int64_t rep_dim = 0;            ///< D; 0 = d
    int64_t rep_layers = 2;         ///< L
    int64_t n_representations = 1;  ///< K (representation_mixture: ≥ 2)
    /// The experiment's seed, filled in by parseConfig (not a key of the task section): Φ* is drawn from it.
    uint64_t experiment_seed = 0;
    /// fewshot_classification (Chan et al. 2022, docs/science.md §4): n_context (x_i, label_i) pairs and a query
    /// exemplar in the interleaved layout (2·n_context + 1 tokens; the paper's 8 pairs → 17 tokens), synthetic
    /// classes of exemplar_dim-dimensional exemplars (prototype + within_class_noise·z), cross-entropy on the
    /// query's label. The keys mirror FewShotOptions (core/tasks/fewshot_classification.h).
    int64_t n_classes = 1600;         ///< training classes
    int64_t n_holdout = 10;           ///< holdout classes (ICL evaluation only)
    double zipf_alpha = 0.0;          ///< Zipf exponent α over training classes (0 = uniform)
    double p_bursty = 0.9;            ///< probability that a training sequence is bursty
    int64_t labels_per_class = 1;     ///< label multiplicity
    int64_t n_labels = 0;             ///< label vocabulary; 0 = n_classes·labels_per_class
    int64_t exemplar_dim = 64;        ///< width of a synthetic exemplar vector
    double within_class_noise = 0.1;  ///< σ of the Gaussian within-class variation (images: pixel noise)
    /// "synthetic" (a seeded prototype per class), "image_folder" (exemplar_path = root of
    /// alphabet/character/*.png, Omniglot's layout) or "idx" (exemplar_path = IDX images, exemplar_labels_path =
    /// IDX labels; MNIST / Fashion-MNIST); images become vectors of image_size² pixel values in [0, 1]
    std::string exemplar_source = "synthetic";
    std::string exemplar_path;
    std::string exemplar_labels_path;
    int64_t image_size = 0;           ///< image sources: resize to image_size × image_size (area averaging); 0 = keep
    int64_t exemplars_per_class = 0;  ///< image sources: use the first k images of each class (1 = single exemplar); 0 = all
    /// Common / rare split of the training classes (the authors' SeqGenerator; FewShotOptions documents each):
    /// the first n_common_classes training classes in permuted (Zipf rank) order are common, the rest rare; 0 =
    /// no split, and then the four keys after it must keep their defaults.
    int64_t n_common_classes = 0;
    double p_bursty_common = 0.0;           ///< fraction of bursty sequences that are few-shot on common classes
    double p_bursty_zipfian = 1.0;          ///< fraction drawn from Zipf over all training classes (rest: rare)
    std::string non_bursty_type = "zipfian"; ///< "zipfian", "common" or "common_no_support"
    bool zipf_within_common_rare = false;   ///< draws within common / rare follow their Zipf weights (else uniform)
    /// Curriculum (Garg et al. 2022; not a key of the task section, set by trainingTask()): only the
    /// first active_dims coordinates of every x_i and x_q are drawn, the rest are exactly 0; for
    /// sparse_linear_regression the support of w lies among them. 0 = all d coordinates.
    int64_t active_dims = 0;
};

/// `model` section. Only `lsa` (von Oswald et al. 2022, linear self-attention) in this slice, with the
/// options of the paper's further experiments (softmax first layer, LayerNorm, MLP, positions, an MLP
/// representation of the inputs).
struct ModelConfig {
    /// "lsa", "gpt2" (Garg et al. GPT-2 decoder; interleaved layout; with task fewshot_classification the
    /// GPT-2 classifier of Chan et al.), or the recurrent baselines of Chan et al. "lstm" and "rnn"
    /// (fewshot_classification only)
    std::string kind = "lsa";
    int64_t n_layers = 1;      ///< K (lsa) or L (gpt2)
    int64_t d_model = 64;      ///< gpt2: residual stream width (divisible by n_heads)
    int64_t n_heads = 1;
    /// gpt2: rows of the learned position embedding (longest token sequence); 0 = 2·task.n_context + 1. An imported
    /// Garg et al. model keeps its own (2·n_positions of its GPT2Config).
    int64_t n_positions = 0;
    bool tied = false;         ///< one shared layer applied K times (recurrent)
    double init_scale = 0.002; ///< variance-scaling scale; divided by K (docs/science.md §1)
    /// fewshot_classification: exemplar encoder, "linear" (vector exemplars) or "resnet" (Chan et al.'s small
    /// ResNet for image exemplars: 4 groups × 2 bottleneck blocks, channels 16/32/32/64 → 64-d)
    std::string encoder = "linear";
    /// "variance_scaling" (random, init_scale), or a ready-made model: "gd_construction" (Proposition 1
    /// with the run's fitted η of GD-K) or "gdpp_construction" (GD++ with the run's fitted per-layer
    /// η, γ; K > 1). With training.steps = 0 the file holds the construction itself, so every analysis,
    /// page and report works on it as on a trained model. Plain LSA on the pair layout only.
    std::string init = "variance_scaling";
    int64_t softmax_layers = 0; ///< the first this-many layers use softmax attention (scaled by 1/√D)
    bool layer_norm = false;   ///< LayerNorm on each layer's input (pre-LN)
    bool mlp = false;          ///< a residual MLP (D → 4D → D, GELU) after each attention layer
    std::string positions = "none"; ///< "none" or "sinusoidal" (concatenated to every token)
    int64_t pos_dim = 16;      ///< width of the sinusoidal code (even); used when positions = "sinusoidal"
    std::vector<int64_t> feature_mlp; ///< hidden widths of the input MLP representation φ(x) (ReLU)
    int64_t feature_dim = 0;   ///< output width of φ; 0 = no representation (tokens carry x itself)
    /// Variant of the softmax layers from the contrastive view of attention (Ren & Liu 2023; formulas
    /// in core/models/lsa.h, AttentionVariant): "softmax", "regularized" (norm penalty λ → shrunk
    /// update), "augmented" (residual MLPs on the key and value maps, weight α), "negative_samples"
    /// (subtracts β times the mean of the other tokens' values). Needs softmax_layers ≥ 1.
    std::string attention_variant = "softmax";
    double variant_strength = 0.0;  ///< λ, α or β of the variant (≥ 0); 0 = plain softmax attention
    int64_t augment_hidden = 16;    ///< hidden width of the augmented variant's MLPs
};

/// `training.curriculum` section: Garg et al. 2022's curriculum (docs/science.md §0). At optimisation
/// step s (0-based; the batch that takes the model from s to s + 1) the training prompts have
///   d_eff(s)  = min(dims_start   + dims_inc   · ⌊s / interval⌋, task.d)            active input coordinates,
///   points(s) = min(points_start + points_inc · ⌊s / interval⌋, task.n_context + 1)  points,
/// where points counts the in-context examples and the query (Garg et al.'s n_points), so the
/// prompt has N(s) = points(s) − 1 in-context examples. Coordinates of x beyond d_eff are 0.
/// Evaluation always uses the full size. Garg et al. (code): d 5 → 20 (+1), points 11 → 41 (+2),
/// every 2000 steps. The stage is a function of the step only, so a resumed run sees the same prompts.
struct CurriculumConfig {
    bool enabled = false;
    int64_t dims_start = 5;
    int64_t dims_inc = 1;
    int64_t points_start = 11;
    int64_t points_inc = 2;
    int64_t interval = 2000;  ///< steps between increments
};

/// `training` section.
struct TrainingConfig {
    std::string optimizer = "adamw";   ///< "adam", "adamw" or "sgd"
    double lr = 1e-3;                  ///< peak learning rate
    double beta1 = 0.9;
    double beta2 = 0.98;
    double weight_decay = 0.0;
    int64_t batch_size = 2048;
    /// Parts the batch's gradient is computed in, each on its own thread with one intra-op thread, and
    /// added in order (core/training/sharded_step.h): the weights and training losses depend on this, not on
    /// the thread count (evaluation, and the step-0 loss, still run on the intra-op threads).
    /// 1 = the whole batch at once on the intra-op threads. Regression tasks; LSA models the fused step
    /// covers ignore it.
    int64_t shards = 1;
    int64_t steps = 5000;
    double grad_clip = 0.001;          ///< global-norm clipping threshold; 0 = off
    /// "constant", "warmup" (linear warm-up then constant), "warmup_cosine", or "inverse_sqrt"
    /// (Chan et al.: η_t = min(lr·t/warmup, lr·√(warmup/t)) at step t = 1, 2, …)
    std::string schedule = "constant";
    int64_t warmup_steps = 0;
    int64_t eval_every = 100;
    int64_t checkpoint_every = 1000;
    CurriculumConfig curriculum;       ///< off by default
};

/// `eval` section: the fixed evaluation prompts and the baselines measured on them.
struct EvalConfig {
    int64_t n_prompts = 10000;
    /// "zero", "least_squares", "ridge", "gd" (one GD-k per gd_steps entry), "gd_plus_plus" (GD++-k, k > 1),
    /// "features_gd" (von Oswald et al. §5: GD-k on the read-out over meta-learned MLP features of the
    /// model's feature architecture; needs model.feature_dim > 0), "newton" (one newton_k per newton_steps entry)
    std::vector<std::string> baselines = {"zero", "least_squares", "ridge", "gd"};
    std::vector<int64_t> gd_steps = {1};   ///< k for each GD-k / GD++-k baseline ("gd_1", "gdpp_2", …)
    /// "newton" (Iterative Newton, Fu et al. 2023): one newton_k per entry, k ≥ 0 iterations
    std::vector<int64_t> newton_steps = {1, 2, 3, 5, 10};
    /// starting scale of Iterative Newton, M₀ = αS: "frobenius" (α = 1/‖SSᵀ‖_F, the authors' code) or
    /// "spectral" (α = 2/‖SSᵀ‖₂, the paper's text; it never fits S's top eigendirection, docs/science.md §5)
    std::string newton_alpha = "frobenius";
    /// ridge penalty λ on the sum-of-squares objective; negative = Bayes choice σ²/w_scale²
    double ridge_lambda = -1.0;
    int64_t bootstrap = 1000;              ///< bootstrap resamples for confidence intervals
    bool gdpp_tied = false;               ///< GD++-k shares one (η, γ) across its k steps (recurrent, for tied LSA)
    int64_t features_gd_steps = 3000;      ///< Adam steps that meta-train the "features_gd" baseline
    /// GD baselines ("gd_k", "gdpp_k", "features_gd_k") the model is aligned with at every evaluation (prediction difference,
    /// model cosine, model difference; stored as /metrics/alignment/<reference>/<metric>)
    std::vector<std::string> alignment;
};

/// A whole resolved experiment config.
struct ExperimentConfig {
    std::string preset;   ///< preset it came from, "" for a config file
    std::string scale;    ///< "quick" or "paper" when from a preset
    std::string description;
    TaskConfig task;
    ModelConfig model;
    TrainingConfig training;
    EvalConfig eval;
    uint64_t seed = 0;
    std::string device = "auto";  ///< "auto", "cpu", "cuda" or "cuda:N"
};

/// Parses and validates a config. Missing keys take the defaults above; unknown keys, wrong types
/// and out-of-range values throw icl::Error naming the key path, e.g.
/// `training.lr: expected a number > 0, got "fast"`.
ExperimentConfig parseConfig(const nlohmann::json& config);

/// Full JSON form of a config (every key present). parseConfig(toJson(c)) == c.
nlohmann::json toJson(const ExperimentConfig& config);

/// Size of the training prompts at optimisation step `step` (0-based) under training.curriculum.
struct CurriculumStage {
    int64_t dims = 0;       ///< d_eff: active input coordinates (the rest of x is 0)
    int64_t n_context = 0;  ///< N: in-context examples (points − 1)
};

/// The curriculum stage of `step` (formula at CurriculumConfig); the full size (task.d,
/// task.n_context) when the curriculum is off.
CurriculumStage curriculumStage(const ExperimentConfig& config, int64_t step);

/// The task the training batch of `step` is drawn from: config.task with n_context and active_dims
/// set to curriculumStage(config, step). Equal to config.task when the curriculum is off.
TaskConfig trainingTask(const ExperimentConfig& config, int64_t step);

/// Sets `key.path=value` in a JSON config. A key the schema declares a string or choice takes the
/// text itself (or the string of a JSON string literal); any other value is parsed as JSON when it
/// parses (numbers, true/false, arrays), otherwise taken as a string. Throws icl::Error for a malformed
/// assignment; unknown keys are caught later by parseConfig.
void applyOverride(nlohmann::json& config, const std::string& assignment);

/// Where a config comes from and what to change in it.
struct ConfigRequest {
    std::string preset;               ///< preset name, or empty when config_file is set
    std::string config_file;          ///< path of a JSON config
    std::string scale = "quick";      ///< "quick" or "paper" (presets only)
    std::vector<std::string> sets;    ///< "key.path=value" overrides, applied in order
    std::optional<int64_t> steps;
    std::optional<uint64_t> seed;
    std::optional<std::string> device;
};

/// Loads a preset or file, applies the scale, the overrides and the options, validates, and
/// returns the full resolved JSON. Throws icl::Error (unknown preset, unreadable file, bad key).
nlohmann::json resolveConfig(const ConfigRequest& request);

/// Largest config file read (JSON, or Garg et al.'s YAML): a config is a few KB (docs/config.md, limits).
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t(16) << 20;

/// The text of the config file at `path`. Throws icl::Error "cannot read config file PATH" when it cannot be
/// read and "PATH: … is larger than a config file's limit of 16.8 MB" for a larger file (nothing is read then).
std::string readConfigText(const std::string& path);

/// The allowed range [min, max] of an integer config key with fixed bounds, e.g. {1, 1000} for "model.n_layers"
/// (the config limits a model read from a foreign file is checked against). Throws icl::Error for any other key.
std::pair<int64_t, int64_t> configIntegerRange(const std::string& path);

/// The size of the model a config describes, counted from the config alone (nothing is allocated): the values
/// of its parameters and buffers, as makeModel / makeSequenceClassifier build them.
struct ModelSize {
    uint64_t values = 0;  ///< parameters and buffers
    uint64_t bytes = 0;   ///< values · 4 (float32)
    std::string summary;  ///< "gpt2, 12 layers, d_model 256, 8 heads, 81 positions, d 20, MLP 1024"
};

/// ModelSize of `config`. `exemplar_shape`: fewshot_classification's exemplar shape (the dataset's; empty =
/// [task.exemplar_dim]). Throws icl::Error for a count that overflows 64 bits (no config within the schema's
/// limits does).
ModelSize modelSize(const ExperimentConfig& config, const std::vector<int64_t>& exemplar_shape = {});

/// Refuses a model larger than what `budget` has left, before it is built (nothing is recorded). Throws icl::Error
/// "<budget source>: refused: its model (gpt2, 1 layer, d_model 65536, …; 51.5 billion parameters and buffers) would
/// need 206 GB, over the memory budget of 5.90 GB (--max-memory or ICL_MAX_MEMORY)".
void checkModelMemory(const ExperimentConfig& config, const MemoryBudget& budget,
                      const std::vector<int64_t>& exemplar_shape = {});

/// One preset of resources/presets (compiled into the binary).
struct PresetInfo {
    std::string name;
    std::string description;   ///< one line
    std::string reproduces;    ///< paper figure it reproduces
    std::vector<std::string> scales;
};

/// All presets, sorted by name.
std::vector<PresetInfo> listPresets();

/// The default experiment of `scripts/run.sh` and the GUI.
inline constexpr const char* kDefaultPreset = "vonoswald-lsa-1layer";

} // namespace icl
