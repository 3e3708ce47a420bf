#include "core/io/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/checked_size.h"
#include "core/io/config_schema.h"
#include "core/io/kinds.h"

namespace icl {
namespace detail {
const std::vector<std::pair<std::string, std::string>>& embeddedPresets();
}

namespace {

using Json = nlohmann::json;
using Cfg = ExperimentConfig;

std::string shortJson(const Json& v)
{
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

[[noreturn]] void fail(const std::string& path, const std::string& expectation, const Json& got)
{
    throw Error(path + ": expected " + expectation + ", got " + shortJson(got));
}

std::string quotedList(const std::vector<std::string>& names)
{
    std::string list;
    for (const auto& a : names)
        list += (list.empty() ? "\"" : ", \"") + a + "\"";
    return list;
}

std::string intRange(int64_t min, int64_t max)
{
    return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

// An integer that fits int64 (a float such as 3.0 counts; 1e30 and 2^64 − 1 do not: casting them is undefined).
bool isIntegral(const Json& v)
{
    if (v.is_number_unsigned())
        return v.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max());
    if (v.is_number_integer())
        return true;
    if (!v.is_number_float())
        return false;
    const double d = v.get<double>();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 && d == std::trunc(d);
}

// The value of an integral `v` (isIntegral) without a detour through double, which rounds past 2^53.
int64_t integralValue(const Json& v)
{
    return v.is_number_integer() ? v.get<int64_t>() : static_cast<int64_t>(v.get<double>());
}

// One record of the schema (like llama.cpp's common_arg): the key's description (ConfigKey) and how it is
// read, written and cross-checked. Records are built by the helpers below from a field accessor, a generic
// lambda `[](auto& c) -> auto& { return c.task.d; }` that serves both the const and the mutable config.
struct KeyRecord {
    ConfigKey info;
    /// Validates the key's JSON value (present in the input) and stores it; throws icl::Error "path: expected …".
    std::function<void(Cfg&, const Json&)> read;
    /// The key's value in the config's JSON form (toJson).
    std::function<Json(const Cfg&)> write;
    /// Constraints that tie the key to keys declared before it, run right after the key is read, whether
    /// the input has it or not (the order of the table is the order of the checks); empty = none.
    std::function<void(const Cfg&)> check;
    /// Integer keys with a fixed range: [min, max] (configIntegerRange).
    bool ranged = false;
    int64_t min = 0, max = 0;

    KeyRecord then(std::function<void(const Cfg&)> f) &&
    {
        check = std::move(f);
        return std::move(*this);
    }
};

#define ICL_FIELD(member) [](auto& c) -> auto& { return c.member; }

template <class F>
KeyRecord record(std::string path, const char* type, std::string range, std::vector<std::string> choices, F field,
                 std::function<void(Cfg&, const Json&)> read, std::string doc)
{
    static const Cfg defaults;
    KeyRecord r;
    r.info = {std::move(path), type, Json(field(defaults)), std::move(range), std::move(choices), std::move(doc)};
    r.read = std::move(read);
    r.write = [field](const Cfg& c) { return Json(field(c)); };
    return r;
}

template <class F>
KeyRecord integerKey(const std::string& path, F field, int64_t min, int64_t max, std::string doc)
{
    const std::string range = intRange(min, max);
    KeyRecord r = record(path, "integer", range, {}, field, [path, field, range, min, max](Cfg& c, const Json& v) {
        if (!isIntegral(v))
            fail(path, range, v);
        const int64_t n = integralValue(v);
        if (n < min || n > max)
            fail(path, range, v);
        field(c) = n;
    }, std::move(doc));
    r.ranged = true;
    r.min = min;
    r.max = max;
    return r;
}

/// An integer key whose upper bound is another key's value (read before it); `maxName` names that key.
template <class F, class G>
KeyRecord integerKeyUpTo(const std::string& path, F field, int64_t min, G maxOf, const std::string& maxName,
                         std::string doc)
{
    return record(path, "integer", "an integer in [" + std::to_string(min) + ", " + maxName + "]", {}, field,
                  [path, field, min, maxOf](Cfg& c, const Json& v) {
                      const int64_t max = maxOf(c);
                      if (!isIntegral(v))
                          fail(path, intRange(min, max), v);
                      const int64_t n = integralValue(v);
                      if (n < min || n > max)
                          fail(path, intRange(min, max), v);
                      field(c) = n;
                  }, std::move(doc));
}

template <class F>
KeyRecord numberKey(const std::string& path, F field, bool (*ok)(double), const std::string& expectation,
                    std::string doc)
{
    return record(path, "number", expectation, {}, field, [path, field, ok, expectation](Cfg& c, const Json& v) {
        if (!v.is_number() || !ok(v.get<double>()))
            fail(path, expectation, v);
        field(c) = v.get<double>();
    }, std::move(doc));
}

template <class F>
KeyRecord booleanKey(const std::string& path, F field, std::string doc)
{
    return record(path, "boolean", "true or false", {}, field, [path, field](Cfg& c, const Json& v) {
        if (!v.is_boolean())
            fail(path, "true or false", v);
        field(c) = v.get<bool>();
    }, std::move(doc));
}

template <class F>
KeyRecord stringKey(const std::string& path, F field, std::string doc)
{
    return record(path, "string", "", {}, field, [path, field](Cfg& c, const Json& v) {
        if (!v.is_string())
            fail(path, "a string", v);
        field(c) = v.get<std::string>();
    }, std::move(doc));
}

template <class F>
KeyRecord choiceKey(const std::string& path, F field, std::vector<std::string> choices, std::string doc)
{
    const std::string range = "one of " + quotedList(choices);
    return record(path, "choice", range, choices, field, [path, field, choices, range](Cfg& c, const Json& v) {
        if (!v.is_string() || std::find(choices.begin(), choices.end(), v.get<std::string>()) == choices.end())
            fail(path, range, v);
        field(c) = v.get<std::string>();
    }, std::move(doc));
}

bool positive(double v) { return v > 0; }
bool nonNegative(double v) { return v >= 0; }
bool unitInterval(double v) { return v >= 0 && v < 1; }
bool probability(double v) { return v >= 0 && v <= 1; }
bool finite(double v) { return std::isfinite(v); }
bool finiteNonNegative(double v) { return v >= 0 && std::isfinite(v); }
bool anyNumber(double) { return true; }
constexpr int64_t kBig = int64_t(1) << 40;

const std::vector<std::string> kBaselineNames = {"zero",        "least_squares", "ridge",           "gd",
                                                 "gd_plus_plus", "features_gd",  "knn",             "averaging",
                                                 "oracle_ridge_phi", "mixture_posterior", "newton"};

// Constraints between keys of different sections, checked after every key is read.
void checkAcrossSections(const Cfg& c);

// The schema: every key once, in the order keys are read and checked. Section of a key = its path up to
// the last dot; the keys of a section are contiguous and a subsection follows its parent's keys.
std::vector<KeyRecord> buildSchema()
{
    std::vector<KeyRecord> k;
    // ---- root
    k.push_back(stringKey("preset", ICL_FIELD(preset), "preset the config came from (set by --preset; \"\" for a config file)"));
    k.push_back(stringKey("scale", ICL_FIELD(scale), "scale of the preset, \"quick\" or \"paper\" (set by --scale)"));
    k.push_back(stringKey("description", ICL_FIELD(description), "one line describing the experiment"));
    k.push_back(record("seed", "integer", "a non-negative integer (< 2^64)", {}, ICL_FIELD(seed),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_number_integer() || v.get<int64_t>() < 0)
                               throw Error("seed: expected a non-negative integer, got " + shortJson(v));
                           c.seed = v.get<uint64_t>();
                       },
                       "the experiment's seed: initialisation, training batches and evaluation prompts derive from it"));
    k.push_back(record("device", "string", "\"auto\", \"cpu\", \"cuda\" or \"cuda:N\"", {}, ICL_FIELD(device),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_string())
                               fail("device", "a string", v);
                           c.device = v.get<std::string>();
                       },
                       "where training runs; \"auto\" = the first CUDA device if there is one, else the CPU")
                    .then([](const Cfg& c) {
                        if (c.device != "auto" && c.device != "cpu" && c.device.rfind("cuda", 0) != 0)
                            throw Error("device: expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", got \"" + c.device
                                        + "\"");
                    }));

    // ---- task
    k.push_back(choiceKey("task.kind", ICL_FIELD(task.kind), kindNames<TaskKind>(),
                          "the in-context-learning task (TaskConfig in core/io/config.h describes each)"));
    k.push_back(choiceKey("task.layout", ICL_FIELD(task.layout), kindNames<TaskLayout>(),
                          "tokens of a prompt: \"pair\" (e_i = (x_i, y_i)) or \"interleaved\" (x and y tokens)"));
    k.push_back(integerKey("task.d", ICL_FIELD(task.d), 1, 4096, "input dimension d of x"));
    k.push_back(integerKey("task.n_context", ICL_FIELD(task.n_context), 1, 100000,
                           "N, the number of in-context examples of a prompt"));
    k.push_back(choiceKey("task.x_distribution", ICL_FIELD(task.x_distribution), {"uniform", "normal"},
                          "distribution of x: U(-x_range, x_range)^d or N(0, I_d)"));
    k.push_back(numberKey("task.x_range", ICL_FIELD(task.x_range), positive, "a number > 0",
                          "half-width of the uniform x distribution"));
    k.push_back(numberKey("task.x_condition_number", ICL_FIELD(task.x_condition_number),
                          [](double v) { return v >= 1.0 && v <= 1e12; }, "a number in [1, 1e12]",
                          "condition number kappa of the input covariance: x ~ N(0, Sigma), Sigma diagonal with "
                          "eigenvalues log-spaced over a factor kappa and mean 1 (1 = N(0, I)); needs "
                          "x_distribution \"normal\" and a linear-regression task")
                    .then([](const Cfg& c) {
                        if (c.task.x_condition_number == 1.0)
                            return;
                        if (c.task.x_distribution != "normal")
                            throw Error("task.x_condition_number: an input covariance needs task.x_distribution "
                                        "\"normal\", got \"" + c.task.x_distribution + "\"");
                        if (!isLinearRegression(kindOf(c.task)))
                            throw Error("task.x_condition_number: ill-conditioned inputs exist for the linear-regression "
                                        "tasks, got task.kind \"" + c.task.kind + "\"");
                    }));
    k.push_back(numberKey("task.w_scale", ICL_FIELD(task.w_scale), positive, "a number > 0",
                          "w ~ N(0, w_scale^2 I) (representation tasks: I of width rep_dim)"));
    k.push_back(numberKey("task.noise_std", ICL_FIELD(task.noise_std), nonNegative, "a number >= 0",
                          "standard deviation sigma of the Gaussian label noise on y_i and y_q")
                    .then([](const Cfg& c) {
                        if (kindOf(c.task) == TaskKind::NoisyLinearRegression && !(c.task.noise_std > 0))
                            throw Error("task.noise_std: noisy_linear_regression needs label noise, expected a "
                                        "number > 0, got " + shortJson(c.task.noise_std));
                    }));
    k.push_back(integerKey("task.sparsity", ICL_FIELD(task.sparsity), 1, 4096,
                           "sparse_linear_regression: k, the number of non-zero coordinates of w (at most task.d)")
                    .then([](const Cfg& c) {
                        if (kindOf(c.task) == TaskKind::SparseLinearRegression && c.task.sparsity > c.task.d)
                            throw Error("task.sparsity: expected at most task.d = " + std::to_string(c.task.d)
                                        + " non-zero coordinates of w, got " + std::to_string(c.task.sparsity));
                    }));
    k.push_back(numberKey("task.amplitude_min", ICL_FIELD(task.amplitude_min), finite, "a finite number",
                          "sine_regression: a ~ U(amplitude_min, amplitude_max)"));
    k.push_back(numberKey("task.amplitude_max", ICL_FIELD(task.amplitude_max), finite, "a finite number",
                          "sine_regression: upper end of the amplitude (>= amplitude_min)"));
    k.push_back(numberKey("task.phase_min", ICL_FIELD(task.phase_min), finite, "a finite number",
                          "sine_regression: phi ~ U(phase_min, phase_max), radians"));
    k.push_back(numberKey("task.phase_max", ICL_FIELD(task.phase_max), finite, "a finite number",
                          "sine_regression: upper end of the phase (>= phase_min), radians")
                    .then([](const Cfg& c) {
                        if (c.task.amplitude_max < c.task.amplitude_min)
                            throw Error("task.amplitude_max: expected a number >= task.amplitude_min");
                        if (c.task.phase_max < c.task.phase_min)
                            throw Error("task.phase_max: expected a number >= task.phase_min");
                    }));
    k.push_back(integerKey("task.rep_dim", ICL_FIELD(task.rep_dim), 0, 4096,
                           "representation tasks: D, output width of Phi*; 0 = task.d"));
    k.push_back(integerKey("task.rep_layers", ICL_FIELD(task.rep_layers), 1, 64,
                           "representation tasks: L, layers of the bias-free MLP Phi*"));
    k.push_back(integerKey("task.n_representations", ICL_FIELD(task.n_representations), 1, 1024,
                           "representation tasks: K, the number of Phi* (representation: 1, mixture: >= 2)")
                    .then([](const Cfg& c) {
                        const TaskKind kind = kindOf(c.task);
                        if (kind == TaskKind::RepresentationMixture && c.task.n_representations < 2)
                            throw Error("task.n_representations: representation_mixture needs at least 2, got "
                                        + std::to_string(c.task.n_representations));
                        if (kind == TaskKind::Representation && c.task.n_representations != 1)
                            throw Error("task.n_representations: a representation task has one Φ*; use "
                                        "representation_mixture");
                        if (kind == TaskKind::SineRegression && c.task.d != 1)
                            throw Error("task.d: sine_regression has scalar inputs, expected 1, got "
                                        + std::to_string(c.task.d));
                    }));
    k.push_back(integerKey("task.n_classes", ICL_FIELD(task.n_classes), 1, 10000000,
                           "fewshot_classification: training classes"));
    k.push_back(integerKey("task.n_holdout", ICL_FIELD(task.n_holdout), 0, 10000000,
                           "fewshot_classification: holdout classes (ICL evaluation only)"));
    k.push_back(numberKey("task.zipf_alpha", ICL_FIELD(task.zipf_alpha), finiteNonNegative, "a finite number >= 0",
                          "fewshot_classification: Zipf exponent alpha over training classes (0 = uniform)"));
    k.push_back(numberKey("task.p_bursty", ICL_FIELD(task.p_bursty), probability, "a number in [0, 1]",
                          "fewshot_classification: probability that a training sequence is bursty"));
    k.push_back(integerKey("task.labels_per_class", ICL_FIELD(task.labels_per_class), 1, 100000,
                           "fewshot_classification: label multiplicity"));
    k.push_back(integerKey("task.n_labels", ICL_FIELD(task.n_labels), 0, 100000000,
                           "fewshot_classification: label vocabulary; 0 = n_classes * labels_per_class"));
    k.push_back(integerKey("task.exemplar_dim", ICL_FIELD(task.exemplar_dim), 1, 1 << 20,
                           "fewshot_classification: width of a synthetic exemplar vector"));
    k.push_back(numberKey("task.within_class_noise", ICL_FIELD(task.within_class_noise), nonNegative, "a number >= 0",
                          "fewshot_classification: sigma of the Gaussian within-class variation (images: pixel noise)"));
    k.push_back(choiceKey("task.exemplar_source", ICL_FIELD(task.exemplar_source), {"synthetic", "image_folder", "idx"},
                          "fewshot_classification: seeded prototypes, an Omniglot-style image folder, or IDX files"));
    k.push_back(stringKey("task.exemplar_path", ICL_FIELD(task.exemplar_path),
                          "image sources: root of alphabet/character/*.png, or the IDX images file"));
    k.push_back(stringKey("task.exemplar_labels_path", ICL_FIELD(task.exemplar_labels_path),
                          "exemplar_source \"idx\": the IDX labels file"));
    k.push_back(integerKey("task.image_size", ICL_FIELD(task.image_size), 0, 4096,
                           "image sources: resize to image_size x image_size (area averaging); 0 = keep"));
    k.push_back(integerKey("task.exemplars_per_class", ICL_FIELD(task.exemplars_per_class), 0, 1 << 30,
                           "image sources: use the first k images of each class; 0 = all"));
    k.push_back(integerKey("task.n_common_classes", ICL_FIELD(task.n_common_classes), 0, 10000000,
                           "fewshot_classification: the first this-many training classes are common, the rest rare; 0 = no split"));
    k.push_back(numberKey("task.p_bursty_common", ICL_FIELD(task.p_bursty_common), probability, "a number in [0, 1]",
                          "common/rare split: fraction of bursty sequences that are few-shot on common classes"));
    k.push_back(numberKey("task.p_bursty_zipfian", ICL_FIELD(task.p_bursty_zipfian), probability, "a number in [0, 1]",
                          "common/rare split: fraction drawn from Zipf over all training classes (rest: rare)"));
    k.push_back(choiceKey("task.non_bursty_type", ICL_FIELD(task.non_bursty_type),
                          {"zipfian", "common", "common_no_support"},
                          "common/rare split: the classes of non-bursty sequences"));
    k.push_back(booleanKey("task.zipf_within_common_rare", ICL_FIELD(task.zipf_within_common_rare),
                           "common/rare split: draws within common / rare follow their Zipf weights (else uniform)")
                    .then([](const Cfg& c) {
                        const TaskConfig& t = c.task;
                        const TaskKind kind = kindOf(t);
                        if (kind == TaskKind::FewshotClassification && t.exemplar_source != "synthetic"
                            && t.exemplar_path.empty())
                            throw Error("task.exemplar_path: exemplar_source \"" + t.exemplar_source
                                        + "\" reads its images from a path; none given");
                        if (kind == TaskKind::FewshotClassification && t.exemplar_source == "idx"
                            && t.exemplar_labels_path.empty())
                            throw Error("task.exemplar_labels_path: exemplar_source \"idx\" needs the IDX labels file");
                        if (kind != TaskKind::FewshotClassification)
                            return;
                        if (layoutOf(t) != TaskLayout::Interleaved)
                            throw Error("task.layout: fewshot_classification sequences interleave exemplar and label "
                                        "tokens, expected \"interleaved\", got \"" + t.layout + "\"");
                        if (t.n_context < 6 || t.n_context % 2)
                            throw Error("task.n_context: a bursty sequence holds 3 + 3 exemplars of two classes and "
                                        "the ICL evaluation n_context/2 shots of each of 2 classes, so expected an "
                                        "even integer >= 6, got " + std::to_string(t.n_context));
                        if (t.n_holdout < 2)
                            throw Error("task.n_holdout: the ICL evaluation draws 2 holdout classes, expected >= 2, got "
                                        + std::to_string(t.n_holdout));
                        // A bursty sequence needs the query's class, a second class and others; non-bursty sequences
                        // draw their classes independently (with replacement), so a 10-class dataset such as
                        // Fashion-MNIST fits.
                        if (t.n_classes < 3)
                            throw Error("task.n_classes: a bursty sequence holds the query's class, a second class and "
                                        "items of other classes, expected >= 3, got " + std::to_string(t.n_classes));
                        const int64_t labels = t.n_labels > 0 ? t.n_labels : t.n_classes * t.labels_per_class;
                        if (labels < std::max<int64_t>(2, t.labels_per_class))
                            throw Error("task.n_labels: the label vocabulary must hold at least max(2, "
                                        "task.labels_per_class) = " + std::to_string(std::max<int64_t>(2, t.labels_per_class))
                                        + " labels, got " + std::to_string(labels));
                        if (t.n_common_classes == 0) {
                            const char* needsSplit = t.p_bursty_common != 0 ? "p_bursty_common"
                                : t.p_bursty_zipfian != 1                   ? "p_bursty_zipfian"
                                : t.non_bursty_type != "zipfian"            ? "non_bursty_type"
                                : t.zipf_within_common_rare                 ? "zipf_within_common_rare"
                                                                            : nullptr;
                            if (needsSplit)
                                throw Error(std::string("task.") + needsSplit
                                            + ": common and rare classes need a split, set task.n_common_classes > 0");
                        } else if (t.n_common_classes < 2 || t.n_classes - t.n_common_classes < 2) {
                            throw Error("task.n_common_classes: a few-shot problem draws 2 classes of a set, so expected "
                                        "at least 2 common and 2 rare classes (2 <= n_common_classes <= task.n_classes "
                                        "- 2 = " + std::to_string(t.n_classes - 2) + "), got "
                                        + std::to_string(t.n_common_classes));
                        }
                        if (t.p_bursty_common + t.p_bursty_zipfian > 1 + 1e-12)
                            throw Error("task.p_bursty_common: p_bursty_common + task.p_bursty_zipfian must be <= 1 "
                                        "(the rest of the bursty sequences are few-shot problems on rare classes), got "
                                        + shortJson(t.p_bursty_common) + " + " + shortJson(t.p_bursty_zipfian));
                        if (t.n_labels != 0 && t.n_labels < 2)
                            throw Error("task.n_labels: the ICL evaluation uses labels {0, 1}, expected 0 (one per "
                                        "class and label) or >= 2, got " + std::to_string(t.n_labels));
                    }));

    // ---- model
    k.push_back(choiceKey("model.kind", ICL_FIELD(model.kind), kindNames<ModelKind>(),
                          "\"lsa\" (linear self-attention), \"gpt2\" (GPT-2 decoder), or the recurrent baselines "
                          "\"lstm\", \"rnn\" (fewshot_classification only)"));
    k.push_back(integerKey("model.n_layers", ICL_FIELD(model.n_layers), 1, 1000, "K (lsa) or L (gpt2): layers"));
    k.push_back(integerKey("model.n_heads", ICL_FIELD(model.n_heads), 1, 1024, "attention heads per layer"));
    k.push_back(integerKey("model.d_model", ICL_FIELD(model.d_model), 1, 65536,
                           "gpt2: residual stream width (divisible by n_heads)"));
    k.push_back(integerKey("model.n_positions", ICL_FIELD(model.n_positions), 0, 1 << 20,
                           "gpt2: rows of the learned position embedding; 0 = 2 * task.n_context + 1")
                    .then([](const Cfg& c) {
                        if (kindOf(c.model) == ModelKind::Gpt2 && c.model.d_model % c.model.n_heads != 0)
                            throw Error("model.d_model: must be divisible by model.n_heads ("
                                        + std::to_string(c.model.n_heads) + "), got " + std::to_string(c.model.d_model));
                    }));
    k.push_back(booleanKey("model.tied", ICL_FIELD(model.tied), "one shared layer applied K times (recurrent)"));
    k.push_back(numberKey("model.init_scale", ICL_FIELD(model.init_scale), positive, "a number > 0",
                          "variance-scaling initialisation scale; divided by K"));
    k.push_back(choiceKey("model.init", ICL_FIELD(model.init),
                          {"variance_scaling", "gd_construction", "gdpp_construction"},
                          "random initialisation, or the GD / GD++ construction (plain LSA on the pair layout)"));
    k.push_back(choiceKey("model.encoder", ICL_FIELD(model.encoder), {"linear", "resnet"},
                          "fewshot_classification: exemplar encoder (\"resnet\": Chan et al.'s ResNet for images)"));
    k.push_back(integerKeyUpTo("model.softmax_layers", ICL_FIELD(model.softmax_layers), 0,
                               [](const Cfg& c) { return c.model.n_layers; }, "model.n_layers",
                               "lsa: the first this-many layers use softmax attention (scaled by 1/sqrt(D))"));
    k.push_back(booleanKey("model.layer_norm", ICL_FIELD(model.layer_norm), "lsa: LayerNorm on each layer's input (pre-LN)"));
    k.push_back(booleanKey("model.mlp", ICL_FIELD(model.mlp), "lsa: a residual MLP (D -> 4D -> D, GELU) after each attention layer"));
    k.push_back(choiceKey("model.positions", ICL_FIELD(model.positions), {"none", "sinusoidal"},
                          "lsa: a sinusoidal position code concatenated to every token, or none"));
    k.push_back(integerKey("model.pos_dim", ICL_FIELD(model.pos_dim), 2, 4096,
                           "lsa: width of the sinusoidal position code (even)")
                    .then([](const Cfg& c) {
                        if (c.model.pos_dim % 2)
                            throw Error("model.pos_dim: expected an even integer (sine and cosine pairs), got "
                                        + std::to_string(c.model.pos_dim));
                    }));
    k.push_back(record("model.feature_mlp", "integer list", "an array of integers in [1, 65536]", {},
                       ICL_FIELD(model.feature_mlp),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_array())
                               throw Error("model.feature_mlp: expected an array of hidden widths such as [64, 64], got "
                                           + shortJson(v));
                           c.model.feature_mlp.clear();
                           for (size_t i = 0; i < v.size(); ++i) {
                               const auto& w = v[i];
                               if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 65536)
                                   throw Error("model.feature_mlp[" + std::to_string(i)
                                               + "]: expected an integer in [1, 65536], got " + shortJson(w));
                               c.model.feature_mlp.push_back(w.get<int64_t>());
                           }
                       },
                       "lsa: hidden widths of the input MLP representation phi(x) (ReLU)"));
    k.push_back(integerKey("model.feature_dim", ICL_FIELD(model.feature_dim), 0, 65536,
                           "lsa: output width of phi; 0 = no representation (tokens carry x itself)")
                    .then([](const Cfg& c) {
                        if (!c.model.feature_mlp.empty() && c.model.feature_dim == 0)
                            throw Error("model.feature_dim: model.feature_mlp needs an output width > 0");
                    }));
    k.push_back(choiceKey("model.attention_variant", ICL_FIELD(model.attention_variant),
                          {"softmax", "regularized", "augmented", "negative_samples"},
                          "lsa: variant of the softmax layers from the contrastive view of attention (Ren & Liu 2023)"));
    k.push_back(numberKey("model.variant_strength", ICL_FIELD(model.variant_strength), finiteNonNegative,
                          "a finite number >= 0", "lambda, alpha or beta of the attention variant; 0 = plain softmax"));
    k.push_back(integerKey("model.augment_hidden", ICL_FIELD(model.augment_hidden), 1, 65536,
                           "hidden width of the augmented variant's MLPs")
                    .then([](const Cfg& c) {
                        if (c.model.attention_variant != "softmax" && c.model.softmax_layers == 0)
                            throw Error("model.attention_variant: \"" + c.model.attention_variant
                                        + "\" modifies softmax attention layers, but model.softmax_layers is 0");
                    }));

    // ---- training
    k.push_back(choiceKey("training.optimizer", ICL_FIELD(training.optimizer), {"adam", "adamw", "sgd"}, "optimiser"));
    k.push_back(numberKey("training.lr", ICL_FIELD(training.lr), positive, "a number > 0", "peak learning rate"));
    k.push_back(numberKey("training.beta1", ICL_FIELD(training.beta1), unitInterval, "a number in [0, 1)",
                          "Adam beta_1 (sgd: momentum)"));
    k.push_back(numberKey("training.beta2", ICL_FIELD(training.beta2), unitInterval, "a number in [0, 1)", "Adam beta_2"));
    k.push_back(numberKey("training.weight_decay", ICL_FIELD(training.weight_decay), nonNegative, "a number >= 0",
                          "weight decay"));
    k.push_back(integerKey("training.batch_size", ICL_FIELD(training.batch_size), 1, 1 << 24, "prompts per optimisation step"));
    k.push_back(integerKey("training.shards", ICL_FIELD(training.shards), 1, 4096,
                           "parts of the batch whose gradients are computed on separate threads (one intra-op thread "
                           "each) and added in order, so the weights do not depend on the thread count (evaluation "
                           "still runs on the intra-op threads); at most training.batch_size; regression tasks only; "
                           "the fused LSA step ignores it; 1 = whole batch")
                    .then([](const Cfg& c) {
                        if (c.training.shards > c.training.batch_size)
                            throw Error("training.shards: " + std::to_string(c.training.shards)
                                        + " shards of a batch of " + std::to_string(c.training.batch_size)
                                        + " prompts (training.batch_size) would leave some empty");
                    }));
    k.push_back(integerKey("training.steps", ICL_FIELD(training.steps), 0, kBig, "optimisation steps"));
    k.push_back(numberKey("training.grad_clip", ICL_FIELD(training.grad_clip), nonNegative, "a number >= 0 (0 = off)",
                          "global-norm gradient clipping threshold; 0 = off"));
    k.push_back(choiceKey("training.schedule", ICL_FIELD(training.schedule),
                          {"constant", "warmup", "warmup_cosine", "inverse_sqrt"},
                          "learning-rate schedule (inverse_sqrt: min(lr t/warmup, lr sqrt(warmup/t)), Chan et al.)"));
    k.push_back(integerKey("training.warmup_steps", ICL_FIELD(training.warmup_steps), 0, kBig, "warm-up steps of the schedule"));
    k.push_back(integerKey("training.eval_every", ICL_FIELD(training.eval_every), 1, kBig,
                           "steps between evaluations on the fixed evaluation prompts"));
    k.push_back(integerKey("training.checkpoint_every", ICL_FIELD(training.checkpoint_every), 1, kBig,
                           "steps between checkpoints"));
    k.push_back(booleanKey("training.curriculum.enabled", ICL_FIELD(training.curriculum.enabled),
                           "Garg et al.'s curriculum over d and N (CurriculumConfig in core/io/config.h)"));
    k.push_back(integerKey("training.curriculum.dims_start", ICL_FIELD(training.curriculum.dims_start), 1, 4096,
                           "active input coordinates at step 0 (at most task.d)"));
    k.push_back(integerKey("training.curriculum.dims_inc", ICL_FIELD(training.curriculum.dims_inc), 0, 4096,
                           "active coordinates added every interval"));
    k.push_back(integerKey("training.curriculum.points_start", ICL_FIELD(training.curriculum.points_start), 2, 100001,
                           "points (in-context examples + query) at step 0 (at most task.n_context + 1)"));
    k.push_back(integerKey("training.curriculum.points_inc", ICL_FIELD(training.curriculum.points_inc), 0, 100000,
                           "points added every interval"));
    k.push_back(integerKey("training.curriculum.interval", ICL_FIELD(training.curriculum.interval), 1, kBig,
                           "steps between increments"));

    // ---- eval
    k.push_back(integerKey("eval.n_prompts", ICL_FIELD(eval.n_prompts), 1, 10000000, "fixed evaluation prompts"));
    k.push_back(record("eval.baselines", "string list", "an array of baseline names", kBaselineNames,
                       ICL_FIELD(eval.baselines),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_array())
                               throw Error("eval.baselines: expected an array of names, got " + shortJson(v));
                           c.eval.baselines.clear();
                           for (size_t i = 0; i < v.size(); ++i) {
                               const auto& b = v[i];
                               if (!b.is_string()
                                   || std::find(kBaselineNames.begin(), kBaselineNames.end(), b.get<std::string>())
                                       == kBaselineNames.end())
                                   throw Error("eval.baselines[" + std::to_string(i) + "]: expected one of "
                                               + quotedList(kBaselineNames) + ", got " + shortJson(b));
                               c.eval.baselines.push_back(b.get<std::string>());
                           }
                       },
                       "baselines measured on the evaluation prompts (\"gd\": one GD-k per eval.gd_steps entry; "
                       "\"newton\": one Newton-k per eval.newton_steps entry)"));
    k.push_back(record("eval.gd_steps", "integer list", "a non-empty array of integers in [1, 10000]", {},
                       ICL_FIELD(eval.gd_steps),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_array() || v.empty())
                               throw Error("eval.gd_steps: expected a non-empty array of integers >= 1, got "
                                           + shortJson(v));
                           c.eval.gd_steps.clear();
                           for (size_t i = 0; i < v.size(); ++i) {
                               const auto& s = v[i];
                               if (!s.is_number_integer() || s.get<int64_t>() < 1 || s.get<int64_t>() > 10000)
                                   throw Error("eval.gd_steps[" + std::to_string(i)
                                               + "]: expected an integer in [1, 10000], got " + shortJson(s));
                               c.eval.gd_steps.push_back(s.get<int64_t>());
                           }
                       },
                       "k of each GD-k / GD++-k baseline (\"gd_1\", \"gdpp_2\", ...)"));
    k.push_back(record("eval.newton_steps", "integer list", "a non-empty array of integers in [0, 60]", {},
                       ICL_FIELD(eval.newton_steps),
                       [](Cfg& c, const Json& v) {
                           if (!v.is_array() || v.empty())
                               throw Error("eval.newton_steps: expected a non-empty array of integers in [0, 60], got "
                                           + shortJson(v));
                           c.eval.newton_steps.clear();
                           for (size_t i = 0; i < v.size(); ++i) {
                               const auto& s = v[i];
                               if (!s.is_number_integer() || s.get<int64_t>() < 0 || s.get<int64_t>() > 60)
                                   throw Error("eval.newton_steps[" + std::to_string(i)
                                               + "]: expected an integer in [0, 60], got " + shortJson(s));
                               c.eval.newton_steps.push_back(s.get<int64_t>());
                           }
                       },
                       "k of each Iterative Newton baseline (\"newton_3\": M_3), Fu et al. 2023"));
    k.push_back(choiceKey("eval.newton_alpha", ICL_FIELD(eval.newton_alpha), {"frobenius", "spectral"},
                          "Iterative Newton's start M_0 = alpha S: alpha = 1/||SS^T||_F (the authors' code) or "
                          "2/||SS^T||_2 (the paper's text, which never fits the top eigendirection of S)"));
    k.push_back(numberKey("eval.ridge_lambda", ICL_FIELD(eval.ridge_lambda), anyNumber,
                          "a number (negative = Bayes choice)",
                          "ridge penalty lambda; negative = the Bayes choice sigma^2 / w_scale^2"));
    k.push_back(integerKey("eval.bootstrap", ICL_FIELD(eval.bootstrap), 0, 1000000,
                           "bootstrap resamples for confidence intervals"));
    k.push_back(booleanKey("eval.gdpp_tied", ICL_FIELD(eval.gdpp_tied),
                           "GD++-k baselines share one (eta, gamma) across their k steps: the recurrent GD++ a "
                           "tied LSA is compared with"));
    k.push_back(integerKey("eval.features_gd_steps", ICL_FIELD(eval.features_gd_steps), 1, kBig,
                           "Adam steps that meta-train the \"features_gd\" baseline"));
    k.push_back(record("eval.alignment", "string list", "GD baselines of eval.baselines and eval.gd_steps", {},
                       ICL_FIELD(eval.alignment),
                       [](Cfg& c, const Json& v) {
                           EvalConfig& e = c.eval;
                           if (!v.is_array())
                               throw Error("eval.alignment: expected an array of GD baselines such as [\"gd_1\"], got "
                                           + shortJson(v));
                           e.alignment.clear();
                           auto has = [&](const char* b) {
                               return std::find(e.baselines.begin(), e.baselines.end(), b) != e.baselines.end();
                           };
                           for (size_t i = 0; i < v.size(); ++i) {
                               const auto& r = v[i];
                               bool ok = false;
                               if (r.is_string()) {
                                   const std::string name = r.get<std::string>();
                                   for (int64_t s : e.gd_steps) {
                                       ok |= has("gd") && name == "gd_" + std::to_string(s);
                                       ok |= has("gd_plus_plus") && s > 1 && name == "gdpp_" + std::to_string(s);
                                       ok |= has("features_gd") && name == "features_gd_" + std::to_string(s);
                                   }
                               }
                               if (!ok)
                                   throw Error("eval.alignment[" + std::to_string(i) + "]: expected a baseline of "
                                               "eval.baselines and eval.gd_steps (e.g. \"gd_1\", \"gdpp_3\"), got "
                                               + shortJson(r));
                               e.alignment.push_back(r.get<std::string>());
                           }
                       },
                       "GD baselines (\"gd_k\", \"gdpp_k\", \"features_gd_k\") the model is aligned with at every "
                       "evaluation"));
    return k;
}

