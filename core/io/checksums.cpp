#include "core/io/checksums.h"

#include <algorithm>
#include <cstring>

#include <openssl/evp.h>

#include "core/error.h"
#include "core/io/hdf5_read.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the checksum encoding hashes float arrays in memory order, which must be little-endian"
#endif

namespace icl::checksums {

namespace {

// Most elements of one numeric attribute hashed by attributeDigest (512 KiB as doubles).
constexpr hssize_t kMaxHashedElements = 1 << 16;

EVP_MD_CTX* ctx(void* p)
{
    return static_cast<EVP_MD_CTX*>(p);
}

// Closes an HDF5 identifier at scope exit.
struct Closer {
    hid_t id;
    herr_t (*close)(hid_t);
    ~Closer()
    {
        if (id >= 0)
            close(id);
    }
};

} // namespace

Sha256::Sha256()
{
    EVP_MD_CTX* c = EVP_MD_CTX_new();
    if (!c || EVP_DigestInit_ex(c, EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(c);
        throw Error("SHA-256 is not available (OpenSSL)");
    }
    m_ctx = c;
}

Sha256::~Sha256()
{
    EVP_MD_CTX_free(ctx(m_ctx));
}

Sha256& Sha256::bytes(const void* data, size_t n)
{
    if (n)
        EVP_DigestUpdate(ctx(m_ctx), data, n);
    return *this;
}

Sha256& Sha256::u64(uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; ++i)
        b[i] = static_cast<unsigned char>(v >> (8 * i));
    return bytes(b, 8);
}

Sha256& Sha256::f64(double v)
{
    uint64_t u = 0;
    std::memcpy(&u, &v, sizeof u);
    return u64(u);
}

Sha256& Sha256::str(const std::string& s)
{
    u64(s.size());
    return bytes(s.data(), s.size());
}

std::string Sha256::hex()
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx(m_ctx), out, &len);
    static const char* digits = "0123456789abcdef";
    std::string h;
    h.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        h.push_back(digits[out[i] >> 4]);
        h.push_back(digits[out[i] & 15]);
    }
    return h;
}

std::string arrayDigest(const std::string& key, const std::vector<int64_t>& shape, const float* data, size_t count)
{
    Sha256 h;
    h.str("array").str(key).u64(shape.size());
    for (int64_t n : shape)
        h.u64(static_cast<uint64_t>(n));
    h.u64(count).bytes(data, count * sizeof(float));
    return h.hex();
}

std::string seriesDigest(const std::string& name, const std::vector<double>& values)
{
    Sha256 h;
    h.str("series").str(name).u64(values.size()).bytes(values.data(), values.size() * sizeof(double));
    return h.hex();
}

std::string scalarDigest(const std::string& key, double value)
{
    Sha256 h;
    h.str("scalar").str(key).f64(value);
    return h.hex();
}

