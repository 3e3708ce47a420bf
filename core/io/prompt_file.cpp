#include "core/io/prompt_file.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <clocale>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

#include <locale.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/checked_size.h"
#include "core/io/file_error.h"
#include "core/io/memory_budget.h"
#include "core/io/regular_file.h"

namespace icl {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string trim(const std::string& s)
{
    const size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos)
        return {};
    const size_t b = s.find_last_not_of(" \t\r\n");
    return s.substr(a, b - a + 1);
}

/// `text` in double quotes for a message, cut to 60 bytes ("…" after): a cell or header may be megabytes long.
std::string quoted(const std::string& text)
{
    return "\"" + (text.size() > 60 ? text.substr(0, 60) + "…" : text) + "\"";
}

/// Parses all of `text` as a double, independent of the C locale (Qt sets LC_NUMERIC from the
/// environment, where strtod would want a decimal comma). False when `text` is not one number;
/// `*finite` tells NaN, ±inf and values that overflow a double apart from ordinary numbers.
bool parseNumber(const std::string& text, double* value, bool* finite)
{
    std::string t = text;
    if (!t.empty() && t.front() == '+')  // from_chars refuses a leading '+'
        t.erase(0, 1);
    if (t.empty() || t.front() == '+')
        return false;
    const char* end = t.data() + t.size();
    const auto [ptr, ec] = std::from_chars(t.data(), end, *value);
    if (ptr != end)
        return false;
    if (ec == std::errc::result_out_of_range) {
        // from_chars leaves the value unset: overflow (±inf, not finite) or underflow to zero.
        static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(0));
        *value = strtod_l(t.c_str(), nullptr, c);
        *finite = std::isfinite(*value);
        return true;
    }
    if (ec != std::errc())
        return false;
    *finite = std::isfinite(*value);
    return true;
}

/// Shortest decimal form that reads back as the same double (locale independent).
std::string formatNumber(double v)
{
    char buf[64];
    const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, ptr) : std::string("nan");
}

std::string plural(size_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string headerHint(int64_t d)
{
    if (d <= 0)
        return "x_1,…,x_d,y";
    if (d == 1)
        return "x_1,y";
    if (d == 2)
        return "x_1,x_2,y";
    return "x_1,…,x_" + std::to_string(d) + ",y";
}

/// Refuses more points than the model (or kMaxPromptPoints) takes, before they are read.
void checkPointCount(const std::string& path, const PromptFileLimits& limits, size_t points)
{
    const int64_t most = limits.max_points > 0 ? std::min(limits.max_points, kMaxPromptPoints) : kMaxPromptPoints;
    if (points > uint64_t(most))
        throw Error(path + ": " + std::to_string(points) + " points, " + (limits.max_points > 0 ? "the model takes" : "a prompt file has")
                    + " at most " + std::to_string(most) + (limits.max_points > 0 ? " (N+1)" : ""));
}

/// The checks shared by both formats once the numbers are read: point count, limits, label count.
/// `y` holds N or N+1 labels; the result has N+1 (NaN for an unknown query label).
void checkCounts(const std::string& path, const PromptFileLimits& limits, Prompt& p)
{
    const size_t points = p.x.size();
    if (points < 2)
        throw Error(path + ": " + plural(points, "point", "points")
                    + ", expected at least 2 (an in-context example and the query)");
    checkPointCount(path, limits, points);
    if (p.y.size() + 1 == points)
        p.y.push_back(kNaN);
    else if (p.y.size() != points)
        throw Error(path + ": " + plural(p.y.size(), "label", "labels") + " for " + std::to_string(points)
                    + " points, expected " + std::to_string(points - 1) + " (N, the query's label unknown) or "
                    + std::to_string(points) + " (N+1, the query's label last)");
}

/// Every value of a read prompt (x, the labels, w) within ±`most`; the errors name it 1-based.
void checkMagnitudes(const std::string& path, const Prompt& p, double most)
{
    const std::string tooLarge = formatNumber(most) + " in magnitude (the model computes in float32)";
    for (size_t i = 0; i < p.x.size(); ++i)
        for (size_t c = 0; c < p.x[i].size(); ++c)
            if (std::abs(p.x[i][c]) > most)
                throw Error(path + ": point " + std::to_string(i + 1) + ", x_" + std::to_string(c + 1) + " is "
                            + formatNumber(p.x[i][c]) + ", larger than " + tooLarge);
    for (size_t i = 0; i < p.y.size(); ++i)
        if (std::abs(p.y[i]) > most)  // false for NaN (an unknown query label)
            throw Error(path + ": y_" + std::to_string(i + 1) + " is " + formatNumber(p.y[i]) + ", larger than "
                        + tooLarge);
    for (size_t c = 0; c < p.w.size(); ++c)
        if (std::abs(p.w[c]) > most)
            throw Error(path + ": w_" + std::to_string(c + 1) + " is " + formatNumber(p.w[c]) + ", larger than "
                        + tooLarge);
}

// --- JSON ---

std::string jsonKind(const nlohmann::json& j)
{
    return std::string(j.type_name());
}

std::string jsonValueText(const nlohmann::json& j)
{
    // Invalid UTF-8 in a string becomes U+FFFD instead of nlohmann's type_error.316.
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > 40)
        s = s.substr(0, 37) + "...";
    return s;
}

