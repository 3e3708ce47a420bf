#include "core/runtime/allocator.h"

#include <atomic>
#include <cstdlib>
#include <malloc.h>

namespace icl {

namespace {

std::atomic<bool> g_configured{false};

bool userSetAllocator()
{
    for (const char* name :
         {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES"})
        if (std::getenv(name) != nullptr)
            return true;
    return false;
}

std::string mib(std::size_t bytes)
{
    return std::to_string(bytes >> 20) + " MiB";
}

} // namespace

bool configureCpuAllocator()
{
    if (userSetAllocator())
        return false;
    // Setting either value turns off glibc's dynamic threshold, so both are set.
    const bool ok = ::mallopt(M_MMAP_THRESHOLD, int(kMmapThresholdBytes)) == 1
                    && ::mallopt(M_TRIM_THRESHOLD, int(kTrimThresholdBytes)) == 1
                    && ::mallopt(M_ARENA_MAX, kArenaMax) == 1;
    g_configured = ok;
    return ok;
}

CpuAllocatorInfo cpuAllocatorInfo()
{
    CpuAllocatorInfo info;
    info.configured = g_configured;
    info.from_environment = userSetAllocator();
    return info;
}

std::string CpuAllocatorInfo::summary() const
{
    if (configured)
        return "glibc malloc, blocks up to " + mib(kMmapThresholdBytes) + " from the heap, " + mib(kTrimThresholdBytes)
               + " of free heap kept, one arena for all threads";
    if (from_environment)
        return "glibc malloc, as set in the environment";
    return "glibc malloc, its defaults (every block above 128 KiB–32 MiB mapped and unmapped each time)";
}

} // namespace icl
