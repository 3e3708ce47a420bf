#pragma once
// Bursty few-shot classification sequences of Chan et al. 2022 (PAPERS.md §4) over synthetic classes.
// Core-internal (LibTorch).
//
// Intended usage:
//     icl::FewShotOptions o;                    // defaults of PAPERS.md §4
//     o.p_bursty = 0.9;
//     const icl::FewShotClassification task(o); // fixes the class permutation and labels from o.seed
//     auto train = task.sampleTraining(32, step);
//     auto icl = task.sampleIclEval(512, 0), iwl = task.sampleIwlEval(512, 0);

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace icl {

/// Options of the sequence generator (Chan et al. 2022, PAPERS.md §4). Class ids are
/// 0 … n_classes + n_holdout − 1; a seeded permutation splits them into training and holdout classes.
struct FewShotOptions {
    int64_t n_classes = 1600;        ///< training classes (Zipf-weighted in permuted order)
    int64_t n_holdout = 10;          ///< holdout classes: never in training sequences, only in ICL eval
    double zipf_alpha = 0.0;         ///< Zipf exponent α: p(rank r) ∝ 1/r^α over training classes; 0 = uniform
    double p_bursty = 0.9;           ///< probability that a training sequence is bursty
    int64_t labels_per_class = 1;    ///< label multiplicity: fixed labels of each training class
    int64_t n_labels = 0;            ///< label vocabulary size; 0 = n_classes·labels_per_class (disjoint labels)
    int64_t context_len = 8;         ///< L, context (exemplar, label) pairs before the query; even, ≥ 6
    int64_t exemplar_dim = 64;       ///< D, dimension of a synthetic exemplar vector
    double within_class_noise = 0.1; ///< σ: exemplar = prototype + σ·z, z ~ N(0, I_D)
    uint64_t seed = 0;               ///< fixes permutation, labels and prototypes; batches mix in their index
};

/// A batch of sequences (x_1, y_1, …, x_L, y_L, x_q). Position L of every tensor is the query.
struct FewShotBatch {
    torch::Tensor exemplars; ///< [B, L+1, D] exemplar vectors; [:, L] = query exemplar
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

/// Generator of Chan et al.'s sequences over synthetic classes (PAPERS.md §4, option (a)): class c has a
/// prototype μ_c ~ N(0, I_D), drawn deterministically from (seed, c) so any number of classes needs no
/// storage, and an exemplar of c is μ_c + σ·z. Construction fixes the seeded class permutation (first
/// n_classes ids in permuted order = training classes by Zipf rank 1, 2, …; the rest = holdout) and the
/// fixed labels: the training class of rank r (0-based) owns labels π[(r·m + j) mod n_labels], j < m,
/// for a seeded permutation π of the vocabulary, so with the default vocabulary no two classes share a
/// label (the authors' "ordered_polysemy" labelling). Sampling: the same (options, kind, index) gives the
/// same batch; batches are drawn on the CPU and moved to `device` in `dtype` (labels/classes stay int64).
/// Throws icl::Error for invalid options.
class FewShotClassification {
public:
    explicit FewShotClassification(const FewShotOptions& options);

    const FewShotOptions& options() const { return m_options; }
    int64_t nLabels() const { return m_nLabels; } ///< resolved vocabulary size (n_labels or n_classes·m)

    /// Training class ids in Zipf rank order (rank 1 first), n_classes of them.
    const std::vector<int64_t>& trainingClasses() const { return m_training; }
    /// Holdout class ids, n_holdout of them.
    const std::vector<int64_t>& holdoutClasses() const { return m_holdout; }
    /// p(rank r) = r^−α / Σ_k k^−α for r = 1 … n_classes, in trainingClasses() order.
    std::vector<double> classProbabilities() const;
    /// The labels_per_class fixed labels of a training class. Throws icl::Error for a holdout or unknown id.
    std::vector<int64_t> labelsOf(int64_t classId) const;
    /// Prototype μ_c: [D] float64, i.i.d. N(0, 1) coordinates from (seed, classId) only.
    torch::Tensor prototype(int64_t classId) const;

    /// Training sequences (PAPERS.md §4). With probability p_bursty a sequence is bursty: a query class q
    /// and a second class s ≠ q drawn from the Zipf distribution, each 3 times in the context with one of
    /// its fixed labels chosen per sequence (the query shares q's), plus L − 6 items of other classes drawn
    /// from the Zipf distribution restricted to classes ∉ {q, s}, context shuffled, query from q. Otherwise
    /// non-bursty: L+1 classes i.i.d. from the Zipf distribution, the last is the query, each exemplar's
    /// label uniform among its class's fixed labels. Returns exemplars [B, L+1, D], labels/classes
    /// [B, L+1], bursty [B].
    FewShotBatch sampleTraining(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                                const torch::Device& device = torch::kCPU) const;

    /// ICL evaluation: 2 distinct holdout classes (uniform), L/2 shots each, labels {0, 1} assigned to them
    /// at random per sequence, context shuffled, query from one of the two (uniform). Throws icl::Error
    /// when n_holdout < 2.
    FewShotBatch sampleIclEval(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                               const torch::Device& device = torch::kCPU) const;

    /// IWL evaluation (no support): query class from the Zipf distribution over training classes, L
    /// context items i.i.d. from the same distribution restricted to other classes, fixed labels.
    FewShotBatch sampleIwlEval(int64_t batch, uint64_t index, torch::Dtype dtype = torch::kFloat32,
                               const torch::Device& device = torch::kCPU) const;

private:
    int64_t labelOfRank(int64_t rank, int64_t j) const; ///< j-th fixed label of the training class of rank
    void fillPrototype(int64_t classId, double* out) const; ///< writes μ_c to out[0 … D−1]
    FewShotBatch assemble(const std::vector<int64_t>& classes, const std::vector<int64_t>& labels,
                          const std::vector<uint8_t>& bursty, int64_t batch, uint64_t streamSeed,
                          torch::Dtype dtype, const torch::Device& device) const;

    FewShotOptions m_options;
    int64_t m_nLabels = 0;
    std::vector<int64_t> m_training;     ///< class id of rank r (0-based)
    std::vector<int64_t> m_holdout;      ///< holdout class ids
    std::vector<int64_t> m_rankOf;       ///< rank of a class id, −1 for holdout
    std::vector<double> m_zipfCumulative; ///< Σ_{k ≤ r} (k+1)^−α, unnormalised
    std::vector<int64_t> m_labelPermutation; ///< π over the label vocabulary
};

} // namespace icl
