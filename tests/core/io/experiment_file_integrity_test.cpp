// Checksums of the experiment file (format version 2): damage is refused naming the object, never used.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "tests/support/scratch.h"
#include "tests/support/core_checks.h"
#include "tests/support/file_damage.h"

namespace fs = std::filesystem;

namespace {
using icl::test::dataOffset;
using icl::test::errorOf;
using icl::test::flipBit;
using icl::test::sameBits;

// Files of this process, removed (with their .tmp and .lock) when it exits; forked writers leave with _exit.
struct TempFiles {
    std::vector<std::string> paths;
    ~TempFiles()
    {
        std::error_code ec;
        for (const auto& p : paths)
            for (const char* suffix : {"", ".tmp", ".lock", ".journal"})
                fs::remove(p + suffix, ec);
    }
};
TempFiles g_tempFiles;

std::string integrityScratchPath(const std::string& name)
{
    const std::string p = icl::test::scratchPrefix() + std::to_string(::getpid()) + "_integrity_" + name;
    fs::remove(p);
    fs::remove(p + ".tmp");
    fs::remove(p + ".journal");
    g_tempFiles.paths.push_back(p);
    return p;
}

std::string lsaConfig()
{
    return icl::test::quickPresetConfig("vonoswald-lsa-1layer").dump(2);
}

// Values with a closed form, so equality below is against what was written, not against the reader.
icl::NamedArray ramp(const std::string& name, std::vector<int64_t> shape, float scale)
{
    icl::NamedArray a{name, shape, {}};
    size_t n = 1;
    for (auto d : shape)
        n *= static_cast<size_t>(d);
    for (size_t i = 0; i < n; ++i)
        a.data.push_back(scale * std::sin(0.37f * float(i) + scale));
    return a;
}

icl::CheckpointData checkpointAt(int64_t step)
{
    icl::CheckpointData c = icl::test::checkpointRecordAt(step);
    c.params.push_back(ramp("layers.0.w_q", {11, 11}, 1.0f + step));
    c.params.push_back(ramp("layers.0.w_k", {11, 11}, 2.0f + step));
    c.params.push_back(ramp("layers.0.w_v", {11, 11}, 3.0f + step));
    c.optimizer.push_back(ramp("layers.0.w_q/exp_avg", {11, 11}, 0.1f));
    c.optimizer_scalars["layers.0.w_q/step"] = double(step);
    return c;
}

// A small run file as training writes it: config, three commits with metrics and checkpoints, task
// arrays and a stored analysis.
std::string smallRun(const std::string& name)
{
    const std::string path = integrityScratchPath(name);
    icl::createExperimentFile(path, lsaConfig(), false);
    for (int64_t step : {0, 100, 200}) {
        const icl::CheckpointData cp = checkpointAt(step);
        icl::commitToExperimentFile(path,
                                    {{{"step", double(step)}, {"eval_loss", 2.0 / (step + 1)},
                                      {"baseline/gd_1", 0.8}, {"lr", 1e-3}}},
                                    &cp);
    }
    icl::storeTaskArrays(path, {ramp("phi/0/B_1", {4, 3}, 0.5f)});
    icl::storeAnalysis(path, "icl_curve", 200, 7, R"({"n_prompts":10})", R"({"error":[1,0.5,0.25]})");
    return path;
}

// Same series, bit for bit (NaN included).
bool sameMetrics(const std::map<std::string, std::vector<double>>& a, const std::map<std::string, std::vector<double>>& b)
{
    if (a.size() != b.size())
        return false;
    for (const auto& [name, values] : a)
        if (!b.count(name) || !sameBits(values, b.at(name)))
            return false;
    return true;
}

// Same names, shapes and bits, in any order (the file lists arrays by name).
bool sameArrays(std::vector<icl::NamedArray> a, std::vector<icl::NamedArray> b)
{
    if (a.size() != b.size())
        return false;
    auto byName = [](const icl::NamedArray& x, const icl::NamedArray& y) { return x.name < y.name; };
    std::sort(a.begin(), a.end(), byName);
    std::sort(b.begin(), b.end(), byName);
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].name != b[i].name || a[i].shape != b[i].shape || !sameBits(a[i].data, b[i].data))
            return false;
    return true;
}

TEST(ExperimentFileIntegrity, NewFilesCarryChecksumsAndVerifyClean)
{
    const std::string path = smallRun("clean.h5");
    const icl::RunSummary s = icl::readRunSummary(path);
    EXPECT_EQ(s.format_version, 2);
    EXPECT_TRUE(s.checksums);
    EXPECT_TRUE(s.damaged.empty());
    EXPECT_TRUE(s.notes.empty());
    const icl::FileVerification v = icl::verifyExperimentFile(path);
    EXPECT_TRUE(v.checksums);
    EXPECT_TRUE(v.damaged.empty()) << v.damaged.front();
    // root, config, 4 series, 3 checkpoints × (1 + 3 params) + the last one's moment, 1 task array, 1 analysis
    EXPECT_EQ(v.objects_checked, 2 + 4 + 3 * 4 + 1 + 1 + 1);
}

