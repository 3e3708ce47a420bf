#pragma once
// The instruction set of LibTorch's own CPU kernels (ATen's "CPU capability"), and the start-up choice
// that lets them use AVX-512 where the CPU has it. Torch-free header: the app calls it.
//
// ATen compiles its element-wise, reduction, softmax and layer-norm kernels for three instruction sets and
// picks one at the first kernel call; LibTorch 1.13 never picks AVX-512 by itself (opt-in through
// ATEN_CPU_CAPABILITY=avx512, PyTorch issue 80252). Results change in the last bits with the width, as with
// another OpenBLAS core. Measurements: docs/performance.md, "LibTorch's kernels on AVX-512".

#include <string>

#include "core/runtime/blas.h"

namespace icl {

/// What ATen's CPU kernels run on in this process.
struct AtenCpuInfo {
    std::string capability;  ///< as LibTorch reports it (at::show_config): "AVX512", "AVX2", "NO AVX"
    std::string source;      ///< "LibTorch's default", "ATEN_CPU_CAPABILITY from the environment" or
                             ///< "set by ICL Workbench"
    std::string best;        ///< bestAtenCpuCapability of this CPU
    /// One line: "AVX512 (set by ICL Workbench)".
    std::string summary() const;
};

/// The CPU capability of this process. Fixes ATen's choice if no kernel has run yet (call it after
/// preferBestAtenCpuCapability). Thread-safe.
AtenCpuInfo atenCpuInfo();

/// The width, in floats, of the vectors ATen's float kernels use in this process: 16 (AVX-512 kernels), 8 (AVX2
/// kernels on a CPU with AVX2 and FMA), 0 otherwise (baseline kernels, an unknown capability). For the
/// workbench's kernels that repeat ATen's, bit for bit (core/models/gelu.h, core/models/causal_attention.h).
/// Fixed at the first call, as ATen's choice is. Thread-safe.
int atenFloatVectorWidth();

} // namespace icl
