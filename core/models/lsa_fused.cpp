#include "core/models/lsa_fused.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "core/runtime/blas.h"

namespace icl {

namespace {

// out[i] (+)= Σ_c x[c][i]·y[c][i] for i < len: the one inner loop of the per-prompt products (prompts are
// innermost, so every product of two per-prompt matrices is a sum of such rows), four terms per pass over
// `out`. Compiled for AVX-512, AVX2 and the baseline ISA; the loader picks the best the CPU has by its features
// (an "arch=haswell" clone is picked by CPU model and so never ran on AMD CPUs). The file is compiled with
// -ffp-contract=off (core/CMakeLists.txt): products and sums stay separate operations in every clone, so all
// clones give the same numbers, bitwise.
template <typename T>
inline __attribute__((always_inline)) void sumOfProductsImpl(T* __restrict out, const T* const* x, const T* const* y, int64_t count, int64_t len,
                              bool accumulate)
{
    int64_t c = 0;
    if (!accumulate) {
        if (count == 0) {
            std::fill(out, out + len, T(0));
            return;
        }
        const T *x0 = x[0], *y0 = y[0];
        for (int64_t i = 0; i < len; ++i)
            out[i] = x0[i] * y0[i];
        c = 1;
    }
    for (; c + 4 <= count; c += 4) {
        const T *x0 = x[c], *x1 = x[c + 1], *x2 = x[c + 2], *x3 = x[c + 3];
        const T *y0 = y[c], *y1 = y[c + 1], *y2 = y[c + 2], *y3 = y[c + 3];
        for (int64_t i = 0; i < len; ++i)
            out[i] += (x0[i] * y0[i] + x1[i] * y1[i]) + (x2[i] * y2[i] + x3[i] * y3[i]);
    }
    for (; c < count; ++c) {
        const T *x0 = x[c], *y0 = y[c];
        for (int64_t i = 0; i < len; ++i)
            out[i] += x0[i] * y0[i];
    }
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void sumOfProducts(float* out, const float* const* x,
                                                                              const float* const* y, int64_t count,
                                                                              int64_t len, bool accumulate)
{
    sumOfProductsImpl(out, x, y, count, len, accumulate);
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void sumOfProducts(double* out, const double* const* x,
                                                                              const double* const* y, int64_t count,
                                                                              int64_t len, bool accumulate)
{
    sumOfProductsImpl(out, x, y, count, len, accumulate);
}

/// Prompts per chunk: rows of 256 floats keep a chunk's operands in the L1/L2 caches.
constexpr int64_t kChunk = 256;

/// A feature-major operand: element (c, t, b) at data[c·cs + t·rs + b].
template <typename T>
struct Fm {
    T* data;
    int64_t cs, rs;
    T* row(int64_t c, int64_t t, int64_t b0) const { return data + c * cs + t * rs + b0; }
};

/// out[k][j][b] = Σ_h Σ_{t<m} X[h·D+k][t][b] · Y[h·D2+j][t][b]   (out [D, D2, B] contiguous)
/// With `symmetric` (X and Y the same operand) only j ≥ k is computed and mirrored.
template <typename T>
void atbKernel(Fm<T> X, Fm<T> Y, T* out, int64_t H, int64_t D, int64_t D2, int64_t m, int64_t B, bool symmetric)
{
    const int64_t chunks = (B + kChunk - 1) / kChunk;
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
        std::vector<const T*> xs(static_cast<size_t>(H * m)), ys(static_cast<size_t>(H * m));
        for (int64_t c = c0; c < c1; ++c) {
            const int64_t b0 = c * kChunk, len = std::min(kChunk, B - b0);
            for (int64_t k = 0; k < D; ++k)
                for (int64_t j = 0; j < D2; ++j) {
                    T* o = out + (k * D2 + j) * B + b0;
                    if (symmetric && j < k) {
                        const T* mirror = out + (j * D2 + k) * B + b0;
                        std::copy(mirror, mirror + len, o);
                        continue;
                    }
                    for (int64_t h = 0; h < H; ++h)
                        for (int64_t t = 0; t < m; ++t) {
                            xs[size_t(h * m + t)] = X.row(h * D + k, t, b0);
                            ys[size_t(h * m + t)] = Y.row(h * D2 + j, t, b0);
                        }
                    sumOfProducts(o, xs.data(), ys.data(), H * m, len, false);
                }
        }
    });
}

/// out[h·D2+a][t][b] (+)= Σ_k X[h·D+k][t][b] · M[k][a][b]   (t < m; M [D, D2, B] contiguous)
template <typename T>
void abKernel(Fm<T> X, const T* M, Fm<T> out, int64_t H, int64_t D, int64_t D2, int64_t m, int64_t B,
              bool accumulate)
{
    const int64_t chunks = (B + kChunk - 1) / kChunk;
    at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
        std::vector<const T*> xs(static_cast<size_t>(D)), ms(static_cast<size_t>(D));
        for (int64_t c = c0; c < c1; ++c) {
            const int64_t b0 = c * kChunk, len = std::min(kChunk, B - b0);
            for (int64_t h = 0; h < H; ++h)
                for (int64_t a = 0; a < D2; ++a)
                    for (int64_t t = 0; t < m; ++t) {
                        for (int64_t k = 0; k < D; ++k) {
                            xs[size_t(k)] = X.row(h * D + k, t, b0);
                            ms[size_t(k)] = M + (k * D2 + a) * B + b0;
                        }
                        sumOfProducts(out.row(h * D2 + a, t, b0), xs.data(), ms.data(), D, len, accumulate);
                    }
        }
    });
}

