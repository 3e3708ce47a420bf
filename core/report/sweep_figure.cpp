#include "core/report/sweep_figure.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/error.h"

namespace icl {

namespace {

/// The number a cell holds (the whole cell parsed, finite), or none.
std::optional<double> number(const std::string& cell)
{
    if (cell.empty())
        return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(cell.c_str(), &end);
    if (errno != 0 || end != cell.c_str() + cell.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<size_t> columnIndex(const SweepTable& t, const std::string& name)
{
    const auto it = std::find(t.columns.begin(), t.columns.end(), name);
    if (it == t.columns.end())
        return std::nullopt;
    return size_t(it - t.columns.begin());
}

const std::string& cellAt(const std::vector<std::string>& row, size_t c)
{
    static const std::string empty;
    return c < row.size() ? row[c] : empty;
}

bool numericColumn(const SweepTable& t, size_t c)
{
    return std::all_of(t.rows.begin(), t.rows.end(), [&](const auto& row) { return number(cellAt(row, c)).has_value(); });
}

} // namespace

std::vector<std::string> sweepPlotColumns(const SweepTable& table)
{
    std::vector<std::string> out;
    for (size_t c = 0; c < table.n_grid && c < table.columns.size(); ++c) {
        if (table.columns[c] == "seed")
            continue;
        const bool numeric = numericColumn(table, c);
        std::set<double> numbers;
        std::set<std::string> texts;
        for (const auto& row : table.rows) {
            if (numeric)
                numbers.insert(*number(cellAt(row, c)));
            texts.insert(cellAt(row, c));
        }
        if ((numeric ? numbers.size() : texts.size()) >= 2)
            out.push_back(table.columns[c]);
    }
    return out;
}

Figure sweepFigure(const SweepTable& table, const std::string& x)
{
    const std::optional<size_t> xc = columnIndex(table, x);
    if (!xc || *xc >= table.n_grid || x == "seed")
        throw Error(table.source + ": '" + x + "' is not a grid key of the sweep");
    const bool numeric = numericColumn(table, *xc);
    std::vector<std::string> categories;  // !numeric: distinct values in table order
    std::set<double> xs;
    for (const auto& row : table.rows) {
        const std::string& v = cellAt(row, *xc);
        if (numeric)
            xs.insert(*number(v));
        else if (std::find(categories.begin(), categories.end(), v) == categories.end())
            categories.push_back(v);
    }
    auto position = [&](const std::vector<std::string>& row) {
        const std::string& v = cellAt(row, *xc);
        return numeric ? *number(v) : double(std::find(categories.begin(), categories.end(), v) - categories.begin());
    };
    const std::optional<size_t> icl = columnIndex(table, "icl_accuracy");
    const bool classification = icl && std::any_of(table.rows.begin(), table.rows.end(), [&](const auto& row) {
        return number(cellAt(row, *icl)).has_value();
    });

    Figure f;
    f.name = "sweep_" + x;
    f.title = classification ? "ICL and IWL accuracy vs " + x : "eval loss vs " + x;
    f.x_label = x;
    f.y_label = classification ? "final accuracy" : "final eval loss";
    f.metadata = {{"sweep", table.source}, {"runs", std::to_string(table.rows.size())}};
    // Values spanning two decades or more (number of classes 100 … 12,800) on a log axis, as in Chan et al.
    f.log_x = numeric && !xs.empty() && *xs.begin() > 0 && *xs.rbegin() >= 100 * *xs.begin();
    std::string legend;  // the CSV's x column holds the tick positions; this line names them
    for (size_t i = 0; i < categories.size(); ++i) {
        f.x_ticks.push_back(double(i));
        f.x_tick_labels.push_back(categories[i]);
        legend += (i ? ", " : "") + std::to_string(i) + " = " + categories[i];
    }
    if (!numeric)
        f.metadata["x_values"] = legend;

    // Rows grouped by the other non-seed grid keys, then by their x position.
    std::map<std::string, std::map<double, std::vector<const std::vector<std::string>*>>> groups;
    for (const auto& row : table.rows) {
        std::string group;
        for (size_t c = 0; c < table.n_grid && c < table.columns.size(); ++c) {
            const std::string& key = table.columns[c];
            if (c == *xc || key == "seed")
                continue;
            group += (group.empty() ? "" : ", ") + key.substr(key.rfind('.') + 1) + " " + cellAt(row, c);
        }
        groups[group][position(row)].push_back(&row);
    }
    const std::vector<std::pair<std::string, std::string>> shown = classification
        ? std::vector<std::pair<std::string, std::string>>{{"icl_accuracy", "ICL"}, {"iwl_accuracy", "IWL"}}
        : std::vector<std::pair<std::string, std::string>>{{"eval_loss", "eval loss"}};
    for (const auto& [group, points] : groups)
        for (const auto& [metric, label] : shown) {
            const std::optional<size_t> mc = columnIndex(table, metric);
            Series s;
            s.name = label + (group.empty() ? "" : " (" + group + ")");
            s.style = !numeric                   ? Series::Style::Markers
                      : metric == "iwl_accuracy" ? Series::Style::Dashed
                                                 : Series::Style::Line;
            for (const auto& [xv, rows] : points) {
                double sum = 0.0;
                int n = 0;
                for (const auto* r : rows)
                    if (const auto v = mc ? number(cellAt(*r, *mc)) : std::nullopt) {
                        sum += *v;
                        ++n;
                    }
                if (n == 0)
                    continue;  // no run at this point recorded the metric (empty cells)
                s.x.push_back(xv);
                s.y.push_back(sum / n);
            }
            f.series.push_back(std::move(s));
        }
    return f;
}

} // namespace icl
