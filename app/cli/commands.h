#pragma once
// icl-cli commands. Each prints human-readable text, or one JSON object on stdout with --json,
// and throws icl::Error for bad input (main turns it into one line on stderr and exit code 1).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/analysis/pasting.h"
#include "core/analysis/probe_analysis.h"
#include "core/io/config.h"
#include "core/types/run_summary.h"
#include "core/training/weights_import.h"

namespace CLI {
class App;
}

namespace icl::cli {

/// The subcommands of icl-cli, each with its options and its callback (main adds them in the order of --help).
void addPresetsCommand(CLI::App& app);
void addConfigCommand(CLI::App& app);
void addTrainCommand(CLI::App& app);
/// info, verify and recover: the commands that check an experiment file.
void addFileCheckCommands(CLI::App& app);
void addEvalCommand(CLI::App& app);
void addExportCommand(CLI::App& app);
void addReportCommand(CLI::App& app);
/// analyze FILE KIND [options] (analyze_commands.cpp): one sub-subcommand per analysis.
void addAnalyzeCommand(CLI::App& app);
/// import and export-weights (weights_commands.cpp).
void addWeightsCommands(CLI::App& app);
/// sweep and aggregate (sweep_commands.cpp).
void addSweepCommands(CLI::App& app);

/// icl-cli runtime [--json]: the BLAS, the CPU kernels and the allocator LibTorch runs on in this process
/// (what `icl-cli --version` printed before the light commands stopped loading LibTorch).
void addRuntimeCommand(CLI::App& app);

/// The commands that need LibTorch, with their one-line help, in the order of --help: icl-cli (launcher.cpp)
/// lists them and hands them to icl-cli-torch; each add…Command function takes its help from here.
struct TorchCommand {
    const char* name;
    const char* help;
};
const std::vector<TorchCommand>& torchCommands();
/// The help of the torch command `name` (torchCommands); throws std::logic_error for a name not listed.
std::string torchCommandHelp(const std::string& name);

/// The description of icl-cli at the top of --help, and the one-line form of every command-line error;
/// for both executables.
void describeCommandLine(CLI::App& app);

/// The final metrics of `s` for JSON: the last value of each metric, baselines under "baselines".
nlohmann::json finalMetrics(const RunSummary& s);
/// Prints each baseline's eval loss and, for a K-layer model (`layers`), the model's ratio to gd_K and gdpp_K.
void printBaselines(const std::map<std::string, double>& baselines, double model, int64_t layers = 1);
/// model.n_layers of a run's config (1 when absent).
int64_t layersOf(const nlohmann::json& config);

/// Prints `out` on stdout as a command's one JSON object with --json (indented by 2, then a newline).
void printJsonObj(const nlohmann::json& out);

/// `v` as a JSON number, or null when it is NaN or infinite (JSON has neither).
nlohmann::json jsonNumber(double v);

int runPresets(bool json);

/// icl-cli config --list: every config key (path, type, default, allowed values, one line of documentation)
/// from the schema (configKeys); --json one JSON object, --markdown the text of docs/config.md.
int runConfigList(bool json, bool markdown);

struct TrainArgs {
    ConfigRequest request;
    std::string out;
    int threads = 0;
    int64_t keep_optimizer_every = 0;  ///< --keep-optimizer-every N (0: optimizer state at the last checkpoint only)
    bool resume = false;
    bool force = false;
    bool json = false;
};
int runTrain(const TrainArgs& args);

/// icl-cli info RUN.h5: exits 1 (after the summary) when the file lists damaged checkpoints or analyses.
int runInfo(const std::string& path, bool json);

/// icl-cli verify RUN.h5: reads every object and checks its checksum; lists each damaged object, exits 1 if any.
int runVerify(const std::string& path, bool json);

/// icl-cli recover RUN.h5 [--accept-damaged]: rolls back what an interrupted commit left (recoverExperimentFile)
/// and prints what was done in one line.
int runRecover(const std::string& path, bool accept_damaged);

/// icl-cli import SRC --out RUN.h5: a foreign checkpoint (file or Garg et al.'s run folder) → an experiment file.
struct ImportArgs {
    ImportRequest request;  ///< source, --out, --config, --set, --force, --threads and --max-memory, bound straight from the options
    bool dry_run = false;   ///< print the plan (format, mapping, inferred model, missing keys), write nothing
    bool json = false;
};
int runImport(const ImportArgs& args);

/// icl-cli export-weights RUN.h5 --out FILE(.safetensors|.pt) [--checkpoint STEP] [--layout workbench|garg].
struct ExportWeightsArgs {
    std::string path;
    std::string out;
    int64_t checkpoint = -1;
    std::string layout = "workbench";
    bool force = false;  ///< replace an existing --out file
    bool json = false;
};
int runExportWeights(const ExportWeightsArgs& args);

struct EvalArgs {
    std::string path;
    int64_t checkpoint = -1;
    int64_t prompts = 0;   ///< 0 = the run's evaluation prompts
    uint64_t seed = 0;     ///< 0 = the run's own evaluation prompts
    int threads = 0;
    uint64_t max_memory = 0;  ///< --max-memory: bytes the run file's contents may size (0: the default budget)
    bool json = false;
};
int runEval(const EvalArgs& args);

struct ExportArgs {
    std::string path;
    std::string plot;
    std::string format;
    std::string out;
    int dpi = 300;
    int64_t checkpoint = -1;
    uint64_t prompt_seed = 0;            ///< attention, lens, patching: seed of the prompt
    std::string prompt_file;             ///< attention, lens, patching: the prompt read from this file instead (readPromptFile)
    int64_t layer = 0;                   ///< attention: 0-based layer of the head drawn
    int64_t head = 0;                    ///< attention: 0-based head
    std::string attention_scale = "linear";  ///< attention: colour scale of softmax weights, linear, row or log
    std::string corruption = "change_label";  ///< patching: change_label, different_w or shuffle_pairs
    int64_t example = 1;                 ///< patching: change_label's example i of y_i (1-based)
    uint64_t seed = 0;                   ///< patching: seed of the corruption's random draws
    std::string family;                  ///< algorithm_map: family of the heatmap ("" = newton, else the first available)
    std::string similarity = "errors";   ///< algorithm_map: "errors" or "weights" (similarity of induced weights)
};
int runExport(const ExportArgs& args);

struct ReportArgs {
    std::string path;
    std::string out_dir;
    int dpi = 200;
    bool json = false;
};
int runReport(const ReportArgs& args);

/// What every analysis of `icl-cli analyze FILE KIND` reads: the file (analyze's positional) and the options that
/// addAnalysis gives each analysis. Each analysis has its own struct below, derived from this one, with its options.
struct AnalyzeArgs {
    std::string path;
    std::string kind; ///< the analysis that runs: "gd-alignment", "eta-scan", …, "algorithm-map"
    int64_t checkpoint = -1;
    int threads = 0;
    uint64_t max_memory = 0; ///< --max-memory: bytes the run file's contents may size (0: the default budget)
    bool json = false;
};

/// gd-alignment.
struct GdAlignmentArgs : AnalyzeArgs {
    std::string reference = "default"; ///< "default" (the run's eval.alignment[0], else gd), "gd" / "gdpp" (= gd_K /
                                       ///< gdpp_K for K linear layers), "gd_k", "gdpp_k", "features_gd_k"
    int64_t prompts = 0;
    uint64_t seed = 0;
};

/// eta-scan.
struct EtaScanArgs : AnalyzeArgs {
    int64_t k = 0; ///< GD steps (0 = the model's layers)
    double eta_max = 4.0;
    int64_t points = 200;
};

/// ood.
struct OodArgs : AnalyzeArgs {
    std::string ood_kind = "x_scale"; ///< x_scale, w_scale, label_noise, depth
    std::vector<double> alpha; ///< values of α (empty: defaults)
};

/// copy.
struct CopyArgs : AnalyzeArgs {
    int64_t prompts = 0; ///< 0 = 64
};

/// kernel.
struct KernelArgs : AnalyzeArgs {
    int64_t layer = 0; ///< 0-based softmax layer
    int64_t head = 0; ///< 0-based head
    std::vector<int64_t> m; ///< numbers of random features (empty: 16, 64, 256, 1024, 4096)
    int64_t seeds = 5; ///< random-feature draws per m
    std::string scaling = "balanced"; ///< "balanced" or "symmetric" (see KernelViewOptions)
    int64_t prompts = 0;
    uint64_t seed = 0; ///< seed of the random features
};

/// probe: target and positions bound straight from --target / --positions.
struct ProbeArgs : AnalyzeArgs {
    ProbeOptions probe;
    int64_t prompts = 0;
    uint64_t seed = 0;
};

/// paste: cut layer, embedding, steps, η, batch size, τ, --init-from-parent (copy_parent_embedding) and
/// --zero-new-mlp bound straight from the options.
struct PasteArgs : AnalyzeArgs {
    PastingOptions paste;
    std::string out; ///< pasted experiment file ("" = derived from the parent's name)
    bool force = false; ///< replace an existing output file
    int64_t prompts = 0;
    uint64_t seed = 0;
};

/// attention, lens and patching: one prompt (or, attention --out FILE.h5 / --store, a capture of --prompts prompts).
struct InspectorArgs : AnalyzeArgs {
    uint64_t prompt_seed = 0; ///< seed of the prompt (Inspector::samplePrompt)
    std::string prompt_file; ///< the prompt read from this file instead (readPromptFile)
    std::string out; ///< CSV of the result; attention also FILE.h5 (a capture)
    bool force = false; ///< attention --out FILE.h5: replace an existing file
    std::vector<std::string>
        capture; ///< attention with --out FILE.h5: activation names (default every attn.pattern.{l})
    bool store_capture = false; ///< attention --prompts N --store: the capture into RUN.h5 (/analysis/activations)
    int64_t prompts = 0; ///< attention: prompts captured (0 = 1)
    std::string corruption = "change_label"; ///< patching: change_label, different_w or shuffle_pairs
    int64_t example = 1; ///< patching: change_label's example i of y_i (1-based, as the token labels)
    uint64_t seed = 0; ///< patching: seed of the corruption's random draws
};

/// icl-iwl.
struct IclIwlArgs : AnalyzeArgs {
    std::string show_sequence; ///< print one sequence of this kind (FewShotSequenceKind names) instead
    int64_t prompts = 0; ///< sequences per evaluation (0 = the run's eval.n_prompts)
    uint64_t seed = 0;
};

/// algorithm-map.
struct AlgorithmMapArgs : AnalyzeArgs {
    std::vector<std::string> families; ///< families to compute (empty: gd, gdpp, newton, ridge)
    bool all_checkpoints = false; ///< one map per checkpoint of the run
    bool store = false; ///< store the map under /analysis/algorithm_map
    int64_t prompts = 0;
    uint64_t seed = 0;
};

/// The part of addAnalysis that is the same for every analysis: the subcommand `name` of `analyze` with `help`,
/// the options every analysis has (--checkpoint, --threads, --max-memory, --json) bound to `common`, and a callback
/// that sets common.path from analyze's file and runs `run` under the --max-memory budget.
CLI::App* addAnalysisCommand(
    CLI::App* analyze, const std::string& name, const std::string& help, AnalyzeArgs& common, std::function<int()> run);

/// Adds the analysis `name` to `analyze` (icl-cli analyze RUN.h5 NAME) with its own `Args` (derived from
/// AnalyzeArgs) and `run(const Args&)` as its callback; returns the subcommand, to which the caller adds the
/// analysis' own options, and the Args they are bound to. An option of another analysis is refused in one line
/// that names the analyses that have it.
template <class Args, class Run>
std::pair<CLI::App*, std::shared_ptr<Args>> addAnalysis(
    CLI::App* analyze, const std::string& name, const std::string& help, Run run)
{
    auto args = std::make_shared<Args>();
    CLI::App* kind = addAnalysisCommand(analyze, name, help, *args, [args, run] { return run(*args); });
    return { kind, args };
}

/// `o` with the fields every analysis' options share set from the command line: checkpoint_step, seed, threads.
template <class Options, class Args> Options withCommonOptions(Options o, const Args& args)
{
    o.checkpoint_step = args.checkpoint;
    o.seed = args.seed;
    o.threads = args.threads;
    return o;
}
/// The analyses attention, lens and patching (inspector_commands.cpp) and algorithm-map (algorithm_map_commands.cpp).
void addInspectorAnalyses(CLI::App* analyze);
void addAlgorithmMapAnalysis(CLI::App* analyze);

/// `icl-cli analyze RUN.h5 icl-iwl --show-sequence KIND [--seed S] [--checkpoint STEP] [--json]`
/// (sequence_commands.cpp): one sequence of a few-shot classification run (sampleFewShotSequence) with the
/// checkpoint's prediction at its query, as text or one JSON object.
int runShowSequence(const IclIwlArgs& args);

/// The inspector's analyses (inspector_commands.cpp): one prompt drawn from --prompt-seed, or read from
/// --prompt FILE (checked against the run's d and the model's largest N).
int runAttention(const InspectorArgs& args);
int runLens(const InspectorArgs& args);
int runPatching(const InspectorArgs& args);
/// True for the plots `export` draws through the inspector: "attention", "patching", "lens".
bool isInspectorPlot(const std::string& plot);
/// Exports one of those plots (ExportArgs: prompt seed, layer/head, corruption).
void exportInspectorPlot(const ExportArgs& args);

/// `icl-cli analyze RUN.h5 algorithm-map [--json] [--checkpoint S] [--prompts N] [--store] [--families …]
/// [--all-checkpoints]` (algorithm_map_commands.cpp): computeAlgorithmMap (or one map per checkpoint), stored under
/// /analysis/algorithm_map with --store.
int runAlgorithmMap(const AlgorithmMapArgs& args);
/// True for the algorithm map's plots: "algorithm_map" (alias "algorithm-map"; --family, --similarity),
/// "algorithm_map_best_step", "algorithm_map_training".
bool isAlgorithmMapPlot(const std::string& plot);
/// Exports one of them from the latest stored map at --checkpoint (computed, not stored, when there is none).
void exportAlgorithmMapFigure(const ExportArgs& args);
/// The report's algorithm-map plots (from the latest stored map: a heatmap per available family, the best steps,
/// and across training when several checkpoints have maps) into `out_dir` in `formats`; the written paths are
/// appended to `files`. Returns the map's JSON for summary.json, or null when none is stored.
nlohmann::json reportAlgorithmMaps(const std::string& path, const RunSummary& s, const std::string& out_dir,
                                   const std::vector<std::string>& formats, int dpi, nlohmann::json* files);

/// `icl-cli sweep SWEEP.json --out DIR [--jobs N] [--emit-slurm FILE]` (sweep_commands.cpp): the grid of
/// SWEEP.json ({"preset" | "config", "scale", "set": [...], "grid": {"key.path": [values]}, "seeds": [...],
/// "steps"}) expanded into `icl-cli train` runs DIR/run_NNNN.h5 (grid keys in alphabetical order, the first
/// varying fastest, then the seeds) listed in DIR/sweep.json, run as local
/// processes (finished runs skipped, interrupted ones resumed), or written as a Slurm array script.
struct SweepArgs {
    std::string path;
    std::string out_dir;
    int jobs = 1;
    std::string emit_slurm;
};
int runSweep(const SweepArgs& args);

/// `icl-cli aggregate DIR`: DIR/aggregate/table.csv (grid values and final metrics of every run) and one plot
/// per numeric grid key (ICL and IWL accuracy, or eval loss, against it; one line per other grid value).
struct AggregateArgs {
    std::string dir;
    int dpi = 200;
    bool json = false;
};
int runAggregate(const AggregateArgs& args);

} // namespace icl::cli