/// A finite number from `j`; `what` names it in the message ("point 3, x_2").
double jsonNumber(const std::string& path, const nlohmann::json& j, const std::string& what)
{
    if (!j.is_number())
        throw Error(path + ": " + what + " is " + jsonValueText(j) + ", expected a number");
    const double v = j.get<double>();
    if (!std::isfinite(v))
        throw Error(path + ": " + what + " is not a finite number");
    return v;
}

/// The parser's reason from parseBoundedJson's "PATH: not valid JSON ([json.exception.parse_error.101] parse
/// error at line 2, column 7: syntax error …)": "line 2, column 7: syntax error …".
std::string jsonParserReason(const std::string& path, const std::string& message)
{
    const std::string prefix = path + ": not valid JSON (";
    std::string what = message.rfind(prefix, 0) == 0 && message.size() > prefix.size() + 1
                           ? message.substr(prefix.size(), message.size() - prefix.size() - 1)
                           : message;
    if (what.rfind("[json.exception.", 0) == 0 && what.find("] ") != std::string::npos)
        what = what.substr(what.find("] ") + 2);
    const std::string marker = "parse error at ";
    if (what.rfind(marker, 0) == 0)
        what = what.substr(marker.size());
    std::replace(what.begin(), what.end(), '\n', ' ');
    return what;
}

