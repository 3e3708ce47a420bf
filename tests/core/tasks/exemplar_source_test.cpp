// Exemplar sources of Chan et al.'s few-shot classification task (docs/science.md §4): synthetic prototypes,
// IDX files and Omniglot-layout image folders written at test time. Expected exemplars are the images the
// fixtures wrote (bytes / 255), looked up by class independently of the code under test; noise statistics
// use standard-error tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

#include "../io/image_fixtures.h"
#include "core/error.h"
#include "core/tasks/fewshot_classification.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::errorOf;

// An IDX image set of 8 classes × 5 images of 3×2, labels stored interleaved (not grouped by class).
// Every image is distinct: pixel 0 = 30·class + k (k-th image of its class in file order).
struct IdxFixture {
    static constexpr int kClasses = 8, kPerClass = 5, kRows = 3, kCols = 2, kArea = kRows * kCols;
    fixtures::ScratchDir dir;
    std::vector<uint8_t> labels, pixels;
    std::map<int, std::vector<std::vector<double>>> imagesOfClass; ///< class → images in file order, [0, 1]

    explicit IdxFixture(const std::string& name)
        : dir(name)
    {
        for (int k = 0; k < kPerClass; ++k)
            for (int c = kClasses - 1; c >= 0; --c) { // classes in reverse order within each round
                labels.push_back(uint8_t(c));
                std::vector<double> image;
                for (int p = 0; p < kArea; ++p) {
                    const uint8_t v = uint8_t(p == 0 ? 30 * c + k : (37 * c + 11 * k + 5 * p) % 256);
                    pixels.push_back(v);
                    image.push_back(v / 255.0);
                }
                imagesOfClass[c].push_back(image);
            }
        const uint32_t n = uint32_t(labels.size());
        fixtures::writeGzipFile(dir.file("images.gz"), fixtures::idxBytes({ n, kRows, kCols }, pixels));
        fixtures::writeFile(dir.file("labels"), fixtures::idxBytes({ n }, labels));
    }

    icl::FewShotOptions options() const
    {
        icl::FewShotOptions o;
        o.n_classes = 6;
        o.n_holdout = 2;
        o.within_class_noise = 0;
        o.exemplar_source = "idx";
        o.exemplar_path = dir.file("images.gz");
        o.exemplar_labels_path = dir.file("labels");
        o.seed = 4;
        return o;
    }

    // Index k of the stored image of class c equal to x (within float32 rounding), or −1.
    int match(int c, const float* x) const
    {
        const auto& images = imagesOfClass.at(c);
        for (size_t k = 0; k < images.size(); ++k) {
            bool same = true;
            for (int p = 0; p < kArea && same; ++p)
                same = std::abs(x[p] - images[k][size_t(p)]) < 1e-6;
            if (same)
                return int(k);
        }
        return -1;
    }
};

} // namespace

TEST(FewShotExemplarSource, SyntheticSourceDrawsThePrototypes)
{
    const icl::SyntheticExemplars source(5, 6);
    EXPECT_EQ(source.numClasses(), icl::ExemplarSource::kUnboundedClasses);
    EXPECT_EQ(source.exemplarShape(), (std::vector<int64_t> { 6 }));
    EXPECT_EQ(source.exemplarDim(), 6);
    EXPECT_EQ(source.numExemplars(123456), 1);
    icl::FewShotOptions o;
    o.exemplar_dim = 6;
    o.seed = 5;
    const icl::FewShotClassification task(o);
    EXPECT_EQ(task.exemplarSource().description(), "synthetic");
    EXPECT_EQ(task.exemplarShape(), (std::vector<int64_t> { 6 }));
    std::vector<double> mu(6);
    source.draw(17, 0, mu.data());
    const torch::Tensor proto = task.prototype(17);
    for (int i = 0; i < 6; ++i)
        EXPECT_EQ(mu[size_t(i)], proto[i].item<double>());
    EXPECT_THROW(source.draw(17, 1, mu.data()), icl::Error);
    EXPECT_THROW(icl::SyntheticExemplars(0, 0), icl::Error);
}

