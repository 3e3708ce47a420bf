#include "core/io/weights_file.h"

#include <unistd.h>
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/checked_size.h"
#include "core/io/torch_pickle.h"

namespace icl {

namespace {

using torch_pickle::Value;
using Kind = Value::Kind;

constexpr uint64_t kMaxSafetensorsHeader = 100'000'000; // the reference implementation's limit
// A tensor may view its storage with zero or overlapping strides (x.expand(...)); such a view may have at
// most this many elements more than its storage holds, so a lying pickle cannot ask for terabytes.
constexpr int64_t kMaxExpandedElements = int64_t(1) << 24;
// Deflate expands at most ~1032:1; a zip entry claiming more than this is lying.
constexpr uint64_t kMaxDeflateRatio = 1100;
// A torch.save data.pkl takes ~100 bytes per tensor: 256 MB is a state dict of millions of tensors.
constexpr uint64_t kMaxPickleBytes = uint64_t(256) << 20;
// numpy writes headers of a few hundred bytes (and reads at most 10000 since 1.24).
constexpr uint64_t kMaxNpyHeader = uint64_t(1) << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what)
{
    throw Error(path + ": " + what);
}

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// ---- element types ---------------------------------------------------------------------------------

enum class ElemType { F32, F16, BF16, F64, I64, I32, I16, I8, U8, Bool };

struct ElemInfo {
    ElemType type;
    size_t itemsize;
    const char* name; // WeightsFile::source_dtypes
};

const ElemInfo kElemTypes[] = {
    { ElemType::F32, 4, "float32" },
    { ElemType::F16, 2, "float16" },
    { ElemType::BF16, 2, "bfloat16" },
    { ElemType::F64, 8, "float64" },
    { ElemType::I64, 8, "int64" },
    { ElemType::I32, 4, "int32" },
    { ElemType::I16, 2, "int16" },
    { ElemType::I8, 1, "int8" },
    { ElemType::U8, 1, "uint8" },
    { ElemType::Bool, 1, "bool" },
};

const ElemInfo* elemByName(const std::string& name)
{
    for (const ElemInfo& e : kElemTypes)
        if (name == e.name)
            return &e;
    return nullptr;
}

uint64_t loadUInt(const uint8_t* p, size_t n, bool big_endian)
{
    uint64_t v = 0;
    if (big_endian)
        for (size_t k = 0; k < n; ++k)
            v = (v << 8) | p[k];
    else
        for (size_t k = 0; k < n; ++k)
            v |= uint64_t(p[k]) << (8 * k);
    return v;
}

float halfToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000) << 16;
    const uint32_t exponent = (h >> 10) & 0x1F;
    uint32_t mantissa = h & 0x3FF;
    uint32_t bits;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13); // inf / NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { // subnormal: normalise
        int e = -1;
        do {
            ++e;
            mantissa <<= 1;
        } while (!(mantissa & 0x400));
        bits = sign | uint32_t(112 - e) << 23 | ((mantissa & 0x3FF) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float decodeElement(const uint8_t* p, ElemType type, bool big_endian)
{
    switch (type) {
    case ElemType::F32: {
        const uint32_t u = uint32_t(loadUInt(p, 4, big_endian));
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    case ElemType::F16:
        return halfToFloat(uint16_t(loadUInt(p, 2, big_endian)));
    case ElemType::BF16: {
        const uint32_t u = uint32_t(loadUInt(p, 2, big_endian)) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    case ElemType::F64: {
        const uint64_t u = loadUInt(p, 8, big_endian);
        double d;
        std::memcpy(&d, &u, 8);
        return float(d);
    }
    case ElemType::I64:
        return float(int64_t(loadUInt(p, 8, big_endian)));
    case ElemType::I32:
        return float(int32_t(uint32_t(loadUInt(p, 4, big_endian))));
    case ElemType::I16:
        return float(int16_t(uint16_t(loadUInt(p, 2, big_endian))));
    case ElemType::I8:
        return float(int8_t(p[0]));
    case ElemType::U8:
        return float(p[0]);
    case ElemType::Bool:
        return p[0] ? 1.0f : 0.0f;
    }
    return 0.0f;
}

// Text from the file (a tensor name, a dict key, a dtype) as it may be printed: control characters and invalid
// UTF-8 as \xNN, so a file cannot write to the terminal through a message.
/// Checks the strided view (offset, shape, stride in elements) of a storage of `available` elements of `elem`
/// and returns its element count: every element it reads lies inside the storage, and its size is computed
/// without overflow. The materialised size counts every element, stride 0 or not.
uint64_t checkView(const std::string& path, const std::string& name, int64_t available, const ElemInfo& elem,
    int64_t offset, const std::vector<int64_t>& shape, const std::vector<int64_t>& stride)
{
    const std::string what = "tensor '" + name + "'";
    uint64_t numel = 0;
    try {
        numel = checked::elementCount(shape, what);
    } catch (const Error&) {
        fail(path, what + " has an invalid shape " + shapeText(shape));
    }
    if (numel == 0)
        return 0;
    if (numel > uint64_t(available) && numel - uint64_t(available) > uint64_t(kMaxExpandedElements))
        fail(path,
            what + " of shape " + shapeText(shape) + " has " + std::to_string(numel) + " elements but its storage only "
                + std::to_string(available));
    const std::string outside = what + " (shape " + shapeText(shape) + ", stride " + shapeText(stride) + ", offset "
        + std::to_string(offset) + ") reaches outside its storage of " + std::to_string(available) + " " + elem.name
        + " elements";
    if (std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s < 0; }))
        fail(path, what + " has a negative stride " + shapeText(stride) + " (PyTorch tensors have none)");
    uint64_t extent = 0;
    try {
        extent = checked::stridedExtent(shape, stride, offset, what);
    } catch (const Error&) {
        fail(path, outside);
    }
    if (extent > uint64_t(available))
        fail(path, outside);
    return numel;
}

bool isContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride)
{
    int64_t expected = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (shape[d] != 1 && stride[d] != expected)
            return false;
        expected *= shape[d];
    }
    return true;
}

/// Decodes `n` contiguous elements at `p` into `out` (a copy for little-endian float32).
void decodeRun(const uint8_t* p, uint64_t n, const ElemInfo& elem, bool big_endian, float* out)
{
    if (elem.type == ElemType::F32 && !big_endian && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) {
        std::memcpy(out, p, size_t(n) * 4);
        return;
    }
    for (uint64_t k = 0; k < n; ++k)
        out[k] = decodeElement(p + size_t(k) * elem.itemsize, elem.type, big_endian);
}

/// Copies the strided view (checked by checkView: `numel` elements) of `data` into `out`, row-major.
void gather(const uint8_t* data, const ElemInfo& elem, bool big_endian, int64_t offset,
    const std::vector<int64_t>& shape, const std::vector<int64_t>& stride, uint64_t numel, float* out)
{
    if (numel == 0)
        return;
    const size_t item = elem.itemsize;
    if (isContiguous(shape, stride)) {
        decodeRun(data + size_t(offset) * item, numel, elem, big_endian, out);
        return;
    }
    const size_t ndim = shape.size();
    std::vector<int64_t> index(ndim, 0);
    int64_t at = offset;
    for (uint64_t k = 0; k < numel; ++k) {
        out[k] = decodeElement(data + size_t(at) * item, elem.type, big_endian);
        for (size_t d = ndim; d-- > 0;) { // odometer over the row-major index
            if (++index[d] < shape[d]) {
                at += stride[d];
                break;
            }
            at -= (shape[d] - 1) * stride[d];
            index[d] = 0;
        }
    }
}

