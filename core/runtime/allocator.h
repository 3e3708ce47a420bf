#pragma once
// The C library allocator under LibTorch's CPU tensors. Torch-free header: the app calls it.
//
// LibTorch allocates every CPU tensor with posix_memalign and frees it when the last reference goes.
// glibc's defaults serve blocks above its mmap threshold (128 KiB at start, raised at run time to at most
// 32 MiB) with a fresh mmap and return them with munmap, and give the top of the heap back to the kernel
// once more than twice that threshold is free. A training step allocates and frees the same few hundred
// activation and gradient buffers every step, so with the defaults it keeps asking the kernel for
// memory and pays a page fault (and the kernel's zeroing) for every 4 KiB of it. Measured on this 2-core
// machine (Garg et al.'s GPT-2, batch 64, 81 tokens, 2 threads): 3 layers / 2 heads / 64 dimensions
// 5.1 → 12.3 steps/s, 12 / 8 / 256 0.33 → 0.50 steps/s; PyTorch eager gains the same when given the
// same settings (README, "Speed").

#include <cstddef>
#include <string>

namespace icl {

/// Blocks up to this size come from the heap (M_MMAP_THRESHOLD): every activation of the presets' models.
constexpr std::size_t kMmapThresholdBytes = std::size_t(64) << 20;
/// Free memory at the top of the heap kept for the next step (M_TRIM_THRESHOLD).
constexpr std::size_t kTrimThresholdBytes = std::size_t(256) << 20;

/// Arenas (M_ARENA_MAX): one, the heap of the main thread, for every thread. glibc gives other threads
/// arenas of their own made of 64 MiB mapped heaps, and unmaps a heap as soon as it is empty, whatever
/// M_TRIM_THRESHOLD says; a worker thread that computes a shard of a 12-layer GPT-2's batch
/// (core/training/sharded_step.h) frees all its activations at the end of each step, so each step mapped
/// and faulted its memory in again: measured, 2 shards of 12 / 8 / 256 took 2.08 s per step with an arena
/// per thread and 1.48 s with one (README, "Speed"). The arena's lock costs nothing measurable at a few
/// thousand allocations per step.
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
