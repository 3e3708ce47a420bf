// PNG reading, area-averaging resize and Omniglot-layout image folders on fixtures written with libpng at
// test time. Expected values: the bytes written / 255, the Rec. 601 luma formula, closed-form box averages.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include <sys/stat.h>

#include "core/error.h"
#include "core/io/image_folder.h"
#include "image_fixtures.h"
#include "tests/support/core_checks.h"

namespace fs = std::filesystem;

namespace {
using icl::test::errorOf;

std::vector<uint8_t> ramp(size_t n, unsigned step, unsigned offset)
{
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = uint8_t((offset + step * i) % 256);
    return v;
}

} // namespace

TEST(ImageFolder, EightBitGrayPngReadsBackAsBytesOver255)
{
    fixtures::ScratchDir dir("png_gray8");
    const std::vector<uint8_t> pixels = ramp(5 * 3, 17, 3); // 3 rows × 5 cols
    fixtures::writeGrayPng(dir.file("a.png"), 5, 3, pixels);
    const icl::GrayImage image = icl::readPngGray(dir.file("a.png"));
    ASSERT_EQ(image.rows, 3);
    ASSERT_EQ(image.cols, 5);
    ASSERT_EQ(image.pixels.size(), 15u);
    for (size_t i = 0; i < pixels.size(); ++i)
        EXPECT_FLOAT_EQ(image.pixels[i], float(pixels[i] / 255.0)) << i;
}

TEST(ImageFolder, OneBitSixteenBitPaletteRgbAndAlphaPngsBecomeGray)
{
    fixtures::ScratchDir dir("png_kinds");
    // 1-bit gray, Omniglot's storage: 10 pixels packed MSB first, 1 = white.
    fixtures::writePng(dir.file("bits.png"), 10, 1, 1, PNG_COLOR_TYPE_GRAY, { 0b10110000, 0b01000000 });
    const std::vector<float> bits { 1, 0, 1, 1, 0, 0, 0, 0, 0, 1 };
    EXPECT_EQ(icl::readPngGray(dir.file("bits.png")).pixels, bits);

    // 16-bit gray, big-endian samples 257·k scale to exactly k / 255.
    const std::vector<unsigned> k16 { 0, 1, 128, 254, 255 };
    std::vector<uint8_t> rows16;
    for (unsigned k : k16) {
        rows16.push_back(uint8_t(257 * k >> 8));
        rows16.push_back(uint8_t(257 * k & 0xFF));
    }
    fixtures::writePng(dir.file("deep.png"), 5, 1, 16, PNG_COLOR_TYPE_GRAY, rows16);
    const auto deep = icl::readPngGray(dir.file("deep.png")).pixels;
    for (size_t i = 0; i < k16.size(); ++i)
        EXPECT_FLOAT_EQ(deep[i], float(k16[i] / 255.0));

    // RGB: Rec. 601 luma 0.299 R + 0.587 G + 0.114 B.
    const std::vector<uint8_t> rgb { 255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 200, 90 };
    fixtures::writePng(dir.file("rgb.png"), 4, 1, 8, PNG_COLOR_TYPE_RGB, rgb);
    const auto gray = icl::readPngGray(dir.file("rgb.png")).pixels;
    ASSERT_EQ(gray.size(), 4u);
    EXPECT_NEAR(gray[0], 0.299, 1e-6);
    EXPECT_NEAR(gray[1], 0.587, 1e-6);
    EXPECT_NEAR(gray[2], 0.114, 1e-6);
    EXPECT_NEAR(gray[3], (0.299 * 10 + 0.587 * 200 + 0.114 * 90) / 255, 1e-6);

    // Palette: the palette colour's luma.
    const std::vector<png_color> palette { { 0, 0, 0 }, { 255, 255, 255 }, { 100, 50, 25 } };
    fixtures::writePng(dir.file("palette.png"), 3, 1, 8, PNG_COLOR_TYPE_PALETTE, { 2, 1, 0 }, palette);
    const auto pal = icl::readPngGray(dir.file("palette.png")).pixels;
    EXPECT_NEAR(pal[0], (0.299 * 100 + 0.587 * 50 + 0.114 * 25) / 255, 1e-6);
    EXPECT_NEAR(pal[1], 1.0, 1e-6);
    EXPECT_NEAR(pal[2], 0.0, 1e-6);

    // Gray + alpha: alpha dropped, gray kept.
    fixtures::writePng(dir.file("alpha.png"), 2, 1, 8, PNG_COLOR_TYPE_GRAY_ALPHA, { 40, 0, 200, 128 });
    const auto alpha = icl::readPngGray(dir.file("alpha.png")).pixels;
    EXPECT_EQ(alpha, (std::vector<float> { float(40 / 255.0), float(200 / 255.0) }));
}

