#include "core/models/causal_attention.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>

#include "core/runtime/cpu_kernels.h"

#ifdef ICL_HAVE_SLEEF
#include "core/models/sleef_functions.h"
#endif

namespace icl {

namespace {

// Rows of a block (queries, or keys for the transposed products) and columns of a score tile.
constexpr int64_t kRows = 4;
constexpr int64_t kCols = 16;

/// GCC vector of N elements of S (per-lane IEEE arithmetic; the compiler maps it onto the clone's registers).
template <typename S, int N>
struct VecOf;
template <int N>
struct VecOf<float, N> {
    typedef float type __attribute__((vector_size(N * sizeof(float))));
};
template <int N>
struct VecOf<double, N> {
    typedef double type __attribute__((vector_size(N * sizeof(double))));
};
template <typename S, int N>
using Vec = typename VecOf<S, N>::type;

template <typename V, typename S>
inline __attribute__((always_inline)) void loadVec(V& v, const S* p)
{
    std::memcpy(&v, p, sizeof(V));
}

template <typename V, typename S>
inline __attribute__((always_inline)) void storeVec(S* p, const V& v)
{
    std::memcpy(p, &v, sizeof(V));
}

/// dst[c · dstStride + j] = src[j · srcStride + c] for j, c < 16: a 16 × 16 float block transposed in registers (16
/// row loads, four rounds of 16 two-vector shuffles, 16 stores) where an element-by-element copy makes 256 loads
/// and 256 stores. Round k exchanges bit k of the row index with bit k of the lane index, so after the four rounds
/// the element of row j, lane c is in row c, lane j. Data movement only.
inline __attribute__((always_inline)) void transposeBlock16(const float* __restrict src, int64_t srcStride,
                                                            float* __restrict dst, int64_t dstStride)
{
    typedef float V __attribute__((vector_size(64)));
    typedef int M __attribute__((vector_size(64)));
    V r[16];
    for (int j = 0; j < 16; ++j)
        std::memcpy(&r[j], src + j * srcStride, sizeof(V));
    // Lane L of the first vector of a pair: its own lane L where bit k of L is 0, else lane L ^ 2^k of the
    // second vector; of the second: lane L ^ 2^k of the first where bit k is 0, else its own lane L.
#define ICL_TRANSPOSE_ROUND(k)                                                                                       \
    {                                                                                                              \
        constexpr int b = 1 << (k);                                                                                \
        const M lo = {0 & b ? 16 + (0 ^ b) : 0,   1 & b ? 16 + (1 ^ b) : 1,   2 & b ? 16 + (2 ^ b) : 2,            \
                      3 & b ? 16 + (3 ^ b) : 3,   4 & b ? 16 + (4 ^ b) : 4,   5 & b ? 16 + (5 ^ b) : 5,            \
                      6 & b ? 16 + (6 ^ b) : 6,   7 & b ? 16 + (7 ^ b) : 7,   8 & b ? 16 + (8 ^ b) : 8,            \
                      9 & b ? 16 + (9 ^ b) : 9,   10 & b ? 16 + (10 ^ b) : 10, 11 & b ? 16 + (11 ^ b) : 11,        \
                      12 & b ? 16 + (12 ^ b) : 12, 13 & b ? 16 + (13 ^ b) : 13, 14 & b ? 16 + (14 ^ b) : 14,       \
                      15 & b ? 16 + (15 ^ b) : 15};                                                                \
        const M hi = {0 & b ? 16 + 0 : (0 ^ b),   1 & b ? 16 + 1 : (1 ^ b),   2 & b ? 16 + 2 : (2 ^ b),            \
                      3 & b ? 16 + 3 : (3 ^ b),   4 & b ? 16 + 4 : (4 ^ b),   5 & b ? 16 + 5 : (5 ^ b),            \
                      6 & b ? 16 + 6 : (6 ^ b),   7 & b ? 16 + 7 : (7 ^ b),   8 & b ? 16 + 8 : (8 ^ b),            \
                      9 & b ? 16 + 9 : (9 ^ b),   10 & b ? 16 + 10 : (10 ^ b), 11 & b ? 16 + 11 : (11 ^ b),        \
                      12 & b ? 16 + 12 : (12 ^ b), 13 & b ? 16 + 13 : (13 ^ b), 14 & b ? 16 + 14 : (14 ^ b),       \
                      15 & b ? 16 + 15 : (15 ^ b)};                                                                \
        for (int a = 0; a < 16; ++a)                                                                               \
            if ((a & b) == 0) {                                                                                    \
                const V first = r[a], second = r[a | b];                                                           \
                r[a] = __builtin_shuffle(first, second, lo);                                                       \
                r[a | b] = __builtin_shuffle(first, second, hi);                                                   \
            }                                                                                                      \
    }
    ICL_TRANSPOSE_ROUND(0)
    ICL_TRANSPOSE_ROUND(1)
    ICL_TRANSPOSE_ROUND(2)
    ICL_TRANSPOSE_ROUND(3)
#undef ICL_TRANSPOSE_ROUND
    for (int c = 0; c < 16; ++c)
        std::memcpy(dst + c * dstStride, &r[c], sizeof(V));
}

/// One (prompt, head): out[i][j] = scale · Σ_c x[i][c] · y[j][c] for j ≤ i, `fill` for j > i (out [T, T], rows
/// T apart; x, y rows xs, ys apart, dh wide). yT is scratch of dh · Tp (Tp ≥ T rounded up to kCols). Sums in
/// ascending c.
/// R: query rows per block (R accumulators of kCols lanes; 8 where the clone has 32 vector registers, so that
/// the chains of additions overlap, else 4). The rows of a block share the column tiles, so R does not change
/// which terms a sum has or their order.
template <typename S, int64_t R>
inline __attribute__((always_inline)) void causalDotsImpl(const S* __restrict x, int64_t xs, const S* __restrict y,
                                                          int64_t ys, int64_t T, int64_t dh, S scale, S fill,
                                                          S* __restrict out, S* __restrict yT, int64_t Tp)
{
    using V = Vec<S, kCols>;
    // y's rows lie ys apart (in the fused QKV rows, usually not in cache): request every row's cache lines first,
    // then copy column by column, so that the reads of one pass go to T different rows and their misses overlap.
    for (int64_t j = 0; j < T; ++j)
        for (int64_t c = 0; c < dh; c += 64 / int64_t(sizeof(S)))
            __builtin_prefetch(y + j * ys + c);
    // Columns [T, Tp) of yT are zeros: each row's last tile is cleared first (one vector store; the copies below
    // overwrite its columns < T). A std::fill of these few elements compiles to `rep stos`, whose start-up cost
    // exceeds the store.
    for (int64_t c = 0; c < dh; ++c)
        storeVec(yT + c * Tp + Tp - kCols, V{});
    int64_t jBlocks = 0, cBlocks = 0;  // the part copied in 16 × 16 blocks (float): rows [0, jBlocks), columns [0, cBlocks)
    if constexpr (std::is_same_v<S, float>) {
        jBlocks = T / 16 * 16;
        cBlocks = dh / 16 * 16;
        for (int64_t j0 = 0; j0 < jBlocks; j0 += 16)
            for (int64_t c0 = 0; c0 < cBlocks; c0 += 16)
                transposeBlock16(y + j0 * ys + c0, ys, yT + c0 * Tp + j0, Tp);
    }
    for (int64_t c = 0; c < dh; ++c)
        for (int64_t j = c < cBlocks ? jBlocks : 0; j < T; ++j)
            yT[c * Tp + j] = y[j * ys + c];
    V lane;  // 0, 1, …, kCols − 1
    for (int64_t w = 0; w < kCols; ++w)
        lane[w] = S(w);
    const V fillv = V{} + fill;
    for (int64_t i0 = 0; i0 < T; i0 += R) {
        const int64_t rows = std::min(R, T - i0);
        const S* xr[R];
        for (int64_t r = 0; r < R; ++r)
            xr[r] = x + (i0 + std::min(r, rows - 1)) * xs;  // a short last block repeats its last row
        const int64_t jEnd = i0 + rows;                    // no row of the block reads a column ≥ jEnd
        int64_t j0 = 0;
        for (; j0 < jEnd; j0 += kCols) {
            // Cleared one register at a time (`= {}` clears a stack copy with `rep stos`).
            V acc[R];
#pragma GCC unroll 8
            for (int64_t r = 0; r < R; ++r)
                acc[r] = V{};
            for (int64_t c = 0; c < dh; ++c) {
                V yv;
                loadVec(yv, yT + c * Tp + j0);
#pragma GCC unroll 8
                for (int64_t r = 0; r < R; ++r)
                    acc[r] += xr[r][c] * yv;
            }
            const int64_t wEnd = std::min(kCols, T - j0);
            for (int64_t r = 0; r < rows; ++r) {
                const int64_t i = i0 + r;
                S* o = out + i * T + j0;
                const V scaled = acc[r] * scale;
                if (wEnd == kCols) {
                    // Lanes of columns j0 + w ≤ i keep their product, the others take `fill`: one select, one store.
                    storeVec(o, lane <= S(i - j0) ? scaled : fillv);
                } else {
                    for (int64_t w = 0; w < wEnd; ++w)
                        o[w] = j0 + w <= i ? scaled[w] : fill;
                }
            }
        }
        for (int64_t r = 0; r < rows; ++r) {  // the columns past the last tile: `fill`
            S* o = out + (i0 + r) * T;
            int64_t j = std::min(j0, T);
            for (; j + kCols <= T; j += kCols)
                storeVec(o + j, fillv);
            for (; j < T; ++j)
                o[j] = fill;
        }
    }
}

/// Adds coef(r) · x_t to the accumulators of rows r ∈ [R0, R1) of a block (acc[r][v] += coef · x_t[v·L …]):
/// one term of every sum, in the order the sums are defined.
template <typename V, typename S, int L, int NV, int R0, int R1, typename Coef>
inline __attribute__((always_inline)) void addTerm(V (&acc)[kRows][NV], const S* __restrict xt, Coef&& coef)
{
    V xv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v)
        loadVec(xv[v], xt + v * L);
#pragma GCC unroll 8
    for (int r = R0; r < R1; ++r) {
        const S c = coef(r);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v)
            acc[r][v] += c * xv[v];
    }
}

