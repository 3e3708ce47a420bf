#include "core/io/config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "core/error.h"

namespace icl {
namespace detail {
const std::vector<std::pair<std::string, std::string>>& embeddedPresets();
}

namespace {

std::string shortJson(const nlohmann::json& v)
{
    std::string s = v.dump();
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Reads one JSON object with key-path error messages and rejects keys nobody asked for.
class SectionReader {
public:
    SectionReader(const nlohmann::json& object, std::string path)
        : m_object(object)
        , m_path(std::move(path))
    {
        if (!m_object.is_object())
            throw Error(where("") + "expected an object, got " + shortJson(m_object));
    }

    std::string where(const std::string& key) const
    {
        std::string p = m_path.empty() ? key : (key.empty() ? m_path : m_path + "." + key);
        return p.empty() ? std::string() : p + ": ";
    }

    const nlohmann::json* find(const std::string& key)
    {
        m_known.insert(key);
        auto it = m_object.find(key);
        return it == m_object.end() ? nullptr : &*it;
    }

    double number(const std::string& key, double fallback, const std::function<bool(double)>& ok,
                  const std::string& expectation)
    {
        const nlohmann::json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_number() || !ok(v->get<double>()))
            throw Error(where(key) + "expected " + expectation + ", got " + shortJson(*v));
        return v->get<double>();
    }

    int64_t integer(const std::string& key, int64_t fallback, int64_t min, int64_t max)
    {
        const nlohmann::json* v = find(key);
        if (!v)
            return fallback;
        const bool isInt = v->is_number_integer()
            || (v->is_number_float() && v->get<double>() == static_cast<double>(static_cast<int64_t>(v->get<double>())));
        std::string expect = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
        if (!isInt)
            throw Error(where(key) + "expected " + expect + ", got " + shortJson(*v));
        const auto n = static_cast<int64_t>(v->get<double>());
        if (n < min || n > max)
            throw Error(where(key) + "expected " + expect + ", got " + shortJson(*v));
        return n;
    }

    bool boolean(const std::string& key, bool fallback)
    {
        const nlohmann::json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_boolean())
            throw Error(where(key) + "expected true or false, got " + shortJson(*v));
        return v->get<bool>();
    }

    std::string string(const std::string& key, const std::string& fallback)
    {
        const nlohmann::json* v = find(key);
        if (!v)
            return fallback;
        if (!v->is_string())
            throw Error(where(key) + "expected a string, got " + shortJson(*v));
        return v->get<std::string>();
    }

    std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed)
    {
        const nlohmann::json* v = find(key);
        if (!v)
            return fallback;
        std::string list;
        for (const auto& a : allowed)
            list += (list.empty() ? "\"" : ", \"") + a + "\"";
        if (!v->is_string() || std::find(allowed.begin(), allowed.end(), v->get<std::string>()) == allowed.end())
            throw Error(where(key) + "expected one of " + list + ", got " + shortJson(*v));
        return v->get<std::string>();
    }

    const nlohmann::json& section(const std::string& key)
    {
        static const nlohmann::json empty = nlohmann::json::object();
        const nlohmann::json* v = find(key);
        return v ? *v : empty;
    }

    void rejectUnknown() const
    {
        for (auto it = m_object.begin(); it != m_object.end(); ++it) {
            if (m_known.count(it.key()))
                continue;
            std::string known;
            for (const auto& k : m_known)
                known += (known.empty() ? "" : ", ") + k;
            throw Error(where(it.key()) + "unknown key (known keys: " + known + ")");
        }
    }

private:
    const nlohmann::json& m_object;
    std::string m_path;
    std::set<std::string> m_known;
};

auto positive = [](double v) { return v > 0; };
auto nonNegative = [](double v) { return v >= 0; };
auto unitInterval = [](double v) { return v >= 0 && v < 1; };
constexpr int64_t kBig = int64_t(1) << 40;

} // namespace

