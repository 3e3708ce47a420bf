// icl-cli analyze RUN.h5 algorithm-map, and the algorithm map's plots in export and report (docs/science.md §5).
#include "commands.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "core/analysis/algorithm_map.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "core/types/algorithm_map_matrix.h"
#include "options.h"
#include "plot_export.h"
#include "progress_bar.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

namespace algorithm_map_cli {

namespace {

/// The map's JSON (algorithmMapToJson) with "analysis" first-class, for --json.
json mapJson(const AlgorithmMap& map)
{
    json j = json::parse(algorithmMapToJson(map));
    j["analysis"] = "algorithm_map";
    return j;
}

std::string mapNumber(double v, const char* format = "%.4g")
{
    if (!std::isfinite(v))
        return "—";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, v);
    return buf;
}

void printMap(const std::string& path, const AlgorithmMap& map)
{
    std::cout << "algorithm map of " << path << " at checkpoint " << map.checkpoint_step << " (" << map.n_prompts
              << " prompts, layers read by " << (map.readout == "probe" ? "per-layer probes" : "the query's y-slot")
              << ", residuals over " << (map.positions == "prefixes" ? "prefixes i = 1 … N" : "prompts at the query")
              << "; Newton α " << map.newton_alpha << ", GD step "
              << (map.gd_step == "fixed" ? "η = " + mapNumber(map.gd_eta) : std::string("1/‖XᵀX‖₂")) << "):\n";
    for (const AlgorithmFamilyMap& f : map.families) {
        std::cout << "  " << algorithmFamilyTitle(f.family) << ": ";
        if (!f.available()) {
            std::cout << "not on the map: " << f.unavailable << "\n";
            continue;
        }
        std::cout << "best " << (f.step_name == "lambda" ? "λ" : "k") << " per layer (similarity of errors)\n";
        for (size_t l = 0; l < map.layers.size(); ++l)
            std::printf("    layer %-3lld %10s   (%s)\n", static_cast<long long>(map.layers[l]),
                        mapNumber(f.best_step[l], "%g").c_str(), mapNumber(f.best_similarity[l], "%.4f").c_str());
        const AlgorithmMapFit& fit = f.fit;
        std::printf("    fit over layers %lld-%lld (%s): slope %s, R² %s, Spearman %s; linear fit R² %s\n",
                    static_cast<long long>(fit.first_layer), static_cast<long long>(fit.last_layer), fit.kind.c_str(),
                    mapNumber(fit.slope).c_str(), mapNumber(fit.r2, "%.3f").c_str(), mapNumber(fit.spearman, "%.3f").c_str(),
                    mapNumber(f.fit_linear.r2, "%.3f").c_str());
    }
}

/// The latest stored map of `path` at checkpoint `step` (−1: the latest stored at all), or nullptr.
const AlgorithmMap* latestStored(const std::vector<AlgorithmMap>& stored, int64_t step)
{
    for (auto it = stored.rbegin(); it != stored.rend(); ++it)
        if (step < 0 || it->checkpoint_step == step)
            return &*it;
    return nullptr;
}

/// One map per checkpoint: the latest stored at each step.
std::vector<AlgorithmMap> latestPerCheckpoint(const std::vector<AlgorithmMap>& stored)
{
    std::map<int64_t, AlgorithmMap> byStep;
    for (const AlgorithmMap& m : stored)
        byStep[m.checkpoint_step] = m;
    std::vector<AlgorithmMap> out;
    for (auto& [step, m] : byStep)
        out.push_back(std::move(m));
    return out;
}

/// The family a heatmap shows: `requested`, or Newton when the map has it, else the first available one.
std::string heatmapFamily(const AlgorithmMap& map, const std::string& requested)
{
    if (!requested.empty())
        return requested;
    for (const char* f : {"newton", "gd", "ridge", "gdpp"})
        if (map.family(f) && map.family(f)->available())
            return f;
    throw Error("algorithm map: no family is available on it");
}

AlgorithmMapOptions defaultOptions(int64_t checkpoint)
{
    AlgorithmMapOptions o;
    o.checkpoint_step = checkpoint;
    o.store = false;
    return o;
}

} // namespace

} // namespace algorithm_map_cli

using namespace algorithm_map_cli;

int runAlgorithmMap(const AlgorithmMapArgs& args)
{
    AlgorithmMapOptions o = withCommonOptions(AlgorithmMapOptions{}, args);
    if (args.prompts > 0)
        o.n_prompts = args.prompts;
    o.store = args.store;
    o.families = args.families;
    ProgressBar bar("algorithm map");
    std::vector<AlgorithmMap> maps;
    if (args.all_checkpoints)
        maps = computeAlgorithmMaps(args.path, o, {}, bar.callback());
    else
        maps.push_back(computeAlgorithmMap(args.path, o, bar.callback()));
    bar.finish();
    if (args.json) {
        if (maps.size() == 1) {
            printJsonObj(mapJson(maps[0]));
        } else {
            json list = json::array();
            for (const AlgorithmMap& m : maps)
                list.push_back(mapJson(m));
            printJsonObj(json{{"analysis", "algorithm_map"}, {"maps", list}});
        }
        return 0;
    }
    for (const AlgorithmMap& m : maps)
        printMap(args.path, m);
    if (o.store)
        std::cout << "stored under /analysis/algorithm_map in " << args.path << "\n";
    return 0;
}

