#pragma once
// The CPU checks made before LibTorch loads: which vector extensions this CPU has, which OpenBLAS kernels and
// which ATen CPU capability fit it (core/runtime/blas.h, core/runtime/cpu_kernels.h say why they matter).
// Torch-free, header and source: icl-cli's launcher (app/cli/launcher.cpp) calls them without loading LibTorch.

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

/// The core OpenBLAS picks on this machine, read from the BLAS that LibTorch links (libblas.so.3, Debian's
/// alternative) loaded on its own: "" when that is not OpenBLAS or cannot be loaded. For a process that has not
/// loaded LibTorch yet (icl-cli's launcher); loading OpenBLAS starts its thread pool, so call it only before
/// starting a LibTorch process.
std::string probeOpenBlasCore();

/// Environment changes to make before LibTorch loads so that OpenBLAS runs its best kernels: sets
/// OPENBLAS_CORETYPE (and ICL_OPENBLAS_FALLBACK, the core OpenBLAS had chosen) when OpenBLAS chose `chosen`
/// (loadedOpenBlasCore() in a process that has loaded it, probeOpenBlasCore() in one that has not), that core
/// is older than the CPU's, and the user did not set OPENBLAS_CORETYPE. Returns true when it set something;
/// a process that had loaded OpenBLAS must then re-execute for OpenBLAS to see it. Call from main() only,
/// before any thread starts (it calls setenv).
bool preferBestOpenBlasCore(const std::string& chosen);

/// The best ATEN_CPU_CAPABILITY value for `cpu`: "avx512" (AVX-512 F/BW/VL/DQ, what ATen's AVX-512
/// kernels are compiled for), "avx2" (AVX2 + FMA), else "default".
std::string bestAtenCpuCapability(const CpuVectorFeatures& cpu);

/// Sets ATEN_CPU_CAPABILITY=avx512 (and ICL_ATEN_CPU_CAPABILITY_SET=1, so that atenCpuInfo can say who
/// chose it) when the CPU has AVX-512 and the user did not set the variable. ATen reads the variable at
/// its first kernel call, so no restart is needed: call from main() before any tensor operation and
/// before any thread starts (it calls setenv). Returns true when it set the variable.
bool preferBestAtenCpuCapability();

} // namespace icl
