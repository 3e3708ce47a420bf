#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <hdf5.h>

#include "core/error.h"
#include "core/io/experiment_file.h"
#include "tests/support/core_checks.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;

namespace {

icl::CheckpointData sampleCheckpoint(int64_t step)
{
    icl::CheckpointData c;
    c.step = step;
    c.train_loss = 0.25 + step;
    c.wall_time_s = 1.5;
    // Values that stress bit-exactness: subnormal, negative zero, large and irrational-looking numbers.
    c.params.push_back({"blocks.0.attn.w_q", {1, 2, 3}, {1e-40f, -0.0f, 3.4e38f, 0.1f, -7.25f, 1.0f / 3.0f}});
    c.params.push_back({"blocks.0.attn.w_o", {2}, {42.0f, -1e-3f}});
    c.optimizer.push_back({"blocks.0.attn.w_q/exp_avg", {1, 2, 3}, {1, 2, 3, 4, 5, 6}});
    c.optimizer_scalars["blocks.0.attn.w_q/step"] = 17;
    return c;
}

std::string errorOf(const std::string& path)
{
    return icl::test::errorOf([&] { icl::readRunSummary(path); });
}

TEST(ExperimentFile, RoundTripIsBitwise)
{
    const std::string path = icl::test::freshScratchFile("roundtrip.h5");
    icl::createExperimentFile(path, R"({"seed": 1})", false);
    std::vector<icl::MetricsRow> rows = {{{"step", 0}, {"eval_loss", 1.5}, {"baseline/gd_1", 0.8}},
                                         {{"step", 100}, {"eval_loss", 1.25}, {"baseline/gd_1", 0.8}}};
    const icl::CheckpointData cp = sampleCheckpoint(100);
    icl::commitToExperimentFile(path, rows, &cp);

    const icl::RunSummary s = icl::readRunSummary(path);
    EXPECT_EQ(s.format, "icl-workbench");
    EXPECT_EQ(s.format_version, icl::kFileFormatVersion);
    EXPECT_EQ(s.config_json, R"({"seed": 1})");
    ASSERT_EQ(s.checkpoints.size(), 1u);
    EXPECT_EQ(s.checkpoints[0].step, 100);
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 100}));
    EXPECT_EQ(s.metrics.at("eval_loss"), (std::vector<double>{1.5, 1.25}));
    EXPECT_EQ(s.metrics.at("baseline/gd_1"), (std::vector<double>{0.8, 0.8}));

    const icl::CheckpointData back = icl::readCheckpoint(path, 100);
    ASSERT_EQ(back.params.size(), cp.params.size());
    for (const auto& want : cp.params) {
        auto it = std::find_if(back.params.begin(), back.params.end(),
                               [&](const icl::NamedArray& a) { return a.name == want.name; });
        ASSERT_NE(it, back.params.end()) << want.name;
        EXPECT_EQ(it->shape, want.shape);
        ASSERT_EQ(it->data.size(), want.data.size());
        EXPECT_EQ(std::memcmp(it->data.data(), want.data.data(), want.data.size() * sizeof(float)), 0) << want.name;
    }
    EXPECT_EQ(back.optimizer.size(), 1u);
    EXPECT_EQ(back.optimizer_scalars.at("blocks.0.attn.w_q/step"), 17);
    EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(ExperimentFile, MetricsAppendAndTruncateForResume)
{
    const std::string path = icl::test::freshScratchFile("truncate.h5");
    icl::createExperimentFile(path, "{}", false);
    for (int s = 0; s <= 300; s += 100)
        icl::commitToExperimentFile(path, {{{"step", double(s)}, {"eval_loss", 1.0 / (s + 1)}}}, nullptr);
    // Resuming from step 100 drops rows 200 and 300 before the new row for 200.
    icl::commitToExperimentFile(path, {{{"step", 200.0}, {"eval_loss", 9.0}}}, nullptr, 100);
    const auto s = icl::readRunSummary(path);
    EXPECT_EQ(s.metrics.at("step"), (std::vector<double>{0, 100, 200}));
    EXPECT_EQ(s.metrics.at("eval_loss").back(), 9.0);
}

TEST(ExperimentFile, ExistingFileIsNotOverwrittenUnlessAsked)
{
    const std::string path = icl::test::freshScratchFile("exists.h5");
    icl::createExperimentFile(path, "{}", false);
    EXPECT_THROW(icl::createExperimentFile(path, "{}", false), icl::Error);
    EXPECT_NO_THROW(icl::createExperimentFile(path, R"({"seed":2})", true));
    EXPECT_EQ(icl::readRunSummary(path).config_json, R"({"seed":2})");
}

TEST(ExperimentFile, TruncatedFileIsRefused)
{
    const std::string path = icl::test::freshScratchFile("truncated.h5");
    icl::createExperimentFile(path, "{}", false);
    icl::CheckpointData cp = sampleCheckpoint(5);
    icl::commitToExperimentFile(path, {{{"step", 5.0}}}, &cp);
    const auto size = fs::file_size(path);
    fs::resize_file(path, size / 2);
    const std::string e = errorOf(path);
    EXPECT_FALSE(e.empty());
    EXPECT_NE(e.find(path), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << "one line: " << e;
}

TEST(ExperimentFile, ForeignFilesAreRefused)
{
    // An HDF5 file from another tool: wrong `format` attribute.
    const std::string path = icl::test::freshScratchFile("foreign.h5");
    {
        hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        hid_t type = H5Tcopy(H5T_C_S1);
        H5Tset_size(type, 7);
        hid_t space = H5Screate(H5S_SCALAR);
        hid_t attr = H5Acreate2(f, "format", type, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, type, "keras\0\0");
        H5Aclose(attr);
        H5Sclose(space);
        H5Tclose(type);
        H5Fclose(f);
    }
    EXPECT_NE(errorOf(path).find("format is \"keras\""), std::string::npos) << errorOf(path);

    const std::string text = icl::test::freshScratchFile("text.h5");
    std::ofstream(text) << "not hdf5 at all";
    EXPECT_NE(errorOf(text).find("not an ICL Workbench experiment file"), std::string::npos);

    EXPECT_NE(errorOf(icl::test::freshScratchFile("missing.h5")).find("no such file"), std::string::npos);
    EXPECT_THROW(icl::readCheckpoint(text, 0), icl::Error);
}

TEST(ExperimentFile, AnalysisResultsAreStoredWithProvenance)
{
    const std::string path = icl::test::freshScratchFile("analysis.h5");
    icl::createExperimentFile(path, "{}", false);
    EXPECT_EQ(icl::storeAnalysis(path, "icl_curve", 100, 7, "{}", R"({"x":1})"), "0001");
    EXPECT_EQ(icl::storeAnalysis(path, "icl_curve", 200, 7, "{}", R"({"x":2})"), "0002");
    EXPECT_EQ(icl::storeAnalysis(path, "eta_scan", 200, 7, "{}", "{}"), "0001");
    const auto s = icl::readRunSummary(path);
    EXPECT_EQ(s.analyses, (std::map<std::string, int>{{"eta_scan", 1}, {"icl_curve", 2}}));
}

} // namespace
