#include "commands.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/analysis/gd_alignment.h"
#include "core/analysis/icl_curve.h"
#include "core/analysis/icl_iwl.h"
#include "core/analysis/pasting.h"
#include "core/analysis/probe_analysis.h"
#include "core/analysis/kernel_view.h"
#include "core/error.h"
#include "core/io/memory_budget.h"
#include "core/io/config_schema.h"
#include "core/io/experiment_file.h"
#include "core/io/kinds.h"
#include "core/report.h"
#include "core/runtime/allocator.h"
#include "core/runtime/cpu_kernels.h"
#include "core/runtime/blas.h"
#include "core/training/trainer.h"
#include "display.h"
#include "plot_export.h"
#include "progress_bar.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void onInterrupt(int)
{
    g_interrupted = true;
}

std::string fmt(double v, int precision = 4)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

json finalMetrics(const RunSummary& s)
{
    json m = json::object();
    json baselines = json::object();
    for (const auto& [name, values] : s.metrics) {
        if (values.empty())
            continue;
        if (name.rfind("baseline/", 0) == 0)
            baselines[name.substr(9)] = jsonNumber(values.back());
        else if (name.rfind("baseline_eta/", 0) == 0)
            baselines["eta_" + name.substr(13)] = jsonNumber(values.back());
        else
            m[name] = jsonNumber(values.back());
    }
    m["baselines"] = baselines;
    return m;
}

void printBaselines(const std::map<std::string, double>& baselines, double model, int64_t layers = 1)
{
    for (const auto& [name, value] : baselines)
        std::cout << "  " << shown(name) << std::string(name.size() < 16 ? 16 - name.size() : 1, ' ') << fmt(value) << "\n";
    // The reference of a K-layer model is K steps of GD (and GD++ when fitted).
    for (const std::string& ref : {"gd_" + std::to_string(layers), "gdpp_" + std::to_string(layers)}) {
        auto it = baselines.find(ref);
        if (it != baselines.end() && it->second > 0)
            std::cout << "model / " << ref << " = " << fmt(model / it->second, 4) << "\n";
    }
}

/// `j[key]` as info prints it: a string escaped (shown), another value as display JSON, "" when absent.
std::string fieldText(const json& j, const char* key)
{
    if (!j.is_object() || !j.contains(key))
        return {};
    const json& v = j[key];
    return v.is_string() ? shown(v.get<std::string>()) : jsonForDisplay(v);
}

int64_t layersOf(const json& config)
{
    return config.is_object() && config.contains("model") ? config["model"].value("n_layers", int64_t(1)) : 1;
}

} // namespace

json jsonNumber(double v)
{
    return std::isfinite(v) ? json(v) : json(nullptr);
}

void printJsonObj(const json& out)
{
    // Valid JSON with the file's strings, never raw control characters or an exception for invalid UTF-8.
    std::cout << jsonForDisplay(out, 2) << "\n";
}

int runPresets(bool asJson)
{
    const auto presets = listPresets();
    if (asJson) {
        json out = json::object();
        json list = json::array();
        for (const auto& p : presets)
            list.push_back({{"name", p.name}, {"description", p.description}, {"reproduces", p.reproduces},
                            {"scales", p.scales}});
        out["presets"] = list;
        printJsonObj(out);
        return 0;
    }
    for (const auto& p : presets)
        std::cout << p.name << "  " << p.description << "\n    reproduces: " << p.reproduces << "\n";
    return 0;
}

int runConfigList(bool asJson, bool markdown)
{
    if (asJson && markdown)
        throw Error("config --list: give --json or --markdown, not both");
    if (asJson)
        printJsonObj(configReferenceJson());
    else if (markdown)
        std::cout << configReferenceMarkdown();
    else
        std::cout << configReferenceText();
    return 0;
}

