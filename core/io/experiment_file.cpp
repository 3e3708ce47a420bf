#include "core/io/experiment_file.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/checksums.h"
#include "core/io/config.h"
#include "core/io/hdf5_journal.h"
#include "core/version.h"

namespace fs = std::filesystem;

namespace icl {

namespace cks = checksums;

namespace {

std::mutex& hdf5Mutex()
{
    static std::mutex m;
    return m;
}

// Silences HDF5's own stderr error stack; failures are reported through icl::Error. The setting is
// per thread in thread-safe HDF5 builds (Debian's), so every calling thread does it once.
void quietHdf5()
{
    thread_local bool done = false;
    if (!done) {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        done = true;
    }
}

// Owning HDF5 identifier.
class Hid {
public:
    Hid() = default;
    Hid(hid_t id, herr_t (*close)(hid_t))
        : m_id(id)
        , m_close(close)
    {
    }
    Hid(const Hid&) = delete;
    Hid& operator=(const Hid&) = delete;
    Hid(Hid&& o) noexcept { *this = std::move(o); }
    Hid& operator=(Hid&& o) noexcept
    {
        reset();
        m_id = o.m_id;
        m_close = o.m_close;
        o.m_id = -1;
        return *this;
    }
    ~Hid() { reset(); }
    void reset()
    {
        if (m_id >= 0 && m_close)
            m_close(m_id);
        m_id = -1;
    }
    hid_t get() const { return m_id; }
    bool valid() const { return m_id >= 0; }
    /// Closes now and returns HDF5's status: closing a dataset or file writes its buffered data, and a full
    /// disk is only reported here.
    herr_t close()
    {
        const herr_t status = m_id >= 0 && m_close ? m_close(m_id) : 0;
        m_id = -1;
        return status;
    }

private:
    hid_t m_id = -1;
    herr_t (*m_close)(hid_t) = nullptr;
};

Hid check(hid_t id, herr_t (*close)(hid_t), const std::string& what)
{
    if (id < 0)
        throw Error(what);
    return Hid(id, close);
}

void checkStatus(herr_t status, const std::string& what)
{
    if (status < 0)
        throw Error(what);
}

// Runs an HDF5 call that writes to disk; on failure names the system's reason ("No space left on device").
template <typename Call>
void checkWrite(Call&& call, const std::string& what)
{
    errno = 0;
    if (call() < 0)
        throw Error(what + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

bool linkExists(hid_t loc, const std::string& name)
{
    return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

void writeStringAttr(hid_t obj, const std::string& name, const std::string& value)
{
    checksums::writeStringAttribute(obj, name, value);
}

template <typename T>
void writeScalarAttr(hid_t obj, const std::string& name, T value, hid_t memType)
{
    Hid space = check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
    if (H5Aexists(obj, name.c_str()) > 0)
        H5Adelete(obj, name.c_str());
    Hid attr = check(H5Acreate2(obj, name.c_str(), memType, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                     "cannot create attribute " + name);
    checkStatus(H5Awrite(attr.get(), memType, &value), "cannot write attribute " + name);
}

bool hasAttr(hid_t obj, const std::string& name)
{
    return H5Aexists(obj, name.c_str()) > 0;
}

std::string readStringAttr(hid_t obj, const std::string& name, const std::string& where)
{
    if (!hasAttr(obj, name))
        throw Error(where + ": attribute '" + name + "' is missing");
    Hid attr = check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, where + ": cannot open attribute " + name);
    Hid fileType = check(H5Aget_type(attr.get()), H5Tclose, "H5Aget_type");
    if (H5Tget_class(fileType.get()) != H5T_STRING)
        throw Error(where + ": attribute '" + name + "' is not a string");
    if (H5Tis_variable_str(fileType.get()) > 0) {
        Hid memType = check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
        H5Tset_size(memType.get(), H5T_VARIABLE);
        H5Tset_cset(memType.get(), H5Tget_cset(fileType.get()));
        char* data = nullptr;
        checkStatus(H5Aread(attr.get(), memType.get(), &data), where + ": cannot read attribute " + name);
        std::string out = data ? data : "";
        Hid space = check(H5Aget_space(attr.get()), H5Sclose, "H5Aget_space");
        H5Dvlen_reclaim(memType.get(), space.get(), H5P_DEFAULT, &data);
        return out;
    }
    const size_t size = H5Tget_size(fileType.get());
    if (size == 0 || size > (size_t(1) << 30))
        throw Error(where + ": attribute '" + name + "' has an implausible size");
    std::string buf(size, '\0');
    Hid memType = check(H5Tcopy(fileType.get()), H5Tclose, "H5Tcopy");
    checkStatus(H5Aread(attr.get(), memType.get(), buf.data()), where + ": cannot read attribute " + name);
    buf.erase(std::find(buf.begin(), buf.end(), '\0'), buf.end());
    return buf;
}

double readNumberAttr(hid_t obj, const std::string& name, const std::string& where)
{
    if (!hasAttr(obj, name))
        throw Error(where + ": attribute '" + name + "' is missing");
    Hid attr = check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose, where + ": cannot open attribute " + name);
    double v = 0;
    checkStatus(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v), where + ": attribute '" + name + "' is not a number");
    return v;
}


// The one-line message of every damaged object: "RUN.h5: damaged: /checkpoints/000000100 (checksum mismatch)".
std::string damaged(const std::string& path, const std::string& object, const std::string& why)
{
    return path + ": damaged: " + object + " (" + why + ")";
}

// Marks an icl::Error whose message is already a full "damaged" line, so callers do not wrap it again.
struct DamagedError : Error {
    using Error::Error;
};

// Names of the links in `group` (the object at `object`); unreadable link storage is damage.
std::vector<std::string> childNames(hid_t group, const std::string& path, const std::string& object)
{
    std::vector<std::string> names;
    const herr_t status = H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
                                     [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
                                         static_cast<std::vector<std::string>*>(data)->push_back(name);
                                         return 0;
                                     },
                                     &names);
    if (status < 0)
        throw DamagedError(damaged(path, object, "unreadable"));
    return names;
}

// Whether link `name` exists below `loc` (the object at `object`); an unreadable link index is damage, never
// "absent" (so a damaged group cannot vanish silently).
bool present(hid_t loc, const std::string& name, const std::string& path, const std::string& object)
{
    const htri_t r = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
    if (r < 0)
        throw DamagedError(damaged(path, object, "unreadable"));
    return r > 0;
}

// Whether `name` below `loc` is a group (else a dataset); unreadable is damage of `object`.
bool groupAt(hid_t loc, const std::string& name, const std::string& path, const std::string& object)
{
    H5O_info_t info;
    if (H5Oget_info_by_name(loc, name.c_str(), &info, H5P_DEFAULT) < 0)
        throw DamagedError(damaged(path, object, "unreadable"));
    return info.type == H5O_TYPE_GROUP;
}

// Whether `obj` (the object at `object`) has attribute `name`; unreadable is damage.
bool attrPresent(hid_t obj, const std::string& name, const std::string& path, const std::string& object)
{
    const htri_t r = H5Aexists(obj, name.c_str());
    if (r < 0)
        throw DamagedError(damaged(path, object, "unreadable attributes"));
    return r > 0;
}

Hid openOrCreateGroup(hid_t loc, const std::string& name)
{
    if (linkExists(loc, name))
        return check(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose, "cannot open group " + name);
    Hid lcpl = check(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "H5Pcreate");
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    return check(H5Gcreate2(loc, name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                 "cannot create group " + name);
}

std::string checkpointName(int64_t step)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%09lld", static_cast<long long>(step));
    return buf;
}

std::string isoNow()
{
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

// Checks the seal (attribute digest) of a group. `required`: the file's version has checksums, so a
// missing seal is damage too.
void verifySeal(hid_t obj, const std::string& path, const std::string& object, bool required)
{
    std::string stored, actual;
    try {
        stored = cks::storedDigest(obj);
        if (stored.empty()) {
            if (required)
                throw DamagedError(damaged(path, object, "no checksum"));
            return;
        }
        actual = cks::attributeDigest(obj);
    } catch (const DamagedError&) {
        throw;
    } catch (const Error& e) {
        throw DamagedError(damaged(path, object, e.what()));
    }
    if (stored != actual)
        throw DamagedError(damaged(path, object, "checksum mismatch"));
}

// Writes a float32 dataset and returns its digest under `key` ("params/<name>").
std::string writeArray(hid_t group, const NamedArray& a, const std::string& key)
{
    std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
    size_t count = 1;
    for (auto n : a.shape)
        count *= static_cast<size_t>(n);
    if (count != a.data.size())
        throw Error("array " + a.name + ": shape does not match its data size");
    Hid space = check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                      "H5Screate_simple");
    Hid lcpl = check(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "H5Pcreate");
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    Hid ds = check(H5Dcreate2(group, a.name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
                   H5Dclose, "cannot create dataset " + a.name);
    if (count)
        checkStatus(H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()),
                    "cannot write dataset " + a.name);
    checkWrite([&] { return ds.close(); }, "cannot write dataset " + a.name);
    return cks::arrayDigest(key, a.shape, a.data.data(), a.data.size());
}

// What a reader checks the datasets of a group against: the group's manifest (key -> digest).
struct Manifest {
    const nlohmann::json* digests = nullptr;  // null: no checksums (version 1 file)
    std::set<std::string> seen;
};

// Reads every float dataset below `group` (recursively) as NamedArrays with '/'-joined names, checking
// each against the manifest entry keyPrefix + name. `object` is the group's path in the file.
void readArrays(hid_t group, const std::string& prefix, std::vector<NamedArray>& out, const std::string& path,
                const std::string& object, const std::string& keyPrefix, Manifest& manifest)
{
    for (const auto& name : childNames(group, path, object + (prefix.empty() ? "" : "/" + prefix))) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        const std::string where = object + "/" + full;
        if (groupAt(group, name, path, where)) {
            Hid g(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid())
                throw DamagedError(damaged(path, where, "unreadable"));
            readArrays(g.get(), full, out, path, object, keyPrefix, manifest);
            continue;
        }
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid())
            throw DamagedError(damaged(path, where, "unreadable"));
        Hid space = check(H5Dget_space(ds.get()), H5Sclose, damaged(path, where, "unreadable"));
        const int rank = H5Sget_simple_extent_ndims(space.get());
        if (rank < 0 || rank > 32)
            throw DamagedError(damaged(path, where, "unreadable shape"));
        std::vector<hsize_t> dims(static_cast<size_t>(rank));
        H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
        NamedArray a;
        a.name = full;
        size_t count = 1;
        for (auto v : dims) {
            a.shape.push_back(static_cast<int64_t>(v));
            count *= v;
        }
        if (count > (size_t(1) << 34))
            throw DamagedError(damaged(path, where, "implausible shape"));
        a.data.resize(count);
        if (count && H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()) < 0)
            throw DamagedError(damaged(path, where, "unreadable"));
        if (manifest.digests) {
            const std::string key = keyPrefix + full;
            auto it = manifest.digests->find(key);
            if (it == manifest.digests->end() || !it->is_string())
                throw DamagedError(damaged(path, where, "not in the checksum manifest"));
            if (it->get<std::string>() != cks::arrayDigest(key, a.shape, a.data.data(), a.data.size()))
                throw DamagedError(damaged(path, where, "checksum mismatch"));
            manifest.seen.insert(key);
        }
        out.push_back(std::move(a));
    }
}

