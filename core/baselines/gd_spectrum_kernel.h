#pragma once
// The inner loop of GdSpectrum (core/baselines/baselines.h): k GD steps of many prompts in spectral form.
// Torch-free; its .cpp is compiled with OpenMP so that at::parallel_for really splits the prompts
// (core/CMakeLists.txt, ICL_OPENMP_SOURCES).

#include <cstdint>
#include <functional>

namespace icl {

/// ŷ_t(η) = η·Σ_j c_j·Σ_{s<t} (1 − ηλ_j)^s for t = 1 … kMax of B prompts, each summing its directions j in order
/// (the same numbers on any thread count and vector width). `lambda`, `coef`: [B, d]; `pred`: [B, kMax].
/// Splits the prompts over the calling thread's intra-op threads (serial inside a parallel region).
void gdSpectrumPredictions(const double* lambda, const double* coef, int64_t B, int64_t d, int64_t kMax, double eta,
                           double* pred);

/// Runs task(i) for i = 0 … n − 1 on the calling thread's intra-op threads in one parallel region (serial inside a
/// parallel region, or for n = 1). For independent searches whose own evaluations are too small to split. The
/// first exception thrown by a task is rethrown.
void parallelTasks(int64_t n, const std::function<void(int64_t)>& task);

} // namespace icl