int runTrain(const TrainArgs& args)
{
    json config;
    if (!args.resume) {
        config = resolveConfig(args.request);
    } else if (!args.request.preset.empty() || !args.request.config_file.empty() || !args.request.sets.empty()) {
        throw Error("--resume continues the file's own config: drop --preset/--config/--set (only --steps may change)");
    }
    if (!args.resume && fs::exists(args.out) && !args.force)
        throw Error(args.out + ": file exists (use --resume to continue it or --force to overwrite)");

    TrainOptions options;
    options.out_path = args.out;
    options.resume = args.resume;
    options.force = args.force;
    options.threads = args.threads;
    options.keep_optimizer_every = args.keep_optimizer_every;
    if (args.resume && args.request.steps) {
        options.steps = *args.request.steps;
        const RunSummary s = readRunSummary(args.out);
        if (!s.checkpoints.empty() && s.checkpoints.back().step >= options.steps)
            throw Error(args.out + ": already at step " + std::to_string(s.checkpoints.back().step)
                        + "; --steps is the new total and must be larger");
    } else if (args.resume && fs::exists(args.out)) {
        // A finished run (last checkpoint at the config's training.steps) has nothing to continue: say so and
        // succeed, so a re-queued sweep task (icl-cli sweep --emit-slurm) leaves it as it is.
        const RunSummary s = readRunSummary(args.out);
        const json stored = storedJson(s.config_json);
        const int64_t total = stored.is_object() && stored.contains("training") && stored["training"].is_object()
                                  ? stored["training"].value("steps", int64_t(-1))
                                  : int64_t(-1);
        if (!s.checkpoints.empty() && total >= 0 && s.checkpoints.back().step >= total) {
            const int64_t last = s.checkpoints.back().step;
            if (args.json)
                printJsonObj(json{{"out", args.out}, {"final_step", last}, {"stopped", false},
                                  {"already_finished", true}});
            else
                std::cout << shown(args.out) << ": already finished at step " << last << " (training.steps " << total
                          << "); nothing to train (give --steps to continue beyond it)\n";
            return 0;
        }
    }

    g_interrupted = false;
    auto previous = std::signal(SIGINT, onInterrupt);
    ProgressBar bar("train");
    std::string lastEval;
    TrainResult result;
    try {
        result = train(config, options, [&](const TrainProgress& p) {
            if (p.phase == TrainProgress::Phase::Preparing && bar.enabled())
                std::fprintf(stderr, "%s ...\n", shown(p.message).c_str());
            if (p.evaluated)
                lastEval = " eval " + fmt(p.eval_loss);
            if (p.phase == TrainProgress::Phase::Training)
                bar.update(p.step, p.total_steps, "loss " + fmt(p.train_loss) + lastEval);
            return !g_interrupted.load();
        });
    } catch (...) {
        bar.finish();
        std::signal(SIGINT, previous);
        throw;
    }
    bar.finish();
    std::signal(SIGINT, previous);

    // Interrupted by Ctrl-C: the last checkpoint is saved; exit 130 (128 + SIGINT) so scripts can tell.
    const int exitCode = (result.stopped && g_interrupted.load()) ? 130 : 0;
    if (args.json) {
        json out;
        out["out"] = args.out;
        out["final_step"] = result.final_step;
        out["stopped"] = result.stopped;
        out["device"] = result.device;
        out["eval_loss"] = jsonNumber(result.eval_loss);
        out["baselines"] = json::object();
        for (const auto& [name, value] : result.baselines)
            out["baselines"][name] = jsonNumber(value);
        printJsonObj(out);
        return exitCode;
    }
    std::cout << (result.stopped ? "stopped" : "finished") << " at step " << result.final_step << " on "
              << shown(result.device) << " -> " << shown(args.out) << "\n";
    if (exitCode != 0)
        std::cout << "interrupted: continue with  icl-cli train --resume --out " << shown(args.out) << "\n";
    const RunSummary trained = readRunSummary(args.out);
    if (trained.metrics.count("icl_accuracy")) {
        std::cout << "eval loss (cross-entropy of the query label) " << fmt(result.eval_loss) << "\n"
                  << "ICL accuracy (holdout classes, labels {0, 1}; chance 0.5) " << fmt(trained.lastMetric("icl_accuracy"))
                  << ", IWL accuracy (no support in context) " << fmt(trained.lastMetric("iwl_accuracy")) << "\n";
        if (trained.metrics.count("icl_accuracy_common"))
            std::cout << "common classes: ICL accuracy " << fmt(trained.lastMetric("icl_accuracy_common"))
                      << ", IWL accuracy " << fmt(trained.lastMetric("iwl_accuracy_common"))
                      << "; rare classes: ICL accuracy " << fmt(trained.lastMetric("icl_accuracy_rare"))
                      << ", IWL accuracy " << fmt(trained.lastMetric("iwl_accuracy_rare")) << "\n";
        return exitCode;
    }
    std::cout << "eval loss 0.5·(ŷ − y)² on the fixed evaluation prompts:\n  model           " << fmt(result.eval_loss)
              << "\n";
    printBaselines(result.baselines, result.eval_loss,
                   layersOf(storedJson(trained.config_json)));
    return exitCode;
}