TEST(FewShotExemplarSource, IdxSourceHasTheLabelsAsClassesAndTheirImagesInFileOrder)
{
    const IdxFixture f("exemplars_idx");
    const auto source = icl::makeExemplarSource(f.options());
    EXPECT_EQ(source->description(), "idx:" + f.dir.file("images.gz"));
    EXPECT_EQ(source->numClasses(), IdxFixture::kClasses);
    EXPECT_EQ(source->exemplarShape(), (std::vector<int64_t> { IdxFixture::kRows, IdxFixture::kCols }));
    std::vector<double> x(IdxFixture::kArea);
    for (int c = 0; c < IdxFixture::kClasses; ++c) {
        ASSERT_EQ(source->numExemplars(c), IdxFixture::kPerClass);
        for (int k = 0; k < IdxFixture::kPerClass; ++k) {
            source->draw(c, k, x.data());
            EXPECT_EQ(x, f.imagesOfClass.at(c)[size_t(k)]) << "class " << c << " image " << k;
        }
    }
    EXPECT_THROW(source->draw(IdxFixture::kClasses, 0, x.data()), icl::Error);
    EXPECT_THROW(source->draw(0, IdxFixture::kPerClass, x.data()), icl::Error);
}

TEST(FewShotExemplarSource, SequencesShowOnlyStoredImagesOfEachItemsClassAllOfThemUniformly)
{
    const IdxFixture f("exemplars_draws");
    const icl::FewShotClassification task(f.options());
    EXPECT_EQ(task.exemplarShape(), (std::vector<int64_t> { IdxFixture::kRows, IdxFixture::kCols }));
    std::map<int, std::vector<int64_t>> timesShown; // class → count per stored image
    int64_t items = 0;
    for (const auto& b : { task.sampleTraining(400, 0), task.sampleIclEval(200, 0), task.sampleIwlEval(200, 0) }) {
        ASSERT_EQ(b.exemplars.sizes(), (std::vector<int64_t> { b.batchSize(), 9, IdxFixture::kArea }));
        const torch::Tensor x = b.exemplars.contiguous();
        const auto cls = b.classes.accessor<int64_t, 2>();
        for (int64_t s = 0; s < b.batchSize(); ++s)
            for (int64_t i = 0; i < 9; ++i) {
                const int c = int(cls[s][i]);
                const int k = f.match(c, x.data_ptr<float>() + (s * 9 + i) * IdxFixture::kArea);
                ASSERT_GE(k, 0) << "sequence " << s << " item " << i << " is not an image of its class " << c;
                timesShown[c].resize(IdxFixture::kPerClass);
                ++timesShown[c][size_t(k)];
                ++items;
            }
    }
    EXPECT_EQ(items, 800 * 9);
    EXPECT_EQ(timesShown.size(), 8u); // 6 training + 2 holdout classes
    for (const auto& [c, counts] : timesShown) {
        const double n = double(std::accumulate(counts.begin(), counts.end(), int64_t(0)));
        for (int64_t k : counts) // uniform over the 5 stored images: p = 1/5
            EXPECT_NEAR(double(k) / n, 0.2, 5 * std::sqrt(0.2 * 0.8 / n)) << "class " << c;
    }
}

TEST(FewShotExemplarSource, OneExemplarPerClassPlusPixelNoise)
{
    const IdxFixture f("exemplars_single");
    auto o = f.options();
    o.exemplars_per_class = 1;
    const icl::FewShotClassification clean(o);
    const auto b = clean.sampleTraining(50, 1);
    const torch::Tensor x = b.exemplars.contiguous();
    const auto cls = b.classes.accessor<int64_t, 2>();
    for (int64_t s = 0; s < 50; ++s)
        for (int64_t i = 0; i < 9; ++i)
            ASSERT_EQ(f.match(int(cls[s][i]), x.data_ptr<float>() + (s * 9 + i) * IdxFixture::kArea), 0);

    o.within_class_noise = 0.5;
    const icl::FewShotClassification noisy(o);
    const auto nb = noisy.sampleTraining(500, 2, torch::kFloat64);
    const auto ncls = nb.classes.accessor<int64_t, 2>();
    std::vector<double> residual;
    for (int64_t s = 0; s < 500; ++s)
        for (int64_t i = 0; i < 9; ++i)
            for (int p = 0; p < IdxFixture::kArea; ++p)
                residual.push_back(
                    nb.exemplars[s][i][p].item<double>() - f.imagesOfClass.at(int(ncls[s][i]))[0][size_t(p)]);
    const double n = double(residual.size()), sigma2 = 0.25;
    double mean = 0, var = 0;
    for (double r : residual)
        mean += r / n;
    for (double r : residual)
        var += (r - mean) * (r - mean) / (n - 1);
    EXPECT_NEAR(mean, 0.0, 5 * std::sqrt(sigma2 / n));
    EXPECT_NEAR(var, sigma2, 5 * sigma2 * std::sqrt(2 / n));
}

