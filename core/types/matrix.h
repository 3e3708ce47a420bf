#pragma once
// Torch-free dense matrix for heatmaps (learned weights, patching grids).

#include <cstdint>
#include <string>
#include <vector>

namespace icl {

/// Row-major matrix with axis labels, e.g. a learned W_KᵀW_Q of one layer.
struct Matrix {
    std::string name;
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<double> data;              ///< rows·cols values, row-major
    std::vector<std::string> row_labels;   ///< optional, size rows
    std::vector<std::string> col_labels;   ///< optional, size cols
    double at(int64_t r, int64_t c) const { return data[size_t(r * cols + c)]; }
};

} // namespace icl