// Every manifest key starting with `keyPrefix` was read; otherwise names the first one missing.
void checkComplete(const Manifest& manifest, const std::string& keyPrefix, const std::string& path,
                   const std::string& object)
{
    if (!manifest.digests)
        return;
    for (auto it = manifest.digests->begin(); it != manifest.digests->end(); ++it)
        if (it.key().rfind(keyPrefix, 0) == 0 && !manifest.seen.count(it.key()))
            throw DamagedError(damaged(path, object + "/" + it.key().substr(keyPrefix.size()), "missing"));
}

// Reads every 1-D dataset below `group` (recursively) as double series, checking each series' own
// digest (`required`: a series without one is damaged).
void readSeries(hid_t group, const std::string& prefix, std::map<std::string, std::vector<double>>& out,
                const std::string& path, bool required)
{
    for (const auto& name : childNames(group, path, "/metrics" + (prefix.empty() ? "" : "/" + prefix))) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        const std::string where = "/metrics/" + full;
        if (groupAt(group, name, path, where)) {
            Hid g(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid())
                throw DamagedError(damaged(path, where, "unreadable"));
            readSeries(g.get(), full, out, path, required);
            continue;
        }
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid())
            throw DamagedError(damaged(path, where, "unreadable"));
        Hid space = check(H5Dget_space(ds.get()), H5Sclose, damaged(path, where, "unreadable"));
        const hssize_t n = H5Sget_simple_extent_npoints(space.get());
        if (n < 0 || n > (hssize_t(1) << 32))
            throw DamagedError(damaged(path, where, "unreadable shape"));
        std::vector<double> v(static_cast<size_t>(n));
        if (n > 0 && H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
            throw DamagedError(damaged(path, where, "unreadable"));
        std::string stored;
        try {
            stored = cks::storedDigest(ds.get());
        } catch (const Error& e) {
            throw DamagedError(damaged(path, where, e.what()));
        }
        if (stored.empty() ? required : stored != cks::seriesDigest(full, v))
            throw DamagedError(damaged(path, where, stored.empty() ? "no checksum" : "checksum mismatch"));
        out[full] = std::move(v);
    }
}