TEST(FewShotExemplarSource, ImageFolderSourceResizedAndSharedBetweenTasks)
{
    fixtures::ScratchDir dir("exemplars_folder");
    // 3 alphabets × 2 characters × 2 drawings of 4×4; drawing j of class c is constant 10·c + j except a
    // bright top-left 2×2 block (255), so its 2×2 resize is {255, v, v, v} with v = 10·c + j.
    std::vector<std::string> names;
    for (const std::string alphabet : { "Braille", "Arabic", "Cyrillic" })
        for (const std::string character : { "character2", "character1" })
            names.push_back(alphabet + "/" + character);
    std::vector<std::string> sorted = names;
    std::sort(sorted.begin(), sorted.end());
    for (size_t c = 0; c < sorted.size(); ++c) {
        std::filesystem::create_directories(dir.path / sorted[c]);
        for (int j = 0; j < 2; ++j) {
            std::vector<uint8_t> px(16, uint8_t(10 * c + j));
            for (int p : { 0, 1, 4, 5 })
                px[size_t(p)] = 255;
            fixtures::writeGrayPng((dir.path / sorted[c] / ("d" + std::to_string(j) + ".png")).string(), 4, 4, px);
        }
    }
    icl::FewShotOptions o;
    o.n_classes = 4;
    o.n_holdout = 2;
    o.within_class_noise = 0;
    o.exemplar_source = "image_folder";
    o.exemplar_path = dir.path.string();
    o.image_size = 2;
    const auto source = icl::makeExemplarSource(o);
    ASSERT_EQ(source->numClasses(), 6);
    EXPECT_EQ(source->exemplarShape(), (std::vector<int64_t> { 2, 2 }));
    const auto* images = dynamic_cast<const icl::ImageExemplars*>(source.get());
    ASSERT_NE(images, nullptr);
    EXPECT_EQ(images->images().classNames, sorted);
    std::vector<double> x(4);
    for (int c = 0; c < 6; ++c)
        for (int j = 0; j < 2; ++j) {
            source->draw(c, j, x.data());
            const double v = (10 * c + j) / 255.0;
            EXPECT_EQ(x, (std::vector<double> { 1.0, v, v, v })) << sorted[size_t(c)] << " drawing " << j;
        }

    const icl::FewShotClassification fromOptions(o), shared1(o, source), shared2(o, source);
    for (const icl::FewShotClassification* task : { &shared1, &shared2 }) {
        EXPECT_EQ(&task->exemplarSource(), source.get());
        EXPECT_TRUE(torch::equal(task->sampleTraining(8, 3).exemplars, fromOptions.sampleTraining(8, 3).exemplars));
    }
    const torch::Tensor first = shared1.exemplar(2, 1);
    EXPECT_EQ(first.sizes(), (std::vector<int64_t> { 4 }));
    EXPECT_DOUBLE_EQ(first[3].item<double>(), 21 / 255.0);
}

