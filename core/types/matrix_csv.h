#pragma once
// CSV form of a Matrix (a heatmap's data), header-only so widgets and the CLI share one writer.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/types/matrix.h"

namespace icl {

/// The matrix as CSV: "# title: <name>" and "# key: value" metadata lines, a header `row,<col labels>`,
/// one line per row starting with its label (missing labels: 1-based indices); values with 9 significant
/// digits, NaN as an empty cell.
inline std::string matrixCsv(const Matrix& matrix, const std::map<std::string, std::string>& metadata)
{
    auto field = [](const std::string& s) {
        if (s.find_first_of(",\"\n") == std::string::npos)
            return s;
        std::string q = "\"";
        for (char c : s)
            q += (c == '"') ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    auto number = [](double v) {
        if (std::isnan(v))
            return std::string();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
    };
    auto label = [](const std::vector<std::string>& labels, int64_t i) {
        return size_t(i) < labels.size() ? labels[size_t(i)] : std::to_string(i + 1);
    };
    std::ostringstream out;
    out << "# title: " << matrix.name << "\n";
    for (const auto& [key, value] : metadata)
        out << "# " << key << ": " << value << "\n";
    out << "row";
    for (int64_t c = 0; c < matrix.cols; ++c)
        out << "," << field(label(matrix.col_labels, c));
    out << "\n";
    for (int64_t r = 0; r < matrix.rows; ++r) {
        out << field(label(matrix.row_labels, r));
        for (int64_t c = 0; c < matrix.cols; ++c)
            out << "," << (size_t(r * matrix.cols + c) < matrix.data.size() ? number(matrix.at(r, c)) : "");
        out << "\n";
    }
    return out.str();
}

/// Writes matrixCsv(matrix, metadata) to `path`. Throws icl::Error when the file cannot be written.
inline void writeMatrixCsv(const Matrix& matrix, const std::map<std::string, std::string>& metadata,
                           const std::string& path)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        throw Error("cannot write " + path);
    f << matrixCsv(matrix, metadata);
    if (!f)
        throw Error("failed writing " + path);
}

} // namespace icl