TEST(ExperimentFileIntegrity, AFlippedWeightIsRefusedNamingTheTensor)
{
    const std::string path = smallRun("weight.h5");
    // Bit 30 of the 6th float of w_k at step 100 (an exponent bit: the value changes a lot).
    flipBit(path, dataOffset(path, "/checkpoints/000000100/params/layers.0.w_k") + 5 * 4 + 3, 6);
    const std::string e = errorOf([&] { icl::readCheckpoint(path, 100); });
    EXPECT_EQ(e, path + ": damaged: /checkpoints/000000100/params/layers.0.w_k (checksum mismatch)");
    // The rest stays usable, bit for bit.
    EXPECT_TRUE(sameArrays(icl::readCheckpoint(path, 200).params, checkpointAt(200).params));
    EXPECT_NO_THROW(icl::readRunSummary(path));
    const icl::FileVerification v = icl::verifyExperimentFile(path);
    ASSERT_EQ(v.damaged.size(), 1u);
    EXPECT_EQ(v.damaged[0], e);
}

TEST(ExperimentFileIntegrity, AFlippedMetricOrTaskArrayIsRefused)
{
    const std::string path = smallRun("metric.h5");
    const std::string copy = integrityScratchPath("metric_copy.h5");
    fs::copy_file(path, copy);
    flipBit(path, dataOffset(path, "/task/phi/0/B_1") + 2, 1);
    EXPECT_EQ(errorOf([&] { icl::readTaskArrays(path); }),
              path + ": damaged: /task/phi/0/B_1 (checksum mismatch)");

    // A metric chunk: rewrite one value through HDF5 without updating the checksum.
    hid_t f = H5Fopen(copy.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "/metrics/eval_loss", H5P_DEFAULT);
    std::vector<double> v(3);
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    v[1] = 0.5;
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
    H5Dclose(d);
    H5Fclose(f);
    const std::string e = errorOf([&] { icl::readRunSummary(copy); });
    EXPECT_EQ(e, copy + ": damaged: /metrics/eval_loss (checksum mismatch)");
    // A commit never extends a damaged series under a fresh checksum.
    EXPECT_EQ(errorOf([&] { icl::commitToExperimentFile(copy, {{{"step", 300.0}, {"eval_loss", 0.1}}}, nullptr); }),
              e);
    EXPECT_FALSE(fs::exists(copy + ".tmp"));
}

// Rewrites a string attribute through HDF5 (as a flipped bit in its heap would), leaving the seal.
void rewriteStringAttr(const std::string& path, const std::string& object, const std::string& name,
                       const std::string& value)
{
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
    H5Adelete(o, name.c_str());
    hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, H5T_VARIABLE);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(o, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    const char* data = value.c_str();
    H5Awrite(a, type, &data);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
    H5Oclose(o);
    H5Fclose(f);
}

TEST(ExperimentFileIntegrity, ADamagedConfigIsOneLineNamingConfig)
{
    const std::string path = smallRun("config.h5");
    std::string json = icl::readRunSummary(path).config_json;
    json[json.find("\"lr\"") + 1] = '\x01';  // binary garbage, as in the issue
    rewriteStringAttr(path, "/config", "json", json);
    const std::string e = errorOf([&] { icl::readRunSummary(path); });
    EXPECT_EQ(e, path + ": damaged: /config (checksum mismatch)");
    EXPECT_EQ(icl::verifyExperimentFile(path).damaged, std::vector<std::string>{e});
}

TEST(ExperimentFileIntegrity, ADamagedCheckpointIsFlaggedAndTheOthersStayUsable)
{
    const std::string path = smallRun("checkpoint.h5");
    icl::test::overwriteNumberAttribute(path, "/checkpoints/000000100", "train_loss", 0.125);
    const icl::RunSummary s = icl::readRunSummary(path);
    ASSERT_EQ(s.checkpoints.size(), 3u);
    const std::string line = path + ": damaged: /checkpoints/000000100 (checksum mismatch)";
    EXPECT_EQ(s.checkpoints[1].step, 100);
    EXPECT_EQ(s.checkpoints[1].damaged, line);
    EXPECT_EQ(s.checkpoints[1].train_loss, 0.0) << "a damaged value is never shown";
    EXPECT_TRUE(s.checkpoints[0].damaged.empty());
    EXPECT_EQ(s.checkpoints[2].train_loss, 1.0 / 201);
    EXPECT_EQ(s.damaged, std::vector<std::string>{line});
    EXPECT_EQ(errorOf([&] { icl::readCheckpoint(path, 100); }), line);
    EXPECT_TRUE(sameArrays(icl::readCheckpoint(path, 0).params, checkpointAt(0).params));
}

