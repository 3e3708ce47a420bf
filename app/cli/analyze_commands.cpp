// icl-cli analyze RUN.h5 KIND [options]: one sub-subcommand per analysis, each with its own options and help
// (the inspector's in inspector_commands.cpp, the algorithm map in algorithm_map_commands.cpp).
#include "commands.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/analysis/gd_alignment.h"
#include "core/analysis/icl_iwl.h"
#include "core/analysis/kernel_view.h"
#include "core/analysis/pasting.h"
#include "core/analysis/probe_analysis.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/io/memory_budget.h"
#include "core/training/trainer.h"
#include "display.h"
#include "options.h"
#include "progress_bar.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

namespace analyze_cli {

/// Number of linear (GD-step) layers: softmax layers (the interleaved copy layer) do no GD step.
int64_t modelLayers(const std::string& path)
{
    const json cfg = storedJson(readRunSummary(path).config_json);
    return std::max<int64_t>(1, cfg["model"].value("n_layers", int64_t(1)) - cfg["model"].value("softmax_layers", int64_t(0)));
}

json metricsJson(const AlignmentMetrics& m)
{
    return {{"prediction_difference", jsonNumber(m.prediction_difference)},
            {"model_cosine", jsonNumber(m.model_cosine)},
            {"model_difference", jsonNumber(m.model_difference)},
            {"relative_model_difference", jsonNumber(m.relative_model_difference)}};
}

int runEtaScan(const EtaScanArgs& args)
{
    const int64_t k = args.k > 0 ? args.k : modelLayers(args.path);
    const EtaScan s = computeEtaScan(args.path, args.checkpoint, k, args.eta_max, args.points);
    if (args.json) {
        printJsonObj(json{{"analysis", "eta_scan"}, {"k", s.k}, {"checkpoint_step", s.checkpoint_step},
                          {"eta", s.eta}, {"loss", s.loss}, {"best_eta", s.best_eta}, {"best_loss", s.best_loss},
                          {"model_loss", s.model_loss}});
        return 0;
    }
    std::cout << "η scan of GD-" << s.k << " on the evaluation prompts of " << shown(args.path) << ":\n"
              << "  best η " << fmt(s.best_eta) << " with loss " << fmt(s.best_loss) << "; the model (checkpoint "
              << s.checkpoint_step << ") has loss " << fmt(s.model_loss) << "\n";
    const size_t stride = std::max<size_t>(1, s.eta.size() / 20);
    for (size_t i = 0; i < s.eta.size(); i += stride)
        std::printf("  η %8.4f  loss %10.4f\n", s.eta[i], s.loss[i]);
    return 0;
}

int runLayers(const AnalyzeArgs& args)
{
    const auto rows = compareLayersWithSteps(args.path, args.checkpoint, true);
    if (args.json) {
        json out = {{"analysis", "layers_vs_steps"}, {"rows", json::array()}};
        for (const auto& r : rows)
            out["rows"].push_back({{"layer", r.layer},
                                   {"model_loss", jsonNumber(r.model_loss)},
                                   {"gd_loss", jsonNumber(r.gd_loss)},
                                   {"gdpp_loss", jsonNumber(r.gdpp_loss)},
                                   {"vs_gd", metricsJson(r.vs_gd)},
                                   {"vs_gdpp", metricsJson(r.vs_gdpp)}});
        printJsonObj(out);
        return 0;
    }
    std::printf("%6s %11s %11s %11s %12s %12s %12s %12s\n", "layer", "model", "GD-k", "GD++-k", "cos GD",
                "cos GD++", "rel.diff GD", "rel.diff GD++");
    for (const auto& r : rows)
        std::printf("%6lld %11.4f %11.4f %11.4f %12.4f %12.4f %12.4f %12.4f\n", static_cast<long long>(r.layer),
                    r.model_loss, r.gd_loss, r.gdpp_loss, r.vs_gd.model_cosine, r.vs_gdpp.model_cosine,
                    r.vs_gd.relative_model_difference, r.vs_gdpp.relative_model_difference);
    return 0;
}

int runOod(const OodArgs& args)
{
    const OodCurve c = computeOod(args.path, args.checkpoint, args.ood_kind, args.alpha);
    if (args.json) {
        printJsonObj(json{{"analysis", "ood"}, {"kind", c.kind}, {"checkpoint_step", c.checkpoint_step},
                          {"alpha", c.alpha}, {"model_loss", c.model_loss}, {"gd_loss", c.gd_loss},
                          {"least_squares_loss", c.least_squares_loss}, {"zero_loss", c.zero_loss}});
        return 0;
    }
    std::cout << "out-of-distribution (" << shown(c.kind) << ") at checkpoint " << c.checkpoint_step << ":\n";
    std::printf("%8s %11s %11s %11s %11s\n", "alpha", "model", "GD", "LS", "zero");
    for (size_t i = 0; i < c.alpha.size(); ++i)
        std::printf("%8.3f %11.4f %11.4f %11.4f %11.4f\n", c.alpha[i], c.model_loss[i], c.gd_loss[i],
                    c.least_squares_loss[i], c.zero_loss[i]);
    return 0;
}

int runInterpolate(const AnalyzeArgs& args)
{
    const InterpolationCurve c = computeInterpolation(args.path, args.checkpoint);
    if (args.json) {
        printJsonObj(json{{"analysis", "interpolation"}, {"checkpoint_step", c.checkpoint_step}, {"t", c.t},
                          {"loss", c.loss}, {"gd_loss", c.gd_loss}});
        return 0;
    }
    std::cout << "loss along (1 − t)·trained + t·GD construction, checkpoint " << c.checkpoint_step << " (GD loss "
              << fmt(c.gd_loss) << "):\n";
    for (size_t i = 0; i < c.t.size(); ++i)
        std::printf("  t %5.2f  loss %10.4f\n", c.t[i], c.loss[i]);
    return 0;
}

int runProbe(const ProbeArgs& args)
{
    ProbeOptions o = withCommonOptions(args.probe, args);
    if (args.prompts > 0)
        o.n_fit = o.n_test = args.prompts;
    const ProbeCurve c = computeProbe(args.path, o);
    if (args.json) {
        printJsonObj(json{{"analysis", "probe"},
                          {"checkpoint_step", c.checkpoint_step},
                          {"target", c.target},
                          {"positions", c.positions},
                          {"layers", c.layer_labels},
                          {"normalized_mse", c.normalised_mse},
                          {"r2", c.r2},
                          {"lambda", c.lambda},
                          {"n_fit", c.n_fit},
                          {"n_test", c.n_test}});
        return 0;
    }
    std::cout << "linear probes for " << shown(c.target) << " at " << shown(c.positions) << " tokens, checkpoint " << c.checkpoint_step
              << " (" << c.n_fit << " fit / " << c.n_test << " test rows); normalised MSE (1 = no information):\n";
    for (size_t l = 0; l < c.layer_labels.size(); ++l)
        std::printf("  %-10s %10.4f   (λ %.3g)\n", shown(c.layer_labels[l]).c_str(), c.normalised_mse[l], c.lambda[l]);
    return 0;
}

int runPaste(const PasteArgs& args)
{
    PastingOptions o = withCommonOptions(args.paste, args);
    if (args.prompts > 0)
        o.n_eval = args.prompts;
    o.out_path = args.out;
    if (o.out_path.empty()) {
        const fs::path p(args.path);
        o.out_path = (p.parent_path() / (p.stem().string() + ".paste-l" + std::to_string(o.cut_layer) + "-"
                                         + o.embedding + ".h5"))
                         .string();
    }
    // Never replace an experiment by accident, and never leave a half-trained pasted file behind.
    if (fs::exists(o.out_path) && !args.force)
        throw Error(o.out_path + " already exists; use --force to replace it");
    o.overwrite = args.force;
    const InterruptFlag interrupt;
    ProgressBar bar("paste");
    PastingResult r;
    try {
        r = computePasting(args.path, o, [&](int64_t done, int64_t total) {
            bar.update(done, total);
            return !interrupt.raised();
        });
    } catch (...) {
        std::error_code ignored;
        if (!fs::equivalent(o.out_path, args.path, ignored))
            fs::remove(o.out_path, ignored);
        throw;
    }
    bar.finish();
    auto vec = [](const std::vector<double>& v) {
        json a = json::array();
        for (double x : v)
            a.push_back(jsonNumber(x));
        return a;
    };
    if (args.json) {
        printJsonObj(json{{"analysis", "paste"},
                          {"checkpoint_step", r.parent_step},
                          {"parent_layers", r.parent_layers},
                          {"cut_layer", r.cut_layer},
                          {"embedding", r.embedding},
                          {"pasted_layers", r.pasted_layers},
                          {"trainable_pasted", r.trainable_pasted},
                          {"trainable_scratch", r.trainable_scratch},
                          {"steps", r.steps},
                          {"lr", o.lr},
                          {"schedule", o.schedule},
                          {"concurrent", o.concurrent},
                          {"batch_size", o.batch_size},
                          {"w_scale", r.w_scale},
                          {"noise_std", r.noise_std},
                          {"match_label_variance", o.match_label_variance},
                          {"match_label_scale", o.match_label_scale},
                          {"init_from_parent", o.copy_parent_embedding},
                          {"zero_new_mlp", o.zero_new_mlp},
                          {"ridge_lambda", r.ridge_lambda},
                          {"pasted_loss", jsonNumber(r.pasted_loss)},
                          {"scratch_loss", jsonNumber(r.scratch_loss)},
                          {"ridge_loss", jsonNumber(r.ridge_loss)},
                          {"zero_loss", jsonNumber(r.zero_loss)},
                          {"frozen_unchanged", r.frozen_unchanged},
                          {"n_examples", r.n_examples},
                          {"pasted_curve", vec(r.pasted_curve)},
                          {"scratch_curve", vec(r.scratch_curve)},
                          {"ridge_curve", vec(r.ridge_curve)},
                          {"curve_steps", r.curve_steps},
                          {"pasted_eval", vec(r.pasted_eval)},
                          {"scratch_eval", vec(r.scratch_eval)},
                          {"out", r.out_path},
                          {"analysis_id", r.analysis_id},
                          {"wall_time_s", r.wall_time_s}});
        return 0;
    }
    std::cout << "pasting: " << shown(r.embedding) << " embedding + frozen blocks " << r.cut_layer << ".." << r.parent_layers - 1
              << " of checkpoint " << r.parent_step << ", " << r.steps << " steps of linear regression (τ "
              << fmt(r.w_scale) << (o.match_label_variance ? ", matched to the parent's label variance" : "")
              << ", σ " << fmt(r.noise_std) << (o.match_label_scale ? ", τ and σ scaled to the parent's label variance" : "")
              << ", ridge λ " << fmt(r.ridge_lambda) << "; Adam η " << fmt(o.lr)
              << (o.schedule == "cosine" ? " with cosine decay" : "") << ", batch "
              << o.batch_size << (o.copy_parent_embedding ? ", new module started from the parent" : "") << ")\n"
              << "  trainable parameters: pasted " << r.trainable_pasted << ", scratch " << r.trainable_scratch << "\n"
              << "  query loss (0.5·MSE): pasted " << fmt(r.pasted_loss) << ", scratch " << fmt(r.scratch_loss)
              << ", ridge " << fmt(r.ridge_loss) << ", zero " << fmt(r.zero_loss) << "\n"
              << "  n      pasted    scratch      ridge\n";
    for (size_t i = 0; i < r.n_examples.size(); ++i)
        std::printf("  %-4lld %9.4f  %9.4f  %9.4f\n", static_cast<long long>(r.n_examples[i]), r.pasted_curve[i],
                    r.scratch_curve[i], r.ridge_curve[i]);
    std::cout << "  pasted model: " << shown(r.out_path) << "; stored as /analysis/pasting/" << shown(r.analysis_id) << "\n";
    return 0;
}

int runCopy(const CopyArgs& args)
{
    const CopyAnalysis c = computeCopyAnalysis(args.path, args.checkpoint, args.prompts > 0 ? args.prompts : 64);
    if (args.json) {
        printJsonObj(json{{"analysis", "copy"},
                          {"checkpoint_step", c.checkpoint_step},
                          {"n_prompts", c.n_prompts},
                          {"own", c.own},
                          {"next", c.next},
                          {"other", c.other},
                          {"own_next_ratio", jsonNumber(c.ownNextRatio())},
                          {"next_other_ratio", jsonNumber(c.nextOtherRatio())},
                          {"token_labels", c.token_labels},
                          {"gradient_norm", c.gradient_norm}});
        return 0;
    }
    std::cout << "copy analysis of layer 1 at checkpoint " << c.checkpoint_step << " (" << c.n_prompts
              << " prompts): mean ‖∂(layer-1 output at x-token k)/∂(input token j)‖_F\n"
              << "  j = k (own)           " << fmt(c.own) << "\n"
              << "  j = k+1 (its y token) " << fmt(c.next) << "\n"
              << "  other tokens          " << fmt(c.other) << "\n"
              << "  own/next ratio " << fmt(c.ownNextRatio()) << ", next/other ratio " << fmt(c.nextOtherRatio())
              << (c.nextOtherRatio() > 2 ? "  (layer 1 copies y_k into the x_k token)" : "") << "\n";
    return 0;
}

json kernelCurveJson(const KernelErrorCurve& c)
{
    return {{"mean", c.mean}, {"std", c.std}, {"slope", jsonNumber(c.slope)}};
}

int runKernel(const KernelArgs& args)
{
    KernelViewOptions o;
    o.checkpoint_step = args.checkpoint;
    o.layer = args.layer;
    o.head = args.head;
    if (args.prompts > 0)
        o.n_prompts = args.prompts;
    if (!args.m.empty())
        o.m = args.m;
    o.seeds = args.seeds;
    o.seed = args.seed;
    o.scaling = args.scaling;
    o.threads = args.threads;
    ProgressBar bar("kernel");
    const KernelView kv = computeKernelView(args.path, o, bar.callback());
    bar.finish();
    const KernelSweep& s = kv.sweep;
    if (args.json) {
        json loss = json::array();
        for (const ReferenceLossCurve& c : kv.loss)
            loss.push_back({{"kernel", c.kernel}, {"m", c.m}, {"lambda", c.lambda}, {"step", c.step}, {"loss", c.loss}});
        printJsonObj(json{{"analysis", "kernel"},
                          {"id", kv.id},
                          {"checkpoint_step", kv.checkpoint_step},
                          {"layer", kv.layer},
                          {"head", kv.head},
                          {"n_prompts", kv.n_prompts},
                          {"attention_variant", kv.attention_variant},
                          {"variant_strength", kv.variant_strength},
                          {"scaling", kv.scaling},
                          {"exact_max_error", kv.exact_max_error},
                          {"exact_output_max_abs", kv.exact_output_max_abs},
                          {"exact_attention_max_abs", kv.exact_attention_max_abs},
                          {"m", s.m},
                          {"seeds", s.seeds},
                          {"slope", jsonNumber(s.output_rmse.slope)},
                          {"error", s.output_rmse.mean},
                          {"error_std", s.output_rmse.std},
                          {"attention_slope", jsonNumber(s.attention_rmse.slope)},
                          {"attention_error", s.attention_rmse.mean},
                          {"output_rmse", kernelCurveJson(s.output_rmse)},
                          {"output_max_abs", kernelCurveJson(s.output_max_abs)},
                          {"attention_rmse", kernelCurveJson(s.attention_rmse)},
                          {"attention_max_abs", kernelCurveJson(s.attention_max_abs)},
                          {"query_norm_mean", kv.query_norm_mean},
                          {"key_norm_mean", kv.key_norm_mean},
                          {"reference_loss", loss}});
        return 0;
    }
    std::cout << "kernel view of layer " << kv.layer << ", head " << kv.head << " at checkpoint " << kv.checkpoint_step
              << " (" << kv.n_prompts << " prompts, " << kv.n_queries << " queries × " << kv.n_keys << " keys, "
              << shown(kv.attention_variant) << " attention, " << shown(kv.scaling) << " scaling):\n"
              << "  exact-kernel reference model vs layer: max |Δ output| " << kv.exact_output_max_abs
              << ", max |Δ attention| " << kv.exact_attention_max_abs << "\n"
              << "  random features (" << s.seeds << " seeds each), RMSE of the output and of the attention matrix:\n";
    for (size_t i = 0; i < s.m.size(); ++i)
        std::cout << "    m = " << s.m[i] << "\t" << s.output_rmse.mean[i] << " ± " << s.output_rmse.std[i] << "\t"
                  << s.attention_rmse.mean[i] << " ± " << s.attention_rmse.std[i] << "\n";
    std::cout << "  fitted log-log slope: output " << fmt(s.output_rmse.slope, 3) << ", attention "
              << fmt(s.attention_rmse.slope, 3) << " (1/√m: −0.5)\n"
              << "  scaled query/key norms: mean " << fmt(kv.query_norm_mean, 3) << " / " << fmt(kv.key_norm_mean, 3)
              << ", max " << fmt(kv.query_norm_max, 3) << " / " << fmt(kv.key_norm_max, 3) << "\n";
    if (!kv.id.empty())
        std::cout << "  stored as /analysis/kernel/" << shown(kv.id) << "\n";
    return 0;
}

} // namespace analyze_cli

