#include "core/baselines/gd_spectrum_kernel.h"

#include <algorithm>
#include <vector>

#include <ATen/Parallel.h>

namespace icl {

namespace {

/// Prompts per block: a block's [d, kBlock] arrays stay in the L1 cache across the kMax steps, and the fixed width
/// lets the innermost loop vectorise without run-time alias checks (docs/performance.md, "GD-k step sizes").
constexpr int64_t kBlock = 32;
/// Work (prompt × direction × step updates) below which a parallel region costs more than it saves: waking
/// OMP_WAIT_POLICY=PASSIVE workers takes longer than a call of the η search (2,000 prompts, d = 20).
constexpr int64_t kParallelWork = int64_t(1) << 22;

// kMax steps of one block laid out [d, kBlock]: the innermost loop runs over prompts, so it vectorises while each
// prompt keeps its order of j. `out`: [kMax, kBlock]. Compiled without FMA contraction, so every clone gives the
// same bits as the plain loop.
__attribute__((target_clones("avx512f", "avx2", "default"))) void stepsOfBlock(const double* __restrict r,
    const double* __restrict c, double* __restrict g, double* __restrict p, int64_t d, int64_t kMax, double eta,
    double* __restrict out)
{
    for (int64_t i = 0; i < d * kBlock; ++i) {
        g[i] = 0.0;
        p[i] = 1.0;
    }
    for (int64_t t = 0; t < kMax; ++t) {
        double sum[kBlock] = {};
        for (int64_t j = 0; j < d; ++j) {
            double* __restrict gj = g + j * kBlock;
            double* __restrict pj = p + j * kBlock;
            const double* __restrict rj = r + j * kBlock;
            const double* __restrict cj = c + j * kBlock;
            for (int64_t b = 0; b < kBlock; ++b) {
                gj[b] += pj[b];
                pj[b] *= rj[b];
                sum[b] += cj[b] * gj[b];
            }
        }
        for (int64_t b = 0; b < kBlock; ++b)
            out[t * kBlock + b] = eta * sum[b];
    }
}

} // namespace

void gdSpectrumPredictions(const double* lambda, const double* coef, int64_t B, int64_t d, int64_t kMax, double eta,
                           double* pred)
{
    const int64_t blocks = (B + kBlock - 1) / kBlock;
    const int64_t grain = std::max<int64_t>(1, kParallelWork / std::max<int64_t>(1, kBlock * d * kMax));
    at::parallel_for(0, blocks, grain, [&](int64_t blockBegin, int64_t blockEnd) {
        const auto cells = static_cast<size_t>(d * kBlock);
        std::vector<double> r(cells), c(cells), g(cells), p(cells), out(static_cast<size_t>(kMax * kBlock));
        for (int64_t block = blockBegin; block < blockEnd; ++block) {
            const int64_t begin = block * kBlock, n = std::min(kBlock, B - begin);
            // A partial last block is padded with prompts of c = 0, whose predictions are not read.
            for (int64_t b = 0; b < kBlock; ++b)
                for (int64_t j = 0; j < d; ++j) {
                    const auto cell = static_cast<size_t>(j * kBlock + b);
                    r[cell] = b < n ? 1.0 - eta * lambda[(begin + b) * d + j] : 0.0;
                    c[cell] = b < n ? coef[(begin + b) * d + j] : 0.0;
                }
            stepsOfBlock(r.data(), c.data(), g.data(), p.data(), d, kMax, eta, out.data());
            for (int64_t b = 0; b < n; ++b)
                for (int64_t t = 0; t < kMax; ++t)
                    pred[(begin + b) * kMax + t] = out[static_cast<size_t>(t * kBlock + b)];
        }
    });
}

void parallelTasks(int64_t n, const std::function<void(int64_t)>& task)
{
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            task(i);
    });
}

} // namespace icl
