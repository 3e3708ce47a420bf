#pragma once
// Core-internal. The torch-free arithmetic of the algorithm map (core/analysis/algorithm_map.h), declared here
// for its tests: the step grids, the two similarities, best steps and their fits.

#include <cstdint>
#include <string>
#include <vector>

#include "core/types/algorithm_map.h"

namespace icl::algorithm_map {

/// `points` log-spaced integers from 1 to max_k (round(max_k^(i/(points − 1)))), duplicates removed; {1} when
/// max_k = 1 or points = 1.
std::vector<double> gdStepGrid(int64_t max_k, int64_t points);
/// 10^3, 10^2.5, …, 10^-4 (15 values, large to small: the order in which ridge approaches least squares).
std::vector<double> defaultRidgePath();

/// Similarity of errors of two residual arrays laid out [prompts × positions]. positions > 1: per prompt the
/// cosine of the two length-`positions` rows, averaged over the prompts where both rows are non-zero; positions
/// = 1: the cosine of the two length-`prompts` vectors. NaN when no pair is non-zero.
double similarityOfErrors(const double* a, const double* b, int64_t prompts, int64_t positions);

/// Mean over `contexts` of the cosine between two weight vectors of length d each ([contexts × d] arrays),
/// over the contexts where both are non-zero; NaN when none is.
double similarityOfWeights(const double* a, const double* b, int64_t contexts, int64_t d);

/// Spearman's rank correlation (average ranks for ties); NaN for fewer than two points or a constant input.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// The fit of AlgorithmMapFit over layers first … last (1-based, inclusive; clamped to the map) of `best`
/// (one best step per layer, best[ℓ − 1]): y = best ("linear"), log10 best ("log_linear", "log_lambda").
/// Non-finite or non-positive (for the log kinds) best steps are left out.
AlgorithmMapFit fitBestSteps(const std::vector<double>& best, int64_t first, int64_t last, const std::string& kind);

/// Default middle layers of L: ⌊L/4⌋ + 1 … L − ⌊L/4⌋.
void defaultMiddleLayers(int64_t L, int64_t* first, int64_t* last);

/// Fills best_step, best_similarity, best_step_weights, fit and fit_linear of `f` from its matrices
/// (`layers` rows); ties go to the first (smallest) step of the grid.
void finishFamily(AlgorithmFamilyMap& f, int64_t layers, int64_t middle_first, int64_t middle_last);

} // namespace icl::algorithm_map
