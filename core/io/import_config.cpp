#include "core/io/import_config.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/config.h"

namespace icl {

namespace {

/// Refuses a YAML tree deeper than kMaxJsonDepth or with more nodes than a config holds, walking it with an explicit
/// stack (yaml-cpp's aliases can make a node its own descendant, or a small file a tree of billions of nodes).
void checkYamlShape(const YAML::Node& root, const std::string& path)
{
    constexpr size_t kMaxNodes = 100000;
    std::vector<std::pair<YAML::Node, int>> stack{{root, 0}};
    size_t visited = 0;
    while (!stack.empty()) {
        const auto [node, depth] = stack.back();
        stack.pop_back();
        if (++visited > kMaxNodes)
            throw Error(path + ": YAML of more than " + std::to_string(kMaxNodes)
                        + " nodes (counting each alias at every use), more than a config holds");
        if (!node.IsMap() && !node.IsSequence())
            continue;
        if (depth + 1 > kMaxJsonDepth)
            throw Error(path + ": YAML nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        for (auto it = node.begin(); it != node.end(); ++it) {
            if (node.IsMap()) {
                stack.emplace_back(it->first, depth + 1);
                stack.emplace_back(it->second, depth + 1);
            } else {
                stack.emplace_back(*it, depth + 1);
            }
        }
    }
}

/// Reads values of Garg et al.'s YAML: numbers parsed from the text as written, with bounds, and quoted as written
/// in messages ("model.n_layer: expected an integer in [1, 1000], got 99999999999999999999").
class YamlReader {
public:
    explicit YamlReader(std::string path)
        : m_path(std::move(path))
    {
    }

    /// The scalar at node[key] (absent or null: nullopt); `where` is its key path in the file.
    std::optional<std::string> text(const YAML::Node& node, const char* key, const std::string& where) const
    {
        if (!node || !node.IsMap() || !node[key] || node[key].IsNull())
            return std::nullopt;
        const YAML::Node v = node[key];
        if (!v.IsScalar())
            throw Error(m_path + ": " + where + ": expected a value, got a " + (v.IsMap() ? "map" : "list"));
        return v.Scalar();
    }

    /// An integer in [min, max] (decimal, optionally signed).
    std::optional<int64_t> integer(const YAML::Node& node, const char* key, const std::string& where, int64_t min,
                                   int64_t max) const
    {
        const std::optional<std::string> t = text(node, key, where);
        if (!t)
            return std::nullopt;
        const std::string digits = !t->empty() && t->front() == '+' ? t->substr(1) : *t;
        int64_t v = 0;
        const char* end = digits.data() + digits.size();
        const auto [at, ec] = std::from_chars(digits.data(), end, v);
        if (digits.empty() || ec != std::errc() || at != end || v < min || v > max)
            throw Error(m_path + ": " + where + ": expected an integer in [" + std::to_string(min) + ", "
                        + std::to_string(max) + "], got " + *t);
        return v;
    }

    /// An integer within the range of the workbench config key `key_path` it becomes, shifted by `offset`
    /// (value + offset must lie in the key's range).
    std::optional<int64_t> integerFor(const YAML::Node& node, const char* key, const std::string& where,
                                      const std::string& key_path, int64_t offset = 0, int64_t scale = 1) const
    {
        const auto [min, max] = configIntegerRange(key_path);
        return integer(node, key, where, (min - offset + scale - 1) / scale, (max - offset) / scale);
    }