namespace analyze_cli {

int runIclIwl(const IclIwlArgs& args)
{
    IclIwlOptions o = withCommonOptions(IclIwlOptions{}, args);
    o.n_sequences = args.prompts;
    ProgressBar bar("icl-iwl");
    const IclIwlResult r = computeIclIwl(args.path, o, bar.callback());
    bar.finish();
    if (args.json) {
        json out{{"analysis", "icl_iwl"},
                 {"checkpoint_step", r.checkpoint_step},
                 {"n_sequences", r.n_sequences},
                 {"icl_accuracy", r.icl_accuracy},
                 {"icl_accuracy_all_labels", r.icl_accuracy_all_labels},
                 {"icl_in_context_rate", r.icl_in_context_rate},
                 {"iwl_accuracy", r.iwl_accuracy},
                 {"iwl_in_context_rate", r.iwl_in_context_rate}};
        if (r.common_rare_split) {
            out["icl_accuracy_common"] = r.icl_accuracy_common;
            out["icl_accuracy_rare"] = r.icl_accuracy_rare;
            out["iwl_accuracy_common"] = r.iwl_accuracy_common;
            out["iwl_accuracy_rare"] = r.iwl_accuracy_rare;
        }
        printJsonObj(out);
        return 0;
    }
    std::cout << "ICL vs IWL of " << shown(args.path) << " at checkpoint " << r.checkpoint_step << " (" << r.n_sequences
              << " sequences each):\n"
              << "  ICL, holdout classes, labels {0, 1} (chance 0.5)   " << fmt(r.icl_accuracy) << "\n"
              << "  ICL, over all labels                               " << fmt(r.icl_accuracy_all_labels) << "\n"
              << "  IWL, training classes, no support in context       " << fmt(r.iwl_accuracy) << "\n"
              << "  output is a label of the context: ICL " << fmt(r.icl_in_context_rate) << ", IWL "
              << fmt(r.iwl_in_context_rate) << "\n";
    if (r.common_rare_split)
        std::cout << "  ICL, common classes, labels {0, 1}                 " << fmt(r.icl_accuracy_common) << "\n"
                  << "  ICL, rare classes, labels {0, 1}                   " << fmt(r.icl_accuracy_rare) << "\n"
                  << "  IWL, common classes, no support in context         " << fmt(r.iwl_accuracy_common) << "\n"
                  << "  IWL, rare classes, no support in context           " << fmt(r.iwl_accuracy_rare) << "\n";
    return 0;
}


int runGdAlignment(const GdAlignmentArgs& args)
{
    GdAlignmentOptions o;
    o.checkpoint_step = args.checkpoint;
    o.reference = args.reference;
    if (o.reference == "default") {
        // The run's own alignment reference (features_gd_1 for the sine preset), else GD-K.
        const json cfg = storedJson(readRunSummary(args.path).config_json);
        const json alignment = cfg.is_object() && cfg.contains("eval") && cfg["eval"].is_object()
                                   ? cfg["eval"].value("alignment", json::array())
                                   : json::array();
        o.reference = !alignment.empty() && alignment[0].is_string() ? alignment[0].get<std::string>() : "gd";
    }
    if (o.reference == "gd" || o.reference == "gdpp")
        o.reference += "_" + std::to_string(modelLayers(args.path));  // K linear layers do K GD steps
    o.n_prompts = args.prompts;
    o.seed = args.seed;
    o.threads = args.threads;
    const AlignmentResult r = computeGdAlignment(args.path, o);
    const AlignmentMetrics& m = r.metrics;
    if (args.json) {
        json out = {{"analysis", "gd_alignment"},
                    {"reference", r.reference},
                    {"reference_eta", jsonNumber(r.reference_eta)},
                    {"checkpoint_step", r.checkpoint_step},
                    {"n_prompts", r.n_prompts},
                    {"prediction_difference", m.prediction_difference},
                    {"model_cosine", m.model_cosine},
                    {"model_difference", m.model_difference},
                    {"relative_model_difference", m.relative_model_difference},
                    {"model_loss", m.model_loss},
                    {"reference_loss", m.reference_loss}};
        printJsonObj(out);
        return 0;
    }
    std::cout << "GD alignment of " << shown(args.path) << " at checkpoint " << r.checkpoint_step << " with " << shown(r.reference)
              << (std::isfinite(r.reference_eta) ? " (η = " + fmt(r.reference_eta) + ", " : std::string(" ("))
              << r.n_prompts << " prompts):\n"
              << "  prediction difference      " << fmt(m.prediction_difference) << "\n"
              << "  model cosine               " << fmt(m.model_cosine) << "\n"
              << "  model difference           " << fmt(m.model_difference) << "\n"
              << "  relative model difference  " << fmt(m.relative_model_difference) << "\n"
              << "  loss: model " << fmt(m.model_loss) << ", " << shown(r.reference) << " " << fmt(m.reference_loss) << "\n";
    return 0;
}

} // namespace analyze_cli

