#pragma once
// The inner loop of GdSpectrum (core/baselines/baselines.h): k GD steps of many prompts in spectral form.
// Torch-free; its .cpp is compiled with OpenMP so that at::parallel_for really splits the prompts
// (core/CMakeLists.txt, ICL_OPENMP_SOURCES).

#include <cstdint>

namespace icl {

/// ŷ_t(η) = η·Σ_j c_j·Σ_{s<t} (1 − ηλ_j)^s for t = 1 … kMax of B prompts, each summing its directions j in order
/// (the same numbers on any thread count and vector width). `lambda`, `coef`: [B, d]; `pred`: [B, kMax].
/// Splits the prompts over the calling thread's intra-op threads (serial inside a parallel region).
void gdSpectrumPredictions(const double* lambda, const double* coef, int64_t B, int64_t d, int64_t kMax, double eta,
                           double* pred);

} // namespace icl
