#include "core/runtime/cpu_kernels.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <optional>
#include <string>

#include "tests/support/cpu_flags.h"
#include "tests/support/scoped_env.h"

namespace {

using icl::test::ScopedEnv;

icl::CpuVectorFeatures features(bool avx2, bool fma, bool avx512)
{
    icl::CpuVectorFeatures f;
    f.avx = avx2;
    f.avx2 = avx2;
    f.fma = fma;
    f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = avx512;
    return f;
}

} // namespace

// ATen's AVX-512 kernels are compiled for F, BW, VL and DQ; its AVX2 kernels for AVX2 with FMA.
TEST(AtenCpuCapability, BestLevelFollowsTheFeaturesAtensKernelsNeed)
{
    EXPECT_EQ(icl::bestAtenCpuCapability(features(true, true, true)), "avx512");
    icl::CpuVectorFeatures noBw = features(true, true, true);
    noBw.avx512bw = false;  // Xeon Phi (Knights Landing): AVX-512 F without BW/VL/DQ
    EXPECT_EQ(icl::bestAtenCpuCapability(noBw), "avx2");
    EXPECT_EQ(icl::bestAtenCpuCapability(features(true, true, false)), "avx2");
    EXPECT_EQ(icl::bestAtenCpuCapability(features(true, false, false)), "default");
    EXPECT_EQ(icl::bestAtenCpuCapability(icl::CpuVectorFeatures{}), "default");
}

// A value the user set is kept, whatever it is.
TEST(AtenCpuCapability, KeepsTheUsersChoice)
{
    ScopedEnv user("ATEN_CPU_CAPABILITY", std::string("default")), flag("ICL_ATEN_CPU_CAPABILITY_SET", std::nullopt);
    EXPECT_FALSE(icl::preferBestAtenCpuCapability());
    EXPECT_STREQ(std::getenv("ATEN_CPU_CAPABILITY"), "default");
    EXPECT_EQ(std::getenv("ICL_ATEN_CPU_CAPABILITY_SET"), nullptr);
}

// Unset, it becomes avx512 exactly where /proc/cpuinfo lists AVX-512 F, BW, VL and DQ (LibTorch 1.13 would
// stay on AVX2 there); elsewhere LibTorch's own choice is left alone.
TEST(AtenCpuCapability, PrefersAvx512WhereTheCpuHasIt)
{
    ScopedEnv unset("ATEN_CPU_CAPABILITY", std::nullopt), flag("ICL_ATEN_CPU_CAPABILITY_SET", std::nullopt);
    const bool avx512 = icl::test::cpuinfoHas({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
    EXPECT_EQ(icl::preferBestAtenCpuCapability(), avx512);
    if (avx512) {
        EXPECT_STREQ(std::getenv("ATEN_CPU_CAPABILITY"), "avx512");
        EXPECT_STREQ(std::getenv("ICL_ATEN_CPU_CAPABILITY_SET"), "1");
    } else {
        EXPECT_EQ(std::getenv("ATEN_CPU_CAPABILITY"), nullptr);
    }
}

// LibTorch reports one of the levels it has, and where it came from.
TEST(AtenCpuCapability, ThisProcessReportsItsKernels)
{
    const icl::AtenCpuInfo info = icl::atenCpuInfo();
    EXPECT_TRUE(info.capability == "AVX512" || info.capability == "AVX2" || info.capability == "NO AVX")
        << info.capability;
    EXPECT_EQ(info.summary().rfind(info.capability + " (", 0), 0u) << info.summary();
    if (std::getenv("ATEN_CPU_CAPABILITY") == nullptr)
        EXPECT_EQ(info.source.rfind("LibTorch's default", 0), 0u) << info.source;
}