/// One (prompt, head): out[i][c] = alpha · Σ_{j ≤ i} a[i][j] · x[j][c] (a [T, T]; x, out rows xs, os apart),
/// or with `transposed` out[j][c] = alpha · Σ_{i ≥ j} a[i][j] · x[i][c]; d_head = DH (> 0: accumulators in
/// vector registers) or dh (DH = 0: accDyn, scratch of kRows · dh). Every sum starts from +0 and adds its
/// terms, each a rounded product, in ascending order of the summed token; terms outside the causal range are
/// not added. With DH > 0, a block of kRows output rows has a part where every row takes the token's term
/// and at most kRows − 1 tokens where only some rows do; both are written with fixed row ranges so the
/// accumulators stay in registers (the order of the terms within each sum is the same as one loop over the
/// tokens, so the numbers are too).
template <typename S, int DH, bool transposed>
inline __attribute__((always_inline)) void causalProductImpl(const S* __restrict a, const S* __restrict x, int64_t xs,
                                                             int64_t T, int64_t dhRuntime, S alpha, S* __restrict out,
                                                             int64_t os, S* __restrict accDyn)
{
    constexpr int L = DH > 0 ? (DH * int(sizeof(S)) >= 64 ? 64 / int(sizeof(S)) : DH) : 1;  // lanes per vector
    constexpr int NV = DH > 0 ? DH / L : 1;                                                  // vectors per row
    using V = Vec<S, L>;
    const int64_t dh = DH > 0 ? DH : dhRuntime;
    for (int64_t o0 = 0; o0 < T; o0 += kRows) {
        const int64_t n = std::min(kRows, T - o0);  // output rows of the block
        V acc[kRows][NV] = {};
        if constexpr (DH > 0) {
            if (n == kRows) {
                static_assert(kRows == 4, "the partial-token steps below are written for blocks of 4 rows");
                if constexpr (transposed) {
                    // out row o0 + r sums tokens t ≥ o0 + r: tokens o0 … o0 + 2 reach rows 0 … t − o0 only.
                    const S* a0 = a + o0 * T + o0;
                    addTerm<V, S, L, NV, 0, 1>(acc, x + o0 * xs, [&](int r) { return a0[r]; });
                    addTerm<V, S, L, NV, 0, 2>(acc, x + (o0 + 1) * xs, [&](int r) { return a0[T + r]; });
                    addTerm<V, S, L, NV, 0, 3>(acc, x + (o0 + 2) * xs, [&](int r) { return a0[2 * T + r]; });
                    for (int64_t t = o0 + 3; t < T; ++t) {
                        const S* at = a + t * T + o0;
                        addTerm<V, S, L, NV, 0, kRows>(acc, x + t * xs, [&](int r) { return at[r]; });
                    }
                } else {
                    // out row o0 + r sums tokens t ≤ o0 + r: every row takes tokens 0 … o0, token o0 + e rows ≥ e.
                    const S* a0 = a + o0 * T;
                    for (int64_t t = 0; t <= o0; ++t)
                        addTerm<V, S, L, NV, 0, kRows>(acc, x + t * xs, [&](int r) { return a0[r * T + t]; });
                    addTerm<V, S, L, NV, 1, kRows>(acc, x + (o0 + 1) * xs, [&](int r) { return a0[r * T + o0 + 1]; });
                    addTerm<V, S, L, NV, 2, kRows>(acc, x + (o0 + 2) * xs, [&](int r) { return a0[r * T + o0 + 2]; });
                    addTerm<V, S, L, NV, 3, kRows>(acc, x + (o0 + 3) * xs, [&](int r) { return a0[r * T + o0 + 3]; });
                }
#pragma GCC unroll 8
                for (int r = 0; r < kRows; ++r) {
                    S* o = out + (o0 + r) * os;
#pragma GCC unroll 8
                    for (int v = 0; v < NV; ++v)
                        storeVec(o + v * L, acc[r][v] * alpha);
                }
                continue;
            }
        }
        if constexpr (DH == 0)
            std::fill(accDyn, accDyn + kRows * dh, S(0));
        // Causal: row i reads tokens j ≤ i (transposed: token j is read by rows i ≥ j). A row of the block whose
        // range has not begun (or has ended) skips the term: adding 0 · x would turn −0 into +0 and propagate NaN.
        const int64_t t0 = transposed ? o0 : 0, t1 = transposed ? T : o0 + n;
        for (int64_t t = t0; t < t1; ++t) {
            const S* xt = x + t * xs;
            for (int64_t r = 0; r < n; ++r) {
                const int64_t o = o0 + r;
                if (transposed ? t < o : t > o)
                    continue;
                const S coef = transposed ? a[t * T + o] : a[o * T + t];
                if constexpr (DH > 0) {
                    for (int v = 0; v < NV; ++v) {
                        V xv;
                        loadVec(xv, xt + v * L);
                        acc[r][v] += coef * xv;
                    }
                } else {
                    S* row = accDyn + r * dh;
                    for (int64_t c = 0; c < dh; ++c)
                        row[c] += coef * xt[c];
                }
            }
        }
        for (int64_t r = 0; r < n; ++r) {
            S* o = out + (o0 + r) * os;
            if constexpr (DH > 0) {
                for (int v = 0; v < NV; ++v)
                    storeVec(o + v * L, acc[r][v] * alpha);
            } else {
                for (int64_t c = 0; c < dh; ++c)
                    o[c] = alpha * accDyn[r * dh + c];
            }
        }
    }
}

