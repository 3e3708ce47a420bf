// Reading back the pasting results computePasting stores in the parent (torch-free).

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/analysis/pasting.h"
#include "core/error.h"
#include "core/io/experiment_file.h"

namespace icl {

namespace {

using nlohmann::json;

// A stored number; null (how a non-finite value is stored) reads as NaN.
double number(const json& j, const char* key)
{
    const json& v = j.at(key);
    return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

std::vector<double> numbers(const json& j, const char* key)
{
    std::vector<double> out;
    for (const json& v : j.at(key))
        out.push_back(v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>());
    return out;
}

} // namespace

std::vector<StoredPasting> readStoredPastings(const std::string& parent_path)
{
    std::vector<StoredPasting> out;
    for (const StoredAnalysis& a : readStoredAnalyses(parent_path, "pasting")) {
        StoredPasting p;
        p.id = a.id;
        p.created = a.created;
        try {
            const json o = json::parse(a.options_json);
            const json r = json::parse(a.result_json);
            PastingOptions& opt = p.options;
            opt.checkpoint_step = a.checkpoint_step;
            opt.cut_layer = o.at("cut_layer").get<int64_t>();
            opt.embedding = o.at("embedding").get<std::string>();
            opt.steps = o.at("steps").get<int64_t>();
            opt.lr = o.at("lr").get<double>();
            opt.schedule = o.value("schedule", std::string("constant"));
            opt.concurrent = o.value("concurrent", opt.concurrent);
            opt.batch_size = o.at("batch_size").get<int64_t>();
            opt.n_eval = o.at("n_eval").get<int64_t>();
            opt.match_label_scale = o.value("match_label_scale", false);
            // τ as used; with match_label_scale the options leave it to the matching (both are refused).
            opt.w_scale = opt.match_label_scale ? 0.0 : o.at("w_scale").get<double>();
            opt.seed = a.seed;
            opt.copy_parent_embedding = o.value("copy_parent_embedding", false);
            opt.zero_new_mlp = o.value("zero_new_mlp", false);
            opt.out_path = o.value("out_path", std::string());

            PastingResult& res = p.result;
            res.parent_step = a.checkpoint_step;
            res.parent_layers = r.at("parent_layers").get<int64_t>();
            res.cut_layer = r.at("cut_layer").get<int64_t>();
            res.embedding = r.at("embedding").get<std::string>();
            res.pasted_layers = r.at("pasted_layers").get<int64_t>();
            res.trainable_pasted = r.at("trainable_pasted").get<int64_t>();
            res.trainable_scratch = r.at("trainable_scratch").get<int64_t>();
            res.steps = opt.steps;
            res.w_scale = o.at("w_scale").get<double>();
            res.noise_std = o.at("noise_std").get<double>();
            res.ridge_lambda = number(r, "ridge_lambda");
            res.pasted_loss = number(r, "pasted_loss");
            res.scratch_loss = number(r, "scratch_loss");
            res.ridge_loss = number(r, "ridge_loss");
            res.zero_loss = number(r, "zero_loss");
            res.frozen_unchanged = true;
            res.n_examples = r.at("n_examples").get<std::vector<int64_t>>();
            res.pasted_curve = numbers(r, "pasted_curve");
            res.scratch_curve = numbers(r, "scratch_curve");
            res.ridge_curve = numbers(r, "ridge_curve");
            res.curve_steps = r.at("curve_steps").get<std::vector<int64_t>>();
            res.pasted_train = numbers(r, "pasted_train");
            res.pasted_eval = numbers(r, "pasted_eval");
            res.scratch_train = numbers(r, "scratch_train");
            res.scratch_eval = numbers(r, "scratch_eval");
            res.out_path = r.value("out_path", std::string());
            res.analysis_id = a.id;
            res.wall_time_s = number(r, "wall_time_s");
            opt.train_scratch = !res.scratch_curve.empty();
        } catch (const json::exception& e) {
            throw Error(parent_path + ": /analysis/pasting/" + a.id + " is not a pasting result (" + e.what() + ")");
        }
        out.push_back(std::move(p));
    }
    return out;
}

} // namespace icl