namespace {

using namespace analyze_cli;

/// The analyses under `analyze` that have `option`, as "a, b and c" ("" when none has it).
std::string analysesWithOption(const CLI::App& analyze, const std::string& option)
{
    std::vector<std::string> names;
    for (const CLI::App* kind : analyze.get_subcommands([](const CLI::App*) { return true; }))
        if (kind->get_option_no_throw(option) != nullptr)
            names.push_back(kind->get_name());
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return text;
}

/// Refuses what CLI11 left over (allow_extras) on `analyze` and on its analysis `kind`: an option of another
/// analysis (naming the analyses that have it), an unknown option, an option before the analysis, a stray word.
void refuseLeftovers(const CLI::App& analyze, const CLI::App& kind)
{
    const std::string name = kind.get_name();
    const auto refuse
        = [](const std::string& message) { throw CLI::ExtrasError(message, CLI::ExitCodes::ExtrasError); };
    for (const std::string& arg : analyze.remaining())
        refuse("analyze: " + arg + ": options go after the analysis: icl-cli analyze RUN.h5 " + name + " [options]");
    for (const std::string& arg : kind.remaining()) {
        if (arg.size() < 2 || arg[0] != '-')
            refuse("analyze " + name + ": unexpected argument \"" + arg + "\" (icl-cli analyze RUN.h5 " + name
                + " [options]; icl-cli analyze " + name + " --help lists its options)");
        const std::string option = arg.substr(0, arg.find('='));
        const std::string others = analysesWithOption(analyze, option);
        refuse("analyze " + name + ": "
            + (others.empty() ? "unknown option " + option : option + " is an option of " + others + ", not of " + name)
            + " (icl-cli analyze " + name + " --help lists its options)");
    }
}

/// CLI11's help with the experiment file in the usage line: "Usage: icl-cli analyze file KIND [OPTIONS]" for analyze,
/// "Usage: icl-cli analyze file attention [OPTIONS]" for one analysis.
class AnalysisFormatter : public CLI::Formatter {
public:
    std::string make_usage(const CLI::App* app, std::string name) const override
    {
        if (app->get_name() == "analyze")
            return get_label("Usage") + ": " + name + " file ANALYSIS [OPTIONS]\n";
        const size_t kind = name.rfind(' ');
        return CLI::Formatter::make_usage(
            app, kind == std::string::npos ? name : name.substr(0, kind) + " file" + name.substr(kind));
    }
};

/// --prompts N of an analysis (`help` says what N counts and its default).
void addPromptsOption(CLI::App* kind, int64_t& prompts, const std::string& help)
{
    kind->add_option("--prompts", prompts, help)->check(atLeast(1));
}

/// --seed S of an analysis (`help` says what it seeds).
void addSeedOption(CLI::App* kind, uint64_t& seed, const std::string& help)
{
    kind->add_option("--seed", seed, help)->check(unsignedInteger());
}

const char* const kPromptSeedHelp = "prompt seed (default 0: the run's own evaluation prompts)";

} // namespace