TEST(ExperimentFileIntegrity, AValidJsonConfigThatFailsValidationNamesTheKey)
{
    const std::string path = integrityScratchPath("invalid_config.h5");
    nlohmann::json cfg = nlohmann::json::parse(lsaConfig());
    cfg["training"]["lr"] = "fast";
    icl::createExperimentFile(path, cfg.dump(), false);
    const std::string e = errorOf([&] { icl::readRunSummary(path); });
    EXPECT_EQ(e.rfind(path + ": /config: training.lr: ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST(ExperimentFileIntegrity, OptimizerStateIsKeptOnlyAtTheLastCheckpointUnlessAsked)
{
    const std::string path = smallRun("optimizer.h5");
    EXPECT_TRUE(icl::readCheckpoint(path, 0).optimizer.empty());
    EXPECT_TRUE(icl::readCheckpoint(path, 100).optimizer_scalars.empty());
    const icl::CheckpointData last = icl::readCheckpoint(path, 200);
    EXPECT_TRUE(sameArrays(last.optimizer, checkpointAt(200).optimizer));
    EXPECT_EQ(last.optimizer_scalars, checkpointAt(200).optimizer_scalars);
    EXPECT_TRUE(icl::verifyExperimentFile(path).damaged.empty()) << "the dropped state left no stale checksum";

    // --keep-optimizer-every 100: steps 0, 100 and 200 keep theirs, 150 loses its state to 200.
    const std::string kept = integrityScratchPath("optimizer_kept.h5");
    icl::createExperimentFile(kept, lsaConfig(), false);
    for (int64_t step : {0, 100, 150, 200}) {
        const icl::CheckpointData cp = checkpointAt(step);
        icl::commitToExperimentFile(kept, {{{"step", double(step)}}}, &cp, -1, 100);
    }
    for (int64_t step : {0, 100, 200})
        EXPECT_TRUE(sameArrays(icl::readCheckpoint(kept, step).optimizer, checkpointAt(step).optimizer)) << step;
    EXPECT_TRUE(icl::readCheckpoint(kept, 150).optimizer.empty());
}

TEST(ExperimentFileIntegrity, ALargeResultIsStoredAndChecked)
{
    // Beyond HDF5's 64 KiB limit for attributes in the object header (dense attribute storage).
    const std::string path = smallRun("large.h5");
    std::string big = "[";
    for (int i = 0; i < 40000; ++i)
        big += std::to_string(i) + ",";
    big += "0]";
    ASSERT_GT(big.size(), 200000u);
    EXPECT_EQ(icl::storeAnalysis(path, "icl_curve", 200, 7, "{}", big), "0002");
    const icl::RunSummary s = icl::readRunSummary(path);
    EXPECT_EQ(s.analyses.at("icl_curve"), 2);
    EXPECT_TRUE(s.damaged.empty());
    EXPECT_TRUE(icl::verifyExperimentFile(path).damaged.empty());
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "/analysis/icl_curve/0002", H5P_DEFAULT);
    hid_t a = H5Aopen(g, "json", H5P_DEFAULT);
    hid_t t = H5Aget_type(a);
    EXPECT_EQ(H5Tget_size(t), big.size());
    std::string back(big.size(), '\0');
    H5Aread(a, t, back.data());
    EXPECT_EQ(back, big);
    H5Tclose(t);
    H5Aclose(a);
    H5Gclose(g);
    H5Fclose(f);
}

TEST(ExperimentFileIntegrity, StoredResultsReadBackAndADamagedOneIsLeftOut)
{
    const std::string path = smallRun("stored.h5");
    EXPECT_EQ(icl::storeAnalysis(path, "icl_curve", 100, 9, R"({"n_prompts":20})", R"({"error":[2,1]})"), "0002");
    EXPECT_EQ(icl::storeAnalysis(path, "icl_curve", 200, 18446744073709551615ull, "{}", "{}"), "0003");
    EXPECT_TRUE(icl::readStoredAnalyses(path, "probe").empty()) << "no result of that kind";
    std::vector<icl::StoredAnalysis> stored = icl::readStoredAnalyses(path, "icl_curve");
    ASSERT_EQ(stored.size(), 3u);
    EXPECT_EQ(stored[0].id, "0001");
    EXPECT_EQ(stored[0].checkpoint_step, 200);
    EXPECT_EQ(stored[0].seed, 7u);
    EXPECT_EQ(stored[0].options_json, R"({"n_prompts":10})");
    EXPECT_EQ(stored[0].result_json, R"({"error":[1,0.5,0.25]})");
    EXPECT_EQ(stored[1].id, "0002");
    EXPECT_EQ(stored[1].checkpoint_step, 100);
    EXPECT_EQ(stored[1].options_json, R"({"n_prompts":20})");
    EXPECT_EQ(stored[1].result_json, R"({"error":[2,1]})");
    EXPECT_EQ(stored[2].seed, 18446744073709551615ull) << "a 64-bit seed survives";
    EXPECT_FALSE(stored[2].created.empty());

    // Rewrite 0002's result behind the file's back (the seal is not renewed): it is left out, the others are read.
    {
        hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        ASSERT_GE(f, 0);
        hid_t g = H5Gopen2(f, "/analysis/icl_curve/0002", H5P_DEFAULT);
        ASSERT_GE(g, 0);
        ASSERT_GE(H5Adelete(g, "json"), 0);
        const std::string forged = R"({"error":[0,0]})";
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, forged.size());
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(g, "json", type, space, H5P_DEFAULT, H5P_DEFAULT);
        ASSERT_GE(H5Awrite(a, type, forged.data()), 0);
        H5Aclose(a);
        H5Sclose(space);
        H5Tclose(type);
        H5Gclose(g);
        H5Fclose(f);
    }
    const icl::RunSummary s = icl::readRunSummary(path);
    ASSERT_EQ(s.damaged.size(), 1u);
    EXPECT_NE(s.damaged[0].find("/analysis/icl_curve/0002"), std::string::npos) << s.damaged[0];
    stored = icl::readStoredAnalyses(path, "icl_curve");
    ASSERT_EQ(stored.size(), 2u) << "the damaged result is never read";
    EXPECT_EQ(stored[0].id, "0001");
    EXPECT_EQ(stored[1].id, "0003");
    EXPECT_THROW((void)icl::readStoredAnalyses(integrityScratchPath("absent.h5"), "icl_curve"), icl::Error);
}

// A format version 1 file (no checksums) as earlier builds wrote it.
std::string version1File(const std::string& name)
{
    const std::string path = integrityScratchPath(name);
    hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    auto str = [](hid_t o, const char* n, const std::string& v) {
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, H5T_VARIABLE);
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(o, n, type, space, H5P_DEFAULT, H5P_DEFAULT);
        const char* d = v.c_str();
        H5Awrite(a, type, &d);
        H5Aclose(a);
        H5Sclose(space);
        H5Tclose(type);
    };
    auto num = [](hid_t o, const char* n, double v) {
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t a = H5Acreate2(o, n, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
        H5Aclose(a);
        H5Sclose(space);
    };
    str(f, "format", "icl-workbench");
    num(f, "format_version", 1);
    str(f, "app_version", "0.1");
    str(f, "created", "2026-01-01T00:00:00Z");
    hid_t config = H5Gcreate2(f, "config", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    str(config, "json", lsaConfig());
    H5Gclose(config);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(f, "checkpoints/000000005", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    num(g, "step", 5);
    num(g, "train_loss", 0.5);
    num(g, "wall_time_s", 1);
    const icl::NamedArray w = ramp("layers.0.w_q", {2, 3}, 1.0f);
    hsize_t dims[2] = {2, 3};
    hid_t space = H5Screate_simple(2, dims, nullptr);
    hid_t d = H5Dcreate2(g, "params/layers.0.w_q", H5T_IEEE_F32LE, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, w.data.data());
    H5Dclose(d);
    H5Sclose(space);
    H5Gclose(g);
    H5Pclose(lcpl);
    H5Fclose(f);
    return path;
}

TEST(ExperimentFileIntegrity, Version1FilesStillOpenWithANote)
{
    const std::string path = version1File("v1.h5");
    const icl::RunSummary s = icl::readRunSummary(path);
    EXPECT_EQ(s.format_version, 1);
    EXPECT_FALSE(s.checksums);
    ASSERT_EQ(s.notes.size(), 1u);
    EXPECT_NE(s.notes[0].find("no checksums"), std::string::npos) << s.notes[0];
    ASSERT_EQ(s.checkpoints.size(), 1u);
    EXPECT_TRUE(sameArrays(icl::readCheckpoint(path, 5).params, {ramp("layers.0.w_q", {2, 3}, 1.0f)}));
    // Commits into an old file keep it readable (new objects get checksums, the version stays 1).
    const icl::CheckpointData cp = checkpointAt(10);
    icl::commitToExperimentFile(path, {{{"step", 10.0}}}, &cp);
    EXPECT_EQ(icl::readRunSummary(path).format_version, 1);
    EXPECT_TRUE(sameArrays(icl::readCheckpoint(path, 10).params, cp.params));
    const icl::FileVerification v = icl::verifyExperimentFile(path);
    EXPECT_FALSE(v.checksums);
    EXPECT_TRUE(v.damaged.empty());
}

TEST(ExperimentFileIntegrity, ALeftoverTmpIsReportedAndAFailedCommitLeavesNone)
{
    const std::string path = smallRun("leftover.h5");
    std::ofstream(path + ".tmp") << "partial copy of a killed commit";
    const icl::RunSummary s = icl::readRunSummary(path);
    ASSERT_EQ(s.notes.size(), 1u);
    EXPECT_EQ(s.notes[0].rfind(path + ".tmp is left from an interrupted commit", 0), 0u) << s.notes[0];
    // The next commit replaces it and leaves nothing behind.
    icl::commitToExperimentFile(path, {{{"step", 300.0}}}, nullptr);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    // A commit that fails (an array whose shape does not match its data, after it appended the metrics) removes
    // what it wrote: the file has its previous size and contents, and no journal is left.
    const auto sizeBefore = fs::file_size(path);
    const icl::RunSummary summaryBefore = icl::readRunSummary(path);
    icl::CheckpointData bad = checkpointAt(400);
    bad.params[1].shape = {7};
    EXPECT_THROW(icl::commitToExperimentFile(path, {{{"step", 400.0}}}, &bad), icl::Error);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    EXPECT_FALSE(fs::exists(path + ".journal"));
    EXPECT_EQ(fs::file_size(path), sizeBefore);
    EXPECT_EQ(icl::readRunSummary(path).checkpoints.size(), 3u);
    EXPECT_TRUE(sameMetrics(icl::readRunSummary(path).metrics, summaryBefore.metrics));

    // A journal that a killed commit left incomplete (killed before it overwrote anything): the open says so and
    // reads the file as it is, leaving both alone (only a writer removes a journal); the next commit removes it.
    std::ofstream(path + ".journal") << "ICLJRNL2 cut short";
    const std::vector<std::string> cleaned = icl::readRunSummary(path).notes;
    ASSERT_EQ(cleaned.size(), 1u);
    EXPECT_NE(cleaned[0].find(path + ".journal of an interrupted commit is incomplete"), std::string::npos)
        << cleaned[0];
    EXPECT_TRUE(fs::exists(path + ".journal"));
    EXPECT_EQ(fs::file_size(path), sizeBefore);
    EXPECT_TRUE(sameMetrics(icl::readRunSummary(path).metrics, summaryBefore.metrics));
    icl::commitToExperimentFile(path, {}, nullptr);
    EXPECT_FALSE(fs::exists(path + ".journal"));
    EXPECT_TRUE(sameMetrics(icl::readRunSummary(path).metrics, summaryBefore.metrics));

    // A new file over an old one (--force) never inherits the old one's journal.
    {
        const std::string replaced = integrityScratchPath("replaced.h5");
        fs::copy_file(path, replaced);
        std::ofstream(replaced + ".journal") << "ICLJRNL1 of the file being replaced";
        icl::createExperimentFile(replaced, lsaConfig(), true);
        EXPECT_FALSE(fs::exists(replaced + ".journal"));
        EXPECT_TRUE(icl::readRunSummary(replaced).notes.empty());
    }

    // A trainer's sidecar lock: reported as left over when nobody holds it, as a live trainer when held.
    std::ofstream(path + ".lock") << "";
    const std::vector<std::string> stale = icl::readRunSummary(path).notes;
    ASSERT_EQ(stale.size(), 1u);
    EXPECT_EQ(stale[0].rfind(path + ".lock is left by a trainer that was killed", 0), 0u) << stale[0];
    const int fd = ::open((path + ".lock").c_str(), O_RDWR);
    struct flock claim {};
    claim.l_type = F_WRLCK;
    claim.l_whence = SEEK_SET;
    ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &claim), 0);
    std::ofstream(path + ".tmp") << "a live commit";
    const std::vector<std::string> live = icl::readRunSummary(path).notes;
    ::close(fd);
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].rfind("a trainer is writing this file", 0), 0u) << live[0];
    fs::remove(path + ".lock");
    fs::remove(path + ".tmp");
}