/// Whether this CPU has AVX-512's 32 vector registers (the clone the loader picks then is the avx512f one).
inline bool wideRegisterFile()
{
    static const bool wide = __builtin_cpu_supports("avx512f");
    return wide;
}

// The kernels for each vector extension; the loader picks one by the CPU's features (not its model name, so
// AMD CPUs get them too). This file is compiled with -ffp-contract=off: products and sums stay separate
// operations in every clone (no FMA contraction), so all clones give the same numbers, bitwise. Head widths
// 8, 16, 32 and 64 get kernels with the width fixed at compile time (accumulators in registers).
#define ICL_ATTENTION_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ICL_DISPATCH_DH(call, S)                                                                                        \
    switch (dh) {                                                                                                    \
    case 8: call(S, 8); break;                                                                                          \
    case 16: call(S, 16); break;                                                                                        \
    case 32: call(S, 32); break;                                                                                        \
    case 64: call(S, 64); break;                                                                                        \
    default: call(S, 0); break;                                                                                         \
    }
#define ICL_ATTENTION_KERNELS(S)                                                                                      \
    ICL_ATTENTION_CLONES void causalDots(const S* x, int64_t xs, const S* y, int64_t ys, int64_t T, int64_t dh,     \
                                         S scale, S fill, S* out, S* yT, int64_t Tp)                                  \
    {                                                                                                                 \
        if (wideRegisterFile())                                                                                       \
            causalDotsImpl<S, 8>(x, xs, y, ys, T, dh, scale, fill, out, yT, Tp);                                      \
        else                                                                                                          \
            causalDotsImpl<S, 4>(x, xs, y, ys, T, dh, scale, fill, out, yT, Tp);                                      \
    }                                                                                                                 \
    ICL_ATTENTION_CLONES void causalRows(const S* a, const S* x, int64_t xs, int64_t T, int64_t dh, S alpha, S* out, \
                                         int64_t os, S* acc)                                                          \
    {                                                                                                                 \
        ICL_DISPATCH_DH(ICL_ROWS, S)                                                                                     \
    }                                                                                                                 \
    ICL_ATTENTION_CLONES void causalCols(const S* a, const S* x, int64_t xs, int64_t T, int64_t dh, S alpha, S* out, \
                                         int64_t os, S* acc)                                                          \
    {                                                                                                                 \
        ICL_DISPATCH_DH(ICL_COLS, S)                                                                                     \
    }