CLI::App* addAnalysisCommand(
    CLI::App* analyze, const std::string& name, const std::string& help, AnalyzeArgs& common, std::function<int()> run)
{
    CLI::App* kind = analyze->add_subcommand(name, help);
    kind->formatter(std::make_shared<AnalysisFormatter>());
    kind->group("Analyses");
    kind->footer("");
    kind->allow_extras(); // refused by refuseLeftovers, in one line that names the analyses of a stray option
    setCommand(
        kind,
        [analyze, kind, &common, name, run = std::move(run)] {
            refuseLeftovers(*analyze, *kind);
            if (analyze->count("file") == 0)
                throw CLI::RequiredError(
                    "file is required: icl-cli analyze RUN.h5 " + name + " [options]", CLI::ExitCodes::RequiredError);
            common.path = analyze->get_option("file")->as<std::string>();
            common.kind = name;
            const ScopedMemoryLimit budget(common.max_memory); // the budget of every file the analysis opens
            return run();
        },
        [&common] { return common.path; });
    addCheckpointOption(kind, common.checkpoint);
    addThreadsOption(kind, common.threads);
    addMaxMemoryOption(kind, common.max_memory);
    addJsonFlag(kind, common.json);
    return kind;
}

namespace {

/// `run` with --threads applied to the calling thread first: for the analyses whose core functions take no thread
/// count.
template <class Args> std::function<int(const Args&)> onThreads(int (*run)(const Args&))
{
    return [run](const Args& args) {
        if (args.threads > 0)
            configureThreads(args.threads);
        return run(args);
    };
}

/// analyze FILE gd-alignment.
void addGdAlignment(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<GdAlignmentArgs>(analyze, "gd-alignment",
        "how close the model is to GD, GD++ or GD on features (prediction, model difference)", runGdAlignment);
    GdAlignmentArgs& a = *args;
    k->add_option("--reference", a.reference,
        "reference algorithm: the run's own (eval.alignment[0], else gd; the default), gd or gdpp (K steps "
        "/ layers for K linear layers), gd_k, gdpp_k, or features_gd_k (GD on meta-learned features)");
    addPromptsOption(k, a.prompts, "number of prompts (default: the run's evaluation prompts)");
    addSeedOption(k, a.seed, kPromptSeedHelp);
}

/// analyze FILE eta-scan.
void addEtaScan(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<EtaScanArgs>(analyze, "eta-scan",
        "loss of K steps of GD over a grid of step sizes η, and the model's", onThreads(runEtaScan));
    EtaScanArgs& a = *args;
    k->add_option("--k", a.k, "number of GD steps (default: the model's layers)")->check(atLeast(1));
    k->add_option("--eta-max", a.eta_max, "largest step size η")->check(CLI::Range(1e-6, 1e6));
    k->add_option("--points", a.points, "grid points")->check(CLI::Range(2, 100000));
}

/// analyze FILE layers.
void addLayers(CLI::App* analyze)
{
    addAnalysis<AnalyzeArgs>(
        analyze, "layers", "the prediction after each layer against k steps of GD and GD++", onThreads(runLayers));
}

/// analyze FILE ood.
void addOod(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<OodArgs>(
        analyze, "ood", "model, GD and least squares out of distribution (the loss against α)", onThreads(runOod));
    OodArgs& a = *args;
    k->add_option("--kind", a.ood_kind, "x_scale, w_scale, label_noise or depth")
        ->check(CLI::IsMember({ "x_scale", "w_scale", "label_noise", "depth" }));
    k->add_option("--alpha", a.alpha, "values of α (repeatable; default depends on --kind)");
}

/// analyze FILE interpolate.
void addInterpolate(CLI::App* analyze)
{
    addAnalysis<AnalyzeArgs>(
        analyze, "interpolate", "loss along (1 − t)·trained + t·GD construction", onThreads(runInterpolate));
}

/// analyze FILE copy.
void addCopy(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<CopyArgs>(analyze, "copy",
        "the interleaved copy layer: how layer 1's x-token outputs depend on the tokens", onThreads(runCopy));
    CopyArgs& a = *args;
    addPromptsOption(k, a.prompts, "number of prompts (default 64)");
}

/// analyze FILE kernel.
void addKernel(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<KernelArgs>(
        analyze, "kernel", "one softmax head as a kernel: random-feature approximations of it", runKernel);
    KernelArgs& a = *args;
    k->add_option("--layer", a.layer, "0-based softmax layer (default 0)")->check(atLeast(0));
    k->add_option("--head", a.head, "0-based head (default 0)")->check(atLeast(0));
    k->add_option("--m", a.m, "numbers of random features, e.g. 16,64,256,1024,4096")
        ->delimiter(',')
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    k->add_option("--seeds", a.seeds, "random-feature draws per m (default 5)")
        ->check(CLI::Range(int64_t(1), int64_t(1000)));
    k->add_option("--scaling", a.scaling,
         "how the scores are split between queries and keys for the random features: balanced (keys minus "
         "their mean, norms balanced by a linear map; default) or symmetric (q and k times D^(-1/4)); both "
         "leave the attention unchanged")
        ->check(CLI::IsMember({ "balanced", "symmetric" }));
    addPromptsOption(k, a.prompts, "number of prompts (default: the first 128 of the run's evaluation prompts)");
    addSeedOption(k, a.seed, "seed of the random features");
}

/// analyze FILE probe.
void addProbe(CLI::App* analyze)
{
    auto [k, args]
        = addAnalysis<ProbeArgs>(analyze, "probe", "linear probes of the residual stream after each layer", runProbe);
    ProbeArgs& a = *args;
    k->add_option("--target", a.probe.target, "x, phi, y, oracle or gd_k (default phi)")
        ->check(CLI::IsMember({ "x", "phi", "y", "oracle" })
            | CLI::Validator(
                [](std::string& v) { return v.rfind("gd_", 0) == 0 ? std::string() : std::string("not gd_k"); },
                "gd_k"));
    k->add_option("--positions", a.probe.positions, "x, y or query tokens (default x)")
        ->check(CLI::IsMember({ "x", "y", "query" }));
    addPromptsOption(k, a.prompts, "prompts the probes are fitted on, and as many they are scored on (default 512)");
    addSeedOption(k, a.seed, "prompt seed (default 0: derived from the experiment's seed)");
}

/// analyze FILE paste.
void addPaste(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<PasteArgs>(analyze, "paste",
        "a new embedding trained before the frozen blocks ℓ..L−1, against scratch and ridge", runPaste);
    PasteArgs& a = *args;
    PastingOptions& p = a.paste;
    k->add_option("--cut-layer", p.cut_layer, "layer ℓ where the parent is cut (blocks ℓ..L−1 kept frozen)")
        ->check(atLeast(0));
    k->add_option("--embedding", p.embedding, "new trainable embedding: linear or transformer1 (default linear)")
        ->check(CLI::IsMember({ "linear", "transformer1" }));
    k->add_option("--steps", p.steps, "Adam steps for the pasted and the scratch model (default 1000)")
        ->check(atLeast(0));
    k->add_option("--lr", p.lr, "Adam learning rate η of the new embedding and of the scratch model (default 1e-3)")
        ->check(CLI::PositiveNumber)
        ->check(CLI::Range(0.0, 10.0));
    k->add_option("--schedule", p.schedule,
         "learning-rate schedule of both models: constant (default) or cosine (η decays to 0 at the last "
         "step, no warm-up)")
        ->check(CLI::IsMember({ "constant", "cosine" }));
    k->add_flag("--sequential{false}", p.concurrent,
        "train the pasted and the scratch model one after the other on --threads intra-op threads (default: "
        "side by side, one thread each, on a machine with 2 or more hardware threads)");
    k->add_option("--eval-every", p.eval_every,
         "period of the loss curves' evaluations, in steps (default 100; each evaluates both models on 1,280 "
         "prompts)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
    k->add_option("--batch-size", p.batch_size, "prompts per training step (default 64)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 16));
    auto* wScale = k->add_option("--w-scale", p.w_scale,
                        "τ > 0 of the linear task's weights w ~ N(0, τ²I_d) (default: the parent's "
                        "task.w_scale)")
                       ->check(CLI::PositiveNumber)
                       ->check(CLI::Range(0.0, 1e6));
    auto* matchVariance = k->add_flag("--match-label-variance", p.match_label_variance,
                               "choose τ so that the linear labels ⟨w, x⟩ have the parent task's signal "
                               "variance (τ = τ_parent·(E‖Φ*(x)‖² / E‖x‖²)^½), the label scale the frozen "
                               "read-out was trained on")
                              ->excludes(wScale);
    k->add_flag("--match-label-scale", p.match_label_scale,
         "multiply the linear task's τ and σ by one factor c so that its labels have the parent task's "
         "variance (c² = (τ²E‖Φ*(x)‖² + σ²) / (τ²E‖x‖² + σ²)): the read-out's label scale at the linear "
         "task's own signal-to-noise ratio (ridge's λ and every loss ratio unchanged)")
        ->excludes(wScale)
        ->excludes(matchVariance);
    k->add_flag("--init-from-parent", p.copy_parent_embedding,
        "start the new module from the parent (linear, ℓ = 0: its read-in and positions; transformer1, ℓ ≥ 1: "
        "also its block ℓ − 1) instead of GPT-2's random initialisation");
    k->add_flag("--zero-new-mlp", p.zero_new_mlp,
        "with --init-from-parent and transformer1: the new block's MLP output starts at zero (the parent's "
        "attention, which copies x_i to the y-tokens, without its MLP, which computes Φ*)");
    k->add_option("--out", a.out,
        "experiment file for the pasted model (default RUN.paste-l<ℓ>-<embedding>.h5); an existing file "
        "needs --force; removed again if the run is interrupted or fails");
    k->add_flag("--force", a.force, "replace an existing --out file");
    addPromptsOption(k, a.prompts, "evaluation prompts of every model and baseline (default 1,280)");
    addSeedOption(k, a.seed, "seed of the pasting's random draws (default 0: the parent's seed)");
}

/// analyze FILE icl-iwl.
void addIclIwl(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<IclIwlArgs>(analyze, "icl-iwl",
        "in-context vs in-weights learning of a few-shot classification run",
        [](const IclIwlArgs& a) { return a.show_sequence.empty() ? runIclIwl(a) : runShowSequence(a); });
    IclIwlArgs& a = *args;
    k->add_option("--show-sequence", a.show_sequence,
         "instead of the accuracies, print one sequence of this kind (training, training_bursty, "
         "training_iid, icl or iwl; index --seed) with the checkpoint's prediction at its query")
        ->check(CLI::IsMember({ "training", "training_bursty", "training_iid", "icl", "iwl" }));
    addPromptsOption(k, a.prompts, "sequences of each evaluation (default: the run's evaluation prompts)");
    addSeedOption(k, a.seed,
        "0 (the default): the run's own evaluation sequences; another value draws fresh ones from that index; with "
        "--show-sequence the index of the sequence");
}

} // namespace

void addAnalyzeCommand(CLI::App& app)
{
    auto path = std::make_shared<std::string>(); // read by each analysis (addAnalysisCommand)
    CLI::App* analyze = app.add_subcommand("analyze", torchCommandHelp("analyze"));
    analyze->add_option("file", *path, "experiment file (required; before the analysis)");
    analyze->require_subcommand(0, 1);
    analyze->allow_extras(); // an unknown analysis is refused below, as the option of the analysis was before
    analyze->formatter(std::make_shared<AnalysisFormatter>());
    analyze->footer("Each analysis has its own options: icl-cli analyze ANALYSIS --help lists them.");
    addGdAlignment(analyze);
    addEtaScan(analyze);
    addLayers(analyze);
    addOod(analyze);
    addInterpolate(analyze);
    addCopy(analyze);
    addKernel(analyze);
    addProbe(analyze);
    addPaste(analyze);
    addInspectorAnalyses(analyze); // attention, lens, patching
    addIclIwl(analyze);
    addAlgorithmMapAnalysis(analyze);

    analyze->callback([analyze, path] {
        if (!analyze->get_subcommands().empty())
            return; // the analysis' own callback ran
        const std::vector<std::string> words = analyze->remaining();
        std::vector<std::string> kinds;
        for (const CLI::App* kind : analyze->get_subcommands([](const CLI::App*) { return true; }))
            kinds.push_back(kind->get_name());
        const std::string list = "{" + CLI::detail::join(kinds) + "}";
        for (const std::string& word : words)
            if (word.empty() || word[0] != '-')
                throw CLI::ValidationError("analysis: " + word + " not in " + list, CLI::ExitCodes::ValidationError);
        throw CLI::RequiredError(
            std::string(analyze->count("file") ? "analysis" : "file") + " is required", CLI::ExitCodes::RequiredError);
    });
}

} // namespace icl::cli
