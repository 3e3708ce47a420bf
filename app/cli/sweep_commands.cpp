// icl-cli sweep and aggregate: a grid of --set overrides expanded into training runs (local processes or a
// Slurm array script), and the table and plots of their final metrics (Chan et al.'s sweeps over p_bursty,
// number of classes, Zipf α and the model).
#include "commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/io/regular_file.h"
#include "core/report/sweep_figure.h"
#include "core/types/figure.h"
#include "display.h"
#include "options.h"
#include "plot_export.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

namespace {

/// One grid point: its overrides in grid-key order and the run file it trains.
struct SweepRun {
    std::vector<std::pair<std::string, json>> values;  ///< (key path, value) per grid key, then "seed"
    std::string file;                                   ///< file name inside the sweep directory
    std::vector<std::string> args;                      ///< arguments of `icl-cli train` after the program name
    /// Arguments that continue an existing file from its last checkpoint (`train --resume` takes the file's own
    /// config, so no --preset/--config/--set); a finished run makes `train --resume` a no-op that exits 0.
    std::vector<std::string> resumeArgs;
};

std::string valueText(const json& v)
{
    return v.is_string() ? v.get<std::string>() : jsonForDisplay(v);
}

/// A sweep's JSON file (SWEEP.json, DIR/sweep.json; at most 64 MB, nesting bounded). Throws icl::Error
/// "PATH: no such file", "PATH: not valid JSON (…)" or "PATH: JSON nested deeper than 64 levels".
json readSweepJson(const std::string& path)
{
    return parseBoundedJson(RegularFile(path, "JSON file").readAll(uint64_t(64) << 20, "sweep file"), path);
}

/// Reads SWEEP.json: {"preset" | "config", "scale", "set": [...], "grid": {key: [values]}, "seeds": [...],
/// "steps"}. Throws icl::Error naming the key for anything malformed.
std::vector<SweepRun> expandSweep(const std::string& path, const std::string& outDir, int threads)
{
    const json spec = readSweepJson(path);
    if (!spec.is_object())
        throw Error(path + ": expected a JSON object with \"preset\" or \"config\", and \"grid\"");
    static const std::set<std::string> known = {"preset", "config", "scale", "set", "grid", "seeds", "steps", "description"};
    for (auto it = spec.begin(); it != spec.end(); ++it)
        if (!known.count(it.key()))
            throw Error(path + ": " + it.key() + ": unknown key (known keys: config, description, grid, preset, scale, "
                                                 "seeds, set, steps)");
    std::vector<std::string> base;
    if (spec.contains("preset") == spec.contains("config"))
        throw Error(path + ": give exactly one of \"preset\" and \"config\"");
    if (spec.contains("preset")) {
        if (!spec["preset"].is_string())
            throw Error(path + ": preset: expected a preset name");
        base = {"--preset", spec["preset"].get<std::string>()};
    } else {
        if (!spec["config"].is_string())
            throw Error(path + ": config: expected the path of a config file");
        fs::path config = spec["config"].get<std::string>();
        if (config.is_relative())
            config = fs::absolute(fs::path(path).parent_path() / config);
        base = {"--config", config.string()};
    }
    if (spec.contains("scale")) {
        if (!spec["scale"].is_string())
            throw Error(path + ": scale: expected \"quick\" or \"paper\"");
        base.insert(base.end(), {"--scale", spec["scale"].get<std::string>()});
    }
    if (spec.contains("steps")) {
        if (!spec["steps"].is_number_integer() || spec["steps"].get<int64_t>() < 0)
            throw Error(path + ": steps: expected an integer >= 0");
        base.insert(base.end(), {"--steps", std::to_string(spec["steps"].get<int64_t>())});
    }
    if (spec.contains("set")) {
        if (!spec["set"].is_array())
            throw Error(path + ": set: expected an array of \"key.path=value\" strings");
        for (size_t i = 0; i < spec["set"].size(); ++i) {
            const json& s = spec["set"][i];
            if (!s.is_string() || s.get<std::string>().find('=') == std::string::npos)
                throw Error(path + ": set[" + std::to_string(i) + "]: expected \"key.path=value\", got " + jsonForDisplay(s));
            base.insert(base.end(), {"--set", s.get<std::string>()});
        }
    }
    if (!spec.contains("grid") || !spec["grid"].is_object() || spec["grid"].empty())
        throw Error(path + ": grid: expected an object of key paths to arrays of values, e.g. "
                           "{\"task.p_bursty\": [0, 0.5, 0.9]}");
    std::vector<std::pair<std::string, std::vector<json>>> axes;
    for (auto it = spec["grid"].begin(); it != spec["grid"].end(); ++it) {
        if (!it.value().is_array() || it.value().empty())
            throw Error(path + ": grid." + it.key() + ": expected a non-empty array of values");
        axes.push_back({it.key(), it.value().get<std::vector<json>>()});
    }
    std::vector<json> seeds = {json(0)};
    if (spec.contains("seeds")) {
        if (!spec["seeds"].is_array() || spec["seeds"].empty())
            throw Error(path + ": seeds: expected a non-empty array of integers >= 0");
        seeds = spec["seeds"].get<std::vector<json>>();
        for (const json& s : seeds)
            if (!s.is_number_integer() || s.get<int64_t>() < 0)
                throw Error(path + ": seeds: expected integers >= 0, got " + jsonForDisplay(s));
    }
    axes.push_back({"seed", seeds});

    std::vector<SweepRun> runs;
    std::vector<size_t> index(axes.size(), 0);
    for (;;) {
        SweepRun r;
        char name[32];
        std::snprintf(name, sizeof name, "run_%04zu.h5", runs.size());
        r.file = name;
        r.args = {"train"};
        r.args.insert(r.args.end(), base.begin(), base.end());
        for (size_t a = 0; a < axes.size(); ++a) {
            const json& v = axes[a].second[index[a]];
            r.values.push_back({axes[a].first, v});
            if (axes[a].first == "seed")
                r.args.insert(r.args.end(), {"--seed", v.dump()});
            else
                r.args.insert(r.args.end(), {"--set", axes[a].first + "=" + (v.is_string() ? v.get<std::string>() : v.dump())});
        }
        r.args.insert(r.args.end(), {"--threads", std::to_string(threads), "--out", (fs::path(outDir) / r.file).string()});
        r.resumeArgs = {"train", "--resume", "--threads", std::to_string(threads), "--out", (fs::path(outDir) / r.file).string()};
        runs.push_back(std::move(r));
        size_t a = 0;
        while (a < axes.size() && ++index[a] == axes[a].second.size())
            index[a++] = 0;
        if (a == axes.size())
            break;
    }
    // Every grid point's config is resolved and validated here, so that a bad value or an unknown key is one line
    // now, not a failed process per run (or a Slurm array of failing tasks).
    for (const SweepRun& r : runs) {
        ConfigRequest request;
        for (size_t i = 1; i + 1 < r.args.size(); ++i) {
            const std::string& flag = r.args[i];
            const std::string& value = r.args[i + 1];
            if (flag == "--preset")
                request.preset = value;
            else if (flag == "--config")
                request.config_file = value;
            else if (flag == "--scale")
                request.scale = value;
            else if (flag == "--set")
                request.sets.push_back(value);
            else if (flag == "--steps")
                request.steps = std::stoll(value);
            else if (flag == "--seed")
                request.seed = std::stoull(value);
            else
                continue;
            ++i;
        }
        try {
            resolveConfig(request);
        } catch (const Error& e) {
            std::string point;
            for (const auto& [key, v] : r.values)
                point += (point.empty() ? "" : ", ") + key + "=" + valueText(v);
            throw Error(path + ": grid point " + point + ": " + e.what());
        }
    }
    return runs;
}

std::string shellQuote(const std::string& s)
{
    std::string q = "'";
    for (char c : s)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

/// True when the run file exists and its last checkpoint is the run's final step (nothing left to train).
bool runFinished(const std::string& file)
{
    if (!fs::exists(file))
        return false;
    try {
        const RunSummary s = readRunSummary(file);
        const json cfg = storedJson(s.config_json);
        return !s.checkpoints.empty() && s.checkpoints.back().step >= cfg["training"].value("steps", int64_t(0));
    } catch (const std::exception&) {
        return false;
    }
}

/// The icl-cli that users run (the launcher that started this process says where it is), else this executable.
std::string selfExecutable()
{
    if (const char* launcher = std::getenv("ICL_CLI_LAUNCHER"); launcher != nullptr && ::access(launcher, X_OK) == 0)
        return launcher;
    std::error_code ec;
    const fs::path p = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("icl-cli") : p.string();
}

} // namespace

int runSweep(const SweepArgs& args)
{
    const int jobs = std::max(1, args.jobs);
    const int threads = std::max(1, int(std::thread::hardware_concurrency()) / jobs);
    const std::string outDir = fs::absolute(args.out_dir).string();
    const std::vector<SweepRun> runs = expandSweep(args.path, outDir, threads);  // validated before anything is written
    std::error_code ec;
    fs::create_directories(args.out_dir, ec);
    if (ec)
        throw Error(args.out_dir + ": cannot create directory (" + ec.message() + ")");
    const std::string exe = selfExecutable();

    // The index that aggregate reads: every run's file and grid values.
    json index = json::array();
    for (const SweepRun& r : runs) {
        json values = json::object();
        for (const auto& [key, v] : r.values)
            values[key] = v;
        index.push_back({{"file", r.file}, {"values", values}});
    }
    {
        std::ifstream in(args.path);
        json spec;
        in >> spec;
        std::ofstream(fs::path(outDir) / "sweep.json") << json{{"sweep", spec}, {"runs", index}}.dump(2) << "\n";
    }

    if (!args.emit_slurm.empty()) {
        std::ofstream s(args.emit_slurm);
        if (!s)
            throw Error(args.emit_slurm + ": cannot write");
        s << "#!/bin/bash\n"
          << "# Slurm array job written by icl-cli sweep " << args.path << ": one grid point per task.\n"
          << "# Submit with: sbatch " << args.emit_slurm << "   then: icl-cli aggregate " << outDir << "\n"
          << "#SBATCH --job-name=icl-sweep\n"
          << "#SBATCH --array=0-" << runs.size() - 1 << "\n"
          << "#SBATCH --cpus-per-task=" << threads << "\n"
          << "#SBATCH --output=" << outDir << "/slurm_%a.log\n"
          << "set -euo pipefail\n"
          << "ICL_CLI=${ICL_CLI:-" << shellQuote(exe) << "}\n"
          << "THREADS=${SLURM_CPUS_PER_TASK:-1}\n"
          << "# A re-queued task continues its run file from the last checkpoint (train --resume, which does\n"
          << "# nothing for a finished run); a task without a file starts the run.\n"
          << "run_point() {\n"
          << "  local file=$1\n"
          << "  shift\n"
          << "  if [ -e \"$file\" ]; then\n"
          << "    exec \"$ICL_CLI\" train --resume --threads \"$THREADS\" --out \"$file\"\n"
          << "  fi\n"
          << "  exec \"$ICL_CLI\" \"$@\"\n"
          << "}\n"
          << "case \"$SLURM_ARRAY_TASK_ID\" in\n";
        for (size_t i = 0; i < runs.size(); ++i) {
            s << "  " << i << ") run_point " << shellQuote((fs::path(outDir) / runs[i].file).string());
            const std::vector<std::string>& a = runs[i].args;
            for (size_t k = 0; k < a.size(); ++k) {
                if (a[k] == "--threads" && k + 1 < a.size()) {
                    s << " --threads \"$THREADS\"";
                    ++k;
                    continue;
                }
                s << " " << shellQuote(a[k]);
            }
            s << " ;;\n";
        }
        s << "  *) echo \"no grid point $SLURM_ARRAY_TASK_ID\" >&2; exit 1 ;;\n"
          << "esac\n";
        if (!s)
            throw Error(args.emit_slurm + ": failed writing");
        std::cout << "wrote " << shown(args.emit_slurm) << " (" << runs.size() << " array tasks) and "
                  << shown(outDir) << "/sweep.json\n";
        return 0;
    }

    // Local processes, at most `jobs` at a time; finished runs are skipped, interrupted ones resumed.
    std::map<pid_t, size_t> running;
    std::vector<int> status(runs.size(), -1);
    size_t next = 0, done = 0, failed = 0;
    auto launch = [&](size_t i) {
        const std::string file = (fs::path(outDir) / runs[i].file).string();
        std::vector<std::string> args = fs::exists(file) ? runs[i].resumeArgs : runs[i].args;
        args.insert(args.begin(), exe);
        const std::string log = (fs::path(outDir) / (runs[i].file + ".log")).string();
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        std::vector<char*> argv;
        for (std::string& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0)
            throw Error(exe + ": cannot start a training process (" + std::string(std::strerror(rc)) + ")");
        running[pid] = i;
    };
    for (; next < runs.size() && runFinished((fs::path(outDir) / runs[next].file).string()); ++next)
        ++done;
    while (next < runs.size() || !running.empty()) {
        while (next < runs.size() && int(running.size()) < jobs) {
            if (runFinished((fs::path(outDir) / runs[next].file).string())) {
                status[next++] = 0;
                ++done;
                continue;
            }
            launch(next++);
        }
        if (running.empty())
            break;
        int ws = 0;
        const pid_t pid = ::wait(&ws);
        if (pid < 0)
            break;
        auto it = running.find(pid);
        if (it == running.end())
            continue;
        const size_t i = it->second;
        running.erase(it);
        status[i] = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
        ++done;
        if (status[i] != 0)
            ++failed;
        std::cerr << "[" << done << "/" << runs.size() << "] " << shown(runs[i].file)
                  << (status[i] == 0 ? " done" : " FAILED") << " (log " << shown(runs[i].file) << ".log)\n";
    }
    std::cout << "sweep of " << runs.size() << " runs in " << shown(outDir) << ": " << runs.size() - failed
              << " finished, " << failed << " failed; next: icl-cli aggregate " << shown(outDir) << "\n";
    return failed == 0 ? 0 : 1;
}

int runAggregate(const AggregateArgs& args)
{
    const fs::path dir = args.dir;
    if (!fs::exists(dir / "sweep.json"))
        throw Error(args.dir + ": no sweep.json (not a directory written by icl-cli sweep)");
    json sweep = readSweepJson((dir / "sweep.json").string());
    if (!sweep.contains("runs") || !sweep["runs"].is_array() || sweep["runs"].empty())
        throw Error((dir / "sweep.json").string() + ": lists no runs");

    // Grid keys in their original order, and the final metrics of every finished run.
    std::vector<std::string> keys;
    for (auto it = sweep["runs"][0]["values"].begin(); it != sweep["runs"][0]["values"].end(); ++it)
        keys.push_back(it.key());
    // The common / rare accuracies (task.n_common_classes > 0) get columns when some run recorded them.
    std::vector<std::string> metrics = {"icl_accuracy", "icl_accuracy_all_labels", "iwl_accuracy",
                                        "icl_in_context_rate", "eval_loss", "train_loss"};
    const std::vector<std::string> splitMetrics
        = {"icl_accuracy_common", "icl_accuracy_rare", "iwl_accuracy_common", "iwl_accuracy_rare"};
    struct Row {
        std::map<std::string, json> values;
        std::map<std::string, double> final;
        int64_t step = 0;
        std::string file;  ///< the run's file inside the sweep directory (last column of table.csv)
    };
    std::vector<Row> rows;
    int64_t missing = 0;
    int64_t unfinished = 0;  // runs stopped before their training.steps (interrupted or still training)
    std::vector<std::string> damaged;  // run files that cannot be read
    for (const json& r : sweep["runs"]) {
        const std::string file = (dir / r["file"].get<std::string>()).string();
        if (!fs::exists(file)) {
            ++missing;
            continue;
        }
        RunSummary s;
        try {
            s = readRunSummary(file);
        } catch (const Error& e) {  // one damaged run does not hide the others: skipped, named on stderr
            std::cerr << "aggregate: skipping " << shown(e.what()) << "\n";
            damaged.push_back(r["file"].get<std::string>());
            continue;
        }
        Row row;
        row.file = r["file"].get<std::string>();
        for (auto it = r["values"].begin(); it != r["values"].end(); ++it)
            row.values[it.key()] = it.value();
        for (const std::string& m : metrics)
            row.final[m] = s.lastMetric(m);
        for (const std::string& m : splitMetrics)
            row.final[m] = s.lastMetric(m);
        row.step = s.checkpoints.empty() ? 0 : s.checkpoints.back().step;
        const json cfg = storedJson(s.config_json);
        if (cfg.is_object() && cfg.contains("training") && cfg["training"].is_object()
            && row.step < cfg["training"].value("steps", int64_t(0)))
            ++unfinished;
        rows.push_back(std::move(row));
    }
    if (rows.empty())
        throw Error(args.dir + ": none of the " + std::to_string(sweep["runs"].size()) + " runs has a "
                    + (damaged.empty() ? "file yet" : "readable file (" + std::to_string(damaged.size()) + " damaged)"));
    for (const std::string& m : splitMetrics)
        if (std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return std::isfinite(r.final.at(m)); }))
            metrics.push_back(m);

    const fs::path outDir = dir / "aggregate";
    fs::create_directories(outDir);
    const std::string csvPath = (outDir / "table.csv").string();
    {
        std::ofstream csv(csvPath);
        for (const auto& k : keys)
            csv << k << ",";
        csv << "step";
        for (const auto& m : metrics)
            csv << "," << m;
        csv << ",file\n";
        for (const Row& r : rows) {
            for (const auto& k : keys)
                csv << valueText(r.values.at(k)) << ",";
            csv << r.step;
            for (const auto& m : metrics) {
                const double v = r.final.at(m);
                csv << ",";
                if (std::isfinite(v)) {
                    char buf[32];
                    std::snprintf(buf, sizeof buf, "%.6g", v);
                    csv << buf;
                }
            }
            csv << "," << r.file << "\n";
        }
        if (!csv)
            throw Error(csvPath + ": failed writing");
    }

    // One figure per grid key with ≥ 2 values (core/report/sweep_figure.h, as the GUI's Sweep tab draws it), from the
    // table's rows with the metrics at full precision.
    SweepTable table;
    table.source = (dir / "sweep.json").string();
    table.columns = keys;
    table.n_grid = keys.size();
    table.columns.push_back("step");
    table.columns.insert(table.columns.end(), metrics.begin(), metrics.end());
    for (const Row& r : rows) {
        std::vector<std::string> cells;
        for (const auto& k : keys)
            cells.push_back(valueText(r.values.at(k)));
        cells.push_back(std::to_string(r.step));
        for (const auto& m : metrics) {
            char buf[32] = "";
            if (std::isfinite(r.final.at(m)))
                std::snprintf(buf, sizeof buf, "%.17g", r.final.at(m));
            cells.emplace_back(buf);
        }
        table.rows.push_back(std::move(cells));
    }
    std::vector<std::string> files = {csvPath};
    const std::vector<std::string> formats = plotImagesAvailable() ? std::vector<std::string>{"png", "svg", "pdf", "csv"}
                                                                   : std::vector<std::string>{"csv"};
    for (const std::string& x : sweepPlotColumns(table)) {
        const Figure f = sweepFigure(table, x);
        for (const std::string& format : formats) {
            const std::string out = (outDir / (f.name + "." + format)).string();
            exportPlot(f, out, format, args.dpi);
            files.push_back(out);
        }
    }
    if (args.json) {
        printJsonObj(json{{"dir", args.dir},
                          {"runs", rows.size()},
                          {"missing", missing},
                          {"unfinished", unfinished},
                          {"damaged", damaged},
                          {"files", files}});
        return 0;
    }
    std::string notes;
    if (missing)
        notes += std::to_string(missing) + " not started";
    if (unfinished)
        notes += (notes.empty() ? "" : ", ") + std::to_string(unfinished)
                 + " unfinished: their last step, in the step column, is below training.steps; run the sweep again";
    if (!damaged.empty())
        notes += (notes.empty() ? "" : ", ") + std::to_string(damaged.size()) + " damaged and skipped";
    std::cout << "aggregate of " << rows.size() << " runs" << (notes.empty() ? "" : " (" + notes + ")") << " in "
              << shown(args.dir) << ":\n";
    for (const auto& k : keys)
        std::printf("%-22s", shown(k).c_str());
    std::printf("%8s %10s %10s %10s\n", "step", "icl_acc", "iwl_acc", "eval_loss");
    for (const Row& r : rows) {
        for (const auto& k : keys)
            std::printf("%-22s", shown(valueText(r.values.at(k))).c_str());
        std::printf("%8lld %10.4f %10.4f %10.4f\n", static_cast<long long>(r.step), r.final.at("icl_accuracy"),
                    r.final.at("iwl_accuracy"), r.final.at("eval_loss"));
    }
    for (const auto& file : files)
        std::cout << "  " << shown(file) << "\n";
    return 0;
}

