#include "core/tasks/fewshot_classification.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "core/error.h"
#include "core/io/idx.h"
#include "core/io/image_folder.h"
#include "core/tasks/linear_regression.h"

namespace icl {

namespace {

// Streams mixed into the experiment seed, so permutation, labels, prototypes (0x9207, in
// exemplar_source.cpp) and each kind of batch are unrelated draws.
enum Stream : uint64_t {
    kPermutationStream = 0xC1A55,
    kLabelStream = 0x1ABE1,
    kExemplarStream = 0xE8E3,
    kTrainingStream = 0x7A1,
    kIclStream = 0x1C1,
    kIwlStream = 0x1F1,
    kNoiseStream = 0x4015E,
    // Evaluations on the other class sets (the holdout ICL and training IWL sets keep kIclStream / kIwlStream).
    kIclCommonStream = 0x1C1C0,
    kIclRareStream = 0x1C1AE,
    kIclTrainingStream = 0x1C17A,
    kIwlCommonStream = 0x1F1C0,
    kIwlRareStream = 0x1F1AE,
};

// Portable draws: std::mt19937_64 is fully specified, the distributions on top of it are ours
// (std::*_distribution and std::shuffle differ between standard libraries).
struct Rng {
    std::mt19937_64 engine;
    explicit Rng(uint64_t seed) : engine(seed) {}
    double uniform() { return double(engine() >> 11) * 0x1.0p-53; } ///< [0, 1)
    int64_t below(int64_t n) { return int64_t(engine() % uint64_t(n)); }  ///< {0, …, n−1}
    template <typename It> void shuffle(It begin, It end)
    {
        for (int64_t i = int64_t(end - begin) - 1; i > 0; --i)
            std::swap(begin[i], begin[below(i + 1)]);
    }
};

void require(bool ok, const std::string& message)
{
    if (!ok)
        throw Error("fewshot_classification: " + message);
}

} // namespace

FewShotClassification::FewShotClassification(const FewShotOptions& options,
                                             std::shared_ptr<const ExemplarSource> source)
    : m_options(options)
{
    const auto& o = m_options;
    require(o.n_classes >= 3, "n_classes must be >= 3 (query, second bursty class, other classes), got "
                                  + std::to_string(o.n_classes));
    require(o.n_holdout >= 0, "n_holdout must be >= 0, got " + std::to_string(o.n_holdout));
    require(std::isfinite(o.zipf_alpha) && o.zipf_alpha >= 0,
            "zipf_alpha must be a finite number >= 0, got " + std::to_string(o.zipf_alpha));
    require(o.p_bursty >= 0 && o.p_bursty <= 1, "p_bursty must be in [0, 1], got " + std::to_string(o.p_bursty));
    require(o.labels_per_class >= 1, "labels_per_class must be >= 1, got " + std::to_string(o.labels_per_class));
    require(o.n_labels >= 0, "n_labels must be >= 0 (0 = n_classes·labels_per_class), got "
                                 + std::to_string(o.n_labels));
    require(o.context_len >= 6 && o.context_len % 2 == 0,
            "context_len must be even and >= 6 (bursty: 3 + 3 + others; ICL eval: 2 ways), got "
                + std::to_string(o.context_len));
    require(std::isfinite(o.within_class_noise) && o.within_class_noise >= 0,
            "within_class_noise must be >= 0, got " + std::to_string(o.within_class_noise));
    require(o.exemplars_per_class >= 0, "exemplars_per_class must be >= 0 (0 = all), got "
                                            + std::to_string(o.exemplars_per_class));
    require(o.n_common_classes >= 0, "n_common_classes must be >= 0 (0 = no common / rare split), got "
                                          + std::to_string(o.n_common_classes));
    require(o.p_bursty_common >= 0 && o.p_bursty_common <= 1,
            "p_bursty_common must be in [0, 1], got " + std::to_string(o.p_bursty_common));
    require(o.p_bursty_zipfian >= 0 && o.p_bursty_zipfian <= 1,
            "p_bursty_zipfian must be in [0, 1], got " + std::to_string(o.p_bursty_zipfian));
    require(o.p_bursty_common + o.p_bursty_zipfian <= 1 + 1e-12,
            "p_bursty_common + p_bursty_zipfian must be <= 1 (the rest are bursty sequences on rare classes), got "
                + std::to_string(o.p_bursty_common + o.p_bursty_zipfian));
    require(o.non_bursty_type == "zipfian" || o.non_bursty_type == "common" || o.non_bursty_type == "common_no_support",
            "non_bursty_type must be \"zipfian\", \"common\" or \"common_no_support\", got \"" + o.non_bursty_type
                + "\"");
    if (o.n_common_classes == 0) {
        require(o.p_bursty_zipfian == 1 && o.p_bursty_common == 0 && o.non_bursty_type == "zipfian"
                    && !o.zipf_within_common_rare,
                "p_bursty_common, p_bursty_zipfian, non_bursty_type and zipf_within_common_rare need a common / rare "
                "split (n_common_classes > 0)");
    } else {
        require(o.n_common_classes >= 2 && o.n_classes - o.n_common_classes >= 2,
                "n_common_classes must leave at least 2 common and 2 rare classes (2 classes per few-shot problem), "
                "got " + std::to_string(o.n_common_classes) + " of n_classes = " + std::to_string(o.n_classes));
    }
    m_nLabels = o.n_labels > 0 ? o.n_labels : o.n_classes * o.labels_per_class;
    require(m_nLabels >= std::max<int64_t>(2, o.labels_per_class),
            "n_labels must be >= max(2, labels_per_class), got " + std::to_string(m_nLabels));

    m_source = source ? std::move(source) : makeExemplarSource(o);
    const int64_t total = o.n_classes + o.n_holdout;
    require(total <= m_source->numClasses(),
            "n_classes + n_holdout = " + std::to_string(total) + " exceeds the "
                + std::to_string(m_source->numClasses()) + " classes of the exemplar source "
                + m_source->description());
    // The permutation runs over every class of a finite source, so a subset (100 of Omniglot's 1623
    // characters) is a seeded random choice rather than the first alphabets; synthetic: over the ids used.
    const int64_t pool
        = m_source->numClasses() == ExemplarSource::kUnboundedClasses ? total : m_source->numClasses();
    std::vector<int64_t> perm(static_cast<size_t>(pool));
    for (int64_t c = 0; c < pool; ++c)
        perm[size_t(c)] = c;
    Rng(mixSeed(o.seed, kPermutationStream)).shuffle(perm.begin(), perm.end());
    m_training.assign(perm.begin(), perm.begin() + o.n_classes);
    m_holdout.assign(perm.begin() + o.n_classes, perm.begin() + total);
    m_rankOf.assign(size_t(pool), -1);
    for (int64_t r = 0; r < o.n_classes; ++r)
        m_rankOf[size_t(m_training[size_t(r)])] = r;

    m_zipfCumulative.resize(size_t(o.n_classes));
    double sum = 0;
    for (int64_t r = 0; r < o.n_classes; ++r)
        m_zipfCumulative[size_t(r)] = sum += std::pow(double(r + 1), -o.zipf_alpha);

    m_labelPermutation.resize(size_t(m_nLabels));
    for (int64_t l = 0; l < m_nLabels; ++l)
        m_labelPermutation[size_t(l)] = l;
    Rng(mixSeed(o.seed, kLabelStream)).shuffle(m_labelPermutation.begin(), m_labelPermutation.end());
}

std::vector<double> FewShotClassification::classProbabilities() const
{
    std::vector<double> p(m_zipfCumulative.size());
    const double total = m_zipfCumulative.back();
    for (size_t r = 0; r < p.size(); ++r)
        p[r] = (m_zipfCumulative[r] - (r ? m_zipfCumulative[r - 1] : 0.0)) / total;
    return p;
}

std::vector<int64_t> FewShotClassification::commonClasses() const
{
    return {m_training.begin(), m_training.begin() + m_options.n_common_classes};
}

std::vector<int64_t> FewShotClassification::rareClasses() const
{
    if (!hasCommonRareSplit())
        return {};
    return {m_training.begin() + m_options.n_common_classes, m_training.end()};
}

std::vector<int64_t> FewShotClassification::labelsOf(int64_t classId) const
{
    require(classId >= 0 && classId < int64_t(m_rankOf.size()) && m_rankOf[size_t(classId)] >= 0,
            "labelsOf: class " + std::to_string(classId) + " is not a training class");
    std::vector<int64_t> labels(static_cast<size_t>(m_options.labels_per_class));
    for (int64_t j = 0; j < m_options.labels_per_class; ++j)
        labels[size_t(j)] = labelOfRank(m_rankOf[size_t(classId)], j);
    return labels;
}

int64_t FewShotClassification::labelOfRank(int64_t rank, int64_t j) const
{
    return m_labelPermutation[size_t((rank * m_options.labels_per_class + j) % m_nLabels)];
}

torch::Tensor FewShotClassification::prototype(int64_t classId) const
{
    require(classId >= 0, "prototype: class id must be >= 0, got " + std::to_string(classId));
    require(dynamic_cast<const SyntheticExemplars*>(m_source.get()) != nullptr,
            "prototype: only synthetic classes have a prototype, the exemplar source is "
                + m_source->description() + " (use exemplar(classId, index))");
    return exemplar(classId, 0);
}

torch::Tensor FewShotClassification::exemplar(int64_t classId, int64_t index) const
{
    torch::Tensor x = torch::empty({m_source->exemplarDim()}, torch::kFloat64);
    m_source->draw(classId, index, x.data_ptr<double>());
    return x;
}

FewShotBatch FewShotClassification::assemble(const std::vector<int64_t>& classes, const std::vector<int64_t>& labels,
                                             const std::vector<uint8_t>& bursty, int64_t batch, uint64_t streamSeed,
                                             torch::Dtype dtype, const torch::Device& device) const
{
    const int64_t n = m_options.context_len + 1, d = m_source->exemplarDim();
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    torch::Tensor cls = torch::from_blob(const_cast<int64_t*>(classes.data()), {batch, n}, i64).clone();
    torch::Tensor lab = torch::from_blob(const_cast<int64_t*>(labels.data()), {batch, n}, i64).clone();
    torch::Tensor flag = torch::from_blob(const_cast<uint8_t*>(bursty.data()), {batch}, torch::kUInt8)
                             .to(torch::kBool);
    torch::Tensor x = torch::empty({batch, n, d}, torch::kFloat64);
    double* out = x.data_ptr<double>();
    // Which stored exemplar each item shows: uniform over the class's first exemplars_per_class (or all);
    // a synthetic class has one (its prototype), so no draw happens and the noise alone varies it.
    Rng pick(mixSeed(streamSeed, kExemplarStream));
    for (int64_t i = 0; i < batch * n; ++i) {
        const int64_t c = classes[size_t(i)];
        int64_t k = m_source->numExemplars(c);
        if (m_options.exemplars_per_class > 0)
            k = std::min(k, m_options.exemplars_per_class);
        m_source->draw(c, k > 1 ? pick.below(k) : 0, out + i * d);
    }
    if (m_options.within_class_noise > 0) {
        auto gen = at::detail::createCPUGenerator(mixSeed(streamSeed, kNoiseStream));
        x += m_options.within_class_noise * torch::randn({batch, n, d}, gen, torch::kFloat64);
    }
    FewShotBatch b{x.to(dtype), lab, cls, flag};
    if (!device.is_cpu())
        b = {b.exemplars.to(device), b.labels.to(device), b.classes.to(device), b.bursty.to(device)};
    return b;
}

const char* fewShotClassSetName(FewShotClassSet set)
{
    switch (set) {
    case FewShotClassSet::Training:
        return "training";
    case FewShotClassSet::Common:
        return "common";
    case FewShotClassSet::Rare:
        return "rare";
    case FewShotClassSet::Holdout:
        return "holdout";
    }
    return "?";
}

/// Draws an index in [lo, hi) — a Zipf rank of a training class, or an index into the holdout classes — either
/// uniformly or from the unnormalised cumulative Zipf weights restricted to [lo, hi), optionally excluding up to
/// two indices (uniform: by counting past them; Zipf: exact rejection, so the result follows the distribution
/// restricted to the other indices).
struct FewShotClassification::SetSampler {
    const std::vector<double>* cumulative = nullptr; ///< nullptr = uniform
    int64_t lo = 0, hi = 0;
    bool holdout = false; ///< indices into the holdout classes rather than ranks