#undef ICL_FIELD

const std::vector<KeyRecord>& schema()
{
    static const std::vector<KeyRecord> records = buildSchema();
    return records;
}

const KeyRecord* findKey(const std::string& path)
{
    for (const KeyRecord& r : schema())
        if (r.info.path == path)
            return &r;
    return nullptr;
}

std::string sectionOf(const std::string& path)
{
    const auto dot = path.rfind('.');
    return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

// An object of the input being read: rejects the keys the schema does not declare in it.
struct OpenSection {
    std::string path;   // "" for the root
    const Json* object;
    std::set<std::string> known;

    std::string prefix() const { return path.empty() ? std::string() : path + "."; }

    void rejectUnknown() const
    {
        for (auto it = object->begin(); it != object->end(); ++it) {
            if (known.count(it.key()))
                continue;
            std::string list;
            for (const auto& k : known)
                list += (list.empty() ? "" : ", ") + k;
            throw Error(prefix() + it.key() + ": unknown key (known keys: " + list + ")");
        }
    }
};

} // namespace

TaskKind kindOf(const TaskConfig& task)
{
    if (const auto k = kindFromName<TaskKind>(task.kind))
        return *k;
    throw Error("task.kind: unknown task kind \"" + task.kind + "\"");
}

ModelKind kindOf(const ModelConfig& model)
{
    if (const auto k = kindFromName<ModelKind>(model.kind))
        return *k;
    throw Error("model.kind: unknown model kind \"" + model.kind + "\"");
}