// Newer objects are written in HDF5's 1.8 file format, whose metadata (object headers, link and
// attribute indexes) carries HDF5's own checksums; h5py reads it.
Hid writeAccess()
{
    Hid fapl = check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
    return fapl;
}

// An opened experiment file with its format version.
struct OpenFile {
    std::unique_ptr<journal::ReadLock> lock;  // released after the file is closed (declared first)
    Hid file;
    int version = 0;
    bool checksums() const { return version >= 2; }
};

// Format check, version check and the root's seal.
OpenFile openFile(const std::string& path, unsigned flags)
{
    quietHdf5();
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error(path + ": no such file");
    if (fs::is_directory(path, ec))
        throw Error(path + ": is a directory, not an experiment file");
    OpenFile out;
    // Waits while a commit overwrites pages in place; rolls back one that a killed process left half done.
    out.lock = std::make_unique<journal::ReadLock>(path);
    if (H5Fis_hdf5(path.c_str()) <= 0)
        throw Error(path + ": not an ICL Workbench experiment file (not HDF5, or damaged/truncated)");
    Hid fapl = writeAccess();
    out.file = Hid(H5Fopen(path.c_str(), flags, flags == H5F_ACC_RDONLY ? H5P_DEFAULT : fapl.get()), H5Fclose);
    if (!out.file.valid())
        throw Error(path + ": cannot open (damaged or truncated HDF5 file)");
    hid_t f = out.file.get();
    std::string format;
    try {
        format = readStringAttr(f, "format", path);
    } catch (const Error&) {
        if (hasAttr(f, "format"))
            throw Error(damaged(path, "/", "unreadable 'format' attribute"));
        throw Error(path + ": not an ICL Workbench experiment file (no 'format' attribute)");
    }
    if (format != kFileFormat) {
        std::string shown;
        for (unsigned char ch : format.substr(0, 40))
            shown.push_back(ch >= 0x20 && ch < 0x7f ? char(ch) : '?');
        throw Error(path + ": not an ICL Workbench experiment file (format is \"" + shown + "\", expected \""
                    + kFileFormat + "\")");
    }
    double version = 0;
    try {
        version = readNumberAttr(f, "format_version", path);
    } catch (const Error&) {
        throw Error(damaged(path, "/", "unreadable 'format_version' attribute"));
    }
    if (!(version >= kOldestFileFormatVersion && version <= kFileFormatVersion) || version != std::floor(version))
        throw Error(path + ": unsupported format_version " + std::to_string(static_cast<long long>(version))
                    + " (this build reads versions " + std::to_string(kOldestFileFormatVersion) + " to "
                    + std::to_string(kFileFormatVersion) + ")");
    out.version = static_cast<int>(version);
    verifySeal(f, path, "/", out.checksums());
    return out;
}

std::function<void(const std::string&)>& faultHook()
{
    static std::function<void(const std::string&)> hook;
    return hook;
}

// A point of a commit where a crash test may kill the process (setCommitFaultHookForTesting).
void faultPoint(const std::string& point)
{
    if (faultHook())
        faultHook()(point);
}

// fsync; false when the data may not be on disk (e.g. ENOSPC or EIO surfacing at sync).
bool syncFile(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

// In-place commit (core/io/hdf5_journal.h): HDF5 edits the file through the journaled driver, which writes
// new data past the file's old end and holds back every change to existing bytes until the edit is closed;
// then the changed pages are journaled, overwritten and the journal deleted. Cost: what the commit writes
// (plus the pages it changes, twice), never a copy of the file. Whatever fails, what the commit created is
// removed and the file is its previous commit.
template <typename Edit>
void commitInPlace(const std::string& path, Edit&& edit)
{
    std::error_code ec;
    std::string systemReason;
    try {
        journal::Commit commit(path, [](const std::string& point) { faultPoint(point); });
        // A whole-file copy left by an interrupted commit of an older build holds space the user needs.
        fs::remove(path + ".tmp", ec);
        faultPoint("locked");
        try {
            Hid fapl = check(commit.fileAccess(), H5Pclose, "H5Pcreate");
            H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
            Hid f(H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl.get()), H5Fclose);
            if (!f.valid())
                throw Error(path + ": cannot open for writing");
            faultPoint("opened");
            edit(f.get());
            faultPoint("edited");
            checkWrite([&] { return f.close(); }, "cannot write " + path);
        } catch (const Error&) {
            systemReason = commit.lastError();
            throw;
        }
        commit.finish();
    } catch (const Error& e) {
        std::string what = e.what();
        if (!systemReason.empty() && what.find(systemReason) == std::string::npos)
            what += ": " + systemReason;
        if (what == e.what() && what.rfind(path, 0) == 0)
            throw;
        if (what.rfind(path, 0) == 0)
            throw Error(what);
        throw Error(path + ": commit failed, the file is unchanged (" + what + ")");
    }
}