    int64_t size() const { return hi - lo; }
    template <typename R> int64_t draw(R& rng, int64_t exclude1 = -1, int64_t exclude2 = -1) const
    {
        if (!cumulative) {
            int64_t e[2] = {exclude1, exclude2};
            if (e[0] > e[1])
                std::swap(e[0], e[1]);
            const int64_t k = (e[0] >= 0) + (e[1] >= 0);
            int64_t r = lo + rng.below(size() - k);
            for (int64_t x : e)
                if (x >= 0 && r >= x)
                    ++r;
            return r;
        }
        const std::vector<double>& c = *cumulative;
        const double base = lo > 0 ? c[size_t(lo - 1)] : 0.0, top = c[size_t(hi - 1)];
        for (;;) {
            const double u = lo > 0 ? base + rng.uniform() * (top - base) : rng.uniform() * top;
            int64_t r = int64_t(std::upper_bound(c.begin() + lo, c.begin() + hi, u) - c.begin());
            r = std::min<int64_t>(r, hi - 1);
            if (r != exclude1 && r != exclude2)
                return r;
        }
    }
};

FewShotClassification::SetSampler FewShotClassification::samplerOf(FewShotClassSet set) const
{
    const int64_t nc = m_options.n_common_classes;
    require(set == FewShotClassSet::Training || set == FewShotClassSet::Holdout || nc > 0,
            std::string("the ") + fewShotClassSetName(set)
                + " classes need a common / rare split (n_common_classes > 0)");
    const std::vector<double>* withinSet = m_options.zipf_within_common_rare ? &m_zipfCumulative : nullptr;
    switch (set) {
    case FewShotClassSet::Training:
        return {&m_zipfCumulative, 0, m_options.n_classes, false};
    case FewShotClassSet::Common:
        return {withinSet, 0, nc, false};
    case FewShotClassSet::Rare:
        return {withinSet, nc, m_options.n_classes, false};
    case FewShotClassSet::Holdout:
        break;
    }
    return {nullptr, 0, m_options.n_holdout, true};
}

FewShotBatch FewShotClassification::sampleTraining(int64_t batch, uint64_t index, torch::Dtype dtype,
                                                   const torch::Device& device) const
{
    require(batch >= 0, "batch size must be >= 0, got " + std::to_string(batch));
    const uint64_t streamSeed = mixSeed(mixSeed(m_options.seed, kTrainingStream), index);
    Rng rng(streamSeed);
    const FewShotOptions& o = m_options;
    const bool split = hasCommonRareSplit();
    const SetSampler zipf = samplerOf(FewShotClassSet::Training);
    const SetSampler common = split ? samplerOf(FewShotClassSet::Common) : zipf;
    const SetSampler rare = split ? samplerOf(FewShotClassSet::Rare) : zipf;
    const int64_t L = o.context_len, n = L + 1, m = o.labels_per_class;
    std::vector<int64_t> classes(static_cast<size_t>(batch * n)), labels(static_cast<size_t>(batch * n));
    std::vector<uint8_t> bursty(static_cast<size_t>(batch));
    std::vector<std::pair<int64_t, int64_t>> items(static_cast<size_t>(n)); // (rank, label)
    auto fixedLabel = [&](int64_t rank) { return labelOfRank(rank, rng.below(m)); };
    for (int64_t b = 0; b < batch; ++b) {
        bursty[size_t(b)] = rng.uniform() < o.p_bursty;
        if (bursty[size_t(b)]) {
            // Which few-shot problem: without a split (p_bursty_zipfian = 1) no draw, so the sequences stay the
            // same as before the split existed.
            const SetSampler* fewShot = &zipf;
            const SetSampler* others = &zipf;
            if (o.p_bursty_zipfian < 1) {
                const double u = rng.uniform();
                if (u >= o.p_bursty_zipfian) {
                    const bool onCommon = u < o.p_bursty_zipfian + o.p_bursty_common;
                    fewShot = onCommon ? &common : &rare;
                    others = onCommon ? &rare : &common;
                }
            }
            const int64_t q = fewShot->draw(rng), s = fewShot->draw(rng, q);
            const int64_t labelQ = fixedLabel(q), labelS = fixedLabel(s);
            for (int64_t i = 0; i < 3; ++i) {
                items[size_t(i)] = {q, labelQ};
                items[size_t(3 + i)] = {s, labelS};
            }
            for (int64_t i = 6; i < L; ++i) {
                // Zipf kind: the others exclude q and s; otherwise they come from the other (disjoint) set.
                const int64_t r = others == fewShot ? others->draw(rng, q, s) : others->draw(rng);
                items[size_t(i)] = {r, fixedLabel(r)};
            }
            rng.shuffle(items.begin(), items.begin() + L);
            items[size_t(L)] = {q, labelQ};
        } else if (o.non_bursty_type == "common_no_support") {
            const int64_t q = common.draw(rng);
            for (int64_t i = 0; i < L; ++i) {
                const int64_t r = common.draw(rng, q);
                items[size_t(i)] = {r, fixedLabel(r)};
            }
            items[size_t(L)] = {q, fixedLabel(q)};
        } else {
            const SetSampler& from = o.non_bursty_type == "common" ? common : zipf;
            for (int64_t i = 0; i < n; ++i) {
                const int64_t r = from.draw(rng);
                items[size_t(i)] = {r, fixedLabel(r)};
            }
        }
        for (int64_t i = 0; i < n; ++i) {
            classes[size_t(b * n + i)] = m_training[size_t(items[size_t(i)].first)];
            labels[size_t(b * n + i)] = items[size_t(i)].second;
        }
    }
    return assemble(classes, labels, bursty, batch, streamSeed, dtype, device);
}

FewShotBatch FewShotClassification::sampleIclEval(int64_t batch, uint64_t index, torch::Dtype dtype,
                                                  const torch::Device& device) const
{
    return sampleIclEval(FewShotClassSet::Holdout, batch, index, dtype, device);
}

FewShotBatch FewShotClassification::sampleIclEval(FewShotClassSet set, int64_t batch, uint64_t index,
                                                  torch::Dtype dtype, const torch::Device& device) const
{
    require(batch >= 0, "batch size must be >= 0, got " + std::to_string(batch));
    const SetSampler from = samplerOf(set);
    if (set == FewShotClassSet::Holdout)
        require(m_options.n_holdout >= 2, "ICL evaluation needs n_holdout >= 2, got "
                                              + std::to_string(m_options.n_holdout));
    const uint64_t stream = set == FewShotClassSet::Holdout ? kIclStream
        : set == FewShotClassSet::Common                    ? kIclCommonStream
        : set == FewShotClassSet::Rare                      ? kIclRareStream
                                                            : kIclTrainingStream;
    const uint64_t streamSeed = mixSeed(mixSeed(m_options.seed, stream), index);
    Rng rng(streamSeed);
    const int64_t L = m_options.context_len, n = L + 1, shots = L / 2;
    auto classOf = [&](int64_t i) { return from.holdout ? m_holdout[size_t(i)] : m_training[size_t(i)]; };
    std::vector<int64_t> classes(static_cast<size_t>(batch * n)), labels(static_cast<size_t>(batch * n));
    std::vector<uint8_t> bursty(static_cast<size_t>(batch), 1);
    std::vector<std::pair<int64_t, int64_t>> items(static_cast<size_t>(n)); // (class id, label)
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t i0 = from.draw(rng), i1 = from.draw(rng, i0);
        const int64_t c[2] = {classOf(i0), classOf(i1)};
        const int64_t label0 = rng.below(2); // labels {0, 1} assigned at random per sequence
        const int64_t label[2] = {label0, 1 - label0};
        for (int64_t i = 0; i < shots; ++i) {
            items[size_t(i)] = {c[0], label[0]};
            items[size_t(shots + i)] = {c[1], label[1]};
        }
        rng.shuffle(items.begin(), items.begin() + L);
        const int64_t which = rng.below(2);
        items[size_t(L)] = {c[which], label[which]};
        for (int64_t i = 0; i < n; ++i) {
            classes[size_t(b * n + i)] = items[size_t(i)].first;
            labels[size_t(b * n + i)] = items[size_t(i)].second;
        }
    }
    return assemble(classes, labels, bursty, batch, streamSeed, dtype, device);
}