Prompt readJson(const std::string& path, const std::string& text, const PromptFileLimits& limits, MemoryBudget& budget)
{
    // nlohmann's tree takes at most ~24 bytes per byte of text ("[]," is an array: 16 bytes in its parent,
    // doubled by vector growth, and its own 24-byte vector); charged before it is built.
    budget.charge(checked::mul(text.size(), 32, path), "the parsed JSON");
    nlohmann::json j;
    try {
        j = parseBoundedJson(text, path);
    } catch (const Error& e) {
        const std::string message = e.what();
        if (message.find("not valid JSON (") == std::string::npos)
            throw;  // nested too deep: parseBoundedJson's message as it is
        const std::string what = jsonParserReason(path, message);
        // "number overflow parsing '1e999'" (nlohmann's out_of_range.406): a literal too large for a double.
        if (what.rfind("number overflow", 0) == 0)
            throw Error(path + ": " + what + ", expected finite numbers");
        // "last read: '1], [N'": the letters the lexer stopped at; the start of NaN or Infinity gets a hint.
        const size_t last = what.find("last read: '");
        if (last != std::string::npos) {
            std::string token = what.substr(last + 12);
            token = token.substr(0, token.find('\''));
            size_t start = token.size();
            while (start > 0 && std::isalpha(static_cast<unsigned char>(token[start - 1])))
                --start;
            const std::string letters = token.substr(start);
            for (const char* word : { "NaN", "nan", "Infinity", "inf" })
                if (!letters.empty() && std::string(word).rfind(letters, 0) == 0)
                    throw Error(path + ": not valid JSON (" + what
                                + "): NaN and Infinity are not JSON numbers, every value must be finite");
        }
        throw Error(path + ": not valid JSON (" + what + ")");
    }
    if (!j.is_object())
        throw Error(path + ": expected a JSON object {\"x\": [[…], …], \"y\": […]}, got " + jsonKind(j));
    if (!j.contains("x"))
        throw Error(path + ": no \"x\", expected the N+1 input rows x_1 … x_N, x_q (the query last)");
    if (!j.contains("y"))
        throw Error(path + ": no \"y\", expected the labels y_1 … y_N (and optionally the query's y_q last)");
    const nlohmann::json& xs = j["x"];
    const nlohmann::json& ys = j["y"];
    if (!xs.is_array())
        throw Error(path + ": \"x\" is " + jsonKind(xs) + ", expected an array of rows (one per point)");
    if (!ys.is_array())
        throw Error(path + ": \"y\" is " + jsonKind(ys) + ", expected an array of numbers");

    checkPointCount(path, limits, xs.size());
    Prompt p;
    const int64_t want = limits.d;
    for (size_t i = 0; i < xs.size(); ++i) {
        const std::string point = "point " + std::to_string(i + 1);
        const nlohmann::json& row = xs[i];
        std::vector<double> x;
        if (row.is_number()) {  // d = 1: a plain number is a row of one value
            x.push_back(jsonNumber(path, row, point + ", x_1"));
        } else if (row.is_array()) {
            if (int64_t(row.size()) > (want > 0 ? want : kMaxPromptDim))
                throw Error(path + ": " + point + " has " + plural(row.size(), "value", "values") + ", expected "
                            + (want > 0 ? "d = " + std::to_string(want)
                                        : "at most " + std::to_string(kMaxPromptDim)));
            for (size_t c = 0; c < row.size(); ++c)
                x.push_back(jsonNumber(path, row[c], point + ", x_" + std::to_string(c + 1)));
        } else {
            throw Error(path + ": " + point + " is " + jsonKind(row) + ", expected an array of d numbers");
        }
        if (want > 0 && int64_t(x.size()) != want)
            throw Error(path + ": " + point + " has " + plural(x.size(), "value", "values") + ", expected d = "
                        + std::to_string(want));
        if (x.empty())
            throw Error(path + ": " + point + " has no values, expected d ≥ 1 numbers");
        if (!p.x.empty() && x.size() != p.x.front().size())
            throw Error(path + ": " + point + " has " + plural(x.size(), "value", "values") + ", expected "
                        + std::to_string(p.x.front().size()) + " like point 1");
        p.x.push_back(std::move(x));
    }
    for (size_t i = 0; i < ys.size(); ++i) {
        const std::string label = "y_" + std::to_string(i + 1);
        // The query's label may be null (unknown) when "y" has N+1 entries.
        if (ys[i].is_null() && i + 1 == ys.size() && ys.size() == xs.size()) {
            p.y.push_back(kNaN);
            continue;
        }
        p.y.push_back(jsonNumber(path, ys[i], label));
    }
    checkCounts(path, limits, p);

    if (j.contains("w") && !j["w"].is_null()) {
        const nlohmann::json& w = j["w"];
        if (!w.is_array())
            throw Error(path + ": \"w\" is " + jsonKind(w) + ", expected the task vector as an array of numbers");
        if (int64_t(w.size()) > kMaxPromptDim)
            throw Error(path + ": \"w\" has " + std::to_string(w.size()) + " values, expected at most "
                        + std::to_string(kMaxPromptDim));
        for (size_t i = 0; i < w.size(); ++i)
            p.w.push_back(jsonNumber(path, w[i], "w_" + std::to_string(i + 1)));
    }
    if (j.contains("noise_std") && !j["noise_std"].is_null()) {
        p.noise_std = jsonNumber(path, j["noise_std"], "\"noise_std\"");
        if (p.noise_std < 0.0)
            throw Error(path + ": \"noise_std\" is " + formatNumber(p.noise_std) + ", expected σ ≥ 0");
    }
    if (j.contains("seed") && !j["seed"].is_null()) {
        const nlohmann::json& s = j["seed"];
        if (!s.is_number_unsigned())
            throw Error(path + ": \"seed\" is " + jsonValueText(s) + ", expected an integer ≥ 0");
        p.seed = s.get<uint64_t>();
    }
    if (j.contains("component") && !j["component"].is_null()) {
        const nlohmann::json& c = j["component"];
        if (!c.is_number_integer() || (c.is_number_unsigned() && c.get<uint64_t>() > uint64_t(INT64_MAX))
            || c.get<int64_t>() < -1)
            throw Error(path + ": \"component\" is " + jsonValueText(c)
                        + ", expected the mixture component index ≥ 0 (or −1 for none)");
        p.component = c.get<int64_t>();
    }
    return p;
}

// --- CSV ---

std::vector<std::string> splitCells(const std::string& line)
{
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream in(line);
    while (std::getline(in, cell, ','))
        cells.push_back(trim(cell));
    if (!line.empty() && line.back() == ',')
        cells.emplace_back();
    return cells;
}

