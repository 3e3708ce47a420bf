// GoogleTest main for the core tests: one LibTorch thread, so that ctest can run suites in parallel on
// a 2-core machine without oversubscribing it (tests that need a thread count set it themselves).
// With ICL_TEST_BEST_ATEN_CPU_CAPABILITY=1 it first makes the start-up choice of the executables (LibTorch's
// AVX-512 kernels where the CPU has them, core/runtime/cpu_kernels.h), so that kernels which must repeat LibTorch's
// numbers are checked against both widths (ctest runs GeluTanh.* again that way).
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/runtime/cpu_kernels.h"

int main(int argc, char** argv)
{
    const char* best = std::getenv("ICL_TEST_BEST_ATEN_CPU_CAPABILITY");
    if (best != nullptr && std::strcmp(best, "1") == 0)
        icl::preferBestAtenCpuCapability();
    torch::set_num_threads(1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