#define ICL_ROWS(S, W) causalProductImpl<S, W, false>(a, x, xs, T, dh, alpha, out, os, acc)
#define ICL_COLS(S, W) causalProductImpl<S, W, true>(a, x, xs, T, dh, alpha, out, os, acc)
ICL_ATTENTION_KERNELS(float)
ICL_ATTENTION_KERNELS(double)
#undef ICL_ROWS
#undef ICL_COLS
#undef ICL_ATTENTION_KERNELS
#undef ICL_DISPATCH_DH
#undef ICL_ATTENTION_CLONES

/// Sizes of one call: qkv [B, T, 3·D], D = H · dh.
struct Shape {
    int64_t B, T, D, H, dh;
    Shape(const torch::Tensor& qkv, int64_t heads)
        : B(qkv.size(0))
        , T(qkv.size(1))
        , D(qkv.size(2) / 3)
        , H(heads)
        , dh(D / heads)
    {
    }
    int64_t paddedT() const { return (T + kCols - 1) / kCols * kCols; }
};

#ifdef ICL_HAVE_SLEEF

// LibTorch 1.13's softmax over the last dimension and its backward (aten/src/ATen/native/cpu/SoftMaxKernel.cpp,
// _vec_softmax_lastdim and _vec_host_softmax_backward_lastdim, with at::vec::reduce_all, map2_reduce_all and
// the AVX2 / AVX-512 VecReduceAllSIMD of ATen/cpu/vec/functional_base.h), one row at a time, for the vector width
// W of LibTorch's kernels in this process: the same operations on the same values in the same order, so the
// numbers are LibTorch's bit for bit (tests/core/models/causal_attention_test.cpp checks it at both widths).

template <int W>
struct LaneVOf {
    typedef int32_t type __attribute__((vector_size(W * sizeof(int32_t))));
};
template <int W>
using FloatV = Vec<float, W>;
template <int W>
using LaneV = typename LaneVOf<W>::type;

/// 0, 1, …, W − 1.
template <int W>
inline __attribute__((always_inline)) LaneV<W> laneIndex()
{
    LaneV<W> v;
    for (int l = 0; l < W; ++l)
        v[l] = l;
    return v;
}

/// The first `count` floats at p, the other lanes `pad`.
template <int W>
inline __attribute__((always_inline)) FloatV<W> loadPartial(const float* p, int64_t count, float pad)
{
    FloatV<W> v = FloatV<W>{} + pad;
    std::memcpy(&v, p, size_t(std::min<int64_t>(count, W)) * sizeof(float));
    return v;
}

