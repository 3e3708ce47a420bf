#pragma once
// The one builder of activation and weight names (like TransformerLens' utils.get_act_name): every name
// a model offers to ActivationCapture, every name an analysis asks for, and the parameter names the
// models register (hence the names stored in experiment files and exported weights) come from here.
// Torch-free; safe to include from the app. docs/file-format.md lists the names.
//
//   actName(Act::ResidPost, 3)           // "resid_post.3"
//   actName(Act::Embed)                  // "embed"
//   attnWeightPath(ModelKind::Gpt2, 0, AttnWeight::Q)   // "blocks.0.attn.W_Q"
//   attnWeightPath(ModelKind::Lsa, 0, AttnWeight::Q)    // "blocks.0.attn.w_q"
//
// lsa spells its attention weights w_q, w_k, w_v, w_o, gpt2 W_Q, … with biases b_Q, …: stored in files, so
// kept; attnWeightName is the one place that knows which model uses which.

#include <cstdint>
#include <string>

#include "core/io/kinds.h"

namespace icl {

/// Activations a model offers (shapes for a batch of B prompts of T tokens, width D, H heads):
///   Embed        "embed"            [B, T, D]     the residual stream before the first layer
///   ResidPre     "resid_pre.{l}"    [B, T, D]     the residual stream entering layer l
///   ResidPost    "resid_post.{l}"   [B, T, D]     the residual stream leaving layer l
///   AttnQ/K/V    "attn.q.{l}", …    [B, H, T, dh] queries, keys, values of layer l (lsa: dh = D)
///   AttnPattern  "attn.pattern.{l}" [B, H, T, T]  attention weights of layer l
///   AttnOut      "attn.out.{l}"     [B, T, D]     what layer l's attention adds to the residual stream
///   AttnResult   "attn.result.{l}"  [B, H, T, D]  each head's part of attn.out.{l}
///   MlpOut       "mlp.out.{l}"      [B, T, D]     what layer l's MLP adds (models with an MLP)
enum class Act { Embed, ResidPre, ResidPost, AttnQ, AttnK, AttnV, AttnPattern, AttnOut, AttnResult, MlpOut };

/// The name without the layer: "embed", "resid_pre", "attn.pattern", …
inline const char* actBase(Act a)
{
    switch (a) {
    case Act::Embed: return "embed";
    case Act::ResidPre: return "resid_pre";
    case Act::ResidPost: return "resid_post";
    case Act::AttnQ: return "attn.q";
    case Act::AttnK: return "attn.k";
    case Act::AttnV: return "attn.v";
    case Act::AttnPattern: return "attn.pattern";
    case Act::AttnOut: return "attn.out";
    case Act::AttnResult: return "attn.result";
    case Act::MlpOut: return "mlp.out";
    }
    return "?";
}

/// The activation's name: "{base}.{layer}" (layer 0-based), or the base alone for Embed / layer < 0.
inline std::string actName(Act a, int64_t layer = -1)
{
    if (a == Act::Embed || layer < 0)
        return actBase(a);
    return std::string(actBase(a)) + "." + std::to_string(layer);
}

/// The attention weights of a layer (Elhage et al. 2021's W_Q, W_K, W_V, W_O).
enum class AttnWeight { Q, K, V, O };

/// The parameter name of an attention weight inside a layer's "attn" module, as each model kind
/// registers it: lsa "w_q", "w_k", "w_v", "w_o"; gpt2 "W_Q", "W_K", "W_V", "W_O". Other kinds have
/// no attention weights ("").
inline const char* attnWeightName(ModelKind kind, AttnWeight w)
{
    static const char* lsa[] = {"w_q", "w_k", "w_v", "w_o"};
    static const char* gpt2[] = {"W_Q", "W_K", "W_V", "W_O"};
    const auto i = static_cast<int>(w);
    return kind == ModelKind::Lsa ? lsa[i] : kind == ModelKind::Gpt2 ? gpt2[i] : "";
}

/// "blocks.{layer}." — the prefix of every parameter of a transformer layer (both models).
inline std::string blockPrefix(int64_t layer) { return "blocks." + std::to_string(layer) + "."; }

/// Full parameter name of an attention weight: "blocks.{layer}.attn.{attnWeightName}".
inline std::string attnWeightPath(ModelKind kind, int64_t layer, AttnWeight w)
{
    return blockPrefix(layer) + "attn." + attnWeightName(kind, w);
}

} // namespace icl