FewShotBatch FewShotClassification::sampleIwlEval(int64_t batch, uint64_t index, torch::Dtype dtype,
                                                  const torch::Device& device) const
{
    return sampleIwlEval(FewShotClassSet::Training, batch, index, dtype, device);
}

FewShotBatch FewShotClassification::sampleIwlEval(FewShotClassSet set, int64_t batch, uint64_t index,
                                                  torch::Dtype dtype, const torch::Device& device) const
{
    require(batch >= 0, "batch size must be >= 0, got " + std::to_string(batch));
    require(set != FewShotClassSet::Holdout,
            "IWL evaluation draws training classes (their fixed labels); holdout classes have none");
    const SetSampler from = samplerOf(set);
    const uint64_t stream = set == FewShotClassSet::Training ? kIwlStream
        : set == FewShotClassSet::Common                     ? kIwlCommonStream
                                                             : kIwlRareStream;
    const uint64_t streamSeed = mixSeed(mixSeed(m_options.seed, stream), index);
    Rng rng(streamSeed);
    const int64_t L = m_options.context_len, n = L + 1, m = m_options.labels_per_class;
    std::vector<int64_t> classes(static_cast<size_t>(batch * n)), labels(static_cast<size_t>(batch * n));
    std::vector<uint8_t> bursty(static_cast<size_t>(batch), 0);
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t q = from.draw(rng);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t r = i < L ? from.draw(rng, q) : q;
            classes[size_t(b * n + i)] = m_training[size_t(r)];
            labels[size_t(b * n + i)] = labelOfRank(r, rng.below(m));
        }
    }
    return assemble(classes, labels, bursty, batch, streamSeed, dtype, device);
}