// Everything a command can read from a file, or the first refusal.
struct ReadBack {
    std::string refused;  // the message of a refusal at open
    icl::RunSummary summary;
    std::map<int64_t, std::string> checkpointRefused;
    std::map<int64_t, icl::CheckpointData> checkpoints;
    std::string taskRefused;
    std::vector<icl::NamedArray> task;
};

ReadBack readEverything(const std::string& path, const std::vector<int64_t>& steps)
{
    ReadBack r;
    try {
        r.summary = icl::readRunSummary(path);
    } catch (const icl::Error& e) {
        r.refused = e.what();
        return r;
    }
    for (int64_t step : steps) {
        try {
            r.checkpoints[step] = icl::readCheckpoint(path, step);
        } catch (const icl::Error& e) {
            r.checkpointRefused[step] = e.what();
        }
    }
    try {
        r.task = icl::readTaskArrays(path);
    } catch (const icl::Error& e) {
        r.taskRefused = e.what();
    }
    return r;
}

// Bit-flip fuzzing: every damaged copy is either read exactly as the original or refused with one line
// naming the file and the object; never different results without a word.
TEST(ExperimentFileIntegrity, FlippedBitsAreNeverReadSilently)
{
    const std::string original = smallRun("fuzz.h5");
    const std::vector<int64_t> steps = {0, 100, 200};
    const ReadBack want = readEverything(original, steps);
    ASSERT_TRUE(want.refused.empty());
    const uint64_t size = fs::file_size(original);
    const std::string copy = integrityScratchPath("fuzz_copy.h5");
    const int kSeeds = 300;
    for (int nFlips : {1, 8}) {
    int identical = 0, refusedAtOpen = 0, refusedObject = 0;
    for (int seed = 0; seed < kSeeds; ++seed) {
        fs::copy_file(original, copy, fs::copy_options::overwrite_existing);
        std::mt19937_64 rng(static_cast<uint64_t>(seed));
        std::string flips;
        for (int k = 0; k < nFlips; ++k) {
            const uint64_t offset = rng() % size;
            const int bit = static_cast<int>(rng() % 8);
            flipBit(copy, offset, bit);
            flips += " " + std::to_string(offset) + ":" + std::to_string(bit);
        }
        SCOPED_TRACE("seed " + std::to_string(seed) + ", flipped byte:bit" + flips);
        const ReadBack got = readEverything(copy, steps);
        auto oneLineNamingFile = [&](const std::string& m) {
            EXPECT_EQ(m.find('\n'), std::string::npos) << m;
            EXPECT_EQ(m.rfind(copy + ": ", 0), 0u) << m;
            for (unsigned char ch : m)
                ASSERT_TRUE(ch >= 0x20) << "control character in: " << m;
        };
        if (!got.refused.empty()) {
            oneLineNamingFile(got.refused);
            ++refusedAtOpen;
            continue;
        }
        bool anyRefusal = !got.summary.damaged.empty() || !got.taskRefused.empty() || !got.checkpointRefused.empty();
        // What was read must equal the original exactly.
        const icl::RunSummary& a = got.summary;
        const icl::RunSummary& b = want.summary;
        EXPECT_EQ(a.config_json, b.config_json);
        EXPECT_EQ(a.app_version, b.app_version);
        EXPECT_EQ(a.created, b.created);
        EXPECT_EQ(a.format_version, b.format_version);
        EXPECT_EQ(a.import_json, b.import_json);
        EXPECT_EQ(a.analyses, b.analyses);
        ASSERT_EQ(a.metrics.size(), b.metrics.size());
        for (const auto& [name, values] : b.metrics) {
            ASSERT_TRUE(a.metrics.count(name)) << name;
            EXPECT_TRUE(sameBits(a.metrics.at(name), values)) << name;
        }
        ASSERT_EQ(a.checkpoints.size(), b.checkpoints.size());
        for (size_t i = 0; i < a.checkpoints.size(); ++i) {
            EXPECT_EQ(a.checkpoints[i].step, b.checkpoints[i].step);
            if (!a.checkpoints[i].damaged.empty()) {
                oneLineNamingFile(a.checkpoints[i].damaged);
                EXPECT_NE(a.checkpoints[i].damaged.find("damaged: /checkpoints/"), std::string::npos);
                EXPECT_TRUE(got.checkpointRefused.count(a.checkpoints[i].step)) << "a flagged checkpoint was read";
                continue;
            }
            EXPECT_EQ(a.checkpoints[i].train_loss, b.checkpoints[i].train_loss);
            EXPECT_EQ(a.checkpoints[i].wall_time_s, b.checkpoints[i].wall_time_s);
        }
        for (const auto& d : a.damaged)
            oneLineNamingFile(d);
        for (int64_t step : steps) {
            if (got.checkpointRefused.count(step)) {
                const std::string& m = got.checkpointRefused.at(step);
                oneLineNamingFile(m);
                EXPECT_NE(m.find("damaged: /checkpoints/"), std::string::npos) << m;
                continue;
            }
            const icl::CheckpointData& x = got.checkpoints.at(step);
            const icl::CheckpointData& y = want.checkpoints.at(step);
            EXPECT_EQ(x.step, y.step);
            EXPECT_EQ(x.train_loss, y.train_loss);
            EXPECT_EQ(x.wall_time_s, y.wall_time_s);
            EXPECT_TRUE(sameArrays(x.params, y.params)) << "step " << step;
            EXPECT_TRUE(sameArrays(x.optimizer, y.optimizer)) << "step " << step;
            EXPECT_EQ(x.optimizer_scalars, y.optimizer_scalars);
        }
        if (!got.taskRefused.empty()) {
            oneLineNamingFile(got.taskRefused);
            EXPECT_NE(got.taskRefused.find("damaged: /task"), std::string::npos) << got.taskRefused;
        } else {
            EXPECT_TRUE(sameArrays(got.task, want.task));
        }
        ++(anyRefusal ? refusedObject : identical);
        if (::testing::Test::HasFailure())
            break;  // one seed's details are enough
    }
    // The split depends only on the fixed seeds and the file layout; printed for the record.
    std::printf("%d bit flip(s) in each of %d copies of a %llu-byte run file: %d read identically, %d refused at "
                "open, %d with a damaged object refused\n",
                nFlips, kSeeds, static_cast<unsigned long long>(size), identical, refusedAtOpen, refusedObject);
    EXPECT_EQ(identical + refusedAtOpen + refusedObject, kSeeds);
    }
}