TaskLayout layoutOf(const TaskConfig& task)
{
    if (const auto k = kindFromName<TaskLayout>(task.layout))
        return *k;
    throw Error("task.layout: unknown task layout \"" + task.layout + "\"");
}

ExperimentConfig parseConfig(const nlohmann::json& json)
{
    static const Json empty = Json::object();
    ExperimentConfig c;
    std::vector<OpenSection> open;
    auto enter = [&](const std::string& path, const Json& object) {
        if (!object.is_object())
            throw Error((path.empty() ? std::string() : path + ": ") + "expected an object, got " + shortJson(object));
        open.push_back({path, &object, {}});
    };
    auto leave = [&] {
        open.back().rejectUnknown();
        open.pop_back();
    };
    enter("", json);
    for (const KeyRecord& r : schema()) {
        const std::string section = sectionOf(r.info.path);
        // Close the sections that do not hold this key (a finished subsection, then its parent).
        while (!open.back().path.empty() && section != open.back().path
               && section.rfind(open.back().path + ".", 0) != 0)
            leave();
        // Open the sections down to the key's own (a missing section reads as an empty one).
        while (open.back().path != section) {
            const std::string rest = section.substr(open.back().prefix().size());
            const std::string name = rest.substr(0, rest.find('.'));
            OpenSection& parent = open.back();
            parent.known.insert(name);
            const auto it = parent.object->find(name);
            enter(parent.prefix() + name, it == parent.object->end() ? empty : *it);
        }
        const std::string key = r.info.path.substr(open.back().prefix().size());
        open.back().known.insert(key);
        const auto it = open.back().object->find(key);
        if (it != open.back().object->end())
            r.read(c, *it);
        if (r.check)
            r.check(c);
    }
    while (!open.empty())
        leave();
    c.task.experiment_seed = c.seed;
    checkAcrossSections(c);
    return c;
}