/// True when `name` names input column `c` (1-based) of `d`: "x_c", the GUI's older "x[c]", or "x" for d = 1.
bool isXColumn(const std::string& name, int64_t c, int64_t d)
{
    const std::string n = std::to_string(c);
    return name == "x_" + n || name == "x[" + n + "]" || (d == 1 && name == "x");
}

/// "# key: value" metadata the prompt keeps (seed, noise_std, w, component); other keys are ignored.
void readCsvMetadata(const std::string& path, int64_t lineNo, const std::string& line, Prompt& p)
{
    const std::string body = trim(line.substr(1));
    const size_t colon = body.find(':');
    if (colon == std::string::npos)
        return;
    const std::string key = trim(body.substr(0, colon));
    const std::string value = trim(body.substr(colon + 1));
    if (key != "noise_std" && key != "w" && key != "seed" && key != "component")
        return;
    const std::string where = path + " line " + std::to_string(lineNo) + ", \"# " + key + "\": ";
    auto number = [&](const std::string& text, const std::string& expected) {
        double v = 0.0;
        bool finite = false;
        if (!parseNumber(text, &v, &finite) || !finite)
            throw Error(where + quoted(text) + " is not " + expected);
        return v;
    };
    if (key == "noise_std") {
        p.noise_std = number(value, "a finite number");
        if (p.noise_std < 0.0)
            throw Error(where + value + ", expected σ ≥ 0");
    } else if (key == "w") {
        p.w.clear();
        std::string list = value;
        std::replace(list.begin(), list.end(), ',', ' ');
        std::istringstream in(list);
        std::string token;
        while (in >> token) {
            if (int64_t(p.w.size()) >= kMaxPromptDim)
                throw Error(where + "more than " + std::to_string(kMaxPromptDim) + " values");
            p.w.push_back(number(token, "a finite number"));
        }
    } else if (key == "seed") {
        uint64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);
        if (value.empty() || ptr != end || ec != std::errc())
            throw Error(where + quoted(value) + " is not an integer ≥ 0");
        p.seed = v;
    } else if (key == "component") {
        int64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);
        if (value.empty() || ptr != end || ec != std::errc() || v < -1)
            throw Error(where + quoted(value) + " is not a component index ≥ −1");
        p.component = v;
    }
}