ExperimentConfig parseConfig(const nlohmann::json& json)
{
    ExperimentConfig c;
    SectionReader root(json, "");
    c.preset = root.string("preset", "");
    c.scale = root.string("scale", "");
    c.description = root.string("description", "");
    {
        const nlohmann::json* v = root.find("seed");
        if (v) {
            if (!v->is_number_integer() || v->get<int64_t>() < 0)
                throw Error("seed: expected a non-negative integer, got " + shortJson(*v));
            c.seed = v->get<uint64_t>();
        }
    }
    c.device = root.string("device", "auto");
    if (c.device != "auto" && c.device != "cpu" && c.device.rfind("cuda", 0) != 0)
        throw Error("device: expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\", got \"" + c.device + "\"");

    {
        SectionReader s(root.section("task"), "task");
        TaskConfig& t = c.task;
        t.kind = s.choice("kind", t.kind,
                          {"linear_regression", "sparse_linear_regression", "noisy_linear_regression",
                           "sine_regression", "representation", "representation_mixture", "fewshot_classification"});
        t.layout = s.choice("layout", t.layout, {"pair", "interleaved"});
        t.d = s.integer("d", t.d, 1, 4096);
        t.n_context = s.integer("n_context", t.n_context, 1, 100000);
        t.x_distribution = s.choice("x_distribution", t.x_distribution, {"uniform", "normal"});
        t.x_range = s.number("x_range", t.x_range, positive, "a number > 0");
        t.w_scale = s.number("w_scale", t.w_scale, positive, "a number > 0");
        t.noise_std = s.number("noise_std", t.noise_std, nonNegative, "a number >= 0");
        if (t.kind == "noisy_linear_regression" && !(t.noise_std > 0))
            throw Error("task.noise_std: noisy_linear_regression needs label noise, expected a number > 0, got "
                        + shortJson(t.noise_std));
        t.sparsity = s.integer("sparsity", t.sparsity, 1, 4096);
        if (t.kind == "sparse_linear_regression" && t.sparsity > t.d)
            throw Error("task.sparsity: expected at most task.d = " + std::to_string(t.d)
                        + " non-zero coordinates of w, got " + std::to_string(t.sparsity));
        auto any = [](double v) { return std::isfinite(v); };
        t.amplitude_min = s.number("amplitude_min", t.amplitude_min, any, "a finite number");
        t.amplitude_max = s.number("amplitude_max", t.amplitude_max, any, "a finite number");
        t.phase_min = s.number("phase_min", t.phase_min, any, "a finite number");
        t.phase_max = s.number("phase_max", t.phase_max, any, "a finite number");
        if (t.amplitude_max < t.amplitude_min)
            throw Error("task.amplitude_max: expected a number >= task.amplitude_min");
        if (t.phase_max < t.phase_min)
            throw Error("task.phase_max: expected a number >= task.phase_min");
        t.experiment_seed = c.seed;
        t.rep_dim = s.integer("rep_dim", t.rep_dim, 0, 4096);
        t.rep_layers = s.integer("rep_layers", t.rep_layers, 1, 64);
        t.n_representations = s.integer("n_representations", t.n_representations, 1, 1024);
        if (t.kind == "representation_mixture" && t.n_representations < 2)
            throw Error("task.n_representations: representation_mixture needs at least 2, got "
                        + std::to_string(t.n_representations));
        if (t.kind == "representation" && t.n_representations != 1)
            throw Error("task.n_representations: a representation task has one Φ*; use representation_mixture");
        if (t.kind == "sine_regression" && t.d != 1)
            throw Error("task.d: sine_regression has scalar inputs, expected 1, got " + std::to_string(t.d));
        t.n_classes = s.integer("n_classes", t.n_classes, 1, 10000000);
        t.n_holdout = s.integer("n_holdout", t.n_holdout, 0, 10000000);
        t.zipf_alpha = s.number("zipf_alpha", t.zipf_alpha, [](double v) { return v >= 0 && std::isfinite(v); },
                                "a finite number >= 0");
        t.p_bursty = s.number("p_bursty", t.p_bursty, [](double v) { return v >= 0 && v <= 1; }, "a number in [0, 1]");
        t.labels_per_class = s.integer("labels_per_class", t.labels_per_class, 1, 100000);
        t.n_labels = s.integer("n_labels", t.n_labels, 0, 100000000);
        t.exemplar_dim = s.integer("exemplar_dim", t.exemplar_dim, 1, 1 << 20);
        t.within_class_noise = s.number("within_class_noise", t.within_class_noise, nonNegative, "a number >= 0");
        t.exemplar_source = s.choice("exemplar_source", t.exemplar_source, {"synthetic", "image_folder", "idx"});
        t.exemplar_path = s.string("exemplar_path", t.exemplar_path);
        t.exemplar_labels_path = s.string("exemplar_labels_path", t.exemplar_labels_path);
        t.image_size = s.integer("image_size", t.image_size, 0, 4096);
        t.exemplars_per_class = s.integer("exemplars_per_class", t.exemplars_per_class, 0, 1 << 30);
        t.n_common_classes = s.integer("n_common_classes", t.n_common_classes, 0, 10000000);
        auto probability = [](double v) { return v >= 0 && v <= 1; };
        t.p_bursty_common = s.number("p_bursty_common", t.p_bursty_common, probability, "a number in [0, 1]");
        t.p_bursty_zipfian = s.number("p_bursty_zipfian", t.p_bursty_zipfian, probability, "a number in [0, 1]");
        t.non_bursty_type = s.choice("non_bursty_type", t.non_bursty_type, {"zipfian", "common", "common_no_support"});
        t.zipf_within_common_rare = s.boolean("zipf_within_common_rare", t.zipf_within_common_rare);
        if (t.kind == "fewshot_classification" && t.exemplar_source != "synthetic" && t.exemplar_path.empty())
            throw Error("task.exemplar_path: exemplar_source \"" + t.exemplar_source
                        + "\" reads its images from a path; none given");
        if (t.kind == "fewshot_classification" && t.exemplar_source == "idx" && t.exemplar_labels_path.empty())
            throw Error("task.exemplar_labels_path: exemplar_source \"idx\" needs the IDX labels file");
        if (t.kind == "fewshot_classification") {
            if (t.layout != "interleaved")
                throw Error("task.layout: fewshot_classification sequences interleave exemplar and label tokens, "
                            "expected \"interleaved\", got \"" + t.layout + "\"");
            if (t.n_context < 6 || t.n_context % 2)
                throw Error("task.n_context: a bursty sequence holds 3 + 3 exemplars of two classes and the ICL "
                            "evaluation n_context/2 shots of each of 2 classes, so expected an even integer >= 6, got "
                            + std::to_string(t.n_context));
            if (t.n_holdout < 2)
                throw Error("task.n_holdout: the ICL evaluation draws 2 holdout classes, expected >= 2, got "
                            + std::to_string(t.n_holdout));
            // A bursty sequence needs the query's class, a second class and others; non-bursty sequences draw
            // their classes independently (with replacement), so a 10-class dataset such as Fashion-MNIST fits.
            if (t.n_classes < 3)
                throw Error("task.n_classes: a bursty sequence holds the query's class, a second class and items of "
                            "other classes, expected >= 3, got " + std::to_string(t.n_classes));
            const int64_t labels = t.n_labels > 0 ? t.n_labels : t.n_classes * t.labels_per_class;
            if (labels < std::max<int64_t>(2, t.labels_per_class))
                throw Error("task.n_labels: the label vocabulary must hold at least max(2, task.labels_per_class) = "
                            + std::to_string(std::max<int64_t>(2, t.labels_per_class)) + " labels, got "
                            + std::to_string(labels));
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
                throw Error("task.n_common_classes: a few-shot problem draws 2 classes of a set, so expected at "
                            "least 2 common and 2 rare classes (2 <= n_common_classes <= task.n_classes - 2 = "
                            + std::to_string(t.n_classes - 2) + "), got " + std::to_string(t.n_common_classes));
            }
            if (t.p_bursty_common + t.p_bursty_zipfian > 1 + 1e-12)
                throw Error("task.p_bursty_common: p_bursty_common + task.p_bursty_zipfian must be <= 1 (the rest "
                            "of the bursty sequences are few-shot problems on rare classes), got "
                            + shortJson(t.p_bursty_common) + " + " + shortJson(t.p_bursty_zipfian));
            if (t.n_labels != 0 && t.n_labels < 2)
                throw Error("task.n_labels: the ICL evaluation uses labels {0, 1}, expected 0 (one per class and "
                            "label) or >= 2, got " + std::to_string(t.n_labels));
        }
        s.rejectUnknown();
    }
    {
        SectionReader s(root.section("model"), "model");
        ModelConfig& m = c.model;
        m.kind = s.choice("kind", m.kind, {"lsa", "gpt2", "lstm", "rnn"});
        m.n_layers = s.integer("n_layers", m.n_layers, 1, 1000);
        m.n_heads = s.integer("n_heads", m.n_heads, 1, 1024);
        m.d_model = s.integer("d_model", m.d_model, 1, 65536);
        m.n_positions = s.integer("n_positions", m.n_positions, 0, 1 << 20);
        if (m.kind == "gpt2" && m.d_model % m.n_heads != 0)
            throw Error("model.d_model: must be divisible by model.n_heads (" + std::to_string(m.n_heads) + "), got "
                        + std::to_string(m.d_model));
        m.tied = s.boolean("tied", m.tied);
        m.init_scale = s.number("init_scale", m.init_scale, positive, "a number > 0");
        m.init = s.choice("init", m.init, {"variance_scaling", "gd_construction", "gdpp_construction"});
        m.encoder = s.choice("encoder", m.encoder, {"linear", "resnet"});
        m.softmax_layers = s.integer("softmax_layers", m.softmax_layers, 0, m.n_layers);
        m.layer_norm = s.boolean("layer_norm", m.layer_norm);
        m.mlp = s.boolean("mlp", m.mlp);
        m.positions = s.choice("positions", m.positions, {"none", "sinusoidal"});
        m.pos_dim = s.integer("pos_dim", m.pos_dim, 2, 4096);
        if (m.pos_dim % 2)
            throw Error("model.pos_dim: expected an even integer (sine and cosine pairs), got "
                        + std::to_string(m.pos_dim));
        if (const nlohmann::json* v = s.find("feature_mlp")) {
            if (!v->is_array())
                throw Error("model.feature_mlp: expected an array of hidden widths such as [64, 64], got "
                            + shortJson(*v));
            m.feature_mlp.clear();
            for (size_t i = 0; i < v->size(); ++i) {
                const auto& w = (*v)[i];
                if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > 65536)
                    throw Error("model.feature_mlp[" + std::to_string(i) + "]: expected an integer in [1, 65536], got "
                                + shortJson(w));
                m.feature_mlp.push_back(w.get<int64_t>());
            }
        }
        m.feature_dim = s.integer("feature_dim", m.feature_dim, 0, 65536);
        if (!m.feature_mlp.empty() && m.feature_dim == 0)
            throw Error("model.feature_dim: model.feature_mlp needs an output width > 0");
        m.attention_variant = s.choice("attention_variant", m.attention_variant,
                                       {"softmax", "regularized", "augmented", "negative_samples"});
        m.variant_strength = s.number("variant_strength", m.variant_strength,
                                      [](double v) { return v >= 0 && std::isfinite(v); }, "a finite number >= 0");
        m.augment_hidden = s.integer("augment_hidden", m.augment_hidden, 1, 65536);
        if (m.attention_variant != "softmax" && m.softmax_layers == 0)
            throw Error("model.attention_variant: \"" + m.attention_variant
                        + "\" modifies softmax attention layers, but model.softmax_layers is 0");
        s.rejectUnknown();
    }
    {
        SectionReader s(root.section("training"), "training");
        TrainingConfig& t = c.training;
        t.optimizer = s.choice("optimizer", t.optimizer, {"adam", "adamw", "sgd"});
        t.lr = s.number("lr", t.lr, positive, "a number > 0");
        t.beta1 = s.number("beta1", t.beta1, unitInterval, "a number in [0, 1)");
        t.beta2 = s.number("beta2", t.beta2, unitInterval, "a number in [0, 1)");
        t.weight_decay = s.number("weight_decay", t.weight_decay, nonNegative, "a number >= 0");
        t.batch_size = s.integer("batch_size", t.batch_size, 1, 1 << 24);
        t.steps = s.integer("steps", t.steps, 0, kBig);
        t.grad_clip = s.number("grad_clip", t.grad_clip, nonNegative, "a number >= 0 (0 = off)");
        t.schedule = s.choice("schedule", t.schedule, {"constant", "warmup", "warmup_cosine", "inverse_sqrt"});
        t.warmup_steps = s.integer("warmup_steps", t.warmup_steps, 0, kBig);
        t.eval_every = s.integer("eval_every", t.eval_every, 1, kBig);
        t.checkpoint_every = s.integer("checkpoint_every", t.checkpoint_every, 1, kBig);
        {
            SectionReader cs(s.section("curriculum"), "training.curriculum");
            CurriculumConfig& cu = t.curriculum;
            cu.enabled = cs.boolean("enabled", cu.enabled);
            cu.dims_start = cs.integer("dims_start", cu.dims_start, 1, 4096);
            cu.dims_inc = cs.integer("dims_inc", cu.dims_inc, 0, 4096);
            cu.points_start = cs.integer("points_start", cu.points_start, 2, 100001);
            cu.points_inc = cs.integer("points_inc", cu.points_inc, 0, 100000);
            cu.interval = cs.integer("interval", cu.interval, 1, kBig);
            cs.rejectUnknown();
        }
        s.rejectUnknown();
    }
    {
        SectionReader s(root.section("eval"), "eval");
        EvalConfig& e = c.eval;
        e.n_prompts = s.integer("n_prompts", e.n_prompts, 1, 10000000);
        if (const nlohmann::json* v = s.find("baselines")) {
            static const std::vector<std::string> known = {"zero", "least_squares", "ridge", "gd", "gd_plus_plus",
                                                           "features_gd", "knn", "averaging", "oracle_ridge_phi",
                                                           "mixture_posterior"};
            if (!v->is_array())
                throw Error("eval.baselines: expected an array of names, got " + shortJson(*v));
            e.baselines.clear();
            for (size_t i = 0; i < v->size(); ++i) {
                const auto& b = (*v)[i];
                if (!b.is_string() || std::find(known.begin(), known.end(), b.get<std::string>()) == known.end())
                    throw Error("eval.baselines[" + std::to_string(i)
                                + "]: expected one of \"zero\", \"least_squares\", \"ridge\", \"gd\", "
                                  "\"gd_plus_plus\", \"features_gd\", \"knn\", \"averaging\", \"oracle_ridge_phi\", "
                                  "\"mixture_posterior\", got "
                                + shortJson(b));
                e.baselines.push_back(b.get<std::string>());
            }
        }
        if (const nlohmann::json* v = s.find("gd_steps")) {
            if (!v->is_array() || v->empty())
                throw Error("eval.gd_steps: expected a non-empty array of integers >= 1, got " + shortJson(*v));
            e.gd_steps.clear();
            for (size_t i = 0; i < v->size(); ++i) {
                const auto& k = (*v)[i];
                if (!k.is_number_integer() || k.get<int64_t>() < 1 || k.get<int64_t>() > 10000)
                    throw Error("eval.gd_steps[" + std::to_string(i) + "]: expected an integer in [1, 10000], got "
                                + shortJson(k));
                e.gd_steps.push_back(k.get<int64_t>());
            }
        }
        e.ridge_lambda = s.number("ridge_lambda", e.ridge_lambda, [](double) { return true; },
                                  "a number (negative = Bayes choice)");
        e.bootstrap = s.integer("bootstrap", e.bootstrap, 0, 1000000);
        e.features_gd_steps = s.integer("features_gd_steps", e.features_gd_steps, 1, kBig);
        if (const nlohmann::json* v = s.find("alignment")) {
            if (!v->is_array())
                throw Error("eval.alignment: expected an array of GD baselines such as [\"gd_1\"], got " + shortJson(*v));
            e.alignment.clear();
            auto has = [&](const char* b) { return std::find(e.baselines.begin(), e.baselines.end(), b) != e.baselines.end(); };
            for (size_t i = 0; i < v->size(); ++i) {
                const auto& r = (*v)[i];
                bool ok = false;
                if (r.is_string()) {
                    const std::string name = r.get<std::string>();
                    for (int64_t k : e.gd_steps) {
                        ok |= has("gd") && name == "gd_" + std::to_string(k);
                        ok |= has("gd_plus_plus") && k > 1 && name == "gdpp_" + std::to_string(k);
                        ok |= has("features_gd") && name == "features_gd_" + std::to_string(k);
                    }
                }
                if (!ok)
                    throw Error("eval.alignment[" + std::to_string(i) + "]: expected a baseline of eval.baselines and "
                                "eval.gd_steps (e.g. \"gd_1\", \"gdpp_3\"), got " + shortJson(r));
                e.alignment.push_back(r.get<std::string>());
            }
        }
        s.rejectUnknown();
    }
    root.rejectUnknown();

    if (std::find(c.eval.baselines.begin(), c.eval.baselines.end(), "features_gd") != c.eval.baselines.end()
        && c.model.feature_dim == 0)
        throw Error("eval.baselines: \"features_gd\" needs a model with learned features (model.feature_dim > 0)");
    for (const auto& b : c.eval.baselines)
        if ((b == "oracle_ridge_phi" || b == "mixture_posterior") && c.task.kind != "representation"
            && c.task.kind != "representation_mixture")
            throw Error("eval.baselines: \"" + b + "\" needs task.kind \"representation\" or \"representation_mixture\"");
    const bool classification = c.task.kind == "fewshot_classification";
    if (classification && c.model.kind == "lsa")
        throw Error("model.kind: fewshot_classification needs a model with a label read-out: \"gpt2\" (the "
                    "transformer of Chan et al.), \"lstm\" or \"rnn\", got \"lsa\"");
    if (!classification && (c.model.kind == "lstm" || c.model.kind == "rnn"))
        throw Error("model.kind: \"" + c.model.kind + "\" is a recurrent baseline for task.kind "
                    "\"fewshot_classification\" (Chan et al.)");
    if (c.model.encoder == "resnet" && (!classification || c.task.exemplar_source == "synthetic"))
        throw Error("model.encoder: \"resnet\" encodes image exemplars (task.kind \"fewshot_classification\" with "
                    "task.exemplar_source \"image_folder\" or \"idx\"); vector exemplars use \"linear\"");
    if (classification && c.model.d_model % 2)
        throw Error("model.d_model: the sinusoidal position code of the few-shot classifier needs an even width, got "
                    + std::to_string(c.model.d_model));
    if (classification && c.model.init != "variance_scaling")
        throw Error("model.init: \"" + c.model.init + "\" is a construction for regression tasks");
    if (c.training.schedule == "inverse_sqrt" && c.training.warmup_steps == 0)
        throw Error("training.warmup_steps: the inverse_sqrt schedule needs warm-up steps > 0");
    if (classification)
        for (const auto& b : c.eval.baselines)
            if (b != "zero" && b != "least_squares" && b != "ridge" && b != "gd")
                throw Error("eval.baselines: \"" + b + "\" is a regression baseline; fewshot_classification has none");
    if (c.model.kind == "gpt2" && c.task.layout != "interleaved")
        throw Error("task.layout: the gpt2 model reads the interleaved layout (x and y tokens), got \""
                    + c.task.layout + "\"");
    if (c.model.kind == "gpt2" && c.task.layout == "interleaved" && c.model.n_positions > 0
        && c.model.n_positions < 2 * c.task.n_context + 1)
        throw Error("model.n_positions: a prompt of task.n_context = " + std::to_string(c.task.n_context) + " examples is "
                    + std::to_string(2 * c.task.n_context + 1) + " tokens, more than the model's "
                    + std::to_string(c.model.n_positions) + " positions");
    if (c.model.kind == "gpt2" && c.task.kind == "sine_regression")
        throw Error("task.kind: sine_regression is for the lsa model with a feature MLP");
    if (c.model.init != "variance_scaling") {
        const ModelConfig& m = c.model;
        if (c.task.layout != "pair" || m.softmax_layers > 0 || m.layer_norm || m.mlp || m.positions != "none"
            || m.feature_dim > 0)
            throw Error("model.init: \"" + m.init + "\" exists for the plain LSA on the pair layout only "
                        "(no softmax_layers, layer_norm, mlp, positions or feature_dim)");
        if (m.init == "gdpp_construction" && m.n_layers < 2)
            throw Error("model.init: \"gdpp_construction\" needs model.n_layers > 1 (GD++ is defined for K > 1)");
    }
    if (c.task.layout == "interleaved" && c.model.feature_dim > 0)
        throw Error("model.feature_dim: the input representation is for the pair layout only");
    if (const CurriculumConfig& cu = c.training.curriculum; cu.enabled) {
        // Cross-checks only when the curriculum is on, so a disabled section never blocks a smaller task.
        if (c.model.kind != "gpt2")
            throw Error("training.curriculum.enabled: the curriculum varies the number of in-context examples, but "
                        "the " + c.model.kind + " model is built for a fixed N (its attention sums over the N "
                        "context tokens without normalisation, and the GD construction sets P = η/N); "
                        "use model.kind \"gpt2\"");
        if (c.task.kind != "linear_regression" && c.task.kind != "sparse_linear_regression"
            && c.task.kind != "noisy_linear_regression")
            throw Error("training.curriculum.enabled: Garg et al.'s curriculum is implemented for task.kind "
                        "\"linear_regression\", \"sparse_linear_regression\" and \"noisy_linear_regression\", got \""
                        + c.task.kind + "\"");
        if (cu.dims_start > c.task.d)
            throw Error("training.curriculum.dims_start: expected an integer in [1, task.d = "
                        + std::to_string(c.task.d) + "], got " + std::to_string(cu.dims_start));
        if (c.task.kind == "sparse_linear_regression" && cu.dims_start < c.task.sparsity)
            throw Error("training.curriculum.dims_start: the support of w lies among the active coordinates, so it "
                        "must be at least task.sparsity = " + std::to_string(c.task.sparsity) + ", got "
                        + std::to_string(cu.dims_start));
        if (cu.points_start > c.task.n_context + 1)
            throw Error("training.curriculum.points_start: expected an integer in [2, task.n_context + 1 = "
                        + std::to_string(c.task.n_context + 1) + "] (in-context examples plus the query), got "
                        + std::to_string(cu.points_start));
    }
    return c;
}

