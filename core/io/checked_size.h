#pragma once
// Torch-free. Overflow-checked element counts and byte sizes for shapes, strides and offsets read from a
// file: every size product that comes from a file's contents goes through these (docs/security.md).
// Each throws icl::Error "<what>: …" instead of wrapping around. Thread affinity: any thread.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"

namespace icl::checked {

/// a · b, or throws icl::Error "<what>: size overflows 64 bits".
inline uint64_t mul(uint64_t a, uint64_t b, const std::string& what)
{
    uint64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        throw Error(what + ": size overflows 64 bits");
    return r;
}

/// a + b, or throws icl::Error "<what>: size overflows 64 bits".
inline uint64_t add(uint64_t a, uint64_t b, const std::string& what)
{
    uint64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        throw Error(what + ": size overflows 64 bits");
    return r;
}

/// Number of elements of an array of `shape`; throws for a negative dimension or an overflow.
inline uint64_t elementCount(const std::vector<int64_t>& shape, const std::string& what)
{
    uint64_t n = 1;
    for (const int64_t d : shape) {
        if (d < 0)
            throw Error(what + ": negative dimension " + std::to_string(d));
        n = mul(n, static_cast<uint64_t>(d), what);
    }
    return n;
}

/// Bytes of an array of `shape` with elements of `element_bytes`; throws for a negative dimension or an overflow.
inline uint64_t byteSize(const std::vector<int64_t>& shape, uint64_t element_bytes, const std::string& what)
{
    return mul(elementCount(shape, what), element_bytes, what);
}

/// Elements of the storage a strided view reads: offset + Σ (size_i − 1)·stride_i + 1 (0 for an empty view).
/// Throws for negative sizes, strides or offset, mismatched ranks, or an overflow.
inline uint64_t stridedExtent(const std::vector<int64_t>& size, const std::vector<int64_t>& stride, int64_t offset,
                              const std::string& what)
{
    if (size.size() != stride.size())
        throw Error(what + ": " + std::to_string(size.size()) + " sizes but " + std::to_string(stride.size())
                    + " strides");
    if (offset < 0)
        throw Error(what + ": negative storage offset " + std::to_string(offset));
    uint64_t last = static_cast<uint64_t>(offset);
    for (size_t i = 0; i < size.size(); ++i) {
        if (size[i] < 0 || stride[i] < 0)
            throw Error(what + ": negative size or stride");
        if (size[i] == 0)
            return 0;
        last = add(last, mul(static_cast<uint64_t>(size[i] - 1), static_cast<uint64_t>(stride[i]), what), what);
    }
    return add(last, 1, what);
}

/// `value` as a size_t (the type allocations take); throws where it does not fit.
inline size_t toSize(uint64_t value, const std::string& what)
{
    if (value > std::numeric_limits<size_t>::max())
        throw Error(what + ": size does not fit this machine's address space");
    return static_cast<size_t>(value);
}

} // namespace icl::checked
