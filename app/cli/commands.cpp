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
#include "options.h"
#include "plot_export.h"
#include "progress_bar.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

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

    const InterruptFlag interrupt;
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
            return !interrupt.raised();
        });
    } catch (...) {
        bar.finish();
        throw;
    }
    bar.finish();

    // Interrupted by Ctrl-C: the last checkpoint is saved; exit 130 (128 + SIGINT) so scripts can tell.
    const int exitCode = (result.stopped && interrupt.raised()) ? 130 : 0;
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
    refuseOutputOverInput(args.out, {args.path, args.prompt_file});
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

void addTrainCommand(CLI::App& app)
{
    /// TrainArgs and the options that fill its request only when given.
    struct TrainCommandArgs {
        TrainArgs train;
        int64_t steps = -1;
        int64_t seed = -1;
        std::string device;
    };
    auto args = std::make_shared<TrainCommandArgs>();
    TrainArgs& train = args->train;
    CLI::App* t = app.add_subcommand("train", torchCommandHelp("train"));
    auto* presetOpt = t->add_option("--preset", train.request.preset, "preset name (see `icl-cli presets`)");
    auto* configOpt
        = t->add_option("--config", train.request.config_file, "JSON config file")->check(CLI::ExistingFile);
    presetOpt->excludes(configOpt);
    t->add_option("--scale", train.request.scale, "preset scale")->check(CLI::IsMember({ "quick", "paper" }));
    addSetOption(
        t, train.request.sets, "override a config value: key.path=value (repeatable; keys: icl-cli config --list)");
    t->add_option("--out", train.out, "experiment file to write (RUN.h5)")->required();
    t->add_option("--steps", args->steps,
         "number of training steps (0 stores the initial model, e.g. a construction of model.init)")
        ->check(atLeast(0));
    t->add_option("--seed", args->seed, "experiment seed")->check(atLeast(0));
    addDeviceOption(t, args->device);
    addThreadsOption(t, train.threads,
        "LibTorch intra-op threads (default: all cores); with training.shards > 1, the threads the "
        "shards run on (one intra-op thread each; the weights do not depend on it)");
    t->add_flag("--resume", train.resume, "continue the file's run from its last checkpoint");
    t->add_option("--keep-optimizer-every", train.keep_optimizer_every,
         "also keep optimizer state at checkpoints whose step is a multiple of N (default: last checkpoint only)")
        ->check(atLeast(1));
    t->add_flag("--force", train.force, "overwrite an existing output file");
    addJsonFlag(t, train.json);
    setCommand(
        t,
        [args] {
            TrainArgs& train = args->train;
            if (train.request.preset.empty() && train.request.config_file.empty() && !train.resume)
                throw Error("train: give --preset NAME or --config FILE (or --resume an existing --out file)");
            if (args->steps >= 0)
                train.request.steps = args->steps;
            if (args->seed >= 0)
                train.request.seed = static_cast<uint64_t>(args->seed);
            if (!args->device.empty())
                train.request.device = args->device;
            return runTrain(train);
        },
        [args] { return args->train.resume ? args->train.out : args->train.request.config_file; });
}

void addEvalCommand(CLI::App& app)
{
    auto args = std::make_shared<EvalArgs>();
    CLI::App* e = app.add_subcommand("eval", torchCommandHelp("eval"));
    addExperimentFile(e, args->path);
    addCheckpointOption(e, args->checkpoint);
    e->add_option("--prompts", args->prompts, "number of prompts (default: the run's evaluation prompts)")
        ->check(atLeast(1));
    e->add_option("--seed", args->seed, "prompt seed (default 0: the run's own evaluation prompts)")
        ->check(unsignedInteger());
    addThreadsOption(e, args->threads);
    addMaxMemoryOption(e, args->max_memory);
    addJsonFlag(e, args->json);
    setCommand(
        e, [args] { return runEval(*args); }, [args] { return args->path; });
}

