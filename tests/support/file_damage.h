#pragma once
// Damage for the integrity tests: flip one bit of a file, find where a dataset's data lies in an HDF5 file,
// overwrite a checksummed attribute.

#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <hdf5.h>

namespace icl::test {

/// Flips bit `bit` (0 … 7) of byte `offset` of the file at `path`.
inline void flipBit(const std::string& path, uint64_t offset, int bit)
{
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ (1 << bit));
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
}

/// File offset of the data of the contiguous dataset `dataset` in the HDF5 file `path` (a test failure when it has
/// none).
inline uint64_t dataOffset(const std::string& path, const std::string& dataset)
{
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
    const haddr_t off = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    EXPECT_NE(off, HADDR_UNDEF) << dataset;
    return off;
}

/// Overwrites the number attribute `attribute` of the HDF5 object `object` (e.g. a checkpoint's "train_loss") with
/// `value`: the object no longer matches its checksum.
inline void overwriteNumberAttribute(const std::string& path, const std::string& object, const std::string& attribute,
    double value)
{
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
    hid_t a = H5Aopen(o, attribute.c_str(), H5P_DEFAULT);
    EXPECT_GE(a, 0) << object << "@" << attribute;
    H5Awrite(a, H5T_NATIVE_DOUBLE, &value);
    H5Aclose(a);
    H5Oclose(o);
    H5Fclose(f);
}

} // namespace icl::test