/// [C, ≥m, B] with prompts contiguous and rows B apart.
bool featureMajor(const torch::Tensor& t)
{
    return t.dim() == 3 && t.stride(2) == 1 && t.stride(1) == t.size(2);
}

template <typename T>
Fm<T> fm(const torch::Tensor& t)
{
    return Fm<T>{t.data_ptr<T>(), t.stride(0), t.stride(1)};
}

void setGrad(torch::Tensor& p, const torch::Tensor& g)
{
    if (p.grad().defined())
        p.mutable_grad().copy_(g);
    else
        p.mutable_grad() = g.clone();
}

} // namespace

void batchedAtB(const torch::Tensor& X, const torch::Tensor& Y, int64_t heads, int64_t rows, torch::Tensor& out)
{
    TORCH_CHECK(X.dim() == 3 && Y.dim() == 3 && X.size(2) == Y.size(2) && heads >= 1 && X.size(0) % heads == 0
                    && Y.size(0) % heads == 0 && rows >= 0 && rows <= X.size(1) && rows <= Y.size(1),
                "batchedAtB: X [H·D, ≥m, B] and Y [H·D', ≥m, B] expected, got ", X.sizes(), " and ", Y.sizes());
    const int64_t H = heads, D = X.size(0) / H, D2 = Y.size(0) / H, B = X.size(2);
    if (!out.defined() || out.sizes() != torch::IntArrayRef{D, D2, B} || !out.is_contiguous()
        || out.scalar_type() != X.scalar_type() || out.device() != X.device())
        out = torch::empty({D, D2, B}, X.options());
    if (!X.device().is_cpu() || !featureMajor(X) || !featureMajor(Y)) {
        out.copy_(torch::einsum("hktb,hjtb->kjb", {X.narrow(1, 0, rows).reshape({H, D, rows, B}),
                                                   Y.narrow(1, 0, rows).reshape({H, D2, rows, B})}));
        return;
    }
    AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "batchedAtB", [&] {
        const bool symmetric = X.data_ptr() == Y.data_ptr() && X.strides() == Y.strides() && X.sizes() == Y.sizes();
        atbKernel<scalar_t>(fm<scalar_t>(X), fm<scalar_t>(Y), out.data_ptr<scalar_t>(), H, D, D2, rows, B, symmetric);
    });
}