// Bit-for-bit the same run file contents (everything a command reads).
// Empty when files `a` and `b` read bit for bit the same (everything a command reads); else the difference.
std::string contentDifference(const std::string& a, const std::string& b, const std::vector<int64_t>& steps);

// A full disk during a commit: one line naming the file, the file as before, no RUN.h5.tmp left holding space.
// Needs root to mount a small tmpfs.
TEST(ExperimentFileCrash, AFullDiskFailsTheCommitAndLeavesNothing)
{
    const std::string dir = icl::test::scratchPrefix() + std::to_string(::getpid()) + "_diskfull";
    fs::create_directories(dir);
    if (::geteuid() != 0 || ::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=512k") != 0) {
        fs::remove(dir);
        GTEST_SKIP() << "needs root to mount a 512 KiB tmpfs (disk-full test not run)";
    }
    struct Unmount {
        std::string dir;
        ~Unmount()
        {
            ::umount(dir.c_str());
            fs::remove(dir);
        }
    } unmount{dir};
    const std::string path = dir + "/run.h5";
    const std::string before = icl::test::scratchPrefix() + std::to_string(::getpid()) + "_diskfull_before.h5";
    icl::createExperimentFile(path, lsaConfig(), false);
    std::vector<int64_t> steps;
    std::string failure;
    for (int64_t step = 0; step < 1000 && failure.empty(); step += 10) {
        icl::CheckpointData cp;
        cp.step = step;
        cp.params.push_back(ramp("layers.0.w_q", {100, 100}, 1.0f + step));  // 40 KB
        fs::copy_file(path, before, fs::copy_options::overwrite_existing);
        try {
            icl::commitToExperimentFile(path, {{{"step", double(step)}}}, &cp);
            steps.push_back(step);
        } catch (const icl::Error& e) {
            failure = e.what();
        }
    }
    ASSERT_FALSE(failure.empty()) << "the disk never filled";
    EXPECT_EQ(failure.rfind(path + ": ", 0), 0u) << failure;
    EXPECT_EQ(failure.find('\n'), std::string::npos) << failure;
    EXPECT_FALSE(fs::exists(path + ".tmp")) << "the partial copy holds the space the user needs";
    EXPECT_FALSE(fs::exists(path + ".journal"));
    EXPECT_EQ(fs::file_size(path), fs::file_size(before)) << "what the failed commit wrote holds space";
    EXPECT_EQ(contentDifference(path, before, steps), "") << "the last commit is intact";
    fs::remove(before);
}

