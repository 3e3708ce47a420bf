#include "core/models/lsa_fused.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "core/error.h"

namespace icl {

namespace {

/// Batches per parallel chunk so that a chunk holds at least ~16k multiply-adds.
int64_t grainFor(int64_t workPerBatch)
{
    return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, workPerBatch));
}

template <typename T>
void atbKernel(const T* X, int64_t sxb, int64_t sxr, const T* Y, int64_t syb, int64_t syr, T* out, int64_t B,
               int64_t m, int64_t D, int64_t D2)
{
    at::parallel_for(0, B, grainFor(m * D * D2), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            T* o = out + b * D * D2;
            std::fill(o, o + D * D2, T(0));
            const T* x = X + b * sxb;
            const T* y = Y + b * syb;
            for (int64_t t = 0; t < m; ++t) {
                const T* xr = x + t * sxr;
                const T* yr = y + t * syr;
                for (int64_t i = 0; i < D; ++i) {
                    const T a = xr[i];
                    T* orow = o + i * D2;
                    for (int64_t j = 0; j < D2; ++j)
                        orow[j] += a * yr[j];
                }
            }
        }
    });
}

template <typename T>
void abKernel(const T* X, int64_t sxb, int64_t sxr, const T* M, int64_t smb, T* out, int64_t sob, int64_t sor,
              int64_t B, int64_t m, int64_t D, int64_t D2, bool accumulate)
{
    at::parallel_for(0, B, grainFor(m * D * D2), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const T* x = X + b * sxb;
            const T* mb = M + b * smb;
            for (int64_t t = 0; t < m; ++t) {
                const T* xr = x + t * sxr;
                T* orow = out + b * sob + t * sor;
                if (!accumulate)
                    std::fill(orow, orow + D2, T(0));
                for (int64_t k = 0; k < D; ++k) {
                    const T a = xr[k];
                    const T* mrow = mb + k * D2;
                    for (int64_t j = 0; j < D2; ++j)
                        orow[j] += a * mrow[j];
                }
            }
        }
    });
}

/// Rows of a [B, m, D] tensor must be contiguous for the CPU kernels.
bool rowsContiguous(const torch::Tensor& t)
{
    return t.dim() == 3 && t.stride(2) == 1 && (t.size(1) <= 1 || t.stride(1) >= t.size(2));
}

void setGrad(torch::Tensor& p, const torch::Tensor& g)
{
    if (p.grad().defined())
        p.mutable_grad().copy_(g);
    else
        p.mutable_grad() = g.clone();
}

} // namespace

void batchedAtB(const torch::Tensor& X, const torch::Tensor& Y, torch::Tensor& out)
{
    TORCH_CHECK(X.dim() == 3 && Y.dim() == 3 && X.size(0) == Y.size(0) && X.size(1) == Y.size(1),
                "batchedAtB: X [B, m, D] and Y [B, m, D'] expected, got ", X.sizes(), " and ", Y.sizes());
    const int64_t B = X.size(0), m = X.size(1), D = X.size(2), D2 = Y.size(2);
    if (!out.defined() || out.sizes() != torch::IntArrayRef{B, D, D2} || !out.is_contiguous())
        out = torch::empty({B, D, D2}, X.options());
    if (!X.device().is_cpu() || !rowsContiguous(X) || !rowsContiguous(Y)) {
        out.copy_(torch::bmm(X.transpose(1, 2), Y));
        return;
    }
    AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "batchedAtB", [&] {
        atbKernel<scalar_t>(X.data_ptr<scalar_t>(), X.stride(0), X.stride(1), Y.data_ptr<scalar_t>(), Y.stride(0),
                            Y.stride(1), out.data_ptr<scalar_t>(), B, m, D, D2);
    });
}

