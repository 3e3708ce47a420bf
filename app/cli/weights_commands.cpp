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
    exportWeights(args.path, args.out, args.checkpoint, args.layout);
    if (args.json)
        printJsonObj(json{{"file", args.path}, {"out", args.out}, {"layout", args.layout},
                          {"checkpoint", args.checkpoint}});
    else
        std::cout << "wrote " << args.out << " (" << args.layout << " layout)\n";
    return 0;
}

} // namespace icl::cli