int runInfo(const std::string& path, bool asJson)
{
    const RunSummary s = readRunSummary(path);
    json config = storedJson(s.config_json);
    if (asJson) {
        json out;
        out["file"] = path;
        out["format"] = s.format;
        out["format_version"] = s.format_version;
        out["app_version"] = s.app_version;
        out["created"] = s.created;
        out["config"] = config;
        json cps = json::array();
        for (const auto& c : s.checkpoints) {
            json cp = {{"step", c.step}, {"train_loss", jsonNumber(c.train_loss)}, {"wall_time_s", c.wall_time_s}};
            if (!c.damaged.empty())
                cp["damaged"] = c.damaged;
            cps.push_back(cp);
        }
        out["checkpoints"] = cps;
        out["final"] = finalMetrics(s);
        out["analyses"] = s.analyses;
        if (!s.import_json.empty())
            out["import"] = storedJson(s.import_json);
        out["checksums"] = s.checksums;
        out["damaged"] = s.damaged;
        out["notes"] = s.notes;
        const BlasInfo blas = blasInfo();
        out["blas"] = {{"library", blas.library}, {"core", blas.core}, {"core_source", blas.core_source},
                       {"best_core", blas.best_core}, {"threads", blas.intra_op_threads}};
        out["allocator"] = cpuAllocatorInfo().summary();
        const AtenCpuInfo kernels = atenCpuInfo();
        out["cpu_kernels"] = {{"capability", kernels.capability}, {"source", kernels.source}, {"best", kernels.best}};
        printJsonObj(out);
        return s.damaged.empty() ? 0 : 1;
    }
    std::cout << shown(path) << "  (" << shown(s.format) << " v" << s.format_version << ", app " << shown(s.app_version)
              << ", created " << shown(s.created) << ")\n";
    std::cout << "BLAS        " << blasInfo().summary() << "\n";
    std::cout << "CPU kernels " << atenCpuInfo().summary() << "\n";
    std::cout << "allocator   " << cpuAllocatorInfo().summary() << "\n";
    if (config.is_object()) {
        if (config.contains("preset") && config["preset"].is_string() && config["preset"] != "")
            std::cout << "preset      " << shown(config["preset"].get<std::string>()) << " ("
                      << shown(config.value("scale", json("")).is_string() ? config.value("scale", "") : "") << ")\n";
        std::cout << "task        " << jsonForDisplay(config["task"]) << "\n"
                  << "model       " << jsonForDisplay(config["model"]) << "\n"
                  << "training    " << jsonForDisplay(config["training"]) << "\n"
                  << "seed        " << jsonForDisplay(config["seed"]) << ", device " << jsonForDisplay(config["device"])
                  << "\n";
    }
    if (!s.import_json.empty()) {
        const json imp = storedJson(s.import_json);
        if (imp.is_object()) {
            std::cout << "imported    " << fieldText(imp, "imported") << ", not trained here ("
                      << fieldText(imp, "layout") << " layout)\n";
            const json sources = imp.contains("sources") && imp["sources"].is_array() ? imp["sources"] : json::array();
            for (const auto& src : sources)
                std::cout << "  source    " << fieldText(src, "path") << "  (" << fieldText(src, "format") << ", step "
                          << fieldText(src, "step") << ", sha256 " << fieldText(src, "sha256") << ")\n";
            const json warnings = imp.contains("warnings") && imp["warnings"].is_array() ? imp["warnings"] : json::array();
            for (const auto& w : warnings)
                std::cout << "  warning   " << (w.is_string() ? shown(w.get<std::string>()) : jsonForDisplay(w)) << "\n";
        } else {
            std::cout << "imported    (damaged /import provenance)\n";
        }
    }
    std::cout << "checkpoints " << s.checkpoints.size() << ":";
    for (const auto& c : s.checkpoints)
        std::cout << " " << c.step << (c.damaged.empty() ? "" : " (damaged)");
    std::cout << "\n";
    for (const auto& n : s.notes)
        std::cout << "note        " << shown(n) << "\n";
    // Damage goes to stderr as the same one-line messages every command prints, and info exits 1.
    for (const auto& d : s.damaged)
        printErrorLine(d);
    const int exitCode = s.damaged.empty() ? 0 : 1;
    if (!s.analyses.empty()) {
        std::cout << "analyses   ";
        for (const auto& [kind, count] : s.analyses)
            std::cout << " " << shown(kind) << " (" << count << ")";
        std::cout << "\n";
    }
    if (!s.metrics.count("step") || s.metrics.at("step").empty()) {
        std::cout << "no metrics yet\n";
        return exitCode;
    }
    const double trainLoss = s.lastMetric("train_loss");
    std::cout << "at step " << static_cast<long long>(s.lastMetric("step")) << ": train loss "
              << (std::isnan(trainLoss) && !s.import_json.empty() ? std::string("— (trained elsewhere)") : fmt(trainLoss))
              << ", eval loss " << fmt(s.lastMetric("eval_loss")) << "\n";
    if (s.metrics.count("icl_accuracy")) {
        std::cout << "  ICL accuracy (holdout classes, labels {0, 1}; chance 0.5) " << fmt(s.lastMetric("icl_accuracy"))
                  << ", over all labels " << fmt(s.lastMetric("icl_accuracy_all_labels")) << "\n"
                  << "  IWL accuracy (training classes, no support in context) " << fmt(s.lastMetric("iwl_accuracy"))
                  << "\n";
        if (s.metrics.count("icl_accuracy_common"))
            std::cout << "  common classes: ICL accuracy " << fmt(s.lastMetric("icl_accuracy_common"))
                      << ", IWL accuracy " << fmt(s.lastMetric("iwl_accuracy_common")) << "\n"
                      << "  rare classes:   ICL accuracy " << fmt(s.lastMetric("icl_accuracy_rare"))
                      << ", IWL accuracy " << fmt(s.lastMetric("iwl_accuracy_rare")) << "\n";
        return exitCode;
    }
    std::map<std::string, double> baselines;
    for (const auto& [name, values] : s.metrics)
        if (name.rfind("baseline/", 0) == 0 && !values.empty())
            baselines[name.substr(9)] = values.back();
    printBaselines(baselines, s.lastMetric("eval_loss"), layersOf(config));
    return exitCode;
}

