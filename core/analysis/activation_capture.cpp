#include "core/analysis/activation_capture.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <set>

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "core/analysis/run_loader.h"
#include "core/error.h"
#include "core/io/checksums.h"
#include "core/io/experiment_file.h"
#include "core/io/hdf5_journal.h"
#include "core/models/capture.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/tasks/prompts.h"

namespace fs = std::filesystem;

namespace icl {

namespace {

/// Owning HDF5 identifier.
class H5Id {
public:
    H5Id(hid_t id, herr_t (*close)(hid_t), const std::string& what)
        : m_id(id)
        , m_close(close)
    {
        if (id < 0)
            throw Error(what);
    }
    H5Id(const H5Id&) = delete;
    H5Id& operator=(const H5Id&) = delete;
    ~H5Id()
    {
        if (m_id >= 0)
            m_close(m_id);
    }
    hid_t get() const { return m_id; }
    /// Closes now and returns HDF5's status (closing a file writes what it buffered: a full disk shows here).
    herr_t close()
    {
        const herr_t status = m_id >= 0 ? m_close(m_id) : 0;
        m_id = -1;
        return status;
    }

private:
    hid_t m_id;
    herr_t (*m_close)(hid_t);
};

void check(herr_t status, const std::string& what)
{
    if (status < 0)
        throw Error(what);
}

void stringAttr(hid_t obj, const std::string& name, const std::string& value)
{
    checksums::writeStringAttribute(obj, name, value);  // fixed-length: no unchecksummed global heap
}

void int64Attr(hid_t obj, const std::string& name, int64_t value)
{
    H5Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
    H5Id attr(H5Acreate2(obj, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
              "cannot create attribute " + name);
    check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), "cannot write attribute " + name);
}

std::string isoNow()
{
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/// An extendible dataset [0 → n, shape…] chunked by `chunk` rows, appended to row block by row block.
class Appender {
public:
    Appender(hid_t group, const std::string& name, const std::vector<int64_t>& shape, int64_t chunk, bool f64)
        : m_shape(shape.begin(), shape.end())
        , m_type(f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT)
    {
        std::vector<hsize_t> dims{0}, maxDims{H5S_UNLIMITED}, chunkDims{hsize_t(chunk)};
        for (hsize_t s : m_shape) {
            dims.push_back(s);
            maxDims.push_back(s);
            chunkDims.push_back(s);
        }
        H5Id space(H5Screate_simple(int(dims.size()), dims.data(), maxDims.data()), H5Sclose, "H5Screate_simple");
        H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
        check(H5Pset_chunk(dcpl.get(), int(chunkDims.size()), chunkDims.data()), "cannot chunk dataset " + name);
        // HDF5's Fletcher-32 per chunk: a flipped bit fails the read (here, in icl-cli verify and in h5py).
        check(H5Pset_fletcher32(dcpl.get()), "cannot checksum dataset " + name);
        m_ds = H5Dcreate2(group, name.c_str(), f64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE, space.get(), H5P_DEFAULT,
                          dcpl.get(), H5P_DEFAULT);
        if (m_ds < 0)
            throw Error("cannot create dataset " + name);
        m_name = name;
    }
    Appender(const Appender&) = delete;
    Appender& operator=(const Appender&) = delete;
    ~Appender()
    {
        if (m_ds >= 0)
            H5Dclose(m_ds);
    }

    /// Appends `rows` rows of contiguous data (float or double as created).
    void append(const void* data, int64_t rows)
    {
        std::vector<hsize_t> total{m_rows + hsize_t(rows)}, start{m_rows}, count{hsize_t(rows)};
        for (hsize_t s : m_shape) {
            total.push_back(s);
            start.push_back(0);
            count.push_back(s);
        }
        check(H5Dset_extent(m_ds, total.data()), "cannot extend dataset " + m_name);
        H5Id fileSpace(H5Dget_space(m_ds), H5Sclose, "H5Dget_space");
        check(H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
              "cannot select rows of " + m_name);
        H5Id memSpace(H5Screate_simple(int(count.size()), count.data(), nullptr), H5Sclose, "H5Screate_simple");
        check(H5Dwrite(m_ds, m_type, memSpace.get(), fileSpace.get(), H5P_DEFAULT, data), "cannot write " + m_name);
        m_rows += hsize_t(rows);
    }

    /// Closes the dataset, writing its cached chunks; throws when they cannot be written (a full disk is
    /// reported only here).
    void finish()
    {
        const hid_t ds = m_ds;
        m_ds = -1;
        check(H5Dclose(ds), "cannot write " + m_name);
    }

private:
    std::vector<hsize_t> m_shape;
    hid_t m_type;
    hid_t m_ds = -1;
    hsize_t m_rows = 0;
    std::string m_name;
};

/// The run's model on a batch: fills `capture`.
void runModel(LoadedRun& run, const PromptBatch& b, ActivationCapture* capture)
{
    if (auto gpt = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module)) {
        gpt->forward(interleavedTokens(b), capture);
        return;
    }
    if (auto lsa = std::dynamic_pointer_cast<LsaImpl>(run.model.module)) {
        lsa->forward(lsa->embed(b), lsa->contextTokens(b.nContext()), capture);
        return;
    }
    throw Error("activation capture supports lsa and gpt2 models; this run has " + run.config.model.kind);
}

/// "embed, resid_pre.{0…11}, …" from the names a model produced.
std::string describeNames(const std::map<std::string, torch::Tensor>& values)
{
    std::map<std::string, std::set<int64_t>> byBase;
    for (const auto& kv : values) {
        const auto [base, layer] = splitActivationName(kv.first);
        byBase[base].insert(layer);
    }
    std::string out;
    for (const auto& [base, layers] : byBase) {
        if (!out.empty())
            out += ", ";
        out += base;
        if (*layers.begin() >= 0)
            out += ".{" + std::to_string(*layers.begin()) + "…" + std::to_string(*layers.rbegin()) + "}";
    }
    return out;
}

CaptureEstimate estimateWith(LoadedRun& run, const std::vector<std::string>& names, int64_t n_prompts, int64_t chunk)
{
    if (names.empty())
        throw Error("activation capture: no activation names given");
    if (n_prompts < 1)
        throw Error("activation capture: n_prompts must be >= 1, got " + std::to_string(n_prompts));
    if (chunk < 1)
        throw Error("activation capture: chunk must be >= 1, got " + std::to_string(chunk));
    torch::NoGradGuard guard;
    ActivationCapture all;
    all.all = true;
    runModel(run, samplePrompts(run.config.task, 1, 0), &all);
    CaptureEstimate e;
    e.n_prompts = n_prompts;
    e.chunk = std::min(chunk, n_prompts);
    std::set<std::string> seen;
    for (const std::string& name : names) {
        if (!seen.insert(name).second)
            throw Error("activation capture: \"" + name + "\" is asked for twice");
        auto it = all.values.find(name);
        if (it == all.values.end())
            throw Error("activation \"" + name + "\": the " + run.config.model.kind + " model has no such activation (it has "
                        + describeNames(all.values) + ")");
        std::vector<int64_t> shape(it->second.sizes().begin() + 1, it->second.sizes().end());
        int64_t numel = 1;
        for (int64_t s : shape)
            numel *= s;
        e.names.push_back(name);
        e.shapes.push_back(shape);
        e.bytes_per_prompt += 4 * numel;
    }
    const int64_t promptBytes = 8 * (run.config.task.n_context + 1) * (run.config.task.d + 1);
    e.total_bytes = n_prompts * (e.bytes_per_prompt + promptBytes);
    e.chunk_bytes = e.chunk * e.bytes_per_prompt;
    return e;
}

} // namespace

