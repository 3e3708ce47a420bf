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

} // namespace icl