Prompt readCsv(const std::string& path, const std::string& text, const PromptFileLimits& limits, MemoryBudget& budget)
{
    Prompt p;
    std::istringstream in(text);
    std::string line;
    int64_t lineNo = 0;
    bool haveHeader = false;
    bool tokenColumn = false;
    int64_t d = 0;
    std::vector<std::string> names;  // column names of the x's and y, for messages
    struct Row {
        int64_t line;
        std::string_view text;  // trimmed, into `text`
        size_t cells;           // its number of cells (commas + 1), counted before it is split
    };
    std::vector<Row> rows;
    size_t offset = 0;  // of `line` in `text`
    while (std::getline(in, line)) {
        ++lineNo;
        const size_t lineOffset = offset;
        offset += line.size() + 1;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        const std::string t = trim(line);
        if (t.empty())
            continue;
        if (t.front() == '#') {
            readCsvMetadata(path, lineNo, t, p);
            continue;
        }
        // Cells are counted before they are split: a line of commas must not become millions of strings.
        const size_t cellCount = size_t(std::count(t.begin(), t.end(), ',')) + 1;
        if (!haveHeader) {
            const std::string where = path + " line " + std::to_string(lineNo) + ": ";
            if (cellCount > size_t(kMaxPromptDim) + 2)
                throw Error(where + "header of " + std::to_string(cellCount) + " columns, a prompt file has at most "
                            + std::to_string(kMaxPromptDim) + " x columns");
            const std::vector<std::string> cells = splitCells(t);
            haveHeader = true;
            tokenColumn = !cells.empty() && cells.front() == "token";  // the GUI's older exports
            const size_t first = tokenColumn ? 1 : 0;
            if (cells.size() <= first || cells.back() != "y")
                throw Error(where + "header " + quoted(t) + ", expected x_1,…,x_d,y (the last column y)");
            d = int64_t(cells.size() - first) - 1;
            if (d == 0)
                throw Error(where + "header " + quoted(t) + " has no x columns, expected x_1,…,x_d,y");
            for (int64_t c = 1; c <= d; ++c)
                if (!isXColumn(cells[first + size_t(c - 1)], c, d))
                    throw Error(where + "header column " + std::to_string(first + size_t(c)) + " is "
                                + quoted(cells[first + size_t(c - 1)]) + ", expected \"x_" + std::to_string(c)
                                + "\" (header " + headerHint(d) + ")");
            if (limits.d > 0 && d != limits.d)
                throw Error(where + "the header has " + plural(size_t(d), "x column", "x columns") + " ("
                            + headerHint(d) + "), expected d = " + std::to_string(limits.d));
            for (int64_t c = 1; c <= d; ++c)
                names.push_back("x_" + std::to_string(c));
            names.push_back("y");
            continue;
        }
        if (int64_t(rows.size()) >= kMaxPromptPoints)  // the model's own limit is checked at the end
            throw Error(path + ": more than " + std::to_string(kMaxPromptPoints)
                        + " points, a prompt file has at most " + std::to_string(kMaxPromptPoints));
        const size_t start = lineOffset + line.find_first_not_of(" \t\r\n");
        rows.push_back({ lineNo, std::string_view(text).substr(start, t.size()), cellCount });
    }
    if (!haveHeader)
        throw Error(path + ": no header line, expected x_1,…,x_d,y and one row per point (the query last)");

    const size_t first = tokenColumn ? 1 : 0;
    const size_t width = first + size_t(d) + 1;
    budget.charge(checked::mul(checked::mul(rows.size(), width, path), sizeof(double) + sizeof(std::string), path),
                  "the prompt's " + std::to_string(rows.size()) + " rows of " + std::to_string(width) + " values");
    for (size_t r = 0; r < rows.size(); ++r) {
        const Row& row = rows[r];
        const bool last = r + 1 == rows.size();
        const std::string where = path + " line " + std::to_string(row.line);
        if (row.cells > width)  // refused before a million cells are split off
            throw Error(where + ": " + plural(row.cells, "value", "values") + ", expected " + std::to_string(width)
                        + " (" + (tokenColumn ? "token," : "") + headerHint(d) + ")");
        std::vector<std::string> cells = splitCells(std::string(row.text));
        if (last && cells.size() + 1 == width)
            cells.emplace_back();  // the query without a y cell at all
        if (cells.size() != width)
            throw Error(where + ": " + plural(cells.size(), "value", "values") + ", expected "
                        + std::to_string(width) + " (" + (tokenColumn ? "token," : "") + headerHint(d) + ")");
        std::vector<double> x;
        x.reserve(size_t(d));
        for (size_t c = 0; c <= size_t(d); ++c) {
            const std::string& cell = cells[first + c];
            const std::string column = where + ", column " + names[c] + ": ";
            if (cell.empty()) {
                if (c == size_t(d) && last)
                    continue;  // the query's unknown label
                throw Error(column + (c == size_t(d) ? "empty; only the query (the last row) may leave y empty"
                                                     : "empty, expected a number"));
            }
            double v = 0.0;
            bool finite = false;
            if (!parseNumber(cell, &v, &finite))
                throw Error(column + quoted(cell) + " is not a number");
            if (!finite)
                throw Error(column + quoted(cell) + " is not a finite number");
            if (c < size_t(d))
                x.push_back(v);
            else
                p.y.push_back(v);
        }
        p.x.push_back(std::move(x));
    }
    checkCounts(path, limits, p);
    return p;
}

bool endsWithJson(const std::string& path)
{
    if (path.size() < 5)
        return false;
    std::string ext = path.substr(path.size() - 5);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext == ".json";
}

/// One line of metadata text: newlines would end the "# key: value" line early.
std::string oneLine(std::string s)
{
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::replace(s.begin(), s.end(), '\r', ' ');
    return s;
}

void checkWritable(const std::string& path, const Prompt& p)
{
    const std::string where = "cannot write " + path + ": ";
    if (p.x.size() != p.y.size() || p.x.empty())
        throw Error(where + "the prompt has " + std::to_string(p.x.size()) + " x rows and "
                    + std::to_string(p.y.size()) + " labels, expected as many (N+1 ≥ 1)");
    for (size_t i = 0; i < p.x.size(); ++i) {
        if (p.x[i].size() != p.x.front().size() || p.x[i].empty())
            throw Error(where + "point " + std::to_string(i + 1) + " has " + std::to_string(p.x[i].size())
                        + " values, expected " + std::to_string(p.x.front().size()) + " like point 1");
        for (double v : p.x[i])
            if (!std::isfinite(v))
                throw Error(where + "point " + std::to_string(i + 1) + " holds a value that is not finite");
    }
    for (size_t i = 0; i + 1 < p.y.size(); ++i)
        if (!std::isfinite(p.y[i]))
            throw Error(where + "y_" + std::to_string(i + 1) + " is not finite (only the query's label may be unknown)");
    if (std::isinf(p.y.back()))
        throw Error(where + "the query's label is infinite");
    for (double v : p.w)
        if (!std::isfinite(v))
            throw Error(where + "the task vector w holds a value that is not finite");
    if (!std::isfinite(p.noise_std) || p.noise_std < 0.0)
        throw Error(where + "noise_std must be a finite number ≥ 0");
}

