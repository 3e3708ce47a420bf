#pragma once
// Checksums of the experiment file (format version 2; see docs/file-integrity.md). Core-internal:
// includes hdf5.h, so only core .cpp files include it.
//
// Every object that matters carries a SHA-256 that readers recompute from what they read:
//   - groups (/, /config, /checkpoints/<step>, /analysis/<kind>/<id>, /import, /task) are *sealed*:
//     attribute `sha256` = attributeDigest(group), over all of the group's other attributes;
//   - a checkpoint's and /task's datasets are listed in the group's `manifest` attribute (JSON:
//     "params/<name>" -> arrayDigest), so the seal covers them, their names and their shapes;
//   - each /metrics/<series> dataset has its own `sha256` attribute (seriesDigest);
//   - streamed activation captures use HDF5's Fletcher-32 filter (checked by HDF5 on every read).
// Thread affinity: callers hold the experiment file's HDF5 mutex.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>

namespace icl::checksums {

/// Name of the digest attribute (lower-case hex SHA-256, 64 characters).
inline constexpr const char* kDigestAttr = "sha256";

/// Incremental SHA-256 (OpenSSL) with a canonical little-endian encoding of numbers and
/// length-prefixed strings, so different contents never hash the same byte stream.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    Sha256& bytes(const void* data, size_t n);
    Sha256& u64(uint64_t v);
    Sha256& f64(double v);
    Sha256& str(const std::string& s);
    /// Lower-case hex digest; the object cannot be updated afterwards.
    std::string hex();

private:
    void* m_ctx = nullptr;
};

/// Digest of a float32 array under `key` (e.g. "params/blocks.0.attn.w_q"): key, shape, values.
std::string arrayDigest(const std::string& key, const std::vector<int64_t>& shape, const float* data, size_t count);
/// Digest of a metric series (name and every value, NaN bit patterns included).
std::string seriesDigest(const std::string& name, const std::vector<double>& values);
/// Digest of one named scalar (an optimizer scalar such as "blocks.0.attn.w_q/step").
std::string scalarDigest(const std::string& key, double value);

/// SHA-256 over every attribute of `obj` except `sha256`, in name order: strings by their bytes,
/// integers as int64, floats as double. Throws icl::Error("unreadable attribute NAME") when one
/// cannot be read.
std::string attributeDigest(hid_t obj);

/// The stored `sha256` attribute of `obj`, or "" when it has none. Throws icl::Error when unreadable.
std::string storedDigest(hid_t obj);

/// Seals `obj`: writes (or replaces) `sha256` = attributeDigest(obj). Call after its last attribute.
void seal(hid_t obj);

/// Writes (or replaces) the `sha256` attribute of `obj` with `digest` (a dataset's own digest).
void writeDigest(hid_t obj, const std::string& digest);

/// Writes (or replaces) a string attribute as a fixed-length UTF-8 string. Fixed-length strings live in the
/// object header, which HDF5 checksums (file format 1.8); variable-length ones live in the global heap, which
/// has no checksum and whose damage can crash HDF5 itself, so format version 2 writes none.
void writeStringAttribute(hid_t obj, const std::string& name, const std::string& value);

/// Reads a string attribute (fixed-length or variable-length): one string of at most 256 MiB, checked before it
/// is read (h5read::stringAttribute). Throws icl::Error when unreadable, an array, not a string or too long.
std::string readStringAttribute(hid_t obj, const std::string& name);

} // namespace icl::checksums
