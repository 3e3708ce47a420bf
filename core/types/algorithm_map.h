#pragma once
// Torch-free result of the algorithm map (docs/science.md §5, "Which algorithm does each layer run?"): every layer
// of a model against steps of GD, GD++, Iterative Newton and ridge over a λ path, by the similarity of errors and of
// induced weights (Fu et al. 2023), with the best-matching step per layer and its fit over the middle layers.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace icl {

/// Least-squares line y = intercept + slope·ℓ through the best steps of the middle layers, with Spearman's rank
/// correlation of (ℓ, k*). `kind` says what y is: "linear" (y = k*, Newton, GD++), "log_linear" (y = log10 k*,
/// GD) or "log_lambda" (y = log10 λ*, ridge). NaN fields when fewer than two middle layers have a best step; r2 and
/// spearman are NaN also when only two have one (any two points lie on a line) or the best steps do not vary.
struct AlgorithmMapFit {
    std::string kind;
    int64_t first_layer = 0;  ///< middle layers first_layer … last_layer (1-based)
    int64_t last_layer = 0;
    double slope = std::numeric_limits<double>::quiet_NaN();
    double intercept = std::numeric_limits<double>::quiet_NaN();
    double r2 = std::numeric_limits<double>::quiet_NaN();
    double spearman = std::numeric_limits<double>::quiet_NaN();
};

/// One algorithm family on the map: steps × layers of both similarities. Matrices are row-major
/// [layers × steps] (row ℓ − 1 is layer ℓ). An unavailable family (e.g. GD++ on a run without fitted GD++
/// scalars) has no steps and `unavailable` says why.
struct AlgorithmFamilyMap {
    std::string family;               ///< "gd", "gdpp", "newton", "ridge"
    std::string step_name;            ///< "k" (iterations or layers of GD++) or "lambda" (ridge penalty)
    std::vector<double> steps;        ///< the grid: k = 1 … (GD: log-spaced), ridge λ from large to small
    std::vector<double> sim_errors;   ///< similarity of errors [layers × steps]
    std::vector<double> sim_weights;  ///< similarity of induced weights [layers × steps]
    std::vector<double> best_step;        ///< per layer: the step with the largest sim_errors
    std::vector<double> best_similarity;  ///< per layer: that similarity
    std::vector<double> best_step_weights;  ///< per layer: the step with the largest sim_weights
    AlgorithmMapFit fit;         ///< the family's own fit of best_step over the middle layers (see AlgorithmMapFit)
    AlgorithmMapFit fit_linear;  ///< a linear fit (y = k*) for every family, to compare R² across families
    std::string unavailable;     ///< non-empty: why this family is not on the map
    bool available() const { return unavailable.empty(); }
    int64_t nSteps() const { return int64_t(steps.size()); }
    double errorsAt(int64_t layerIndex, int64_t step) const { return sim_errors[size_t(layerIndex * nSteps() + step)]; }
    double weightsAt(int64_t layerIndex, int64_t step) const { return sim_weights[size_t(layerIndex * nSteps() + step)]; }
};

/// The map of one checkpoint.
struct AlgorithmMap {
    int64_t checkpoint_step = 0;
    std::vector<int64_t> layers;  ///< 1 … L: the prediction read after this many layers
    std::vector<AlgorithmFamilyMap> families;  ///< "gd", "gdpp", "newton", "ridge" in this order
    /// How layer predictions are read: "y_slot" (LSA: −(y-slot of the query), exact) or "probe" (GPT-2: a ridge
    /// probe per layer on the residual stream at the x tokens, fitted on other prompts).
    std::string readout;
    /// Where residuals live: "prefixes" (per prompt, over the predictions from the first i = 1 … N examples) or
    /// "query" (the model predicts only at the query: one residual per prompt, the cosine is taken over prompts).
    std::string positions;
    int64_t n_prompts = 0;          ///< evaluation prompts of the similarity of errors
    int64_t n_fit_prompts = 0;      ///< prompts the probes were fitted on (0 for the y-slot read-out)
    int64_t n_weight_contexts = 0;  ///< contexts of the similarity of induced weights
    int64_t n_weight_queries = 0;   ///< query points per context there
    int64_t n_context = 0;          ///< N
    int64_t dim = 0;                ///< d
    std::string newton_alpha;       ///< "frobenius" or "spectral" (core/baselines NewtonAlpha)
    /// GD's step: "spectral" (s = 1/‖XᵀX‖₂ per prompt and prefix on ½‖Xw − y‖²) or "fixed" (η on the mean
    /// objective (1/2n)·Σ(wᵀx_i − y_i)², the value in gd_eta).
    std::string gd_step;
    double gd_eta = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> probe_r2;      ///< GPT-2: per layer, R² of the probe on the evaluation prompts' positions
    std::vector<double> probe_lambda;  ///< GPT-2: per layer, the ridge penalty chosen by cross-validation
    /// Query predictions behind the GUI's scatter (not stored in files): [layers × n_scatter] for the model and,
    /// per family, [steps × n_scatter], with the targets y_q of the same n_scatter first evaluation prompts.
    int64_t n_scatter = 0;
    std::vector<double> scatter_model;
    std::vector<std::vector<double>> scatter_algorithm;  ///< one per family, in `families` order
    std::vector<double> scatter_target;
    bool first_look = false;  ///< computed on the first prompts only; the full result follows

    const AlgorithmFamilyMap* family(const std::string& name) const
    {
        for (const auto& f : families)
            if (f.family == name)
                return &f;
        return nullptr;
    }
};

} // namespace icl
