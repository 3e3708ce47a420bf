#pragma once
// Bursty few-shot classification sequences of Chan et al. 2022 (docs/science.md §4) over synthetic classes,
// an image folder (Omniglot layout) or IDX files (MNIST layout). Core-internal (LibTorch).
//
// Intended usage:
//     icl::FewShotOptions o;                    // defaults of docs/science.md §4
//     o.p_bursty = 0.9;
//     const icl::FewShotClassification task(o); // fixes the class permutation and labels from o.seed
//     auto train = task.sampleTraining(32, step);
//     auto icl = task.sampleIclEval(512, 0), iwl = task.sampleIwlEval(512, 0);
//
//     o.exemplar_source = "image_folder";       // Omniglot drawings (105×105 → o.image_size), no noise:
//     o.exemplar_path = "omniglot/images_background";  o.within_class_noise = 0;  // "all exemplars"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/tasks/exemplar_source.h"

namespace icl {

/// Options of the sequence generator (Chan et al. 2022, docs/science.md §4). A seeded permutation of the class
/// ids picks n_classes training and n_holdout holdout classes: with synthetic classes the ids are
/// 0 … n_classes + n_holdout − 1; with an image source the permutation runs over all its classes (ids in
/// its sorted order) and the classes beyond the first n_classes + n_holdout of it are not used.
struct FewShotOptions {
    int64_t n_classes = 1600;        ///< training classes (Zipf-weighted in permuted order)
    int64_t n_holdout = 10;          ///< holdout classes: never in training sequences, only in ICL eval
    double zipf_alpha = 0.0;         ///< Zipf exponent α: p(rank r) ∝ 1/r^α over training classes; 0 = uniform
    double p_bursty = 0.9;           ///< probability that a training sequence is bursty
    int64_t labels_per_class = 1;    ///< label multiplicity: fixed labels of each training class
    int64_t n_labels = 0;            ///< label vocabulary size; 0 = n_classes·labels_per_class (disjoint labels)
    int64_t context_len = 8;         ///< L, context (exemplar, label) pairs before the query; even, ≥ 6
    int64_t exemplar_dim = 64;       ///< D, dimension of a synthetic exemplar vector (synthetic source only)
    double within_class_noise = 0.1; ///< σ: exemplar = clean exemplar + σ·z, z ~ N(0, I_D); images: pixel noise
    uint64_t seed = 0;               ///< fixes permutation, labels and prototypes; batches mix in their index

    /// Where exemplars come from (makeExemplarSource): "synthetic" (prototype per class, docs/science.md §4 (a)),
    /// "image_folder" (exemplar_path = root of root/alphabet/character/*.png, (b)) or "idx" (exemplar_path =
    /// IDX images file, exemplar_labels_path = its labels file, (c)).
    std::string exemplar_source = "synthetic";
    std::string exemplar_path;        ///< image folder root or IDX images file
    std::string exemplar_labels_path; ///< IDX labels file
    int64_t image_size = 0;           ///< image sources: resize to image_size × image_size by area averaging; 0 = keep
    /// Image sources: draw only from the first k stored images of each class (1 = the paper's "single
    /// exemplar + pixel noise" condition); 0 = all of them.
    int64_t exemplars_per_class = 0;

    /// Common / rare split of the training classes (the authors' SeqGenerator, Chan et al. 2022 code): the first
    /// n_common_classes training classes in permuted order (Zipf ranks 1 … n_common_classes, the most frequent
    /// under α > 0) are "common", the other n_classes − n_common_classes "rare". 0 = no split: training sequences
    /// are bit-identical to those without these options, and the five options below must keep their defaults.
    int64_t n_common_classes = 0;
    /// Fraction of the bursty sequences that are few-shot problems on common classes (query class and second
    /// class common, the L − 6 other items rare); the authors' p_bursty_common.
    double p_bursty_common = 0.0;
    /// Fraction of the bursty sequences drawn from the Zipf distribution over all training classes (the bursty
    /// sequences without a split); the authors' p_bursty_zipfian. The remaining 1 − p_bursty_zipfian −
    /// p_bursty_common are few-shot problems on rare classes with the other items common.
    double p_bursty_zipfian = 1.0;
    /// Non-bursty training sequences: "zipfian" (L+1 classes i.i.d. from the Zipf distribution over all training
    /// classes), "common" (i.i.d. from the common classes; the authors' common_uniform) or "common_no_support"
    /// (query class common, the context from the other common classes).
    std::string non_bursty_type = "zipfian";
    /// Draws restricted to the common (or rare) classes follow their Zipf weights renormalised over the set;
    /// false: uniform over the set (the authors' use_zipf_for_common_rare).
    bool zipf_within_common_rare = false;
};

/// A set of classes that sequences are drawn from (Chan et al. 2022; the authors' class_type).
enum class FewShotClassSet {
    Training, ///< all training classes, Zipf weights p(rank r) ∝ 1/r^α (the authors' "zipfian")
    Common,   ///< common training classes (needs n_common_classes > 0)
    Rare,     ///< rare training classes (needs n_common_classes > 0)
    Holdout,  ///< holdout classes, uniform; never in training sequences
};

/// "training", "common", "rare" or "holdout".
const char* fewShotClassSetName(FewShotClassSet set);

/// A batch of sequences (x_1, y_1, …, x_L, y_L, x_q). Position L of every tensor is the query.
struct FewShotBatch {
    torch::Tensor exemplars; ///< [B, L+1, D] exemplar vectors (images flattened row-major); [:, L] = query
    torch::Tensor labels;    ///< [B, L+1] int64 labels; [:, L] = the query's true label
    torch::Tensor classes;   ///< [B, L+1] int64 class ids of the exemplars
    torch::Tensor bursty;    ///< [B] bool: training — the sequence is bursty; ICL eval all true; IWL eval all false

