#include "core/io/hdf5_read.h"

#include <algorithm>
#include <cstring>

#include "core/io/checked_size.h"

namespace icl::h5read {

namespace {

// Closes an HDF5 identifier at scope exit.
struct Closer {
    hid_t id;
    herr_t (*close)(hid_t);
    Closer(hid_t i, herr_t (*c)(hid_t))
        : id(i)
        , close(c)
    {
    }
    Closer(const Closer&) = delete;
    Closer& operator=(const Closer&) = delete;
    ~Closer()
    {
        if (id >= 0)
            close(id);
    }
};

const char* className(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER:
        return "an integer";
    case H5T_FLOAT:
        return "a float";
    case H5T_STRING:
        return "a string";
    case H5T_BITFIELD:
        return "a bit field";
    case H5T_OPAQUE:
        return "opaque bytes";
    case H5T_COMPOUND:
        return "a compound";
    case H5T_REFERENCE:
        return "a reference";
    case H5T_ENUM:
        return "an enumeration";
    case H5T_VLEN:
        return "a variable-length sequence";
    case H5T_ARRAY:
        return "an array type";
    default:
        return "an unknown type";
    }
}

// What a dataset of elements of class `c` holds, for messages: "integers", "strings".
const char* pluralName(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER:
        return "integers";
    case H5T_FLOAT:
        return "floating-point numbers";
    case H5T_STRING:
        return "strings";
    case H5T_COMPOUND:
        return "compound values";
    case H5T_ENUM:
        return "enumeration values";
    case H5T_REFERENCE:
        return "references";
    default:
        return "values that are not numbers";
    }
}

// Number of elements of a dataspace: 1 for a scalar, the overflow-checked product of the dims for a simple
// one, 0 for a null one. `dims` receives the dimensions of a simple dataspace.
uint64_t pointsOf(hid_t space, std::vector<uint64_t>* dims, const std::string& what)
{
    const H5S_class_t kind = H5Sget_simple_extent_type(space);
    if (kind == H5S_SCALAR)
        return 1;
    if (kind == H5S_NULL)
        return 0;
    if (kind != H5S_SIMPLE)
        throw Refused(what + " has an unreadable shape");
    const int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > H5S_MAX_RANK)
        throw Refused(what + " has an unreadable shape");
    std::vector<hsize_t> d(static_cast<size_t>(rank));
    if (rank > 0 && H5Sget_simple_extent_dims(space, d.data(), nullptr) < 0)
        throw Refused(what + " has an unreadable shape");
    uint64_t n = 1;
    try {
        for (hsize_t v : d)
            n = checked::mul(n, static_cast<uint64_t>(v), what);
    } catch (const Error&) {
        throw Refused(what + " has a shape whose size overflows 64 bits");
    }
    if (dims)
        dims->assign(d.begin(), d.end());
    return n;
}

std::string quoted(const std::string& name)
{
    return "attribute '" + name + "'";
}

// Opens attribute `name` and checks it holds exactly one element; returns its file type in `type`.
hid_t openSingle(hid_t obj, const std::string& name, const char* expected, hid_t& type)
{
    const std::string what = quoted(name);
    const htri_t exists = H5Aexists(obj, name.c_str());
    if (exists < 0)
        throw Refused(what + " is unreadable");
    if (exists == 0)
        throw Refused(what + " is missing");
    const hid_t attr = H5Aopen(obj, name.c_str(), H5P_DEFAULT);
    if (attr < 0)
        throw Refused(what + " is unreadable");
    try {
        Closer space(H5Aget_space(attr), H5Sclose);
        if (space.id < 0)
            throw Refused(what + " is unreadable");
        const uint64_t n = pointsOf(space.id, nullptr, what);
        if (n != 1)
            throw Refused(what + " holds " + std::to_string(n) + " values, expected " + expected);
        type = H5Aget_type(attr);
        if (type < 0)
            throw Refused(what + " is unreadable");
    } catch (...) {
        H5Aclose(attr);
        throw;
    }
    return attr;
}

template <typename T>
T scalarAttribute(hid_t obj, const std::string& name, bool integerOnly, hid_t memType)
{
    hid_t type = -1;
    Closer attr(openSingle(obj, name, integerOnly ? "one integer" : "one number", type), H5Aclose);
    Closer fileType(type, H5Tclose);
    const H5T_class_t c = H5Tget_class(fileType.id);
    if (c != H5T_INTEGER && (integerOnly || c != H5T_FLOAT))
        throw Refused(quoted(name) + " is " + className(c) + ", expected " + (integerOnly ? "an integer" : "a number"));
    const size_t size = H5Tget_size(fileType.id);
    if (size == 0 || size > 16)
        throw Refused(quoted(name) + " has an implausible size");
    T v{};
    if (H5Aread(attr.id, memType, &v) < 0)
        throw Refused(quoted(name) + " is unreadable");
    return v;
}

} // namespace

