// icl-cli import and export-weights: foreign checkpoints in, the workbench's weights out (core/training/weights_import.h).
#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/error.h"
#include "core/io/display_text.h"
#include "core/training/weights_import.h"
#include "options.h"
#include "progress_bar.h"

namespace icl::cli {

namespace {

using nlohmann::json;

std::atomic<bool> g_importInterrupted{false};

extern "C" void onImportInterrupt(int)
{
    g_importInterrupted = true;
}

/// `texts` escaped for display (names and messages from a file: control characters and invalid UTF-8 as \xNN).
std::vector<std::string> shown(const std::vector<std::string>& texts)
{
    std::vector<std::string> out;
    for (const auto& t : texts)
        out.push_back(escapeForDisplay(t));
    return out;
}

json planJson(const ImportPlan& plan)
{
    json j;
    j["layout"] = plan.layout;
    j["model_kind"] = plan.model_kind;
    j["inferred"] = escapeForDisplay(plan.inferred);
    j["sources"] = json::array();
    for (const auto& s : plan.sources)
        j["sources"].push_back(
            {{"path", escapeForDisplay(s.path)}, {"format", s.format}, {"sha256", s.sha256}, {"step", s.step}});
    j["mapping"] = json::array();
    for (const auto& [src, dst] : plan.mapping)
        j["mapping"].push_back({{"source", escapeForDisplay(src)}, {"workbench", escapeForDisplay(dst)}});
    j["dropped"] = shown(plan.dropped);
    j["prefixes_removed"] = plan.prefixes_removed;
    j["warnings"] = shown(plan.warnings);
    j["missing"] = plan.missing;
    return j;
}

void printPlan(const ImportPlan& plan)
{
    for (const auto& s : plan.sources)
        std::cout << "source      " << escapeForDisplay(s.path) << "  (" << s.format << ", step " << s.step << ", sha256 "
                  << s.sha256.substr(0, 16) << "…)\n";
    std::cout << "layout      " << plan.layout << " → workbench " << plan.model_kind << "\n"
              << "model       " << escapeForDisplay(plan.inferred) << "\n"
              << "mapping     " << plan.mapping.size() << " source tensors";
    if (!plan.dropped.empty())
        std::cout << ", " << plan.dropped.size() << " unused buffers dropped";
    if (!plan.prefixes_removed.empty()) {
        std::cout << ", prefixes removed:";
        for (const auto& p : plan.prefixes_removed)
            std::cout << " " << p;
    }
    std::cout << "\n";
    for (const auto& w : plan.warnings)
        std::cout << "warning     " << escapeForDisplay(w) << "\n";
}

} // namespace

int runImport(const ImportArgs& args)
{
    const ImportRequest& req = args.request;
    if (args.dry_run) {
        const ImportPlan plan = planImport(req);
        if (args.json) {
            json j = planJson(plan);
            if (plan.missing.empty())
                j["config"] = json::parse(plan.config_json);
            printJsonObj(j);
        } else {
            printPlan(plan);
            for (const auto& k : plan.missing)
                std::cout << "missing     " << k << " (give it with --set " << k << "=…)\n";
        }
        return 0;
    }
    // Ctrl-C / SIGTERM cancel at the next checkpoint: the import then removes what it wrote and releases the lock.
    g_importInterrupted = false;
    auto previousInt = std::signal(SIGINT, onImportInterrupt);
    auto previousTerm = std::signal(SIGTERM, onImportInterrupt);
    ProgressBar bar("import");
    ImportResult r;
    try {
        r = importWeights(req, [&](int64_t done, int64_t total, const std::string& message) {
            bar.update(done, total, message);
            return !g_importInterrupted.load();
        });
    } catch (...) {
        std::signal(SIGINT, previousInt);
        std::signal(SIGTERM, previousTerm);
        bar.finish();
        throw;
    }
    std::signal(SIGINT, previousInt);
    std::signal(SIGTERM, previousTerm);
    bar.finish();
    if (r.cancelled) {
        std::cerr << "icl-cli: import interrupted: nothing was written (" << args.request.out_path << " is unchanged)\n";
        return 130;
    }
    if (args.json) {
        json j = planJson(r.plan);
        j["out"] = args.request.out_path;
        j["steps"] = r.steps;
        j["eval_loss"] = r.eval_loss;
        printJsonObj(j);
        return 0;
    }
    printPlan(r.plan);
    std::cout << "wrote       " << args.request.out_path << ": " << r.steps.size() << " checkpoint(s), eval loss " << r.eval_loss
              << " (0.5·MSE on the run's evaluation prompts) at step " << (r.steps.empty() ? 0 : r.steps.back()) << "\n";
    return 0;
}

int runExportWeights(const ExportWeightsArgs& args)
{
    std::error_code ec;
    if (std::filesystem::exists(args.out, ec) && !args.force)
        throw Error(args.out + ": file exists (use --force to replace it)");
    refuseOutputOverInput(args.out, {args.path});
    const int64_t step = exportWeights(args.path, args.out, args.checkpoint, args.layout);
    if (args.json)
        printJsonObj(json{{"file", args.path}, {"out", args.out}, {"layout", args.layout}, {"checkpoint", step}});
    else
        std::cout << "wrote " << args.out << " (" << args.layout << " layout, checkpoint " << step << ")\n";
    return 0;
}

void addWeightsCommands(CLI::App& app)
{
    auto import = std::make_shared<ImportArgs>();
    ImportRequest& request = import->request;
    CLI::App* im = app.add_subcommand("import", torchCommandHelp("import"));
    im->add_option("source", request.source, "weights file or run folder")->required();
    im->add_option("--out", request.out_path, "experiment file to write (RUN.h5)");
    im->add_option("--config", request.config_file,
          "Garg et al.'s config.yaml or a workbench JSON config "
          "(default: config.yaml in / beside the source)")
        ->check(CLI::ExistingFile);
    addSetOption(im, request.sets,
        "fill or override a config value: key.path=value (repeatable), e.g. "
        "model.n_heads=8, task.n_context=40");
    im->add_flag("--force", request.force, "replace an existing output file");
    im->add_flag(
        "--dry-run", import->dry_run, "show the detected format, key mapping and inferred model; write nothing");
    addThreadsOption(im, request.threads);
    addMaxMemoryOption(im, request.max_memory);
    addJsonFlag(im, import->json);
    setCommand(
        im,
        [import] {
            if (import->request.out_path.empty() && !import->dry_run)
                throw Error("import: give --out RUN.h5 (or --dry-run to see what would be imported)");
            return runImport(*import);
        },
        [import] { return import->request.source; });

    auto exportArgs = std::make_shared<ExportWeightsArgs>();
    CLI::App* ew = app.add_subcommand("export-weights", torchCommandHelp("export-weights"));
    addExperimentFile(ew, exportArgs->path);
    ew->add_option("--out", exportArgs->out, "FILE.safetensors or FILE.pt")->required();
    addCheckpointOption(ew, exportArgs->checkpoint);
    ew->add_option("--layout", exportArgs->layout,
          "workbench (the workbench's names, config in the metadata) or garg (a state dict for Garg et al.'s "
          "TransformerModel, load_state_dict(strict=True))")
        ->check(CLI::IsMember({ "workbench", "garg" }));
    ew->add_flag("--force", exportArgs->force, "replace an existing output file");
    addJsonFlag(ew, exportArgs->json);
    setCommand(
        ew, [exportArgs] { return runExportWeights(*exportArgs); }, [exportArgs] { return exportArgs->path; });
}

} // namespace icl::cli
