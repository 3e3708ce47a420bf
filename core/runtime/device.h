#pragma once
// Run-time device choice ("auto", "cpu", "cuda", "cuda:N"). Core-internal.

#include <string>

#include <torch/torch.h>

#include "core/runtime/blas.h"  // configureThreads

namespace icl {

/// Resolves a device spec. "auto" picks CUDA device 0 when available, else the CPU.
/// Throws icl::Error for an unknown spec or a CUDA device this machine does not have.
torch::Device resolveDevice(const std::string& spec);

} // namespace icl
