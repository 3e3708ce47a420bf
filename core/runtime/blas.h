#pragma once
// The BLAS that LibTorch's CPU matrix products run on, the kernel core it chose, and the start-up
// check that makes OpenBLAS use the machine's own kernels. Torch-free header: the app calls it.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPU's identification. On CPUs
// it does not recognise (recent Xeons that report only "Intel(R) Xeon(R) Processor", many VMs) it falls
// back to its Prescott (SSE3) kernels, 2× or more slower (docs/performance.md, "OpenBLAS kernels"). The
// variable is read once, when the library is loaded, so icl-cli's launcher sets it before LibTorch loads, and
// the other executables re-execute themselves with it set (app/runtime_env.h). The check itself is torch-free:
// core/runtime/cpu_features.h.

#include <string>

#include "core/runtime/cpu_features.h"

namespace icl {

/// Sets LibTorch's intra-op threads: `threads` when > 0, else the hardware concurrency (LibTorch's own
/// default follows OpenMP's, which can be 1 in containers). Call from the thread that computes: with
/// the OpenMP backend the count belongs to the calling thread.
void configureThreads(int threads);

/// The intra-op threads of configureThreads(0): the hardware concurrency (at least 1).
int defaultThreads();

/// Makes the calling thread's LibTorch and OpenBLAS work run on one thread (its own OpenMP count),
/// without changing the count other threads start with. torch::set_num_threads(1) would also lower
/// LibTorch's process-wide default, which every thread started later inherits. Call it at the start of
/// a worker thread that runs its own share of the work (core/training/sharded_step.h); falls back to
/// torch::set_num_threads(1) when LibTorch's OpenMP runtime cannot be found.
void useOneIntraOpThreadOnThisThread();

/// Runs a scope with the calling thread's OpenMP thread count — LibTorch's intra-op threads and OpenBLAS's
/// with the OpenMP backend, as Debian builds them — at `threads` (≤ 0: unchanged), restoring it on exit.
/// Other threads and the count threads start with are untouched. Cheaper than ScopedThreads, which also
/// rebuilds LibTorch's pthreadpool: for hot paths made of many small parallel regions, e.g. each step of the
/// fused LSA trainer (core/models/lsa_fused.h). Without an OpenMP runtime in the process it does nothing.
/// Construct and destroy on the same thread.
class ThisThreadIntraOpThreads {
public:
    explicit ThisThreadIntraOpThreads(int threads);
    ~ThisThreadIntraOpThreads();
    ThisThreadIntraOpThreads(const ThisThreadIntraOpThreads&) = delete;
    ThisThreadIntraOpThreads& operator=(const ThisThreadIntraOpThreads&) = delete;

private:
    int m_before = 0;  ///< the count to restore; 0 when nothing was changed
};

/// Runs a scope on `threads` LibTorch intra-op threads (≤ 0: unchanged) and restores the previous count
/// on exit. With LibTorch's OpenMP backend (and OpenBLAS built for OpenMP, as Debian's) the count is the
/// calling thread's, so other threads are not affected. Use it for work made of many small kernels
/// (d × d eigendecompositions, 256 × 256 factorisations), for which waking OMP_WAIT_POLICY=PASSIVE workers
/// costs more than the kernel (docs/performance.md, "Small kernels on one thread").
class ScopedThreads {
public:
    explicit ScopedThreads(int threads);
    ~ScopedThreads();
    ScopedThreads(const ScopedThreads&) = delete;
    ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
    int m_before;
};

/// What LibTorch's CPU matrix products run on.
struct BlasInfo {
    std::string library;  ///< "OpenBLAS 0.3.21" or "not OpenBLAS (…)"
    std::string config;   ///< openblas_get_config(): build options, e.g. "DYNAMIC_ARCH USE_OPENMP …"
    std::string core;     ///< kernel core in use, e.g. "SkylakeX"
    std::string core_source;  ///< "detected by OpenBLAS", "OPENBLAS_CORETYPE from the environment", or
                              ///< "set by ICL Workbench (OpenBLAS fell back to Prescott)"
    std::string best_core;    ///< bestOpenBlasCore of this CPU ("" when nothing better exists)
    int blas_threads = 0;     ///< openblas_get_num_threads()
    int intra_op_threads = 0; ///< LibTorch's intra-op threads by default (defaultThreads(); --threads overrides)

    /// One line: "OpenBLAS 0.3.21, core SkylakeX (detected by OpenBLAS), 2 threads".
    std::string summary() const;
};

/// The BLAS of this process. Thread-safe (reads only).
BlasInfo blasInfo();

} // namespace icl
