#pragma once
// The process environment that LibTorch's CPU kernels need, set before any of them runs.
//
// 1. OMP_WAIT_POLICY=PASSIVE: idle OpenMP worker threads sleep instead of spin. LibTorch and OpenBLAS
//    share libgomp, which reads the variable once, when it is loaded, i.e. before main(). With the
//    default (spinning) policy, a training run on a 2-core machine loses more than half its speed as
//    soon as anything else needs a core (measured: 300 LSA steps take 10 s with PASSIVE and 23 s with
//    ACTIVE while a compiler runs; equal when idle), and the GUI thread competes with spinning workers.
// 2. OPENBLAS_CORETYPE: when the loaded OpenBLAS fell back to kernels older than the CPU supports
//    (core/runtime/blas.h: Prescott on AVX-512 Xeons it does not recognise, 6× slower SGEMM), the
//    best core for the CPU. OpenBLAS also reads it only when loaded.
// So each executable re-executes itself once with the variables set, unless the user (or icl-cli's launcher,
// app/cli/launcher.cpp, which sets them before LibTorch loads) set them. Call first thing in main(); returns
// normally when nothing needs doing or exec fails.
// 3. ATEN_CPU_CAPABILITY=avx512 on CPUs with AVX-512 (core/runtime/cpu_kernels.h): ATen reads it at its
//    first kernel call, so it needs no restart, but is set before one so that a restart keeps it.
// 4. The malloc thresholds that let a training step reuse the previous step's memory
//    (core/runtime/allocator.h), set with mallopt in the process that carries on.

#include <cstdlib>
#include <unistd.h>

#include "core/runtime/allocator.h"
#include "core/runtime/blas.h"
#include "core/runtime/cpu_kernels.h"

namespace icl::app {

inline void ensureRuntimeEnvironment(char** argv)
{
    bool changed = false;
    if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
        ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
        changed = true;
    }
    icl::preferBestAtenCpuCapability();
    changed = icl::preferBestOpenBlasCore(icl::loadedOpenBlasCore()) || changed;
    if (changed)
        ::execv("/proc/self/exe", argv);
    // Nothing to change, or exec failed (no /proc?): carry on as we are.
    icl::configureCpuAllocator();
}

} // namespace icl::app