void addExportCommand(CLI::App& app)
{
    auto args = std::make_shared<ExportArgs>();
    ExportArgs& exp = *args;
    CLI::App* x = app.add_subcommand("export", torchCommandHelp("export"));
    addExperimentFile(x, exp.path);
    x->add_option("--plot", exp.plot,
         "plot name: loss, icl_curve, alignment, eta_scan, icl_iwl (few-shot runs), pasting_icl_curve and "
         "pasting_loss (the latest pasting stored in a parent), attention (one head: "
         "--layer, --head), lens, patching (--corruption, --example); the last three on the prompt of "
         "--prompt-seed; algorithm_map (--family, --similarity), algorithm_map_best_step and "
         "algorithm_map_training (the latest stored maps, else computed)")
        ->required();
    x->add_option("--format", exp.format, "png, svg, pdf or csv")
        ->required()
        ->check(CLI::IsMember({ "png", "svg", "pdf", "csv" }));
    x->add_option("--out", exp.out, "output file")->required();
    addDpiOption(x, exp.dpi);
    addCheckpointOption(x, exp.checkpoint,
                        "checkpoint step for icl_curve, attention, lens, patching (default: the last one not damaged)");
    auto* promptSeed
        = x->add_option("--prompt-seed", exp.prompt_seed, "attention, lens, patching: seed of the prompt (default 0)")
              ->check(unsignedInteger());
    x->add_option("--prompt", exp.prompt_file,
         "attention, lens, patching: your own prompt from FILE (JSON or CSV, as analyze --prompt); excludes "
         "--prompt-seed")
        ->type_name("FILE")
        ->excludes(promptSeed);
    x->add_option("--layer", exp.layer, "attention: 0-based layer of the head (default 0)")->check(atLeast(0));
    x->add_option("--head", exp.head, "attention: 0-based head (default 0)")->check(atLeast(0));
    x->add_option("--attention-scale", exp.attention_scale,
         "attention: colour scale of softmax weights, as the Attention page's toolbar: linear (0 … 1), row (each "
         "query row ÷ its maximum) or log (log10, 1e-3 … 1; softmax heads only) (default linear)")
        ->check(CLI::IsMember({ "linear", "row", "log" }));
    x->add_option(
         "--corruption", exp.corruption, "patching: change_label, different_w or shuffle_pairs (default change_label)")
        ->check(CLI::IsMember({ "change_label", "different_w", "shuffle_pairs" }));
    x->add_option("--example", exp.example, "patching: the label y_i that change_label changes, i = 1 … N (default 1)")
        ->check(atLeast(1));
    x->add_option("--seed", exp.seed, "patching: seed of the corruption's random draws (default 0)")
        ->check(unsignedInteger());
    x->add_option("--family", exp.family, "algorithm_map: gd, gdpp, newton or ridge (default newton)")
        ->check(CLI::IsMember({ "gd", "gdpp", "newton", "ridge" }));
    x->add_option("--similarity", exp.similarity, "algorithm_map: errors or weights (default errors)")
        ->check(CLI::IsMember({ "errors", "weights" }));
    setCommand(
        x, [args] { return runExport(*args); }, [args] { return args->path; });
}

void addReportCommand(CLI::App& app)
{
    auto args = std::make_shared<ReportArgs>();
    CLI::App* r = app.add_subcommand("report", torchCommandHelp("report"));
    addExperimentFile(r, args->path);
    r->add_option("--out", args->out_dir, "output directory (created)")->required();
    addDpiOption(r, args->dpi);
    addJsonFlag(r, args->json);
    setCommand(
        r, [args] { return runReport(*args); }, [args] { return args->path; });
}

void addRuntimeCommand(CLI::App& app)
{
    auto json = std::make_shared<bool>(false);
    CLI::App* runtime = app.add_subcommand("runtime", torchCommandHelp("runtime"));
    addJsonFlag(runtime, *json);
    setCommand(runtime, [json] {
        const BlasInfo blas = blasInfo();
        const AtenCpuInfo kernels = atenCpuInfo();
        if (*json) {
            printJsonObj(nlohmann::json {
                {"blas", {{"library", blas.library}, {"core", blas.core}, {"core_source", blas.core_source},
                          {"best_core", blas.best_core}, {"threads", blas.intra_op_threads}}},
                {"cpu_kernels", {{"capability", kernels.capability}, {"source", kernels.source}, {"best", kernels.best}}},
                {"allocator", cpuAllocatorInfo().summary()}});
            return 0;
        }
        std::cout << "BLAS: " << blas.summary() << "\nCPU kernels: " << kernels.summary()
                  << "\nallocator: " << cpuAllocatorInfo().summary() << "\n";
        return 0;
    });
}

} // namespace icl::cli
