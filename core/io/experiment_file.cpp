#include "core/io/experiment_file.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include "core/error.h"
#include "core/version.h"

namespace fs = std::filesystem;

namespace icl {

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

bool linkExists(hid_t loc, const std::string& name)
{
    return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

void writeStringAttr(hid_t obj, const std::string& name, const std::string& value)
{
    Hid type = check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    Hid space = check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
    if (H5Aexists(obj, name.c_str()) > 0)
        H5Adelete(obj, name.c_str());
    Hid attr = check(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                     "cannot create attribute " + name);
    const char* data = value.c_str();
    checkStatus(H5Awrite(attr.get(), type.get(), &data), "cannot write attribute " + name);
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

std::vector<std::string> childNames(hid_t group)
{
    std::vector<std::string> names;
    H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, nullptr,
               [](hid_t, const char* name, const H5L_info_t*, void* data) -> herr_t {
                   static_cast<std::vector<std::string>*>(data)->push_back(name);
                   return 0;
               },
               &names);
    return names;
}

bool isGroup(hid_t loc, const std::string& name)
{
    H5O_info_t info;
    if (H5Oget_info_by_name(loc, name.c_str(), &info, H5P_DEFAULT) < 0)
        return false;
    return info.type == H5O_TYPE_GROUP;
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

void writeArray(hid_t group, const NamedArray& a)
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
}

// Reads every float dataset below `group` (recursively) as NamedArrays with '/'-joined names.
void readArrays(hid_t group, const std::string& prefix, std::vector<NamedArray>& out, const std::string& where)
{
    for (const auto& name : childNames(group)) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        if (isGroup(group, name)) {
            Hid g = check(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose, where + ": cannot open " + full);
            readArrays(g.get(), full, out, where);
            continue;
        }
        Hid ds = check(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, where + ": cannot open " + full);
        Hid space = check(H5Dget_space(ds.get()), H5Sclose, "H5Dget_space");
        const int rank = H5Sget_simple_extent_ndims(space.get());
        std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
        H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
        NamedArray a;
        a.name = full;
        size_t count = 1;
        for (auto v : dims) {
            a.shape.push_back(static_cast<int64_t>(v));
            count *= v;
        }
        a.data.resize(count);
        if (count)
            checkStatus(H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.data.data()),
                        where + ": cannot read dataset " + full + " (damaged file?)");
        out.push_back(std::move(a));
    }
}

// Reads every 1-D dataset below `group` (recursively) as double series.
void readSeries(hid_t group, const std::string& prefix, std::map<std::string, std::vector<double>>& out,
                const std::string& where)
{
    for (const auto& name : childNames(group)) {
        const std::string full = prefix.empty() ? name : prefix + "/" + name;
        if (isGroup(group, name)) {
            Hid g = check(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose, where + ": cannot open " + full);
            readSeries(g.get(), full, out, where);
            continue;
        }
        Hid ds = check(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose, where + ": cannot open metric " + full);
        Hid space = check(H5Dget_space(ds.get()), H5Sclose, "H5Dget_space");
        const hssize_t n = H5Sget_simple_extent_npoints(space.get());
        std::vector<double> v(static_cast<size_t>(std::max<hssize_t>(n, 0)));
        if (n > 0)
            checkStatus(H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()),
                        where + ": cannot read metric " + full + " (damaged file?)");
        out[full] = std::move(v);
    }
}

Hid openFile(const std::string& path, unsigned flags)
{
    quietHdf5();
    std::error_code ec;
    if (!fs::exists(path, ec))
        throw Error(path + ": no such file");
    if (fs::is_directory(path, ec))
        throw Error(path + ": is a directory, not an experiment file");
    if (H5Fis_hdf5(path.c_str()) <= 0)
        throw Error(path + ": not an ICL Workbench experiment file (not HDF5, or damaged/truncated)");
    Hid f(H5Fopen(path.c_str(), flags, H5P_DEFAULT), H5Fclose);
    if (!f.valid())
        throw Error(path + ": cannot open (damaged or truncated HDF5 file)");
    std::string format;
    try {
        format = readStringAttr(f.get(), "format", path);
    } catch (const Error&) {
        throw Error(path + ": not an ICL Workbench experiment file (no 'format' attribute)");
    }
    if (format != kFileFormat)
        throw Error(path + ": not an ICL Workbench experiment file (format is \"" + format + "\", expected \""
                    + kFileFormat + "\")");
    const double version = readNumberAttr(f.get(), "format_version", path);
    if (version > kFileFormatVersion || version < 1)
        throw Error(path + ": unsupported format_version " + std::to_string(static_cast<int>(version))
                    + " (this build reads version " + std::to_string(kFileFormatVersion) + ")");
    return f;
}