/// Σ_k a_k (b == nullptr) or Σ_k a_k·b_k over n values, summed as at::vec::reduce_all / map2_reduce_all sum
/// them with W-wide vectors: lane l accumulates elements l, l + W, … (the first vector taken as it is, the last,
/// partial one only in its lanes), then the lanes are added pairwise across W/2, W/4, …, 1 (the SIMD reduction);
/// rows shorter than W are summed from the left. The products are added with one rounding (a fused
/// multiply-add, fmaOf(x, y, acc) = x·y + acc), as LibTorch's compiler contracts them in map2_reduce_all's loop.
template <int W, typename Fma>
inline __attribute__((always_inline)) float atenRowSum(const float* a, const float* b, int64_t n, Fma fmaOf)
{
    using V = FloatV<W>;
    if (n < W) {
        float acc = b != nullptr ? a[0] * b[0] : a[0];
        for (int64_t k = 1; k < n; ++k)
            acc = acc + (b != nullptr ? a[k] * b[k] : a[k]);
        return acc;
    }
    auto load = [](const float* p) {
        V v;
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    V acc = b != nullptr ? load(a) * load(b) : load(a);
    int64_t d = W;
    for (const int64_t full = n - n % W; d < full; d += W)
        acc = b != nullptr ? fmaOf(load(a + d), load(b + d), acc) : acc + load(a + d);
    if (n > d) {
        const V x = loadPartial<W>(a + d, n - d, 0.0f);
        const V summed = b != nullptr ? fmaOf(x, loadPartial<W>(b + d, n - d, 0.0f), acc) : acc + x;
        acc = laneIndex<W>() < LaneV<W>{} + int32_t(n - d) ? summed : acc;
    }
    for (int half = W / 2; half >= 1; half /= 2)
        acc = acc + __builtin_shuffle(acc, laneIndex<W>() ^ half);
    return acc[0];
}

/// The row's maximum, as at::vec::maximum finds it where no score is NaN. (A NaN score makes the whole row NaN in
/// LibTorch and here alike: exp(NaN − max) enters the sum.) Which of +0 and −0 it returns does not matter: it is
/// only subtracted before exp, and exp(±0) = 1.
template <int W>
inline __attribute__((always_inline)) float rowMaximum(const float* x, int64_t n)
{
    using V = FloatV<W>;
    V m = V{} - std::numeric_limits<float>::infinity();
    int64_t d = 0;
    for (; d + W <= n; d += W) {
        V v;
        std::memcpy(&v, x + d, sizeof v);
        m = v > m ? v : m;
    }
    if (d < n) {
        const V v = loadPartial<W>(x + d, n - d, -std::numeric_limits<float>::infinity());
        m = v > m ? v : m;
    }
    for (int half = W / 2; half >= 1; half /= 2) {
        const V other = __builtin_shuffle(m, laneIndex<W>() ^ half);
        m = other > m ? other : m;
    }
    return m[0];
}

/// LibTorch's softmax of `rows` rows of n floats each (row-major, in place), W = 8 (AVX2 kernels) or 16
/// (AVX-512): e_k = exp(x_k − max) with SLEEF's W-wide exp, s = Σ e_k (atenRowSum), then e_k · (1 / s).
template <int W, typename Exp>
inline __attribute__((always_inline)) void softmaxRowsAten(float* p, int64_t rows, int64_t n, Exp expOf)
{
    using V = FloatV<W>;
    for (int64_t i = 0; i < rows; ++i) {
        float* x = p + i * n;
        const V m = V{} + rowMaximum<W>(x, n);
        int64_t d = 0;
        for (; d + W <= n; d += W) {
            V v;
            std::memcpy(&v, x + d, sizeof v);
            const V e = expOf(v - m);
            std::memcpy(x + d, &e, sizeof e);
        }
        if (d < n) {
            const V e = expOf(loadPartial<W>(x + d, n - d, 0.0f) - m);
            std::memcpy(x + d, &e, size_t(n - d) * sizeof(float));
        }
        const float inverse = 1 / atenRowSum<W>(x, nullptr, n, [](V a, V, V) { return a; });
        for (int64_t k = 0; k < n; ++k)
            x[k] = x[k] * inverse;
    }
}

/// LibTorch's softmax backward of `rows` rows of n floats: out_k = (g_k − Σ_j g_j·y_j) · y_k, y the softmax's
/// output and g the gradient of the loss with respect to it.
template <int W, typename Fma>
inline __attribute__((always_inline)) void softmaxBackwardRowsAten(const float* g, const float* y, float* out,
                                                                   int64_t rows, int64_t n, Fma fmaOf)
{
    for (int64_t i = 0; i < rows; ++i) {
        const float* gi = g + i * n;
        const float* yi = y + i * n;
        float* oi = out + i * n;
        const float sum = atenRowSum<W>(gi, yi, n, fmaOf);
        for (int64_t k = 0; k < n; ++k)
            oi[k] = (gi[k] - sum) * yi[k];
    }
}

typedef float Float8 __attribute__((vector_size(32)));
typedef float Float16 __attribute__((vector_size(64)));

__attribute__((target("avx2,fma"))) void softmaxRowsAvx2(float* p, int64_t rows, int64_t n)
{
    softmaxRowsAten<8>(p, rows, n, [](Float8 v) __attribute__((target("avx2,fma"))) {
        return reinterpret_cast<Float8>(Sleef_expf8_u10(reinterpret_cast<__m256>(v)));
    });
}

__attribute__((target("avx512f,avx2,fma"))) void softmaxRowsAvx512(float* p, int64_t rows, int64_t n)
{
    softmaxRowsAten<16>(p, rows, n, [](Float16 v) __attribute__((target("avx512f,avx2,fma"))) {
        return reinterpret_cast<Float16>(Sleef_expf16_u10(reinterpret_cast<__m512>(v)));
    });
}

__attribute__((target("avx2,fma"))) void softmaxBackwardRowsAvx2(const float* g, const float* y, float* out,
                                                                int64_t rows, int64_t n)
{
    softmaxBackwardRowsAten<8>(g, y, out, rows, n, [](Float8 x, Float8 w, Float8 acc) __attribute__((target("avx2,fma"))) {
        return reinterpret_cast<Float8>(
            _mm256_fmadd_ps(reinterpret_cast<__m256>(x), reinterpret_cast<__m256>(w), reinterpret_cast<__m256>(acc)));
    });
}

__attribute__((target("avx512f,avx2,fma"))) void softmaxBackwardRowsAvx512(const float* g, const float* y,
                                                                          float* out, int64_t rows, int64_t n)
{
    softmaxBackwardRowsAten<16>(g, y, out, rows, n,
                                [](Float16 x, Float16 w, Float16 acc) __attribute__((target("avx512f,avx2,fma"))) {
                                    return reinterpret_cast<Float16>(_mm512_fmadd_ps(reinterpret_cast<__m512>(x),
                                                                                     reinterpret_cast<__m512>(w),
                                                                                     reinterpret_cast<__m512>(acc)));
                                });
}

#endif // ICL_HAVE_SLEEF

/// The vector width of LibTorch's float kernels when the softmax above repeats them (8 or 16), else 0: LibTorch's
/// own softmax then runs over the whole score tensor.
int fusedSoftmaxWidth()
{
#ifdef ICL_HAVE_SLEEF
    return atenFloatVectorWidth();
#else
    return 0;
#endif
}

/// LibTorch's softmax of `rows` rows of n floats, in place (fusedSoftmaxWidth() ≠ 0).
void softmaxRowsInPlace(float* p, int64_t rows, int64_t n)
{
#ifdef ICL_HAVE_SLEEF
    if (fusedSoftmaxWidth() == 16)
        softmaxRowsAvx512(p, rows, n);
    else
        softmaxRowsAvx2(p, rows, n);
#else
    (void)p, (void)rows, (void)n;
#endif
}

/// LibTorch's softmax backward of `rows` rows of n floats: pattern y, its gradient g (fusedSoftmaxWidth() ≠ 0).
void softmaxBackwardRowsN(const float* g, const float* y, float* out, int64_t rows, int64_t n)
{
#ifdef ICL_HAVE_SLEEF
    if (fusedSoftmaxWidth() == 16)
        softmaxBackwardRowsAvx512(g, y, out, rows, n);
    else
        softmaxBackwardRowsAvx2(g, y, out, rows, n);
#else
    (void)g, (void)y, (void)out, (void)rows, (void)n;
#endif
}

/// Runs f(b, h, scratch) for every (prompt, head) on LibTorch's intra-op threads; scratch holds
/// dh · paddedT + kRows · dh + `extra` elements per thread.
template <typename S, typename F>
void forEachHead(const Shape& s, F&& f, int64_t extra = 0)
{
    at::parallel_for(0, s.B * s.H, 1, [&](int64_t begin, int64_t end) {
        std::vector<S> scratch(size_t(s.dh * s.paddedT() + kRows * s.dh + extra));
        for (int64_t bh = begin; bh < end; ++bh)
            f(bh / s.H, bh % s.H, scratch.data());
    });
}

/// True when the softmax and its backward run inside the per-head loops (float, LibTorch's AVX2 or AVX-512
/// kernels, SLEEF); otherwise LibTorch's softmax runs over the whole [B, H, T, T] tensor in between.
template <typename S>
bool softmaxInTheHeadLoop()
{
    return std::is_same_v<S, float> && fusedSoftmaxWidth() != 0;
}

template <typename S>
std::pair<torch::Tensor, torch::Tensor> attentionForward(const torch::Tensor& qkv, int64_t heads)
{
    const Shape s(qkv, heads);
    const S scale = S(1.0 / std::sqrt(double(s.dh)));
    const int64_t C = 3 * s.D, Tp = s.paddedT();
    const S* base = qkv.data_ptr<S>();
    torch::Tensor z = torch::empty({s.B, s.T, s.D}, qkv.options());
    S* zd = z.data_ptr<S>();
    auto scoresOf = [&](int64_t b, int64_t h, S* out, S* scratch) {
        const S* rows = base + b * s.T * C + h * s.dh;
        causalDots(rows, C, rows + s.D, C, s.T, s.dh, scale, -std::numeric_limits<S>::infinity(), out, scratch, Tp);
    };
    auto valuesOf = [&](int64_t b, int64_t h, const S* pattern, S* scratch) {
        causalRows(pattern, base + b * s.T * C + 2 * s.D + h * s.dh, C, s.T, s.dh, S(1), zd + b * s.T * s.D + h * s.dh,
                   s.D, scratch);
    };
    if constexpr (std::is_same_v<S, float>) {
        if (softmaxInTheHeadLoop<S>()) {
            // Scores, softmax and P·v of one head while its [T, T] block is in cache.
            torch::Tensor pattern = torch::empty({s.B, s.H, s.T, s.T}, qkv.options());
            S* pd = pattern.data_ptr<S>();
            forEachHead<S>(s, [&](int64_t b, int64_t h, S* scratch) {
                S* head = pd + (b * s.H + h) * s.T * s.T;
                scoresOf(b, h, head, scratch);
                softmaxRowsInPlace(head, s.T, s.T);
                valuesOf(b, h, head, scratch);
            });
            return {z, pattern};
        }
    }
    torch::Tensor scores = torch::empty({s.B, s.H, s.T, s.T}, qkv.options());
    S* sc = scores.data_ptr<S>();
    forEachHead<S>(s, [&](int64_t b, int64_t h, S* scratch) { scoresOf(b, h, sc + (b * s.H + h) * s.T * s.T, scratch); });
    torch::Tensor pattern = at::_softmax(scores, -1, false);
    const S* p = pattern.data_ptr<S>();
    forEachHead<S>(s, [&](int64_t b, int64_t h, S* scratch) { valuesOf(b, h, p + (b * s.H + h) * s.T * s.T, scratch); });
    return {z, pattern};
}

template <typename S>
torch::Tensor attentionBackward(const torch::Tensor& qkv, const torch::Tensor& pattern, const torch::Tensor& gradZ,
                                const torch::Tensor& gradPattern, int64_t heads)
{
    const Shape s(qkv, heads);
    const S scale = S(1.0 / std::sqrt(double(s.dh)));
    const int64_t C = 3 * s.D, Tp = s.paddedT(), TT = s.T * s.T;
    const torch::Tensor dz = gradZ.defined() ? gradZ.contiguous() : torch::zeros({s.B, s.T, s.D}, qkv.options());
    const torch::Tensor dPattern = gradPattern.defined() ? gradPattern.contiguous() : torch::Tensor();
    const S* base = qkv.data_ptr<S>();
    const S* dzd = dz.data_ptr<S>();
    const S* p = pattern.data_ptr<S>();
    torch::Tensor grad = torch::empty_like(qkv);
    S* g = grad.data_ptr<S>();
    // ∂L/∂P_ij = ∂L/∂z_i · v_j (+ the pattern's own gradient).
    auto patternGradientOf = [&](int64_t b, int64_t h, S* out, S* scratch) {
        causalDots(dzd + b * s.T * s.D + h * s.dh, s.D, base + b * s.T * C + 2 * s.D + h * s.dh, C, s.T, s.dh, S(1),
                   S(0), out, scratch, Tp);
    };
    // ∂L/∂q, ∂L/∂k from the scores' gradient gs, ∂L/∂v from the pattern.
    auto inputGradientsOf = [&](int64_t b, int64_t h, const S* gs, S* scratch) {
        const S* rows = base + b * s.T * C + h * s.dh;
        S* out = g + b * s.T * C + h * s.dh;
        causalRows(gs, rows + s.D, C, s.T, s.dh, scale, out, C, scratch);                                  // ∂L/∂q
        causalCols(gs, rows, C, s.T, s.dh, scale, out + s.D, C, scratch);                                  // ∂L/∂k
        causalCols(p + (b * s.H + h) * TT, dzd + b * s.T * s.D + h * s.dh, s.D, s.T, s.dh, S(1), out + 2 * s.D, C,  // ∂L/∂v
                   scratch);
    };
    if constexpr (std::is_same_v<S, float>) {
        if (softmaxInTheHeadLoop<S>()) {
            // One head at a time: its [T, T] gradients live in the thread's scratch, not in [B, H, T, T] tensors.
            const S* dp = dPattern.defined() ? dPattern.data_ptr<S>() : nullptr;
            forEachHead<S>(
                s,
                [&](int64_t b, int64_t h, S* scratch) {
                    S* gp = scratch + s.dh * Tp + kRows * s.dh;
                    S* gs = gp + TT;
                    patternGradientOf(b, h, gp, scratch);
                    if (dp != nullptr) {
                        const S* extra = dp + (b * s.H + h) * TT;
                        for (int64_t k = 0; k < TT; ++k)
                            gp[k] = gp[k] + extra[k];
                    }
                    softmaxBackwardRowsN(gp, p + (b * s.H + h) * TT, gs, s.T, s.T);
                    inputGradientsOf(b, h, gs, scratch);
                },
                2 * TT);
            return grad;
        }
    }
    torch::Tensor gradP = torch::empty({s.B, s.H, s.T, s.T}, qkv.options());
    S* gpAll = gradP.data_ptr<S>();
    forEachHead<S>(s, [&](int64_t b, int64_t h, S* scratch) { patternGradientOf(b, h, gpAll + (b * s.H + h) * TT, scratch); });
    if (dPattern.defined())
        gradP.add_(dPattern);
    const torch::Tensor gradScores = at::_softmax_backward_data(gradP, pattern, -1, pattern.scalar_type());
    const S* gsAll = gradScores.data_ptr<S>();
    forEachHead<S>(s, [&](int64_t b, int64_t h, S* scratch) { inputGradientsOf(b, h, gsAll + (b * s.H + h) * TT, scratch); });
    return grad;
}

std::pair<torch::Tensor, torch::Tensor> forwardKernel(const torch::Tensor& qkv, int64_t heads)
{
    return qkv.scalar_type() == torch::kFloat64 ? attentionForward<double>(qkv, heads)
                                                : attentionForward<float>(qkv, heads);
}

class CausalAttentionFunction : public torch::autograd::Function<CausalAttentionFunction> {
public:
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                                                  int64_t heads)
    {
        auto [z, pattern] = forwardKernel(qkv, heads);
        // The pattern is an output for capture; when nothing downstream uses it its gradient stays undefined
        // (backward skips it) instead of a zero [B, H, T, T] tensor made and added on every backward pass.
        ctx->set_materialize_grads(false);
        ctx->save_for_backward({qkv, pattern});
        ctx->saved_data["heads"] = heads;
        return {z, pattern};
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const int64_t heads = ctx->saved_data["heads"].toInt();
        const torch::Tensor& qkv = saved[0];
        torch::Tensor grad;
        if (!grads[0].defined() && !grads[1].defined())
            grad = torch::zeros_like(qkv);
        else if (qkv.scalar_type() == torch::kFloat64)
            grad = attentionBackward<double>(qkv, saved[1], grads[0], grads[1], heads);
        else
            grad = attentionBackward<float>(qkv, saved[1], grads[0], grads[1], heads);
        return {grad, torch::Tensor()};
    }
};

} // namespace

