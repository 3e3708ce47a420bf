#include "core/io/idx.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <algorithm>

#include <unistd.h>

#include "core/error.h"
#include "core/io/checked_size.h"
#include "core/io/memory_budget.h"
#include "core/io/regular_file.h"

namespace icl {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what)
{
    throw Error(path + ": " + what);
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

// zlib's message without the "path: " or "<fd:3>: " it puts in front.
std::string zlibMessage(gzFile file, const std::string& path)
{
    int code = 0;
    std::string message = gzerror(file, &code);
    if (message.rfind(path + ": ", 0) == 0)
        message.erase(0, path.size() + 2);
    else if (message.rfind("<fd:", 0) == 0 && message.find(">: ") != std::string::npos) // opened by gzdopen
        message.erase(0, message.find(">: ") + 3);
    return message;
}

// Deflate expands one input byte to at most 1032 output bytes (zlib's technical details): the most data a
// gzip stream of a given size can hold, checked before a header's sizes are believed.
constexpr uint64_t kDeflateMostExpansion = 1032;

using GzFile = std::unique_ptr<gzFile_s, int (*)(gzFile)>;

// Reads up to `n` bytes of the (decompressed) stream into `out`; returns how many there were. Throws for a
// damaged gzip stream.
uint64_t readUpTo(gzFile file, const std::string& path, uint8_t* out, uint64_t n)
{
    uint64_t got = 0;
    while (got < n) {
        const unsigned chunk = unsigned(std::min<uint64_t>(n - got, 1u << 30));
        const int r = gzread(file, out + got, chunk);
        if (r < 0)
            fail(path, "damaged gzip stream (zlib: " + zlibMessage(file, path) + ")");
        if (r == 0)
            break;
        got += uint64_t(r);
    }
    int code = Z_OK;
    gzerror(file, &code);
    if (code != Z_OK) // e.g. Z_BUF_ERROR "unexpected end of file" for a truncated .gz
        fail(path, "damaged gzip stream (zlib: " + zlibMessage(file, path) + ")");
    return got;
}

IdxArray readIdxWithin(const std::string& path, MemoryBudget& budget);

IdxArray readChecked(const std::string& path, uint32_t expectedMagic, MemoryBudget& budget)
{
    IdxArray a = readIdxWithin(path, budget);
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

// The header (magic, dimensions) is read and checked first; the data is allocated only once its size is known
// to fit the file (plain: exactly; gzip: what the compressed size can hold) and the memory budget.
IdxArray readIdxWithin(const std::string& path, MemoryBudget& budget)
{
    RegularFile regular(path, "IDX file");
    const uint64_t fileSize = regular.size();
    uint8_t signature[2] = {};
    const bool gzip = ::pread(regular.fd(), signature, 2, 0) == 2 && signature[0] == 0x1f && signature[1] == 0x8b;
    GzFile file(gzdopen(regular.fd(), "rb"), gzclose);
    if (!file)
        fail(path, "cannot open for reading");
    regular.release(); // gzclose closes it

    uint8_t head[4 + 4 * 255] = {};
    const uint64_t gotMagic = readUpTo(file.get(), path, head, 4);
    if (gotMagic < 4)
        fail(path, "truncated header: " + std::to_string(gotMagic) + " bytes, an IDX header has at least 4");
    const auto be32 = [&](size_t at) {
        return uint32_t(head[at]) << 24 | uint32_t(head[at + 1]) << 16 | uint32_t(head[at + 2]) << 8
            | uint32_t(head[at + 3]);
    };
    const uint32_t magic = be32(0);
    if (head[0] != 0 || head[1] != 0)
        fail(path, "bad magic " + hex32(magic) + ": not an IDX file (its magic starts with two zero bytes)");
    const uint8_t type = head[2];
    if (type != 0x08)
        fail(path,
            "magic " + hex32(magic) + " has element type " + hex(type, 2) + " (" + typeName(type)
                + "); only unsigned bytes (0x08) are supported");
    const size_t ndims = head[3];
    const size_t headerSize = 4 + 4 * ndims;
    const uint64_t gotDims = readUpTo(file.get(), path, head + 4, 4 * ndims);
    if (gotDims < 4 * ndims)
        fail(path,
            "truncated header: magic " + hex32(magic) + " announces " + std::to_string(ndims) + " dimensions ("
                + std::to_string(headerSize) + " header bytes), the file has " + std::to_string(4 + gotDims)
                + " bytes");
    IdxArray a;
    for (size_t i = 0; i < ndims; ++i)
        a.shape.push_back(int64_t(be32(4 + 4 * i)));
    uint64_t count = 0;
    bool overflow = false;
    try {
        count = checked::elementCount(a.shape, path);
    } catch (const Error&) {
        overflow = true;
    }
    const std::string needs = "header shape " + shapeText(a.shape) + " needs "
        + (overflow ? std::string("more than 2^64") : std::to_string(count)) + " bytes after the "
        + std::to_string(headerSize) + "-byte header";
    if (!gzip) {
        const uint64_t available = fileSize > headerSize ? fileSize - headerSize : 0;
        if (overflow || count > available)
            fail(path, "truncated data: " + needs + ", the file has " + std::to_string(available));
        if (count < available)
            fail(path,
                std::to_string(available - count) + " trailing bytes after the data of shape " + shapeText(a.shape)
                    + " (damaged file, or a different file than the header describes)");
    } else if (overflow || count / kDeflateMostExpansion > fileSize) {
        fail(path,
            "truncated data: " + needs + ", more than a gzip stream of " + std::to_string(fileSize)
                + " bytes can hold");
    }
    budget.charge(count, "the IDX data of shape " + shapeText(a.shape));
    a.data.resize(checked::toSize(count, path));
    const uint64_t got = readUpTo(file.get(), path, a.data.data(), count);
    if (got < count)
        fail(path, "truncated data: " + needs + ", the file has " + std::to_string(got));
    // Whatever follows the data (decompressed, counted in a small buffer; reading to the end also checks the
    // gzip trailer's CRC and length).
    uint64_t trailing = 0;
    uint8_t scratch[65536];
    for (uint64_t n; (n = readUpTo(file.get(), path, scratch, sizeof scratch)) > 0;)
        trailing += n;
    if (trailing > 0)
        fail(path,
            std::to_string(trailing) + " trailing bytes after the data of shape " + shapeText(a.shape)
                + " (damaged file, or a different file than the header describes)");
    return a;
}

} // namespace

IdxArray readIdx(const std::string& path, uint64_t max_memory)
{
    MemoryBudget budget(path, max_memory);
    return readIdxWithin(path, budget);
}

namespace {

IdxImages readImagesWithin(const std::string& path, MemoryBudget& budget)
{
    IdxArray a = readChecked(path, kIdxImagesMagic, budget);
    if (a.shape[1] == 0 || a.shape[2] == 0)
        fail(path,
            "images of size " + std::to_string(a.shape[1]) + "×" + std::to_string(a.shape[2])
                + ": rows and cols must be >= 1");
    return { a.shape[0], a.shape[1], a.shape[2], std::move(a.data) };
}

} // namespace

IdxImages readIdxImages(const std::string& path, uint64_t max_memory)
{
    MemoryBudget budget(path, max_memory);
    return readImagesWithin(path, budget);
}

std::vector<uint8_t> readIdxLabels(const std::string& path, uint64_t max_memory)
{
    MemoryBudget budget(path, max_memory);
    return readChecked(path, kIdxLabelsMagic, budget).data;
}

IdxImageSet readIdxImageSet(const std::string& imagesPath, const std::string& labelsPath, uint64_t max_memory)
{
    // One budget for both files (named by the images file in its refusals).
    MemoryBudget budget(imagesPath, max_memory);
    IdxImageSet set { readImagesWithin(imagesPath, budget), readChecked(labelsPath, kIdxLabelsMagic, budget).data };
    if (int64_t(set.labels.size()) != set.images.count)
        throw Error("IDX label/image count mismatch: " + imagesPath + " holds " + std::to_string(set.images.count)
            + " images, " + labelsPath + " holds " + std::to_string(set.labels.size()) + " labels");
    return set;
}

} // namespace icl
