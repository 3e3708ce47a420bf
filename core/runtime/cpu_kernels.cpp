#include "core/runtime/cpu_kernels.h"

#include <cstdlib>

#include <ATen/Version.h>

namespace icl {

std::string AtenCpuInfo::summary() const
{
    return capability + " (" + source + ")";
}

AtenCpuInfo atenCpuInfo()
{
    AtenCpuInfo info;
    info.best = bestAtenCpuCapability(cpuVectorFeatures());
    // at::show_config() lists "CPU capability usage: AVX2" (LibTorch's own get_cpu_capability is not
    // exported).
    const std::string config = at::show_config();
    const std::string key = "CPU capability usage: ";
    const size_t at = config.find(key);
    if (at == std::string::npos) {
        info.capability = "unknown";
    } else {
        const size_t begin = at + key.size();
        const size_t end = config.find('\n', begin);
        info.capability = config.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    }
    if (std::getenv("ATEN_CPU_CAPABILITY") == nullptr)
        info.source = "LibTorch's default";
    else if (std::getenv("ICL_ATEN_CPU_CAPABILITY_SET") != nullptr)
        info.source = "set by ICL Workbench";
    else
        info.source = "ATEN_CPU_CAPABILITY from the environment";
    // LibTorch's names for the levels of ATEN_CPU_CAPABILITY.
    const std::string bestName = info.best == "avx512" ? "AVX512" : info.best == "avx2" ? "AVX2" : "NO AVX";
    if (info.capability != bestName && info.capability != "unknown")
        info.source += "; this CPU could run " + bestName;
    return info;
}

int atenFloatVectorWidth()
{
    static const int width = [] {
        const std::string capability = atenCpuInfo().capability;
        if (capability == "AVX512" && __builtin_cpu_supports("avx512f"))
            return 16;
        if (capability == "AVX2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            return 8;
        return 0;
    }();
    return width;
}

} // namespace icl