// Empty when `got` is exactly `want` with nothing refused; otherwise the first difference.
std::string difference(const ReadBack& got, const ReadBack& want)
{
    if (!got.refused.empty())
        return "refused: " + got.refused;
    if (!got.summary.damaged.empty())
        return "damaged: " + got.summary.damaged.front();
    if (!got.checkpointRefused.empty())
        return "checkpoint refused: " + got.checkpointRefused.begin()->second;
    if (!got.taskRefused.empty())
        return "task refused: " + got.taskRefused;
    const icl::RunSummary& a = got.summary;
    const icl::RunSummary& b = want.summary;
    if (a.config_json != b.config_json || a.analyses != b.analyses || a.created != b.created)
        return "config, analyses or created differ";
    if (a.metrics.size() != b.metrics.size())
        return "number of metric series differs";
    for (const auto& [name, values] : b.metrics)
        if (!a.metrics.count(name) || !sameBits(a.metrics.at(name), values))
            return "metric " + name + " differs";
    if (a.checkpoints.size() != b.checkpoints.size())
        return std::to_string(a.checkpoints.size()) + " checkpoints instead of " + std::to_string(b.checkpoints.size());
    for (const auto& [step, y] : want.checkpoints) {
        if (!got.checkpoints.count(step))
            return "checkpoint " + std::to_string(step) + " missing";
        const icl::CheckpointData& x = got.checkpoints.at(step);
        if (x.train_loss != y.train_loss || !sameArrays(x.params, y.params) || !sameArrays(x.optimizer, y.optimizer)
            || x.optimizer_scalars != y.optimizer_scalars)
            return "checkpoint " + std::to_string(step) + " differs";
    }
    if (!sameArrays(got.task, want.task))
        return "task arrays differ";
    return "";
}