/// A source of bytes read in order (a zip entry, a range of a file).
class ByteReader {
public:
    virtual ~ByteReader() = default;
    /// The next `n` bytes into `dst`; throws icl::Error when they cannot be read.
    virtual void read(void* dst, uint64_t n) = 0;
};

// Scratch of the readers that convert while they read: at most this much at a time.
constexpr uint64_t kChunkBytes = uint64_t(1) << 20;

/// Scratch bytes decodeStream uses for `numel` elements of `elem` (0 when it reads straight into the output).
uint64_t streamScratch(uint64_t numel, const ElemInfo& elem, bool big_endian)
{
    if (elem.type == ElemType::F32 && !big_endian && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
        return 0;
    return std::min(checked::mul(numel, elem.itemsize, "tensor"), kChunkBytes);
}

/// Reads `numel` contiguous elements of `elem` from `in` into `out`: little-endian float32 straight into the
/// output, anything else through a scratch of at most kChunkBytes.
void decodeStream(ByteReader& in, uint64_t numel, const ElemInfo& elem, bool big_endian, float* out)
{
    if (streamScratch(numel, elem, big_endian) == 0) {
        in.read(out, numel * 4);
        return;
    }
    const uint64_t perChunk = kChunkBytes / elem.itemsize;
    std::vector<uint8_t> scratch(size_t(std::min(numel, perChunk) * elem.itemsize));
    for (uint64_t done = 0; done < numel;) {
        const uint64_t n = std::min(perChunk, numel - done);
        in.read(scratch.data(), n * elem.itemsize);
        decodeRun(scratch.data(), n, elem, big_endian, out + done);
        done += n;
    }
}

// ---- files -----------------------------------------------------------------------------------------

uint64_t fileSize(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        fail(path, "no such file");
    if (std::filesystem::is_directory(path, ec))
        fail(path, "is a directory, expected a weights file");
    const uint64_t size = std::filesystem::file_size(path, ec);
    if (ec)
        fail(path, "cannot be read: " + ec.message());
    return size;
}

std::string readRange(const std::string& path, uint64_t offset, uint64_t n)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        fail(path, "cannot be opened for reading");
    in.seekg(std::streamoff(offset));
    std::string bytes(size_t(n), '\0');
    in.read(bytes.data(), std::streamsize(n));
    if (uint64_t(in.gcount()) != n)
        fail(path,
            "cannot be read (" + std::to_string(in.gcount()) + " of " + std::to_string(n) + " bytes at offset "
                + std::to_string(offset) + ")");
    return bytes;
}

const uint8_t* bytesOf(const std::string& s)
{
    return reinterpret_cast<const uint8_t*>(s.data());
}

// Writes through a temporary file in the same folder, renamed over `path` only once it is complete.
class AtomicOutput {
public:
    explicit AtomicOutput(std::string path)
        : m_path(std::move(path))
        , m_tmp(m_path + ".tmp-" + std::to_string(::getpid()))
    {
    }
    ~AtomicOutput()
    {
        if (!m_done) {
            std::error_code ec;
            std::filesystem::remove(m_tmp, ec);
        }
    }
    const std::string& tmp() const { return m_tmp; }
    void commit()
    {
        std::error_code ec;
        std::filesystem::rename(m_tmp, m_path, ec);
        if (ec)
            fail(m_path, "cannot be written: " + ec.message());
        m_done = true;
    }

private:
    std::string m_path;
    std::string m_tmp;
    bool m_done = false;
};

// ---- zip archives (libzip) -------------------------------------------------------------------------

class ZipReader {
public:
    ZipReader(const std::string& path, uint64_t file_size)
        : m_path(path)
        , m_fileSize(file_size)
    {
        int code = 0;
        m_zip = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
        if (!m_zip) {
            zip_error_t error;
            zip_error_init_with_code(&error, code);
            m_openError = zip_error_strerror(&error);
            zip_error_fini(&error);
        }
    }
    ~ZipReader()
    {
        if (m_zip)
            zip_discard(m_zip);
    }
    ZipReader(const ZipReader&) = delete;
    ZipReader& operator=(const ZipReader&) = delete;

    bool ok() const { return m_zip != nullptr; }
    const std::string& openError() const { return m_openError; }
    const std::string& path() const { return m_path; }
    zip_t* handle() const { return m_zip; }

    std::vector<std::string> names() const
    {
        std::vector<std::string> out;
        const zip_int64_t n = zip_get_num_entries(m_zip, 0);
        for (zip_int64_t i = 0; i < n; ++i) {
            const char* name = zip_get_name(m_zip, zip_uint64_t(i), ZIP_FL_ENC_RAW);
            out.emplace_back(name ? name : "");
        }
        return out;
    }

    bool has(const std::string& name) const { return zip_name_locate(m_zip, name.c_str(), ZIP_FL_ENC_RAW) >= 0; }

    /// Index and decompressed size of entry `name`, the size checked against its stored bytes (deflate expands
    /// at most ~1032:1, so a larger claim is a lie) before anything is inflated.
    std::pair<zip_uint64_t, uint64_t> locate(const std::string& name) const
    {
        const zip_int64_t index = zip_name_locate(m_zip, name.c_str(), ZIP_FL_ENC_RAW);
        if (index < 0)
            fail(m_path, "the archive has no entry '" + name + "'");
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(m_zip, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)
            || !(st.valid & ZIP_STAT_COMP_SIZE))
            fail(m_path, "entry '" + name + "' cannot be read: " + zip_strerror(m_zip));
        const uint64_t limit = st.comp_method == ZIP_CM_STORE
            ? st.comp_size
            : checked::add(checked::mul(st.comp_size, kMaxDeflateRatio, m_path), 4096, m_path);
        if (st.comp_size > m_fileSize || st.size > limit)
            fail(m_path,
                "entry '" + name + "' claims " + std::to_string(st.size) + " bytes from "
                    + std::to_string(st.comp_size) + " stored bytes (damaged archive)");
        return { zip_uint64_t(index), st.size };
    }

    /// Decompressed size of entry `name` (locate).
    uint64_t entrySize(const std::string& name) const { return locate(name).second; }

    /// The whole decompressed entry; `budget` (when given) is charged its size before it is inflated. libzip
    /// checks its CRC.
    std::string read(const std::string& name, MemoryBudget* budget) const;

private:
    std::string m_path;
    uint64_t m_fileSize;
    zip_t* m_zip = nullptr;
    std::string m_openError;
};

/// One zip entry read in order, inflated as it is read; finish() checks that it ends where it claims and its CRC.
class ZipEntry : public ByteReader {
public:
    ZipEntry(const ZipReader& zip, const std::string& name)
        : m_zip(zip)
        , m_name(name)
        , m_file(nullptr, zip_fclose)
    {
        const auto [index, size] = zip.locate(name);
        m_size = size;
        m_file.reset(zip_fopen_index(zip.handle(), index, 0));
        if (!m_file)
            fail(zip.path(), "entry '" + name + "' cannot be opened: " + zip_strerror(zip.handle()));
    }