// Appends `values` to the series `name` after its first `keep` rows and returns the digest of the
// whole series, `kept` being its first rows as read (and verified) before.
void appendSeries(hid_t metrics, const std::string& name, const std::vector<double>& values, hsize_t keep,
                  std::vector<double> kept)
{
    if (!linkExists(metrics, name)) {
        Hid lcpl = check(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "H5Pcreate");
        H5Pset_create_intermediate_group(lcpl.get(), 1);
        hsize_t dims = 0, maxDims = H5S_UNLIMITED, chunk = 256;
        Hid space = check(H5Screate_simple(1, &dims, &maxDims), H5Sclose, "H5Screate_simple");
        Hid dcpl = check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
        H5Pset_chunk(dcpl.get(), 1, &chunk);
        Hid ds = check(H5Dcreate2(metrics, name.c_str(), H5T_IEEE_F64LE, space.get(), lcpl.get(), dcpl.get(),
                                  H5P_DEFAULT),
                       H5Dclose, "cannot create metric " + name);
    }
    Hid ds = check(H5Dopen2(metrics, name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open metric " + name);
    Hid space = check(H5Dget_space(ds.get()), H5Sclose, "H5Dget_space");
    hsize_t old = 0;
    H5Sget_simple_extent_dims(space.get(), &old, nullptr);
    const hsize_t start = std::min(old, keep);
    const hsize_t total = start + values.size();
    checkStatus(H5Dset_extent(ds.get(), &total), "cannot extend metric " + name);
    kept.resize(static_cast<size_t>(start));
    kept.insert(kept.end(), values.begin(), values.end());
    cks::writeDigest(ds.get(), cks::seriesDigest(name, kept));
    if (values.empty())
        return;
    Hid fileSpace = check(H5Dget_space(ds.get()), H5Sclose, "H5Dget_space");
    hsize_t count = values.size();
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    Hid memSpace = check(H5Screate_simple(1, &count, nullptr), H5Sclose, "H5Screate_simple");
    checkStatus(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, memSpace.get(), fileSpace.get(), H5P_DEFAULT, values.data()),
                "cannot write metric " + name);
    checkWrite([&] { return ds.close(); }, "cannot write metric " + name);
}

// Opens a group for reading; a failure is damage of that object.
Hid openGroup(hid_t loc, const std::string& name, const std::string& path, const std::string& object)
{
    Hid g(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.valid())
        throw DamagedError(damaged(path, object, "unreadable"));
    return g;
}

// A group's manifest attribute (JSON object key -> digest), verified by the group's seal beforehand.
nlohmann::json readManifest(hid_t g, const std::string& path, const std::string& object)
{
    if (!attrPresent(g, "manifest", path, object))
        throw DamagedError(damaged(path, object, "no checksum manifest"));
    nlohmann::json m = nlohmann::json::parse(readStringAttr(g, "manifest", path), nullptr, false);
    if (!m.is_object())
        throw DamagedError(damaged(path, object, "unreadable checksum manifest"));
    return m;
}

// One checkpoint's attributes (seal checked), or the damage that makes it unusable.
CheckpointInfo readCheckpointInfo(hid_t cps, const std::string& name, const std::string& path, bool required)
{
    const std::string object = "/checkpoints/" + name;
    Hid g = openGroup(cps, name, path, object);
    verifySeal(g.get(), path, object, required);
    CheckpointInfo c;
    try {
        c.step = static_cast<int64_t>(readNumberAttr(g.get(), "step", path));
        c.train_loss = readNumberAttr(g.get(), "train_loss", path);
        c.wall_time_s = readNumberAttr(g.get(), "wall_time_s", path);
    } catch (const Error&) {
        throw DamagedError(damaged(path, object, "unreadable attributes"));
    }
    if (c.step < 0 || checkpointName(c.step) != name)
        throw DamagedError(damaged(path, object, "step attribute does not match the name"));
    return c;
}

// Step from a checkpoint group's name ("000000100" -> 100), or -1.
int64_t stepFromName(const std::string& name)
{
    if (name.empty() || name.size() > 18 || name.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    return std::stoll(name);
}

// Whether a trainer holds RUN.h5.lock (the OFD lock of core/training/run_file_lock.cpp); false when the
// file is absent or locks are unsupported.
bool trainerHoldsLock(const std::string& lockPath)
{
    const int fd = ::open(lockPath.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct flock probe {};
    probe.l_type = F_WRLCK;
    probe.l_whence = SEEK_SET;
    const bool held = ::fcntl(fd, F_OFD_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
    ::close(fd);
    return held;
}

// Leftovers of a killed process, reported on open: RUN.h5.tmp (a commit's copy) and RUN.h5.lock (a trainer's
// claim). While a trainer holds the lock both are live, and that is said instead.
void noteLeftovers(const std::string& path, std::vector<std::string>& notes)
{
    std::error_code ec;
    const std::string tmp = path + ".tmp", lock = path + ".lock";
    const bool training = trainerHoldsLock(lock);
    if (training)
        notes.push_back("a trainer is writing this file (" + lock + " is held); what is read is its last commit");
    else if (fs::exists(lock, ec))
        notes.push_back(lock + " is left by a trainer that was killed; harmless (the next train reuses it), or delete it");
    if (!training && fs::exists(tmp, ec)) {
        const auto size = fs::file_size(tmp, ec);
        notes.push_back(tmp + " is left from an interrupted commit (" + std::to_string(ec ? 0 : size / 1024)
                        + " KiB); the next commit removes it, or delete it");
    }
}

RunSummary readRunSummaryLocked(const std::string& path)
{
    OpenFile of = openFile(path, H5F_ACC_RDONLY);
    hid_t f = of.file.get();
    const bool required = of.checksums();
    RunSummary s;
    s.path = path;
    s.format = kFileFormat;
    s.format_version = of.version;
    s.checksums = required;
    try {
        s.app_version = attrPresent(f, "app_version", path, "/") ? readStringAttr(f, "app_version", path) : "";
        s.created = attrPresent(f, "created", path, "/") ? readStringAttr(f, "created", path) : "";
    } catch (const Error&) {
        throw Error(damaged(path, "/", "unreadable attributes"));
    }
    if (!present(f, "config", path, "/config"))
        throw Error(damaged(path, "/config", "missing"));
    {
        Hid config = openGroup(f, "config", path, "/config");
        verifySeal(config.get(), path, "/config", required);
        try {
            s.config_json = readStringAttr(config.get(), "json", path);
        } catch (const Error&) {
            throw Error(damaged(path, "/config", "unreadable"));
        }
    }
    // Config parse and validation: every later json::parse of config_json succeeds.
    const nlohmann::json config = nlohmann::json::parse(s.config_json, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        throw Error(damaged(path, "/config", "not a JSON object"));
    try {
        s.config = std::make_shared<const ExperimentConfig>(parseConfig(config));
    } catch (const Error& e) {
        throw Error(path + ": /config: " + e.what());
    } catch (const nlohmann::json::exception&) {
        throw Error(path + ": /config: a value has the wrong type");
    }
    if (present(f, "checkpoints", path, "/checkpoints")) {
        Hid cps = openGroup(f, "checkpoints", path, "/checkpoints");
        for (const auto& name : childNames(cps.get(), path, "/checkpoints")) {
            if (name.empty() || name[0] == '.')
                continue;  // an unfinished temporary group
            try {
                s.checkpoints.push_back(readCheckpointInfo(cps.get(), name, path, required));
            } catch (const DamagedError& e) {
                const int64_t step = stepFromName(name);
                s.damaged.push_back(e.what());
                if (step < 0)
                    continue;
                CheckpointInfo c;
                c.step = step;
                c.damaged = e.what();
                s.checkpoints.push_back(c);
            }
        }
        std::sort(s.checkpoints.begin(), s.checkpoints.end(),
                  [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
    }
    if (present(f, "metrics", path, "/metrics")) {
        Hid m = openGroup(f, "metrics", path, "/metrics");
        readSeries(m.get(), "", s.metrics, path, required);
    }
    if (present(f, "import", path, "/import")) {
        Hid g = openGroup(f, "import", path, "/import");
        verifySeal(g.get(), path, "/import", required);
        try {
            s.import_json = readStringAttr(g.get(), "json", path);
        } catch (const Error&) {
            throw Error(damaged(path, "/import", "unreadable"));
        }
    }
    if (present(f, "analysis", path, "/analysis")) {
        Hid a = openGroup(f, "analysis", path, "/analysis");
        for (const auto& kind : childNames(a.get(), path, "/analysis")) {
            if (!groupAt(a.get(), kind, path, "/analysis/" + kind))
                continue;
            const std::string kindObject = "/analysis/" + kind;
            Hid g = openGroup(a.get(), kind, path, kindObject);
            const auto ids = childNames(g.get(), path, kindObject);
            s.analyses[kind] = static_cast<int>(ids.size());
            for (const auto& id : ids) {
                try {
                    Hid r = openGroup(g.get(), id, path, kindObject + "/" + id);
                    verifySeal(r.get(), path, kindObject + "/" + id, required);
                } catch (const DamagedError& e) {
                    s.damaged.push_back(e.what());
                }
            }
        }
    }
    if (!of.lock->recovery().empty())
        s.notes.push_back(of.lock->recovery());
    if (!required)
        s.notes.push_back("format version " + std::to_string(of.version)
                          + " has no checksums: damage to this file cannot be detected");
    noteLeftovers(path, s.notes);
    return s;
}

CheckpointData readCheckpointLocked(const std::string& path, int64_t step)
{
    OpenFile of = openFile(path, H5F_ACC_RDONLY);
    hid_t f = of.file.get();
    const std::string name = "checkpoints/" + checkpointName(step);
    if (!present(f, "checkpoints", path, "/checkpoints")
        || !present(f, name, path, "/checkpoints/" + checkpointName(step)))
        throw Error(path + ": no checkpoint at step " + std::to_string(step));
    const std::string object = "/" + name;
    Hid cps = openGroup(f, "checkpoints", path, "/checkpoints");
    const CheckpointInfo info = readCheckpointInfo(cps.get(), checkpointName(step), path, of.checksums());
    Hid g = openGroup(f, name, path, object);
    CheckpointData c;
    c.step = info.step;
    c.train_loss = info.train_loss;
    c.wall_time_s = info.wall_time_s;
    nlohmann::json digests;
    Manifest manifest;
    if (of.checksums() || attrPresent(g.get(), "manifest", path, object)) {
        digests = readManifest(g.get(), path, object);
        manifest.digests = &digests;
    }
    if (!present(g.get(), "params", path, object + "/params"))
        throw DamagedError(damaged(path, object + "/params", "missing"));
    {
        Hid p = openGroup(g.get(), "params", path, object + "/params");
        readArrays(p.get(), "", c.params, path, object + "/params", "params/", manifest);
        // Names were written with '.' (e.g. "blocks.0.attn.w_q"); groups only appear for '/'.
    }
    checkComplete(manifest, "params/", path, object + "/params");
    if (present(g.get(), "optimizer", path, object + "/optimizer")) {
        Hid o = openGroup(g.get(), "optimizer", path, object + "/optimizer");
        readArrays(o.get(), "", c.optimizer, path, object + "/optimizer", "optimizer/", manifest);
        for (const auto& group : childNames(o.get(), path, object + "/optimizer")) {
            const std::string where = object + "/optimizer/" + group;
            if (!groupAt(o.get(), group, path, where))
                continue;
            Hid pg = openGroup(o.get(), group, path, where);
            const int n = H5Aget_num_attrs(pg.get());
            if (n < 0)
                throw DamagedError(damaged(path, where, "unreadable"));
            for (int i = 0; i < n; ++i) {
                char attrName[256] = {0};
                Hid attr(H5Aopen_by_idx(pg.get(), ".", H5_INDEX_NAME, H5_ITER_INC, static_cast<hsize_t>(i),
                                        H5P_DEFAULT, H5P_DEFAULT),
                         H5Aclose);
                if (!attr.valid())
                    throw DamagedError(damaged(path, where, "unreadable"));
                H5Aget_name(attr.get(), sizeof attrName, attrName);
                double v = 0;
                if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v) < 0)
                    throw DamagedError(damaged(path, where + "@" + attrName, "unreadable"));
                const std::string key = group + "/" + attrName;
                if (manifest.digests) {
                    const std::string mkey = "optimizer_scalar/" + key;
                    auto it = digests.find(mkey);
                    if (it == digests.end() || !it->is_string())
                        throw DamagedError(damaged(path, where + "@" + attrName, "not in the checksum manifest"));
                    if (it->get<std::string>() != cks::scalarDigest(key, v))
                        throw DamagedError(damaged(path, where + "@" + attrName, "checksum mismatch"));
                    manifest.seen.insert(mkey);
                }
                c.optimizer_scalars[key] = v;
            }
        }
    }
    checkComplete(manifest, "optimizer/", path, object + "/optimizer");
    checkComplete(manifest, "optimizer_scalar/", path, object + "/optimizer");
    return c;
}

std::vector<NamedArray> readTaskArraysLocked(const std::string& path)
{
    OpenFile of = openFile(path, H5F_ACC_RDONLY);
    hid_t f = of.file.get();
    std::vector<NamedArray> out;
    if (!present(f, "task", path, "/task"))
        return out;
    Hid g = openGroup(f, "task", path, "/task");
    verifySeal(g.get(), path, "/task", of.checksums());
    nlohmann::json digests;
    Manifest manifest;
    if (of.checksums() || attrPresent(g.get(), "manifest", path, "/task")) {
        digests = readManifest(g.get(), path, "/task");
        manifest.digests = &digests;
    }
    readArrays(g.get(), "", out, path, "/task", "task/", manifest);
    checkComplete(manifest, "task/", path, "/task");
    return out;
}

// Reads a dataset of any numeric type in blocks of rows (so a large capture need not fit in memory);
// HDF5 checks its Fletcher-32 checksums on the way.
bool readWholeDataset(hid_t ds)
{
    Hid space(H5Dget_space(ds), H5Sclose);
    Hid type(H5Dget_type(ds), H5Tclose);
    if (!space.valid() || !type.valid())
        return false;
    Hid native(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose);
    if (!native.valid())
        return false;
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0 || rank > 32)
        return false;
    if (rank == 0) {
        std::vector<char> buf(H5Tget_size(native.get()));
        return H5Dread(ds, native.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) >= 0;
    }
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    size_t rowBytes = H5Tget_size(native.get());
    for (int i = 1; i < rank; ++i)
        rowBytes *= dims[static_cast<size_t>(i)];
    const hsize_t rowsPerBlock = std::max<hsize_t>(1, (64u << 20) / std::max<size_t>(rowBytes, 1));
    for (hsize_t r = 0; r < dims[0]; r += rowsPerBlock) {
        std::vector<hsize_t> start(static_cast<size_t>(rank), 0), count = dims;
        start[0] = r;
        count[0] = std::min(rowsPerBlock, dims[0] - r);
        Hid fileSpace(H5Dget_space(ds), H5Sclose);
        H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
        Hid memSpace(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
        std::vector<char> buf(static_cast<size_t>(count[0]) * rowBytes);
        if (H5Dread(ds, native.get(), memSpace.get(), fileSpace.get(), H5P_DEFAULT, buf.data()) < 0)
            return false;
    }
    return true;
}

// Reads every dataset below an analysis group (captured activations); returns how many were read.
int64_t readAnalysisDatasets(hid_t group, const std::string& object, const std::string& path,
                             std::vector<std::string>& damagedOut)
{
    int64_t n = 0;
    std::vector<std::string> names;
    try {
        names = childNames(group, path, object);
    } catch (const Error& e) {
        damagedOut.push_back(e.what());
        return 0;
    }
    for (const auto& name : names) {
        const std::string where = object + "/" + name;
        H5O_info_t info;
        if (H5Oget_info_by_name(group, name.c_str(), &info, H5P_DEFAULT) < 0) {
            damagedOut.push_back(damaged(path, where, "unreadable"));
            continue;
        }
        if (info.type == H5O_TYPE_GROUP) {
            Hid g(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid())
                damagedOut.push_back(damaged(path, where, "unreadable"));
            else
                n += readAnalysisDatasets(g.get(), where, path, damagedOut);
            continue;
        }
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid() || !readWholeDataset(ds.get()))
            damagedOut.push_back(damaged(path, where, "unreadable or checksum mismatch"));
        ++n;
    }
    return n;
}

// Drops the optimizer state of the checkpoints before `step` (but those at multiples of keepEvery > 0): the
// optimizer group goes, and so do its entries in the checkpoint's manifest, which is sealed again. A checkpoint
// whose seal fails is left as it is (never sealed again over damage).
void dropOptimizerState(hid_t cps, int64_t step, int64_t keepEvery, const std::string& path, bool required)
{
    for (const auto& name : childNames(cps, path, "/checkpoints")) {
        const int64_t s = stepFromName(name);
        if (s < 0 || s >= step || (keepEvery > 0 && s % keepEvery == 0))
            continue;
        Hid g(H5Gopen2(cps, name.c_str(), H5P_DEFAULT), H5Gclose);
        if (!g.valid() || !linkExists(g.get(), "optimizer"))
            continue;
        const std::string object = "/checkpoints/" + name;
        nlohmann::json manifest;
        try {
            verifySeal(g.get(), path, object, required);
            if (hasAttr(g.get(), "manifest"))
                manifest = readManifest(g.get(), path, object);
        } catch (const Error&) {
            continue;
        }
        checkStatus(H5Ldelete(g.get(), "optimizer", H5P_DEFAULT), path + ": cannot drop " + object + "/optimizer");
        if (manifest.is_object()) {
            for (auto it = manifest.begin(); it != manifest.end();)
                it = (it.key().rfind("optimizer/", 0) == 0 || it.key().rfind("optimizer_scalar/", 0) == 0)
                    ? manifest.erase(it)
                    : std::next(it);
            writeStringAttr(g.get(), "manifest", manifest.dump());
        }
        if (!cks::storedDigest(g.get()).empty())
            cks::seal(g.get());
    }
}

} // namespace

void createExperimentFile(const std::string& path, const std::string& config_json, bool overwrite)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    std::error_code ec;
    if (fs::exists(path, ec) && !overwrite)
        throw Error(path + ": file exists (use --resume to continue it or --force to overwrite)");
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::exists(parent, ec))
        throw Error(path + ": directory " + parent.string() + " does not exist");
    const std::string tmp = path + ".tmp";
    try {
        {
            Hid fapl = writeAccess();
            Hid f(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
            if (!f.valid())
                throw Error(path + ": cannot create file");
            writeStringAttr(f.get(), "format", kFileFormat);
            writeScalarAttr<int32_t>(f.get(), "format_version", kFileFormatVersion, H5T_NATIVE_INT32);
            writeStringAttr(f.get(), "app_version", ICL_APP_VERSION);
            writeStringAttr(f.get(), "created", isoNow());
            cks::seal(f.get());
            Hid config = openOrCreateGroup(f.get(), "config");
            writeStringAttr(config.get(), "json", config_json);
            cks::seal(config.get());
            openOrCreateGroup(f.get(), "checkpoints");
            openOrCreateGroup(f.get(), "metrics");
            checkWrite([&] { return H5Fflush(f.get(), H5F_SCOPE_GLOBAL); }, path + ": cannot write");
            checkWrite([&] { return f.close(); }, path + ": cannot write");
        }
        if (!syncFile(tmp))
            throw Error(path + ": cannot create (" + std::strerror(errno) + ")");
        // A journal of the file being replaced (--force) must never be rolled back into the new one.
        fs::remove(journal::journalPath(path), ec);
        fs::rename(tmp, path, ec);
        if (ec)
            throw Error(path + ": cannot create (" + ec.message() + ")");
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
}

RunSummary readRunSummary(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return readRunSummaryLocked(path);
}

std::vector<StoredAnalysis> readStoredAnalyses(const std::string& path, const std::string& kind)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    OpenFile of = openFile(path, H5F_ACC_RDONLY);
    hid_t f = of.file.get();
    std::vector<StoredAnalysis> out;
    const std::string kindObject = "/analysis/" + kind;
    if (!present(f, "analysis", path, "/analysis"))
        return out;
    Hid a = openGroup(f, "analysis", path, "/analysis");
    if (!present(a.get(), kind, path, kindObject) || !groupAt(a.get(), kind, path, kindObject))
        return out;
    Hid g = openGroup(a.get(), kind, path, kindObject);
    auto readInteger = [&](hid_t obj, const char* name, hid_t type, void* value, const std::string& object) {
        if (!hasAttr(obj, name))
            throw DamagedError(damaged(path, object, std::string("attribute '") + name + "' is missing"));
        Hid attr = check(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose, object + ": cannot open attribute " + name);
        checkStatus(H5Aread(attr.get(), type, value), object + ": attribute '" + name + "' is not a number");
    };
    for (const auto& id : childNames(g.get(), path, kindObject)) {
        const std::string object = kindObject + "/" + id;
        try {
            Hid r = openGroup(g.get(), id, path, object);
            verifySeal(r.get(), path, object, of.checksums());
            StoredAnalysis sa;
            sa.id = id;
            readInteger(r.get(), "checkpoint_step", H5T_NATIVE_INT64, &sa.checkpoint_step, object);
            readInteger(r.get(), "seed", H5T_NATIVE_UINT64, &sa.seed, object);
            sa.created = hasAttr(r.get(), "created") ? readStringAttr(r.get(), "created", object) : "";
            sa.options_json = readStringAttr(r.get(), "options", object);
            sa.result_json = readStringAttr(r.get(), "json", object);
            out.push_back(std::move(sa));
        } catch (const Error&) {
            // A damaged or incomplete result (readRunSummary lists it); the others stay readable.
        }
    }
    return out;
}

CheckpointData readCheckpoint(const std::string& path, int64_t step)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return readCheckpointLocked(path, step);
}

void setCommitFaultHookForTesting(std::function<void(const std::string& point)> hook)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    faultHook() = std::move(hook);
}

