#pragma once
// Fused closed-form training step of the linear LSA stack (von Oswald et al. 2022, docs/science.md §1).
// Core-internal (LibTorch). Derivation: docs/fused-lsa.md.
//
// A linear layer E' = E + Σ_h E A_h G B_h (A_h = W_Qᵀ W_K, B_h = W_Vᵀ W_Oᵀ, G = CᵀC the Gram matrix of the
// in-context tokens) is the layer of core/models/lsa.h re-associated, so forward and backward are single GEMMs
// over all B·T rows plus a few per-prompt D × D products; the last layer is computed at the query token only.

#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/models/lsa.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// The closed-form forward and backward pass of an LSA model whose layers are all linear
/// (no softmax layer, LayerNorm, MLP or representation φ; single or multi-layer, tied or untied,
/// any number of heads, pair or interleaved layout, with or without sinusoidal positions). Holds
/// its work buffers between calls (reallocated only when the batch shape, dtype or device changes).
/// Thread affinity: one thread at a time (it owns mutable buffers); it reads and writes the model's
/// attention weights and their grad(), so the model must not be used concurrently either. On the CPU it
/// runs on the calling thread alone, whatever the intra-op thread count (ThisThreadIntraOpThreads(1),
/// core/runtime/blas.h; why: docs/performance.md, "The fused LSA step on one thread").
class FusedLsa {
public:
    /// True when the fused path computes exactly the model of `options`; otherwise false and, when
    /// `why` is given, the reason ("softmax layers", "LayerNorm", "MLP", "representation φ").
    static bool supports(const LsaOptions& options, std::string* why = nullptr);

    /// Binds to `model` (kept by reference: it must outlive this object). Throws icl::Error naming
    /// the option when supports(model.options()) is false.
    explicit FusedLsa(LsaImpl& model);

    /// Loss L = ½·mean_b (ŷ_b − y_q,b)² of `batch` (x [B, N+1, d], y [B, N+1]; converted to the model's
    /// dtype and device when they differ) and its gradient: every attention weight's grad() is set to ∂L/∂W (previous
    /// contents overwritten, allocated when undefined). Returns L as a 0-dim tensor without a graph.
    /// Equals halfMse(model.predict(batch), batch.queryY()) followed by backward().
    torch::Tensor lossAndGrad(const PromptBatch& batch);

    /// ŷ_q [B] of `batch` without a graph (the same as model.predict up to rounding).
    torch::Tensor predict(const PromptBatch& batch);

private:
    /// Per layer, feature-major (channel, token, prompt; prompts innermost). The last layer keeps F and R
    /// at the query token only (rows = 1), the others at every token (rows = T).
    struct LayerBuffers {
        torch::Tensor e;  ///< input tokens of the layer [D, T, B]
        torch::Tensor g;  ///< Gram matrix of its context tokens [D, D, B]
        torch::Tensor f;  ///< Acatᵀ E [H·D, rows, B]
        torch::Tensor r;  ///< F G [H·D, rows, B]
    };
    void allocate(int64_t B, int64_t T, int64_t n, const torch::TensorOptions& opts);
    void prepareWeights();
    torch::Tensor forward(const PromptBatch& batch);  ///< fills the layer buffers; returns E_K at the query [D, B]

    LsaImpl& m_model;
    int64_t m_B = -1, m_T = -1, m_n = -1;
    torch::TensorOptions m_opts;
    std::vector<LayerBuffers> m_layers;         ///< K entries
    std::vector<torch::Tensor> m_acat, m_bcat;  ///< per block: [D, H·D], [H·D, D]
    torch::Tensor m_eQuery;                     ///< E_K at the query token [D, B]
    torch::Tensor m_eBar, m_eBarNext;           ///< ∂L/∂E of a layer's output and input [D, T, B]
    torch::Tensor m_rBar, m_fBar;               ///< [H·D, T, B]
    torch::Tensor m_gBar, m_gSym;               ///< Ḡ and Ḡ + Ḡᵀ [D, D, B]
    torch::Tensor m_position;                   ///< [T, pos_dim] position code (when the model has one)
};

/// Per-prompt products of the fused LSA path (exposed for tests), on feature-major operands
/// [channels, tokens, B] whose prompts are contiguous (stride 1) and tokens B apart; only the first `rows`
/// tokens are read or written. With H = `heads`:
///   batchedAtB: out[k][j][b] = Σ_h Σ_{t<rows} X[h·D+k][t][b] · Y[h·D'+j][t][b]  (X [H·D, ≥rows, B],
///               Y [H·D', ≥rows, B]; out [D, D', B], reallocated when it does not fit);
///   batchedAB:  out[h·D'+a][t][b] (+)= Σ_k X[h·D+k][t][b] · M[k][a][b]  (X [H·D, ≥rows, B], M [D, D', B],
///               out [H·D', ≥rows, B]; accumulating when `accumulate`).
/// On the CPU loops over rows of prompts (AVX2/FMA where the CPU has it), parallel over chunks of prompts;
/// elsewhere (or for other strides) torch::einsum. Float and double. Throws c10::Error for wrong shapes.
void batchedAtB(const torch::Tensor& X, const torch::Tensor& Y, int64_t heads, int64_t rows, torch::Tensor& out);
void batchedAB(const torch::Tensor& X, const torch::Tensor& M, int64_t heads, int64_t rows, torch::Tensor& out,
               bool accumulate);

} // namespace icl