    int64_t batchSize() const { return exemplars.size(0); }    ///< B
    int64_t nContext() const { return exemplars.size(1) - 1; } ///< L
    int64_t dim() const { return exemplars.size(2); }          ///< D
    torch::Tensor queryLabels() const { return labels.select(1, nContext()); }   ///< [B]
    torch::Tensor queryClasses() const { return classes.select(1, nContext()); } ///< [B]
    torch::Tensor contextClasses() const { return classes.narrow(1, 0, nContext()); } ///< [B, L]
    torch::Tensor contextLabels() const { return labels.narrow(1, 0, nContext()); }   ///< [B, L]
};

/// Generator of Chan et al.'s sequences (docs/science.md §4). An exemplar of class c is a clean exemplar of c
/// from the ExemplarSource plus within-class noise σ·z, z ~ N(0, I_D): the synthetic source's prototype
/// μ_c ~ N(0, I_D) drawn from (seed, c), or a stored image of c drawn uniformly with replacement (among the
/// first exemplars_per_class when set; intensities in [0, 1], noise not clipped). Construction fixes the
/// seeded class permutation (training classes by Zipf rank, then n_holdout holdout classes; with
/// n_common_classes > 0 the first that many are common, the rest rare) and the labels: the class of rank r
/// owns labels π[(r·m + j) mod n_labels], j < m, for a seeded permutation π ("ordered_polysemy").
/// The same (options, kind, index) gives the same batch, drawn on the CPU and moved to `device` in `dtype`
/// (labels/classes stay int64). Const methods may be called from any thread.
class FewShotClassification {
public:
    /// `source` = nullptr: makeExemplarSource(options) (which loads files for image sources); otherwise the
    /// given source is used and options.exemplar_source/path/image_size are ignored (share one loaded
    /// source between tasks this way). Throws icl::Error for invalid options, a source that fails to load,
    /// or n_classes + n_holdout above the source's number of classes.
    explicit FewShotClassification(const FewShotOptions& options,
                                   std::shared_ptr<const ExemplarSource> source = nullptr);

    const FewShotOptions& options() const { return m_options; }
    int64_t nLabels() const { return m_nLabels; } ///< resolved vocabulary size (n_labels or n_classes·m)

    /// Training class ids in Zipf rank order (rank 1 first), n_classes of them.
    const std::vector<int64_t>& trainingClasses() const { return m_training; }
    /// Holdout class ids, n_holdout of them.
    const std::vector<int64_t>& holdoutClasses() const { return m_holdout; }
    /// True when n_common_classes > 0 splits the training classes into common and rare.
    bool hasCommonRareSplit() const { return m_options.n_common_classes > 0; }
    /// Common class ids: the first n_common_classes of trainingClasses() (empty without a split).
    std::vector<int64_t> commonClasses() const;
    /// Rare class ids: the rest of trainingClasses() (empty without a split).
    std::vector<int64_t> rareClasses() const;
    /// p(rank r) = r^−α / Σ_k k^−α for r = 1 … n_classes, in trainingClasses() order.
    std::vector<double> classProbabilities() const;
    /// The labels_per_class fixed labels of a training class. Throws icl::Error for a holdout or unknown id.
    std::vector<int64_t> labelsOf(int64_t classId) const;
    /// Prototype μ_c: [D] float64, i.i.d. N(0, 1) coordinates from (seed, classId) only. Throws icl::Error
    /// unless the source is synthetic.
    torch::Tensor prototype(int64_t classId) const;
    /// Clean exemplar `index` of class `classId` (before noise): [D] float64. Throws icl::Error for an
    /// unknown class or index.
    torch::Tensor exemplar(int64_t classId, int64_t index) const;