    uint64_t size() const { return m_size; }

    void read(void* dst, uint64_t n) override
    {
        if (n > m_size - m_got)
            short_();
        auto* p = static_cast<char*>(dst);
        for (uint64_t done = 0; done < n;) {
            const zip_int64_t k = zip_fread(m_file.get(), p + done, n - done);
            if (k < 0)
                fail(m_zip.path(), "entry '" + m_name + "' is damaged: " + zip_file_strerror(m_file.get()));
            if (k == 0)
                short_();
            done += uint64_t(k);
        }
        m_got += n;
    }

    /// At the end of the entry: nothing is left, and reaching the end checks the CRC.
    void finish()
    {
        if (m_got != m_size)
            fail(m_zip.path(),
                "entry '" + m_name + "' holds " + std::to_string(m_size - m_got) + " bytes after its data");
        char extra;
        const zip_int64_t tail = zip_fread(m_file.get(), &extra, 1);
        if (tail < 0)
            fail(m_zip.path(), "entry '" + m_name + "' is damaged: " + zip_file_strerror(m_file.get()));
        if (tail != 0)
            fail(m_zip.path(),
                "entry '" + m_name + "' does not hold the " + std::to_string(m_size) + " bytes it claims");
    }

private:
    [[noreturn]] void short_() const
    {
        fail(m_zip.path(),
            "entry '" + m_name + "' does not hold the " + std::to_string(m_size) + " bytes it claims");
    }

    const ZipReader& m_zip;
    std::string m_name;
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> m_file;
    uint64_t m_size = 0;
    uint64_t m_got = 0;
};

std::string ZipReader::read(const std::string& name, MemoryBudget* budget) const
{
    ZipEntry entry(*this, name);
    if (budget)
        budget->charge(entry.size(), "decompressed entry '" + name + "'");
    std::string bytes(checked::toSize(entry.size(), m_path), '\0');
    entry.read(bytes.data(), bytes.size());
    entry.finish();
    return bytes;
}

/// A range of a file read in order.
class FileRange : public ByteReader {
public:
    FileRange(const std::string& path, uint64_t offset)
        : m_path(path)
        , m_in(path, std::ios::binary)
    {
        if (!m_in)
            fail(path, "cannot be opened for reading");
        m_in.seekg(std::streamoff(offset));
    }
    void seek(uint64_t offset) { m_in.seekg(std::streamoff(offset)); }
    void read(void* dst, uint64_t n) override
    {
        m_in.read(static_cast<char*>(dst), std::streamsize(n));
        if (!m_in || uint64_t(m_in.gcount()) != n)
            fail(m_path, "cannot be read (it ends early)");
    }

private:
    std::string m_path;
    std::ifstream m_in;
};

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Format of a zip archive from its entry names; `prefix` gets the torch archive folder with its slash
// ("archive/"). Torch archives hold one top folder (named after the file's stem, e.g. "code/" for code.pt), so
// the markers are looked for below it: "<folder>/data.pkl", "<folder>/constants.pkl", "<folder>/code/...".
WeightsFormat zipFormat(const std::vector<std::string>& names, std::string* prefix)
{
    bool torch = false;
    bool npy = false;
    std::string folder;
    for (const std::string& name : names) {
        const size_t slash = name.find('/');
        const std::string top = slash == std::string::npos ? "" : name.substr(0, slash + 1);
        const std::string rest = name.substr(top.size());
        if (rest == "constants.pkl" || (!top.empty() && rest.rfind("code/", 0) == 0))
            return WeightsFormat::TorchScript;
        if (rest == "data.pkl" && !torch) {
            folder = top;
            torch = true;
        }
        if (endsWith(name, ".npy"))
            npy = true;
    }
    if (torch) {
        if (prefix)
            *prefix = folder;
        return WeightsFormat::TorchZip;
    }
    return npy ? WeightsFormat::Npz : WeightsFormat::Unknown;
}

// ---- format detection ------------------------------------------------------------------------------

// Legacy torch.save starts with a pickled magic number: LONG1 of 10 bytes, 0x1950a86a20f9469cfc6c.
const uint8_t kLegacyMagic[] = { 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19 };

bool isZipMagic(const std::string& head)
{
    return head.size() >= 4 && head.compare(0, 4, "PK\x03\x04", 4) == 0;
}

bool isNpyMagic(const std::string& head)
{
    return head.size() >= 6 && head.compare(0, 6, "\x93NUMPY", 6) == 0;
}

// PROTO 2 (torch's default) or 3-5, a FRAME before the magic number from protocol 4 on.
bool isLegacyTorch(const std::string& head)
{
    if (head.size() < 2 || uint8_t(head[0]) != 0x80 || uint8_t(head[1]) < 2 || uint8_t(head[1]) > 5)
        return false;
    const size_t at = head.size() > 2 && uint8_t(head[2]) == 0x95 ? 11 : 2;
    return head.size() >= at + sizeof kLegacyMagic
        && std::memcmp(head.data() + at, kLegacyMagic, sizeof kLegacyMagic) == 0;
}

bool isSafetensors(const std::string& head, uint64_t size)
{
    if (head.size() < 9 || head[8] != '{')
        return false;
    const uint64_t n = loadUInt(bytesOf(head), 8, false);
    return n <= size - 8;
}

// Formats that need no zip listing.
WeightsFormat formatFromHead(const std::string& head, uint64_t size)
{
    if (isNpyMagic(head))
        return WeightsFormat::Npy;
    if (isLegacyTorch(head))
        return WeightsFormat::TorchLegacy;
    if (isSafetensors(head, size))
        return WeightsFormat::Safetensors;
    return WeightsFormat::Unknown;
}

// `path` as a Python string literal inside a shell double-quoted argument: python3 -c "... 'PATH' ...".
std::string pythonQuoted(const std::string& path)
{
    std::string out = "'";
    for (char c : path) {
        if (c == '\\')
            out += "\\\\\\\\"; // four: the shell halves them, Python halves them again
        else if (c == '\'')
            out += "\\'"; // the shell keeps \' as it is, Python reads a quote
        else if (c == '"' || c == '$' || c == '`')
            out += std::string("\\") + c; // the shell reads the character
        else
            out += c;
    }
    return out + "'";
}

// ---- PyTorch zip -----------------------------------------------------------------------------------

bool holdsTensor(const Value* v)
{
    if (v->kind != Kind::Dict)
        return false;
    for (const auto& [key, value] : v->entries)
        if (value->kind == Kind::Tensor)
            return true;
    return false;
}

const Value* dictGet(const Value* dict, const std::string& key)
{
    for (const auto& [k, v] : dict->entries)
        if (k->kind == Kind::String && k->s == key)
            return v;
    return nullptr;
}

std::string keyList(const Value* dict)
{
    std::string s;
    size_t shown_ = 0;
    for (const auto& [k, v] : dict->entries) {
        if (shown_ == 8) {
            s += ", ...";
            break;
        }
        s += (shown_++ ? ", " : "") + (k->kind == Kind::String ? k->s : torch_pickle::describeKind(*k));
    }
    return s;
}

