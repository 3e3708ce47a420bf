#include "core/models/lsa_construction.h"

#include "core/error.h"

namespace icl {

namespace {

/// Zeroes every head of layer `w` and sets head 0's W_K = W_Q = [[I_d, 0], [0, 0]] (compare x parts only).
/// Returns that x-projection [D, D].
torch::Tensor resetToXProjection(LsaLayerWeights& w, int64_t D)
{
    const int64_t d = D - 1;
    for (torch::Tensor* t : {&w.w_q, &w.w_k, &w.w_v, &w.w_o})
        t->zero_();
    const auto opts = w.w_q.options();
    torch::Tensor xProj = torch::zeros({D, D}, opts);
    xProj.narrow(0, 0, d).narrow(1, 0, d).copy_(torch::eye(d, opts));
    w.w_q[0].copy_(xProj);
    w.w_k[0].copy_(xProj);
    return xProj;
}

} // namespace

void applyGdConstruction(LsaImpl& model, double eta, int64_t n_context)
{
    if (!model.options().plain())
        throw Error("the GD construction (Proposition 1) is defined for the plain LSA only");
    torch::NoGradGuard guard;
    const int64_t D = model.tokenDim();
    const int64_t d = D - 1;
    for (int64_t l = 0; l < model.nLayers(); ++l) {
        LsaLayerWeights& w = model.layer(l);
        resetToXProjection(w, D);
        w.w_v[0][d][d] = -1.0;
        w.w_o[0].copy_(torch::eye(D, w.w_o.options()) * (eta / double(n_context)));
    }
}

void applyGdPlusPlusConstruction(LsaImpl& model, const std::vector<double>& eta, const std::vector<double>& gamma,
                                 int64_t n_context)
{
    if (!model.options().plain())
        throw Error("the GD++ construction is defined for the plain LSA only");
    const size_t layers = model.tied() ? 1 : size_t(model.nLayers());
    if (eta.size() != layers || gamma.size() != layers)
        throw Error("GD++ construction: expected " + std::to_string(layers) + " values of η and γ, got "
                    + std::to_string(eta.size()) + " and " + std::to_string(gamma.size()));
    torch::NoGradGuard guard;
    const int64_t D = model.tokenDim();
    const int64_t d = D - 1;
    for (size_t l = 0; l < layers; ++l) {
        LsaLayerWeights& w = model.layer(int64_t(l));
        w.w_v[0].copy_(resetToXProjection(w, D));
        w.w_v[0][d][d] = -1.0;
        torch::Tensor p = torch::eye(D, w.w_o.options()) * (-gamma[l]);
        p[d][d] = eta[l] / double(n_context);
        w.w_o[0].copy_(p);
    }
}

} // namespace icl
