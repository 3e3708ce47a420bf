#pragma once
// Small checks shared by the LibTorch test binaries (core_tests, cuda_tests, core_benchmarks): the message of
// an expected icl::Error, the largest difference of two tensors, bitwise equality of two series, a fresh
// scratch path and the linear-regression prompts most model tests start from. One definition each, so that
// the test files can also be compiled together (unity build, ICL_UNITY_BUILD).
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
#ifndef ICL_TESTS_WITHOUT_TORCH
#include "core/tasks/linear_regression.h"
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

/// scratchPrefix() + name, with any file of that name removed first.
inline std::string freshScratchFile(const std::string& name)
{
    const std::string p = scratchPrefix() + name;
    std::filesystem::remove(p);
    return p;
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