nlohmann::json toJson(const ExperimentConfig& c)
{
    nlohmann::json j;
    j["preset"] = c.preset;
    j["scale"] = c.scale;
    j["description"] = c.description;
    j["seed"] = c.seed;
    j["device"] = c.device;
    j["task"] = {{"kind", c.task.kind},
                 {"amplitude_min", c.task.amplitude_min},
                 {"amplitude_max", c.task.amplitude_max},
                 {"phase_min", c.task.phase_min},
                 {"phase_max", c.task.phase_max},
                 {"rep_dim", c.task.rep_dim},
                 {"rep_layers", c.task.rep_layers},
                 {"n_representations", c.task.n_representations},
                 {"layout", c.task.layout},
                 {"d", c.task.d},
                 {"n_context", c.task.n_context},
                 {"x_distribution", c.task.x_distribution},
                 {"x_range", c.task.x_range},
                 {"w_scale", c.task.w_scale},
                 {"noise_std", c.task.noise_std},
                 {"sparsity", c.task.sparsity},
                 {"n_classes", c.task.n_classes},
                 {"n_holdout", c.task.n_holdout},
                 {"zipf_alpha", c.task.zipf_alpha},
                 {"p_bursty", c.task.p_bursty},
                 {"labels_per_class", c.task.labels_per_class},
                 {"n_labels", c.task.n_labels},
                 {"exemplar_dim", c.task.exemplar_dim},
                 {"within_class_noise", c.task.within_class_noise},
                 {"exemplar_source", c.task.exemplar_source},
                 {"exemplar_path", c.task.exemplar_path},
                 {"exemplar_labels_path", c.task.exemplar_labels_path},
                 {"image_size", c.task.image_size},
                 {"exemplars_per_class", c.task.exemplars_per_class},
                 {"n_common_classes", c.task.n_common_classes},
                 {"p_bursty_common", c.task.p_bursty_common},
                 {"p_bursty_zipfian", c.task.p_bursty_zipfian},
                 {"non_bursty_type", c.task.non_bursty_type},
                 {"zipf_within_common_rare", c.task.zipf_within_common_rare}};
    j["model"] = {{"kind", c.model.kind},
                  {"d_model", c.model.d_model},
                  {"n_layers", c.model.n_layers},
                  {"n_heads", c.model.n_heads},
                  {"n_positions", c.model.n_positions},
                  {"tied", c.model.tied},
                  {"init_scale", c.model.init_scale},
                  {"init", c.model.init},
                  {"encoder", c.model.encoder},
                  {"softmax_layers", c.model.softmax_layers},
                  {"layer_norm", c.model.layer_norm},
                  {"mlp", c.model.mlp},
                  {"positions", c.model.positions},
                  {"pos_dim", c.model.pos_dim},
                  {"feature_mlp", c.model.feature_mlp},
                  {"feature_dim", c.model.feature_dim},
                  {"attention_variant", c.model.attention_variant},
                  {"variant_strength", c.model.variant_strength},
                  {"augment_hidden", c.model.augment_hidden}};
    const TrainingConfig& t = c.training;
    j["training"] = {{"optimizer", t.optimizer},       {"lr", t.lr},
                     {"beta1", t.beta1},               {"beta2", t.beta2},
                     {"weight_decay", t.weight_decay}, {"batch_size", t.batch_size},
                     {"steps", t.steps},               {"grad_clip", t.grad_clip},
                     {"schedule", t.schedule},         {"warmup_steps", t.warmup_steps},
                     {"eval_every", t.eval_every},     {"checkpoint_every", t.checkpoint_every},
                     {"curriculum",
                      {{"enabled", t.curriculum.enabled},
                       {"dims_start", t.curriculum.dims_start},
                       {"dims_inc", t.curriculum.dims_inc},
                       {"points_start", t.curriculum.points_start},
                       {"points_inc", t.curriculum.points_inc},
                       {"interval", t.curriculum.interval}}}};
    j["eval"] = {{"n_prompts", c.eval.n_prompts},
                 {"baselines", c.eval.baselines},
                 {"gd_steps", c.eval.gd_steps},
                 {"ridge_lambda", c.eval.ridge_lambda},
                 {"bootstrap", c.eval.bootstrap},
                 {"features_gd_steps", c.eval.features_gd_steps},
                 {"alignment", c.eval.alignment}};
    return j;
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
    nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    if (value.is_discarded())
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
        std::ifstream f(request.config_file);
        if (!f)
            throw Error("cannot read config file " + request.config_file);
        try {
            config = nlohmann::json::parse(f);
        } catch (const nlohmann::json::parse_error& e) {
            throw Error(request.config_file + ": invalid JSON (" + std::string(e.what()) + ")");
        }
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

} // namespace icl