int runVerify(const std::string& path, bool asJson)
{
    const FileVerification v = verifyExperimentFile(path);
    if (asJson) {
        printJsonObj(json{{"file", path}, {"ok", v.damaged.empty()}, {"checksums", v.checksums},
                          {"objects_checked", v.objects_checked}, {"damaged", v.damaged}, {"notes", v.notes}});
        return v.damaged.empty() ? 0 : 1;
    }
    for (const auto& n : v.notes)
        std::cout << "note: " << shown(n) << "\n";
    for (const auto& d : v.damaged)
        std::cout << shown(d) << "\n";
    if (!v.damaged.empty()) {
        printErrorLine(path + ": " + std::to_string(v.damaged.size()) + " damaged object"
                       + (v.damaged.size() == 1 ? "" : "s"));
        return 1;
    }
    if (v.checksums)
        std::cout << shown(path) << ": ok (" << v.objects_checked << " objects match their checksums)\n";
    else
        std::cout << shown(path) << ": readable (" << v.objects_checked
                  << " objects read; format version 1 has no checksums, so damage cannot be ruled out)\n";
    return 0;
}

int runRecover(const std::string& path, bool accept_damaged)
{
    std::cout << recoverExperimentFile(path, accept_damaged) << "\n";
    return 0;
}

