// IDX files (MNIST / Fashion-MNIST layout) on fixtures written byte by byte at test time: what is read
// back equals what was written; damaged files give an icl::Error naming the file and the fault.
#include <gtest/gtest.h>

#include <map>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/io/idx.h"
#include "image_fixtures.h"
#include "tests/support/core_checks.h"

namespace {
using icl::test::errorOf;

std::vector<uint8_t> counting(size_t n, uint8_t start = 0)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = uint8_t(start + 7 * i);
    return v;
}

/// Expects `set` to hold `count` images of `rows` × `cols` pixels, these pixels and these labels.
void expectImageSet(const icl::IdxImageSet& set, int64_t count, int64_t rows, int64_t cols,
                    const std::vector<uint8_t>& pixels, const std::vector<uint8_t>& labels)
{
    EXPECT_EQ(set.images.count, count);
    EXPECT_EQ(set.images.rows, rows);
    EXPECT_EQ(set.images.cols, cols);
    EXPECT_EQ(set.images.pixels, pixels);
    EXPECT_EQ(set.labels, labels);
}

} // namespace

TEST(IdxFiles, ImagesAndLabelsReadBackAsWritten)
{
    fixtures::ScratchDir dir("idx_plain");
    const std::vector<uint8_t> pixels = counting(3 * 2 * 4, 1), labels { 4, 0, 9 };
    fixtures::writeFile(dir.file("images"), fixtures::idxBytes({ 3, 2, 4 }, pixels));
    fixtures::writeFile(dir.file("labels"), fixtures::idxBytes({ 3 }, labels));
    expectImageSet(icl::readIdxImageSet(dir.file("images"), dir.file("labels")), 3, 2, 4, pixels, labels);
}

TEST(IdxFiles, GzipCompressedFilesReadBackAsWritten)
{
    fixtures::ScratchDir dir("idx_gzip");
    const std::vector<uint8_t> pixels = counting(5 * 3 * 3, 200), labels { 1, 1, 2, 0, 255 };
    fixtures::writeGzipFile(dir.file("images.gz"), fixtures::idxBytes({ 5, 3, 3 }, pixels));
    fixtures::writeGzipFile(dir.file("labels.gz"), fixtures::idxBytes({ 5 }, labels));
    ASSERT_NE(fixtures::readFile(dir.file("images.gz"))[0], 0); // really compressed (gzip starts 1f 8b)
    expectImageSet(icl::readIdxImageSet(dir.file("images.gz"), dir.file("labels.gz")), 5, 3, 3, pixels, labels);
}

TEST(IdxFiles, GenericArrayOfAnyRankAndEmptyArrays)
{
    fixtures::ScratchDir dir("idx_generic");
    const std::vector<uint8_t> data = counting(2 * 3 * 1 * 2);
    fixtures::writeFile(dir.file("a"), fixtures::idxBytes({ 2, 3, 1, 2 }, data));
    const icl::IdxArray a = icl::readIdx(dir.file("a"));
    EXPECT_EQ(a.shape, (std::vector<int64_t> { 2, 3, 1, 2 }));
    EXPECT_EQ(a.data, data);
    fixtures::writeFile(dir.file("none"), fixtures::idxBytes({ 0, 28, 28 }, {}));
    const icl::IdxImages none = icl::readIdxImages(dir.file("none"));
    EXPECT_EQ(none.count, 0);
    EXPECT_EQ(none.rows, 28);
    EXPECT_TRUE(none.pixels.empty());
}