TEST(ImageFolder, DamagedOrMissingPngGivesAnErrorNamingTheFile)
{
    fixtures::ScratchDir dir("png_damaged");
    fixtures::writeGrayPng(dir.file("good.png"), 16, 16, ramp(256, 1, 0));
    const std::vector<uint8_t> good = fixtures::readFile(dir.file("good.png"));

    std::vector<uint8_t> cut(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 2));
    fixtures::writeFile(dir.file("cut.png"), cut);
    std::string message = errorOf([&] { icl::readPngGray(dir.file("cut.png")); });
    EXPECT_NE(message.find(dir.file("cut.png")), std::string::npos) << message;
    EXPECT_NE(message.find("damaged PNG"), std::string::npos) << message;

    std::vector<uint8_t> flipped = good;
    const auto idat = std::search(flipped.begin(), flipped.end(), std::begin("IDAT"), std::end("IDAT") - 1);
    ASSERT_NE(idat, flipped.end());
    idat[6] ^= 0x55; // a byte of the compressed data: the chunk's CRC no longer matches
    fixtures::writeFile(dir.file("crc.png"), flipped);
    message = errorOf([&] { icl::readPngGray(dir.file("crc.png")); });
    EXPECT_NE(message.find("damaged PNG"), std::string::npos) << message;

    fixtures::writeFile(dir.file("text.png"), { 'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd' });
    message = errorOf([&] { icl::readPngGray(dir.file("text.png")); });
    EXPECT_NE(message.find("not a PNG file"), std::string::npos) << message;
    fixtures::writeFile(dir.file("empty.png"), {});
    EXPECT_NE(errorOf([&] { icl::readPngGray(dir.file("empty.png")); }).find("not a PNG file"), std::string::npos);

    message = errorOf([&] { icl::readPngGray(dir.file("missing.png")); });
    EXPECT_NE(message.find(dir.file("missing.png")), std::string::npos) << message;
    EXPECT_NE(message.find("no such file"), std::string::npos) << message;
}

TEST(ImageFolderAreaResize, IntegerFactorAveragesBlocks)
{
    const icl::GrayImage image { 4, 4, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };
    const icl::GrayImage small = icl::resizeArea(image, 2, 2);
    ASSERT_EQ(small.rows, 2);
    ASSERT_EQ(small.cols, 2);
    EXPECT_FLOAT_EQ(small.pixels[0], (1 + 2 + 5 + 6) / 4.0f);
    EXPECT_FLOAT_EQ(small.pixels[1], (3 + 4 + 7 + 8) / 4.0f);
    EXPECT_FLOAT_EQ(small.pixels[2], (9 + 10 + 13 + 14) / 4.0f);
    EXPECT_FLOAT_EQ(small.pixels[3], (11 + 12 + 15 + 16) / 4.0f);
}

TEST(ImageFolderAreaResize, FractionalFactorWeightsPartialPixelsByOverlap)
{
    // 3 → 2 rows: output row 0 covers [0, 1.5) = pixel 0 + half of pixel 1, row 1 covers [1.5, 3).
    const icl::GrayImage column { 3, 1, { 3, 6, 9 } };
    const icl::GrayImage two = icl::resizeArea(column, 2, 1);
    EXPECT_FLOAT_EQ(two.pixels[0], (3 + 0.5f * 6) / 1.5f);
    EXPECT_FLOAT_EQ(two.pixels[1], (0.5f * 6 + 9) / 1.5f);
    // Upscaling 1×1 → 3×2 replicates the pixel.
    const icl::GrayImage up = icl::resizeArea({ 1, 1, { 0.25f } }, 3, 2);
    EXPECT_EQ(up.pixels, std::vector<float>(6, 0.25f));
}