    /// A finite number.
    std::optional<double> number(const YAML::Node& node, const char* key, const std::string& where) const
    {
        const std::optional<std::string> t = text(node, key, where);
        if (!t)
            return std::nullopt;
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(t->c_str(), &end);
        if (t->empty() || end != t->c_str() + t->size() || errno == ERANGE || !std::isfinite(v))
            throw Error(m_path + ": " + where + ": expected a finite number, got " + *t);
        return v;
    }

private:
    std::string m_path;
};

} // namespace

/// Garg et al.'s config.yaml (quinine): model.{family, n_dims, n_embd, n_layer, n_head, n_positions},
/// training.{task, task_kwargs, data, curriculum.{dims, points}.{start, end, inc, interval}}. Read with the config
/// file limits (16 MB, nesting 64, 100000 nodes); each number within the range of the key it becomes.
ImportConfigFile readGargConfigYaml(const std::string& path, const std::string& text)
{
    ImportConfigFile c;
    c.kind = "garg";
    c.path = path;
    const YamlReader y(path);
    try {
        const YAML::Node root = YAML::Load(text);
        checkYamlShape(root, path);
        const YAML::Node model = root["model"], training = root["training"];
        if (auto family = y.text(model, "family", "model.family"); family && *family != "gpt2")
            throw Error(path + ": model.family: " + *family
                        + " (only Garg et al.'s gpt2 family has a workbench model)");
        c.values["model.kind"] = "gpt2";
        if (auto v = y.integerFor(model, "n_dims", "model.n_dims", "task.d"))
            c.values["task.d"] = *v;
        if (auto v = y.integerFor(model, "n_embd", "model.n_embd", "model.d_model"))
            c.values["model.d_model"] = *v;
        if (auto v = y.integerFor(model, "n_layer", "model.n_layer", "model.n_layers"))
            c.values["model.n_layers"] = *v;
        if (auto v = y.integerFor(model, "n_head", "model.n_head", "model.n_heads"))
            c.values["model.n_heads"] = *v;
        // GPT2Config(n_positions = 2 · n_positions): x and y tokens
        if (auto v = y.integerFor(model, "n_positions", "model.n_positions", "model.n_positions", 0, 2))
            c.values["model.n_positions"] = 2 * *v;
        if (auto task = y.text(training, "task", "training.task")) {
            static const std::set<std::string> supported
                = {"linear_regression", "sparse_linear_regression", "noisy_linear_regression"};
            if (!supported.count(*task))
                c.unsupported = path + ": training.task: Garg et al.'s " + *task
                                + " has no workbench task (linear_regression, sparse_linear_regression, "
                                  "noisy_linear_regression); --set task.kind=linear_regression to inspect it on linear prompts";
            else
                c.values["task.kind"] = *task;
            const YAML::Node kwargs = training["task_kwargs"];
            if (auto v = y.integerFor(kwargs, "sparsity", "training.task_kwargs.sparsity", "task.sparsity"))
                c.values["task.sparsity"] = *v;
            if (auto v = y.number(kwargs, "noise_std", "training.task_kwargs.noise_std"))
                c.values["task.noise_std"] = *v;
        }
        if (auto data = y.text(training, "data", "training.data")) {
            if (*data != "gaussian")
                throw Error(path + ": training.data: " + *data
                            + " (the workbench draws x from a Gaussian or uniform)");
            c.values["task.x_distribution"] = "normal";
        }
        const YAML::Node curriculum = training["curriculum"];
        if (curriculum && curriculum.IsMap()) {
            const YAML::Node dims = curriculum["dims"], points = curriculum["points"];
            const std::string cu = "training.curriculum.";
            // points = in-context examples + the query
            if (auto v = y.integerFor(points, "end", cu + "points.end", "task.n_context", -1))
                c.values["task.n_context"] = *v - 1;
            if (auto v = y.integerFor(dims, "end", cu + "dims.end", "task.d"); v && !c.values.count("task.d"))
                c.values["task.d"] = *v;
            const std::string wb = "training.curriculum.";
            auto s = y.integerFor(dims, "start", cu + "dims.start", wb + "dims_start");
            auto si = y.integerFor(dims, "inc", cu + "dims.inc", wb + "dims_inc");
            auto p = y.integerFor(points, "start", cu + "points.start", wb + "points_start");
            auto pi = y.integerFor(points, "inc", cu + "points.inc", wb + "points_inc");
            auto interval = y.integerFor(dims, "interval", cu + "dims.interval", wb + "interval");
            if (s && si && p && pi && interval) {
                c.values["training.curriculum.enabled"] = true;
                c.values["training.curriculum.dims_start"] = *s;
                c.values["training.curriculum.dims_inc"] = *si;
                c.values["training.curriculum.points_start"] = *p;
                c.values["training.curriculum.points_inc"] = *pi;
                c.values["training.curriculum.interval"] = *interval;
            }
        }
        if (auto v = y.number(training, "learning_rate", "training.learning_rate"))
            c.values["training.lr"] = *v;
        if (auto v = y.integerFor(training, "batch_size", "training.batch_size", "training.batch_size"))
            c.values["training.batch_size"] = *v;
    } catch (const YAML::Exception& e) {
        throw Error(path + ": not a readable YAML config (" + e.msg + ")");
    }
    return c;
}

ImportConfigFile readImportConfigFile(const std::string& path)
{
    const std::string text = readConfigText(path);  // bounded: 16 MB
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') {
        ImportConfigFile c;
        c.kind = "workbench";
        c.path = path;
        ConfigRequest req;
        req.config_file = path;
        c.base = resolveConfig(req);  // parsed with the nesting limit
        return c;
    }
    return readGargConfigYaml(path, text);
}

} // namespace icl