FileVerification verifyExperimentFile(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    FileVerification v;
    RunSummary s;
    try {
        s = readRunSummaryLocked(path);
    } catch (const Error& e) {
        v.damaged.push_back(e.what());
        return v;
    }
    v.checksums = s.checksums;
    v.notes = s.notes;
    v.damaged = s.damaged;
    v.objects_checked = 2 + static_cast<int64_t>(s.metrics.size()) + (s.import_json.empty() ? 0 : 1);
    for (const CheckpointInfo& c : s.checkpoints) {
        if (!c.damaged.empty())
            continue;  // already listed
        try {
            const CheckpointData d = readCheckpointLocked(path, c.step);
            v.objects_checked += 1 + static_cast<int64_t>(d.params.size() + d.optimizer.size());
        } catch (const Error& e) {
            v.damaged.push_back(e.what());
        }
    }
    try {
        v.objects_checked += static_cast<int64_t>(readTaskArraysLocked(path).size());
    } catch (const Error& e) {
        v.damaged.push_back(e.what());
    }
    try {
        OpenFile of = openFile(path, H5F_ACC_RDONLY);
        if (present(of.file.get(), "analysis", path, "/analysis")) {
            Hid a = openGroup(of.file.get(), "analysis", path, "/analysis");
            for (const auto& kind : childNames(a.get(), path, "/analysis")) {
                if (!groupAt(a.get(), kind, path, "/analysis/" + kind))
                    continue;
                Hid g = openGroup(a.get(), kind, path, "/analysis/" + kind);
                for (const auto& id : childNames(g.get(), path, "/analysis/" + kind)) {
                    Hid r(H5Gopen2(g.get(), id.c_str(), H5P_DEFAULT), H5Gclose);
                    if (!r.valid())
                        continue;  // listed by the summary
                    v.objects_checked += 1 + readAnalysisDatasets(r.get(), "/analysis/" + kind + "/" + id, path,
                                                                  v.damaged);
                }
            }
        }
    } catch (const Error& e) {
        v.damaged.push_back(e.what());
    }
    return v;
}