namespace {

IclCurve iclCurveWithProgress(const std::string& path, int64_t checkpoint, int64_t prompts, uint64_t seed,
                              int threads, bool store = false)
{
    // The curve runs the regression model on regression prompts; a few-shot classification run has neither.
    const json cfg = storedJson(readRunSummary(path).config_json);
    if (cfg.is_object() && cfg.contains("task") && cfg["task"].is_object()
        && kindFromName<TaskKind>(cfg["task"].value("kind", std::string())) == TaskKind::FewshotClassification)
        throw Error(path + ": a few-shot classification run (Chan et al.); the ICL curve (error vs number of "
                    "in-context examples) is for the regression tasks, use: icl-cli analyze " + path + " icl-iwl");
    IclCurveOptions o;
    o.store = store;
    o.checkpoint_step = checkpoint;
    o.n_prompts = prompts;
    o.seed = seed;
    o.threads = threads;
    ProgressBar bar("eval");
    return computeIclCurve(path, o, bar.callback());
}

json curveJson(const IclCurve& c)
{
    json out;
    out["checkpoint_step"] = c.checkpoint_step;
    out["n_prompts"] = c.n_prompts;
    out["n_examples"] = c.n_examples;
    json series = json::object();
    for (const auto& s : c.series) {
        json entry = {{"error", s.error}, {"ci_lower", s.ci_lower}, {"ci_upper", s.ci_upper}};
        if (s.name == "model")
            out["model"] = entry;
        else
            series[s.name] = entry;
    }
    out["baselines"] = series;
    return out;
}

} // namespace

int runEval(const EvalArgs& args)
{
    const ScopedMemoryLimit budget(args.max_memory);  // the budget of every file the evaluation opens
    const IclCurve c = iclCurveWithProgress(args.path, args.checkpoint, args.prompts, args.seed, args.threads, true);
    if (args.json) {
        printJsonObj(curveJson(c));
        return 0;
    }
    std::cout << "ICL curve of " << shown(args.path) << " at checkpoint " << c.checkpoint_step << " (" << c.n_prompts
              << " prompts, " << c.loss_name << ", mean):\n";
    std::printf("%4s", "n");
    for (const auto& s : c.series)
        std::printf(" %14s", shown(s.name).c_str());
    std::printf("\n");
    for (size_t i = 0; i < c.n_examples.size(); ++i) {
        std::printf("%4lld", static_cast<long long>(c.n_examples[i]));
        for (const auto& s : c.series)
            std::printf(" %14.4f", s.error[i]);
        std::printf("\n");
    }
    return 0;
}

