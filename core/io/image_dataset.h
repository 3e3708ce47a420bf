#pragma once
// Class-labelled grayscale images held in memory, the common form of the image folder (Omniglot layout)
// and IDX (MNIST layout) exemplar sources of Chan et al. 2022 (docs/science.md §4), and area-averaging resize.
// Torch-free and Qt-free.

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

struct IdxImageSet;

/// One grayscale image, intensities in [0, 1]: `pixels` [rows, cols] row-major.
struct GrayImage {
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<float> pixels;
};

/// Grayscale images of equal size with a class per image. Pixels are stored as bytes, intensity =
/// byte / 255 (Omniglot at its native 105×105 takes 360 MB this way, 1.4 GB as float).
struct ImageDataset {
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<uint8_t> pixels; ///< [count, rows, cols] row-major
    std::vector<int64_t> labels; ///< [count] class index 0 … numClasses()−1 of each image
    std::vector<std::string> classNames; ///< [numClasses] e.g. "Latin/character01", or the IDX label "7"

    int64_t count() const { return int64_t(labels.size()); }
    int64_t numClasses() const { return int64_t(classNames.size()); }
    /// Intensity in [0, 1] of pixel (r, c) of image i.
    double intensity(int64_t i, int64_t r, int64_t c) const
    {
        return pixels[size_t((i * rows + r) * cols + c)] / 255.0;
    }
};

/// Resizes by area averaging: output pixel (i, j) covers the source rectangle
/// [i·R/r, (i+1)·R/r) × [j·C/c, (j+1)·C/c) (R×C source, r×c output, in source-pixel units) and is the mean of
/// the source over it, each source pixel weighted by its overlap with the rectangle. For downscaling this is
/// OpenCV's INTER_AREA and PIL's BOX filter (105 → 28: each output pixel averages a 3.75×3.75 patch); it
/// preserves the image mean. Throws icl::Error for an empty image or a target size < 1. Any thread.
GrayImage resizeArea(const GrayImage& image, int64_t rows, int64_t cols);

/// Every image of `dataset` resized with resizeArea and rounded back to bytes (round(255·v)).
/// Throws icl::Error for a target size < 1. Any thread.
ImageDataset resizeImages(const ImageDataset& dataset, int64_t rows, int64_t cols);

/// An IDX image set as an ImageDataset: the classes are the distinct label values in increasing order
/// (class k named by its label value, so MNIST's labels 0 … 9 are classes 0 … 9). Any thread.
ImageDataset imageDatasetFromIdx(const IdxImageSet& set);

} // namespace icl