void syncFile(const std::string& path)
{
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// Copy-on-write commit: edit a copy, flush it, then atomically rename it over the original.
template <typename Edit>
void commitCopy(const std::string& path, Edit&& edit)
{
    const std::string tmp = path + ".tmp";
    std::error_code ec;
    fs::copy_file(path, tmp, fs::copy_options::overwrite_existing, ec);
    if (ec)
        throw Error(path + ": cannot copy to " + tmp + " (" + ec.message() + ")");
    try {
        {
            Hid f(H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
            if (!f.valid())
                throw Error(tmp + ": cannot open for writing");
            edit(f.get());
            checkStatus(H5Fflush(f.get(), H5F_SCOPE_GLOBAL), tmp + ": flush failed");
        }
        syncFile(tmp);
        fs::rename(tmp, path, ec);
        if (ec)
            throw Error(path + ": cannot replace with " + tmp + " (" + ec.message() + ")");
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
}

void appendSeries(hid_t metrics, const std::string& name, const std::vector<double>& values, hsize_t keep)
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
    if (values.empty())
        return;
    Hid fileSpace = check(H5Dget_space(ds.get()), H5Sclose, "H5Dget_space");
    hsize_t count = values.size();
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    Hid memSpace = check(H5Screate_simple(1, &count, nullptr), H5Sclose, "H5Screate_simple");
    checkStatus(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, memSpace.get(), fileSpace.get(), H5P_DEFAULT, values.data()),
                "cannot write metric " + name);
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
    {
        Hid f(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
        if (!f.valid())
            throw Error(path + ": cannot create file");
        writeStringAttr(f.get(), "format", kFileFormat);
        writeScalarAttr<int32_t>(f.get(), "format_version", kFileFormatVersion, H5T_NATIVE_INT32);
        writeStringAttr(f.get(), "app_version", ICL_APP_VERSION);
        writeStringAttr(f.get(), "created", isoNow());
        Hid config = openOrCreateGroup(f.get(), "config");
        writeStringAttr(config.get(), "json", config_json);
        openOrCreateGroup(f.get(), "checkpoints");
        openOrCreateGroup(f.get(), "metrics");
        H5Fflush(f.get(), H5F_SCOPE_GLOBAL);
    }
    syncFile(tmp);
    fs::rename(tmp, path, ec);
    if (ec)
        throw Error(path + ": cannot create (" + ec.message() + ")");
}

RunSummary readRunSummary(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    Hid f = openFile(path, H5F_ACC_RDONLY);
    RunSummary s;
    s.path = path;
    s.format = kFileFormat;
    s.format_version = static_cast<int>(readNumberAttr(f.get(), "format_version", path));
    s.app_version = hasAttr(f.get(), "app_version") ? readStringAttr(f.get(), "app_version", path) : "";
    s.created = hasAttr(f.get(), "created") ? readStringAttr(f.get(), "created", path) : "";
    if (!linkExists(f.get(), "config"))
        throw Error(path + ": damaged experiment file (no /config)");
    {
        Hid config = check(H5Gopen2(f.get(), "config", H5P_DEFAULT), H5Gclose, path + ": cannot open /config");
        s.config_json = readStringAttr(config.get(), "json", path + ":/config");
    }
    if (linkExists(f.get(), "checkpoints")) {
        Hid cps = check(H5Gopen2(f.get(), "checkpoints", H5P_DEFAULT), H5Gclose, path + ": cannot open /checkpoints");
        for (const auto& name : childNames(cps.get())) {
            if (name.empty() || name[0] == '.')
                continue;  // an unfinished temporary group
            Hid g = check(H5Gopen2(cps.get(), name.c_str(), H5P_DEFAULT), H5Gclose,
                          path + ": cannot open checkpoint " + name);
            const std::string where = path + ":/checkpoints/" + name;
            CheckpointInfo c;
            c.step = static_cast<int64_t>(readNumberAttr(g.get(), "step", where));
            c.train_loss = readNumberAttr(g.get(), "train_loss", where);
            c.wall_time_s = readNumberAttr(g.get(), "wall_time_s", where);
            s.checkpoints.push_back(c);
        }
        std::sort(s.checkpoints.begin(), s.checkpoints.end(),
                  [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
    }
    if (linkExists(f.get(), "metrics")) {
        Hid m = check(H5Gopen2(f.get(), "metrics", H5P_DEFAULT), H5Gclose, path + ": cannot open /metrics");
        readSeries(m.get(), "", s.metrics, path);
    }
    if (linkExists(f.get(), "import")) {
        Hid g = check(H5Gopen2(f.get(), "import", H5P_DEFAULT), H5Gclose, path + ": cannot open /import");
        s.import_json = readStringAttr(g.get(), "json", path + ":/import");
    }
    if (linkExists(f.get(), "analysis")) {
        Hid a = check(H5Gopen2(f.get(), "analysis", H5P_DEFAULT), H5Gclose, path + ": cannot open /analysis");
        for (const auto& kind : childNames(a.get()))
            if (isGroup(a.get(), kind)) {
                Hid g = check(H5Gopen2(a.get(), kind.c_str(), H5P_DEFAULT), H5Gclose, path + ": /analysis/" + kind);
                s.analyses[kind] = static_cast<int>(childNames(g.get()).size());
            }
    }
    return s;
}

CheckpointData readCheckpoint(const std::string& path, int64_t step)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    Hid f = openFile(path, H5F_ACC_RDONLY);
    const std::string name = "checkpoints/" + checkpointName(step);
    if (!linkExists(f.get(), "checkpoints") || !linkExists(f.get(), name))
        throw Error(path + ": no checkpoint at step " + std::to_string(step));
    Hid g = check(H5Gopen2(f.get(), name.c_str(), H5P_DEFAULT), H5Gclose, path + ": cannot open " + name);
    const std::string where = path + ":/" + name;
    CheckpointData c;
    c.step = static_cast<int64_t>(readNumberAttr(g.get(), "step", where));
    c.train_loss = readNumberAttr(g.get(), "train_loss", where);
    c.wall_time_s = readNumberAttr(g.get(), "wall_time_s", where);
    if (!linkExists(g.get(), "params"))
        throw Error(where + ": no params (damaged checkpoint)");
    {
        Hid p = check(H5Gopen2(g.get(), "params", H5P_DEFAULT), H5Gclose, where + ": cannot open params");
        readArrays(p.get(), "", c.params, where);
        // Names were written with '.' (e.g. "blocks.0.attn.w_q"); groups only appear for '/'.
    }
    if (linkExists(g.get(), "optimizer")) {
        Hid o = check(H5Gopen2(g.get(), "optimizer", H5P_DEFAULT), H5Gclose, where + ": cannot open optimizer");
        readArrays(o.get(), "", c.optimizer, where);
        for (const auto& group : childNames(o.get())) {
            if (!isGroup(o.get(), group))
                continue;
            Hid pg = check(H5Gopen2(o.get(), group.c_str(), H5P_DEFAULT), H5Gclose, where + ": optimizer " + group);
            const int n = H5Aget_num_attrs(pg.get());
            for (int i = 0; i < n; ++i) {
                char attrName[256] = {0};
                Hid attr(H5Aopen_by_idx(pg.get(), ".", H5_INDEX_NAME, H5_ITER_INC, static_cast<hsize_t>(i),
                                        H5P_DEFAULT, H5P_DEFAULT),
                         H5Aclose);
                if (!attr.valid())
                    continue;
                H5Aget_name(attr.get(), sizeof attrName, attrName);
                double v = 0;
                if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0)
                    c.optimizer_scalars[group + "/" + attrName] = v;
            }
        }
    }
    return c;
}

void commitToExperimentFile(const std::string& path, const std::vector<MetricsRow>& rows,
                            const CheckpointData* checkpoint, int64_t truncate_after_step)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    { Hid probe = openFile(path, H5F_ACC_RDONLY); }
    commitCopy(path, [&](hid_t f) {
        Hid metrics = openOrCreateGroup(f, "metrics");
        // Current length and, for truncation, how many leading rows to keep.
        std::map<std::string, std::vector<double>> existing;
        readSeries(metrics.get(), "", existing, path);
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
            appendSeries(metrics.get(), name, values, have);
        }
        if (checkpoint) {
            Hid cps = openOrCreateGroup(f, "checkpoints");
            const std::string final = checkpointName(checkpoint->step);
            const std::string tmpName = ".tmp_" + final;
            if (linkExists(cps.get(), tmpName))
                H5Ldelete(cps.get(), tmpName.c_str(), H5P_DEFAULT);
            {
                Hid g = openOrCreateGroup(cps.get(), tmpName);
                writeScalarAttr<int64_t>(g.get(), "step", checkpoint->step, H5T_NATIVE_INT64);
                writeScalarAttr<double>(g.get(), "train_loss", checkpoint->train_loss, H5T_NATIVE_DOUBLE);
                writeScalarAttr<double>(g.get(), "wall_time_s", checkpoint->wall_time_s, H5T_NATIVE_DOUBLE);
                Hid params = openOrCreateGroup(g.get(), "params");
                for (const auto& a : checkpoint->params)
                    writeArray(params.get(), a);
                Hid opt = openOrCreateGroup(g.get(), "optimizer");
                for (const auto& a : checkpoint->optimizer)
                    writeArray(opt.get(), a);
                for (const auto& [key, value] : checkpoint->optimizer_scalars) {
                    const auto slash = key.rfind('/');
                    Hid pg = openOrCreateGroup(opt.get(), key.substr(0, slash));
                    writeScalarAttr<double>(pg.get(), key.substr(slash + 1), value, H5T_NATIVE_DOUBLE);
                }
            }
            if (linkExists(cps.get(), final))
                H5Ldelete(cps.get(), final.c_str(), H5P_DEFAULT);
            checkStatus(H5Lmove(cps.get(), tmpName.c_str(), cps.get(), final.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                        path + ": cannot rename checkpoint " + final);
        }
        if (truncate_after_step >= 0 && linkExists(f, "checkpoints")) {
            Hid cps = check(H5Gopen2(f, "checkpoints", H5P_DEFAULT), H5Gclose, "cannot open /checkpoints");
            for (const auto& name : childNames(cps.get())) {
                if (name[0] != '.' && std::stoll(name) > truncate_after_step
                    && (!checkpoint || std::stoll(name) != checkpoint->step))
                    H5Ldelete(cps.get(), name.c_str(), H5P_DEFAULT);
            }
        }
    });
}

void storeTaskArrays(const std::string& path, const std::vector<NamedArray>& arrays)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    { Hid probe = openFile(path, H5F_ACC_RDONLY); }
    commitCopy(path, [&](hid_t f) {
        Hid task = openOrCreateGroup(f, "task");
        for (const NamedArray& a : arrays) {
            if (linkExists(task.get(), a.name))
                checkStatus(H5Ldelete(task.get(), a.name.c_str(), H5P_DEFAULT), "cannot replace task/" + a.name);
            writeArray(task.get(), a);
        }
    });
}

