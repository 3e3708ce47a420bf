#pragma once
// The exact LSA weights that implement gradient descent (von Oswald et al. 2022, Proposition 1).
// Core-internal.

#include <vector>

#include "core/models/lsa.h"

namespace icl {

/// Sets every layer of `model` (head 0; other heads zero) to the GD construction with W_0 = 0:
///   W_K = W_Q = [[I_d, 0], [0, 0]],  W_V = [[0, 0], [0, −1]],  P = (η/N)·I_{d+1}.
/// One layer then maps each token (x_j, y_j) to (x_j, y_j − ΔW x_j) with ΔW = (η/N)·Σ y_i x_iᵀ, so the
/// query's prediction equals one GD step of size η; K layers equal K GD steps with one shared η.
void applyGdConstruction(LsaImpl& model, double eta, int64_t n_context);

/// Sets layer l of `model` (head 0; other heads zero; untied, or tied with one (η, γ)) to the GD++
/// construction (von Oswald et al. 2022, §4) with W_0 = 0:
///   W_K = W_Q = [[I_d, 0], [0, 0]],  W_V = [[I_d, 0], [0, −1]],  P = diag(−γ_l·I_d, η_l/N),
/// so each layer maps x_j ← x_j − γ_l·Σ x_i x_iᵀ x_j and y_j ← y_j − (η_l/N)·Σ y_i x_iᵀ x_j.
/// `eta` and `gamma` hold one value per layer (one value when the model is tied).
/// Throws icl::Error when their sizes do not match the model.
void applyGdPlusPlusConstruction(LsaImpl& model, const std::vector<double>& eta, const std::vector<double>& gamma,
                                 int64_t n_context);

} // namespace icl
