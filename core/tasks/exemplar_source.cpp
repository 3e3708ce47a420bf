#include "core/tasks/exemplar_source.h"

#include <cmath>

#include "core/error.h"
#include "core/tasks/linear_regression.h"

namespace icl {

namespace {

// Stream mixed into the experiment seed for prototypes (the value of the first synthetic-only version,
// so prototypes are unchanged).
constexpr uint64_t kPrototypeStream = 0x9207;

} // namespace

int64_t ExemplarSource::exemplarDim() const
{
    int64_t d = 1;
    for (int64_t s : exemplarShape())
        d *= s;
    return d;
}

SyntheticExemplars::SyntheticExemplars(uint64_t seed, int64_t dim)
    : m_seed(seed)
    , m_dim(dim)
{
    if (dim < 1)
        throw Error("fewshot_classification: exemplar_dim must be >= 1, got " + std::to_string(dim));
}

int64_t SyntheticExemplars::numExemplars(int64_t classId) const
{
    if (classId < 0)
        throw Error("synthetic exemplars: class id must be >= 0, got " + std::to_string(classId));
    return 1;
}

void SyntheticExemplars::draw(int64_t classId, int64_t index, double* out) const
{
    if (classId < 0 || index != 0)
        throw Error("synthetic exemplars: class " + std::to_string(classId) + " has one exemplar (its prototype), "
            + "asked for index " + std::to_string(index));
    // Counter-based Box–Muller: coordinates 2k and 2k+1 come from two hashes of (seed, class, k), so a
    // prototype needs no state and no storage.
    const uint64_t classSeed = mixSeed(mixSeed(m_seed, kPrototypeStream), uint64_t(classId));
    for (int64_t k = 0; 2 * k < m_dim; ++k) {
        const double u1 = double((mixSeed(classSeed, 2 * uint64_t(k)) >> 11) + 1) * 0x1.0p-53; // (0, 1]
        const double u2 = double(mixSeed(classSeed, 2 * uint64_t(k) + 1) >> 11) * 0x1.0p-53; // [0, 1)
        const double radius = std::sqrt(-2.0 * std::log(u1)), angle = 2.0 * M_PI * u2;
        out[2 * k] = radius * std::cos(angle);
        if (2 * k + 1 < m_dim)
            out[2 * k + 1] = radius * std::sin(angle);
    }
}

ImageExemplars::ImageExemplars(ImageDataset images, std::string description)
    : m_images(std::move(images))
    , m_description(std::move(description))
{
    const auto fail = [&](const std::string& what) { throw Error("exemplar source " + m_description + ": " + what); };
    if (m_images.count() == 0)
        fail("no images");
    if (m_images.rows < 1 || m_images.cols < 1)
        fail("image size " + std::to_string(m_images.rows) + "×" + std::to_string(m_images.cols) + " is empty");
    if (int64_t(m_images.pixels.size()) != m_images.count() * m_images.rows * m_images.cols)
        fail(std::to_string(m_images.pixels.size()) + " pixel bytes for " + std::to_string(m_images.count())
            + " images of " + std::to_string(m_images.rows) + "×" + std::to_string(m_images.cols));
    m_imagesOfClass.resize(size_t(m_images.numClasses()));
    for (int64_t i = 0; i < m_images.count(); ++i) {
        const int64_t c = m_images.labels[size_t(i)];
        if (c < 0 || c >= m_images.numClasses())
            fail("image " + std::to_string(i) + " has class " + std::to_string(c) + ", outside 0 … "
                + std::to_string(m_images.numClasses() - 1));
        m_imagesOfClass[size_t(c)].push_back(i);
    }
    for (size_t c = 0; c < m_imagesOfClass.size(); ++c)
        if (m_imagesOfClass[c].empty())
            fail("class " + std::to_string(c) + " (" + m_images.classNames[c] + ") has no image");
}

int64_t ImageExemplars::numExemplars(int64_t classId) const
{
    if (classId < 0 || classId >= numClasses())
        throw Error("exemplar source " + m_description + ": class " + std::to_string(classId) + " outside 0 … "
            + std::to_string(numClasses() - 1));
    return int64_t(m_imagesOfClass[size_t(classId)].size());
}

int64_t ImageExemplars::imageIndex(int64_t classId, int64_t index) const
{
    const int64_t n = numExemplars(classId);
    if (index < 0 || index >= n)
        throw Error("exemplar source " + m_description + ": class " + std::to_string(classId) + " has "
            + std::to_string(n) + " images, asked for index " + std::to_string(index));
    return m_imagesOfClass[size_t(classId)][size_t(index)];
}

void ImageExemplars::draw(int64_t classId, int64_t index, double* out) const
{
    const int64_t area = m_images.rows * m_images.cols;
    const uint8_t* p = m_images.pixels.data() + imageIndex(classId, index) * area;
    for (int64_t k = 0; k < area; ++k)
        out[k] = p[k] / 255.0;
}

} // namespace icl