std::vector<NamedArray> readTaskArrays(const std::string& path)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    Hid f = openFile(path, H5F_ACC_RDONLY);
    std::vector<NamedArray> out;
    if (!linkExists(f.get(), "task"))
        return out;
    Hid g = check(H5Gopen2(f.get(), "task", H5P_DEFAULT), H5Gclose, path + ": cannot open /task");
    readArrays(g.get(), "", out, path + ":/task");
    return out;
}

std::string storeAnalysis(const std::string& path, const std::string& kind, int64_t checkpoint_step, uint64_t seed,
                          const std::string& options_json, const std::string& result_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    { Hid probe = openFile(path, H5F_ACC_RDONLY); }
    std::string id;
    commitCopy(path, [&](hid_t f) {
        Hid group = openOrCreateGroup(f, "analysis/" + kind);
        const auto existing = childNames(group.get());
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04zu", existing.size() + 1);
        id = buf;
        Hid g = openOrCreateGroup(group.get(), id);
        writeScalarAttr<int64_t>(g.get(), "checkpoint_step", checkpoint_step, H5T_NATIVE_INT64);
        writeScalarAttr<uint64_t>(g.get(), "seed", seed, H5T_NATIVE_UINT64);
        writeStringAttr(g.get(), "created", isoNow());
        writeStringAttr(g.get(), "options", options_json);
        writeStringAttr(g.get(), "json", result_json);
    });
    return id;
}

void storeImportProvenance(const std::string& path, const std::string& provenance_json)
{
    std::lock_guard<std::mutex> lock(hdf5Mutex());
    quietHdf5();
    { Hid probe = openFile(path, H5F_ACC_RDONLY); }
    commitCopy(path, [&](hid_t f) {
        Hid g = openOrCreateGroup(f, "import");
        writeStringAttr(g.get(), "json", provenance_json);
    });
}

} // namespace icl