void batchedAB(const torch::Tensor& X, const torch::Tensor& M, int64_t heads, int64_t rows, torch::Tensor& out,
               bool accumulate)
{
    TORCH_CHECK(X.dim() == 3 && M.dim() == 3 && heads >= 1 && X.size(0) % heads == 0
                    && M.size(0) == X.size(0) / heads && M.size(2) == X.size(2) && rows >= 0 && rows <= X.size(1),
                "batchedAB: X [H·D, ≥m, B] and M [D, D', B] expected, got ", X.sizes(), " and ", M.sizes());
    const int64_t H = heads, D = M.size(0), D2 = M.size(1), B = X.size(2);
    TORCH_CHECK(out.defined() && out.dim() == 3 && out.size(0) == H * D2 && out.size(1) >= rows && out.size(2) == B,
                "batchedAB: out must be [H·D', ≥m, B]");
    if (!X.device().is_cpu() || !featureMajor(X) || !M.is_contiguous() || !featureMajor(out)) {
        const torch::Tensor prod
            = torch::einsum("hktb,kab->hatb", {X.narrow(1, 0, rows).reshape({H, D, rows, B}), M}).reshape({H * D2, rows, B});
        torch::Tensor target = out.narrow(1, 0, rows);
        if (accumulate)
            target.add_(prod);
        else
            target.copy_(prod);
        return;
    }
    AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "batchedAB", [&] {
        abKernel<scalar_t>(fm<scalar_t>(X), M.data_ptr<scalar_t>(), fm<scalar_t>(out), H, D, D2, rows, B, accumulate);
    });
}

bool FusedLsa::supports(const LsaOptions& o, std::string* why)
{
    const char* reason = nullptr;
    if (o.softmax_layers > 0)
        reason = "softmax layers";
    else if (o.layer_norm)
        reason = "LayerNorm";
    else if (o.mlp)
        reason = "MLP";
    else if (o.feature_dim > 0)
        reason = "representation φ";
    if (reason && why)
        *why = reason;
    return reason == nullptr;
}

FusedLsa::FusedLsa(LsaImpl& model)
    : m_model(model)
{
    std::string why;
    if (!supports(model.options(), &why))
        throw Error("the fused LSA path does not cover models with " + why);
}

void FusedLsa::allocate(int64_t B, int64_t T, int64_t n, const torch::TensorOptions& opts)
{
    if (B == m_B && T == m_T && n == m_n && opts.dtype() == m_opts.dtype() && opts.device() == m_opts.device())
        return;
    const LsaOptions& o = m_model.options();
    const int64_t D = o.tokenDim(), H = o.n_heads, K = o.n_layers;
    m_layers.assign(size_t(K), LayerBuffers{});
    for (int64_t l = 0; l < K; ++l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        // The last layer is needed at the query token only.
        const int64_t rows = l + 1 == K ? 1 : T;
        lb.e = torch::empty({D, T, B}, opts);
        lb.g = torch::empty({D, D, B}, opts);
        lb.f = torch::empty({H * D, rows, B}, opts);
        lb.r = torch::empty({H * D, rows, B}, opts);
    }
    m_eQuery = torch::empty({D, B}, opts);
    m_eBar = torch::empty({D, T, B}, opts);
    m_eBarNext = torch::empty({D, T, B}, opts);
    m_rBar = torch::empty({H * D, T, B}, opts);
    m_fBar = torch::empty({H * D, T, B}, opts);
    m_gBar = torch::empty({D, D, B}, opts);
    m_gSym = torch::empty({D, D, B}, opts);
    m_position = o.pos_dim > 0 ? sinusoidalPositions(T, o.pos_dim, opts) : torch::Tensor();
    m_B = B, m_T = T, m_n = n, m_opts = opts;
}

void FusedLsa::prepareWeights()
{
    const LsaOptions& o = m_model.options();
    const int64_t D = o.tokenDim(), H = o.n_heads;
    const int64_t blocks = o.tied ? 1 : o.n_layers;
    m_acat.resize(size_t(blocks));
    m_bcat.resize(size_t(blocks));
    for (int64_t b = 0; b < blocks; ++b) {
        const LsaLayerWeights& w = m_model.layer(b);
        // A_h = W_Qᵀ W_K side by side: Acat[:, h·D:(h+1)·D] = A_h  ([D, H·D]).
        m_acat[size_t(b)] = torch::bmm(w.w_q.transpose(1, 2), w.w_k).permute({1, 0, 2}).reshape({D, H * D});
        // B_h = W_Vᵀ W_Oᵀ stacked: Bcat[h·D:(h+1)·D, :] = B_h  ([H·D, D]).
        m_bcat[size_t(b)] = torch::bmm(w.w_v.transpose(1, 2), w.w_o.transpose(1, 2)).reshape({H * D, D});
    }
}

