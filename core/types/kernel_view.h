#pragma once
// Torch-free results of the kernel view of softmax attention (Ren & Liu 2023, docs/science.md §3): how well
// the reference ("dual") model after one GD step reproduces a softmax-attention layer, exactly and with
// m positive random features, and the reference model's training loss along GD steps.

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// Errors of an approximation against softmax attention, one entry per head (one entry when the
/// inputs had no head dimension). Each is pooled over the batch, the queries and the last axis.
struct KernelErrors {
    std::vector<double> output_mse;         ///< mean (ô − o)² of the outputs [.., T, Dv]
    std::vector<double> output_max_abs;     ///< max |ô − o|
    std::vector<double> attention_mse;      ///< mean (Â − A)² of the attention matrices [.., T, N]
    std::vector<double> attention_max_abs;  ///< max |Â − A|
};

/// One error measure against the number of random features m: mean and spread over the seeds and the
/// least-squares line log(mean) = intercept + slope·log(m). Random features give slope ≈ −0.5.
struct KernelErrorCurve {
    std::vector<double> mean;  ///< [m.size()] mean over seeds
    std::vector<double> std;   ///< [m.size()] sample standard deviation over seeds (0 for one seed)
    double slope = 0.0;        ///< NaN when fewer than two distinct m
    double intercept = 0.0;    ///< natural log; NaN when fewer than two distinct m
};

/// Random-feature error sweep over m (error vs m on log-log axes with the fitted slope).
/// RMSE = √MSE so that every curve falls as m^{-1/2}.
struct KernelSweep {
    std::vector<int64_t> m;              ///< numbers of random features, in the order swept
    int64_t seeds = 0;                   ///< random-feature draws per m
    KernelErrorCurve output_rmse;        ///< √mean (ô − o)² of the outputs
    KernelErrorCurve output_max_abs;     ///< max |ô − o|
    KernelErrorCurve attention_rmse;     ///< √mean (Â − A)² of the attention matrices
    KernelErrorCurve attention_max_abs;  ///< max |Â − A|
    double exact_output_max_abs = 0.0;     ///< exact-kernel reference model vs softmax attention (≈ 1e-16)
    double exact_attention_max_abs = 0.0;  ///< same for the attention matrices
};

/// Training loss of the reference model along GD steps, averaged over queries (see
/// referenceModelLoss in core/analysis/kernel_attention.h for the loss and the step size).
struct ReferenceLossCurve {
    std::string kernel;         ///< "exact" or "random_features"
    int64_t m = 0;              ///< number of random features (0 for the exact kernel)
    double lambda = 0.0;        ///< norm-penalty strength λ
    std::vector<int64_t> step;  ///< 0, 1, …, steps
    std::vector<double> loss;   ///< [step.size()] mean over queries of L_λ(W_s)
};

} // namespace icl
