#pragma once
// Torch-free view of one few-shot classification sequence (Chan et al. 2022, docs/science.md §4) and the model's
// prediction at its query, for the GUI's sequence viewer and `icl-cli analyze RUN.h5 icl-iwl --show-sequence`.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace icl {

/// Which distribution a viewed sequence comes from (docs/science.md §4).
enum class FewShotSequenceKind {
    Training,       ///< a training sequence as the task draws it (bursty with probability p_bursty)
    TrainingBursty, ///< a bursty training sequence: query class ×3, a second class ×3, L − 6 others
    TrainingIid,    ///< a non-bursty training sequence: L + 1 classes i.i.d. from the class distribution
    Icl,            ///< ICL evaluation: 2 holdout classes × L/2 shots, labels {0, 1} drawn per sequence
    Iwl,            ///< IWL evaluation: a training query class with no support in the context, fixed labels
};

/// Command-line / JSON name of a kind: "training", "training_bursty", "training_iid", "icl", "iwl".
inline std::string fewShotSequenceKindName(FewShotSequenceKind kind)
{
    switch (kind) {
    case FewShotSequenceKind::Training:
        return "training";
    case FewShotSequenceKind::TrainingBursty:
        return "training_bursty";
    case FewShotSequenceKind::TrainingIid:
        return "training_iid";
    case FewShotSequenceKind::Icl:
        return "icl";
    case FewShotSequenceKind::Iwl:
        return "iwl";
    }
    return "training";
}

/// The kind named `name` (one of fewShotSequenceKindName's), or nothing.
inline std::optional<FewShotSequenceKind> fewShotSequenceKindFromName(const std::string& name)
{
    for (FewShotSequenceKind k : { FewShotSequenceKind::Training, FewShotSequenceKind::TrainingBursty,
             FewShotSequenceKind::TrainingIid, FewShotSequenceKind::Icl, FewShotSequenceKind::Iwl })
        if (fewShotSequenceKindName(k) == name)
            return k;
    return std::nullopt;
}

/// One item of a sequence: an in-context (exemplar, label) pair, or the query with its true label.
struct FewShotItem {
    std::vector<float> exemplar; ///< [∏ exemplar_shape] the exemplar the model reads (noise included), row-major
    int64_t class_id = 0;        ///< class of the exemplar (ids of the task's exemplar source)
    int64_t label = 0;           ///< the label shown to the model; for the query, the true label (never shown)
    bool holdout = false;        ///< the class is a holdout class (never in training sequences)
    /// A rare training class of a run with a common / rare split (task.n_common_classes > 0); false for common,
    /// holdout and every class of a run without a split.
    bool rare = false;
};

/// A sampled sequence (x_1, y_1, …, x_L, y_L, x_q) of a few-shot classification run and the prediction of
/// one checkpoint at its query: softmax over the label vocabulary of the logits the ICL/IWL metrics use.
struct FewShotSequence {
    int64_t checkpoint_step = 0;
    FewShotSequenceKind kind = FewShotSequenceKind::Training;
    uint64_t seed = 0;
    std::vector<int64_t> exemplar_shape; ///< {D} for vector exemplars, {rows, cols} for images
    std::vector<FewShotItem> items;      ///< [L + 1]: the L in-context items, then the query (items.back())
    bool bursty = false;                 ///< drawn as a bursty sequence (ICL evaluation: true, IWL: false)

    int64_t true_label = 0;              ///< the query's label
    int64_t predicted_label = 0;         ///< argmax over the whole vocabulary (= argmax of probabilities)
    int64_t predicted_label_01 = 0;      ///< argmax over labels {0, 1} only (the ICL accuracy's read-out)
    std::vector<double> probabilities;   ///< [n_labels] softmax of the query logits
    bool prediction_in_context = false;  ///< predicted_label is the label of some in-context item

    int64_t contextLength() const { return int64_t(items.size()) - 1; } ///< L
    const FewShotItem& query() const { return items.back(); }
    bool isImage() const { return exemplar_shape.size() == 2; }
    bool correct() const { return predicted_label == true_label; }

    /// The k most probable labels, most probable first (ties: smaller label first): (label, probability).
    std::vector<std::pair<int64_t, double>> topLabels(size_t k) const
    {
        std::vector<int64_t> order(probabilities.size());
        std::iota(order.begin(), order.end(), int64_t(0));
        k = std::min(k, order.size());
        std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), [this](int64_t a, int64_t b) {
            return probabilities[size_t(a)] > probabilities[size_t(b)]
                || (probabilities[size_t(a)] == probabilities[size_t(b)] && a < b);
        });
        std::vector<std::pair<int64_t, double>> out;
        for (size_t i = 0; i < k; ++i)
            out.emplace_back(order[i], probabilities[size_t(order[i])]);
        return out;
    }
};

} // namespace icl