std::string formatBytes(int64_t bytes)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
    return buf;
}

CaptureEstimate estimateCapture(const std::string& path, const std::vector<std::string>& names, int64_t n_prompts,
                                int64_t chunk, int64_t checkpoint_step)
{
    LoadedRun run = loadRun(path, checkpoint_step);
    return estimateWith(run, names, n_prompts, chunk);
}

CaptureResult captureActivations(const std::string& path, const CaptureOptions& o,
                                 const std::function<bool(int64_t, int64_t)>& progress)
{
    LoadedRun run = loadRun(path, o.checkpoint_step);
    const CaptureEstimate e = estimateWith(run, o.names, o.n_prompts, o.chunk);
    if (e.total_bytes > o.max_total_bytes)
        throw Error("activation capture of " + std::to_string(o.n_prompts) + " prompts would write "
                    + formatBytes(e.total_bytes) + " (" + formatBytes(e.bytes_per_prompt)
                    + " per prompt), above the limit of " + formatBytes(o.max_total_bytes)
                    + "; capture fewer prompts or fewer activations");
    if (e.chunk_bytes > o.max_chunk_bytes)
        throw Error("activation capture: a chunk of " + std::to_string(e.chunk) + " prompts holds "
                    + formatBytes(e.chunk_bytes) + " in memory, above the limit of " + formatBytes(o.max_chunk_bytes)
                    + "; use a smaller chunk");
    const bool separate = !o.out_path.empty();
    std::error_code ec;
    if (separate && fs::exists(o.out_path, ec) && !o.overwrite)
        throw Error(o.out_path + ": exists (use overwrite to replace it)");
    if (separate && fs::equivalent(o.out_path, path, ec))
        throw Error(o.out_path + ": is the experiment file itself; leave out_path empty to write into it");

    CaptureResult result;
    result.estimate = e;
    result.checkpoint_step = run.step;
    result.file = separate ? o.out_path : path;
    // Everything is written to a copy that replaces the target only when complete.
    const std::string tmp = result.file + ".capture.tmp";
    fs::remove(tmp, ec);
    if (!separate) {
        // This writes the run file: first what an interrupted commit left is rolled back, as a commit would
        // (only a writer applies a journal). Commits write in place: copy under the readers' lock, so the copy
        // is never of a commit half done, nor of a file with a journal beside it.
        (void)recoverExperimentFile(path);
        journal::ReadView view(path);
        if (view.overlaid())
            throw Error(path + ": an interrupted commit left " + journal::journalPath(path) + "; run `icl-cli recover "
                        + path + "` and capture again");
        fs::copy_file(path, tmp, fs::copy_options::overwrite_existing, ec);
        if (ec)
            throw Error(path + ": cannot copy to " + tmp + " (" + ec.message() + ")");
    }
    try {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        {
            // HDF5's 1.8 file format: checksummed object headers and link indexes (docs/file-integrity.md).
            H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
            H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST);
            H5Id file(separate ? H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())
                               : H5Fopen(tmp.c_str(), H5F_ACC_RDWR, fapl.get()),
                      H5Fclose, tmp + ": cannot open for writing");
            std::string groupPath = "/";
            if (!separate) {
                H5Id lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "H5Pcreate");
                H5Pset_create_intermediate_group(lcpl.get(), 1);
                const std::string parent = "/analysis/" + o.kind;
                hsize_t existing = 0;
                if (H5Lexists(file.get(), "analysis", H5P_DEFAULT) > 0
                    && H5Lexists(file.get(), parent.c_str(), H5P_DEFAULT) > 0) {
                    H5Id g(H5Gopen2(file.get(), parent.c_str(), H5P_DEFAULT), H5Gclose, "cannot open " + parent);
                    H5G_info_t info;
                    check(H5Gget_info(g.get(), &info), "cannot read " + parent);
                    existing = info.nlinks;
                }
                char id[16];
                std::snprintf(id, sizeof id, "%04llu", static_cast<unsigned long long>(existing + 1));
                groupPath = parent + "/" + id;
                H5Id g(H5Gcreate2(file.get(), groupPath.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                       "cannot create " + groupPath);
            }
            result.group = groupPath;
            H5Id group(H5Gopen2(file.get(), groupPath.c_str(), H5P_DEFAULT), H5Gclose, "cannot open " + groupPath);
            int64Attr(group.get(), "checkpoint_step", run.step);
            int64Attr(group.get(), "seed", int64_t(o.seed));
            stringAttr(group.get(), "created", isoNow());
            stringAttr(group.get(), "names", nlohmann::json(e.names).dump());
            stringAttr(group.get(), "source", path);
            nlohmann::json opts = {{"names", e.names}, {"n_prompts", o.n_prompts}, {"seed", o.seed}, {"chunk", e.chunk}};
            stringAttr(group.get(), "options", opts.dump());
            checksums::seal(group.get());  // the attributes' SHA-256, checked when the file is opened

            const TaskConfig& task = run.config.task;
            std::vector<std::unique_ptr<Appender>> datasets;
            for (size_t i = 0; i < e.names.size(); ++i)
                datasets.push_back(std::make_unique<Appender>(group.get(), e.names[i], e.shapes[i], e.chunk, false));
            Appender xs(group.get(), "x", {task.n_context + 1, task.d}, e.chunk, true);
            Appender ys(group.get(), "y", {task.n_context + 1}, e.chunk, true);

            torch::NoGradGuard guard;
            int64_t done = 0;
            for (int64_t c = 0; done < o.n_prompts; ++c) {
                const int64_t rows = std::min(e.chunk, o.n_prompts - done);
                const PromptBatch b = samplePrompts(task, rows, mixSeed(o.seed, uint64_t(c)));
                ActivationCapture capture;
                capture.names.insert(e.names.begin(), e.names.end());
                runModel(run, b, &capture);
                for (size_t i = 0; i < e.names.size(); ++i) {
                    const torch::Tensor t = capture.values.at(e.names[i]).to(torch::kFloat32).contiguous();
                    datasets[i]->append(t.data_ptr<float>(), rows);
                }
                const torch::Tensor x = b.x.to(torch::kFloat64).contiguous(), y = b.y.to(torch::kFloat64).contiguous();
                xs.append(x.data_ptr<double>(), rows);
                ys.append(y.data_ptr<double>(), rows);
                done += rows;
                if (progress && !progress(done, o.n_prompts))
                    throw Error("cancelled");
            }
            for (auto& d : datasets)
                d->finish();
            xs.finish();
            ys.finish();
            datasets.clear();
            check(H5Fflush(file.get(), H5F_SCOPE_GLOBAL), tmp + ": flush failed");
            check(file.close(), tmp + ": cannot write");
        }
        // On disk before it replaces the target, as the experiment file's own commits do.
        const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
        const bool synced = fd >= 0 && ::fsync(fd) == 0;
        if (fd >= 0)
            ::close(fd);
        if (!synced)
            throw Error(tmp + ": cannot write (fsync failed)");
        fs::rename(tmp, result.file, ec);
        if (ec)
            throw Error(result.file + ": cannot replace with " + tmp + " (" + ec.message() + ")");
    } catch (...) {
        fs::remove(tmp, ec);
        throw;
    }
    return result;
}

} // namespace icl