std::shared_ptr<const ExemplarSource> makeExemplarSource(const FewShotOptions& o)
{
    const std::string& kind = o.exemplar_source;
    if (kind == "synthetic")
        return std::make_shared<SyntheticExemplars>(o.seed, o.exemplar_dim);
    require(kind == "image_folder" || kind == "idx",
            "exemplar_source must be \"synthetic\", \"image_folder\" or \"idx\", got \"" + kind + "\"");
    require(o.image_size >= 0,
            "image_size must be >= 0 (0 = keep the stored size), got " + std::to_string(o.image_size));
    require(!o.exemplar_path.empty(), "exemplar_source \"" + kind + "\" needs exemplar_path ("
                                          + (kind == "idx" ? "the IDX images file" : "the image folder root") + ")");
    if (kind == "image_folder") {
        ImageFolderOptions folder;
        folder.rows = folder.cols = o.image_size;
        return std::make_shared<ImageExemplars>(loadImageFolder(o.exemplar_path, folder),
                                                "image_folder:" + o.exemplar_path);
    }
    require(!o.exemplar_labels_path.empty(),
            "exemplar_source \"idx\" needs exemplar_labels_path (the IDX labels file)");
    ImageDataset images = imageDatasetFromIdx(readIdxImageSet(o.exemplar_path, o.exemplar_labels_path));
    if (o.image_size > 0 && (images.rows != o.image_size || images.cols != o.image_size))
        images = resizeImages(images, o.image_size, o.image_size);
    return std::make_shared<ImageExemplars>(std::move(images), "idx:" + o.exemplar_path);
}

} // namespace icl
