// Prompt files (core/io/prompt_file.h): JSON and CSV round trips are bit-exact, hand-written files read as
// written, and every bad input is refused with one line naming the file, the row and what was expected.
// Expected values are the literals written into the files here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/io/prompt_file.h"
#include "tests/support/scratch.h"

namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// A per-process temporary path (ctest runs test processes in parallel).
std::string promptScratchPath(const std::string& name)
{
    return icl::test::scratchPrefix() + "prompt_file_" + std::to_string(::getpid()) + "_" + name;
}

std::string writeText(const std::string& name, const std::string& text)
{
    const std::string path = promptScratchPath(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
}

std::string readText(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

uint64_t bits(double v)
{
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

/// Same doubles bit for bit (so −0 ≠ +0 and NaN = NaN).
::testing::AssertionResult sameBits(const std::vector<double>& got, const std::vector<double>& want, const std::string& what)
{
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << what << ": " << got.size() << " values, want " << want.size();
    for (size_t i = 0; i < got.size(); ++i) {
        const bool bothNaN = std::isnan(got[i]) && std::isnan(want[i]);
        if (!bothNaN && bits(got[i]) != bits(want[i]))
            return ::testing::AssertionFailure() << what << "[" << i << "]: " << got[i] << " != " << want[i];
    }
    return ::testing::AssertionSuccess();
}

/// Read limits that let the awkward prompt's extreme values (±DBL_MAX) through: the round trips are about bits.
icl::PromptFileLimits anyFiniteValue()
{
    icl::PromptFileLimits any;
    any.max_magnitude = std::numeric_limits<double>::infinity();
    return any;
}

::testing::AssertionResult samePrompt(const icl::Prompt& got, const icl::Prompt& want)
{
    if (got.x.size() != want.x.size())
        return ::testing::AssertionFailure() << got.x.size() << " points, want " << want.x.size();
    for (size_t i = 0; i < got.x.size(); ++i) {
        auto r = sameBits(got.x[i], want.x[i], "x row " + std::to_string(i));
        if (!r)
            return r;
    }
    for (const auto& [g, w, what] : { std::tuple { &got.y, &want.y, "y" }, std::tuple { &got.w, &want.w, "w" } }) {
        auto r = sameBits(*g, *w, what);
        if (!r)
            return r;
    }
    if (bits(got.noise_std) != bits(want.noise_std))
        return ::testing::AssertionFailure() << "noise_std " << got.noise_std << " != " << want.noise_std;
    if (got.seed != want.seed)
        return ::testing::AssertionFailure() << "seed " << got.seed << " != " << want.seed;
    if (got.component != want.component)
        return ::testing::AssertionFailure() << "component " << got.component << " != " << want.component;
    return ::testing::AssertionSuccess();
}

/// Doubles whose decimal forms are awkward: non-terminating binary fractions, extremes, subnormals, −0.
icl::Prompt awkwardPrompt()
{
    icl::Prompt p;
    p.x = { { 0.1, 1.0 / 3.0, -2.0 / 7.0 },
        { 1.7976931348623157e308, -2.2250738585072014e-308, 4.9406564584124654e-324 },
        { -0.0, 3.141592653589793, 1e-17 },
        { 123456789.123456789, -9.999999999999999e22, 2.718281828459045 } };
    p.y = { 0.30000000000000004, -1.0 / 9.0, 6.02214076e23, std::nextafter(1.0, 2.0) };
    p.w = { 0.7071067811865476, -1.4142135623730951, 1e-300 };
    p.noise_std = 0.05;
    p.seed = 18446744073709551615ULL;
    p.component = 2;
    return p;
}

/// The one-line message readPromptFile throws for `path` (empty when it does not throw).
std::string readError(const std::string& path, const icl::PromptFileLimits& limits = {})
{
    try {
        icl::readPromptFile(path, limits);
    } catch (const icl::Error& e) {
        return e.what();
    }
    return {};
}

} // namespace

TEST(PromptFile, JsonRoundTripIsBitExact)
{
    const icl::Prompt p = awkwardPrompt();
    const std::string path = promptScratchPath("round.json");
    icl::writePromptFile(path, p, { { "experiment", "run.h5" }, { "note", "say \"hi\"" } });
    EXPECT_TRUE(samePrompt(icl::readPromptFile(path, anyFiniteValue()), p));
    EXPECT_TRUE(samePrompt(icl::readPromptFile(path, { 3, 4, 0, kInf }), p)) << "d and N+1 at their limits";

    // An unknown query label is written as N labels and read back as NaN.
    icl::Prompt unknown = p;
    unknown.y.back() = kNaN;
    unknown.w.clear();
    unknown.component = -1;
    const std::string upath = promptScratchPath("unknown.JSON");
    icl::writePromptFile(upath, unknown);
    EXPECT_EQ(readText(upath).find("null"), std::string::npos) << readText(upath);
    EXPECT_EQ(readText(upath).find("\"w\""), std::string::npos);
    const icl::Prompt back = icl::readPromptFile(upath, anyFiniteValue());
    EXPECT_TRUE(samePrompt(back, unknown));
    EXPECT_TRUE(std::isnan(back.y.back()));
}

TEST(PromptFile, CsvRoundTripIsBitExact)
{
    const icl::Prompt p = awkwardPrompt();
    const std::string path = promptScratchPath("round.csv");
    icl::writePromptFile(path, p, { { "experiment", "run.h5" }, { "seed", "ignored: the prompt's own seed is written" } });
    EXPECT_TRUE(samePrompt(icl::readPromptFile(path, anyFiniteValue()), p));
    const std::string text = readText(path);
    EXPECT_EQ(text.rfind("# experiment: run.h5\n# seed: 18446744073709551615\n# noise_std: 0.05\n", 0), 0u) << text;
    EXPECT_NE(text.find("\nx_1,x_2,x_3,y\n"), std::string::npos) << text;

    icl::Prompt unknown = p;
    unknown.y.back() = kNaN;
    const std::string upath = promptScratchPath("unknown.csv");
    icl::writePromptFile(upath, unknown);
    EXPECT_TRUE(samePrompt(icl::readPromptFile(upath, anyFiniteValue()), unknown));
}

TEST(PromptFile, CsvHasTheDocumentedLayout)
{
    icl::Prompt p;
    p.x = { { 1.0, 2.0 }, { 0.5, -3.0 }, { 0.25, 1e-5 } };
    p.y = { 4.0, -1.5, kNaN };
    p.w = { 1.0, 1.5 };
    p.seed = 7;
    const std::string path = promptScratchPath("layout.csv");
    icl::writePromptFile(path, p, { { "checkpoint_step", "200" }, { "experiment", "a\nb.h5" } });
    EXPECT_EQ(readText(path), "# checkpoint_step: 200\n"
                              "# experiment: a b.h5\n"
                              "# seed: 7\n"
                              "# noise_std: 0\n"
                              "# w: 1 1.5\n"
                              "x_1,x_2,y\n"
                              "1,2,4\n"
                              "0.5,-3,-1.5\n"
                              "0.25,1e-05,\n");
    const std::string json = promptScratchPath("layout.json");
    icl::writePromptFile(json, p);
    EXPECT_EQ(readText(json), "{\n"
                              "  \"x\": [\n"
                              "    [1, 2],\n"
                              "    [0.5, -3],\n"
                              "    [0.25, 1e-05]\n"
                              "  ],\n"
                              "  \"y\": [4, -1.5],\n"
                              "  \"w\": [1, 1.5],\n"
                              "  \"noise_std\": 0,\n"
                              "  \"seed\": 7\n"
                              "}\n");
}

TEST(PromptFile, ReadsHandWrittenJsonAndCsv)
{
    // JSON with the query label, w and σ; no seed.
    const icl::Prompt a = icl::readPromptFile(writeText("a.json", R"({"x": [[1, 2], [3, 4.5], [-1, 0]],
        "y": [0.5, -2, 7], "w": [0.25, -0.5], "noise_std": 0.1})"));
    EXPECT_EQ(a.x, (std::vector<std::vector<double>> { { 1, 2 }, { 3, 4.5 }, { -1, 0 } }));
    EXPECT_TRUE(sameBits(a.y, { 0.5, -2, 7 }, "y"));
    EXPECT_EQ(a.w, (std::vector<double> { 0.25, -0.5 }));
    EXPECT_EQ(a.noise_std, 0.1);
    EXPECT_EQ(a.seed, 0u);
    EXPECT_EQ(a.component, -1);
    EXPECT_EQ(a.nContext(), 2);
    EXPECT_EQ(a.dim(), 2);

    // d = 1 rows as plain numbers; the query's label null.
    const icl::Prompt b = icl::readPromptFile(writeText("b.json", R"({"y": [1, 2, null], "x": [0.5, [1.5], 2.5]})"));
    EXPECT_EQ(b.x, (std::vector<std::vector<double>> { { 0.5 }, { 1.5 }, { 2.5 } }));
    EXPECT_TRUE(sameBits(b.y, { 1, 2, kNaN }, "y"));

    // CSV with a byte order mark, CRLF line ends, comments, blank lines and an empty query label.
    const icl::Prompt c = icl::readPromptFile(writeText("c.csv", "\xEF\xBB\xBF# title: my prompt\r\n"
                                                                 "# w: 1, -2\r\n"
                                                                 "# seed: 42\r\n"
                                                                 "\r\n"
                                                                 " x_1 , x_2 , y \r\n"
                                                                 "1,2,-3\r\n"
                                                                 "# a comment between rows\r\n"
                                                                 "+0.5,1e-3,-0.001\r\n"
                                                                 "4,5,\r\n"),
                                              { 2, 3 });
    EXPECT_EQ(c.x, (std::vector<std::vector<double>> { { 1, 2 }, { 0.5, 1e-3 }, { 4, 5 } }));
    EXPECT_TRUE(sameBits(c.y, { -3, -0.001, kNaN }, "y"));
    EXPECT_EQ(c.w, (std::vector<double> { 1, -2 }));
    EXPECT_EQ(c.seed, 42u);

    // The query row may leave out the y cell; the GUI's older exports (token column, x[i]) still read.
    const icl::Prompt d = icl::readPromptFile(writeText("d.csv", "x_1,y\n1,2\n3\n"));
    EXPECT_TRUE(sameBits(d.y, { 2, kNaN }, "y"));
    const icl::Prompt e = icl::readPromptFile(
        writeText("e.csv", "# noise_std: 0.5\n# component: 1\ntoken,x[1],x[2],y\n1,0.1,0.2,0.3\nquery,0.4,0.5,0.6\n"));
    EXPECT_EQ(e.x, (std::vector<std::vector<double>> { { 0.1, 0.2 }, { 0.4, 0.5 } }));
    EXPECT_TRUE(sameBits(e.y, { 0.3, 0.6 }, "y"));
    EXPECT_EQ(e.noise_std, 0.5);
    EXPECT_EQ(e.component, 1);
}

TEST(PromptFile, YCountIsNOrNPlusOne)
{
    const std::string x = R"("x": [[1], [2], [3], [4]])";  // N = 3 and the query
    const icl::Prompt n = icl::readPromptFile(writeText("n.json", "{" + x + R"(, "y": [1, 2, 3]})"));
    EXPECT_TRUE(sameBits(n.y, { 1, 2, 3, kNaN }, "N labels: the query's unknown"));
    const icl::Prompt n1 = icl::readPromptFile(writeText("n1.json", "{" + x + R"(, "y": [1, 2, 3, 4]})"));
    EXPECT_TRUE(sameBits(n1.y, { 1, 2, 3, 4 }, "N+1 labels: the last is y_q"));
    for (const char* y : { "[1, 2]", "[1, 2, 3, 4, 5]", "[]" }) {
        const std::string path = writeText("ny.json", "{" + x + ", \"y\": " + y + "}");
        const size_t count = std::count(y, y + std::strlen(y), ',') + (std::strlen(y) > 2 ? 1 : 0);
        EXPECT_EQ(readError(path), path + ": " + std::to_string(count) + (count == 1 ? " label" : " labels")
                                       + " for 4 points, expected 3 (N, the query's label unknown) or 4 (N+1, the "
                                         "query's label last)")
            << y;
    }
    // CSV: only the last row may leave y empty, so the count is N or N+1 by construction.
    const std::string csv = writeText("ny.csv", "x_1,y\n1,2\n3,\n4,5\n");
    EXPECT_EQ(readError(csv), csv + " line 3, column y: empty; only the query (the last row) may leave y empty");
}

TEST(PromptFile, BadInputGivesOneLineMessages)
{
    struct Case {
        const char* name;
        std::string text;
        icl::PromptFileLimits limits;
        std::string message;  // after "<path>"
    };
    const std::string five = "[0.1, 0.2, 0.3, 0.4, 0.5]";
    const std::vector<Case> cases = {
        { "dim.json", "{\"x\": [" + five + ", " + five + ", [1, 2, 3, 4], " + five + "], \"y\": [1, 2, 3]}", { 5, 11 },
            ": point 3 has 4 values, expected d = 5" },
        { "ragged.json", R"({"x": [[1, 2], [3, 4], [5]], "y": [1, 2]})", {}, ": point 3 has 1 value, expected 2 like point 1" },
        { "string.json", R"({"x": [[1, 2], [3, "abc"]], "y": [1]})", {}, ": point 2, x_2 is \"abc\", expected a number" },
        { "ystring.json", R"({"x": [[1], [2], [3]], "y": [1, true]})", {}, ": y_2 is true, expected a number" },
        { "ynull.json", R"({"x": [[1], [2], [3]], "y": [null, 1]})", {}, ": y_1 is null, expected a number" },
        { "overflow.json", R"({"x": [[1], [1e999]], "y": [1]})", {}, ": number overflow parsing '1e999', expected finite numbers" },
        { "nan.json", R"({"x": [[1], [NaN]], "y": [1]})", {},
            ": not valid JSON (line 1, column @@): NaN and Infinity are not JSON numbers, every value must be finite" },
        { "syntax.json", "{\"x\": [[1], [2]],\n \"y\": [1,]}", {},
            ": not valid JSON (line 2, column @@)" },
        { "nox.json", R"({"y": [1]})", {}, ": no \"x\", expected the N+1 input rows x_1 … x_N, x_q (the query last)" },
        { "noy.json", R"({"x": [[1], [2]]})", {},
            ": no \"y\", expected the labels y_1 … y_N (and optionally the query's y_q last)" },
        { "array.json", "[[1, 2], [3, 4]]", {}, ": expected a JSON object {\"x\": [[…], …], \"y\": […]}, got array" },
        { "xobject.json", R"({"x": {"a": 1}, "y": []})", {}, ": \"x\" is object, expected an array of rows (one per point)" },
        { "row.json", R"({"x": [[1], "2"], "y": [1]})", {}, ": point 2 is string, expected an array of d numbers" },
        { "one.json", R"({"x": [[1, 2]], "y": []})", {}, ": 1 point, expected at least 2 (an in-context example and the query)" },
        { "many.json",
            "{\"x\": [" + [&] {
                std::string s;
                for (int i = 0; i < 12; ++i)
                    s += (i ? ", " : "") + five;
                return s;
            }() + "], \"y\": [1,2,3,4,5,6,7,8,9,10,11]}",
            { 5, 11 }, ": 12 points, the model takes at most 11 (N+1)" },
        { "w.json", R"({"x": [[1], [2]], "y": [1], "w": [1, "a"]})", {}, ": w_2 is \"a\", expected a number" },
        { "noise.json", R"({"x": [[1], [2]], "y": [1], "noise_std": -1})", {}, ": \"noise_std\" is -1, expected σ ≥ 0" },
        { "seed.json", R"({"x": [[1], [2]], "y": [1], "seed": -3})", {}, ": \"seed\" is -3, expected an integer ≥ 0" },
        { "empty.csv", "  \n\n", {}, ": empty file, expected a JSON object {\"x\": …, \"y\": …} or CSV rows x_1,…,x_d,y" },
        { "comments.csv", "# only: comments\n", {},
            ": no header line, expected x_1,…,x_d,y and one row per point (the query last)" },
        { "number.csv", "x_1,x_2,y\n1,2,3\n4,5,6\n7,8,abc\n9,1,\n", {}, " line 4, column y: \"abc\" is not a number" },
        { "xnumber.csv", "x_1,x_2,y\n1,2,3\n4,1.5.2,6\n", {}, " line 3, column x_2: \"1.5.2\" is not a number" },
        { "nancsv.csv", "x_1,x_2,y\n1,nan,3\n4,5,6\n", {}, " line 2, column x_2: \"nan\" is not a finite number" },
        { "infcsv.csv", "x_1,x_2,y\n1,2,3\n4,5,-inf\n", {}, " line 3, column y: \"-inf\" is not a finite number" },
        { "bigcsv.csv", "x_1,y\n1,3\n1e400,\n", {}, " line 3, column x_1: \"1e400\" is not a finite number" },
        { "emptyx.csv", "x_1,x_2,y\n1,,3\n4,5,6\n", {}, " line 2, column x_2: empty, expected a number" },
        { "raggedcsv.csv", "# c\nx_1,x_2,y\n1,2,3\n4,5\n6,7,8,9\n", {}, " line 4: 2 values, expected 3 (x_1,x_2,y)" },
        { "long.csv", "x_1,x_2,y\n1,2,3\n6,7,8,9\n", {}, " line 3: 4 values, expected 3 (x_1,x_2,y)" },
        { "header.csv", "x_1,x_3,y\n1,2,3\n4,5,6\n", {},
            " line 1: header column 2 is \"x_3\", expected \"x_2\" (header x_1,x_2,y)" },
        { "heady.csv", "x_1,x_2,z\n1,2,3\n4,5,6\n", {}, " line 1: header \"x_1,x_2,z\", expected x_1,…,x_d,y (the last column y)" },
        { "headx.csv", "y\n1\n2\n", {}, " line 1: header \"y\" has no x columns, expected x_1,…,x_d,y" },
        { "headd.csv", "x_1,x_2,x_3,x_4,y\n1,2,3,4,5\n1,2,3,4,\n", { 5, 0 },
            " line 1: the header has 4 x columns (x_1,…,x_4,y), expected d = 5" },
        { "onecsv.csv", "x_1,y\n1,\n", {}, ": 1 point, expected at least 2 (an in-context example and the query)" },
        { "manycsv.csv", "x_1,y\n1,1\n2,2\n3,3\n4,\n", { 1, 3 }, ": 4 points, the model takes at most 3 (N+1)" },
        { "meta.csv", "# noise_std: loud\nx_1,y\n1,1\n2,\n", {}, " line 1, \"# noise_std\": \"loud\" is not a finite number" },
        { "metaw.csv", "# title: t\n# w: 1 x 3\nx_1,y\n1,1\n2,\n", {}, " line 2, \"# w\": \"x\" is not a finite number" },
        { "metaseed.csv", "# seed: -1\nx_1,y\n1,1\n2,\n", {}, " line 1, \"# seed\": \"-1\" is not an integer ≥ 0" },
        // Finite but beyond the float32 models' range: every prediction would be NaN.
        { "huge.json", R"({"x": [[1, 2], [3, 1e308]], "y": [1]})", {},
            ": point 2, x_2 is 1e+308, larger than 1e+06 in magnitude (the model computes in float32)" },
        { "hugey.csv", "x_1,y\n1,1\n2,-2e6\n3,\n", {},
            ": y_2 is -2e+06, larger than 1e+06 in magnitude (the model computes in float32)" },
        { "hugew.json", R"({"x": [[1], [2]], "y": [1], "w": [1e7]})", {},
            ": w_1 is 1e+07, larger than 1e+06 in magnitude (the model computes in float32)" },
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const std::string path = writeText(c.name, c.text);
        const std::string message = readError(path, c.limits);
        // "@@" stands for the JSON library's own description of a syntax error.
        const size_t gap = c.message.find("@@");
        if (gap == std::string::npos) {
            EXPECT_EQ(message, path + c.message);
        } else {
            const std::string prefix = path + c.message.substr(0, gap), suffix = c.message.substr(gap + 2);
            EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
            EXPECT_TRUE(message.size() > prefix.size() + suffix.size()
                        && message.compare(message.size() - suffix.size(), suffix.size(), suffix) == 0)
                << message;
        }
        EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
    }
    const std::string missing = promptScratchPath("missing.json");
    fs::remove(missing);
    EXPECT_EQ(readError(missing), missing + ": no such file");
}

TEST(PromptFile, WriterRefusesMalformedPromptsAndUnwritablePaths)
{
    auto writeError = [](const std::string& path, const icl::Prompt& p) {
        try {
            icl::writePromptFile(path, p);
        } catch (const icl::Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    icl::Prompt p;
    p.x = { { 1.0 }, { 2.0 } };
    p.y = { 1.0, 2.0 };
    const std::string dir = promptScratchPath("no_such_dir");
    fs::remove_all(dir);
    EXPECT_EQ(writeError(dir + "/p.csv", p),
              "cannot write " + dir + "/p.csv (the folder does not exist or is not writable)");
    const std::string path = promptScratchPath("bad.csv");
    icl::Prompt counts = p;
    counts.y.pop_back();
    EXPECT_EQ(writeError(path, counts), "cannot write " + path + ": the prompt has 2 x rows and 1 labels, expected as many (N+1 ≥ 1)");
    icl::Prompt nan = p;
    nan.y[0] = kNaN;
    EXPECT_EQ(writeError(path, nan), "cannot write " + path + ": y_1 is not finite (only the query's label may be unknown)");
    icl::Prompt xinf = p;
    xinf.x[1][0] = INFINITY;
    EXPECT_EQ(writeError(path, xinf), "cannot write " + path + ": point 2 holds a value that is not finite");
}

// The committed fixtures written by tests/data/foreign/make_fixtures.py (NumPy, json and csv modules): the same
// prompt as JSON and as CSV (d = 5, 11 points, the query's label absent) reads as the same Prompt.
TEST(PromptFile, ForeignJsonAndCsvFixturesGiveTheSamePrompt)
{
    const std::string dir = std::string(ICL_TEST_DATA_DIR) + "/foreign/";
    const icl::Prompt json = icl::readPromptFile(dir + "prompt.json", { 5, 11 });
    const icl::Prompt csv = icl::readPromptFile(dir + "prompt.csv", { 5, 11 });
    EXPECT_TRUE(samePrompt(csv, json));
    ASSERT_EQ(json.x.size(), 11u);
    EXPECT_EQ(json.dim(), 5);
    EXPECT_EQ(json.nContext(), 10);
    EXPECT_TRUE(std::isnan(json.y.back())) << "the query's label is not in the files";
    EXPECT_TRUE(json.w.empty());
    // Values as printed by Python's repr in both files.
    EXPECT_EQ(json.x[0][0], 0.29946109652519226);
    EXPECT_EQ(json.x[10][4], -0.7921982407569885);
    EXPECT_EQ(json.y[0], -6.054860591888428);
    EXPECT_EQ(json.y[9], -0.448726087808609);
    // The fixture's numbers are float32 values (README): each survives a round trip through float.
    for (const auto& row : json.x)
        for (double v : row)
            EXPECT_EQ(double(float(v)), v);
    // The model's positions bound the file: 11 points do not fit a model that takes 10.
    EXPECT_EQ(readError(dir + "prompt.csv", { 5, 10 }), dir + "prompt.csv: 11 points, the model takes at most 10 (N+1)");
}

// Hostile prompt files (issue 46): each is refused with one line naming the file, before anything is allocated
// for what it claims, and nothing but icl::Error leaves the reader (readError catches only icl::Error).
TEST(PromptFile, HostileFilesAreRefusedInOneLine)
{
    // A million nested arrays: dump() and destruction would recurse once per level (SIGSEGV before the fix).
    const std::string deep = writeText("deep.json", "{\"x\": " + std::string(1000000, '[') + std::string(1000000, ']')
                                                        + ", \"y\": [1]}");
    EXPECT_EQ(readError(deep), deep + ": JSON nested deeper than 64 levels");

    // Invalid UTF-8 in a string: the parser's own refusal, one line (its raw bytes are escaped where it is shown).
    const std::string utf8 = writeText("utf8.json", "{\"x\": [[1], [\"\xff\xfe\"]], \"y\": [1]}");
    EXPECT_EQ(readError(utf8).rfind(utf8 + ": not valid JSON (line 1, column ", 0), 0u) << readError(utf8);
    EXPECT_NE(readError(utf8).find("ill-formed UTF-8 byte"), std::string::npos) << readError(utf8);

    // A component index past INT64_MAX read as −1 (no component) before the fix.
    const std::string comp = writeText("comp.json", R"({"x": [[1], [2]], "y": [1], "component": 18446744073709551615})");
    EXPECT_EQ(readError(comp), comp + ": \"component\" is 18446744073709551615, expected the mixture component index "
                                      "≥ 0 (or −1 for none)");

    // A FIFO would block the open forever, /dev/zero never ends: only regular files are read.
    const std::string fifo = promptScratchPath("fifo.csv");
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(readError(fifo), fifo + ": not a regular file (a FIFO, device or socket), expected a prompt file (JSON or CSV)");
    ::unlink(fifo.c_str());
    EXPECT_EQ(readError("/dev/zero"),
              "/dev/zero: not a regular file (a FIFO, device or socket), expected a prompt file (JSON or CSV)");
    const std::string dir = promptScratchPath("folder");
    fs::create_directories(dir);
    EXPECT_EQ(readError(dir), dir + ": is a folder, expected a prompt file (JSON or CSV)");

    // Over the size limit (a sparse file of 20 MB): refused from its size, before it is read.
    const std::string big = promptScratchPath("big.csv");
    {
        std::ofstream f(big, std::ios::binary | std::ios::trunc);
        f.seekp(std::streamoff(20000000 - 1));
        f.put('\n');
    }
    EXPECT_EQ(readError(big), big + ": 20.0 MB, more than the 16.8 MB a prompt file may have");
    fs::remove(big);

    // A header or a row of a million columns: counted before a cell is split off.
    const std::string wide = writeText("wide.csv", std::string(1000000, ',') + "y\n");
    EXPECT_EQ(readError(wide), wide + " line 1: header of 1000001 columns, a prompt file has at most 100000 x columns");
    const std::string row = writeText("row.csv", "x_1,y\n" + std::string(1000000, ',') + "\n1,\n");
    EXPECT_EQ(readError(row), row + " line 2: 1000001 values, expected 2 (x_1,y)");

    // More points than any prompt file has (the model's own limit comes on top).
    std::string many = "x_1,y\n";
    for (int i = 0; i <= icl::kMaxPromptPoints; ++i)
        many += "1,1\n";
    const std::string manyPath = writeText("many.csv", many);
    EXPECT_EQ(readError(manyPath), manyPath + ": more than 100000 points, a prompt file has at most 100000");

    // A long cell is quoted cut to 60 bytes, so the line stays short.
    const std::string longCell = writeText("long_cell.csv", "x_1,y\n" + std::string(5000, 'a') + ",1\n2,\n");
    EXPECT_EQ(readError(longCell), longCell + " line 2, column x_1: \"" + std::string(60, 'a') + "…\" is not a number");

    // Over the memory budget: the parse of a 1.4 KB JSON file (charged at 32 bytes per byte) does not fit 4 KB.
    std::string x = "{\"x\": [";
    for (int i = 0; i < 200; ++i)
        x += (i ? ", " : "") + std::string("[0.5]");
    const std::string budget = writeText("budget.json", x + "], \"y\": [1]}");
    icl::PromptFileLimits small;
    small.max_memory = 4096;
    const std::string message = readError(budget, small);
    EXPECT_EQ(message.rfind(budget + ": refused: the parsed JSON would need ", 0), 0u) << message;
    EXPECT_NE(message.find("over the memory budget of 4.10 KB"), std::string::npos) << message;
    for (const std::string& m : { message, readError(deep), readError(wide) })
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}