void commitToExperimentFile(const std::string& path, const std::vector<MetricsRow>& rows,
                            const CheckpointData* checkpoint, int64_t truncate_after_step,
                            int64_t keep_optimizer_every)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    const bool required = openFile(path, H5F_ACC_RDONLY).checksums();
    commitInPlace(path, [&](hid_t f) {
        Hid metrics = openOrCreateGroup(f, "metrics");
        // Current length and, for truncation, how many leading rows to keep. Existing series are verified
        // first, so a damaged series is never extended under a fresh checksum.
        std::map<std::string, std::vector<double>> existing;
        readSeries(metrics.get(), "", existing, path, required);
        hsize_t keep = existing.count("step") ? existing["step"].size() : 0;
        if (truncate_after_step >= 0 && existing.count("step")) {
            const auto& steps = existing["step"];
            keep = static_cast<hsize_t>(std::upper_bound(steps.begin(), steps.end(), double(truncate_after_step))
                                        - steps.begin());
        }
        std::set<std::string> names;
        for (const auto& [n, v] : existing)
            names.insert(n);
        for (const auto& row : rows)
            for (const auto& [n, v] : row)
                names.insert(n);
        for (const auto& name : names) {
            std::vector<double> values;
            for (const auto& row : rows) {
                auto it = row.find(name);
                values.push_back(it == row.end() ? std::nan("") : it->second);
            }
            // A series new to this file gets NaN for the rows it missed, so all series stay aligned.
            const hsize_t have = existing.count(name) ? std::min<hsize_t>(existing[name].size(), keep) : 0;
            if (have < keep)
                values.insert(values.begin(), keep - have, std::nan(""));
            appendSeries(metrics.get(), name, values, have,
                         existing.count(name) ? existing[name] : std::vector<double>{});
            faultPoint("appended metrics/" + name);
        }
        if (checkpoint) {
            Hid cps = openOrCreateGroup(f, "checkpoints");
            const std::string final = checkpointName(checkpoint->step);
            // First, so the new checkpoint reuses the space freed in this copy of the file.
            if (!checkpoint->optimizer.empty() || !checkpoint->optimizer_scalars.empty())
                dropOptimizerState(cps.get(), checkpoint->step, keep_optimizer_every, path, required);
            const std::string tmpName = ".tmp_" + final;
            if (linkExists(cps.get(), tmpName))
                H5Ldelete(cps.get(), tmpName.c_str(), H5P_DEFAULT);
            {
                Hid g = openOrCreateGroup(cps.get(), tmpName);
                nlohmann::json manifest = nlohmann::json::object();
                Hid params = openOrCreateGroup(g.get(), "params");
                for (const auto& a : checkpoint->params) {
                    manifest["params/" + a.name] = writeArray(params.get(), a, "params/" + a.name);
                    faultPoint("wrote params/" + a.name);
                }
                Hid opt = openOrCreateGroup(g.get(), "optimizer");
                for (const auto& a : checkpoint->optimizer) {
                    manifest["optimizer/" + a.name] = writeArray(opt.get(), a, "optimizer/" + a.name);
                    faultPoint("wrote optimizer/" + a.name);
                }
                for (const auto& [key, value] : checkpoint->optimizer_scalars) {
                    const auto slash = key.rfind('/');
                    Hid pg = openOrCreateGroup(opt.get(), key.substr(0, slash));
                    writeScalarAttr<double>(pg.get(), key.substr(slash + 1), value, H5T_NATIVE_DOUBLE);
                    manifest["optimizer_scalar/" + key] = cks::scalarDigest(key, value);
                }
                writeScalarAttr<int64_t>(g.get(), "step", checkpoint->step, H5T_NATIVE_INT64);
                writeScalarAttr<double>(g.get(), "train_loss", checkpoint->train_loss, H5T_NATIVE_DOUBLE);
                writeScalarAttr<double>(g.get(), "wall_time_s", checkpoint->wall_time_s, H5T_NATIVE_DOUBLE);
                writeStringAttr(g.get(), "manifest", manifest.dump());
                cks::seal(g.get());
            }
            if (linkExists(cps.get(), final))
                H5Ldelete(cps.get(), final.c_str(), H5P_DEFAULT);
            faultPoint("sealed checkpoint");
            checkStatus(H5Lmove(cps.get(), tmpName.c_str(), cps.get(), final.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                        path + ": cannot rename checkpoint " + final);
            faultPoint("linked checkpoint");
        }
        if (truncate_after_step >= 0 && linkExists(f, "checkpoints")) {
            Hid cps = check(H5Gopen2(f, "checkpoints", H5P_DEFAULT), H5Gclose, "cannot open /checkpoints");
            for (const auto& name : childNames(cps.get(), path, "/checkpoints")) {
                const int64_t step = stepFromName(name);
                if (step > truncate_after_step && (!checkpoint || step != checkpoint->step))
                    H5Ldelete(cps.get(), name.c_str(), H5P_DEFAULT);
            }
        }
    });
}