void writeStringAttribute(hid_t obj, const std::string& name, const std::string& value)
{
    if (H5Aexists(obj, name.c_str()) > 0)
        H5Adelete(obj, name.c_str());
    Closer type{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(type.id, std::max<size_t>(1, value.size()));
    H5Tset_strpad(type.id, H5T_STR_NULLPAD);
    H5Tset_cset(type.id, H5T_CSET_UTF8);
    Closer space{H5Screate(H5S_SCALAR), H5Sclose};
    Closer attr{H5Acreate2(obj, name.c_str(), type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    std::string padded = value;
    padded.resize(std::max<size_t>(1, value.size()), '\0');
    if (attr.id < 0 || H5Awrite(attr.id, type.id, padded.data()) < 0)
        throw Error("cannot write attribute " + name);
}

std::string readStringAttribute(hid_t obj, const std::string& name)
{
    return h5read::stringAttribute(obj, name, h5read::kMaxStringBytes);
}

std::string attributeDigest(hid_t obj)
{
    std::vector<std::string> names;
    const herr_t status = H5Aiterate2(
        obj, H5_INDEX_NAME, H5_ITER_INC, nullptr,
        [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
            static_cast<std::vector<std::string>*>(data)->push_back(name);
            return 0;
        },
        &names);
    if (status < 0)
        throw Error("unreadable attributes");
    std::sort(names.begin(), names.end());
    Sha256 h;
    h.str("attributes");
    for (const std::string& name : names) {
        if (name == kDigestAttr)
            continue;
        h.str(name);
        Closer attr{H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose};
        if (attr.id < 0)
            throw Error("unreadable attribute " + name);
        Closer type{H5Aget_type(attr.id), H5Tclose};
        Closer space{H5Aget_space(attr.id), H5Sclose};
        // The workbench's own numeric attributes are scalars; an array is hashed only when small (the element
        // count is HDF5's product of the declared dims, checked before anything is allocated).
        const hssize_t n = space.id < 0 ? -1 : H5Sget_simple_extent_npoints(space.id);
        if (type.id < 0 || n < 0 || n > kMaxHashedElements)
            throw Error("unreadable attribute " + name);
        switch (H5Tget_class(type.id)) {
        case H5T_STRING:
            h.str("s").str(readStringAttribute(obj, name));
            break;
        case H5T_INTEGER: {
            std::vector<int64_t> v(static_cast<size_t>(n));
            if (n && H5Aread(attr.id, H5T_NATIVE_INT64, v.data()) < 0)
                throw Error("unreadable attribute " + name);
            h.str("i").u64(v.size());
            for (int64_t x : v)
                h.u64(static_cast<uint64_t>(x));
            break;
        }
        case H5T_FLOAT: {
            std::vector<double> v(static_cast<size_t>(n));
            if (n && H5Aread(attr.id, H5T_NATIVE_DOUBLE, v.data()) < 0)
                throw Error("unreadable attribute " + name);
            h.str("f").u64(v.size());
            for (double x : v)
                h.f64(x);
            break;
        }
        default:
            h.str("other").u64(static_cast<uint64_t>(H5Tget_class(type.id)));
            break;
        }
    }
    return h.hex();
}

std::string storedDigest(hid_t obj)
{
    const htri_t exists = H5Aexists(obj, kDigestAttr);
    if (exists < 0)
        throw Error("unreadable attributes");
    if (exists == 0)
        return "";
    return readStringAttribute(obj, kDigestAttr);
}

void seal(hid_t obj)
{
    writeDigest(obj, attributeDigest(obj));
}

void writeDigest(hid_t obj, const std::string& digest)
{
    if (H5Aexists(obj, kDigestAttr) > 0) {
        // In place when the stored one has the same type (every commit seals the root again).
        Closer attr{H5Aopen(obj, kDigestAttr, H5P_DEFAULT), H5Aclose};
        Closer type{attr.id < 0 ? -1 : H5Aget_type(attr.id), H5Tclose};
        Closer space{attr.id < 0 ? -1 : H5Aget_space(attr.id), H5Sclose};
        if (type.id >= 0 && space.id >= 0 && H5Tget_class(type.id) == H5T_STRING && H5Tis_variable_str(type.id) == 0
            && H5Tget_size(type.id) == digest.size() && H5Sget_simple_extent_type(space.id) == H5S_SCALAR) {
            if (H5Awrite(attr.id, type.id, digest.data()) < 0)
                throw Error("cannot write attribute sha256");
            return;
        }
    }
    if (H5Aexists(obj, kDigestAttr) > 0)
        H5Adelete(obj, kDigestAttr);
    // Fixed-length, so the digest lives in the object header (itself checksummed by HDF5).
    Closer type{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(type.id, digest.size());
    Closer space{H5Screate(H5S_SCALAR), H5Sclose};
    Closer attr{H5Acreate2(obj, kDigestAttr, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    if (attr.id < 0 || H5Awrite(attr.id, type.id, digest.data()) < 0)
        throw Error("cannot write attribute sha256");
}

} // namespace icl::checksums