TEST(IdxFiles, MissingFileNamesIt)
{
    fixtures::ScratchDir dir("idx_missing");
    const std::string path = dir.file("train-images-idx3-ubyte");
    const std::string message = errorOf([&] { icl::readIdxImages(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("no such file"), std::string::npos) << message;
    EXPECT_NE(errorOf([&] { icl::readIdx(dir.path.string()); }).find("is a folder, expected an IDX file"), std::string::npos);
}

TEST(IdxFiles, BadMagicAndUnsupportedElementType)
{
    fixtures::ScratchDir dir("idx_magic");
    fixtures::writeFile(dir.file("png"), { 0x89, 'P', 'N', 'G', 0, 0, 0, 1, 7 });
    std::string message = errorOf([&] { icl::readIdxImages(dir.file("png")); });
    EXPECT_NE(message.find(dir.file("png")), std::string::npos) << message;
    EXPECT_NE(message.find("bad magic 0x89504E47"), std::string::npos) << message;

    fixtures::writeFile(dir.file("float"), fixtures::idxBytes({ 1, 1, 1 }, { 0, 0, 0, 0 }, 0x0D));
    message = errorOf([&] { icl::readIdxImages(dir.file("float")); });
    EXPECT_NE(message.find("float32"), std::string::npos) << message;
    EXPECT_NE(message.find("0x00000D03"), std::string::npos) << message;
}

TEST(IdxFiles, LabelsFileGivenAsImagesAndViceVersaIsAWrongMagic)
{
    fixtures::ScratchDir dir("idx_swapped");
    fixtures::writeFile(dir.file("labels"), fixtures::idxBytes({ 3 }, { 1, 2, 3 }));
    fixtures::writeFile(dir.file("images"), fixtures::idxBytes({ 1, 2, 2 }, { 1, 2, 3, 4 }));
    fixtures::writeFile(dir.file("flat"), fixtures::idxBytes({ 2, 4 }, counting(8)));
    std::string message = errorOf([&] { icl::readIdxImages(dir.file("labels")); });
    EXPECT_NE(message.find(dir.file("labels")), std::string::npos) << message;
    EXPECT_NE(message.find("magic 0x00000801"), std::string::npos) << message;
    EXPECT_NE(message.find("expected 0x00000803"), std::string::npos) << message;
    message = errorOf([&] { icl::readIdxLabels(dir.file("images")); });
    EXPECT_NE(message.find("expected 0x00000801"), std::string::npos) << message;
    message = errorOf([&] { icl::readIdxImages(dir.file("flat")); }); // wrong dims: [n, 784] instead of [n, 28, 28]
    EXPECT_NE(message.find("0x00000802"), std::string::npos) << message;
    EXPECT_NE(message.find("[2, 4]"), std::string::npos) << message;
}

TEST(IdxFiles, TruncatedHeaderOrDataAndTrailingBytes)
{
    fixtures::ScratchDir dir("idx_truncated");
    fixtures::writeFile(dir.file("short"), { 0, 0, 8 });
    EXPECT_NE(errorOf([&] { icl::readIdx(dir.file("short")); }).find("truncated header"), std::string::npos);
    fixtures::writeFile(dir.file("dims"), { 0, 0, 8, 3, 0, 0, 0, 2 });
    EXPECT_NE(errorOf([&] { icl::readIdx(dir.file("dims")); }).find("truncated header"), std::string::npos);

    std::vector<uint8_t> bytes = fixtures::idxBytes({ 3, 2, 2 }, counting(12));
    bytes.resize(bytes.size() - 2);
    fixtures::writeFile(dir.file("cut"), bytes);
    const std::string message = errorOf([&] { icl::readIdxImages(dir.file("cut")); });
    EXPECT_NE(message.find(dir.file("cut")), std::string::npos) << message;
    EXPECT_NE(message.find("truncated data"), std::string::npos) << message;
    EXPECT_NE(message.find("needs 12 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("has 10"), std::string::npos) << message;

    bytes = fixtures::idxBytes({ 3 }, { 1, 2, 3 });
    bytes.push_back(4);
    fixtures::writeFile(dir.file("long"), bytes);
    EXPECT_NE(errorOf([&] { icl::readIdxLabels(dir.file("long")); }).find("1 trailing bytes"), std::string::npos);

    // Dimensions whose product overflows 64 bits are a truncated file, not a crash.
    fixtures::writeFile(dir.file("huge"), fixtures::idxBytes({ 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF }, { 1, 2, 3 }));
    EXPECT_NE(errorOf([&] { icl::readIdxImages(dir.file("huge")); }).find("truncated data"), std::string::npos);

    fixtures::writeFile(dir.file("zero"), fixtures::idxBytes({ 2, 0, 5 }, {}));
    EXPECT_NE(
        errorOf([&] { icl::readIdxImages(dir.file("zero")); }).find("rows and cols must be >= 1"), std::string::npos);
}

TEST(IdxFiles, DamagedGzipStream)
{
    fixtures::ScratchDir dir("idx_badgzip");
    fixtures::writeGzipFile(dir.file("images.gz"), fixtures::idxBytes({ 50, 4, 4 }, counting(800)));
    std::vector<uint8_t> gz = fixtures::readFile(dir.file("images.gz"));
    gz.resize(gz.size() / 2);
    fixtures::writeFile(dir.file("cut.gz"), gz);
    std::string message = errorOf([&] { icl::readIdxImages(dir.file("cut.gz")); });
    EXPECT_NE(message.find(dir.file("cut.gz")), std::string::npos) << message;
    EXPECT_NE(message.find("damaged gzip stream (zlib: unexpected end of file)"), std::string::npos) << message;

    gz = fixtures::readFile(dir.file("images.gz"));
    gz[gz.size() - 6] ^= 0xFF; // the CRC-32 of the trailer
    fixtures::writeFile(dir.file("crc.gz"), gz);
    message = errorOf([&] { icl::readIdxImages(dir.file("crc.gz")); });
    EXPECT_NE(message.find("damaged gzip stream"), std::string::npos) << message;
}

TEST(IdxFiles, LabelAndImageCountMismatchNamesBothFiles)
{
    fixtures::ScratchDir dir("idx_mismatch");
    fixtures::writeFile(dir.file("images"), fixtures::idxBytes({ 3, 1, 2 }, counting(6)));
    fixtures::writeFile(dir.file("labels"), fixtures::idxBytes({ 4 }, { 0, 1, 2, 3 }));
    const std::string message = errorOf([&] { icl::readIdxImageSet(dir.file("images"), dir.file("labels")); });
    EXPECT_NE(message.find("count mismatch"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.file("images") + " holds 3 images"), std::string::npos) << message;
    EXPECT_NE(message.find(dir.file("labels") + " holds 4 labels"), std::string::npos) << message;
}

// Hostile IDX files (issue 46): the header's sizes are checked against the file and the memory budget before the
// data is allocated; only regular files are opened.
TEST(IdxFiles, HostileHeadersAreRefusedBeforeAllocating)
{
    fixtures::ScratchDir dir("idx_hostile");
    // A FIFO named like an IDX file: opening it would wait for a writer forever.
    ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
    EXPECT_EQ(errorOf([&] { icl::readIdx(dir.file("fifo")); }),
        dir.file("fifo") + ": not a regular file (a FIFO, device or socket), expected an IDX file");

    // A 16-byte plain file that claims 60,000 images of 28×28: refused from the file's size.
    fixtures::writeFile(dir.file("claims"), fixtures::idxBytes({ 60000, 28, 28 }, {}));
    EXPECT_EQ(errorOf([&] { icl::readIdxImages(dir.file("claims")); }),
        dir.file("claims") + ": truncated data: header shape [60000, 28, 28] needs 47040000 bytes after the 16-byte "
                             "header, the file has 0");

    // A gzip stream of a few dozen bytes that claims 2^40 bytes: more than deflate can expand it to (1032:1).
    fixtures::writeGzipFile(dir.file("claims.gz"), fixtures::idxBytes({ 1u << 20, 1u << 20 }, { 1, 2, 3 }));
    const std::string gzMessage = errorOf([&] { icl::readIdx(dir.file("claims.gz")); });
    EXPECT_EQ(gzMessage.rfind(dir.file("claims.gz") + ": truncated data: header shape [1048576, 1048576] needs "
                                  "1099511627776 bytes after the 12-byte header, more than a gzip stream of ",
                  0),
        0u)
        << gzMessage;

    // A gzip bomb: 64 MiB of zeros in about 64 KB, a header that says so; refused by a 16 MiB memory budget
    // before the 64 MiB are allocated, read with the default budget.
    const uint32_t side = 8192;
    {
        gzFile f = gzopen(dir.file("bomb.gz").c_str(), "wb9");
        ASSERT_NE(f, nullptr);
        const std::vector<uint8_t> header = fixtures::idxBytes({ side, side }, {});
        ASSERT_EQ(gzwrite(f, header.data(), unsigned(header.size())), int(header.size()));
        const std::vector<uint8_t> zeros(1 << 20, 0);
        for (uint32_t i = 0; i < uint64_t(side) * side / zeros.size(); ++i)
            ASSERT_EQ(gzwrite(f, zeros.data(), unsigned(zeros.size())), int(zeros.size()));
        ASSERT_EQ(gzclose(f), Z_OK);
    }
    EXPECT_EQ(errorOf([&] { icl::readIdx(dir.file("bomb.gz"), uint64_t(16) << 20); }),
        dir.file("bomb.gz") + ": refused: the IDX data of shape [8192, 8192] would need 67.1 MB, over the memory "
                              "budget of 16.8 MB (--max-memory or ICL_MAX_MEMORY)");
    EXPECT_EQ(icl::readIdx(dir.file("bomb.gz")).data.size(), size_t(side) * side);

    // Bytes after the data inside a gzip stream are counted as trailing bytes, as in a plain file.
    std::vector<uint8_t> labels = fixtures::idxBytes({ 3 }, { 1, 2, 3 });
    labels.push_back(9);
    labels.push_back(9);
    fixtures::writeGzipFile(dir.file("trailing.gz"), labels);
    EXPECT_NE(errorOf([&] { icl::readIdxLabels(dir.file("trailing.gz")); }).find(": 2 trailing bytes after the data"),
        std::string::npos);
}

#ifdef ICL_FASHION_MNIST_DIR
// Debian's dataset-fashion-mnist (compiled in only where it is installed, see tests/core/CMakeLists.txt).
// Expected: the dataset's documented sizes (60,000 training and 10,000 test images of 28×28, 10 classes,
// balanced: 6,000 / 1,000 per class) and its well-known first labels (ankle boot, T-shirt, T-shirt, dress,
// T-shirt / ankle boot, pullover, trouser, trouser, shirt); the pixel sum of the first training image was
// computed independently with Python's gzip module.
TEST(IdxFiles, FashionMnistFromDebianPackage)
{
    const std::string dir = ICL_FASHION_MNIST_DIR;
    const auto train = icl::readIdxImageSet(dir + "/train-images-idx3-ubyte.gz", dir + "/train-labels-idx1-ubyte.gz");
    const auto test = icl::readIdxImageSet(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz");
    EXPECT_EQ(train.images.count, 60000);
    EXPECT_EQ(test.images.count, 10000);
    for (const auto* set : { &train, &test }) {
        EXPECT_EQ(set->images.rows, 28);
        EXPECT_EQ(set->images.cols, 28);
        std::map<int, int> perClass;
        for (uint8_t l : set->labels)
            ++perClass[l];
        ASSERT_EQ(perClass.size(), 10u);
        EXPECT_EQ(perClass.begin()->first, 0);
        EXPECT_EQ(perClass.rbegin()->first, 9);
        for (const auto& [label, n] : perClass)
            EXPECT_EQ(n, set->images.count / 10) << "label " << label;
    }
    EXPECT_EQ(
        std::vector<uint8_t>(train.labels.begin(), train.labels.begin() + 5), (std::vector<uint8_t> { 9, 0, 0, 3, 0 }));
    EXPECT_EQ(
        std::vector<uint8_t>(test.labels.begin(), test.labels.begin() + 5), (std::vector<uint8_t> { 9, 2, 1, 1, 6 }));
    int64_t sum = 0;
    for (int i = 0; i < 28 * 28; ++i)
        sum += train.images.pixels[size_t(i)];
    EXPECT_EQ(sum, 76247);
}
#endif
