// icl-cli's torch-free commands: presets, config, info, verify and recover (compiled into the launcher, icl-cli,
// and into icl-cli-torch, which runs the others; launcher.cpp).
#include "commands.h"

#include <cmath>
#include <iostream>
#include <map>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/config_schema.h"
#include "core/io/experiment_file.h"
#include "display.h"
#include "options.h"

using nlohmann::json;

namespace icl::cli {

namespace {

/// `j[key]` as info prints it: a string escaped (shown), another value as display JSON, "" when absent.
std::string fieldText(const json& j, const char* key)
{
    if (!j.is_object() || !j.contains(key))
        return {};
    const json& v = j[key];
    return v.is_string() ? shown(v.get<std::string>()) : jsonForDisplay(v);
}

} // namespace

const std::vector<TorchCommand>& torchCommands()
{
    static const std::vector<TorchCommand> commands {
        {"train", "train a model and write an experiment file"},
        {"eval", "ICL error vs number of in-context examples, model and baselines"},
        {"export", "write one plot of an experiment as PNG, SVG, PDF or CSV"},
        {"report", "every plot that fits the experiment, plus summary.json"},
        {"analyze", "run an analysis on a checkpoint and store it in the file"},
        {"import", "write an experiment file from a foreign checkpoint: a PyTorch .pt, .safetensors or .npz file, or a Garg et al. run folder (model_<step>.pt, state.pt)"},
        {"export-weights", "write a checkpoint's weights as .safetensors or a PyTorch .pt that Python reads without the workbench"},
        {"sweep", "expand a grid of --set overrides into training runs (local processes or Slurm)"},
        {"aggregate", "table (CSV) and plots of the final metrics of a sweep directory"},
        {"runtime", "the BLAS, CPU kernels and allocator that LibTorch runs on here"},
    };
    return commands;
}

std::string torchCommandHelp(const std::string& name)
{
    for (const TorchCommand& c : torchCommands())
        if (name == c.name)
            return c.help;
    throw std::logic_error("icl-cli: no torch command " + name);
}

void describeCommandLine(CLI::App& app)
{
    app.description("ICL Workbench command line: train transformers on in-context-learning tasks and compare them "
                    "with learning algorithms");
    app.require_subcommand(1);
    // One line on stderr for every command-line error, like every other error of icl-cli.
    app.failure_message(
        [](const CLI::App*, const CLI::Error& e) { return "icl-cli: " + std::string(e.what()) + "\n"; });
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

void printBaselines(const std::map<std::string, double>& baselines, double model, int64_t layers)
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

int64_t layersOf(const json& config)
{
    return config.is_object() && config.contains("model") ? config["model"].value("n_layers", int64_t(1)) : 1;
}

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
            if (!c.damaged.empty()) {
                // A damaged record's numbers are not the file's (the reader leaves them 0).
                cp["train_loss"] = nullptr;
                cp["wall_time_s"] = nullptr;
                cp["damaged"] = c.damaged;
            }
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
        printJsonObj(out);
        return s.damaged.empty() ? 0 : 1;
    }
    std::cout << shown(path) << "  (" << shown(s.format) << " v" << s.format_version << ", app " << shown(s.app_version)
              << ", created " << shown(s.created) << ")\n";
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
    const bool ok = v.damaged.empty() && v.refused.empty();
    if (asJson) {
        json out{{"file", path},
                 {"ok", ok},
                 {"checksums", v.checksums},
                 {"objects_checked", v.objects_checked},
                 {"damaged", v.damaged},
                 {"notes", v.notes}};
        if (!v.refused.empty())
            out["error"] = v.refused;
        printJsonObj(out);
        return ok ? 0 : 1;
    }
    if (!v.refused.empty()) {
        printErrorLine(v.refused);
        return 1;
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

void addPresetsCommand(CLI::App& app)
{
    auto json = std::make_shared<bool>(false);
    CLI::App* presets = app.add_subcommand("presets", "list presets with one-line descriptions");
    addJsonFlag(presets, *json);
    setCommand(presets, [json] { return runPresets(*json); });
}

void addConfigCommand(CLI::App& app)
{
    struct ConfigArgs {
        bool list = false;
        bool json = false;
        bool markdown = false;
    };
    auto args = std::make_shared<ConfigArgs>();
    CLI::App* config = app.add_subcommand("config",
        "the config reference: every key with its type, default and "
        "allowed values");
    config->add_flag("--list", args->list, "list every config key (the schema behind --set and --config)");
    addJsonFlag(config, args->json);
    config->add_flag("--markdown", args->markdown, "the reference as Markdown (the content of docs/config.md)");
    setCommand(config, [args] {
        if (!args->list)
            throw Error("config: give --list (the reference of every config key)");
        return runConfigList(args->json, args->markdown);
    });
}

void addFileCheckCommands(CLI::App& app)
{
    struct FileArgs {
        std::string path;
        bool json = false;
        bool accept_damaged = false;
    };
    const auto add = [&app](const char* name, const char* help, bool json) {
        auto args = std::make_shared<FileArgs>();
        CLI::App* command = app.add_subcommand(name, help);
        addExperimentFile(command, args->path);
        if (json)
            addJsonFlag(command, args->json);
        return std::pair(command, args);
    };
    auto [info, infoArgs] = add("info", "summary of an experiment file: config, checkpoints, final metrics", true);
    setCommand(
        info, [a = infoArgs] { return runInfo(a->path, a->json); }, [a = infoArgs] { return a->path; });
    auto [verify, verifyArgs] = add("verify", "check every object of an experiment file against its checksum", true);
    setCommand(
        verify, [a = verifyArgs] { return runVerify(a->path, a->json); }, [a = verifyArgs] { return a->path; });
    auto [recover, recoverArgs] = add("recover",
        "roll back a commit that was interrupted (RUN.h5.journal), as the "
        "next train --resume would",
        false);
    recover->add_flag(
        "--accept-damaged", recoverArgs->accept_damaged, "roll back even if the file it restores has damaged objects");
    setCommand(recover, [a = recoverArgs] { return runRecover(a->path, a->accept_damaged); });
}

} // namespace icl::cli