WeightsFile readTorchZip(const std::string& path, const ZipReader& zip, const std::string& prefix,
    MemoryBudget& budget, const WeightsHeaderCheck& check)
{
    WeightsFile out;
    out.format = WeightsFormat::TorchZip;
    if (zip.has(prefix + "byteorder")) {
        if (zip.entrySize(prefix + "byteorder") > 64)
            fail(path, "has a byteorder entry of " + std::to_string(zip.entrySize(prefix + "byteorder")) + " bytes");
        std::string order = zip.read(prefix + "byteorder", &budget);
        while (!order.empty() && std::isspace(uint8_t(order.back())))
            order.pop_back();
        if (order != "little")
            fail(path, "stores its tensors in '" + order + "' byte order; only little-endian files are read");
    }
    const std::string pickleName = prefix + "data.pkl";
    if (const uint64_t n = zip.entrySize(pickleName); n > kMaxPickleBytes)
        fail(path,
            "refused: its " + pickleName + " is " + formatBytes(n) + ", more than a state dict's pickle may be ("
                + formatBytes(kMaxPickleBytes) + ")");
    const std::string pickle = zip.read(pickleName, &budget);
    const torch_pickle::Unpickled unpickled = torch_pickle::unpickle(bytesOf(pickle), pickle.size(), path, budget);
    const Value* root = unpickled.root();

    const Value* state = nullptr;
    if (root->kind == Kind::Dict) {
        for (const char* key : { "model_state_dict", "state_dict", "model" }) {
            const Value* inner = dictGet(root, key);
            if (inner && holdsTensor(inner)) {
                state = inner;
                out.container_key = key;
                break;
            }
        }
        if (!state && holdsTensor(root))
            state = root;
        if (!state) {
            if (root->entries.empty())
                fail(path, "holds an empty dict, not a state dict");
            fail(path, "holds a dict with keys " + keyList(root) + " but no state dict (no tensors)");
        }
    } else if (root->kind == Kind::Tensor) {
        fail(path, "holds a single tensor, not a state dict");
    } else {
        fail(path, "holds " + torch_pickle::describeKind(*root) + ", not a state dict");
    }
    if (state != root) {
        for (const auto& [k, v] : root->entries) {
            if (k->kind != Kind::String)
                continue;
            if (k->s == "train_step" && v->kind == Kind::Int)
                out.train_step = v->i;
            if (v->kind == Kind::String)
                out.metadata[k->s] = v->s;
        }
    }

    // Pass 1, from the pickle and the archive's directory only: every tensor's dtype, storage and view checked,
    // and what reading them will allocate (views counted at their materialised size, stride 0 or not).
    struct Planned {
        const std::string* name;
        const Value::TensorInfo* view;
        const ElemInfo* elem;
        std::string record;
        uint64_t numel;
        bool direct = false; // the view is its whole float32 storage: read straight into the output
    };
    std::vector<Planned> planned;
    std::unordered_map<std::string, int> uses; // storage key -> tensors that view it
    std::unordered_set<std::string> seen;
    for (const auto& [k, v] : state->entries) {
        if (v->kind != Kind::Tensor)
            continue;
        if (k->kind != Kind::String)
            fail(path, "holds a tensor under " + torch_pickle::describeKind(*k) + " instead of a string name");
        const std::string& name = k->s;
        if (!seen.insert(name).second)
            fail(path, "holds two tensors named '" + name + "'");
        const Value::TensorInfo& t = *v->tensor;
        const Value::StorageInfo& s = *t.storage->storage;
        const ElemInfo* elem = elemByName(s.dtype);
        if (!elem)
            fail(path, "tensor '" + name + "' has dtype " + s.dtype + ", which the workbench does not read");
        const std::string record = prefix + "data/" + s.key;
        if (!zip.has(record))
            fail(path,
                "tensor '" + name + "' needs storage '" + record + "', which the archive lacks");
        const uint64_t stored = zip.entrySize(record);
        uint64_t needed = 0;
        if (__builtin_mul_overflow(uint64_t(s.numel), uint64_t(elem->itemsize), &needed) || stored < needed)
            fail(path,
                "storage '" + s.key + "' of tensor '" + name + "' holds " + std::to_string(stored)
                    + " bytes, fewer than its " + std::to_string(s.numel) + " " + elem->name
                    + " elements need (truncated?)");
        const uint64_t numel = checkView(path, name, s.numel, *elem, t.offset, t.size, t.stride);
        ++uses[s.key];
        planned.push_back({ &name, &t, elem, record, numel });
        NamedArray header;
        header.name = name;
        header.shape = t.size;
        out.tensors.push_back(std::move(header));
        out.source_dtypes[name] = elem->name;
    }
    if (check)
        check(out);
    uint64_t floats = 0, cached = 0;
    std::unordered_set<std::string> cachedKeys;
    for (Planned& p : planned) {
        const Value::StorageInfo& s = *p.view->storage->storage;
        const uint64_t stored = zip.entrySize(p.record);
        p.direct = uses[s.key] == 1 && p.elem->type == ElemType::F32 && p.view->offset == 0
            && isContiguous(p.view->size, p.view->stride) && p.numel * 4 == stored;
        floats = checked::add(floats, checked::mul(p.numel, 4, path), path);
        if (!p.direct && cachedKeys.insert(s.key).second)
            cached = checked::add(cached, stored, path);
    }
    budget.charge(checked::add(floats, cached, path),
        "its " + std::to_string(planned.size()) + " tensors (" + formatBytes(floats) + " as float32"
            + (cached ? ", " + formatBytes(cached) + " of storages read whole" : std::string()) + ")");

    // Pass 2: the data.
    std::unordered_map<std::string, std::string> storages; // key -> bytes (storages viewed in part or shared)
    for (size_t i = 0; i < planned.size(); ++i) {
        const Planned& p = planned[i];
        std::vector<float>& data = out.tensors[i].data;
        data.resize(checked::toSize(p.numel, path));
        if (p.direct) {
            ZipEntry entry(zip, p.record);
            entry.read(data.data(), p.numel * 4);
            entry.finish();
            continue;
        }
        const Value::StorageInfo& s = *p.view->storage->storage;
        auto it = storages.find(s.key);
        if (it == storages.end())
            it = storages.emplace(s.key, zip.read(p.record, nullptr)).first; // charged above
        gather(bytesOf(it->second), *p.elem, false, p.view->offset, p.view->size, p.view->stride, p.numel,
            data.data());
    }
    return out;
}

// ---- safetensors -----------------------------------------------------------------------------------

const ElemInfo* safetensorsDtype(const std::string& dtype)
{
    static const std::pair<const char*, const char*> names[] = { { "F32", "float32" }, { "F16", "float16" },
        { "BF16", "bfloat16" }, { "F64", "float64" }, { "I64", "int64" }, { "I32", "int32" }, { "I16", "int16" },
        { "I8", "int8" }, { "U8", "uint8" }, { "BOOL", "bool" } };
    for (const auto& [st, ours] : names)
        if (dtype == st)
            return elemByName(ours);
    return nullptr;
}

