#include "core/io/image_dataset.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"
#include "core/io/idx.h"

namespace icl {

namespace {

// Overlap weights of area averaging along one axis: output o covers [o·s, (o+1)·s), s = in/out, and
// takes source pixel i with weight |[i, i+1) ∩ [o·s, (o+1)·s)| / s.
struct AxisWeights {
    std::vector<int64_t> first; ///< [out] first source index
    std::vector<std::vector<double>> weights; ///< [out][k] weight of source first[o] + k
};

AxisWeights axisWeights(int64_t in, int64_t out)
{
    AxisWeights w;
    const double scale = double(in) / double(out);
    for (int64_t o = 0; o < out; ++o) {
        const double lo = double(o) * double(in) / double(out), hi = double(o + 1) * double(in) / double(out);
        const int64_t i0 = int64_t(std::floor(lo)), i1 = std::min<int64_t>(in, int64_t(std::ceil(hi)));
        std::vector<double> row;
        for (int64_t i = i0; i < i1; ++i)
            row.push_back(std::max(0.0, std::min(hi, double(i + 1)) - std::max(lo, double(i))) / scale);
        w.first.push_back(i0);
        w.weights.push_back(std::move(row));
    }
    return w;
}

void requireSize(int64_t rows, int64_t cols, const char* what)
{
    if (rows < 1 || cols < 1)
        throw Error(std::string("resizeArea: ") + what + " size " + std::to_string(rows) + "×" + std::to_string(cols)
            + " must be at least 1×1");
}

} // namespace

GrayImage resizeArea(const GrayImage& image, int64_t rows, int64_t cols)
{
    requireSize(image.rows, image.cols, "source");
    requireSize(rows, cols, "target");
    const AxisWeights wr = axisWeights(image.rows, rows), wc = axisWeights(image.cols, cols);
    // Columns first: [R, C] → [R, c], then rows: → [r, c].
    std::vector<double> tmp(size_t(image.rows * cols), 0.0);
    for (int64_t y = 0; y < image.rows; ++y)
        for (int64_t j = 0; j < cols; ++j) {
            double s = 0;
            for (size_t k = 0; k < wc.weights[size_t(j)].size(); ++k)
                s += wc.weights[size_t(j)][k] * image.pixels[size_t(y * image.cols + wc.first[size_t(j)] + int64_t(k))];
            tmp[size_t(y * cols + j)] = s;
        }
    GrayImage out { rows, cols, std::vector<float>(size_t(rows * cols)) };
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            double s = 0;
            for (size_t k = 0; k < wr.weights[size_t(i)].size(); ++k)
                s += wr.weights[size_t(i)][k] * tmp[size_t((wr.first[size_t(i)] + int64_t(k)) * cols + j)];
            out.pixels[size_t(i * cols + j)] = float(s);
        }
    return out;
}

ImageDataset resizeImages(const ImageDataset& dataset, int64_t rows, int64_t cols)
{
    requireSize(rows, cols, "target");
    ImageDataset out { rows, cols, {}, dataset.labels, dataset.classNames };
    out.pixels.resize(size_t(dataset.count() * rows * cols));
    const int64_t in = dataset.rows * dataset.cols, area = rows * cols;
    GrayImage image { dataset.rows, dataset.cols, std::vector<float>(size_t(in)) };
    for (int64_t n = 0; n < dataset.count(); ++n) {
        for (int64_t p = 0; p < in; ++p)
            image.pixels[size_t(p)] = float(dataset.pixels[size_t(n * in + p)]);
        const GrayImage small = resizeArea(image, rows, cols);
        for (int64_t p = 0; p < area; ++p)
            out.pixels[size_t(n * area + p)] = uint8_t(std::clamp(std::lround(small.pixels[size_t(p)]), 0L, 255L));
    }
    return out;
}

ImageDataset imageDatasetFromIdx(const IdxImageSet& set)
{
    std::array<int64_t, 256> classOf;
    classOf.fill(-1);
    for (uint8_t label : set.labels)
        classOf[label] = 0;
    ImageDataset out { set.images.rows, set.images.cols, set.images.pixels, {}, {} };
    for (int v = 0; v < 256; ++v)
        if (classOf[size_t(v)] == 0) {
            classOf[size_t(v)] = out.numClasses();
            out.classNames.push_back(std::to_string(v));
        }
    out.labels.reserve(set.labels.size());
    for (uint8_t label : set.labels)
        out.labels.push_back(classOf[label]);
    return out;
}

} // namespace icl