TEST(ImageFolderAreaResize, OmniglotSizeTo28KeepsTheMeanAndConstants)
{
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(0, 1);
    icl::GrayImage image { 105, 105, std::vector<float>(105 * 105) };
    for (float& v : image.pixels)
        v = u(rng);
    const icl::GrayImage small = icl::resizeArea(image, 28, 28);
    ASSERT_EQ(small.pixels.size(), 28u * 28u);
    const auto mean
        = [](const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); };
    EXPECT_NEAR(mean(small.pixels), mean(image.pixels), 1e-5);
    const icl::GrayImage flat = icl::resizeArea({ 105, 105, std::vector<float>(105 * 105, 0.7f) }, 28, 28);
    for (float v : flat.pixels)
        EXPECT_NEAR(v, 0.7, 1e-6);
    EXPECT_THROW(icl::resizeArea(image, 0, 28), icl::Error);
}

TEST(ImageFolder, ClassesAreCharacterFoldersInSortedOrder)
{
    fixtures::ScratchDir dir("folder_order");
    // Created out of order; "character10" sorts before "character2" (byte-wise order).
    const std::vector<std::pair<std::string, int>> classes { { "Tifinagh/character2", 2 }, { "Latin/character2", 1 },
        { "Latin/character10", 3 }, { "Greek/character01", 2 } };
    for (const auto& [name, n] : classes) {
        fs::create_directories(dir.path / name);
        for (int i = n; i >= 1; --i) { // files created in reverse order too
            const std::string file = (dir.path / name / ("img" + std::to_string(i) + ".png")).string();
            fixtures::writeGrayPng(file, 3, 2, ramp(6, unsigned(10 * i), unsigned(name.size())));
        }
    }
    fixtures::writeFile((dir.path / "Latin" / "character2" / "notes.txt").string(), { 'x' }); // ignored
    fixtures::writeFile((dir.path / "README").string(), { 'x' }); // ignored
    fixtures::writeGrayPng((dir.path / "Latin" / "character2" / "upper.PNG").string(), 3, 2, ramp(6, 1, 99));

    const icl::ImageDataset set = icl::loadImageFolder(dir.path.string());
    ASSERT_EQ(set.classNames,
        (std::vector<std::string> {
            "Greek/character01", "Latin/character10", "Latin/character2", "Tifinagh/character2" }));
    EXPECT_EQ(set.rows, 2);
    EXPECT_EQ(set.cols, 3);
    EXPECT_EQ(set.labels, (std::vector<int64_t> { 0, 0, 1, 1, 1, 2, 2, 3, 3 }));
    ASSERT_EQ(set.pixels.size(), 9u * 6u);
    // Image 2 is Latin/character10/img1.png, image 6 is Latin/character2/upper.PNG.
    EXPECT_EQ(std::vector<uint8_t>(set.pixels.begin() + 2 * 6, set.pixels.begin() + 3 * 6),
        ramp(6, 10, unsigned(std::string("Latin/character10").size())));
    EXPECT_EQ(std::vector<uint8_t>(set.pixels.begin() + 6 * 6, set.pixels.begin() + 7 * 6), ramp(6, 1, 99));
    EXPECT_DOUBLE_EQ(set.intensity(6, 1, 2), ramp(6, 1, 99)[5] / 255.0);
}

TEST(ImageFolder, ResizeOnLoadAveragesAreas)
{
    fixtures::ScratchDir dir("folder_resize");
    fs::create_directories(dir.path / "a" / "c1");
    fs::create_directories(dir.path / "a" / "c2");
    fixtures::writeGrayPng(dir.file("a/c1/x.png"), 4, 4, std::vector<uint8_t>(16, 200));
    // Left half 0, right half 255: 2×2 blocks average to 0 and 255; a 6×6 image of the same pattern too.
    std::vector<uint8_t> halves;
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 6; ++c)
            halves.push_back(c < 3 ? 0 : 255);
    fixtures::writeGrayPng(dir.file("a/c2/y.png"), 6, 6, halves);
    icl::ImageFolderOptions o;
    o.rows = o.cols = 2;
    const icl::ImageDataset set = icl::loadImageFolder(dir.path.string(), o);
    EXPECT_EQ(set.rows, 2);
    EXPECT_EQ(set.cols, 2);
    EXPECT_EQ(set.pixels, (std::vector<uint8_t> { 200, 200, 200, 200, 0, 255, 0, 255 }));
    o.rows = 0; // one of the two set
    EXPECT_THROW(icl::loadImageFolder(dir.path.string(), o), icl::Error);
}