WeightsFile readSafetensors(const std::string& path, uint64_t size, MemoryBudget& budget,
    const WeightsHeaderCheck& check)
{
    WeightsFile out;
    out.format = WeightsFormat::Safetensors;
    if (size < 8)
        fail(path, "too short (" + std::to_string(size) + " bytes) for a safetensors header length");
    const uint64_t n = loadUInt(bytesOf(readRange(path, 0, 8)), 8, false);
    if (n > kMaxSafetensorsHeader)
        fail(path, "safetensors header length " + std::to_string(n) + " exceeds the limit of 100000000 bytes");
    if (n > size - 8)
        fail(path,
            "safetensors header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size)
                + " bytes)");
    // The text, then nlohmann's tree of it: at most ~8 bytes of tree per byte of text ("[0,0,...]").
    budget.charge(checked::mul(n, 9, path), "its safetensors header of " + formatBytes(n) + " (text and parsed)");
    const nlohmann::ordered_json header
        = parseBoundedJson<nlohmann::ordered_json>(readRange(path, 8, n), path + ": safetensors header");
    if (!header.is_object())
        fail(path, "safetensors header is not a JSON object");
    const uint64_t data_size = size - 8 - n;
    const uint64_t data_start = 8 + n;

    struct Entry {
        std::string name;
        const ElemInfo* elem;
        std::vector<int64_t> shape;
        uint64_t begin, end, numel;
    };
    std::vector<Entry> entries;
    for (const auto& [name, info] : header.items()) {
        if (name == "__metadata__") {
            if (!info.is_object())
                fail(path, "safetensors __metadata__ is not an object");
            for (const auto& [key, value] : info.items()) {
                if (!value.is_string())
                    fail(path, "safetensors __metadata__ value of '" + key + "' is not a string");
                out.metadata[key] = value.get<std::string>();
            }
            continue;
        }
        const std::string what = "safetensors entry '" + name + "' ";
        if (!info.is_object())
            fail(path, what + "is not an object");
        if (!info.contains("dtype") || !info["dtype"].is_string())
            fail(path, what + "has no dtype");
        if (!info.contains("shape") || !info["shape"].is_array())
            fail(path, what + "has no shape");
        if (!info.contains("data_offsets") || !info["data_offsets"].is_array() || info["data_offsets"].size() != 2)
            fail(path, what + "has no data_offsets [begin, end]");
        Entry e;
        e.name = name;
        const std::string dtype = info["dtype"].get<std::string>();
        e.elem = safetensorsDtype(dtype);
        if (!e.elem)
            fail(path,
                what + "has dtype " + dtype
                    + ", which the workbench does not read (F32, F16, BF16, F64, I64, I32, I16, I8, U8, BOOL)");
        // JSON integers only: non-negative, and shapes within int64.
        const auto nonNegative = [](const nlohmann::ordered_json& v) {
            return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
        };
        if (info["shape"].size() > 64)
            fail(path, what + "has " + std::to_string(info["shape"].size()) + " dimensions (at most 64)");
        for (const auto& d : info["shape"]) {
            if (!nonNegative(d))
                fail(path, what + "has a shape entry that is not a non-negative integer");
            if (d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
                fail(path, what + "has a shape that overflows");
            e.shape.push_back(d.get<int64_t>());
        }
        for (const auto& o : info["data_offsets"])
            if (!nonNegative(o))
                fail(path, what + "has data_offsets that are not non-negative integers");
        e.begin = info["data_offsets"][0].get<uint64_t>();
        e.end = info["data_offsets"][1].get<uint64_t>();
        if (e.begin > e.end)
            fail(path,
                what + "has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end)
                    + "] with begin > end");
        if (e.end > data_size)
            fail(path,
                what + "has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end)
                    + "] past the end of the data (" + std::to_string(data_size) + " bytes)");
        uint64_t bytes = 0;
        try {
            e.numel = checked::elementCount(e.shape, what);
            bytes = checked::mul(e.numel, e.elem->itemsize, what);
        } catch (const Error&) {
            fail(path, what + "has a shape " + shapeText(e.shape) + " that overflows");
        }
        if (bytes != e.end - e.begin)
            fail(path,
                what + "has shape " + shapeText(e.shape) + " of " + dtype + " (" + std::to_string(bytes)
                    + " bytes) but data_offsets spanning " + std::to_string(e.end - e.begin) + " bytes");
        entries.push_back(std::move(e));
    }
    std::vector<const Entry*> byOffset;
    for (const Entry& e : entries)
        if (e.end > e.begin)
            byOffset.push_back(&e);
    std::sort(byOffset.begin(), byOffset.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
    for (size_t k = 1; k < byOffset.size(); ++k)
        if (byOffset[k]->begin < byOffset[k - 1]->end)
            fail(path,
                "safetensors entries '" + byOffset[k - 1]->name + "' and '" + byOffset[k]->name
                    + "' overlap");

    uint64_t floats = 0, scratch = 0;
    for (const Entry& e : entries) {
        NamedArray array;
        array.name = e.name;
        array.shape = e.shape;
        out.tensors.push_back(std::move(array));
        out.source_dtypes[e.name] = e.elem->name;
        floats = checked::add(floats, checked::mul(e.numel, 4, path), path);
        scratch = std::max(scratch, streamScratch(e.numel, *e.elem, false));
    }
    if (check)
        check(out);
    budget.charge(checked::add(floats, scratch, path),
        "its " + std::to_string(entries.size()) + " tensors (" + formatBytes(floats) + " as float32)");
    FileRange in(path, data_start);
    for (size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        std::vector<float>& data = out.tensors[i].data;
        data.resize(checked::toSize(e.numel, path));
        in.seek(data_start + e.begin);
        decodeStream(in, e.numel, *e.elem, false, data.data());
    }
    return out;
}

// ---- NumPy -----------------------------------------------------------------------------------------

// The header of a .npy file: a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
struct NpyHeader {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
};

class NpyHeaderParser {
public:
    NpyHeaderParser(const std::string& text, const std::string& where)
        : m_text(text)
        , m_where(where)
    {
    }

    NpyHeader parse()
    {
        NpyHeader h;
        bool have_descr = false, have_order = false, have_shape = false;
        expect('{');
        while (true) {
            skip();
            if (peek() == '}') {
                ++m_pos;
                break;
            }
            const std::string key = parseString();
            expect(':');
            skip();
            if (key == "descr") {
                if (peek() != '\'' && peek() != '"')
                    bad("a structured dtype (descr is not a string), which the workbench does not read");
                h.descr = parseString();
                have_descr = true;
            } else if (key == "fortran_order") {
                h.fortran_order = parseBool();
                have_order = true;
            } else if (key == "shape") {
                h.shape = parseShape();
                have_shape = true;
            } else {
                bad("unknown header key '" + key + "'");
            }
            skip();
            if (peek() == ',') {
                ++m_pos;
                continue;
            }
            expect('}');
            break;
        }
        if (!have_descr || !have_order || !have_shape)
            bad("the header lacks descr, fortran_order or shape");
        return h;
    }

private:
    [[noreturn]] void bad(const std::string& what) const { throw Error(m_where + ": .npy header: " + what); }
    void skip()
    {
        while (m_pos < m_text.size() && std::isspace(uint8_t(m_text[m_pos])))
            ++m_pos;
    }
    char peek() const { return m_pos < m_text.size() ? m_text[m_pos] : '\0'; }
    void expect(char c)
    {
        skip();
        if (peek() != c)
            bad(std::string("expected '") + c + "' at character " + std::to_string(m_pos));
        ++m_pos;
    }
    std::string parseString()
    {
        skip();
        const char quote = peek();
        if (quote != '\'' && quote != '"')
            bad("expected a string at character " + std::to_string(m_pos));
        const size_t end = m_text.find(quote, m_pos + 1);
        if (end == std::string::npos)
            bad("an unterminated string");
        std::string s = m_text.substr(m_pos + 1, end - m_pos - 1);
        m_pos = end + 1;
        return s;
    }
    bool parseBool()
    {
        if (m_text.compare(m_pos, 4, "True") == 0) {
            m_pos += 4;
            return true;
        }
        if (m_text.compare(m_pos, 5, "False") == 0) {
            m_pos += 5;
            return false;
        }
        bad("fortran_order is neither True nor False");
    }
    std::vector<int64_t> parseShape()
    {
        std::vector<int64_t> shape;
        expect('(');
        while (true) {
            skip();
            if (peek() == ')') {
                ++m_pos;
                return shape;
            }
            if (!std::isdigit(uint8_t(peek())))
                bad("a shape entry that is not a non-negative integer");
            int64_t v = 0;
            while (std::isdigit(uint8_t(peek()))) {
                if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, peek() - '0', &v))
                    bad("a shape entry that overflows");
                ++m_pos;
            }
            if (peek() == 'L') // Python 2 long
                ++m_pos;
            shape.push_back(v);
            if (shape.size() > 64)
                bad("more than 64 dimensions");
            skip();
            if (peek() == ',')
                ++m_pos;
            else if (peek() != ')')
                bad("expected ',' or ')' in the shape");
        }
    }

    const std::string& m_text;
    const std::string& m_where;
    size_t m_pos = 0;
};

