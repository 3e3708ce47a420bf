#pragma once
// One family of an AlgorithmMap as a heatmap Matrix (rows: layers, columns: steps) and its CSV, header-only so
// core (report), widgets (the map view) and the CLI (export) label it the same way.

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/error.h"
#include "core/types/number_format.h"
#include "core/types/algorithm_map.h"
#include "core/types/matrix.h"
#include "core/types/matrix_csv.h"

namespace icl {

/// "GD", "GD++", "Newton", "ridge" for the family names of the map.
inline std::string algorithmFamilyTitle(const std::string& family)
{
    if (family == "gd")
        return "GD";
    if (family == "gdpp")
        return "GD++";
    if (family == "newton")
        return "Newton";
    if (family == "ridge")
        return "ridge";
    return family;
}

/// Label of a step: "k=3" (iterations; GD++: layers of the fitted GD++) or "λ=0.1".
inline std::string algorithmStepLabel(const AlgorithmFamilyMap& f, double step)
{
    return (f.step_name == "lambda" ? "λ=" : "k=") + formatSignificant(step);
}

/// The family that `family` names in `map`; throws icl::Error naming the choices when it is not there or is
/// not available (with the reason).
inline const AlgorithmFamilyMap& algorithmMapFamily(const AlgorithmMap& map, const std::string& family)
{
    const AlgorithmFamilyMap* f = map.family(family);
    if (!f) {
        std::string names;
        for (const auto& g : map.families)
            names += (names.empty() ? "" : ", ") + g.family;
        throw Error("algorithm map: no family \"" + family + "\" (the map has " + names + ")");
    }
    if (!f->available())
        throw Error("algorithm map: family \"" + family + "\" is not on the map: " + f->unavailable);
    return *f;
}

/// The similarity of errors (or, with `weights`, of induced weights) of one family: [layers × steps], rows
/// "layer 1" …, columns the step labels, named "<Family>: similarity of errors, layer × step".
inline Matrix algorithmMapMatrix(const AlgorithmMap& map, const AlgorithmFamilyMap& f, bool weights)
{
    Matrix m;
    m.name = algorithmFamilyTitle(f.family) + (weights ? ": similarity of induced weights" : ": similarity of errors")
           + ", layer × " + (f.step_name == "lambda" ? "λ" : "step");
    m.rows = int64_t(map.layers.size());
    m.cols = f.nSteps();
    m.data = weights ? f.sim_weights : f.sim_errors;
    for (int64_t l : map.layers)
        m.row_labels.push_back("layer " + std::to_string(l));
    for (double s : f.steps)
        m.col_labels.push_back(algorithmStepLabel(f, s));
    return m;
}

/// CSV of algorithmMapMatrix with two more columns, the best step and its similarity per layer (by the same
/// similarity), and `metadata` as "# key: value" lines (matrixCsv).
inline std::string algorithmMapCsv(const AlgorithmMap& map, const AlgorithmFamilyMap& f, bool weights,
                                   const std::map<std::string, std::string>& metadata)
{
    Matrix m = algorithmMapMatrix(map, f, weights);
    Matrix out = m;
    out.cols = m.cols + 2;
    out.data.clear();
    out.col_labels.push_back("best_step");
    out.col_labels.push_back("best_similarity");
    for (int64_t r = 0; r < m.rows; ++r) {
        double best = std::nan(""), bestSim = std::nan("");
        for (int64_t c = 0; c < m.cols; ++c) {
            const double v = m.at(r, c);
            out.data.push_back(v);
            if (std::isfinite(v) && !(v <= bestSim)) {
                bestSim = v;
                best = f.steps[size_t(c)];
            }
        }
        out.data.push_back(best);
        out.data.push_back(bestSim);
    }
    return matrixCsv(out, metadata);
}

} // namespace icl
