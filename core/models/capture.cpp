#include "core/models/capture.h"

#include "core/error.h"
#include "core/models/names.h"

namespace icl {

namespace {

std::string describe(const Intervention& iv)
{
    std::string s = "intervention on \"" + iv.name + "\"";
    if (iv.head >= 0)
        s += " head " + std::to_string(iv.head);
    if (iv.position >= 0)
        s += " position " + std::to_string(iv.position);
    return s;
}

/// The new values of a slice `current` (whole target [B, T, D] or one position [B, D]).
torch::Tensor replacement(const Intervention& iv, const torch::Tensor& current)
{
    switch (iv.kind) {
    case Intervention::Kind::Zero: return torch::zeros_like(current);
    case Intervention::Kind::Mean:
        if (!iv.value.defined())
            return current.mean(0, true).expand_as(current);
        [[fallthrough]];
    case Intervention::Kind::Replace: break;
    }
    try {
        return iv.value.to(current.options()).expand_as(current);
    } catch (const c10::Error&) {
        std::ostringstream msg;
        msg << describe(iv) << ": value of shape " << iv.value.sizes() << " does not fit the target " << current.sizes();
        throw Error(msg.str());
    }
}

/// `t` [B, T, D] with `iv` applied (whole tensor or one position along dim 1).
torch::Tensor applyOne(const Intervention& iv, const torch::Tensor& t)
{
    if (iv.position < 0)
        return replacement(iv, t);
    torch::Tensor out = t.clone();
    out.select(1, iv.position).copy_(replacement(iv, t.select(1, iv.position)));
    return out;
}

} // namespace

std::pair<std::string, int64_t> splitActivationName(const std::string& name)
{
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || dot + 1 >= name.size())
        return {name, -1};
    const std::string suffix = name.substr(dot + 1);
    if (suffix.find_first_not_of("0123456789") != std::string::npos || suffix.size() > 9)
        return {name, -1};
    return {name.substr(0, dot), std::stoll(suffix)};
}

bool ActivationCapture::hasHeadIntervention(const std::string& name) const
{
    for (const Intervention& iv : interventions)
        if (iv.head >= 0 && iv.name == name)
            return true;
    return false;
}

torch::Tensor ActivationCapture::apply(const std::string& name, const torch::Tensor& t) const
{
    torch::Tensor out = t;
    for (const Intervention& iv : interventions)
        if (iv.head < 0 && iv.name == name)
            out = applyOne(iv, out);
    return out;
}

torch::Tensor ActivationCapture::applyHeads(const std::string& name, const torch::Tensor& result) const
{
    torch::Tensor out = result.clone();  // [B, H, T, D]
    for (const Intervention& iv : interventions)
        if (iv.head >= 0 && iv.name == name)
            out.select(1, iv.head).copy_(applyOne(iv, out.select(1, iv.head)));
    return out;
}

void checkInterventions(const std::vector<Intervention>& interventions, const InterventionTargets& m)
{
    for (const Intervention& iv : interventions) {
        const auto [base, layer] = splitActivationName(iv.name);
        const bool known = base == actBase(Act::AttnOut) || base == actBase(Act::MlpOut)
            || base == actBase(Act::ResidPre) || base == actBase(Act::ResidPost);
        if (!known || layer < 0)
            throw Error(describe(iv) + ": no such activation; expected attn.out.{l}, mlp.out.{l}, resid_pre.{l} or "
                        "resid_post.{l}");
        if (layer >= m.n_layers)
            throw Error(describe(iv) + ": the " + m.model + " model has " + std::to_string(m.n_layers)
                        + " layer(s), layers 0 to " + std::to_string(m.n_layers - 1));
        if (base == actBase(Act::MlpOut) && !m.mlp)
            throw Error(describe(iv) + ": this " + m.model + " model has no MLP");
        if (iv.head >= 0 && base != actBase(Act::AttnOut))
            throw Error(describe(iv) + ": a head can only be chosen in attn.out.{l}");
        if (iv.head >= m.n_heads || iv.head < -1)
            throw Error(describe(iv) + ": the " + m.model + " model has " + std::to_string(m.n_heads)
                        + " head(s) per layer, heads 0 to " + std::to_string(m.n_heads - 1));
        if (iv.position >= m.n_tokens || iv.position < -1)
            throw Error(describe(iv) + ": the prompt has " + std::to_string(m.n_tokens) + " tokens, positions 0 to "
                        + std::to_string(m.n_tokens - 1));
        if (iv.kind == Intervention::Kind::Replace && !iv.value.defined())
            throw Error(describe(iv) + ": replace needs a value");
    }
}

} // namespace icl