/// Where an .npy array's data is and how to read it, from its preamble and header.
struct NpyLayout {
    const ElemInfo* elem = nullptr;
    bool big_endian = false;
    bool fortran_order = false;
    std::vector<int64_t> shape;
    uint64_t numel = 0;
    uint64_t data_start = 0; ///< bytes before the data (magic, version, header length, header)
};

/// Reads and checks the preamble and header of an .npy array of `total` bytes from `in` (positioned at its first
/// byte; left at its data). `where` names it in messages ("FILE" or "FILE: entry"). The data must be exactly what
/// the shape and dtype need.
NpyLayout readNpyHeader(const std::string& where, ByteReader& in, uint64_t total)
{
    if (total < 10)
        throw Error(where + ": not a .npy array (no \\x93NUMPY magic)");
    std::string pre(10, '\0');
    in.read(pre.data(), 10);
    if (!isNpyMagic(pre))
        throw Error(where + ": not a .npy array (no \\x93NUMPY magic)");
    const uint8_t major = uint8_t(pre[6]);
    uint64_t header_len = 0, header_start = 0;
    if (major == 1) {
        header_len = loadUInt(bytesOf(pre) + 8, 2, false);
        header_start = 10;
    } else if (major == 2 || major == 3) {
        if (total < 12)
            throw Error(where + ": .npy header is truncated");
        std::string rest(2, '\0');
        in.read(rest.data(), 2);
        header_len = loadUInt(bytesOf(pre + rest) + 8, 4, false);
        header_start = 12;
    } else {
        throw Error(where + ": .npy version " + std::to_string(major) + "." + std::to_string(uint8_t(pre[7]))
            + " (the workbench reads 1.0, 2.0 and 3.0)");
    }
    if (header_len > total - header_start)
        throw Error(where + ": .npy header length " + std::to_string(header_len) + " runs past the end");
    if (header_len > kMaxNpyHeader)
        throw Error(where + ": .npy header of " + std::to_string(header_len) + " bytes (at most "
            + std::to_string(kMaxNpyHeader) + ")");
    std::string text(size_t(header_len), '\0');
    in.read(text.data(), header_len);
    const NpyHeader h = NpyHeaderParser(text, where).parse();

    // descr: byte order ('<', '>', '|', '=') and type code.
    if (h.descr.size() < 3)
        throw Error(where + ": .npy dtype '" + h.descr + "' is not understood");
    const char order = h.descr[0];
    const std::string code = h.descr.substr(1);
    static const std::pair<const char*, const char*> codes[]
        = { { "f4", "float32" }, { "f2", "float16" }, { "f8", "float64" }, { "b1", "bool" }, { "u1", "uint8" },
              { "i1", "int8" }, { "i2", "int16" }, { "i4", "int32" }, { "i8", "int64" } };
    NpyLayout layout;
    for (const auto& [c, ours] : codes)
        if (code == c)
            layout.elem = elemByName(ours);
    if (!layout.elem || (order != '<' && order != '>' && order != '|' && order != '='))
        throw Error(where + ": .npy dtype '" + h.descr
            + "' is not read by the workbench (float16/32/64, int8/16/32/64, uint8, bool)");
    layout.big_endian = order == '>' && layout.elem->itemsize > 1;
    layout.fortran_order = h.fortran_order;
    layout.shape = h.shape;
    uint64_t needed = 0;
    try {
        layout.numel = checked::elementCount(h.shape, where);
        needed = checked::mul(layout.numel, layout.elem->itemsize, where);
    } catch (const Error&) {
        throw Error(where + ": .npy shape " + shapeText(h.shape) + " overflows");
    }
    layout.data_start = header_start + header_len;
    const uint64_t held = total - layout.data_start;
    if (needed != held)
        throw Error(where + ": .npy data holds " + std::to_string(held) + " bytes, its shape " + shapeText(h.shape)
            + " of " + h.descr + " needs " + std::to_string(needed) + (needed > held ? " (truncated?)" : ""));
    return layout;
}

/// Bytes readNpyData allocates besides the float32 output: a Fortran-order array is read whole and transposed,
/// anything else converted through decodeStream's scratch.
uint64_t npyScratch(const NpyLayout& layout)
{
    return layout.fortran_order && layout.shape.size() > 1 ? layout.numel * layout.elem->itemsize
                                                           : streamScratch(layout.numel, *layout.elem, layout.big_endian);
}

/// Reads the data of an .npy array (`in` positioned at it) into `out` (layout.numel floats), row-major.
void readNpyData(ByteReader& in, const NpyLayout& layout, float* out)
{
    if (!(layout.fortran_order && layout.shape.size() > 1)) {
        decodeStream(in, layout.numel, *layout.elem, layout.big_endian, out);
        return;
    }
    // Column-major: strides in elements 1, shape[0], shape[0]·shape[1], …
    std::vector<int64_t> stride(layout.shape.size(), 1);
    for (size_t d = 1; d < layout.shape.size(); ++d)
        stride[d] = stride[d - 1] * std::max<int64_t>(layout.shape[d - 1], 1);
    std::vector<uint8_t> bytes(size_t(layout.numel * layout.elem->itemsize));
    in.read(bytes.data(), bytes.size());
    gather(bytes.data(), *layout.elem, layout.big_endian, 0, layout.shape, stride, layout.numel, out);
}