namespace {

void checkAcrossSections(const Cfg& c)
{
    const TaskKind task = kindOf(c.task);
    const ModelKind model = kindOf(c.model);
    const TaskLayout layout = layoutOf(c.task);
    const auto& baselines = c.eval.baselines;
    if (std::find(baselines.begin(), baselines.end(), "features_gd") != baselines.end() && c.model.feature_dim == 0)
        throw Error("eval.baselines: \"features_gd\" needs a model with learned features (model.feature_dim > 0)");
    for (const auto& b : baselines)
        if ((b == "oracle_ridge_phi" || b == "mixture_posterior") && !isRepresentationTask(task))
            throw Error("eval.baselines: \"" + b + "\" needs task.kind \"representation\" or \"representation_mixture\"");
    const bool classification = task == TaskKind::FewshotClassification;
    if (classification && model == ModelKind::Lsa)
        throw Error("model.kind: fewshot_classification needs a model with a label read-out: \"gpt2\" (the "
                    "transformer of Chan et al.), \"lstm\" or \"rnn\", got \"lsa\"");
    if (!classification && isRecurrent(model))
        throw Error("model.kind: \"" + c.model.kind + "\" is a recurrent baseline for task.kind "
                    "\"fewshot_classification\" (Chan et al.)");
    if (c.model.encoder == "resnet" && (!classification || c.task.exemplar_source == "synthetic"))
        throw Error("model.encoder: \"resnet\" encodes image exemplars (task.kind \"fewshot_classification\" with "
                    "task.exemplar_source \"image_folder\" or \"idx\"); vector exemplars use \"linear\"");
    if (classification && c.model.d_model % 2)
        throw Error("model.d_model: the sinusoidal position code of the few-shot classifier needs an even width, got "
                    + std::to_string(c.model.d_model));
    if (classification && c.training.shards != 1)
        throw Error("training.shards: must be 1 for task.kind \"fewshot_classification\" (its trainer computes the "
                    "whole batch at once), got " + std::to_string(c.training.shards));
    if (classification && c.model.init != "variance_scaling")
        throw Error("model.init: \"" + c.model.init + "\" is a construction for regression tasks");
    if (c.training.schedule == "inverse_sqrt" && c.training.warmup_steps == 0)
        throw Error("training.warmup_steps: the inverse_sqrt schedule needs warm-up steps > 0");
    if (classification)
        for (const auto& b : baselines)
            if (b != "zero" && b != "least_squares" && b != "ridge" && b != "gd")
                throw Error("eval.baselines: \"" + b + "\" is a regression baseline; fewshot_classification has none");
    if (model == ModelKind::Gpt2 && layout != TaskLayout::Interleaved)
        throw Error("task.layout: the gpt2 model reads the interleaved layout (x and y tokens), got \""
                    + c.task.layout + "\"");
    if (model == ModelKind::Gpt2 && layout == TaskLayout::Interleaved && c.model.n_positions > 0
        && c.model.n_positions < 2 * c.task.n_context + 1)
        throw Error("model.n_positions: a prompt of task.n_context = " + std::to_string(c.task.n_context) + " examples is "
                    + std::to_string(2 * c.task.n_context + 1) + " tokens, more than the model's "
                    + std::to_string(c.model.n_positions) + " positions");
    if (model == ModelKind::Gpt2 && task == TaskKind::SineRegression)
        throw Error("task.kind: sine_regression is for the lsa model with a feature MLP");
    if (c.model.init != "variance_scaling") {
        const ModelConfig& m = c.model;
        if (layout != TaskLayout::Pair || m.softmax_layers > 0 || m.layer_norm || m.mlp || m.positions != "none"
            || m.feature_dim > 0)
            throw Error("model.init: \"" + m.init + "\" exists for the plain LSA on the pair layout only "
                        "(no softmax_layers, layer_norm, mlp, positions or feature_dim)");
        if (m.init == "gdpp_construction" && m.n_layers < 2)
            throw Error("model.init: \"gdpp_construction\" needs model.n_layers > 1 (GD++ is defined for K > 1)");
    }
    if (layout == TaskLayout::Interleaved && c.model.feature_dim > 0)
        throw Error("model.feature_dim: the input representation is for the pair layout only");
    if (const CurriculumConfig& cu = c.training.curriculum; cu.enabled) {
        // Cross-checks only when the curriculum is on, so a disabled section never blocks a smaller task.
        if (model != ModelKind::Gpt2)
            throw Error("training.curriculum.enabled: the curriculum varies the number of in-context examples, but "
                        "the " + c.model.kind + " model is built for a fixed N (its attention sums over the N "
                        "context tokens without normalisation, and the GD construction sets P = η/N); "
                        "use model.kind \"gpt2\"");
        if (!isLinearRegression(task))
            throw Error("training.curriculum.enabled: Garg et al.'s curriculum is implemented for task.kind "
                        "\"linear_regression\", \"sparse_linear_regression\" and \"noisy_linear_regression\", got \""
                        + c.task.kind + "\"");
        if (cu.dims_start > c.task.d)
            throw Error("training.curriculum.dims_start: expected an integer in [1, task.d = "
                        + std::to_string(c.task.d) + "], got " + std::to_string(cu.dims_start));
        if (task == TaskKind::SparseLinearRegression && cu.dims_start < c.task.sparsity)
            throw Error("training.curriculum.dims_start: the support of w lies among the active coordinates, so it "
                        "must be at least task.sparsity = " + std::to_string(c.task.sparsity) + ", got "
                        + std::to_string(cu.dims_start));
        if (cu.points_start > c.task.n_context + 1)
            throw Error("training.curriculum.points_start: expected an integer in [2, task.n_context + 1 = "
                        + std::to_string(c.task.n_context + 1) + "] (in-context examples plus the query), got "
                        + std::to_string(cu.points_start));
    }
}

} // namespace

