#pragma once
// The C library allocator under LibTorch's CPU tensors. Torch-free header: the app calls it.
//
// With glibc's defaults a block above the mmap threshold is a fresh mmap and the top of the heap goes back to
// the kernel early, so a training step, which frees and allocates the same buffers every step, can fault every
// page in again. The thresholds below keep that memory in the heap. Measurements: docs/performance.md,
// "The allocator".

#include <cstddef>
#include <string>

namespace icl {

/// Blocks up to this size come from the heap (M_MMAP_THRESHOLD): every activation of the presets' models.
constexpr std::size_t kMmapThresholdBytes = std::size_t(64) << 20;
/// Free memory at the top of the heap kept for the next step (M_TRIM_THRESHOLD).
constexpr std::size_t kTrimThresholdBytes = std::size_t(256) << 20;

/// Arenas (M_ARENA_MAX): one, the heap of the main thread, for every thread. glibc unmaps another thread's
/// arena heap as soon as it is empty, so a batch-shard worker (core/training/sharded_step.h) would fault its
/// activations in again every step (docs/performance.md, "The allocator").
constexpr int kArenaMax = 1;

/// How the allocator is set up in this process.
struct CpuAllocatorInfo {
    bool configured = false;  ///< configureCpuAllocator set the thresholds above
    bool from_environment = false;  ///< the user set them (MALLOC_*_ or GLIBC_TUNABLES): left alone
    /// One line for --version, `icl-cli info` and the benchmarks' context.
    std::string summary() const;
};

/// Sets glibc malloc's M_MMAP_THRESHOLD to kMmapThresholdBytes, M_TRIM_THRESHOLD to kTrimThresholdBytes
/// and M_ARENA_MAX to kArenaMax (mallopt), so that a training step reuses the memory of the previous one
/// instead of mapping and faulting it in again, on any thread. Left alone when the environment sets
/// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, MALLOC_ARENA_MAX or GLIBC_TUNABLES. Returns true when it changed the settings.
/// Affects later allocations only: call first thing in main() (app/runtime_env.h does). Numbers do not
/// change, only where the memory comes from. Thread-safe (mallopt locks the arenas).
bool configureCpuAllocator();

/// What configureCpuAllocator did in this process.
CpuAllocatorInfo cpuAllocatorInfo();

} // namespace icl
