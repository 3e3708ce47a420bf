#pragma once
// Small checks shared by the LibTorch test binaries (core_tests, cuda_tests, core_benchmarks): the message of
// an expected icl::Error, the largest difference of two tensors, bitwise equality of two series, a fresh
// scratch path, a quick preset's config, a bare checkpoint record, equal checkpoint parameters, one-thread training
// options and the linear-regression prompts most model tests start from.
// One definition each, so that the test files can also be compiled together (unity build, ICL_UNITY_BUILD).
// With ICL_TESTS_WITHOUT_TORCH defined (the readers' tests of the sanitize preset, tests/readers) only the
// torch-free checks are declared.

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#ifndef ICL_TESTS_WITHOUT_TORCH
#include <torch/torch.h>
#endif

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#ifndef ICL_TESTS_WITHOUT_TORCH
#include "core/tasks/linear_regression.h"
#include "core/training/trainer.h"
#endif
#include "tests/support/scratch.h"

namespace icl::test {

/// The message of the icl::Error that `f()` throws; "" when it throws none (another exception propagates).
template <typename F> std::string errorOf(F f)
{
    try {
        f();
    } catch (const icl::Error& e) {
        return e.what();
    }
    return "";
}

/// Records a test failure unless `f()` throws an icl::Error whose message contains `fragment`.
template <typename F> void expectError(F&& f, const std::string& fragment)
{
    try {
        f();
        ADD_FAILURE() << "expected icl::Error containing \"" << fragment << "\"";
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

/// Records a test failure unless `message` begins with `prefix` (a refusal's "FILE: what is wrong").
inline void expectStartsWith(const std::string& message, const std::string& prefix)
{
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << message << "\n  does not begin with: " << prefix;
}

/// Records a test failure unless the two checkpoints hold the same parameter arrays: the same names in the same
/// order and equal values (a resumed run against an uninterrupted one).
inline void expectSameParams(const icl::CheckpointData& a, const icl::CheckpointData& b)
{
    ASSERT_EQ(a.params.size(), b.params.size());
    for (size_t i = 0; i < a.params.size(); ++i) {
        ASSERT_EQ(a.params[i].name, b.params[i].name);
        EXPECT_EQ(a.params[i].data, b.params[i].data) << a.params[i].name;
    }
}

#ifndef ICL_TESTS_WITHOUT_TORCH
/// max |a − b| over all elements, computed in float64 on the CPU (either tensor may live on a GPU).
inline double maxAbsDiff(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kCPU, torch::kFloat64) - b.to(torch::kCPU, torch::kFloat64)).abs().max().item<double>();
}
#endif

/// Same length and the same bits in every element (NaN payloads included).
template <typename T> bool sameBits(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

#ifndef ICL_TESTS_WITHOUT_TORCH
/// Options of a training run (icl::train) into `path` on one CPU thread, resuming the run there when `resume`; every
/// other option at its default.
inline icl::TrainOptions cpuTrainOptions(const std::string& path, bool resume = false)
{
    icl::TrainOptions o;
    o.out_path = path;
    o.threads = 1;
    o.resume = resume;
    return o;
}
#endif

/// scratchPrefix() + name, with any file of that name removed first.
inline std::string freshScratchFile(const std::string& name)
{
    const std::string p = scratchPrefix() + name;
    std::filesystem::remove(p);
    return p;
}

/// Preset `preset` at the quick scale, resolved (icl::resolveConfig) as `icl-cli train --preset P --scale quick`
/// would run it.
inline nlohmann::json quickPresetConfig(const std::string& preset)
{
    icl::ConfigRequest r;
    r.preset = preset;
    r.scale = "quick";
    return icl::resolveConfig(r);
}

/// A checkpoint at `step` with train_loss 1/(step + 1), wall_time_s 0.5·step and no arrays yet (the file tests add
/// their own parameters and optimizer state).
inline icl::CheckpointData checkpointRecordAt(int64_t step)
{
    icl::CheckpointData c;
    c.step = step;
    c.train_loss = 1.0 / (step + 1);
    c.wall_time_s = 0.5 * step;
    return c;
}

#ifndef ICL_TESTS_WITHOUT_TORCH
/// `batch` linear-regression prompts (Garg et al.: x ~ N(0, I_d), w ~ N(0, I_d), y = wᵀx + ε with
/// ε ~ N(0, noise²)) with `n` in-context examples each, from task seed `seed`.
inline icl::PromptBatch linearPrompts(int64_t batch, int64_t d, int64_t n, uint64_t seed, double noise = 0.0,
                                      torch::Dtype dtype = torch::kFloat64)
{
    icl::TaskConfig t;
    t.d = d;
    t.n_context = n;
    t.noise_std = noise;
    return icl::sampleLinearRegression(t, batch, seed, dtype);
}
#endif

} // namespace icl::test
