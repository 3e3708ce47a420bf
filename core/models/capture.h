#pragma once
// Activation capture by name (DESIGN.md): embed, resid_pre.{l}, resid_post.{l}, attn.pattern.{l},
// attn.q.{l}, attn.k.{l}, attn.v.{l}, attn.out.{l}, mlp.out.{l}. Core-internal (LibTorch).

#include <map>
#include <set>
#include <string>

#include <torch/torch.h>

namespace icl {

/// What a forward pass should keep, and what it kept. Only requested names are stored (the tensors
/// stay attached to the autograd graph, so gradients with respect to them can be taken).
/// Thread affinity: one forward pass at a time.
struct ActivationCapture {
    std::set<std::string> names;   ///< requested names; empty with `all` = false captures nothing
    bool all = false;              ///< capture every name the model produces
    std::map<std::string, torch::Tensor> values;

    bool wants(const std::string& name) const { return all || names.count(name) > 0; }
    void offer(const std::string& name, const torch::Tensor& t)
    {
        if (wants(name))
            values[name] = t;
    }
};

} // namespace icl