TEST(ImageFolder, MissingRootEmptyFoldersMixedSizesAndDamagedFilesAreErrors)
{
    fixtures::ScratchDir dir("folder_errors");
    const std::string root = dir.path.string();
    std::string message = errorOf([&] { icl::loadImageFolder(root + "/nowhere"); });
    EXPECT_NE(message.find(root + "/nowhere: no such folder"), std::string::npos) << message;
    fixtures::writeFile(dir.file("file"), { 1 });
    EXPECT_NE(errorOf([&] { icl::loadImageFolder(dir.file("file")); }).find("not a folder"), std::string::npos);

    fs::create_directories(dir.path / "empty");
    message = errorOf([&] { icl::loadImageFolder(dir.file("empty")); });
    EXPECT_NE(message.find("empty folder"), std::string::npos) << message;

    fs::create_directories(dir.path / "noChars" / "alphabet");
    message = errorOf([&] { icl::loadImageFolder(dir.file("noChars")); });
    EXPECT_NE(message.find("alphabet"), std::string::npos) << message;
    EXPECT_NE(message.find("no character folders"), std::string::npos) << message;

    fs::create_directories(dir.path / "noPngs" / "alphabet" / "character1");
    fixtures::writeFile(dir.file("noPngs/alphabet/character1/a.txt"), { 1 });
    message = errorOf([&] { icl::loadImageFolder(dir.file("noPngs")); });
    EXPECT_NE(message.find("character1: empty character folder"), std::string::npos) << message;

    fs::create_directories(dir.path / "mixed" / "a" / "c");
    fixtures::writeGrayPng(dir.file("mixed/a/c/1.png"), 3, 3, ramp(9, 1, 0));
    fixtures::writeGrayPng(dir.file("mixed/a/c/2.png"), 4, 3, ramp(12, 1, 0));
    message = errorOf([&] { icl::loadImageFolder(dir.file("mixed")); });
    EXPECT_NE(message.find("2.png: image of 3×4 pixels, earlier images have 3×3"), std::string::npos) << message;

    fs::create_directories(dir.path / "damaged" / "a" / "c");
    fixtures::writeGrayPng(dir.file("damaged/a/c/1.png"), 3, 3, ramp(9, 1, 0));
    fixtures::writeFile(dir.file("damaged/a/c/2.png"), { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0 });
    message = errorOf([&] { icl::loadImageFolder(dir.file("damaged")); });
    EXPECT_NE(message.find("2.png"), std::string::npos) << message;
    EXPECT_NE(message.find("damaged PNG"), std::string::npos) << message;
}

