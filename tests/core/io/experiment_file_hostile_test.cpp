// Hostile experiment files built with HDF5's C API: attributes that are arrays where one value belongs, strings
// longer than allowed, wrong type classes, datasets declaring huge shapes without storage, series of the wrong
// rank, JSON and groups nested without end. Each is refused in one line naming the file and the object, with
// no crash (several of these overwrote the stack or heap before the readers checked what they read).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <hdf5.h>

#include "core/error.h"
#include "core/io/checksums.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "tests/support/core_checks.h"

namespace fs = std::filesystem;

namespace {
namespace hostile {

std::string lsaConfig()
{
    return icl::test::quickPresetConfig("vonoswald-lsa-1layer").dump();
}

icl::CheckpointData checkpointAt(int64_t step)
{
    icl::CheckpointData c = icl::test::checkpointRecordAt(step);
    icl::NamedArray w{"layers.0.w_q", {3, 4}, {}};
    for (int i = 0; i < 12; ++i)
        w.data.push_back(0.25f * float(i) - 1.0f + float(step));
    c.params.push_back(w);
    c.optimizer.push_back({"layers.0.w_q/exp_avg", {3, 4}, std::vector<float>(12, 0.5f)});
    c.optimizer_scalars["layers.0.w_q/step"] = double(step);
    return c;
}

// A valid run: two commits with metrics and checkpoints, and one stored analysis.
std::string validRun(const std::string& name)
{
    const std::string path = icl::test::freshScratchFile(name);
    icl::createExperimentFile(path, lsaConfig(), false);
    for (int64_t step : {0, 100}) {
        const icl::CheckpointData cp = checkpointAt(step);
        icl::commitToExperimentFile(path, {{{"step", double(step)}, {"eval_loss", 2.0 / (step + 1)}}}, &cp);
    }
    icl::storeAnalysis(path, "icl_curve", 100, 7, R"({"n_prompts":10})", R"({"error":[1,0.5]})");
    return path;
}

// Opens `path` read-write with plain HDF5, runs `edit` on the object at `object` and closes it again; with
// `reseal`, the object's seal (SHA-256 of its attributes) is recomputed, as a forger can, so that the reader gets
// past the checksum to the check under test.
template <typename Edit>
void editObject(const std::string& path, const std::string& object, Edit&& edit, bool reseal)
{
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);  // as the workbench writes
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    ASSERT_GE(f, 0) << path;
    const hid_t o = H5Oopen(f, object.c_str(), H5P_DEFAULT);
    ASSERT_GE(o, 0) << object;
    edit(o);
    if (reseal)
        icl::checksums::seal(o);
    H5Oclose(o);
    ASSERT_GE(H5Fclose(f), 0);
}

// Replaces attribute `name` of `obj` by one of file type `type` and dataspace `space`, written from `data`.
void replaceAttr(hid_t obj, const char* name, hid_t type, hid_t space, const void* data)
{
    if (H5Aexists(obj, name) > 0)
        H5Adelete(obj, name);
    const hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(a, 0) << name;
    ASSERT_GE(H5Awrite(a, type, data), 0) << name;
    H5Aclose(a);
}

void doubleArrayAttr(hid_t obj, const char* name, hsize_t n)
{
    std::vector<double> v(n, 65.0);  // 0x4050400000000000: not a pointer anything may follow
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    replaceAttr(obj, name, H5T_NATIVE_DOUBLE, space, v.data());
    H5Sclose(space);
}

// A 1-D attribute of `n` C strings of HDF5 size `size` (a length, or H5T_VARIABLE) holding `data`.
void stringArrayAttr(hid_t obj, const char* name, hsize_t n, size_t size, const void* data)
{
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, size);
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    replaceAttr(obj, name, type, space, data);
    H5Sclose(space);
    H5Tclose(type);
}

void fixedStringArrayAttr(hid_t obj, const char* name, hsize_t n, size_t length)
{
    const std::string all(n * length, 'A');
    stringArrayAttr(obj, name, n, length, all.data());
}

void variableStringArrayAttr(hid_t obj, const char* name, hsize_t n)
{
    const std::string text(64, 'A');
    const std::vector<const char*> v(n, text.c_str());
    stringArrayAttr(obj, name, n, H5T_VARIABLE, v.data());
}

void fixedStringAttr(hid_t obj, const char* name, const std::string& value)
{
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size());
    const hid_t space = H5Screate(H5S_SCALAR);
    replaceAttr(obj, name, type, space, value.data());
    H5Sclose(space);
    H5Tclose(type);
}