WeightsFile readNpy(const std::string& path, uint64_t size, MemoryBudget& budget, const WeightsHeaderCheck& check)
{
    WeightsFile out;
    out.format = WeightsFormat::Npy;
    const std::string name = std::filesystem::path(path).stem().string();
    FileRange in(path, 0);
    const NpyLayout layout = readNpyHeader(path, in, size);
    NamedArray array;
    array.name = name;
    array.shape = layout.shape;
    out.tensors.push_back(std::move(array));
    out.source_dtypes[name] = layout.elem->name;
    if (check)
        check(out);
    budget.charge(checked::add(checked::mul(layout.numel, 4, path), npyScratch(layout), path),
        "its tensor '" + name + "' " + shapeText(layout.shape) + " as float32");
    out.tensors[0].data.resize(checked::toSize(layout.numel, path));
    readNpyData(in, layout, out.tensors[0].data.data());
    return out;
}

WeightsFile readNpz(const std::string& path, const ZipReader& zip, MemoryBudget& budget,
    const WeightsHeaderCheck& check)
{
    WeightsFile out;
    out.format = WeightsFormat::Npz;
    // Pass 1: each array's header (only the first bytes of each entry are inflated).
    std::vector<std::pair<std::string, NpyLayout>> arrays; // entry, layout
    std::unordered_set<std::string> seen;
    uint64_t floats = 0, scratch = 0;
    for (const std::string& entry : zip.names()) {
        if (!endsWith(entry, ".npy"))
            continue;
        const std::string name = entry.substr(0, entry.size() - 4);
        if (!seen.insert(name).second)
            fail(path, "holds two arrays named '" + name + "'");
        ZipEntry stream(zip, entry);
        const NpyLayout layout = readNpyHeader(path + ": " + entry, stream, stream.size());
        NamedArray array;
        array.name = name;
        array.shape = layout.shape;
        out.tensors.push_back(std::move(array));
        out.source_dtypes[name] = layout.elem->name;
        floats = checked::add(floats, checked::mul(layout.numel, 4, path), path);
        scratch = std::max(scratch, npyScratch(layout));
        arrays.emplace_back(entry, layout);
    }
    if (check)
        check(out);
    budget.charge(checked::add(floats, scratch, path),
        "its " + std::to_string(arrays.size()) + " arrays (" + formatBytes(floats) + " as float32)");
    // Pass 2: the data, inflated as it is converted.
    for (size_t i = 0; i < arrays.size(); ++i) {
        const auto& [entry, layout] = arrays[i];
        ZipEntry stream(zip, entry);
        std::string skipped(size_t(layout.data_start), '\0');
        stream.read(skipped.data(), skipped.size());
        std::vector<float>& data = out.tensors[i].data;
        data.resize(checked::toSize(layout.numel, path));
        readNpyData(stream, layout, data.data());
        stream.finish();
    }
    return out;
}

// ---- writers ---------------------------------------------------------------------------------------

void checkTensors(const std::string& path, const std::vector<NamedArray>& tensors)
{
    std::unordered_set<std::string> seen;
    for (const NamedArray& t : tensors) {
        uint64_t numel = 0;
        bool valid = true;
        try {
            numel = checked::elementCount(t.shape, t.name);
        } catch (const Error&) {
            valid = false;
        }
        if (!valid || numel != t.data.size())
            fail(path,
                "cannot write tensor '" + t.name + "': shape " + shapeText(t.shape) + " does not match its "
                    + std::to_string(t.data.size()) + " values");
        if (!seen.insert(t.name).second)
            fail(path, "cannot write two tensors named '" + t.name + "'");
    }
}

std::vector<int64_t> contiguousStride(const std::vector<int64_t>& shape)
{
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
        stride[d - 1] = stride[d] * std::max<int64_t>(shape[d], 1);
    return stride;
}

// Little-endian float32 bytes of `data` (a view of the vector on little-endian hosts, else a copy).
const void* littleEndianFloats(const std::vector<float>& data, std::vector<uint8_t>& scratch)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    (void)scratch;
    return data.data();
#else
    scratch.resize(data.size() * 4);
    for (size_t k = 0; k < data.size(); ++k) {
        uint32_t u;
        std::memcpy(&u, &data[k], 4);
        for (int b = 0; b < 4; ++b)
            scratch[4 * k + b] = uint8_t(u >> (8 * b));
    }
    return scratch.data();
#endif
}

class ZipWriter {
public:
    ZipWriter(const std::string& path, const std::string& tmp)
        : m_path(path)
    {
        int code = 0;
        m_zip = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
        if (!m_zip) {
            zip_error_t error;
            zip_error_init_with_code(&error, code);
            const std::string message = zip_error_strerror(&error);
            zip_error_fini(&error);
            fail(path, "cannot be written: " + message);
        }
    }
    ~ZipWriter()
    {
        if (m_zip)
            zip_discard(m_zip);
    }
    ZipWriter(const ZipWriter&) = delete;
    ZipWriter& operator=(const ZipWriter&) = delete;

    /// Adds an uncompressed entry; `data` must stay valid until close().
    void add(const std::string& name, const void* data, size_t size)
    {
        zip_source_t* source = zip_source_buffer(m_zip, data, size, 0);
        if (!source)
            fail(m_path, "cannot be written: " + std::string(zip_strerror(m_zip)));
        const zip_int64_t index = zip_file_add(m_zip, name.c_str(), source, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
        if (index < 0) {
            zip_source_free(source);
            fail(m_path, "cannot be written: " + std::string(zip_strerror(m_zip)));
        }
        if (zip_set_file_compression(m_zip, zip_uint64_t(index), ZIP_CM_STORE, 0) != 0)
            fail(m_path, "cannot be written: " + std::string(zip_strerror(m_zip)));
    }

    void close()
    {
        if (zip_close(m_zip) != 0)
            fail(m_path, "cannot be written: " + std::string(zip_strerror(m_zip))); // destructor discards
        m_zip = nullptr;
    }

private:
    std::string m_path;
    zip_t* m_zip = nullptr;
};

} // namespace

std::string weightsFormatName(WeightsFormat format)
{
    switch (format) {
    case WeightsFormat::TorchZip:
        return "pytorch-zip";
    case WeightsFormat::Safetensors:
        return "safetensors";
    case WeightsFormat::Npz:
        return "npz";
    case WeightsFormat::Npy:
        return "npy";
    case WeightsFormat::TorchScript:
        return "torchscript";
    case WeightsFormat::TorchLegacy:
        return "pytorch-legacy";
    case WeightsFormat::Unknown:
        return "unknown";
    }
    return "unknown";
}

WeightsFormat detectWeightsFormat(const std::string& path)
{
    const uint64_t size = fileSize(path);
    const std::string head = readRange(path, 0, std::min<uint64_t>(size, 64));
    if (isZipMagic(head)) {
        const ZipReader zip(path, size);
        return zip.ok() ? zipFormat(zip.names(), nullptr) : WeightsFormat::Unknown;
    }
    return formatFromHead(head, size);
}

