#pragma once
// The BLAS that LibTorch's CPU matrix products run on, the kernel core it chose, and the start-up
// check that makes OpenBLAS use the machine's own kernels. Torch-free header: the app calls it.
//
// OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPU's identification. On CPUs
// it does not recognise (recent Xeons that report only "Intel(R) Xeon(R) Processor", many VMs) it falls
// back to its Prescott (SSE3) kernels, 2× or more slower (docs/performance.md, "OpenBLAS kernels"). The
// variable is read once, when the library is loaded, so the executables re-execute themselves with it set
// (app/runtime_env.h).

#include <string>

namespace icl {

/// The vector extensions of this CPU that select OpenBLAS kernels, as the OS enables them
/// (cpuid and xgetbv through the compiler's __builtin_cpu_supports).
struct CpuVectorFeatures {
    bool avx = false;
    bool avx2 = false;
    bool fma = false;
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512dq = false;
};

/// This CPU's features. Thread-safe.
CpuVectorFeatures cpuVectorFeatures();

/// The best OpenBLAS core for `cpu`: "SkylakeX" (AVX-512 F/BW/VL/DQ), "Haswell" (AVX2 + FMA),
/// "Sandybridge" (AVX), "" (older: nothing to gain over OpenBLAS's own choice).
std::string bestOpenBlasCore(const CpuVectorFeatures& cpu);

/// Instruction-set level of an OpenBLAS core name as openblas_get_corename() reports it
/// (case-insensitive): 3 = AVX-512 kernels (SkylakeX, Cooperlake, SapphireRapids), 2 = AVX2
/// (Haswell, Zen), 1 = AVX (Sandybridge, Bulldozer … Excavator), 0 = anything older or unknown.
int openBlasCoreLevel(const std::string& core);

/// The core to force with OPENBLAS_CORETYPE when OpenBLAS chose `chosen` on `cpu`: bestOpenBlasCore
/// when `chosen` uses an older instruction set than the CPU has, else "" (OpenBLAS's choice stands,
/// e.g. Cooperlake or Zen kernels are kept on CPUs they fit).
std::string openBlasCoreToForce(const std::string& chosen, const CpuVectorFeatures& cpu);

/// The core the loaded OpenBLAS uses (openblas_get_corename), "" when the BLAS is not OpenBLAS.
std::string loadedOpenBlasCore();

/// Environment changes to make before the process (re-)starts so that OpenBLAS runs its best
/// kernels: sets OPENBLAS_CORETYPE (and ICL_OPENBLAS_FALLBACK, the core OpenBLAS had chosen) when the
/// loaded OpenBLAS fell back and the user did not set OPENBLAS_CORETYPE. Returns true when it set
/// something, i.e. the process must re-execute for OpenBLAS to see it. Call from main() only, before
/// any thread starts (it calls setenv).
bool preferBestOpenBlasCore();

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
