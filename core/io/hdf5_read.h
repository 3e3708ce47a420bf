#pragma once
// Checked reads of HDF5 attributes and datasets from a file that may be hostile (docs/security.md,
// docs/file-integrity.md "Reading only what was checked"). Core-internal: includes hdf5.h, so only core .cpp
// files include it. Every reader of the experiment file reads through these: before HDF5 copies anything, type
// class, element count (overflow-checked, core/io/checked_size.h), rank and byte size are checked against what
// the caller expects and charged to the open's MemoryBudget (core/io/memory_budget.h).
//
// Errors: Refused (an icl::Error whose message is only the reason, "attribute 'format_version' holds 64
// values, expected one number": callers prefix the file and object) and, from the budget, an icl::Error that
// is already a full line ("RUN.h5: refused: … would need 4.00 PB, over the memory budget of …"), thrown as
// OverBudget so callers pass it on unchanged. Thread affinity: callers hold the experiment file's HDF5 mutex.

#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>

#include "core/error.h"
#include "core/io/memory_budget.h"

namespace icl::h5read {

/// What was wrong with an attribute or dataset (the reason only, no file or object name).
struct Refused : Error {
    using Error::Error;
};

/// A memory-budget refusal; the message is a full line naming the file (MemoryBudget::charge).
struct OverBudget : Error {
    using Error::Error;
};

/// Longest string attribute accepted (bytes): 256 MiB, well above the largest result the workbench writes.
inline constexpr uint64_t kMaxStringBytes = uint64_t(256) << 20;
/// Longest short string (format, created, app_version, a digest): 4 KiB.
inline constexpr uint64_t kShortStringBytes = 4096;

/// Reads attribute `name` of `obj` as one string: a string type (fixed- or variable-length) with exactly one
/// element, at most `max_bytes` long. Trailing NULs of a fixed-length string are dropped. Charges its length to
/// `budget` when given. Throws Refused (absent, not a string, an array of strings, too long, unreadable) or
/// OverBudget.
std::string stringAttribute(hid_t obj, const std::string& name, uint64_t max_bytes, MemoryBudget* budget = nullptr);

/// Reads attribute `name` of `obj` as one number: an integer or floating-point type of at most 16 bytes with
/// exactly one element, converted to double. Throws Refused.
double numberAttribute(hid_t obj, const std::string& name);

/// Reads attribute `name` of `obj` as one integer (integer type only, one element). Throws Refused.
int64_t integerAttribute(hid_t obj, const std::string& name);

/// Reads attribute `name` of `obj` as one unsigned integer (integer type only, one element; negative values
/// are refused). Throws Refused.
uint64_t unsignedAttribute(hid_t obj, const std::string& name);

/// Shape of a dataset after its checks.
struct Extent {
    std::vector<uint64_t> dims;  ///< row-major dimensions
    uint64_t elements = 0;       ///< product of dims (1 for a scalar dataset)
};

/// Checks that dataset `ds` holds numbers of type class `cls` (H5T_FLOAT or H5T_INTEGER, at most 16 bytes each)
/// with rank in [min_rank, max_rank], and returns its shape with an overflow-checked element count. Throws
/// Refused.
Extent datasetExtent(hid_t ds, H5T_class_t cls, int min_rank, int max_rank);

/// Reads a floating-point dataset of rank 0–32 as float32 (row-major); `shape` receives its dimensions. The
/// bytes (elements · 4) are charged to `budget` before allocating. Throws Refused or OverBudget.
std::vector<float> floatArray(hid_t ds, std::vector<int64_t>& shape, MemoryBudget& budget, const std::string& what);

/// Reads a one-dimensional floating-point dataset (a metric series) as double, charging elements · 8 bytes.
/// Throws Refused (another rank or type) or OverBudget.
std::vector<double> doubleSeries(hid_t ds, MemoryBudget& budget, const std::string& what);

/// Reads every value of a numeric dataset of any rank in blocks of at most `block_bytes` (at least one row;
/// each block checked against `budget` without being charged, as it is freed before the next), letting HDF5
/// check its filters' checksums (Fletcher-32) on the way. Throws Refused (unreadable, not numeric) or
/// OverBudget.
void readThrough(hid_t ds, const MemoryBudget& budget, const std::string& what, uint64_t block_bytes = 64u << 20);

} // namespace icl::h5read