bool causalAttentionKernelApplies(const torch::Tensor& qkv)
{
    return qkv.defined() && qkv.device().is_cpu() && qkv.layout() == torch::kStrided && qkv.dim() == 3
        && qkv.size(1) >= 1 && qkv.size(2) % 3 == 0
        && (qkv.scalar_type() == torch::kFloat32 || qkv.scalar_type() == torch::kFloat64);
}

std::pair<torch::Tensor, torch::Tensor> causalAttention(const torch::Tensor& qkv, int64_t heads)
{
    TORCH_CHECK(causalAttentionKernelApplies(qkv), "causalAttention expects a float32 or float64 CPU tensor [B, T, 3·D], got ",
                qkv.sizes(), " ", qkv.dtype(), " on ", qkv.device());
    TORCH_CHECK(heads >= 1 && (qkv.size(2) / 3) % heads == 0, "causalAttention: D = ", qkv.size(2) / 3,
                " is not divisible by ", heads, " heads");
    const torch::Tensor input = qkv.contiguous();
    if (!(torch::GradMode::is_enabled() && input.requires_grad()))
        return forwardKernel(input, heads);
    auto out = CausalAttentionFunction::apply(input, heads);
    return {out[0], out[1]};
}

bool softmaxLikeAtenApplies()
{
    return fusedSoftmaxWidth() != 0;
}