void storeTaskArrays(const std::string& path, const std::vector<NamedArray>& arrays)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    const bool required = openFile(path, H5F_ACC_RDONLY).checksums();
    commitInPlace(path, [&](hid_t f) {
        const bool existed = linkExists(f, "task");
        Hid task = openOrCreateGroup(f, "task");
        nlohmann::json manifest = nlohmann::json::object();
        if (existed) {
            verifySeal(task.get(), path, "/task", required);
            if (hasAttr(task.get(), "manifest"))
                manifest = readManifest(task.get(), path, "/task");
        }
        for (const NamedArray& a : arrays) {
            if (linkExists(task.get(), a.name))
                checkStatus(H5Ldelete(task.get(), a.name.c_str(), H5P_DEFAULT), "cannot replace task/" + a.name);
            manifest["task/" + a.name] = writeArray(task.get(), a, "task/" + a.name);
        }
        writeStringAttr(task.get(), "manifest", manifest.dump());
        cks::seal(task.get());
    });
}

std::vector<NamedArray> readTaskArrays(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return readTaskArraysLocked(path);
}

std::string storeAnalysis(const std::string& path, const std::string& kind, int64_t checkpoint_step, uint64_t seed,
                          const std::string& options_json, const std::string& result_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    (void)openFile(path, H5F_ACC_RDONLY);
    std::string id;
    commitInPlace(path, [&](hid_t f) {
        Hid group = openOrCreateGroup(f, "analysis/" + kind);
        const auto existing = childNames(group.get(), path, "/analysis/" + kind);
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04zu", existing.size() + 1);
        id = buf;
        Hid g = openOrCreateGroup(group.get(), id);
        writeScalarAttr<int64_t>(g.get(), "checkpoint_step", checkpoint_step, H5T_NATIVE_INT64);
        writeScalarAttr<uint64_t>(g.get(), "seed", seed, H5T_NATIVE_UINT64);
        writeStringAttr(g.get(), "created", isoNow());
        writeStringAttr(g.get(), "options", options_json);
        writeStringAttr(g.get(), "json", result_json);
        cks::seal(g.get());
    });
    return id;
}

void storeImportProvenance(const std::string& path, const std::string& provenance_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    (void)openFile(path, H5F_ACC_RDONLY);
    commitInPlace(path, [&](hid_t f) {
        Hid g = openOrCreateGroup(f, "import");
        writeStringAttr(g.get(), "json", provenance_json);
        cks::seal(g.get());
    });
}

} // namespace icl