namespace {

WeightsFile readWeightsFileUnchecked(const std::string& path, MemoryBudget& budget, const WeightsHeaderCheck& check)
{
    const uint64_t size = fileSize(path);
    if (size == 0)
        fail(path, "is empty, not a weights file");
    const std::string head = readRange(path, 0, std::min<uint64_t>(size, 64));
    const std::string convert = "python3 -c \"import torch; torch.save(";
    if (isZipMagic(head)) {
        const ZipReader zip(path, size);
        if (!zip.ok())
            fail(path, "is a truncated or damaged zip archive (" + zip.openError() + ")");
        std::string prefix;
        switch (zipFormat(zip.names(), &prefix)) {
        case WeightsFormat::TorchZip:
            return readTorchZip(path, zip, prefix, budget, check);
        case WeightsFormat::Npz:
            return readNpz(path, zip, budget, check);
        case WeightsFormat::TorchScript:
            fail(path,
                "is a TorchScript archive (torch.jit.save), not a state dict; convert it with: " + convert
                    + "torch.jit.load(" + pythonQuoted(path) + ").state_dict(), "
                    + pythonQuoted(path + ".state_dict.pt") + ")\"");
        default:
            fail(path, "is a zip archive with neither a data.pkl (PyTorch) nor .npy entries (NumPy .npz)");
        }
    }
    switch (formatFromHead(head, size)) {
    case WeightsFormat::Npy:
        return readNpy(path, size, budget, check);
    case WeightsFormat::TorchLegacy:
        fail(path,
            "is a legacy PyTorch file (torch.save before PyTorch 1.6, not a zip archive), which the "
            "workbench does not read; convert it with: "
                + convert + "torch.load(" + pythonQuoted(path) + "), " + pythonQuoted(path + ".zip.pt") + ")\"");
    case WeightsFormat::Safetensors:
        return readSafetensors(path, size, budget, check);
    default:
        break;
    }
    if (size >= 9 && head[8] == '{') // looks like safetensors whose header length lies
        return readSafetensors(path, size, budget, check);
    if (size < 8)
        fail(path, "is too short (" + std::to_string(size) + " bytes) to be a weights file");
    fail(path, "is not a weights file the workbench reads (PyTorch zip, safetensors, .npz, .npy)");
}

} // namespace

WeightsFile readWeightsFile(const std::string& path)
{
    MemoryBudget budget(path);
    return readWeightsFile(path, budget);
}

WeightsFile readWeightsFile(const std::string& path, MemoryBudget& budget, const WeightsHeaderCheck& check)
{
    try {
        return readWeightsFileUnchecked(path, budget, check);
    } catch (const std::bad_alloc&) {
        // The budget is checked before each allocation a file's contents size; this is the machine running out
        // below it (another process, a budget above the free memory).
        throw Error(path + ": refused: the memory to read it could not be allocated (" + formatBytes(budget.used())
                    + " in use of a budget of " + formatBytes(budget.limit()) + "; --max-memory or ICL_MAX_MEMORY)");
    }
}

void writeSafetensors(
    const std::string& path, const std::vector<NamedArray>& tensors, const std::map<std::string, std::string>& metadata)
{
    checkTensors(path, tensors);
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty())
        header["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const NamedArray& t : tensors) {
        if (t.name == "__metadata__")
            fail(path, "cannot write a tensor named '__metadata__'");
        const uint64_t bytes = uint64_t(t.data.size()) * 4;
        header[t.name] = { { "dtype", "F32" }, { "shape", t.shape }, { "data_offsets", { offset, offset + bytes } } };
        offset += bytes;
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::json::exception& e) {
        fail(path, std::string("cannot be written: a name or metadata entry is not valid UTF-8 (") + e.what() + ")");
    }
    text.append((8 - text.size() % 8) % 8, ' '); // as the reference implementation: data starts 8-aligned

    AtomicOutput output(path);
    {
        std::ofstream out(output.tmp(), std::ios::binary | std::ios::trunc);
        if (!out)
            fail(path, "cannot be written (cannot create " + output.tmp() + ")");
        uint8_t length[8];
        for (int k = 0; k < 8; ++k)
            length[k] = uint8_t(uint64_t(text.size()) >> (8 * k));
        out.write(reinterpret_cast<const char*>(length), 8);
        out.write(text.data(), std::streamsize(text.size()));
        std::vector<uint8_t> scratch;
        for (const NamedArray& t : tensors)
            out.write(
                static_cast<const char*>(littleEndianFloats(t.data, scratch)), std::streamsize(t.data.size() * 4));
        out.close();
        if (!out)
            fail(path, "cannot be written (disk full?)");
    }
    output.commit();
}

void writeTorchZip(
    const std::string& path, const std::vector<NamedArray>& tensors, const std::map<std::string, std::string>& metadata)
{
    checkTensors(path, tensors);
    if (metadata.count("state_dict"))
        fail(path, "cannot write metadata named 'state_dict' (the key of the state dict itself)");

    // data.pkl, as torch.save writes it: memo 0 = OrderedDict, 1 = _rebuild_tensor_v2, 2 = FloatStorage.
    torch_pickle::PickleWriter w;
    try {
        if (!metadata.empty()) {
            w.emptyDict();
            w.mark();
            w.string("state_dict");
        }
        w.global("collections", "OrderedDict");
        w.put(0);
        w.emptyTuple();
        w.reduce();
        w.mark();
        for (size_t i = 0; i < tensors.size(); ++i) {
            const NamedArray& t = tensors[i];
            w.string(t.name);
            if (i == 0) {
                w.global("torch._utils", "_rebuild_tensor_v2");
                w.put(1);
            } else {
                w.get(1);
            }
            w.mark();
            w.mark(); // persistent id ('storage', torch.FloatStorage, key, 'cpu', numel)
            w.string("storage");
            if (i == 0) {
                w.global("torch", "FloatStorage");
                w.put(2);
            } else {
                w.get(2);
            }
            w.string(std::to_string(i));
            w.string("cpu");
            w.integer(int64_t(t.data.size()));
            w.tuple();
            w.binpersid();
            w.integer(0); // storage offset
            w.intTuple(t.shape);
            w.intTuple(contiguousStride(t.shape));
            w.boolean(false); // requires_grad
            w.get(0); // backward_hooks = OrderedDict()
            w.emptyTuple();
            w.reduce();
            w.tuple();
            w.reduce();
        }
        w.setitems();
        if (!metadata.empty()) {
            for (const auto& [key, value] : metadata) {
                w.string(key);
                w.string(value);
            }
            w.setitems();
        }
        w.stop();
    } catch (const Error& e) {
        fail(path, std::string("cannot be written: ") + e.what());
    }

    AtomicOutput output(path);
    {
        ZipWriter zip(path, output.tmp());
        static const char kByteOrder[] = "little";
        static const char kVersion[] = "3\n";
        zip.add("archive/data.pkl", w.bytes().data(), w.bytes().size());
        zip.add("archive/byteorder", kByteOrder, sizeof kByteOrder - 1);
        std::vector<std::vector<uint8_t>> scratch(tensors.size());
        for (size_t i = 0; i < tensors.size(); ++i)
            zip.add("archive/data/" + std::to_string(i), littleEndianFloats(tensors[i].data, scratch[i]),
                tensors[i].data.size() * 4);
        zip.add("archive/version", kVersion, sizeof kVersion - 1);
        zip.close();
    }
    output.commit();
}

} // namespace icl