bool isAlgorithmMapPlot(const std::string& plot)
{
    return plot == "algorithm_map" || plot == "algorithm-map" || plot == "algorithm_map_best_step"
        || plot == "algorithm_map_training";
}

void exportAlgorithmMapFigure(const ExportArgs& args)
{
    const RunSummary s = readRunSummary(args.path);
    const std::vector<AlgorithmMap> stored = readStoredAlgorithmMaps(args.path);
    if (args.plot == "algorithm_map_training") {
        std::vector<AlgorithmMap> maps = latestPerCheckpoint(stored);
        if (maps.size() < 2)  // not stored across training: compute it now (not stored)
            maps = computeAlgorithmMaps(args.path, defaultOptions(-1), {});
        const std::string family = heatmapFamily(maps.back(), args.family);
        exportPlot(algorithmMapTrainingFigure(maps, family, s), args.out, args.format, args.dpi);
        return;
    }
    const AlgorithmMap* found = latestStored(stored, args.checkpoint);
    const AlgorithmMap map = found ? *found : computeAlgorithmMap(args.path, defaultOptions(args.checkpoint));
    if (args.plot == "algorithm_map_best_step") {
        exportPlot(algorithmMapBestStepFigure(map, s), args.out, args.format, args.dpi);
        return;
    }
    if (args.similarity != "errors" && args.similarity != "weights")
        throw Error("--similarity " + args.similarity + ": expected errors or weights");
    const bool weights = args.similarity == "weights";
    const std::string family = heatmapFamily(map, args.family);
    algorithmMapFamily(map, family);  // an absent or unavailable family: its reason
    exportAlgorithmMapPlot(map, family, weights, algorithmMapMetadata(map, family, weights, s), args.out, args.format,
                           args.dpi);
}

json reportAlgorithmMaps(const std::string& path, const RunSummary& s, const std::string& out_dir,
                         const std::vector<std::string>& formats, int dpi, json* files)
{
    const std::vector<AlgorithmMap> stored = readStoredAlgorithmMaps(path);
    if (stored.empty())
        return json(nullptr);
    const AlgorithmMap& map = stored.back();
    json summary = json::parse(algorithmMapToJson(map));
    auto write = [&](const std::string& name, const std::function<void(const std::string&, const std::string&)>& one) {
        for (const std::string& format : formats) {
            const std::string out = (fs::path(out_dir) / (name + "." + format)).string();
            one(out, format);
            files->push_back(out);
        }
    };
    for (const AlgorithmFamilyMap& f : map.families) {
        if (!f.available())
            continue;
        const auto metadata = algorithmMapMetadata(map, f.family, false, s);
        write("algorithm_map_" + f.family, [&](const std::string& out, const std::string& format) {
            exportAlgorithmMapPlot(map, f.family, false, metadata, out, format, dpi);
        });
    }
    const Figure best = algorithmMapBestStepFigure(map, s);
    write("algorithm_map_best_step",
          [&](const std::string& out, const std::string& format) { exportPlot(best, out, format, dpi); });
    const std::vector<AlgorithmMap> perStep = latestPerCheckpoint(stored);
    if (perStep.size() > 1) {
        const Figure training = algorithmMapTrainingFigure(perStep, heatmapFamily(map, ""), s);
        write("algorithm_map_training",
              [&](const std::string& out, const std::string& format) { exportPlot(training, out, format, dpi); });
    }
    return summary;
}

void addAlgorithmMapAnalysis(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<AlgorithmMapArgs>(analyze, "algorithm-map",
        "which algorithm (GD, GD++, Newton, ridge) and step each layer matches best", runAlgorithmMap);
    AlgorithmMapArgs& a = *args;
    k->add_option("--families", a.families, "families to compute, e.g. gd,newton (default gd, gdpp, newton, ridge)")
        ->delimiter(',')
        ->check(CLI::IsMember({ "gd", "gdpp", "newton", "ridge" }));
    k->add_flag("--all-checkpoints", a.all_checkpoints, "one map per checkpoint of the run (the map across training)");
    k->add_flag("--store", a.store, "store the map under /analysis/algorithm_map/<id>");
    k->add_option("--prompts", a.prompts, "number of evaluation prompts (default 1,000)")->check(atLeast(1));
    k->add_option("--seed", a.seed, "prompt seed (default 0: derived from the experiment's seed)")
        ->check(unsignedInteger());
}

} // namespace icl::cli
