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
#include "core/io/bounded_json.h"
#include "core/io/checksums.h"
#include "core/io/config.h"
#include "core/io/hdf5_journal.h"
#include "core/io/hdf5_read.h"
#include "core/io/memory_budget.h"
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

// The one-line message of every damaged object: "RUN.h5: damaged: /checkpoints/000000100 (checksum mismatch)".
std::string damaged(const std::string& path, const std::string& object, const std::string& why)
{
    return path + ": damaged: " + object + " (" + why + ")";
}

// Marks an icl::Error whose message is already a full "damaged" line, so callers do not wrap it again.
struct DamagedError : Error {
    using Error::Error;
};

// A string attribute of the object at `object`, read after its checks (core/io/hdf5_read.h): anything wrong with it
// is damage of that object ("RUN.h5: damaged: / (attribute 'format' holds 4000 values, expected one string)"); a
// memory-budget refusal passes on as it is.
std::string stringAttr(hid_t obj, const std::string& name, const std::string& path, const std::string& object,
                       MemoryBudget* budget = nullptr, uint64_t max_bytes = h5read::kMaxStringBytes)
{
    try {
        return h5read::stringAttribute(obj, name, max_bytes, budget);
    } catch (const h5read::OverBudget&) {
        throw;
    } catch (const Error& e) {
        throw DamagedError(damaged(path, object, e.what()));
    }
}

// One number (integer or float class, one element) of the object at `object`; anything wrong is its damage.
double numberAttr(hid_t obj, const std::string& name, const std::string& path, const std::string& object)
{
    try {
        return h5read::numberAttribute(obj, name);
    } catch (const Error& e) {
        throw DamagedError(damaged(path, object, e.what()));
    }
}

// JSON held in an attribute of the object at `object`, parsed with the nesting limit (core/io/bounded_json.h).
nlohmann::json jsonAttr(const std::string& text, const std::string& path, const std::string& object)
{
    static const std::string source = "JSON";
    try {
        return parseBoundedJson(text, source);
    } catch (const Error& e) {
        std::string why = e.what();
        if (why.rfind(source + ": ", 0) == 0)
            why = why.substr(source.size() + 2);
        throw DamagedError(damaged(path, object, why));
    }
}

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

// Deepest nesting of groups a reader follows below a group it reads (checkpoint names hold a few '/' at most):
// a hostile file cannot make the recursive walks below overflow the stack.
constexpr int kMaxGroupDepth = 32;

// Reads a dataset through the checked helper; a wrong type, rank or shape is damage of `where`, the budget's
// refusal passes on as it is.
template <typename Read>
auto checkedRead(const std::string& path, const std::string& where, Read&& read)
{
    try {
        return read();
    } catch (const h5read::OverBudget&) {
        throw;
    } catch (const Error& e) {
        throw DamagedError(damaged(path, where, e.what()));
    }
}

