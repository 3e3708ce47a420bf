#pragma once
// CSV form of a Figure (the plotted data), header-only so widgets and the CLI share one writer.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/types/figure.h"

namespace icl {

/// Figure data as CSV text: "# key: value" metadata lines, then a header `x,<series>,…` with
/// `<series>_lower`/`<series>_upper` columns for bands, and one row per distinct x (ascending).
/// A series without a point at some x leaves that cell empty.
inline std::string figureCsv(const Figure& figure)
{
    std::ostringstream out;
    out << "# title: " << figure.title << "\n";
    for (const auto& [key, value] : figure.metadata)
        out << "# " << key << ": " << value << "\n";
    auto quote = [](const std::string& s) {
        if (s.find_first_of(",\"\n") == std::string::npos)
            return s;
        std::string q = "\"";
        for (char c : s)
            q += (c == '"') ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    std::set<double> xs;
    for (const auto& s : figure.series)
        xs.insert(s.x.begin(), s.x.end());
    out << quote(figure.x_label.empty() ? "x" : figure.x_label);
    for (const auto& s : figure.series) {
        out << "," << quote(s.name);
        if (!s.y_lower.empty())
            out << "," << quote(s.name + "_lower") << "," << quote(s.name + "_upper");
    }
    out << "\n";
    auto cell = [&](double v) {
        if (std::isnan(v))
            return std::string();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return std::string(buf);
    };
    for (double x : xs) {
        out << cell(x);
        for (const auto& s : figure.series) {
            size_t i = 0;
            while (i < s.x.size() && s.x[i] != x)
                ++i;
            const bool has = i < s.x.size() && i < s.y.size();
            out << "," << (has ? cell(s.y[i]) : "");
            if (!s.y_lower.empty())
                out << "," << (has ? cell(s.y_lower[i]) : "") << "," << (has ? cell(s.y_upper[i]) : "");
        }
        out << "\n";
    }
    return out.str();
}

/// Writes figureCsv(figure) to `path`. Throws icl::Error when the file cannot be written.
inline void writeFigureCsv(const Figure& figure, const std::string& path)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        throw Error("cannot write " + path);
    f << figureCsv(figure);
    if (!f)
        throw Error("failed writing " + path);
}

} // namespace icl