// Replaces dataset `name` below `group` by one of file type `type` and shape `dims`, with no data written
// (HDF5 allocates no storage for it: a small file declaring a huge array).
void replaceDataset(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& dims, bool chunked = false)
{
    if (H5Lexists(group, name, H5P_DEFAULT) > 0)
        H5Ldelete(group, name, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked) {
        std::vector<hsize_t> chunk(dims.size(), 1);
        H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    }
    const hid_t d = H5Dcreate2(group, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ASSERT_GE(d, 0) << name;
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
}

// The memory budget of the readers for the duration of a test (ICL_MAX_MEMORY).
struct BudgetOf {
    explicit BudgetOf(const char* size) { ::setenv("ICL_MAX_MEMORY", size, 1); }
    ~BudgetOf() { ::unsetenv("ICL_MAX_MEMORY"); }
};

// `message` is one line about `path`.
void expectOneLineAbout(const std::string& message, const std::string& path)
{
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// The open refuses the file with exactly `want`, and verify lists exactly that line; with `checkpointToo` (the
// damage is in what every open reads: the root), reading a checkpoint is refused the same way.
void expectRefusedAtOpen(const std::string& path, const std::string& want, bool checkpointToo = false)
{
    const std::string got = icl::test::errorOf([&] { icl::readRunSummary(path); });
    EXPECT_EQ(got, want);
    expectOneLineAbout(got, path);
    EXPECT_EQ(icl::verifyExperimentFile(path).damaged, std::vector<std::string>{want});
    if (checkpointToo)
        EXPECT_EQ(icl::test::errorOf([&] { icl::readCheckpoint(path, 100); }), want);
}


TEST(HostileExperimentFile, ARootNumberThatIsAnArrayIsRefused)
{
    for (hsize_t n : {64u, 8000u}) {  // 8,000 doubles: beyond the object header, in dense attribute storage
        const std::string path = validRun("hostile_version_" + std::to_string(n) + ".h5");
        editObject(path, "/", [&](hid_t root) { doubleArrayAttr(root, "format_version", n); }, false);
        expectRefusedAtOpen(path,
                            path + ": damaged: / (attribute 'format_version' holds " + std::to_string(n)
                                + " values, expected one number)",
                            true);
    }
}

TEST(HostileExperimentFile, ARootStringThatIsAnArrayIsRefused)
{
    const std::string fixed = validRun("hostile_format_fixed.h5");
    editObject(fixed, "/", [](hid_t root) { fixedStringArrayAttr(root, "format", 4000, 16); }, false);
    expectRefusedAtOpen(fixed, fixed + ": damaged: / (attribute 'format' holds 4000 values, expected one string)",
                        true);

    const std::string variable = validRun("hostile_format_vlen.h5");
    editObject(variable, "/", [](hid_t root) { variableStringArrayAttr(root, "format", 2000); }, false);
    expectRefusedAtOpen(variable,
                        variable + ": damaged: / (attribute 'format' holds 2000 values, expected one string)", true);
}

TEST(HostileExperimentFile, AnAttributeOfTheWrongTypeClassIsRefused)
{
    const std::string path = validRun("hostile_format_int.h5");
    editObject(path, "/", [](hid_t root) {
        const int32_t v = 7;
        const hid_t space = H5Screate(H5S_SCALAR);
        replaceAttr(root, "format", H5T_NATIVE_INT32, space, &v);
        H5Sclose(space);
    }, false);
    expectRefusedAtOpen(path, path + ": damaged: / (attribute 'format' is an integer, expected a string)", true);

    const std::string version = validRun("hostile_version_string.h5");
    editObject(version, "/", [](hid_t root) { fixedStringAttr(root, "format_version", "2"); }, false);
    expectRefusedAtOpen(version, version + ": damaged: / (attribute 'format_version' is a string, expected a number)",
                        true);
}

TEST(HostileExperimentFile, AStringLongerThanItsLimitIsRefused)
{
    // `created` is a short string (at most 4 KiB); resealed, so the reader gets past the root's checksum.
    const std::string path = validRun("hostile_created.h5");
    editObject(path, "/", [](hid_t root) { fixedStringAttr(root, "created", std::string(10000, '9')); }, true);
    expectRefusedAtOpen(path, path + ": damaged: / (attribute 'created' is 10.0 KB long, over the limit of 4.10 KB)");
}

TEST(HostileExperimentFile, ADatasetDeclaringMoreThanTheBudgetIsRefusedBeforeItIsAllocated)
{
    BudgetOf budget("64M");
    const std::string path = validRun("hostile_huge_param.h5");
    // 2^28 floats (1 GiB) declared, nothing stored: the file stays a few KB.
    editObject(path, "/checkpoints/000000100/params", [](hid_t g) {
        replaceDataset(g, "layers.0.w_q", H5T_IEEE_F32LE, {16384, 16384});
    }, false);
    EXPECT_LT(fs::file_size(path), 100000u);
    // "RUN.h5: refused: /checkpoints/…/layers.0.w_q (268435456 values) would need 1.07 GB (… already used), over
    // the memory budget of 67.1 MB (--max-memory or ICL_MAX_MEMORY)": 2^28 · 4 bytes, 64 MiB.
    const std::string e = icl::test::errorOf([&] { icl::readCheckpoint(path, 100); });
    expectOneLineAbout(e, path);
    icl::test::expectStartsWith(
        e, path + ": refused: /checkpoints/000000100/params/layers.0.w_q (268435456 values) would need 1.07 GB");
    EXPECT_NE(e.find(", over the memory budget of 67.1 MB (--max-memory or ICL_MAX_MEMORY)"), std::string::npos) << e;
    const icl::FileVerification v = icl::verifyExperimentFile(path);
    EXPECT_EQ(v.damaged, std::vector<std::string>{e});
    // The open itself reads no checkpoint array; the other checkpoint stays readable.
    EXPECT_TRUE(icl::readRunSummary(path).damaged.empty());
    EXPECT_EQ(icl::readCheckpoint(path, 0).params.at(0).data, checkpointAt(0).params.at(0).data);
}

TEST(HostileExperimentFile, AShapeWhoseByteSizeOverflowsIsRefused)
{
    // 2^21 · 2^21 · 2^21 = 2^63 elements fit 64 bits; their 4-byte size does not. Chunked, so HDF5 stores nothing.
    const std::string path = validRun("hostile_overflow.h5");
    editObject(path, "/checkpoints/000000100/params", [](hid_t g) {
        replaceDataset(g, "layers.0.w_q", H5T_IEEE_F32LE, {hsize_t(1) << 21, hsize_t(1) << 21, hsize_t(1) << 21}, true);
    }, false);
    EXPECT_EQ(icl::test::errorOf([&] { icl::readCheckpoint(path, 100); }),
              path + ": damaged: /checkpoints/000000100/params/layers.0.w_q (shape overflows 64 bits)");
}

TEST(HostileExperimentFile, AMetricSeriesOfTheWrongRankOrTypeIsRefused)
{
    // With a digest attribute, as a forger writes one, so that the reader reaches the values.
    auto withDigest = [](hid_t g, hid_t type, const std::vector<hsize_t>& dims) {
        replaceDataset(g, "eval_loss", type, dims);
        const hid_t d = H5Dopen2(g, "eval_loss", H5P_DEFAULT);
        fixedStringAttr(d, "sha256", std::string(64, 'a'));
        H5Dclose(d);
    };
    const std::string path = validRun("hostile_series_rank.h5");
    editObject(path, "/metrics", [&](hid_t g) { withDigest(g, H5T_IEEE_F64LE, {2, 3}); }, false);
    expectRefusedAtOpen(path, path + ": damaged: /metrics/eval_loss (is 2-dimensional, expected 1-dimensional)");

    const std::string ints = validRun("hostile_series_type.h5");
    editObject(ints, "/metrics", [&](hid_t g) { withDigest(g, H5T_STD_I64LE, {2}); }, false);
    expectRefusedAtOpen(ints,
                        ints + ": damaged: /metrics/eval_loss (holds integers, expected floating-point numbers)");
}

TEST(HostileExperimentFile, AnOptimizerScalarThatIsAnArrayIsRefused)
{
    // Read into one double on the stack by earlier builds.
    const std::string path = validRun("hostile_scalar.h5");
    editObject(path, "/checkpoints/000000100/optimizer/layers.0.w_q",
               [](hid_t g) { doubleArrayAttr(g, "step", 100); }, false);
    const std::string e = icl::test::errorOf([&] { icl::readCheckpoint(path, 100); });
    EXPECT_EQ(e, path + ": damaged: /checkpoints/000000100/optimizer/layers.0.w_q (attribute 'step' holds 100 values, "
                        "expected one number)");
    EXPECT_EQ(icl::readCheckpoint(path, 0).params.at(0).data, checkpointAt(0).params.at(0).data);
}

TEST(HostileExperimentFile, ACheckpointAttributeThatIsAnArrayFlagsThatCheckpoint)
{
    const std::string path = validRun("hostile_step.h5");
    editObject(path, "/checkpoints/000000100", [](hid_t g) { doubleArrayAttr(g, "step", 10); }, true);
    const icl::RunSummary s = icl::readRunSummary(path);
    const std::string want =
        path + ": damaged: /checkpoints/000000100 (attribute 'step' holds 10 values, expected one number)";
    EXPECT_EQ(s.damaged, std::vector<std::string>{want});
    ASSERT_EQ(s.checkpoints.size(), 2u);
    EXPECT_EQ(s.checkpoints[1].damaged, want);
    EXPECT_TRUE(s.checkpoints[0].damaged.empty());
}

TEST(HostileExperimentFile, AStoredResultWithAnArrayForItsSeedIsLeftOut)
{
    const std::string path = validRun("hostile_seed.h5");
    icl::storeAnalysis(path, "icl_curve", 100, 8, "{}", R"({"error":[2]})");
    editObject(path, "/analysis/icl_curve/0001", [](hid_t g) {
        std::vector<uint64_t> v(50, 0x4141414141414141ull);
        const hsize_t n = v.size();
        const hid_t space = H5Screate_simple(1, &n, nullptr);
        replaceAttr(g, "seed", H5T_NATIVE_UINT64, space, v.data());
        H5Sclose(space);
    }, true);
    const std::vector<icl::StoredAnalysis> stored = icl::readStoredAnalyses(path, "icl_curve");
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].id, "0002");
    EXPECT_EQ(stored[0].seed, 8u);
}

