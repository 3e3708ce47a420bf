#include "core/io/idx.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

#include "core/error.h"

namespace icl {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what)
{
    throw Error("idx: " + path + ": " + what);
}

std::string hex(uint32_t v, int digits)
{
    char s[16];
    std::snprintf(s, sizeof s, "0x%0*X", digits, v);
    return s;
}

std::string hex32(uint32_t v)
{
    return hex(v, 8);
}

const char* typeName(uint8_t type)
{
    switch (type) {
    case 0x08:
        return "unsigned byte";
    case 0x09:
        return "signed byte";
    case 0x0B:
        return "int16";
    case 0x0C:
        return "int32";
    case 0x0D:
        return "float32";
    case 0x0E:
        return "float64";
    default:
        return "unknown";
    }
}

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// zlib's message without the "path: " it puts in front.
std::string zlibMessage(gzFile file, const std::string& path)
{
    int code = 0;
    std::string message = gzerror(file, &code);
    if (message.rfind(path + ": ", 0) == 0)
        message.erase(0, path.size() + 2);
    return message;
}

// The whole file, decompressed when it is a gzip stream (zlib reads plain files unchanged).
std::vector<uint8_t> readAll(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        fail(path, "no such file");
    if (std::filesystem::is_directory(path, ec))
        fail(path, "is a directory, expected an IDX file");
    std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
    if (!file)
        fail(path, "cannot open for reading");
    std::vector<uint8_t> bytes;
    constexpr unsigned kChunk = 1u << 20;
    for (;;) {
        const size_t old = bytes.size();
        bytes.resize(old + kChunk);
        const int n = gzread(file.get(), bytes.data() + old, kChunk);
        if (n < 0)
            fail(path, "damaged gzip stream (zlib: " + zlibMessage(file.get(), path) + ")");
        bytes.resize(old + size_t(n));
        if (n == 0)
            break;
    }
    int code = Z_OK;
    gzerror(file.get(), &code);
    if (code != Z_OK) // e.g. Z_BUF_ERROR "unexpected end of file" for a truncated .gz
        fail(path, "damaged gzip stream (zlib: " + zlibMessage(file.get(), path) + ")");
    return bytes;
}

IdxArray readChecked(const std::string& path, uint32_t expectedMagic)
{
    IdxArray a = readIdx(path);
    const uint32_t magic = 0x0800u | uint32_t(a.shape.size());
    if (magic == expectedMagic)
        return a;
    const auto describe = [](uint32_t m) -> std::string {
        if (m == kIdxImagesMagic)
            return " (images [n, rows, cols] of unsigned bytes)";
        if (m == kIdxLabelsMagic)
            return " (labels [n] of unsigned bytes)";
        return " (" + std::to_string(m & 0xFF) + " dimensions)";
    };
    fail(path,
        "magic " + hex32(magic) + describe(magic) + ", shape " + shapeText(a.shape) + ": expected "
            + hex32(expectedMagic) + describe(expectedMagic));
}

} // namespace

IdxArray readIdx(const std::string& path)
{
    const std::vector<uint8_t> bytes = readAll(path);
    if (bytes.size() < 4)
        fail(path, "truncated header: " + std::to_string(bytes.size()) + " bytes, an IDX header has at least 4");
    const auto be32 = [&](size_t at) {
        return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 | uint32_t(bytes[at + 2]) << 8
            | uint32_t(bytes[at + 3]);
    };
    const uint32_t magic = be32(0);
    if (bytes[0] != 0 || bytes[1] != 0)
        fail(path, "bad magic " + hex32(magic) + ": not an IDX file (its magic starts with two zero bytes)");
    const uint8_t type = bytes[2];
    if (type != 0x08)
        fail(path,
            "magic " + hex32(magic) + " has element type " + hex(type, 2) + " (" + typeName(type)
                + "); only unsigned bytes (0x08) are supported");
    const size_t ndims = bytes[3];
    const size_t headerSize = 4 + 4 * ndims;
    if (bytes.size() < headerSize)
        fail(path,
            "truncated header: magic " + hex32(magic) + " announces " + std::to_string(ndims) + " dimensions ("
                + std::to_string(headerSize) + " header bytes), the file has " + std::to_string(bytes.size())
                + " bytes");
    IdxArray a;
    uint64_t count = 1;
    bool overflow = false;
    for (size_t i = 0; i < ndims; ++i) {
        const uint32_t d = be32(4 + 4 * i);
        a.shape.push_back(int64_t(d));
        if (d != 0 && count > std::numeric_limits<uint64_t>::max() / d)
            overflow = true;
        count *= d;
    }
    const uint64_t available = bytes.size() - headerSize;
    if (overflow || count > available)
        fail(path,
            "truncated data: header shape " + shapeText(a.shape) + " needs "
                + (overflow ? std::string("more than 2^64") : std::to_string(count)) + " bytes after the "
                + std::to_string(headerSize) + "-byte header, the file has " + std::to_string(available));
    if (count < available)
        fail(path,
            std::to_string(available - count) + " trailing bytes after the data of shape " + shapeText(a.shape)
                + " (damaged file, or a different file than the header describes)");
    a.data.assign(bytes.begin() + std::ptrdiff_t(headerSize), bytes.end());
    return a;
}

IdxImages readIdxImages(const std::string& path)
{
    IdxArray a = readChecked(path, kIdxImagesMagic);
    if (a.shape[1] == 0 || a.shape[2] == 0)
        fail(path,
            "images of size " + std::to_string(a.shape[1]) + "×" + std::to_string(a.shape[2])
                + ": rows and cols must be >= 1");
    return { a.shape[0], a.shape[1], a.shape[2], std::move(a.data) };
}

std::vector<uint8_t> readIdxLabels(const std::string& path)
{
    return readChecked(path, kIdxLabelsMagic).data;
}

IdxImageSet readIdxImageSet(const std::string& imagesPath, const std::string& labelsPath)
{
    IdxImageSet set { readIdxImages(imagesPath), readIdxLabels(labelsPath) };
    if (int64_t(set.labels.size()) != set.images.count)
        throw Error("idx: label/image count mismatch: " + imagesPath + " holds " + std::to_string(set.images.count)
            + " images, " + labelsPath + " holds " + std::to_string(set.labels.size()) + " labels");
    return set;
}

} // namespace icl