namespace {

Figure figureByName(const std::string& path, const std::string& plot, int64_t checkpoint)
{
    const RunSummary s = readRunSummary(path);
    if (plot == "loss")
        return lossFigure(s);
    if (plot == "icl_curve")
        return iclCurveFigure(iclCurveWithProgress(path, checkpoint, 0, 0, 0), s);
    if (plot == "alignment")
        return alignmentFigure(s);
    if (plot == "icl_iwl")
        return iclIwlFigure(s);
    if (plot == "eta_scan") {
        const json cfg = storedJson(s.config_json);
        return etaScanFigure(computeEtaScan(path, checkpoint, cfg["model"].value("n_layers", 1), 4.0, 200, false), s);
    }
    if (plot == "pasting_icl_curve" || plot == "pasting_loss") {
        // The latest pasting stored in this parent (icl-cli analyze FILE paste stores each one).
        const std::vector<StoredPasting> stored = readStoredPastings(path);
        if (!stored.empty())
            return plot == "pasting_icl_curve" ? pastingIclCurvesFigure(stored.back().result, stored.back().options, s)
                                               : pastingLossCurvesFigure(stored.back().result, stored.back().options, s);
        if (s.analyses.count("pasting"))
            throw Error(path + ": every stored pasting result is damaged (icl-cli verify " + path + " lists them)");
    }
    std::string names;
    for (const auto& n : availablePlots(s))
        names += (names.empty() ? "" : ", ") + n;
    names += ", attention, lens, patching, algorithm_map, algorithm_map_best_step, algorithm_map_training";
    throw Error("--plot " + plot + ": unknown plot for this experiment (available: " + names + ")");
}

} // namespace

int runExport(const ExportArgs& args)
{
    const std::string ext = fs::path(args.out).extension().string();
    if (ext != "." + args.format)
        throw Error("--out " + args.out + ": expected a file name ending in ." + args.format + " for --format "
                    + args.format);
    if (isInspectorPlot(args.plot)) {
        exportInspectorPlot(args);
    } else if (isAlgorithmMapPlot(args.plot)) {
        exportAlgorithmMapFigure(args);
    } else {
        const Figure f = figureByName(args.path, args.plot, args.checkpoint);
        exportPlot(f, args.out, args.format, args.dpi);
    }
    std::cerr << "wrote " << shown(args.out) << "\n";
    return 0;
}

int runReport(const ReportArgs& args)
{
    const RunSummary s = readRunSummary(args.path);
    std::error_code ec;
    fs::create_directories(args.out_dir, ec);
    if (ec)
        throw Error(args.out_dir + ": cannot create directory (" + ec.message() + ")");
    json summary;
    summary["file"] = args.path;
    summary["config"] = storedJson(s.config_json);
    summary["final"] = finalMetrics(s);
    summary["checkpoints"] = s.checkpoints.size();
    json files = json::array();
    std::vector<std::string> formats = {"csv"};
    if (plotImagesAvailable())
        formats = {"png", "svg", "pdf", "csv"};
    for (const auto& plot : availablePlots(s)) {
        Figure f;
        if (plot.rfind("algorithm_map", 0) == 0) {
            // The stored algorithm maps (their heatmaps need the map view): written once, for the three names.
            if (plot == "algorithm_map")
                summary["algorithm_map"] = reportAlgorithmMaps(args.path, s, args.out_dir, formats, args.dpi, &files);
            continue;
        }
        if (plot == "icl_curve") {
            const IclCurve c = iclCurveWithProgress(args.path, -1, 0, 0, 0);
            summary["icl_curve"] = curveJson(c);
            f = iclCurveFigure(c, s);
        } else if (plot == "alignment") {
            f = alignmentFigure(s);
        } else if (plot.rfind("pasting_", 0) == 0) {
            // A stored pasting that cannot be read (damaged, or not a pasting result) costs its plots, not the
            // report: the reason goes to stderr and into summary.json.
            try {
                f = figureByName(args.path, plot, -1);
            } catch (const Error& e) {
                std::cerr << "warning: " << plot << " left out: " << shown(e.what()) << "\n";
                summary["pasting_error"] = e.what();
                continue;
            }
        } else if (plot == "eta_scan" || plot == "icl_iwl") {
            f = figureByName(args.path, plot, -1);
        } else {
            f = lossFigure(s);
        }
        for (const auto& format : formats) {
            const std::string out = (fs::path(args.out_dir) / (plot + "." + format)).string();
            exportPlot(f, out, format, args.dpi);
            files.push_back(out);
        }
    }
    if (s.analyses.count("pasting") && !summary.contains("pasting_error")) {
        // The numbers behind the pasting plots: the latest stored pasting (the one they draw).
        const std::vector<StoredPasting> stored = readStoredPastings(args.path);
        if (!stored.empty()) {
            const PastingResult& r = stored.back().result;
            auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
            summary["pasting"] = {{"id", stored.back().id},         {"created", stored.back().created},
                                  {"cut_layer", r.cut_layer},       {"embedding", r.embedding},
                                  {"steps", r.steps},               {"pasted_loss", num(r.pasted_loss)},
                                  {"scratch_loss", num(r.scratch_loss)}, {"ridge_loss", num(r.ridge_loss)},
                                  {"zero_loss", num(r.zero_loss)},  {"out_path", r.out_path}};
        }
    }
    summary["plots"] = files;
    const std::string summaryPath = (fs::path(args.out_dir) / "summary.json").string();
    // The file's own values (summary.json is read by programs); only invalid UTF-8 becomes U+FFFD.
    std::ofstream(summaryPath) << summary.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    files.push_back(summaryPath);
    if (args.json) {
        printJsonObj(json{{"out_dir", args.out_dir}, {"files", files}});
        return 0;
    }
    std::cout << "report for " << shown(args.path) << " in " << shown(args.out_dir) << ":\n";
    for (const auto& f : files)
        std::cout << "  " << shown(f.get<std::string>()) << "\n";
    return 0;
}