nlohmann::json toJson(const ExperimentConfig& c)
{
    Json j = Json::object();
    for (const KeyRecord& r : schema()) {
        std::string pointer = "/" + r.info.path;
        std::replace(pointer.begin(), pointer.end(), '.', '/');
        j[Json::json_pointer(pointer)] = r.write(c);
    }
    return j;
}

const std::vector<ConfigKey>& configKeys()
{
    static const std::vector<ConfigKey> keys = [] {
        std::vector<ConfigKey> out;
        for (const KeyRecord& r : schema())
            out.push_back(r.info);
        return out;
    }();
    return keys;
}

nlohmann::json configReferenceJson()
{
    Json keys = Json::array();
    for (const ConfigKey& k : configKeys())
        keys.push_back({{"path", k.path},
                        {"type", k.type},
                        {"default", k.default_value},
                        {"range", k.range},
                        {"choices", k.choices},
                        {"doc", k.doc}});
    return {{"keys", keys}};
}

std::string configReferenceText()
{
    std::string out;
    for (const ConfigKey& k : configKeys()) {
        out += k.path + "  (" + k.type + ", default " + k.default_value.dump() + ")\n";
        out += "    " + k.doc + "\n";
        if (!k.range.empty())
            out += "    allowed: " + k.range + "\n";
    }
    return out;
}

