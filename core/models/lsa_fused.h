#pragma once
// Fused closed-form training step of the linear LSA stack (von Oswald et al. 2022, PAPERS.md §1).
// Core-internal (LibTorch). Derivation: docs/fused-lsa.md.
//
// A linear layer maps tokens E [B, T, D] (first n rows in context) to
//   E' = E + Σ_h E A_h G B_h,   A_h = W_Qᵀ W_K,   B_h = W_Vᵀ W_Oᵀ,   G = Cᵀ C,   C = E[:, :n]
// (rows are tokens; per prompt G [D, D] is the Gram matrix of the in-context tokens), which is the
// layer of core/models/lsa.h, e_j ← e_j + Σ_h P_h W_V^h Σ_{i≤n} e_i (W_K^h e_i)ᵀ (W_Q^h e_j), with the
// product re-associated. Per layer, with F = E [A_1 … A_H] viewed [B, T·H, D] and R = F G:
//   forward   G = CᵀC,  F = E·Acat,  R = F G,  E' = E + R·Bcat
//   backward  dBcat = Rᵀ Ē',  R̄ = Ē' Bcatᵀ,  Ḡ = Fᵀ R̄,  F̄ = R̄ G,  dAcat = Eᵀ F̄,
//             Ē = Ē' + F̄ Acatᵀ + [C (Ḡ + Ḡᵀ); 0]
//   weights   dW_Q = W_K Āᵀ,  dW_K = W_Q Ā,  dW_V = W_Oᵀ B̄ᵀ,  dW_O = B̄ᵀ W_Vᵀ   (per head)
// where Acat = [A_1 … A_H] [D, H·D], Bcat = [B_1; …; B_H] [H·D, D], and the products over all B·T rows
// are single GEMMs; only G, R, Ḡ, F̄ and C(Ḡ+Ḡᵀ) are per-prompt products (tight loops over the batch
// on the CPU, batched GEMMs elsewhere). The loss is L = ½·mean_b (ŷ_b − y_b)² with ŷ = −(y-slot of the
// query token after the last layer), so Ē_K is zero except Ē_K[b, T−1, y-slot] = −(ŷ_b − y_b)/B.

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
/// attention weights and their grad(), so the model must not be used concurrently either.
class FusedLsa {
public:
    /// True when the fused path computes exactly the model of `options`; otherwise false and, when
    /// `why` is given, the reason ("softmax layers", "LayerNorm", "MLP", "representation φ").
    static bool supports(const LsaOptions& options, std::string* why = nullptr);

    /// Binds to `model` (kept by reference: it must outlive this object). Throws icl::Error naming
    /// the option when supports(model.options()) is false.
    explicit FusedLsa(LsaImpl& model);

    /// Loss L = ½·mean_b (ŷ_b − y_q,b)² of `batch` (x [B, N+1, d], y [B, N+1], in the model's dtype
    /// and on its device) and its gradient: every attention weight's grad() is set to ∂L/∂W (previous
    /// contents overwritten, allocated when undefined). Returns L as a 0-dim tensor without a graph.
    /// Equals halfMse(model.predict(batch), batch.queryY()) followed by backward().
    torch::Tensor lossAndGrad(const PromptBatch& batch);

    /// ŷ_q [B] of `batch` without a graph (the same as model.predict up to rounding).
    torch::Tensor predict(const PromptBatch& batch);

private:
    struct LayerBuffers {
        torch::Tensor e;  ///< input tokens of the layer [B, T, D]
        torch::Tensor g;  ///< Gram matrix of its context tokens [B, D, D]
        torch::Tensor f;  ///< E·Acat [B·T, H·D]
        torch::Tensor r;  ///< F G [B·T, H·D]
    };
    void allocate(int64_t B, int64_t T, int64_t n, const torch::TensorOptions& opts);
    void prepareWeights();
    torch::Tensor tokens(const PromptBatch& batch);
    torch::Tensor forward(const PromptBatch& batch);  ///< fills the layer buffers; returns E_K

    LsaImpl& m_model;
    int64_t m_B = -1, m_T = -1, m_n = -1;
    torch::TensorOptions m_opts;
    std::vector<LayerBuffers> m_layers;  ///< K + 1 entries; the last holds only e = E_K
    std::vector<torch::Tensor> m_acat, m_bcat;  ///< per block: [D, H·D], [H·D, D]
    torch::Tensor m_eBar, m_eBarNext, m_rBar, m_gBar, m_fBar, m_gSym;
    torch::Tensor m_position;  ///< [T, pos_dim] position code (when the model has one)
};

/// Per-prompt products of the fused LSA path, exposed for tests. X [B, m, D] (rows contiguous, any
/// batch stride), Y [B, m, D'], M [B, D, D']. batchedAtB returns out_b = X_bᵀ Y_b [B, D, D'];
/// batchedAB writes out_b (+)= X_b M_b into `out` [B, m, D'] (accumulating when `accumulate`).
/// On the CPU tight loops parallel over b; elsewhere torch::bmm. Float and double.
void batchedAtB(const torch::Tensor& X, const torch::Tensor& Y, torch::Tensor& out);
void batchedAB(const torch::Tensor& X, const torch::Tensor& M, torch::Tensor& out, bool accumulate);

} // namespace icl
