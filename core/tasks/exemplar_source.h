#pragma once
// Where the exemplars of Chan et al.'s few-shot classification sequences come from (docs/science.md §4):
// (a) synthetic classes — a seeded random prototype per class, (b) an image folder in Omniglot's layout,
// (c) IDX files (MNIST / Fashion-MNIST). A source gives the clean exemplars of a class; the task draws one
// at random per item and adds the within-class Gaussian noise. Torch-free, Qt-free.
//
// Intended usage:
//     auto source = std::make_shared<icl::ImageExemplars>(
//         icl::imageDatasetFromIdx(icl::readIdxImageSet(images, labels)), "idx:" + images);
//     const icl::FewShotClassification task(options, source);

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/io/image_dataset.h"

namespace icl {

/// A set of classes with stored (or generated) exemplars. Class ids are 0 … numClasses()−1; exemplars are
/// flattened row-major to exemplarDim() = Π exemplarShape() values. Immutable after construction, so
/// const methods may be called from any thread.
class ExemplarSource {
public:
    /// numClasses() of a source that can make any number of classes (synthetic prototypes).
    static constexpr int64_t kUnboundedClasses = std::numeric_limits<int64_t>::max();

    virtual ~ExemplarSource() = default;
    /// Number of classes, or kUnboundedClasses.
    virtual int64_t numClasses() const = 0;
    /// Shape of one exemplar: {D} for vectors, {rows, cols} for grayscale images.
    virtual std::vector<int64_t> exemplarShape() const = 0;
    /// Number of distinct clean exemplars of class `classId` (≥ 1; 1 for a synthetic class, its prototype).
    /// Throws icl::Error for an unknown class.
    virtual int64_t numExemplars(int64_t classId) const = 0;
    /// Writes clean exemplar `index` (0 … numExemplars(classId)−1) of class `classId` to
    /// out[0 … exemplarDim()−1]. Throws icl::Error for an unknown class or index.
    virtual void draw(int64_t classId, int64_t index, double* out) const = 0;
    /// What the source is, for messages: "synthetic", "image_folder:ROOT", "idx:FILE".
    virtual std::string description() const = 0;

    /// D = Π exemplarShape().
    int64_t exemplarDim() const;
};

/// Source (a): class c's only exemplar is its prototype μ_c ~ N(0, I_D), coordinates drawn by a
/// counter-based Box–Muller transform from (seed, c) alone, so any number of classes needs no storage.
/// Throws icl::Error for dim < 1.
class SyntheticExemplars : public ExemplarSource {
public:
    SyntheticExemplars(uint64_t seed, int64_t dim);

    int64_t numClasses() const override { return kUnboundedClasses; }
    std::vector<int64_t> exemplarShape() const override { return { m_dim }; }
    int64_t numExemplars(int64_t classId) const override;
    void draw(int64_t classId, int64_t index, double* out) const override;
    std::string description() const override { return "synthetic"; }

private:
    uint64_t m_seed;
    int64_t m_dim;
};

/// Sources (b) and (c): stored grayscale images with a class each (an image folder or an IDX set, see
/// core/io/). Exemplar k of class c is the k-th image of class c in storage order; values are intensities
/// byte / 255 in [0, 1], shape {rows, cols}. Throws icl::Error for a dataset with no images, a class with
/// no image, or labels outside 0 … numClasses−1.
class ImageExemplars : public ExemplarSource {
public:
    ImageExemplars(ImageDataset images, std::string description);

    int64_t numClasses() const override { return m_images.numClasses(); }
    std::vector<int64_t> exemplarShape() const override { return { m_images.rows, m_images.cols }; }
    int64_t numExemplars(int64_t classId) const override;
    void draw(int64_t classId, int64_t index, double* out) const override;
    std::string description() const override { return m_description; }

    const ImageDataset& images() const { return m_images; }
    /// Index into images() of exemplar `index` of class `classId`.
    int64_t imageIndex(int64_t classId, int64_t index) const;

private:
    ImageDataset m_images;
    std::string m_description;
    std::vector<std::vector<int64_t>> m_imagesOfClass; ///< [class][k] image index
};

} // namespace icl