std::string configReferenceMarkdown()
{
    auto cell = [](std::string s) {
        std::string out;
        for (char ch : s)
            out += ch == '|' ? std::string("\\|") : std::string(1, ch);
        return out;
    };
    std::string out =
        "# Config reference\n\n"
        "<!-- Generated by `icl-cli config --list --markdown > docs/config.md` from the schema in core/io/config.cpp;\n"
        "     do not edit by hand (the test Cli.ConfigReferenceIsCurrent fails when this file is out of date). -->\n\n"
        "Every key of an experiment config (a preset's `config`, a `--config FILE`, a `--set key.path=value`).\n"
        "A missing key takes its default; an unknown key, a value of the wrong type or out of range is refused\n"
        "with a message naming the key path. Constraints between keys (e.g. `model.d_model` divisible by\n"
        "`model.n_heads` for gpt2) are checked after parsing and named the same way.\n\n"
        "## Limits\n\n"
        "A config may come from anyone (a colleague's run file, a checkpoint's metadata), so it is read within\n"
        "limits (docs/weights-formats.md, docs/security.md):\n\n"
        "- A config file (JSON, or Garg et al.'s YAML for `icl-cli import`) is at most 16 MiB and nested at most 64\n"
        "  levels; so is the JSON of a `--set` value. A YAML file's aliases may not make it more than 100,000 nodes.\n"
        "- An integer key takes only integers within its range below (a number such as `1e30` or `2^64 - 1` is out\n"
        "  of range, never converted); an integer from a YAML file or a file name is parsed from its text and\n"
        "  quoted as written when refused.\n"
        "- The ranges of `model.n_layers`, `model.d_model`, `model.n_heads`, `model.n_positions` and `task.d` are\n"
        "  also the limits a model read from a foreign checkpoint must fit (`icl-cli import`), checked on the\n"
        "  tensors' shapes before any tensor is read.\n"
        "- Before a model is built from a config (training, import, and every analysis of a run file), its size —\n"
        "  parameters and buffers × 4 bytes, counted from the config alone — is checked against the memory budget:\n"
        "  `--max-memory SIZE` of `import`, `analyze` and `eval`, else `ICL_MAX_MEMORY`, else a quarter of the RAM.\n"
        "  Over it, the command stops with one line: `RUN.h5: refused: its model (gpt2, 1 layer, d_model 65536, …)\n"
        "  would need 206 GB, over the memory budget of …`.\n";
    std::string section = "\x01";
    for (const ConfigKey& k : configKeys()) {
        const std::string s = sectionOf(k.path);
        if (s != section) {
            section = s;
            out += "\n## " + (s.empty() ? std::string("Top level") : "`" + s + "`") + "\n\n";
            out += "| Key | Type | Default | Allowed | Description |\n|---|---|---|---|---|\n";
        }
        out += "| `" + k.path + "` | " + k.type + " | `" + cell(k.default_value.dump()) + "` | " + cell(k.range) + " | "
            + cell(k.doc) + " |\n";
    }
    return out;
}