torch::Tensor FusedLsa::forward(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    const ThisThreadIntraOpThreads oneThread(1);  // see the class comment
    const LsaOptions& o = m_model.options();
    const LsaLayerWeights& w0 = m_model.layer(0);
    PromptBatch pb = batch;
    if (batch.x.scalar_type() != w0.w_q.scalar_type() || batch.x.device() != w0.w_q.device()) {
        pb.x = batch.x.to(w0.w_q.options());
        pb.y = batch.y.to(w0.w_q.options());
    }
    const int64_t n = m_model.contextTokens(batch.nContext());
    const int64_t B = pb.batchSize(), T = n + 1, D = o.tokenDim(), H = o.n_heads, K = o.n_layers;
    allocate(B, T, n, pb.x.options());
    prepareWeights();
    // Feature-major tokens E [D, T, B]: every per-prompt product runs along the prompts.
    torch::Tensor& e0 = m_layers[0].e;
    if (o.interleaved) {
        e0.narrow(0, 0, o.dataDim()).copy_(m_model.embed(pb).permute({2, 1, 0}));
    } else {
        // Pair tokens (x_i, y_i) and the query (x_q, 0), as pairTokens.
        const int64_t d = o.dataDim() - 1;
        e0.narrow(0, 0, d).copy_(pb.x.permute({2, 1, 0}));
        e0.select(0, d).copy_(pb.y.t());
        e0.select(0, d).select(0, T - 1).zero_();
    }
    if (o.pos_dim > 0)
        e0.narrow(0, o.dataDim(), o.pos_dim).copy_(m_position.t().unsqueeze(-1).expand({o.pos_dim, T, B}));
    for (int64_t l = 0; l < K; ++l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        const torch::Tensor& acat = m_acat[o.tied ? 0 : size_t(l)];
        const torch::Tensor& bcat = m_bcat[o.tied ? 0 : size_t(l)];
        batchedAtB(lb.e, lb.e, 1, n, lb.g);  // G = CᵀC over the first n tokens
        if (l + 1 < K) {
            torch::Tensor f2 = lb.f.view({H * D, T * B}), r2 = lb.r.view({H * D, T * B});
            torch::mm_out(f2, acat.t(), lb.e.view({D, T * B}));  // F = Acatᵀ E  (rows: F = E·Acat)
            batchedAB(lb.f, lb.g, H, T, lb.r, false);            // R = F G
            torch::Tensor next = m_layers[size_t(l) + 1].e.view({D, T * B});
            torch::addmm_out(next, lb.e.view({D, T * B}), bcat.t(), r2);  // E' = E + R·Bcat
        } else {
            // Last layer: the query token only.
            const torch::Tensor eq = lb.e.select(1, T - 1);  // [D, B], rows T·B apart
            torch::Tensor f2 = lb.f.view({H * D, B}), r2 = lb.r.view({H * D, B});
            torch::mm_out(f2, acat.t(), eq);
            batchedAB(lb.f, lb.g, H, 1, lb.r, false);
            torch::addmm_out(m_eQuery, eq, bcat.t(), r2);
        }
    }
    return m_eQuery;  // [D, B]: E_K at the query token
}

torch::Tensor FusedLsa::predict(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    return -forward(batch).select(0, m_model.ySlot());
}