// The commit a run makes at step 300 (metrics row and checkpoint), as resume repeats it after a crash.
void commitStep300(const std::string& path)
{
    const icl::CheckpointData cp = checkpointAt(300);
    icl::commitToExperimentFile(path, {{{"step", 300.0}, {"eval_loss", 2.0 / 301}, {"baseline/gd_1", 0.8}, {"lr", 1e-3}}},
                                &cp, 200);
}

// The bytes of a file ("" when there is none).
std::string fileBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs commitStep300 in a child process that is killed with SIGKILL at the `killAt`-th fault point
// (or, with killAt < 0, after `delayUs` microseconds). Returns true when the child was killed.
bool killedCommit(const std::string& path, int killAt, int delayUs)
{
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        int seen = 0;
        if (killAt >= 0)
            icl::setCommitFaultHookForTesting([&](const std::string&) {
                if (seen++ == killAt)
                    ::raise(SIGKILL);
            });
        try {
            commitStep300(path);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    if (killAt < 0) {
        ::usleep(static_cast<useconds_t>(delayUs));
        ::kill(pid, SIGKILL);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) << "status " << status;
    return WIFSIGNALED(status);
}

// A crash at any instant of a commit loses at most that commit: the file reads exactly as before or
// exactly as after it, and repeating the commit (what --resume does) gives exactly the uninterrupted file.
// The fault points include every write HDF5 makes through the commit's file driver and every page the
// commit overwrites in place, so this kills the writer inside HDF5's calls and between the in-place writes.
TEST(ExperimentFileCrash, AKillAtEveryPointOfACommitLosesAtMostThatCommit)
{
    const std::string base = smallRun("crash_base.h5");
    const std::vector<int64_t> steps = {0, 100, 200, 300};
    const ReadBack before = readEverything(base, {0, 100, 200});
    ASSERT_TRUE(before.refused.empty());
    const std::string done = integrityScratchPath("crash_done.h5");
    fs::copy_file(base, done);
    std::vector<std::string> points;
    icl::setCommitFaultHookForTesting([&](const std::string& p) { points.push_back(p); });
    commitStep300(done);
    icl::setCommitFaultHookForTesting({});
    // How long the commit takes here (a second one into a fresh copy, without the hook), so the kills at
    // arbitrary instants below spread over all of it.
    const std::string timed = integrityScratchPath("crash_timed.h5");
    fs::copy_file(base, timed);
    const auto t0 = std::chrono::steady_clock::now();
    commitStep300(timed);
    const double commitUs = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const ReadBack after = readEverything(done, steps);
    ASSERT_EQ(difference(after, after), "");
    const auto count = [&](const std::string& name) { return std::count(points.begin(), points.end(), name); };
    EXPECT_GE(count("HDF5 write"), 10) << "the arrays and HDF5's metadata";
    EXPECT_GE(count("overwrote a page"), 2) << "metadata rewritten in place";
    for (const char* step : {"locked", "opened", "edited", "closed", "journal written",
                             "journal synced", "synced", "journal removed"})
        EXPECT_EQ(count(step), 1) << step;

    const std::string path = integrityScratchPath("crash.h5");
    int keptOld = 0, gotNew = 0;
    auto checkAfterKill = [&](const std::string& what) {
        SCOPED_TRACE(what);
        // Readers see the previous or the new commit (a journal left half applied is overlaid in memory) and never
        // write: the file and its journal are byte for byte as the killed writer left them.
        const std::string leftFile = fileBytes(path), leftJournal = fileBytes(path + ".journal");
        const ReadBack got = readEverything(path, steps);
        const ReadBack gotOld = readEverything(path, {0, 100, 200});
        const bool isOld = difference(gotOld, before).empty() && got.checkpointRefused.count(300)
                           && got.checkpointRefused.size() == 1;
        const bool isNew = difference(got, after).empty();
        EXPECT_TRUE(isOld || isNew) << "neither the previous nor the new commit: " << difference(gotOld, before)
                                    << " / " << difference(got, after);
        EXPECT_EQ(fileBytes(path), leftFile) << "a reader wrote the run file";
        EXPECT_EQ(fileBytes(path + ".journal"), leftJournal) << "a reader changed the journal";
        ++(isNew ? gotNew : keptOld);
        // Resume repeats the commit: the result is exactly the uninterrupted file, with no leftovers (from the
        // previous commit, byte for byte the same file size as the uninterrupted one).
        commitStep300(path);
        EXPECT_EQ(difference(readEverything(path, steps), after), "");
        EXPECT_FALSE(fs::exists(path + ".tmp"));
        EXPECT_FALSE(fs::exists(path + ".journal"));
        if (isOld && !isNew)
            EXPECT_EQ(fs::file_size(path), fs::file_size(done)) << "bytes of the killed commit are left over";
    };
    for (size_t k = 0; k < points.size(); ++k) {
        fs::copy_file(base, path, fs::copy_options::overwrite_existing);
        EXPECT_TRUE(killedCommit(path, static_cast<int>(k), 0)) << "not killed at " << points[k];
        checkAfterKill("killed at point " + std::to_string(k) + " (" + points[k] + ")");
    }
    // Kills at 60 arbitrary instants from the start of the commit to 1.5 times its duration (inside HDF5's calls,
    // the fsyncs, the journal): same guarantee.
    const int kInstants = 60;
    for (int i = 0; i < kInstants; ++i) {
        const int delayUs = static_cast<int>(1.5 * commitUs * i / kInstants);
        fs::copy_file(base, path, fs::copy_options::overwrite_existing);
        killedCommit(path, -1, delayUs);
        checkAfterKill("killed after " + std::to_string(delayUs) + " µs");
    }
    std::printf("%zu fault points and %d instants over a %.0f µs commit; killed commits: %d left the previous "
                "commit, %d the new one\n",
                points.size(), kInstants, commitUs, keptOld, gotNew);
    EXPECT_GT(keptOld, 0);
    EXPECT_GT(gotNew, 0);
}

// A reader in another process never sees a commit half done: while one process commits, another opens the
// file and reads its last checkpoint over and over; every read succeeds and gives one of the committed versions.
TEST(ExperimentFileCrash, ReadersNeverSeeACommitHalfDone)
{
    const std::string path = smallRun("concurrent.h5");
    std::fflush(nullptr);
    const pid_t reader = ::fork();
    if (reader == 0) {
        int reads = 0;
        for (int i = 0; i < 400; ++i) {
            try {
                const icl::RunSummary s = icl::readRunSummary(path);
                if (!s.damaged.empty() || s.checkpoints.empty())
                    ::_exit(2);
                const icl::CheckpointData c = icl::readCheckpoint(path, s.checkpoints.back().step);
                if (c.params.empty() || c.step != s.checkpoints.back().step)
                    ::_exit(3);
                if (s.metrics.at("step").size() < 3)
                    ::_exit(4);
                ++reads;
            } catch (const std::exception& e) {
                std::fprintf(stderr, "reader: %s\n", e.what());
                ::_exit(1);
            }
        }
        ::_exit(reads == 400 ? 0 : 5);
    }
    for (int64_t step = 300; step < 300 + 100 * 40; step += 100) {
        const icl::CheckpointData cp = checkpointAt(step);
        icl::commitToExperimentFile(path, {{{"step", double(step)}, {"eval_loss", 1.0 / double(step)}}}, &cp);
    }
    int status = 0;
    ::waitpid(reader, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "reader status " << status;
    EXPECT_EQ(icl::readRunSummary(path).checkpoints.size(), 3u + 40u);
}

std::string contentDifference(const std::string& a, const std::string& b, const std::vector<int64_t>& steps)
{
    const ReadBack x = readEverything(a, steps), y = readEverything(b, steps);
    return !y.refused.empty() ? "reference refused: " + y.refused : difference(x, y);
}

} // namespace