CurriculumStage curriculumStage(const ExperimentConfig& config, int64_t step)
{
    const TaskConfig& task = config.task;
    const CurriculumConfig& cu = config.training.curriculum;
    if (!cu.enabled)
        return {task.d, task.n_context};
    const int64_t k = std::max<int64_t>(step, 0) / cu.interval;  // increments so far
    CurriculumStage s;
    s.dims = std::min(task.d, cu.dims_start + cu.dims_inc * k);
    s.n_context = std::min(task.n_context + 1, cu.points_start + cu.points_inc * k) - 1;
    return s;
}

TaskConfig trainingTask(const ExperimentConfig& config, int64_t step)
{
    TaskConfig task = config.task;
    if (!config.training.curriculum.enabled)
        return task;
    const CurriculumStage s = curriculumStage(config, step);
    task.n_context = s.n_context;
    task.active_dims = s.dims;
    return task;
}

void applyOverride(nlohmann::json& config, const std::string& assignment)
{
    const auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw Error("--set " + assignment + ": expected key.path=value");
    const std::string path = assignment.substr(0, eq);
    const std::string text = assignment.substr(eq + 1);
    // A string key takes the text itself (`--set description=1` is "1"); other keys take it as JSON
    // when it parses, so that numbers, booleans and arrays keep their type. accept() builds nothing; the value
    // is then parsed with the nesting limit (a sweep file's grid value may come from anyone).
    nlohmann::json value = nlohmann::json::accept(text)
                               ? parseBoundedJson(text, "--set " + path)
                               : nlohmann::json(nlohmann::json::value_t::discarded);
    const KeyRecord* key = findKey(path);
    const bool stringKey = key && (key->info.type == "string" || key->info.type == "choice");
    if (value.is_discarded() || (stringKey && !value.is_string()))
        value = text;
    nlohmann::json* node = &config;
    std::stringstream ss(path);
    std::string part, walked;
    std::vector<std::string> parts;
    while (std::getline(ss, part, '.')) {
        if (part.empty())
            throw Error("--set " + assignment + ": empty component in key path \"" + path + "\"");
        parts.push_back(part);
    }
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        walked += (walked.empty() ? "" : ".") + parts[i];
        nlohmann::json& next = (*node)[parts[i]];
        if (next.is_null())
            next = nlohmann::json::object();
        if (!next.is_object())
            throw Error(walked + ": is not a section, cannot set \"" + path + "\"");
        node = &next;
    }
    (*node)[parts.back()] = value;
}

namespace {

const nlohmann::json& presetJson(const std::string& name)
{
    static const auto parsed = [] {
        std::vector<std::pair<std::string, nlohmann::json>> all;
        for (const auto& [n, text] : detail::embeddedPresets())
            all.emplace_back(n, nlohmann::json::parse(text));
        return all;
    }();
    for (const auto& [n, j] : parsed)
        if (n == name)
            return j;
    std::string names;
    for (const auto& [n, j] : parsed)
        names += (names.empty() ? "" : ", ") + n;
    throw Error("unknown preset \"" + name + "\" (available: " + names + ")");
}

} // namespace

std::vector<PresetInfo> listPresets()
{
    std::vector<PresetInfo> out;
    for (const auto& entry : detail::embeddedPresets()) {
        const nlohmann::json& j = presetJson(entry.first);
        PresetInfo p;
        p.name = entry.first;
        p.description = j.value("description", "");
        p.reproduces = j.value("reproduces", "");
        for (auto it = j["scales"].begin(); it != j["scales"].end(); ++it)
            p.scales.push_back(it.key());
        out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const PresetInfo& a, const PresetInfo& b) { return a.name < b.name; });
    return out;
}

namespace {

nlohmann::json resolveConfigUnchecked(const ConfigRequest& request);

} // namespace

nlohmann::json resolveConfig(const ConfigRequest& request)
{
    try {
        return resolveConfigUnchecked(request);
    } catch (const nlohmann::json::exception& e) {
        // A value of the wrong shape reached by a key path (e.g. --set training=5, then --steps):
        // report it as bad input, not as an internal error.
        throw Error(std::string("config has a value of the wrong type where a section was expected (")
                    + e.what() + ")");
    }
}

namespace {

nlohmann::json resolveConfigUnchecked(const ConfigRequest& request)
{
    nlohmann::json config;
    if (!request.preset.empty() && !request.config_file.empty())
        throw Error("give either a preset or a config file, not both");
    if (!request.preset.empty()) {
        const nlohmann::json& preset = presetJson(request.preset);
        config = preset.at("config");
        const auto& scales = preset.at("scales");
        if (!scales.contains(request.scale)) {
            std::string names;
            for (auto it = scales.begin(); it != scales.end(); ++it)
                names += (names.empty() ? "" : ", ") + it.key();
            throw Error("preset " + request.preset + " has no scale \"" + request.scale + "\" (available: " + names
                        + ")");
        }
        for (auto it = scales[request.scale].begin(); it != scales[request.scale].end(); ++it)
            applyOverride(config, it.key() + "=" + it.value().dump());
        config["preset"] = request.preset;
        config["scale"] = request.scale;
        config["description"] = preset.value("description", "");
    } else if (!request.config_file.empty()) {
        config = parseBoundedJson(readConfigText(request.config_file), request.config_file);
        if (!config.is_object())
            throw Error(request.config_file + ": expected a JSON object with sections task, model, training, eval");
    } else {
        throw Error("no experiment given: use a preset or a config file");
    }
    for (const auto& s : request.sets)
        applyOverride(config, s);
    if (request.steps)
        applyOverride(config, "training.steps=" + std::to_string(*request.steps));
    if (request.seed)
        config["seed"] = *request.seed;
    if (request.device)
        config["device"] = *request.device;
    return toJson(parseConfig(config));
}

} // namespace

std::string readConfigText(const std::string& path)
{
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
        throw Error("cannot read config file " + path);
    const std::streamoff size = f.tellg();
    if (size < 0)
        throw Error("cannot read config file " + path);
    if (uint64_t(size) > kMaxConfigFileBytes)
        throw Error(path + ": " + std::to_string(size) + " bytes is larger than a config file's limit of "
                    + std::to_string(kMaxConfigFileBytes) + " bytes (" + formatBytes(kMaxConfigFileBytes) + ")");
    std::string text(size_t(size), '\0');
    f.seekg(0);
    f.read(text.data(), size);
    if (f.gcount() != size)
        throw Error("cannot read config file " + path);
    return text;
}