torch::Tensor FusedLsa::lossAndGrad(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    const ThisThreadIntraOpThreads oneThread(1);  // see the class comment
    const LsaOptions& o = m_model.options();
    const torch::Tensor eq = forward(batch);
    const int64_t B = m_B, T = m_T, n = m_n, D = o.tokenDim(), H = o.n_heads, K = o.n_layers;
    const int64_t ySlot = m_model.ySlot();

    // r = ŷ − y with ŷ = −E_K[y-slot] at the query; L = ½·mean r²; ∂L/∂E_K[y-slot] = −r / B there.
    const torch::Tensor r = -(eq.select(0, ySlot) + batch.queryY().to(eq.options()));
    const torch::Tensor loss = 0.5 * r.pow(2).mean();
    const torch::Tensor outBar = torch::zeros({D, B}, eq.options());  // Ē_K at the query [D, B]
    outBar.select(0, ySlot).copy_(r * (-1.0 / double(B)));

    const int64_t blocks = o.tied ? 1 : K;
    std::vector<torch::Tensor> dAcat(static_cast<size_t>(blocks)), dBcat(static_cast<size_t>(blocks));
    auto accumulate = [](torch::Tensor& sum, const torch::Tensor& term) { sum = sum.defined() ? sum.add_(term) : term; };
    for (int64_t l = K - 1; l >= 0; --l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        const size_t blk = o.tied ? 0 : size_t(l);
        const torch::Tensor& acat = m_acat[blk];
        const torch::Tensor& bcat = m_bcat[blk];
        const bool last = l + 1 == K;
        const int64_t rows = last ? 1 : T;
        // Ē' restricted to the rows this layer computed: [D, rows·B].
        const torch::Tensor eBar2 = last ? outBar : m_eBar.view({D, T * B});
        const torch::Tensor e2 = last ? lb.e.select(1, T - 1) : lb.e.view({D, T * B});
        accumulate(dBcat[blk], torch::mm(lb.r.view({H * D, rows * B}), eBar2.t()));  // B̄cat = Rᵀ Ē'
        torch::Tensor rBar = m_rBar.narrow(1, 0, rows), fBar = m_fBar.narrow(1, 0, rows);
        torch::Tensor rBar2 = rBar.view({H * D, rows * B}), fBar2 = fBar.view({H * D, rows * B});
        torch::mm_out(rBar2, bcat, eBar2);                            // R̄ = Ē' Bcatᵀ
        batchedAtB(lb.f, rBar, H, rows, m_gBar);                      // Ḡ = Fᵀ R̄
        batchedAB(rBar, lb.g, H, rows, fBar, false);                  // F̄ = R̄ G  (G = Gᵀ)
        accumulate(dAcat[blk], torch::mm(e2, fBar2.t()));             // Ācat = Eᵀ F̄
        if (l == 0)
            break;  // the tokens themselves need no gradient
        // Ē = Ē' + F̄ Acatᵀ + [C (Ḡ + Ḡᵀ); 0]
        if (last) {
            m_eBarNext.zero_();
            torch::Tensor q = m_eBarNext.select(1, T - 1);
            q.copy_(torch::addmm(eBar2, acat, fBar2));
        } else {
            torch::Tensor next2 = m_eBarNext.view({D, T * B});
            torch::addmm_out(next2, eBar2, acat, fBar2);
        }
        torch::add_out(m_gSym, m_gBar, m_gBar.transpose(0, 1));
        batchedAB(lb.e, m_gSym, 1, n, m_eBarNext, true);
        std::swap(m_eBar, m_eBarNext);
    }

    for (int64_t b = 0; b < blocks; ++b) {
        LsaLayerWeights& w = m_model.layer(b);
        const torch::Tensor aBar = dAcat[size_t(b)].view({D, H, D}).permute({1, 0, 2});  // Ā_h [H, D, D]
        const torch::Tensor bBar = dBcat[size_t(b)].view({H, D, D});                     // B̄_h [H, D, D]
        setGrad(w.w_q, torch::bmm(w.w_k, aBar.transpose(1, 2)));                  // W_K Āᵀ
        setGrad(w.w_k, torch::bmm(w.w_q, aBar));                                  // W_Q Ā
        setGrad(w.w_v, torch::bmm(w.w_o.transpose(1, 2), bBar.transpose(1, 2)));  // W_Oᵀ B̄ᵀ
        setGrad(w.w_o, torch::bmm(bBar.transpose(1, 2), w.w_v.transpose(1, 2)));  // B̄ᵀ W_Vᵀ
    }
    return loss;
}

} // namespace icl
