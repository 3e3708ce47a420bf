#pragma once
// Run-time device choice ("auto", "cpu", "cuda", "cuda:N"). Core-internal.

#include <string>

#include <torch/torch.h>

namespace icl {

/// Resolves a device spec. "auto" picks CUDA device 0 when available, else the CPU.
/// Throws icl::Error for an unknown spec or a CUDA device this machine does not have.
torch::Device resolveDevice(const std::string& spec);

/// Sets LibTorch's intra-op threads: `threads` when > 0, else LibTorch's own default (what
/// torch::get_num_threads() returned before the first call). Forcing every core is slower on small
/// machines: on 2 busy cores a GPT-2 step ran 2–3× slower at 2 intra-op threads than at LibTorch's
/// default of 1 there, because the OpenMP elementwise threads and BLAS's GEMM threads compete.
/// Also calls configureAllocator(). Thread affinity: the thread that then runs the work.
void configureThreads(int threads);

/// Tunes glibc malloc for repeated large allocations (mmap threshold 32 MiB, no trimming below 1 GiB)
/// so training steps reuse freed activation memory instead of faulting in fresh pages; once per process.
void configureAllocator();

} // namespace icl
