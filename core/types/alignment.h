#pragma once
// Torch-free results of the GD-alignment analysis (von Oswald et al. 2022, §3 and Fig. 2).

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// How closely a model's predictions and sensitivities match a reference learning algorithm on the
/// same prompts. Sensitivities are s = ∂ŷ/∂x_q (gradient w.r.t. the query's x part), [d] per prompt.
struct AlignmentMetrics {
    double prediction_difference = 0.0;      ///< mean |ŷ_model − ŷ_ref|
    double model_cosine = 0.0;               ///< mean cos(s_model, s_ref), 1e-8 added to the norms
    double model_difference = 0.0;           ///< mean ‖s_model − s_ref‖₂
    double relative_model_difference = 0.0;  ///< mean ‖s_model − s_ref‖₂ / mean ‖s_ref‖₂
    double model_loss = 0.0;                 ///< 0.5·mean (ŷ_model − y_q)²
    double reference_loss = 0.0;             ///< 0.5·mean (ŷ_ref − y_q)²
};

/// Alignment of one checkpoint with one reference ("gd_1", "gd_3", …).
struct AlignmentResult {
    std::string reference;
    double reference_eta = 0.0;    ///< step size η of the GD reference
    int64_t checkpoint_step = 0;
    int64_t n_prompts = 0;
    AlignmentMetrics metrics;
    std::vector<double> model_predictions;      ///< first ≤ 2000 prompts, for scatter plots
    std::vector<double> reference_predictions;  ///< same prompts
};

/// The copy analysis of the interleaved layout (von Oswald et al. 2022, §4 "induction-head-like"
/// copying): G[k][j] = mean over prompts of ‖∂(layer-1 output at token k)/∂(input token j)‖_F, the
/// Jacobian of the whole output token with respect to the data part (x, y slots) of input token j.
/// A first layer that copies y_i into the x_i token shows a large G[k][k+1] for x-tokens k.
struct CopyAnalysis {
    int64_t checkpoint_step = 0;
    int64_t n_prompts = 0;
    int64_t tokens = 0;                ///< T = 2N + 1
    std::vector<double> gradient_norm; ///< G, T·T values, row-major (row = output token k, column = input token j)
    std::vector<std::string> token_labels;  ///< x₁, y₁, …, x_N, y_N, query
    double own = 0.0;    ///< mean over x-tokens k of G[k][k]
    double next = 0.0;   ///< mean over x-tokens k of G[k][k+1] (the token holding y_k)
    double other = 0.0;  ///< mean over x-tokens k and j ∉ {k, k+1} of G[k][j]
    double ownNextRatio() const { return next > 0 ? own / next : 0.0; }
    double nextOtherRatio() const { return other > 0 ? next / other : 0.0; }
};

} // namespace icl