namespace {

/// A PNG chunk: length, type, data, CRC-32 of type and data (PNG spec §5.3), written by hand so that the header
/// can claim sizes no encoder would write.
void appendChunk(std::vector<uint8_t>& png, const char* type, const std::vector<uint8_t>& data)
{
    fixtures::appendBigEndian32(png, uint32_t(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    png.insert(png.end(), body.begin(), body.end());
    fixtures::appendBigEndian32(png, uint32_t(crc32(0, body.data(), uInt(body.size()))));
}

/// Signature, an IHDR of `width` × `height` 8-bit gray, an empty IDAT and IEND: a header without the image data.
std::vector<uint8_t> pngHeaderClaiming(uint32_t width, uint32_t height)
{
    std::vector<uint8_t> png = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
    std::vector<uint8_t> ihdr;
    fixtures::appendBigEndian32(ihdr, width);
    fixtures::appendBigEndian32(ihdr, height);
    ihdr.insert(ihdr.end(), { 8, 0, 0, 0, 0 }); // bit depth 8, gray, deflate, adaptive filter, no interlace
    appendChunk(png, "IHDR", ihdr);
    appendChunk(png, "IDAT", { 0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01 }); // an empty zlib stream
    appendChunk(png, "IEND", {});
    return png;
}

} // namespace

// Hostile PNGs and folders (issue 46): a header's sizes are bounded by libpng's user limits and a pixel limit
// before a row is allocated; only regular files are read; the walk is bounded and refuses links back up.
TEST(ImageFolder, HostilePngsAndFoldersAreRefusedBeforeAllocating)
{
    fixtures::ScratchDir dir("folder_hostile");
    // 200,000 × 200,000 pixels (40 GB) in 45 bytes: libpng's default limit is 1,000,000 a side.
    fixtures::writeFile(dir.file("wide.png"), pngHeaderClaiming(200000, 200000));
    EXPECT_EQ(errorOf([&] { icl::readPngGray(dir.file("wide.png")); }),
        dir.file("wide.png") + ": damaged PNG (libpng: Invalid IHDR data: Image width exceeds user limit in IHDR)");
    // 16384 × 16384 is within the side limit, 2^28 pixels are not.
    fixtures::writeFile(dir.file("big.png"), pngHeaderClaiming(16384, 16384));
    EXPECT_EQ(errorOf([&] { icl::readPngGray(dir.file("big.png")); }),
        dir.file("big.png") + ": image of 16384×16384 pixels, more than the 67108864 an image may have");
    // 4096 × 4096 fits the pixel limit; a 16 MB budget cannot decode it (16.8 MB of rows and 67 MB of floats).
    fixtures::writeFile(dir.file("budget.png"), pngHeaderClaiming(4096, 4096));
    EXPECT_EQ(errorOf([&] { icl::readPngGray(dir.file("budget.png"), uint64_t(16) << 20); }),
        dir.file("budget.png") + ": refused: decoding an image of 4096×4096 pixels would need 83.9 MB, over the memory "
                                 "budget of 16.8 MB (--max-memory or ICL_MAX_MEMORY)");

    // A FIFO named .png: not read (the walk skips it, readPngGray refuses it without waiting for a writer).
    ASSERT_EQ(::mkfifo(dir.file("fifo.png").c_str(), 0600), 0);
    EXPECT_EQ(errorOf([&] { icl::readPngGray(dir.file("fifo.png")); }),
        dir.file("fifo.png") + ": not a regular file (a FIFO, device or socket), expected a PNG file");

    // A character folder that is a link back to its alphabet, an alphabet that is a link to the root.
    fs::create_directories(dir.path / "loop" / "a" / "c");
    fixtures::writeGrayPng(dir.file("loop/a/c/1.png"), 2, 2, ramp(4, 1, 0));
    fs::create_directory_symlink(dir.path / "loop" / "a", dir.path / "loop" / "a" / "back");
    EXPECT_EQ(errorOf([&] { icl::loadImageFolder(dir.file("loop")); }),
        dir.file("loop/a/back") + ": a link back to a folder it is in (a loop)");
    fs::remove(dir.path / "loop" / "a" / "back");
    fs::create_directory_symlink(dir.path / "loop", dir.path / "loop" / "root");
    EXPECT_EQ(errorOf([&] { icl::loadImageFolder(dir.file("loop")); }),
        dir.file("loop/root") + ": a link back to the image folder itself (a loop)");
    fs::remove(dir.path / "loop" / "root");
    EXPECT_EQ(icl::loadImageFolder(dir.file("loop")).count(), 1);

    // The dataset's bytes are charged to the load's budget: 3 images of 2×2 do not fit 8 bytes.
    fs::create_directories(dir.path / "three" / "a" / "c");
    for (const char* name : { "1.png", "2.png", "3.png" })
        fixtures::writeGrayPng((dir.path / "three" / "a" / "c" / name).string(), 2, 2, ramp(4, 1, 0));
    icl::ImageFolderOptions tight;
    tight.max_memory = 60; // one image decodes in 4 + 16 bytes; the 3 × 4 stored bytes come on top
    EXPECT_EQ(icl::loadImageFolder(dir.file("three"), tight).pixels.size(), 12u);
    tight.max_memory = 8;
    const std::string message = errorOf([&] { icl::loadImageFolder(dir.file("three"), tight); });
    EXPECT_NE(message.find(": refused: "), std::string::npos) << message;
}