// Reads every float dataset below `group` (recursively) as NamedArrays with '/'-joined names, checking
// each against the manifest entry keyPrefix + name. `object` is the group's path in the file. Each array's
// bytes are charged to `budget` before they are read.
void readArrays(hid_t group, const std::string& prefix, std::vector<NamedArray>& out, const std::string& path,
                const std::string& object, const std::string& keyPrefix, Manifest& manifest, MemoryBudget& budget,
                int depth = 0)
{
    const std::string here = object + (prefix.empty() ? "" : "/" + prefix);
    if (depth > kMaxGroupDepth)
        throw DamagedError(damaged(path, here, "groups nested deeper than " + std::to_string(kMaxGroupDepth)));
    for (const auto& name : childNames(group, path, here)) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        const std::string where = object + "/" + full;
        if (groupAt(group, name, path, where)) {
            Hid g(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid())
                throw DamagedError(damaged(path, where, "unreadable"));
            readArrays(g.get(), full, out, path, object, keyPrefix, manifest, budget, depth + 1);
            continue;
        }
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid())
            throw DamagedError(damaged(path, where, "unreadable"));
        NamedArray a;
        a.name = full;
        a.data = checkedRead(path, where, [&] { return h5read::floatArray(ds.get(), a.shape, budget, where); });
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
// digest (`required`: a series without one is damaged). A series of another rank or type is damage.
void readSeries(hid_t group, const std::string& prefix, std::map<std::string, std::vector<double>>& out,
                const std::string& path, bool required, MemoryBudget& budget, int depth = 0)
{
    const std::string here = "/metrics" + (prefix.empty() ? "" : "/" + prefix);
    if (depth > kMaxGroupDepth)
        throw DamagedError(damaged(path, here, "groups nested deeper than " + std::to_string(kMaxGroupDepth)));
    for (const auto& name : childNames(group, path, here)) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        const std::string where = "/metrics/" + full;
        if (groupAt(group, name, path, where)) {
            Hid g(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
            if (!g.valid())
                throw DamagedError(damaged(path, where, "unreadable"));
            readSeries(g.get(), full, out, path, required, budget, depth + 1);
            continue;
        }
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid())
            throw DamagedError(damaged(path, where, "unreadable"));
        std::string stored;
        try {
            stored = cks::storedDigest(ds.get());
        } catch (const Error& e) {
            throw DamagedError(damaged(path, where, e.what()));
        }
        if (stored.empty() && required)  // before its values are read: a series nobody wrote is not read
            throw DamagedError(damaged(path, where, "no checksum"));
        std::vector<double> v = checkedRead(path, where, [&] { return h5read::doubleSeries(ds.get(), budget, where); });
        if (!stored.empty() && stored != cks::seriesDigest(full, v))
            throw DamagedError(damaged(path, where, "checksum mismatch"));
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

// Which journals the opens of this thread accept: readers refuse an earlier build's journal with the repair
// command; the writer's own checks before it rolls one back accept it (WriterJournals).
thread_local journal::Policy t_journalPolicy = journal::Policy::reader;

// While alive, opens on this thread are the writer's (a commit or `recover` checking a leftover journal).
struct WriterJournals {
    journal::Policy saved = t_journalPolicy;
    WriterJournals() { t_journalPolicy = journal::Policy::writer; }
    ~WriterJournals() { t_journalPolicy = saved; }
    WriterJournals(const WriterJournals&) = delete;
    WriterJournals& operator=(const WriterJournals&) = delete;
};

// An opened experiment file with its format version. Read-only: the file is never opened for writing here.
struct OpenFile {
    std::unique_ptr<journal::ReadView> view;  // released after the file is closed (declared first)
    Hid file;
    int version = 0;
    std::unique_ptr<MemoryBudget> budget;     // what this open may allocate on the file's say-so
    bool checksums() const { return version >= 2; }
};

// The root's file id and commit generation (docs/file-format.md); absent in files of earlier builds.
journal::Binding readBinding(hid_t root, const std::string& path)
{
    journal::Binding b;
    if (attrPresent(root, "file_id", path, "/")) {
        b.file_id = stringAttr(root, "file_id", path, "/", nullptr, h5read::kShortStringBytes);
        if (b.file_id.size() != 32 || b.file_id.find_first_not_of("0123456789abcdef") != std::string::npos)
            throw DamagedError(damaged(path, "/", "attribute 'file_id' is not 32 hex digits"));
    }
    if (attrPresent(root, "generation", path, "/")) {
        try {
            b.generation = h5read::unsignedAttribute(root, "generation");
        } catch (const Error& e) {
            throw DamagedError(damaged(path, "/", e.what()));
        }
    }
    return b;
}

// Format check, version check and the root's seal; with a journal left beside the file, the file as it was
// before that commit, which must carry the journal's file id and generation.
OpenFile openFile(const std::string& path)
{
    quietHdf5();
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error(path + ": no such file");
    if (fs::is_directory(path, ec))
        throw Error(path + ": is a directory, not an experiment file");
    OpenFile out;
    out.budget = std::make_unique<MemoryBudget>(path);
    // Waits while a commit overwrites pages in place; overlays what a killed commit left (never writes).
    out.view = std::make_unique<journal::ReadView>(path, t_journalPolicy);
    const bool overlaid = out.view->overlaid();
    if (!overlaid && H5Fis_hdf5(path.c_str()) <= 0)
        throw Error(path + ": not an ICL Workbench experiment file (not HDF5, or damaged/truncated)");
    try {
        Hid fapl = check(out.view->fileAccess(), H5Pclose, "H5Pcreate");
        out.file = Hid(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
        if (!out.file.valid())
            throw Error(path + ": cannot open (damaged or truncated HDF5 file)");
        hid_t f = out.file.get();
        if (!attrPresent(f, "format", path, "/"))
            throw Error(path + ": not an ICL Workbench experiment file (no 'format' attribute)");
        const std::string format = stringAttr(f, "format", path, "/", nullptr, h5read::kShortStringBytes);
        if (format != kFileFormat) {
            std::string shown;
            for (unsigned char ch : format.substr(0, 40))
                shown.push_back(ch >= 0x20 && ch < 0x7f ? char(ch) : '?');
            throw Error(path + ": not an ICL Workbench experiment file (format is \"" + shown + "\", expected \""
                        + kFileFormat + "\")");
        }
        const double version = numberAttr(f, "format_version", path, "/");
        if (!(version >= kOldestFileFormatVersion && version <= kFileFormatVersion) || version != std::floor(version)) {
            char shown[32];
            std::snprintf(shown, sizeof shown, "%.17g", version);
            throw Error(path + ": unsupported format_version " + shown + " (this build reads versions "
                        + std::to_string(kOldestFileFormatVersion) + " to " + std::to_string(kFileFormatVersion) + ")");
        }
        out.version = static_cast<int>(version);
        verifySeal(f, path, "/", out.checksums());
        if (overlaid && out.view->bound()) {
            // The journal is this file's only if the file before its commit is the one it records.
            const journal::Binding want = out.view->binding();
            const journal::Binding got = readBinding(f, path);
            const auto shown = [](const journal::Binding& b) {
                return "file id " + (b.file_id.empty() ? std::string("none") : b.file_id) + ", generation "
                       + std::to_string(b.generation);
            };
            if (got.file_id != want.file_id || got.generation != want.generation)
                throw Error(journal::refusal(path, "belongs to another file or commit (it records " + shown(want)
                                                       + "; the file before that commit has " + shown(got) + ")"));
        }
    } catch (const Error& e) {
        if (!overlaid || std::string(e.what()).find(journal::journalPath(path)) != std::string::npos)
            throw;
        throw Error(std::string(e.what()) + " (the file as it was before the commit interrupted in "
                    + journal::journalPath(path) + "; nothing was changed)");
    }
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

// Writes the root's commit generation in place (the attribute keeps its place in the root's object header, so
// the page holding it is among those every commit journals).
void writeGeneration(hid_t root, uint64_t generation)
{
    if (H5Aexists(root, "generation") > 0) {
        Hid attr(H5Aopen(root, "generation", H5P_DEFAULT), H5Aclose);
        Hid type(attr.valid() ? H5Aget_type(attr.get()) : -1, H5Tclose);
        Hid space(attr.valid() ? H5Aget_space(attr.get()) : -1, H5Sclose);
        if (type.valid() && space.valid() && H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 8
            && H5Tget_sign(type.get()) == H5T_SGN_NONE && H5Sget_simple_extent_type(space.get()) == H5S_SCALAR) {
            checkStatus(H5Awrite(attr.get(), H5T_NATIVE_UINT64, &generation), "cannot write attribute generation");
            return;
        }
    }
    writeScalarAttr<uint64_t>(root, "generation", generation, H5T_STD_U64LE);
}

// Every commit advances the root's generation and records the binding before it in its journal
// (core/io/hdf5_journal.h); a file of an earlier build gets its random file id here.
void advanceGeneration(hid_t root, const std::string& path, journal::Commit& commit)
{
    const journal::Binding before = readBinding(root, path);
    if (before.file_id.empty())
        writeStringAttr(root, "file_id", journal::newFileId());
    writeGeneration(root, before.generation + 1);
    cks::seal(root);
    commit.setBinding(before);
}

// Refuses the roll-back of a journal beside `path` (called by the writer with the journal in place, so the opens
// below read the file as the roll-back will leave it): it must open, be bound to the journal and, unless
// `acceptDamaged`, verify clean, so a journal crafted to restore garbage is never applied.
void checkRollBack(const std::string& path, bool acceptDamaged);

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
        journal::Commit commit(
            path, [](const std::string& point) { faultPoint(point); }, [&path] { checkRollBack(path, false); });
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
            advanceGeneration(f.get(), path, commit);
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
nlohmann::json readManifest(hid_t g, const std::string& path, const std::string& object,
                            MemoryBudget* budget = nullptr)
{
    if (!attrPresent(g, "manifest", path, object))
        throw DamagedError(damaged(path, object, "no checksum manifest"));
    nlohmann::json m = jsonAttr(stringAttr(g, "manifest", path, object, budget), path, object + " manifest");
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
    const double step = numberAttr(g.get(), "step", path, object);
    c.train_loss = numberAttr(g.get(), "train_loss", path, object);
    c.wall_time_s = numberAttr(g.get(), "wall_time_s", path, object);
    if (!(step >= 0 && step < 1e18) || step != std::floor(step))  // before the cast, which is undefined outside
        throw DamagedError(damaged(path, object, "step attribute does not match the name"));
    c.step = static_cast<int64_t>(step);
    if (checkpointName(c.step) != name)
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
    const int fd = ::open(lockPath.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a FIFO never blocks
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
    OpenFile of = openFile(path);
    hid_t f = of.file.get();
    MemoryBudget& budget = *of.budget;
    const bool required = of.checksums();
    RunSummary s;
    s.path = path;
    s.format = kFileFormat;
    s.format_version = of.version;
    s.checksums = required;
    const uint64_t shortText = h5read::kShortStringBytes;
    s.app_version
        = attrPresent(f, "app_version", path, "/") ? stringAttr(f, "app_version", path, "/", &budget, shortText) : "";
    s.created = attrPresent(f, "created", path, "/") ? stringAttr(f, "created", path, "/", &budget, shortText) : "";
    if (!present(f, "config", path, "/config"))
        throw Error(damaged(path, "/config", "missing"));
    {
        Hid config = openGroup(f, "config", path, "/config");
        verifySeal(config.get(), path, "/config", required);
        s.config_json = stringAttr(config.get(), "json", path, "/config", &budget);
    }
    // Config parse (nesting bounded) and validation: every later json::parse of config_json succeeds.
    const nlohmann::json config = jsonAttr(s.config_json, path, "/config");
    if (!config.is_object())
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
        readSeries(m.get(), "", s.metrics, path, required, budget);
    }
    if (present(f, "import", path, "/import")) {
        Hid g = openGroup(f, "import", path, "/import");
        verifySeal(g.get(), path, "/import", required);
        s.import_json = stringAttr(g.get(), "json", path, "/import", &budget);
        jsonAttr(s.import_json, path, "/import");  // nesting bounded, so the pages and commands may parse it
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
    if (!of.view->note().empty())
        s.notes.push_back(of.view->note());
    if (!required)
        s.notes.push_back("format version " + std::to_string(of.version)
                          + " has no checksums: damage to this file cannot be detected");
    noteLeftovers(path, s.notes);
    return s;
}

CheckpointData readCheckpointLocked(const std::string& path, int64_t step, CheckpointParts parts)
{
    OpenFile of = openFile(path);
    MemoryBudget& budget = *of.budget;
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
        digests = readManifest(g.get(), path, object, &budget);
        manifest.digests = &digests;
    }
    if (!present(g.get(), "params", path, object + "/params"))
        throw DamagedError(damaged(path, object + "/params", "missing"));
    {
        Hid p = openGroup(g.get(), "params", path, object + "/params");
        readArrays(p.get(), "", c.params, path, object + "/params", "params/", manifest, budget);
        // Names were written with '.' (e.g. "blocks.0.attn.w_q"); groups only appear for '/'.
    }
    checkComplete(manifest, "params/", path, object + "/params");
    if (parts == CheckpointParts::ParamsAndOptimizer && present(g.get(), "optimizer", path, object + "/optimizer")) {
        Hid o = openGroup(g.get(), "optimizer", path, object + "/optimizer");
        readArrays(o.get(), "", c.optimizer, path, object + "/optimizer", "optimizer/", manifest, budget);
        for (const auto& group : childNames(o.get(), path, object + "/optimizer")) {
            const std::string where = object + "/optimizer/" + group;
            if (!groupAt(o.get(), group, path, where))
                continue;
            Hid pg = openGroup(o.get(), group, path, where);
            const int n = H5Aget_num_attrs(pg.get());
            if (n < 0)
                throw DamagedError(damaged(path, where, "unreadable"));
            for (int i = 0; i < n; ++i) {
                std::string attrName;
                {
                    Hid attr(H5Aopen_by_idx(pg.get(), ".", H5_INDEX_NAME, H5_ITER_INC, static_cast<hsize_t>(i),
                                            H5P_DEFAULT, H5P_DEFAULT),
                             H5Aclose);
                    const ssize_t len = attr.valid() ? H5Aget_name(attr.get(), 0, nullptr) : -1;
                    if (len <= 0 || len > 4096)
                        throw DamagedError(damaged(path, where, "unreadable"));
                    attrName.resize(static_cast<size_t>(len) + 1);
                    if (H5Aget_name(attr.get(), attrName.size(), attrName.data()) != len)
                        throw DamagedError(damaged(path, where, "unreadable"));
                    attrName.resize(static_cast<size_t>(len));
                }
                const double v = numberAttr(pg.get(), attrName, path, where);
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
    if (parts == CheckpointParts::ParamsAndOptimizer) {
        checkComplete(manifest, "optimizer/", path, object + "/optimizer");
        checkComplete(manifest, "optimizer_scalar/", path, object + "/optimizer");
    }
    return c;
}

std::vector<NamedArray> readTaskArraysLocked(const std::string& path)
{
    OpenFile of = openFile(path);
    hid_t f = of.file.get();
    std::vector<NamedArray> out;
    if (!present(f, "task", path, "/task"))
        return out;
    Hid g = openGroup(f, "task", path, "/task");
    verifySeal(g.get(), path, "/task", of.checksums());
    nlohmann::json digests;
    Manifest manifest;
    if (of.checksums() || attrPresent(g.get(), "manifest", path, "/task")) {
        digests = readManifest(g.get(), path, "/task", of.budget.get());
        manifest.digests = &digests;
    }
    readArrays(g.get(), "", out, path, "/task", "task/", manifest, *of.budget);
    checkComplete(manifest, "task/", path, "/task");
    return out;
}

// Reads every dataset below an analysis group (captured activations) in blocks of rows, so a large capture need
// not fit in memory (each block checked against `budget`); HDF5 checks their Fletcher-32 checksums on the way.
// Returns how many were read.
int64_t readAnalysisDatasets(hid_t group, const std::string& object, const std::string& path,
                             std::vector<std::string>& damagedOut, const MemoryBudget& budget, int depth = 0)
{
    if (depth > kMaxGroupDepth) {
        damagedOut.push_back(damaged(path, object, "groups nested deeper than " + std::to_string(kMaxGroupDepth)));
        return 0;
    }
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
                n += readAnalysisDatasets(g.get(), where, path, damagedOut, budget, depth + 1);
            continue;
        }
        ++n;
        Hid ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
        if (!ds.valid()) {
            damagedOut.push_back(damaged(path, where, "unreadable"));
            continue;
        }
        try {
            h5read::readThrough(ds.get(), budget, where);
        } catch (const h5read::OverBudget& e) {
            damagedOut.push_back(e.what());
        } catch (const Error& e) {
            damagedOut.push_back(damaged(path, where, e.what()));
        }
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

// Errors from reading a file are one line about the file: std::bad_alloc (an allocation the file's content asked
// for), std::out_of_range and std::length_error, nlohmann's exceptions, never "internal error".
template <typename F>
auto guarded(const std::string& path, F&& f) -> decltype(f())
{
    try {
        return f();
    } catch (const Error&) {
        throw;
    } catch (const std::bad_alloc&) {
        throw Error(path + ": refused: reading it needs more memory than this machine has");
    } catch (const std::exception& e) {
        throw Error(path + ": unreadable (" + std::string(e.what()) + ")");
    }
}

FileVerification verifyLocked(const std::string& path)
{
    FileVerification v;
    RunSummary s;
    try {
        s = readRunSummaryLocked(path);
    } catch (const DamagedError& e) {
        v.damaged.push_back(e.what());
        return v;
    } catch (const Error& e) {
        v.refused = e.what();
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
            const CheckpointData d = readCheckpointLocked(path, c.step, CheckpointParts::ParamsAndOptimizer);
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
        OpenFile of = openFile(path);
        if (present(of.file.get(), "analysis", path, "/analysis")) {
            Hid a = openGroup(of.file.get(), "analysis", path, "/analysis");
            for (const auto& kind : childNames(a.get(), path, "/analysis")) {
                if (!groupAt(a.get(), kind, path, "/analysis/" + kind))
                    continue;
                Hid g = openGroup(a.get(), kind, path, "/analysis/" + kind);
                for (const auto& id : childNames(g.get(), path, "/analysis/" + kind)) {
                    const std::string object = "/analysis/" + kind + "/" + id;
                    Hid r(H5Gopen2(g.get(), id.c_str(), H5P_DEFAULT), H5Gclose);
                    if (!r.valid())
                        continue;  // listed by the summary
                    // The JSON a stored result holds (options, json) parses within the nesting limit.
                    try {
                        for (const char* name : {"options", "json"})
                            if (attrPresent(r.get(), name, path, object)) {
                                MemoryBudget budget(path);
                                jsonAttr(stringAttr(r.get(), name, path, object, &budget), path,
                                         object + " " + name);
                            }
                    } catch (const Error& e) {
                        v.damaged.push_back(e.what());
                    }
                    v.objects_checked += 1 + readAnalysisDatasets(r.get(), object, path, v.damaged, *of.budget);
                }
            }
        }
    } catch (const Error& e) {
        v.damaged.push_back(e.what());
    }
    return v;
}

void checkRollBack(const std::string& path, bool acceptDamaged)
{
    WriterJournals writer;  // an earlier build's journal is checked the same way, then rolled back
    const std::string j = journal::journalPath(path);
    if (acceptDamaged) {
        try {
            (void)readRunSummaryLocked(path);
        } catch (const Error& e) {
            throw Error(journal::refusal(path, "does not restore a readable file (" + std::string(e.what()) + ")"));
        }
        return;
    }
    const FileVerification v = verifyLocked(path);
    if (!v.refused.empty())
        throw Error(v.refused.find(j) != std::string::npos
                        ? v.refused  // the journal itself was refused
                        : path + ": " + j + " would restore a file that does not open (" + v.refused
                              + "); it was left as it is and the file was not changed (`icl-cli recover " + path
                              + " --accept-damaged` rolls back anyway)");
    if (v.damaged.empty())
        return;
    const std::string first = v.damaged.front();
    if (first.find(j) != std::string::npos)
        throw Error(first);  // the journal itself was refused
    throw Error(path + ": " + j + " would restore a file with " + std::to_string(v.damaged.size()) + " damaged object"
                + (v.damaged.size() == 1 ? "" : "s") + " (" + first + "); it was left as it is and the file was not "
                "changed (`icl-cli recover " + path + " --accept-damaged` rolls back anyway)");
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
            writeStringAttr(f.get(), "file_id", journal::newFileId());
            writeGeneration(f.get(), 0);
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
    return guarded(path, [&] { return readRunSummaryLocked(path); });
}

std::vector<StoredAnalysis> readStoredAnalyses(const std::string& path, const std::string& kind)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return guarded(path, [&] {
        OpenFile of = openFile(path);
        hid_t f = of.file.get();
        std::vector<StoredAnalysis> out;
        const std::string kindObject = "/analysis/" + kind;
        if (!present(f, "analysis", path, "/analysis"))
            return out;
        Hid a = openGroup(f, "analysis", path, "/analysis");
        if (!present(a.get(), kind, path, kindObject) || !groupAt(a.get(), kind, path, kindObject))
            return out;
        Hid g = openGroup(a.get(), kind, path, kindObject);
        MemoryBudget& budget = *of.budget;  // the results read are kept: their sizes add up
        for (const auto& id : childNames(g.get(), path, kindObject)) {
            const std::string object = kindObject + "/" + id;
            try {
                Hid r = openGroup(g.get(), id, path, object);
                verifySeal(r.get(), path, object, of.checksums());
                StoredAnalysis sa;
                sa.id = id;
                try {
                    sa.checkpoint_step = h5read::integerAttribute(r.get(), "checkpoint_step");
                    sa.seed = h5read::unsignedAttribute(r.get(), "seed");
                } catch (const Error& e) {
                    throw DamagedError(damaged(path, object, e.what()));
                }
                sa.created = hasAttr(r.get(), "created")
                    ? stringAttr(r.get(), "created", path, object, &budget, h5read::kShortStringBytes)
                    : "";
                sa.options_json = stringAttr(r.get(), "options", path, object, &budget);
                sa.result_json = stringAttr(r.get(), "json", path, object, &budget);
                // Nesting bounded, so the callers' own parses never recurse on a file's depth.
                jsonAttr(sa.options_json, path, object + " options");
                jsonAttr(sa.result_json, path, object + " json");
                out.push_back(std::move(sa));
            } catch (const h5read::OverBudget&) {
                throw;
            } catch (const Error&) {
                // A damaged or incomplete result (readRunSummary or verify lists it); the others stay readable.
            }
        }
        return out;
    });
}

CheckpointData readCheckpoint(const std::string& path, int64_t step, CheckpointParts parts)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return guarded(path, [&] { return readCheckpointLocked(path, step, parts); });
}

int64_t lastUsableCheckpoint(const RunSummary& summary)
{
    if (summary.checkpoints.empty())
        throw Error(summary.path + ": the file holds no checkpoint");
    for (auto c = summary.checkpoints.rbegin(); c != summary.checkpoints.rend(); ++c)
        if (c->damaged.empty())
            return c->step;
    throw Error(summary.checkpoints.back().damaged + "; every checkpoint of the file is damaged");
}

int64_t checkpointToRead(const RunSummary& summary, int64_t step)
{
    if (step == -1)
        return lastUsableCheckpoint(summary);
    const auto& cps = summary.checkpoints;
    if (step >= 0 && std::any_of(cps.begin(), cps.end(), [&](const CheckpointInfo& c) { return c.step == step; }))
        return step;
    // The saved steps, the first and last five of a long run.
    std::string saved;
    for (size_t i = 0; i < cps.size(); ++i) {
        if (cps.size() > 10 && i == 5) {
            saved += ", …";
            i = cps.size() - 5;
        }
        saved += (saved.empty() ? "" : ", ") + std::to_string(cps[i].step);
    }
    const std::string steps = cps.empty() ? "the file holds no checkpoint" : "saved: " + saved;
    if (step < -1)
        throw Error("checkpoint " + std::to_string(step) + ": expected a saved step or -1 for the last one not "
                    "damaged (" + steps + ")");
    throw Error(summary.path + ": no checkpoint at step " + std::to_string(step) + " (" + steps + ")");
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
    try {
        return guarded(path, [&] { return verifyLocked(path); });
    } catch (const Error& e) {
        FileVerification v;
        v.refused = e.what();
        return v;
    }
}

std::string recoverExperimentFile(const std::string& path, bool accept_damaged)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return guarded(path, [&] {
        std::error_code ec;
        if (!fs::exists(path, ec))
            throw Error(path + ": no such file");
        journal::WriterLock writer(path, [&] { checkRollBack(path, accept_damaged); });
        (void)readRunSummaryLocked(path);  // an experiment file (another program's HDF5 file is not trimmed)
        const uint64_t cut = writer.trimPastEndOfAllocation();
        std::string done = writer.recovery();
        if (cut > 0)
            done += std::string(done.empty() ? "" : "; ") + "cut " + std::to_string(cut)
                    + " bytes an interrupted commit had written past the end of the file's data";
        return path + ": " + (done.empty() ? "nothing to recover (no interrupted commit)" : done);
    });
}

void commitToExperimentFile(const std::string& path, const std::vector<MetricsRow>& rows,
                            const CheckpointData* checkpoint, int64_t truncate_after_step,
                            int64_t keep_optimizer_every)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    guarded(path, [&] {
        const bool required = [&] {
            WriterJournals writer;  // the writer itself rolls back whatever journal the open overlays
            return openFile(path).checksums();
        }();
        commitInPlace(path, [&](hid_t f) {
            Hid metrics = openOrCreateGroup(f, "metrics");
            // Current length and, for truncation, how many leading rows to keep. Existing series are verified
            // first, so a damaged series is never extended under a fresh checksum.
            std::map<std::string, std::vector<double>> existing;
            MemoryBudget budget(path);
            readSeries(metrics.get(), "", existing, path, required, budget);
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
    });
}

void storeTaskArrays(const std::string& path, const std::vector<NamedArray>& arrays)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    guarded(path, [&] {
        const bool required = [&] {
            WriterJournals writer;
            return openFile(path).checksums();
        }();
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
    });
}

std::vector<NamedArray> readTaskArrays(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    return guarded(path, [&] { return readTaskArraysLocked(path); });
}

std::string storeAnalysis(const std::string& path, const std::string& kind, int64_t checkpoint_step, uint64_t seed,
                          const std::string& options_json, const std::string& result_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    {
        WriterJournals writer;
        guarded(path, [&] { (void)openFile(path); });
    }
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

bool anyHdf5ObjectOpen()
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    return H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0;  // < 0 (an HDF5 error) counts as open
}

void storeImportProvenance(const std::string& path, const std::string& provenance_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    {
        WriterJournals writer;
        guarded(path, [&] { (void)openFile(path); });
    }
    commitInPlace(path, [&](hid_t f) {
        Hid g = openOrCreateGroup(f, "import");
        writeStringAttr(g.get(), "json", provenance_json);
        cks::seal(g.get());
    });
}

} // namespace icl