std::string stringAttribute(hid_t obj, const std::string& name, uint64_t max_bytes, MemoryBudget* budget)
{
    const std::string what = quoted(name);
    hid_t type = -1;
    Closer attr(openSingle(obj, name, "one string", type), H5Aclose);
    Closer fileType(type, H5Tclose);
    const H5T_class_t c = H5Tget_class(fileType.id);
    if (c != H5T_STRING)
        throw Refused(what + " is " + className(c) + ", expected a string");
    const htri_t variable = H5Tis_variable_str(fileType.id);
    if (variable < 0)
        throw Refused(what + " is unreadable");
    if (variable > 0) {
        // One pointer: HDF5 allocates the string itself (bounded by the heap object it reads).
        Closer memType(H5Tcopy(H5T_C_S1), H5Tclose);
        if (memType.id < 0 || H5Tset_size(memType.id, H5T_VARIABLE) < 0
            || H5Tset_cset(memType.id, H5Tget_cset(fileType.id)) < 0)
            throw Refused(what + " is unreadable");
        Closer space(H5Aget_space(attr.id), H5Sclose);
        char* data = nullptr;
        if (space.id < 0 || H5Aread(attr.id, memType.id, &data) < 0)
            throw Refused(what + " is unreadable");
        const size_t n = data ? ::strnlen(data, static_cast<size_t>(max_bytes) + 1) : 0;
        std::string out;
        if (n <= max_bytes)
            out.assign(data ? data : "", n);
        H5Dvlen_reclaim(memType.id, space.id, H5P_DEFAULT, &data);
        if (n > max_bytes)
            throw Refused(what + " is longer than " + formatBytes(max_bytes));
        if (budget) {
            try {
                budget->charge(n, "attribute " + name);
            } catch (const Error& e) {
                throw OverBudget(e.what());
            }
        }
        return out;
    }
    const size_t size = H5Tget_size(fileType.id);
    if (size == 0)
        throw Refused(what + " is unreadable");
    if (size > max_bytes)
        throw Refused(what + " is " + formatBytes(size) + " long, over the limit of " + formatBytes(max_bytes));
    if (budget) {
        try {
            budget->charge(size, "attribute " + name);
        } catch (const Error& e) {
            throw OverBudget(e.what());
        }
    }
    std::string buf(size, '\0');
    Closer memType(H5Tcopy(fileType.id), H5Tclose);
    if (memType.id < 0 || H5Aread(attr.id, memType.id, buf.data()) < 0)
        throw Refused(what + " is unreadable");
    buf.erase(std::find(buf.begin(), buf.end(), '\0'), buf.end());
    return buf;
}

double numberAttribute(hid_t obj, const std::string& name)
{
    return scalarAttribute<double>(obj, name, false, H5T_NATIVE_DOUBLE);
}

int64_t integerAttribute(hid_t obj, const std::string& name)
{
    return scalarAttribute<int64_t>(obj, name, true, H5T_NATIVE_INT64);
}

uint64_t unsignedAttribute(hid_t obj, const std::string& name)
{
    bool isSigned = false;
    {
        hid_t type = -1;
        Closer attr(openSingle(obj, name, "one integer", type), H5Aclose);
        Closer fileType(type, H5Tclose);
        isSigned = H5Tget_class(fileType.id) == H5T_INTEGER && H5Tget_sign(fileType.id) == H5T_SGN_2;
    }
    if (isSigned) {
        const int64_t v = scalarAttribute<int64_t>(obj, name, true, H5T_NATIVE_INT64);
        if (v < 0)
            throw Refused(quoted(name) + " is negative, expected an unsigned integer");
        return static_cast<uint64_t>(v);
    }
    return scalarAttribute<uint64_t>(obj, name, true, H5T_NATIVE_UINT64);
}

Extent datasetExtent(hid_t ds, H5T_class_t cls, int min_rank, int max_rank)
{
    Closer type(H5Dget_type(ds), H5Tclose);
    Closer space(H5Dget_space(ds), H5Sclose);
    if (type.id < 0 || space.id < 0)
        throw Refused("unreadable");
    const H5T_class_t c = H5Tget_class(type.id);
    if (c != cls)
        throw Refused(std::string("holds ") + pluralName(c) + ", expected " + pluralName(cls));
    const size_t size = H5Tget_size(type.id);
    if (size == 0 || size > 16)
        throw Refused("has an implausible element size");
    Extent e;
    const H5S_class_t kind = H5Sget_simple_extent_type(space.id);
    if (kind == H5S_NULL)
        throw Refused("has no shape (a null dataspace)");
    e.elements = pointsOf(space.id, &e.dims, "the dataset");
    const int rank = static_cast<int>(e.dims.size());
    if (rank < min_rank || rank > max_rank)
        throw Refused("is " + std::to_string(rank) + "-dimensional, expected "
                      + (min_rank == max_rank ? std::to_string(min_rank)
                                              : std::to_string(min_rank) + " to " + std::to_string(max_rank))
                      + "-dimensional");
    return e;
}