TEST(HostileExperimentFile, JsonNestedWithoutEndIsRefused)
{
    std::string deep;
    for (int i = 0; i < 100000; ++i)
        deep += "{\"a\":";
    deep += "1";
    deep += std::string(100000, '}');
    const std::string config = validRun("hostile_deep_config.h5");
    editObject(config, "/config", [&](hid_t g) { fixedStringAttr(g, "json", deep); }, true);
    expectRefusedAtOpen(config, config + ": damaged: /config (JSON nested deeper than 64 levels)");

    const std::string manifest = validRun("hostile_deep_manifest.h5");
    editObject(manifest, "/checkpoints/000000100", [&](hid_t g) { fixedStringAttr(g, "manifest", deep); }, true);
    EXPECT_EQ(icl::test::errorOf([&] { icl::readCheckpoint(manifest, 100); }),
              manifest + ": damaged: /checkpoints/000000100 manifest (JSON nested deeper than 64 levels)");

    // A stored result: left out of what the pages read, and listed by verify.
    const std::string result = validRun("hostile_deep_result.h5");
    editObject(result, "/analysis/icl_curve/0001", [&](hid_t g) { fixedStringAttr(g, "json", deep); }, true);
    EXPECT_TRUE(icl::readStoredAnalyses(result, "icl_curve").empty());
    EXPECT_EQ(icl::verifyExperimentFile(result).damaged,
              std::vector<std::string>{result + ": damaged: /analysis/icl_curve/0001 json (JSON nested deeper than 64 "
                                                "levels)"});
}