    const ExemplarSource& exemplarSource() const { return *m_source; }
    /// Shape of one exemplar before flattening: {D} (synthetic) or {rows, cols} (images).
    std::vector<int64_t> exemplarShape() const { return m_source->exemplarShape(); }
    int64_t exemplarDim() const { return m_source->exemplarDim(); } ///< D

    /// Training sequences (docs/science.md §4). With probability p_bursty a sequence is bursty: a query class q
    /// and a second class s ≠ q drawn from the Zipf distribution, each 3 times in the context with one of
    /// its fixed labels chosen per sequence (the query shares q's), plus L − 6 items of other classes drawn
    /// from the Zipf distribution restricted to classes ∉ {q, s}, context shuffled, query from q. Otherwise
    /// non-bursty: L+1 classes i.i.d. from the Zipf distribution, the last is the query, each exemplar's
    /// label uniform among its class's fixed labels. With a common / rare split (n_common_classes > 0) a
    /// bursty sequence is of that Zipf kind with probability p_bursty_zipfian, else (one more uniform draw)
    /// q and s are common and the L − 6 others rare (probability p_bursty_common), or q and s rare and the
    /// others common; non-bursty sequences follow non_bursty_type. Returns exemplars [B, L+1, D],
    /// labels/classes [B, L+1], bursty [B].
    FewShotBatch sampleTraining(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                                const torch::Device& device = torch::kCPU) const;

    /// ICL evaluation on holdout classes: sampleIclEval(FewShotClassSet::Holdout, …).
    FewShotBatch sampleIclEval(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                               const torch::Device& device = torch::kCPU) const;
    /// ICL (few-shot) evaluation on a class set (the authors' fewshot_holdout / _common / _rare / _zipfian): 2
    /// distinct classes of the set (holdout: uniform; training: Zipf; common, rare: uniform or Zipf within the
    /// set per zipf_within_common_rare), L/2 shots each, labels {0, 1} assigned to them at random per sequence,
    /// context shuffled, query from one of the two (uniform). Throws icl::Error when the set has fewer than 2
    /// classes or is common / rare without a split.
    FewShotBatch sampleIclEval(FewShotClassSet set, int64_t batch, uint64_t index,
                               torch::Dtype dtype = torch::kFloat32, const torch::Device& device = torch::kCPU) const;

    /// IWL evaluation on all training classes: sampleIwlEval(FewShotClassSet::Training, …).
    FewShotBatch sampleIwlEval(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                               const torch::Device& device = torch::kCPU) const;
    /// IWL evaluation (no support; the authors' no_support_zipfian / _common / _rare): query class from the
    /// set's distribution, L context items i.i.d. from the same distribution restricted to the set's other
    /// classes, fixed labels. Throws icl::Error for the holdout set (no fixed labels) and for common / rare
    /// without a split.
    FewShotBatch sampleIwlEval(FewShotClassSet set, int64_t batch, uint64_t index,
                               torch::Dtype dtype = torch::kFloat32, const torch::Device& device = torch::kCPU) const;

private:
    int64_t labelOfRank(int64_t rank, int64_t j) const; ///< j-th fixed label of the training class of rank
    struct SetSampler;
    SetSampler samplerOf(FewShotClassSet set) const;
    FewShotBatch assemble(const std::vector<int64_t>& classes, const std::vector<int64_t>& labels,
                          const std::vector<uint8_t>& bursty, int64_t batch, uint64_t streamSeed,
                          torch::Dtype dtype, const torch::Device& device) const;

    FewShotOptions m_options;
    std::shared_ptr<const ExemplarSource> m_source;
    int64_t m_nLabels = 0;
    std::vector<int64_t> m_training;     ///< class id of rank r (0-based)
    std::vector<int64_t> m_holdout;      ///< holdout class ids
    std::vector<int64_t> m_rankOf;       ///< rank of a class id, −1 for holdout
    std::vector<double> m_zipfCumulative; ///< Σ_{k ≤ r} (k+1)^−α, unnormalised
    std::vector<int64_t> m_labelPermutation; ///< π over the label vocabulary
};

/// The exemplar source named by options.exemplar_source: SyntheticExemplars(seed, exemplar_dim), or an
/// ImageExemplars loaded from options.exemplar_path (loadImageFolder / readIdxImageSet), resized to
/// image_size² when image_size > 0. Throws icl::Error for an unknown kind, a missing path, a negative
/// image_size and any loader error (missing or damaged files). Blocks on disk I/O; any thread.
std::shared_ptr<const ExemplarSource> makeExemplarSource(const FewShotOptions& options);

} // namespace icl