torch::Tensor softmaxLastDimLikeAten(const torch::Tensor& x)
{
    TORCH_CHECK(softmaxLikeAtenApplies(), "softmaxLastDimLikeAten: LibTorch's float kernels are not repeated here");
    TORCH_CHECK(x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && x.is_contiguous() && x.dim() >= 1
                    && x.size(-1) >= 1,
                "softmaxLastDimLikeAten: a contiguous float32 CPU tensor [..., n ≥ 1] expected");
    torch::Tensor out = x.clone();
    const int64_t n = x.size(-1);
    float* d = out.data_ptr<float>();
    for (int64_t r = 0; r < x.numel() / n; ++r)
        softmaxRowsInPlace(d + r * n, 1, n);
    return out;
}

torch::Tensor softmaxBackwardLastDimLikeAten(const torch::Tensor& grad, const torch::Tensor& output)
{
    TORCH_CHECK(softmaxLikeAtenApplies(), "softmaxBackwardLastDimLikeAten: LibTorch's float kernels are not repeated here");
    TORCH_CHECK(grad.device().is_cpu() && output.device().is_cpu() && grad.scalar_type() == torch::kFloat32
                    && output.scalar_type() == torch::kFloat32 && grad.is_contiguous() && output.is_contiguous()
                    && grad.sizes() == output.sizes() && grad.dim() >= 1 && grad.size(-1) >= 1,
                "softmaxBackwardLastDimLikeAten: contiguous float32 CPU tensors of one shape [..., n ≥ 1] expected");
    torch::Tensor out = torch::empty_like(grad);
    const int64_t n = grad.size(-1);
    softmaxBackwardRowsN(grad.data_ptr<float>(), output.data_ptr<float>(), out.data_ptr<float>(), grad.numel() / n, n);
    return out;
}

} // namespace icl