std::string jsonText(const Prompt& p, const std::map<std::string, std::string>& metadata)
{
    // "-0" would read back as the integer 0: a negative zero keeps its sign as "-0.0".
    auto num = [](double v) { return v == 0.0 && std::signbit(v) ? std::string("-0.0") : formatNumber(v); };
    auto list = [&](const std::vector<double>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i)
            s += (i ? ", " : "") + num(v[i]);
        return s + "]";
    };
    std::ostringstream out;
    out << "{\n  \"x\": [\n";
    for (size_t i = 0; i < p.x.size(); ++i)
        out << "    " << list(p.x[i]) << (i + 1 < p.x.size() ? ",\n" : "\n");
    out << "  ],\n";
    std::vector<double> y = p.y;
    if (std::isnan(y.back()))
        y.pop_back();  // the query's label unknown: N labels
    out << "  \"y\": " << list(y);
    if (!p.w.empty())
        out << ",\n  \"w\": " << list(p.w);
    out << ",\n  \"noise_std\": " << num(p.noise_std);
    out << ",\n  \"seed\": " << p.seed;
    if (p.component >= 0)
        out << ",\n  \"component\": " << p.component;
    if (!metadata.empty()) {
        out << ",\n  \"metadata\": {";
        size_t i = 0;
        for (const auto& [key, value] : metadata)
            out << (i++ ? ", " : "") << nlohmann::json(key).dump() << ": " << nlohmann::json(value).dump();
        out << "}";
    }
    out << "\n}\n";
    return out.str();
}

std::string csvText(const Prompt& p, const std::map<std::string, std::string>& metadata)
{
    std::ostringstream out;
    for (const auto& [key, value] : metadata)
        if (key != "seed" && key != "noise_std" && key != "w" && key != "component")  // written from the prompt
            out << "# " << oneLine(key) << ": " << oneLine(value) << "\n";
    out << "# seed: " << p.seed << "\n";
    out << "# noise_std: " << formatNumber(p.noise_std) << "\n";
    if (!p.w.empty()) {
        out << "# w:";
        for (double v : p.w)
            out << " " << formatNumber(v);
        out << "\n";
    }
    if (p.component >= 0)
        out << "# component: " << p.component << "\n";
    const int64_t d = p.dim();
    for (int64_t c = 1; c <= d; ++c)
        out << "x_" << c << ",";
    out << "y\n";
    for (size_t r = 0; r < p.x.size(); ++r) {
        for (double v : p.x[r])
            out << formatNumber(v) << ",";
        if (!std::isnan(p.y[r]))
            out << formatNumber(p.y[r]);
        out << "\n";
    }
    return out.str();
}

} // namespace

Prompt readPromptFile(const std::string& path, const PromptFileLimits& limits)
{
    MemoryBudget budget(path, limits.max_memory);
    std::string text = RegularFile(path, "prompt file (JSON or CSV)").readAll(kMaxPromptFileBytes, "prompt file", &budget);
    if (text.rfind("\xEF\xBB\xBF", 0) == 0)  // UTF-8 byte order mark
        text.erase(0, 3);
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        throw Error(path + ": empty file, expected a JSON object {\"x\": …, \"y\": …} or CSV rows x_1,…,x_d,y");
    const bool json = text[first] == '{' || text[first] == '[';
    Prompt p = withFileErrors(path, [&] {
        return json ? readJson(path, text, limits, budget) : readCsv(path, text, limits, budget);
    });
    checkMagnitudes(path, p, limits.max_magnitude);
    return p;
}

void writePromptFile(const std::string& path, const Prompt& prompt, const std::map<std::string, std::string>& metadata)
{
    checkWritable(path, prompt);
    const std::string text = endsWithJson(path) ? jsonText(prompt, metadata) : csvText(prompt, metadata);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        throw Error("cannot write " + path + " (the folder does not exist or is not writable)");
    f << text;
    f.close();
    if (!f)
        throw Error("failed writing " + path);
}

} // namespace icl
