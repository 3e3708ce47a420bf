// The OpenBLAS core check (core/runtime/blas.h): which core a CPU should run, and what this
// process's BLAS reports.
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "core/runtime/blas.h"

namespace {

icl::CpuVectorFeatures avx512()
{
    icl::CpuVectorFeatures f;
    f.avx = f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = true;
    return f;
}

icl::CpuVectorFeatures avx2()
{
    icl::CpuVectorFeatures f;
    f.avx = f.avx2 = f.fma = true;
    return f;
}

std::string lower(std::string s)
{
    for (char& c : s)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

TEST(OpenBlasCore, BestCoreFollowsTheVectorExtensions)
{
    EXPECT_EQ(icl::bestOpenBlasCore(avx512()), "SkylakeX");
    EXPECT_EQ(icl::bestOpenBlasCore(avx2()), "Haswell");
    icl::CpuVectorFeatures avxOnly;
    avxOnly.avx = true;
    EXPECT_EQ(icl::bestOpenBlasCore(avxOnly), "Sandybridge");
    EXPECT_EQ(icl::bestOpenBlasCore(icl::CpuVectorFeatures{}), "");
    // AVX-512F alone (Knights Landing) is not SkylakeX's instruction set: AVX2 kernels.
    icl::CpuVectorFeatures knl = avx2();
    knl.avx512f = true;
    EXPECT_EQ(icl::bestOpenBlasCore(knl), "Haswell");
}

TEST(OpenBlasCore, AFallbackIsReplacedAndAGoodChoiceKept)
{
    // The machine: an AVX-512 Xeon that OpenBLAS 0.3.21 does not recognise → Prescott.
    EXPECT_EQ(icl::openBlasCoreToForce("Prescott", avx512()), "SkylakeX");
    EXPECT_EQ(icl::openBlasCoreToForce("Nehalem", avx2()), "Haswell");
    EXPECT_EQ(icl::openBlasCoreToForce("Sandybridge", avx2()), "Haswell");
    // OpenBLAS's own choice at the right level stands, whatever its name or spelling.
    EXPECT_EQ(icl::openBlasCoreToForce("Cooperlake", avx512()), "");
    EXPECT_EQ(icl::openBlasCoreToForce("SKYLAKEX", avx512()), "");
    EXPECT_EQ(icl::openBlasCoreToForce("Zen", avx2()), "");
    EXPECT_EQ(icl::openBlasCoreToForce("Haswell", avx2()), "");
    // Nothing better to offer an SSE-only CPU.
    EXPECT_EQ(icl::openBlasCoreToForce("Prescott", icl::CpuVectorFeatures{}), "");
}

TEST(OpenBlasCore, LevelsOfCoreNames)
{
    EXPECT_EQ(icl::openBlasCoreLevel("SapphireRapids"), 3);
    EXPECT_EQ(icl::openBlasCoreLevel("zen"), 2);
    EXPECT_EQ(icl::openBlasCoreLevel("Excavator"), 1);
    EXPECT_EQ(icl::openBlasCoreLevel("Prescott"), 0);
    EXPECT_EQ(icl::openBlasCoreLevel(""), 0);
}

TEST(OpenBlasCore, ThisProcessReportsItsBlas)
{
    // scripts/install-deps.sh installs OpenBLAS (libopenblas0-openmp), which LibTorch's BLAS calls reach.
    const icl::BlasInfo info = icl::blasInfo();
    EXPECT_EQ(info.library.rfind("OpenBLAS ", 0), 0u) << info.library;
    EXPECT_FALSE(info.core.empty());
    EXPECT_GE(info.intra_op_threads, 1);
    EXPECT_NE(info.summary().find("core " + info.core), std::string::npos) << info.summary();
    // A core named in the environment is the one OpenBLAS loaded (it reads the variable at load time).
    if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
        EXPECT_EQ(lower(info.core), lower(forced));
        EXPECT_TRUE(info.core_source.rfind("OPENBLAS_CORETYPE", 0) == 0 || info.core_source.rfind("set by", 0) == 0)
            << info.core_source;
    } else {
        EXPECT_EQ(info.core_source.rfind("detected by OpenBLAS", 0), 0u) << info.core_source;
    }
}

// ThisThreadIntraOpThreads changes the calling thread's count alone: LibTorch's parallel loops in the scope run on
// that thread, a thread started meanwhile gets the process's count, and the count comes back afterwards.
TEST(ThisThreadIntraOpThreads, SetsTheCallingThreadsCountOnlyAndRestoresIt)
{
    const icl::ScopedThreads two(2);
    ASSERT_EQ(torch::get_num_threads(), 2);
    {
        const icl::ThisThreadIntraOpThreads one(1);
        EXPECT_EQ(torch::get_num_threads(), 1);
        std::atomic<int> highestThread{0};
        at::parallel_for(0, 64, 1, [&](int64_t, int64_t) {
            int seen = highestThread.load();
            while (at::get_thread_num() > seen && !highestThread.compare_exchange_weak(seen, at::get_thread_num())) {
            }
        });
        EXPECT_EQ(highestThread.load(), 0);
        int otherThreadCount = 0;
        std::thread other([&] { otherThreadCount = torch::get_num_threads(); });
        other.join();
        EXPECT_EQ(otherThreadCount, 2);
        {
            const icl::ThisThreadIntraOpThreads unchanged(0);  // ≤ 0: leaves the count as it is
            EXPECT_EQ(torch::get_num_threads(), 1);
        }
        EXPECT_EQ(torch::get_num_threads(), 1);
    }
    EXPECT_EQ(torch::get_num_threads(), 2);
    std::atomic<int> highestThread{0};
    at::parallel_for(0, 64, 1, [&](int64_t, int64_t) {
        if (at::get_thread_num() > 0)
            highestThread = 1;
    });
    EXPECT_EQ(highestThread.load(), 1);  // two threads again
}

} // namespace
