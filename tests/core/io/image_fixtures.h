#pragma once
// Test fixtures made at test time: a scratch folder, IDX files written byte by byte (plain or gzip) and
// PNG files written with libpng's low-level API, independent of the loaders under test.

#include <png.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include "tests/support/scratch.h"

namespace fixtures {

/// A fresh, empty folder under the test temp dir, removed with the object.
struct ScratchDir {
    std::filesystem::path path;
    explicit ScratchDir(const std::string& name)
    {
        path = std::filesystem::path(icl::test::scratchPrefix()) / ("icl_" + name + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~ScratchDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void appendBigEndian32(std::vector<uint8_t>& bytes, uint32_t v)
{
    for (int shift = 24; shift >= 0; shift -= 8)
        bytes.push_back(uint8_t(v >> shift));
}

/// IDX bytes: magic 0x0000TTNN (TT = type, NN = dims.size()), big-endian dims, then data.
inline std::vector<uint8_t> idxBytes(
    const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data, uint8_t type = 0x08)
{
    std::vector<uint8_t> bytes { 0, 0, type, uint8_t(dims.size()) };
    for (uint32_t d : dims)
        appendBigEndian32(bytes, d);
    bytes.insert(bytes.end(), data.begin(), data.end());
    return bytes;
}

inline void writeFile(const std::string& path, const std::vector<uint8_t>& bytes)
{
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out)
        throw std::runtime_error("fixture: cannot write " + path);
}

/// Writes `count` images of `rows` × `cols` pixels as the IDX file `images` (pixel p of image i, row-major, is
/// pixel(i, p)) and their labels i mod `n_labels` as the IDX file `labels`: the MNIST layout, uint8 values.
inline void writeIdxImageSet(const std::string& images, const std::string& labels, uint32_t count, uint32_t rows,
    uint32_t cols, const std::function<uint8_t(int, int)>& pixel, int n_labels)
{
    std::vector<uint8_t> pixels, classes;
    for (int i = 0; i < int(count); ++i) {
        for (int p = 0; p < int(rows * cols); ++p)
            pixels.push_back(pixel(i, p));
        classes.push_back(uint8_t(i % n_labels));
    }
    writeFile(images, idxBytes({ count, rows, cols }, pixels));
    writeFile(labels, idxBytes({ count }, classes));
}

inline std::vector<uint8_t> readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void writeGzipFile(const std::string& path, const std::vector<uint8_t>& bytes)
{
    gzFile f = gzopen(path.c_str(), "wb9");
    if (!f || gzwrite(f, bytes.data(), unsigned(bytes.size())) != int(bytes.size()) || gzclose(f) != Z_OK)
        throw std::runtime_error("fixture: cannot write " + path);
}

/// Writes a PNG: `rows` holds height rows of packed samples as PNG stores them (16-bit big-endian, low bit
/// depths packed MSB first). libpng's default error handling aborts, acceptable for a fixture.
inline void writePng(const std::string& path, uint32_t width, uint32_t height, int bitDepth, int colorType,
    const std::vector<uint8_t>& rows, const std::vector<png_color>& palette = {})
{
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        throw std::runtime_error("fixture: cannot write " + path);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    png_init_io(png, f);
    png_set_IHDR(png, info, width, height, bitDepth, colorType, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
        PNG_FILTER_TYPE_DEFAULT);
    if (!palette.empty())
        png_set_PLTE(png, info, palette.data(), int(palette.size()));
    png_write_info(png, info);
    const size_t rowBytes = png_get_rowbytes(png, info);
    if (rows.size() != rowBytes * height)
        throw std::runtime_error("fixture: " + path + ": " + std::to_string(rows.size()) + " bytes for "
            + std::to_string(height) + " rows of " + std::to_string(rowBytes));
    for (uint32_t y = 0; y < height; ++y)
        png_write_row(png, rows.data() + y * rowBytes);
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
}

/// An 8-bit grayscale PNG of the given bytes [height, width].
inline void writeGrayPng(const std::string& path, uint32_t width, uint32_t height, const std::vector<uint8_t>& pixels)
{
    writePng(path, width, height, 8, PNG_COLOR_TYPE_GRAY, pixels);
}

} // namespace fixtures
