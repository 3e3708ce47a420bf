#pragma once
// Run-time device choice ("auto", "cpu", "cuda", "cuda:N"). Core-internal.

#include <string>

#include <torch/torch.h>

namespace icl {

/// Resolves a device spec. "auto" picks CUDA device 0 when available, else the CPU.
/// Throws icl::Error for an unknown spec or a CUDA device this machine does not have.
torch::Device resolveDevice(const std::string& spec);

/// Sets LibTorch's intra-op threads: `threads` when > 0, else the hardware concurrency.
void configureThreads(int threads);

} // namespace icl