void addSweepCommands(CLI::App& app)
{
    auto sweep = std::make_shared<SweepArgs>();
    CLI::App* sw = app.add_subcommand("sweep", torchCommandHelp("sweep"));
    sw->add_option("file", sweep->path,
          "SWEEP.json: {\"preset\" or \"config\", \"scale\", \"set\", \"grid\", "
          "\"seeds\", \"steps\"}")
        ->required();
    sw->add_option("--out", sweep->out_dir, "directory of the runs (created)")->required();
    sw->add_option("--jobs", sweep->jobs, "training processes at a time (default 1)")->check(CLI::Range(1, 1024));
    sw->add_option(
        "--emit-slurm", sweep->emit_slurm, "write a Slurm array script (one grid point per task) instead of running");
    setCommand(
        sw, [sweep] { return runSweep(*sweep); }, [sweep] { return sweep->path; });

    auto aggregate = std::make_shared<AggregateArgs>();
    CLI::App* ag = app.add_subcommand("aggregate", torchCommandHelp("aggregate"));
    ag->add_option("dir", aggregate->dir, "directory written by icl-cli sweep")->required();
    addDpiOption(ag, aggregate->dpi);
    addJsonFlag(ag, aggregate->json);
    setCommand(
        ag, [aggregate] { return runAggregate(*aggregate); }, [aggregate] { return aggregate->dir; });
}

} // namespace icl::cli