TEST(FewShotExemplarSource, ErrorsNameTheProblem)
{
    const IdxFixture f("exemplars_errors");
    auto o = f.options();
    o.n_classes = 7; // 7 + 2 holdout > 8 classes in the files
    std::string message = errorOf([&] { icl::FewShotClassification task(o); });
    EXPECT_NE(message.find("n_classes + n_holdout = 9 exceeds the 8 classes"), std::string::npos) << message;

    o = f.options();
    o.exemplar_source = "omniglot";
    EXPECT_NE(errorOf([&] { icl::FewShotClassification task(o); }).find("exemplar_source must be"), std::string::npos);
    o = f.options();
    o.exemplar_labels_path.clear();
    EXPECT_NE(
        errorOf([&] { icl::FewShotClassification task(o); }).find("needs exemplar_labels_path"), std::string::npos);
    o = f.options();
    o.exemplar_path = f.dir.file("missing.gz");
    message = errorOf([&] { icl::FewShotClassification task(o); });
    EXPECT_NE(message.find(f.dir.file("missing.gz") + ": no such file"), std::string::npos) << message;
    o = f.options();
    o.exemplars_per_class = -1;
    EXPECT_THROW(icl::FewShotClassification task(o), icl::Error);
    o = f.options();
    o.image_size = -3;
    EXPECT_THROW(icl::FewShotClassification task(o), icl::Error);

    const icl::FewShotClassification task(f.options());
    message = errorOf([&] { task.prototype(0); });
    EXPECT_NE(message.find("only synthetic classes have a prototype"), std::string::npos) << message;
    EXPECT_THROW(task.exemplar(8, 0), icl::Error);

    icl::ImageDataset holes { 1, 1, { 1, 2 }, { 0, 2 }, { "a", "b", "c" } }; // class 1 has no image
    EXPECT_NE(errorOf([&] { icl::ImageExemplars(holes, "test"); }).find("class 1 (b) has no image"), std::string::npos);
}

#ifdef ICL_FASHION_MNIST_DIR
// Debian's dataset-fashion-mnist as exemplar source (c), compiled in only where it is installed (see
// tests/core/CMakeLists.txt). Expected: its documented 10 balanced classes of 1,000 test images, 28×28.
TEST(FewShotExemplarSource, FashionMnistTestSetAsIdxSource)
{
    icl::FewShotOptions o;
    o.n_classes = 8;
    o.n_holdout = 2;
    o.exemplar_source = "idx";
    o.exemplar_path = std::string(ICL_FASHION_MNIST_DIR) + "/t10k-images-idx3-ubyte.gz";
    o.exemplar_labels_path = std::string(ICL_FASHION_MNIST_DIR) + "/t10k-labels-idx1-ubyte.gz";
    const icl::FewShotClassification task(o);
    EXPECT_EQ(task.exemplarSource().numClasses(), 10);
    EXPECT_EQ(task.exemplarShape(), (std::vector<int64_t> { 28, 28 }));
    for (int64_t c = 0; c < 10; ++c)
        EXPECT_EQ(task.exemplarSource().numExemplars(c), 1000);
    EXPECT_EQ(task.sampleTraining(4, 0).exemplars.sizes(), (std::vector<int64_t> { 4, 9, 784 }));
    o.image_size = 14; // 2×2 area averaging
    const icl::FewShotClassification small(o);
    EXPECT_EQ(small.exemplarShape(), (std::vector<int64_t> { 14, 14 }));
    const torch::Tensor full = task.exemplar(3, 0).view({ 14, 2, 14, 2 }).mean({ 1, 3 }).flatten();
    EXPECT_LE((small.exemplar(3, 0) - full).abs().max().item<double>(), 0.5 / 255 + 1e-12); // byte rounding
}
#endif

TEST(FewShotExemplarSource, FewerClassesThanTheSourceAreASeededSubsetOfAllOfThem)
{
    const IdxFixture f("exemplars_subset");
    auto o = f.options();
    o.n_classes = 3;
    o.n_holdout = 2;
    std::set<int64_t> everUsed;
    for (uint64_t seed = 0; seed < 10; ++seed) {
        o.seed = seed;
        const icl::FewShotClassification task(o);
        std::set<int64_t> used(task.trainingClasses().begin(), task.trainingClasses().end());
        used.insert(task.holdoutClasses().begin(), task.holdoutClasses().end());
        ASSERT_EQ(used.size(), 5u);
        EXPECT_GE(*used.begin(), 0);
        EXPECT_LT(*used.rbegin(), IdxFixture::kClasses);
        everUsed.insert(used.begin(), used.end());
        const auto b = task.sampleTraining(200, 0);
        for (int64_t i = 0; i < b.classes.numel(); ++i) // sequences use the chosen training classes only
            ASSERT_TRUE(std::count(
                task.trainingClasses().begin(), task.trainingClasses().end(), b.classes.flatten()[i].item<int64_t>()));
    }
    // Not always the first 5 classes: over 10 seeds every one of the 8 classes is chosen at least once
    // (each seed picks 5 of 8; missing a given class 10 times in a row has probability (3/8)^10 < 1e-4).
    EXPECT_EQ(everUsed.size(), size_t(IdxFixture::kClasses));
}
