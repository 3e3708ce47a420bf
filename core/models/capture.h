#pragma once
// Activation capture by name (docs/architecture.md; the names are built by actName, core/models/names.h): embed,
// resid_pre.{l}, resid_post.{l}, attn.pattern.{l}, attn.q.{l}, attn.k.{l}, attn.v.{l}, attn.out.{l},
// attn.result.{l}, mlp.out.{l}; and interventions
// (replace, zero- or mean-ablate) on a layer's output, one head's part of it or a (layer, position)
// slice of the residual stream. Core-internal (LibTorch).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace icl {

/// One intervention during a forward pass (docs/architecture.md "Activation names and interventions").
/// Targets, [B, T, D]: "attn.out.{l}" (with head ≥ 0 only head h's part z_h W_O^h; the output bias stays),
/// "mlp.out.{l}", "resid_pre.{l}", "resid_post.{l}"; with position ≥ 0 only that token position.
/// Kinds: Zero (the slice becomes 0); Mean (it becomes `value` when defined, e.g. a caller's mean over a
/// reference batch, else its mean over this pass's batch dimension, per position); Replace (it becomes
/// `value`). `value` must broadcast to the slice: [B, T, D] / [T, D] / [D] for a whole target, [B, D] / [D]
/// for one position (a head's part has the same shapes as attn.out).
struct Intervention {
    enum class Kind { Replace, Zero, Mean };
    Kind kind = Kind::Zero;
    std::string name;
    int64_t head = -1;
    int64_t position = -1;
    torch::Tensor value;
};

/// What a forward pass should keep, and what it kept, plus the interventions it applies. Only
/// requested names are stored (the tensors stay attached to the autograd graph, so gradients with
/// respect to them can be taken). Captured values are taken after the interventions.
/// Thread affinity: one forward pass at a time.
struct ActivationCapture {
    std::set<std::string> names;   ///< requested names; empty with `all` = false captures nothing
    bool all = false;              ///< capture every name the model produces
    std::map<std::string, torch::Tensor> values;
    std::vector<Intervention> interventions;  ///< applied in order

    bool wants(const std::string& name) const { return all || names.count(name) > 0; }
    void offer(const std::string& name, const torch::Tensor& t)
    {
        if (wants(name))
            values[name] = t;
    }
    /// True when some intervention changes one head's part of `name` (an attn.out.{l}).
    bool hasHeadIntervention(const std::string& name) const;
    /// `t` [B, T, D] with every whole-target intervention on `name` (head < 0) applied, in order;
    /// `t` itself when none matches.
    torch::Tensor apply(const std::string& name, const torch::Tensor& t) const;
    /// Per-head parts `result` [B, H, T, D] of `name` with every head intervention on it applied.
    torch::Tensor applyHeads(const std::string& name, const torch::Tensor& result) const;
};

/// What a model offers to interventions, for checkInterventions.
struct InterventionTargets {
    std::string model;  ///< "gpt2", "lsa" (for messages)
    int64_t n_layers = 0;
    int64_t n_heads = 0;
    bool mlp = false;
    int64_t n_tokens = 0;  ///< T of the forward pass
};

/// Throws icl::Error naming the intervention when one of `interventions` matches nothing the model
/// computes: an unknown name, a layer ≥ n_layers, a head outside [0, H) or on anything but attn.out,
/// mlp.out on a model without MLP, a position outside [0, T), or Replace without a value.
void checkInterventions(const std::vector<Intervention>& interventions, const InterventionTargets& targets);

/// Splits "attn.out.3" into ("attn.out", 3); layer −1 when the name has no numeric suffix.
std::pair<std::string, int64_t> splitActivationName(const std::string& name);

} // namespace icl