TEST(HostileExperimentFile, GroupsNestedWithoutEndAreRefused)
{
    const std::string path = validRun("hostile_deep_groups.h5");
    std::string object = "/metrics";
    editObject(path, "/metrics", [&](hid_t g) {
        std::string name;
        for (int i = 0; i < 40; ++i)
            name += (i ? "/" : "") + std::string("g");
        const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        H5Gclose(H5Gcreate2(g, name.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT));
        H5Pclose(lcpl);
    }, false);
    for (int i = 0; i < 33; ++i)
        object += "/g";
    expectRefusedAtOpen(path, path + ": damaged: " + object + " (groups nested deeper than 32)");
}

TEST(HostileExperimentFile, ACapturedDatasetThatHoldsNoNumbersIsListedByVerify)
{
    const std::string path = validRun("hostile_capture.h5");
    editObject(path, "/analysis/icl_curve/0001", [](hid_t g) {
        const hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, 1 << 20);
        replaceDataset(g, "x", type, {1000000});  // a terabyte of declared strings
        H5Tclose(type);
    }, false);
    const std::string want = path + ": damaged: /analysis/icl_curve/0001/x (holds strings, expected numbers)";
    EXPECT_EQ(icl::verifyExperimentFile(path).damaged, std::vector<std::string>{want});
}

} // namespace hostile
} // namespace
