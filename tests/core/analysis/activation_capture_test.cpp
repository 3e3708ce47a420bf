// Activation capture of many prompts streamed to HDF5: shapes and sizes known from the model's sizes,
// values equal to an independent forward pass of the documented prompts, limits and cancel leave
// nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <hdf5.h>

#include "core/analysis/activation_capture.h"
#include "core/analysis/run_loader.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/gpt2.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "tests/support/scratch.h"
#include "tests/support/core_checks.h"
#include "tests/support/tiny_models.h"

namespace {
using icl::test::expectError;

/// gpt2 (2 layers, 2 heads, width 16) on linear regression with d = 3, N = 5 (T = 11 tokens).
std::string writeRun(const std::string& name)
{
    const std::string path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(path);
    icl::ConfigRequest r;
    r.preset = "garg-linear-regression";
    r.sets = {"task.d=3", "task.n_context=5", "model.n_layers=2", "model.n_heads=2", "model.d_model=16",
              "training.curriculum.enabled=false", "eval.n_prompts=64", "eval.baselines=[\"zero\"]"};
    icl::test::writeModelRun(path, icl::resolveConfig(r), 7, 100);
    return path;
}

std::string slurp(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// Dataset `name` of `group` in `file`: values and dims.
std::vector<float> readFloat(const std::string& file, const std::string& name, std::vector<hsize_t>& dims)
{
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    EXPECT_GE(f, 0);
    const hid_t ds = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
    EXPECT_GE(ds, 0) << name;
    const hid_t space = H5Dget_space(ds);
    dims.assign(size_t(H5Sget_simple_extent_ndims(space)), 0);
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    size_t n = 1;
    for (hsize_t d : dims)
        n *= size_t(d);
    std::vector<float> out(n);
    H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data());
    H5Sclose(space);
    H5Dclose(ds);
    H5Fclose(f);
    return out;
}

TEST(ActivationCapture, EstimateFollowsTheModelSizes)
{
    const std::string run = writeRun("capture_estimate.h5");
    const icl::CaptureEstimate e = icl::estimateCapture(run, {"resid_post.1", "attn.pattern.0"}, 1000, 128);
    ASSERT_EQ(e.shapes.size(), 2u);
    EXPECT_EQ(e.shapes[0], (std::vector<int64_t>{11, 16}));     // [T, d_model]
    EXPECT_EQ(e.shapes[1], (std::vector<int64_t>{2, 11, 11}));  // [H, T, T]
    EXPECT_EQ(e.bytes_per_prompt, 4 * (11 * 16 + 2 * 11 * 11));
    EXPECT_EQ(e.chunk_bytes, 128 * e.bytes_per_prompt);
    EXPECT_EQ(e.total_bytes, 1000 * (e.bytes_per_prompt + 8 * 6 * 4));
    expectError([&] { icl::estimateCapture(run, {"resid_post.2"}, 10); }, "resid_post.{0…1}");
    expectError([&] { icl::estimateCapture(run, {"resid_post.0", "resid_post.0"}, 10); }, "twice");
    expectError([&] { icl::estimateCapture(run, {"embed"}, 0); }, "n_prompts");
}

TEST(ActivationCapture, StreamedChunksEqualAnIndependentForwardPass)
{
    const std::string run = writeRun("capture_stream.h5");
    const std::string out = icl::test::scratchPrefix() + "capture_stream_out.h5";
    std::filesystem::remove(out);
    icl::CaptureOptions o;
    o.names = {"resid_post.0", "attn.pattern.1"};
    o.n_prompts = 10;
    o.chunk = 4;  // chunks of 4, 4, 2
    o.seed = 5;
    o.out_path = out;
    std::vector<int64_t> calls;
    const icl::CaptureResult r = icl::captureActivations(run, o, [&](int64_t done, int64_t total) {
        EXPECT_EQ(total, 10);
        calls.push_back(done);
        return true;
    });
    EXPECT_EQ(calls, (std::vector<int64_t>{4, 8, 10}));
    EXPECT_EQ(r.group, "/");
    EXPECT_EQ(r.checkpoint_step, 100);
    std::vector<hsize_t> dims;
    const std::vector<float> resid = readFloat(out, "/resid_post.0", dims);
    EXPECT_EQ(dims, (std::vector<hsize_t>{10, 11, 16}));
    const std::vector<float> pattern = readFloat(out, "/attn.pattern.1", dims);
    EXPECT_EQ(dims, (std::vector<hsize_t>{10, 2, 11, 11}));
    // Prompt 5 is row 1 of chunk 1: samplePrompts(task, 4, mixSeed(seed, 1)).
    icl::LoadedRun loaded = icl::loadRun(run, -1);
    auto gpt = std::dynamic_pointer_cast<icl::Gpt2Impl>(loaded.model.module);
    torch::NoGradGuard guard;
    const icl::PromptBatch b = icl::samplePrompts(loaded.config.task, 4, icl::mixSeed(5, 1));
    icl::ActivationCapture cap;
    cap.names = {"resid_post.0", "attn.pattern.1"};
    gpt->forward(icl::interleavedTokens(b), &cap);
    const torch::Tensor expResid = cap.values.at("resid_post.0")[1].contiguous();
    const torch::Tensor expPattern = cap.values.at("attn.pattern.1")[1].contiguous();
    for (int64_t i = 0; i < 11 * 16; ++i)
        EXPECT_NEAR(resid[size_t(5 * 11 * 16 + i)], expResid.data_ptr<float>()[i], 1e-6);
    for (int64_t i = 0; i < 2 * 11 * 11; ++i)
        EXPECT_NEAR(pattern[size_t(5 * 2 * 11 * 11 + i)], expPattern.data_ptr<float>()[i], 1e-6);
    std::vector<float> x = readFloat(out, "/x", dims);
    EXPECT_EQ(dims, (std::vector<hsize_t>{10, 6, 3}));
    EXPECT_NEAR(x[size_t(5 * 18)], b.x[1][0][0].item<double>(), 1e-6);
    expectError([&] { icl::captureActivations(run, o); }, "exists");
}

TEST(ActivationCapture, IntoTheExperimentFileUnderAnalysis)
{
    const std::string run = writeRun("capture_into.h5");
    icl::CaptureOptions o;
    o.names = {"embed"};
    o.n_prompts = 3;
    const icl::CaptureResult r = icl::captureActivations(run, o);
    EXPECT_EQ(r.file, run);
    EXPECT_EQ(r.group, "/analysis/activations/0001");
    std::vector<hsize_t> dims;
    readFloat(run, "/analysis/activations/0001/embed", dims);
    EXPECT_EQ(dims, (std::vector<hsize_t>{3, 11, 16}));
    EXPECT_EQ(icl::readRunSummary(run).checkpoints.size(), 1u);  // still a valid experiment file
    EXPECT_EQ(icl::captureActivations(run, o).group, "/analysis/activations/0002");
    EXPECT_TRUE(icl::verifyExperimentFile(run).damaged.empty());

    // A flipped bit in a captured chunk fails its Fletcher-32 checksum: verify names the dataset.
    haddr_t chunk = HADDR_UNDEF;
    {
        const hid_t f = H5Fopen(run.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        const hid_t ds = H5Dopen2(f, "/analysis/activations/0001/embed", H5P_DEFAULT);
        hsize_t offset[3];
        unsigned mask = 0;
        hsize_t size = 0;
        const hid_t space = H5Dget_space(ds);
        EXPECT_GE(H5Dget_chunk_info(ds, space, 0, offset, &mask, &chunk, &size), 0);
        H5Sclose(space);
        H5Dclose(ds);
        H5Fclose(f);
    }
    ASSERT_NE(chunk, HADDR_UNDEF);
    {
        std::fstream f(run, std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(std::streamoff(chunk + 9));
        char c = 0;
        f.read(&c, 1);
        c = char(c ^ 0x10);
        f.seekp(std::streamoff(chunk + 9));
        f.write(&c, 1);
    }
    EXPECT_EQ(icl::verifyExperimentFile(run).damaged,
              std::vector<std::string>{run + ": damaged: /analysis/activations/0001/embed (unreadable or checksum mismatch)"});
}

TEST(ActivationCapture, LimitsAndCancelLeaveNothingBehind)
{
    const std::string run = writeRun("capture_limits.h5");
    const std::string before = slurp(run);
    icl::CaptureOptions o;
    o.names = {"resid_post.1"};
    o.n_prompts = 1000;
    o.max_total_bytes = 100000;
    expectError([&] { icl::captureActivations(run, o); }, "would write 875.0 KiB (704 B per prompt), above the limit");
    o.max_total_bytes = int64_t(1) << 30;
    o.max_chunk_bytes = 1000;
    expectError([&] { icl::captureActivations(run, o); }, "use a smaller chunk");
    o.max_chunk_bytes = int64_t(1) << 30;
    o.chunk = 100;
    expectError([&] { icl::captureActivations(run, o, [](int64_t done, int64_t) { return done < 300; }); }, "cancelled");
    EXPECT_EQ(slurp(run), before);
    EXPECT_FALSE(std::filesystem::exists(run + ".capture.tmp"));
    o.out_path = icl::test::scratchPrefix() + "capture_cancel_out.h5";
    std::filesystem::remove(o.out_path);
    expectError([&] { icl::captureActivations(run, o, [](int64_t, int64_t) { return false; }); }, "cancelled");
    EXPECT_FALSE(std::filesystem::exists(o.out_path));
    EXPECT_FALSE(std::filesystem::exists(o.out_path + ".capture.tmp"));
}

} // namespace