std::pair<int64_t, int64_t> configIntegerRange(const std::string& path)
{
    const KeyRecord* key = findKey(path);
    if (!key || !key->ranged)
        throw Error(path + ": not an integer config key with a fixed range");
    return {key->min, key->max};
}

namespace {

// Values of a torch::nn::Linear(in, out): weight [out, in] and bias [out].
uint64_t linearValues(int64_t in, int64_t out, const std::string& what)
{
    return checked::add(checked::mul(uint64_t(in), uint64_t(out), what), uint64_t(out), what);
}

// Values of the workbench GPT-2 (core/models/gpt2.cpp): read-in, positions, L blocks of 12 D^2 + 13 D (two
// LayerNorms, Q/K/V/O with biases, the D -> 4D -> D MLP), the final LayerNorm and the read-out.
uint64_t gpt2Values(int64_t input_dim, int64_t D, int64_t L, int64_t P, const std::string& what)
{
    using checked::add;
    using checked::mul;
    const uint64_t d = uint64_t(D);
    const uint64_t block = add(mul(12, mul(d, d, what), what), mul(13, d, what), what);
    uint64_t n = linearValues(input_dim, D, what);
    n = add(n, mul(uint64_t(P), d, what), what);
    n = add(n, mul(uint64_t(L), block, what), what);
    n = add(n, 2 * d, what);
    return add(n, linearValues(D, 1, what), what);
}

// Values of Chan et al.'s ResNet exemplar encoder (core/models/sequence_classifier.cpp): bias-free convolutions,
// batch norms (gain, bias, running mean and variance, a step counter), then Linear(64, D).
uint64_t resnetValues(int64_t D, const std::string& what)
{
    auto bn = [](uint64_t c) { return 4 * c + 1; };
    uint64_t n = 1 * 16 * 9 + bn(16);
    const int64_t channels[4] = {16, 32, 32, 64}, strides[4] = {1, 2, 2, 2};
    int64_t in = 16;
    for (int g = 0; g < 4; ++g)
        for (int b = 0; b < 2; ++b) {
            const int64_t c = channels[g], mid = std::max<int64_t>(1, c / 4), stride = b == 0 ? strides[g] : 1;
            n += uint64_t(in * mid) + bn(uint64_t(mid)) + uint64_t(mid * mid * 9) + bn(uint64_t(mid))
                 + uint64_t(mid * c) + bn(uint64_t(c));
            if (in != c || stride != 1)
                n += uint64_t(in * c) + bn(uint64_t(c));
            in = c;
        }
    return checked::add(n, linearValues(64, D, what), what);
}

std::string count(int64_t n, const char* one, const char* many)
{
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

} // namespace

ModelSize modelSize(const ExperimentConfig& c, const std::vector<int64_t>& exemplar_shape)
{
    using checked::add;
    using checked::mul;
    const std::string what = "the model of the config";
    const ModelConfig& m = c.model;
    const ModelKind kind = kindOf(m);
    ModelSize size;
    uint64_t n = 0;
    if (kindOf(c.task) == TaskKind::FewshotClassification) {
        const int64_t D = m.d_model, L = m.n_layers, T = 2 * c.task.n_context + 1;
        const int64_t exemplar = exemplar_shape.empty()
                                     ? c.task.exemplar_dim
                                     : int64_t(checked::elementCount(exemplar_shape, what + " (exemplar)"));
        const int64_t labels = c.task.n_labels > 0 ? c.task.n_labels : c.task.n_classes * c.task.labels_per_class;
        n = m.encoder == "resnet" ? resnetValues(D, what) : linearValues(exemplar, D, what);
        n = add(n, mul(uint64_t(labels), uint64_t(D), what), what);  // label embedding
        const uint64_t d = uint64_t(D);
        if (kind == ModelKind::Gpt2)
            n = add(n, gpt2Values(D, D, L, T, what), what);
        else if (kind == ModelKind::Lstm)  // per layer: W_ih, W_hh [4D, D], b_ih, b_hh [4D]
            n = add(n, mul(uint64_t(L), add(mul(8, mul(d, d, what), what), 8 * d, what), what), what);
        else  // rnn: W_ih, W_hh [D, D], b_ih, b_hh [D]
            n = add(n, mul(uint64_t(L), add(mul(2, mul(d, d, what), what), 2 * d, what), what), what);
        n = add(n, linearValues(D, labels, what), what);  // read-out
        n = add(n, mul(uint64_t(T), d, what), what);      // the sinusoidal positions (a buffer)
        size.summary = c.model.kind + " classifier, " + count(L, "layer", "layers") + ", d_model " + std::to_string(D)
                       + ", " + count(m.n_heads, "head", "heads") + ", " + std::to_string(T) + " positions, "
                       + std::to_string(labels) + " labels, exemplars of " + std::to_string(exemplar) + " values"
                       + (kind == ModelKind::Gpt2 ? ", MLP " + std::to_string(4 * D) : std::string());
    } else if (kind == ModelKind::Gpt2) {
        const int64_t D = m.d_model, P = m.n_positions > 0 ? m.n_positions : 2 * c.task.n_context + 1;
        n = gpt2Values(c.task.d, D, m.n_layers, P, what);
        size.summary = "gpt2, " + count(m.n_layers, "layer", "layers") + ", d_model " + std::to_string(D) + ", "
                       + count(m.n_heads, "head", "heads") + ", " + std::to_string(P) + " positions, d "
                       + std::to_string(c.task.d) + ", MLP " + std::to_string(4 * D);
    } else {
        // LSA (core/models/lsa.cpp): tokens of D = (x or phi(x)) + y-slot + positions; per block 4 H D^2, the
        // augmented variant's key and value MLPs on softmax blocks, LayerNorms, the D -> 4D -> D MLP.
        const int64_t pos = m.positions == "sinusoidal" ? m.pos_dim : 0;
        const int64_t D = (m.feature_dim > 0 ? m.feature_dim : c.task.d) + 1 + pos, H = m.n_heads;
        const uint64_t d = uint64_t(D), h = uint64_t(H), j = uint64_t(m.augment_hidden);
        if (m.feature_dim > 0) {
            int64_t in = c.task.d;
            std::vector<int64_t> widths = m.feature_mlp;
            widths.push_back(m.feature_dim);
            for (const int64_t w : widths) {
                n = add(n, linearValues(in, w, what), what);
                in = w;
            }
        }
        const int64_t blocks = m.tied ? 1 : m.n_layers;
        for (int64_t b = 0; b < blocks; ++b) {
            n = add(n, mul(4, mul(h, mul(d, d, what), what), what), what);
            const bool softmaxBlock = m.tied ? m.softmax_layers == m.n_layers : b < m.softmax_layers;
            if (m.attention_variant == "augmented" && softmaxBlock)  // aug_k, aug_v: w_in, b_in, w_out, b_out
                n = add(n, mul(2, mul(h, add(mul(2, mul(j, d, what), what), add(j, d, what), what), what), what),
                        what);
            if (m.layer_norm)
                n = add(n, (m.mlp ? 4 : 2) * d, what);
            if (m.mlp)
                n = add(n, add(mul(8, mul(d, d, what), what), 5 * d, what), what);
        }
        size.summary = "lsa, " + count(m.n_layers, "layer", "layers") + (m.tied ? " (tied)" : "") + ", "
                       + count(H, "head", "heads") + ", tokens of " + std::to_string(D) + " values";
    }
    size.values = n;
    size.bytes = mul(n, 4, what);
    return size;
}

void checkModelMemory(const ExperimentConfig& config, const MemoryBudget& budget,
                      const std::vector<int64_t>& exemplar_shape)
{
    const ModelSize size = modelSize(config, exemplar_shape);
    std::string values = std::to_string(size.values);
    if (size.values >= 1000000) {
        const bool billions = size.values >= 1000000000;
        const double v = double(size.values) / (billions ? 1e9 : 1e6);
        char text[48];
        std::snprintf(text, sizeof text, v < 1000 ? "%.3g %s" : "%.0f %s", v, billions ? "billion" : "million");
        values = text;
    }
    budget.check(size.bytes, "its model (" + size.summary + "; " + values + " parameters and buffers)");
}

} // namespace icl