namespace {

template <typename T>
std::vector<T> readAll(hid_t ds, const Extent& e, hid_t memType, MemoryBudget& budget, const std::string& what)
{
    uint64_t bytes = 0;
    try {
        bytes = checked::mul(e.elements, sizeof(T), what);
    } catch (const Error&) {
        throw Refused("shape overflows 64 bits");
    }
    try {
        budget.charge(bytes, what + " (" + std::to_string(e.elements) + " values)");
    } catch (const Error& err) {
        throw OverBudget(err.what());
    }
    std::vector<T> v(checked::toSize(e.elements, what));
    if (!v.empty() && H5Dread(ds, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
        throw Refused("unreadable");
    return v;
}

} // namespace

std::vector<float> floatArray(hid_t ds, std::vector<int64_t>& shape, MemoryBudget& budget, const std::string& what)
{
    const Extent e = datasetExtent(ds, H5T_FLOAT, 0, H5S_MAX_RANK);
    shape.clear();
    for (uint64_t d : e.dims) {
        if (d > uint64_t(INT64_MAX))
            throw Refused("shape overflows 64 bits");
        shape.push_back(static_cast<int64_t>(d));
    }
    return readAll<float>(ds, e, H5T_NATIVE_FLOAT, budget, what);
}

std::vector<double> doubleSeries(hid_t ds, MemoryBudget& budget, const std::string& what)
{
    const Extent e = datasetExtent(ds, H5T_FLOAT, 1, 1);
    return readAll<double>(ds, e, H5T_NATIVE_DOUBLE, budget, what);
}

void readThrough(hid_t ds, const MemoryBudget& budget, const std::string& what, uint64_t block_bytes)
{
    Closer type(H5Dget_type(ds), H5Tclose);
    if (type.id < 0)
        throw Refused("unreadable");
    const H5T_class_t c = H5Tget_class(type.id);
    if (c != H5T_FLOAT && c != H5T_INTEGER)
        throw Refused(std::string("holds ") + pluralName(c) + ", expected numbers");
    const Extent e = datasetExtent(ds, c, 0, H5S_MAX_RANK);
    Closer native(H5Tget_native_type(type.id, H5T_DIR_ASCEND), H5Tclose);
    if (native.id < 0)
        throw Refused("unreadable");
    const uint64_t elementBytes = H5Tget_size(native.id);
    const auto mul = [](uint64_t a, uint64_t b) {
        uint64_t r = 0;
        if (__builtin_mul_overflow(a, b, &r))
            throw Refused("shape overflows 64 bits");
        return r;
    };
    const auto checkedBlock = [&](uint64_t bytes) {
        try {
            budget.check(bytes, what + " (a block of " + formatBytes(bytes) + ")");
        } catch (const Error& err) {
            throw OverBudget(err.what());
        }
        return checked::toSize(bytes, what);
    };
    if (e.dims.empty()) {
        std::vector<char> buf(checkedBlock(elementBytes));
        if (H5Dread(ds, native.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
            throw Refused("unreadable or checksum mismatch");
        return;
    }
    if (e.elements == 0)
        return;
    uint64_t rowBytes = elementBytes;
    for (size_t i = 1; i < e.dims.size(); ++i)
        rowBytes = mul(rowBytes, e.dims[i]);
    const uint64_t rowsPerBlock = std::max<uint64_t>(1, block_bytes / std::max<uint64_t>(rowBytes, 1));
    const int rank = static_cast<int>(e.dims.size());
    for (uint64_t r = 0; r < e.dims[0]; r += rowsPerBlock) {
        std::vector<hsize_t> start(e.dims.size(), 0), count(e.dims.begin(), e.dims.end());
        start[0] = r;
        count[0] = std::min<uint64_t>(rowsPerBlock, e.dims[0] - r);
        std::vector<char> buf(checkedBlock(mul(count[0], rowBytes)));
        Closer fileSpace(H5Dget_space(ds), H5Sclose);
        Closer memSpace(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
        if (fileSpace.id < 0 || memSpace.id < 0
            || H5Sselect_hyperslab(fileSpace.id, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0
            || H5Dread(ds, native.id, memSpace.id, fileSpace.id, H5P_DEFAULT, buf.data()) < 0)
            throw Refused("unreadable or checksum mismatch");
    }
}

} // namespace icl::h5read