namespace {

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

int runEtaScan(const AnalyzeArgs& args)
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

int runOod(const AnalyzeArgs& args)
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

int runProbe(const AnalyzeArgs& args)
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

int runPaste(const AnalyzeArgs& args)
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
    g_interrupted = false;
    std::signal(SIGINT, onInterrupt);
    std::signal(SIGTERM, onInterrupt);
    ProgressBar bar("paste");
    PastingResult r;
    try {
        r = computePasting(args.path, o, [&](int64_t done, int64_t total) {
            bar.update(done, total);
            return !g_interrupted.load();
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

int runCopy(const AnalyzeArgs& args)
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

int runKernel(const AnalyzeArgs& args)
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

} // namespace

namespace {

int runIclIwl(const AnalyzeArgs& args)
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


int runGdAlignment(const AnalyzeArgs& args)
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

using AnalysisCommand = int (*)(const AnalyzeArgs&);

/// Every kind of `icl-cli analyze` and its command, in the order of the help text.
const std::pair<const char*, AnalysisCommand> kAnalyses[] = {
    { "gd-alignment", runGdAlignment },
    { "eta-scan", runEtaScan },
    { "layers", runLayers },
    { "ood", runOod },
    { "interpolate", runInterpolate },
    { "copy", runCopy },
    { "kernel", runKernel },
    { "probe", runProbe },
    { "paste", runPaste },
    { "attention", runAttention },
    { "lens", runLens },
    { "patching", runPatching },
    { "icl-iwl", [](const AnalyzeArgs& a) { return a.show_sequence.empty() ? runIclIwl(a) : runShowSequence(a); } },
    { "algorithm-map", runAlgorithmMap },
};

} // namespace

std::vector<std::string> analysisKinds()
{
    std::vector<std::string> kinds;
    for (const auto& entry : kAnalyses)
        kinds.emplace_back(entry.first);
    return kinds;
}

int runAnalyze(const AnalyzeArgs& args)
{
    const ScopedMemoryLimit budget(args.max_memory);  // the budget of every file the analysis opens
    for (const auto& [kind, command] : kAnalyses)
        if (args.kind == kind)
            return command(args);
    throw Error("unknown analysis \"" + args.kind + "\"");
}

} // namespace icl::cli