void batchedAB(const torch::Tensor& X, const torch::Tensor& M, torch::Tensor& out, bool accumulate)
{
    TORCH_CHECK(X.dim() == 3 && M.dim() == 3 && X.size(0) == M.size(0) && X.size(2) == M.size(1),
                "batchedAB: X [B, m, D] and M [B, D, D'] expected, got ", X.sizes(), " and ", M.sizes());
    const int64_t B = X.size(0), m = X.size(1), D = X.size(2), D2 = M.size(2);
    TORCH_CHECK(out.defined() && out.dim() == 3 && out.size(0) == B && out.size(1) == m && out.size(2) == D2,
                "batchedAB: out must be [B, m, D']");
    if (!X.device().is_cpu() || !rowsContiguous(X) || !M.is_contiguous() || !rowsContiguous(out)) {
        if (accumulate)
            out.baddbmm_(X, M);
        else
            out.copy_(torch::bmm(X, M));
        return;
    }
    AT_DISPATCH_FLOATING_TYPES(X.scalar_type(), "batchedAB", [&] {
        abKernel<scalar_t>(X.data_ptr<scalar_t>(), X.stride(0), X.stride(1), M.data_ptr<scalar_t>(), M.stride(0),
                           out.data_ptr<scalar_t>(), out.stride(0), out.stride(1), B, m, D, D2, accumulate);
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
    m_layers.assign(size_t(K + 1), LayerBuffers{});
    for (int64_t l = 0; l <= K; ++l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        lb.e = torch::empty({B, T, D}, opts);
        if (l < K) {
            lb.g = torch::empty({B, D, D}, opts);
            lb.f = torch::empty({B * T, H * D}, opts);
            lb.r = torch::empty({B * T, H * D}, opts);
        }
    }
    m_eBar = torch::empty({B, T, D}, opts);
    m_eBarNext = torch::empty({B, T, D}, opts);
    m_rBar = torch::empty({B * T, H * D}, opts);
    m_gBar = torch::empty({B, D, D}, opts);
    m_gSym = torch::empty({B, D, D}, opts);
    m_fBar = torch::empty({B * T, H * D}, opts);
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
        // A_h = W_Qᵀ W_K laid side by side: Acat[:, h·D:(h+1)·D] = A_h.
        m_acat[size_t(b)] = torch::bmm(w.w_q.transpose(1, 2), w.w_k).permute({1, 0, 2}).reshape({D, H * D});
        // B_h = W_Vᵀ W_Oᵀ stacked: Bcat[h·D:(h+1)·D, :] = B_h.
        m_bcat[size_t(b)] = torch::bmm(w.w_v.transpose(1, 2), w.w_o.transpose(1, 2)).reshape({H * D, D});
    }
}

torch::Tensor FusedLsa::tokens(const PromptBatch& batch)
{
    const LsaLayerWeights& w = m_model.layer(0);
    PromptBatch b = batch;
    if (batch.x.scalar_type() != w.w_q.scalar_type() || batch.x.device() != w.w_q.device()) {
        const auto to = w.w_q.options();
        b.x = batch.x.to(to);
        b.y = batch.y.to(to);
    }
    return m_model.embed(b);  // [B, T, dataDim()]
}

torch::Tensor FusedLsa::forward(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    const LsaOptions& o = m_model.options();
    const torch::Tensor data = tokens(batch);
    const int64_t B = data.size(0), T = data.size(1), D = o.tokenDim(), H = o.n_heads;
    const int64_t n = m_model.contextTokens(batch.nContext());
    allocate(B, T, n, data.options());
    prepareWeights();
    torch::Tensor& e0 = m_layers[0].e;
    if (o.pos_dim > 0) {
        e0.narrow(2, 0, o.dataDim()).copy_(data);
        e0.narrow(2, o.dataDim(), o.pos_dim).copy_(m_position.unsqueeze(0).expand({B, T, o.pos_dim}));
    } else {
        e0.copy_(data);
    }
    for (int64_t l = 0; l < o.n_layers; ++l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        const torch::Tensor& acat = m_acat[o.tied ? 0 : size_t(l)];
        const torch::Tensor& bcat = m_bcat[o.tied ? 0 : size_t(l)];
        const torch::Tensor ctx = lb.e.narrow(1, 0, n);                  // C [B, n, D]
        batchedAtB(ctx, ctx, lb.g);                                       // G = CᵀC
        torch::mm_out(lb.f, lb.e.view({B * T, D}), acat);                // F = E·Acat
        torch::Tensor fView = lb.f.view({B, T * H, D}), rView = lb.r.view({B, T * H, D});
        batchedAB(fView, lb.g, rView, false);                             // R = F G
        torch::addmm_out(m_layers[size_t(l) + 1].e.view({B * T, D}), lb.e.view({B * T, D}), lb.r, bcat);  // E' = E + R·Bcat
    }
    return m_layers.back().e;
}

torch::Tensor FusedLsa::predict(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    return m_model.readout(forward(batch)).clone();
}

torch::Tensor FusedLsa::lossAndGrad(const PromptBatch& batch)
{
    torch::NoGradGuard noGrad;
    const LsaOptions& o = m_model.options();
    const torch::Tensor eK = forward(batch);
    const int64_t B = m_B, T = m_T, n = m_n, D = o.tokenDim(), H = o.n_heads, K = o.n_layers;
    const int64_t ySlot = m_model.ySlot();

    // r = ŷ − y with ŷ = −E_K[:, T−1, y-slot]; L = ½·mean r²; ∂L/∂E_K[b, T−1, y-slot] = −r_b / B.
    const torch::Tensor target = batch.queryY().to(eK.options());
    const torch::Tensor r = -(eK.select(1, T - 1).select(1, ySlot) + target);
    const torch::Tensor loss = 0.5 * r.pow(2).mean();
    m_eBar.zero_();
    m_eBar.select(1, T - 1).select(1, ySlot).copy_(r * (-1.0 / double(B)));

    const int64_t blocks = o.tied ? 1 : K;
    std::vector<torch::Tensor> dAcat(size_t(blocks)), dBcat(size_t(blocks));
    for (int64_t l = K - 1; l >= 0; --l) {
        LayerBuffers& lb = m_layers[size_t(l)];
        const size_t blk = o.tied ? 0 : size_t(l);
        const torch::Tensor eBar2d = m_eBar.view({B * T, D});
        // dBcat = Rᵀ Ē'
        torch::Tensor dB = torch::mm(lb.r.t(), eBar2d);
        dBcat[blk] = dBcat[blk].defined() ? dBcat[blk].add_(dB) : dB;
        // R̄ = Ē' Bcatᵀ
        torch::mm_out(m_rBar, eBar2d, m_bcat[blk].t());
        torch::Tensor fView = lb.f.view({B, T * H, D}), rBarView = m_rBar.view({B, T * H, D});
        batchedAtB(fView, rBarView, m_gBar);                              // Ḡ = Fᵀ R̄
        torch::Tensor fBarView = m_fBar.view({B, T * H, D});
        batchedAB(rBarView, lb.g, fBarView, false);                       // F̄ = R̄ G (G = Gᵀ)
        // dAcat = Eᵀ F̄
        torch::Tensor dA = torch::mm(lb.e.view({B * T, D}).t(), m_fBar);
        dAcat[blk] = dAcat[blk].defined() ? dAcat[blk].add_(dA) : dA;
        if (l == 0)
            break;  // the tokens themselves need no gradient
        // Ē = Ē' + F̄ Acatᵀ + [C (Ḡ + Ḡᵀ); 0]
        torch::addmm_out(m_eBarNext.view({B * T, D}), eBar2d, m_fBar, m_acat[blk].t());
        torch::add_out(m_gSym, m_gBar, m_gBar.transpose(1, 2));
        torch::Tensor eBarCtx = m_eBarNext.narrow(1, 0, n);
        batchedAB(lb.e.narrow(1, 0, n), m_gSym, eBarCtx, true);
        std::swap(m_eBar, m_eBarNext);
    }

    for (int64_t b = 0; b < blocks; ++b) {
        LsaLayerWeights& w = m_model.layer(b);
        const torch::Tensor aBar = dAcat[size_t(b)].view({D, H, D}).permute({1, 0, 2});  // Ā_h [H, D, D]
        const torch::Tensor bBar = dBcat[size_t(b)].view({H, D, D});                     // B̄_h [H, D, D]
        setGrad(w.w_q, torch::bmm(w.w_k, aBar.transpose(1, 2)));               // W_K Āᵀ
        setGrad(w.w_k, torch::bmm(w.w_q, aBar));                               // W_Q Ā
        setGrad(w.w_v, torch::bmm(w.w_o.transpose(1, 2), bBar.transpose(1, 2)));  // W_Oᵀ B̄ᵀ
        setGrad(w.w_o, torch::bmm(bBar.transpose(1, 2), w.w_v.transpose(1, 2)));  // B̄ᵀ W_Vᵀ
    }
    return loss;
}

} // namespace icl
