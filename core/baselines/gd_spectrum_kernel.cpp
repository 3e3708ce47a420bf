#include "core/baselines/gd_spectrum_kernel.h"

#include <algorithm>
#include <vector>

#include <ATen/Parallel.h>

namespace icl {

namespace {

// k steps of n prompts laid out [d, n]: the innermost loop runs over prompts, so it vectorises while each prompt
// keeps its order of j. `out`: [kMax, n]. Compiled without FMA contraction, so every clone gives the same bits.
__attribute__((target_clones("avx512f", "avx2", "default"))) void stepsOfChunk(const double* r, const double* c,
    double* g, double* p, double* sum, int64_t n, int64_t d, int64_t kMax, double eta, double* out)
{
    for (int64_t t = 0; t < kMax; ++t) {
        std::fill(sum, sum + n, 0.0);
        for (int64_t j = 0; j < d; ++j) {
            double* gj = g + j * n;
            double* pj = p + j * n;
            const double* rj = r + j * n;
            const double* cj = c + j * n;
            for (int64_t b = 0; b < n; ++b) {
                gj[b] += pj[b];
                pj[b] *= rj[b];
                sum[b] += cj[b] * gj[b];
            }
        }
        for (int64_t b = 0; b < n; ++b)
            out[t * n + b] = eta * sum[b];
    }
}

} // namespace

void gdSpectrumPredictions(const double* lambda, const double* coef, int64_t B, int64_t d, int64_t kMax, double eta,
                           double* pred)
{
    // Blocks of 32 prompts keep a block's [d, 32] arrays in the L1 cache across the kMax steps.
    constexpr int64_t kBlock = 32;
    at::parallel_for(0, (B + kBlock - 1) / kBlock, 1, [&](int64_t blockBegin, int64_t blockEnd) {
        const auto cells = static_cast<size_t>(d * kBlock);
        std::vector<double> r(cells), c(cells), g(cells), p(cells), sum(static_cast<size_t>(kBlock)),
            out(static_cast<size_t>(kMax * kBlock));
        for (int64_t block = blockBegin; block < blockEnd; ++block) {
            const int64_t begin = block * kBlock, n = std::min(kBlock, B - begin);
            for (int64_t b = 0; b < n; ++b)
                for (int64_t j = 0; j < d; ++j) {
                    r[static_cast<size_t>(j * n + b)] = 1.0 - eta * lambda[(begin + b) * d + j];
                    c[static_cast<size_t>(j * n + b)] = coef[(begin + b) * d + j];
                }
            std::fill(g.begin(), g.end(), 0.0);
            std::fill(p.begin(), p.end(), 1.0);
            stepsOfChunk(r.data(), c.data(), g.data(), p.data(), sum.data(), n, d, kMax, eta, out.data());
            for (int64_t b = 0; b < n; ++b)
                for (int64_t t = 0; t < kMax; ++t)
                    pred[(begin + b) * kMax + t] = out[static_cast<size_t>(t * n + b)];
        }
    });
}

} // namespace icl
