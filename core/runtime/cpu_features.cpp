#include "core/runtime/cpu_features.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <dlfcn.h>

namespace icl {

namespace {

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

} // namespace

CpuVectorFeatures cpuVectorFeatures()
{
    CpuVectorFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    f.avx = __builtin_cpu_supports("avx");
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
#endif
    return f;
}

std::string bestOpenBlasCore(const CpuVectorFeatures& cpu)
{
    if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq)
        return "SkylakeX";
    if (cpu.avx2 && cpu.fma)
        return "Haswell";
    if (cpu.avx)
        return "Sandybridge";
    return "";
}

int openBlasCoreLevel(const std::string& core)
{
    const std::string c = lower(core);
    for (const char* name : {"skylakex", "cooperlake", "sapphirerapids"})
        if (c == name)
            return 3;
    for (const char* name : {"haswell", "zen"})
        if (c == name)
            return 2;
    for (const char* name : {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"})
        if (c == name)
            return 1;
    return 0;
}

std::string openBlasCoreToForce(const std::string& chosen, const CpuVectorFeatures& cpu)
{
    const std::string best = bestOpenBlasCore(cpu);
    if (best.empty() || openBlasCoreLevel(chosen) >= openBlasCoreLevel(best))
        return "";
    return best;
}

std::string loadedOpenBlasCore()
{
    auto corename = reinterpret_cast<char* (*)()>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (corename == nullptr)
        return "";
    const char* name = corename();
    return name != nullptr ? std::string(name) : std::string();
}

std::string probeOpenBlasCore()
{
    // Loaded on its own, with its dependencies (libopenblas.so.0 behind Debian's libblas.so.3); never closed:
    // the process that asks is about to exec.
    void* blas = ::dlopen("libblas.so.3", RTLD_LAZY | RTLD_LOCAL);
    if (blas == nullptr)
        return "";
    auto corename = reinterpret_cast<char* (*)()>(::dlsym(blas, "openblas_get_corename"));
    const char* name = corename != nullptr ? corename() : nullptr;
    return name != nullptr ? std::string(name) : std::string();
}

bool preferBestOpenBlasCore(const std::string& chosen)
{
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr)
        return false;  // the user's (or an earlier start's) choice stands
    if (chosen.empty())
        return false;
    const std::string force = openBlasCoreToForce(chosen, cpuVectorFeatures());
    if (force.empty())
        return false;
    ::setenv("OPENBLAS_CORETYPE", force.c_str(), 1);
    ::setenv("ICL_OPENBLAS_FALLBACK", chosen.c_str(), 1);
    return true;
}

std::string bestAtenCpuCapability(const CpuVectorFeatures& cpu)
{
    if (cpu.avx512f && cpu.avx512bw && cpu.avx512vl && cpu.avx512dq)
        return "avx512";
    if (cpu.avx2 && cpu.fma)
        return "avx2";
    return "default";
}

bool preferBestAtenCpuCapability()
{
    if (std::getenv("ATEN_CPU_CAPABILITY") != nullptr)
        return false;  // the user's (or an earlier start's) choice stands
    if (bestAtenCpuCapability(cpuVectorFeatures()) != "avx512")
        return false;  // LibTorch already picks AVX2 where the CPU has it
    ::setenv("ATEN_CPU_CAPABILITY", "avx512", 1);
    ::setenv("ICL_ATEN_CPU_CAPABILITY_SET", "1", 1);
    return true;
}

} // namespace icl
