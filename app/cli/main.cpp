// icl-cli: the headless face of ICL Workbench (same core as the GUI). See docs/architecture.md for the contract.
#include "app/runtime_env.h"
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/error.h"
#include "core/io/file_error.h"
#include "core/io/memory_budget.h"
#include "display.h"

namespace {

/// Validator for an integer option that must be at least `min` (CLI11's PositiveNumber prints a
/// 300-digit range and accepts fractions).
CLI::Validator atLeast(long long min)
{
    return CLI::Validator(
        [min](std::string& value) -> std::string {
            try {
                size_t used = 0;
                const long long v = std::stoll(value, &used);
                if (used == value.size() && v >= min)
                    return {};
            } catch (const std::exception&) {
            }
            return "expected an integer >= " + std::to_string(min) + ", got \"" + value + "\"";
        },
        "INT>=" + std::to_string(min));
}

/// Validator for an unsigned 64-bit integer option (seeds): CLI11 wraps "-1" and values past 2^64 − 1
/// around silently, which would run on a different seed than the one asked for.
CLI::Validator unsignedInteger()
{
    return CLI::Validator(
        [](std::string& value) -> std::string {
            const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
            if (digits) {
                try {
                    (void)std::stoull(value);
                    return {};
                } catch (const std::exception&) {
                }
            }
            return "expected an integer from 0 to 18446744073709551615, got \"" + value + "\"";
        },
        "UINT");
}

/// The positional argument "file" of a command that reads an experiment file (required).
void addExperimentFile(CLI::App* command, std::string& path)
{
    command->add_option("file", path, "experiment file")->required();
}

/// --json: the command prints one JSON object on stdout instead of text.
void addJsonFlag(CLI::App* command, bool& json)
{
    command->add_flag("--json", json, "one JSON object on stdout");
}

/// --checkpoint STEP of a command that reads one checkpoint (default: the last).
void addCheckpointOption(CLI::App* command, int64_t& step)
{
    command->add_option("--checkpoint", step, "checkpoint step (default: last)");
}

/// --threads N of a command that runs LibTorch (default 0: every core).
void addThreadsOption(CLI::App* command, int& threads)
{
    command->add_option("--threads", threads, "LibTorch intra-op threads")->check(atLeast(1));
}

/// --max-memory SIZE of a command that reads a file from outside (import, analyze, eval): the memory budget of what
/// the file's contents size (core/io/memory_budget.h), e.g. 512M or 2G; default ICL_MAX_MEMORY, else RAM / 4.
void addMaxMemoryOption(CLI::App* command, uint64_t& bytes)
{
    command
        ->add_option_function<std::string>(
            "--max-memory", [&bytes](const std::string& text) { bytes = icl::parseMemorySize(text, "--max-memory"); },
            "memory the file's contents may make this command allocate (e.g. 512M, 2G; default: ICL_MAX_MEMORY, else "
            "a quarter of the RAM); a file that needs more is refused in one line")
        ->type_name("SIZE")
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
                try {
                    (void)icl::parseMemorySize(text, "SIZE");
                    return {};
                } catch (const icl::Error& e) {
                    return std::string(e.what()).substr(6);  // without "SIZE: ": CLI11 names the option
                }
            },
            ""));
}

/// --dpi of a command that writes PNG files.
void addDpiOption(CLI::App* command, int& dpi)
{
    command->add_option("--dpi", dpi, "PNG resolution")->check(CLI::Range(50, 1200));
}

} // namespace

int main(int argc, char** argv)
{
    icl::app::ensureRuntimeEnvironment(argv);
    using namespace icl::cli;
    CLI::App app{"ICL Workbench command line: train transformers on in-context-learning tasks and compare them "
                 "with learning algorithms"};
    app.require_subcommand(1);
    // One line on stderr for every command-line error, like every other error of icl-cli.
    app.failure_message([](const CLI::App*, const CLI::Error& e) { return "icl-cli: " + std::string(e.what()) + "\n"; });
    app.set_version_flag("--version", [] {
        return std::string("icl-cli ") + ICL_APP_VERSION_STRING + "\nBLAS: " + icl::blasInfo().summary()
               + "\nCPU kernels: " + icl::atenCpuInfo().summary() + "\nallocator: " + icl::cpuAllocatorInfo().summary();
    });

    bool json = false;

    auto* presets = app.add_subcommand("presets", "list presets with one-line descriptions");
    addJsonFlag(presets, json);

    bool configList = false;
    bool configMarkdown = false;
    auto* configCmd = app.add_subcommand("config", "the config reference: every key with its type, default and "
                                                   "allowed values");
    configCmd->add_flag("--list", configList, "list every config key (the schema behind --set and --config)");
    addJsonFlag(configCmd, json);
    configCmd->add_flag("--markdown", configMarkdown, "the reference as Markdown (the content of docs/config.md)");

    TrainArgs train;
    std::vector<std::string> sets;
    int64_t steps = -1;
    int64_t seed = -1;
    std::string device;
    auto* t = app.add_subcommand("train", "train a model and write an experiment file");
    auto* presetOpt = t->add_option("--preset", train.request.preset, "preset name (see `icl-cli presets`)");
    auto* configOpt = t->add_option("--config", train.request.config_file, "JSON config file")->check(CLI::ExistingFile);
    presetOpt->excludes(configOpt);
    t->add_option("--scale", train.request.scale, "preset scale")->check(CLI::IsMember({"quick", "paper"}));
    t->add_option("--set", sets, "override a config value: key.path=value (repeatable; keys: icl-cli config --list)");
    t->add_option("--out", train.out, "experiment file to write (RUN.h5)")->required();
    t->add_option("--steps", steps,
                  "number of training steps (0 stores the initial model, e.g. a construction of model.init)")
        ->check(atLeast(0));
    t->add_option("--seed", seed, "experiment seed")->check(atLeast(0));
    t->add_option("--device", device, "auto, cpu, cuda or cuda:N");
    t->add_option("--threads", train.threads, "LibTorch intra-op threads (default: all cores); with training.shards > 1, the "
                  "threads the shards run on (one intra-op thread each; the weights do not depend on it)")
        ->check(atLeast(1));
    t->add_flag("--resume", train.resume, "continue the file's run from its last checkpoint");
    t->add_option("--keep-optimizer-every", train.keep_optimizer_every,
                  "also keep optimizer state at checkpoints whose step is a multiple of N (default: last checkpoint only)")
        ->check(atLeast(1));
    t->add_flag("--force", train.force, "overwrite an existing output file");
    addJsonFlag(t, train.json);

    std::string infoPath;
    auto* info = app.add_subcommand("info", "summary of an experiment file: config, checkpoints, final metrics");
    addExperimentFile(info, infoPath);
    addJsonFlag(info, json);
    std::string verifyPath;
    auto* verify = app.add_subcommand("verify", "check every object of an experiment file against its checksum");
    addExperimentFile(verify, verifyPath);
    addJsonFlag(verify, json);
    std::string recoverPath;
    bool acceptDamaged = false;
    auto* recover = app.add_subcommand("recover", "roll back a commit that was interrupted (RUN.h5.journal), as "
                                                  "the next train --resume would");
    addExperimentFile(recover, recoverPath);
    recover->add_flag("--accept-damaged", acceptDamaged,
                      "roll back even if the file it restores has damaged objects");

    EvalArgs eval;
    auto* e = app.add_subcommand("eval", "ICL error vs number of in-context examples, model and baselines");
    addExperimentFile(e, eval.path);
    addCheckpointOption(e, eval.checkpoint);
    e->add_option("--prompts", eval.prompts, "number of prompts (default: the run's evaluation prompts)")
        ->check(atLeast(1));
    e->add_option("--seed", eval.seed, "prompt seed (default 0: the run's own evaluation prompts)")
        ->check(unsignedInteger());
    addThreadsOption(e, eval.threads);
    addMaxMemoryOption(e, eval.max_memory);
    addJsonFlag(e, eval.json);

    ExportArgs exp;
    auto* x = app.add_subcommand("export", "write one plot of an experiment as PNG, SVG, PDF or CSV");
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
        ->check(CLI::IsMember({"png", "svg", "pdf", "csv"}));
    x->add_option("--out", exp.out, "output file")->required();
    addDpiOption(x, exp.dpi);
    x->add_option("--checkpoint", exp.checkpoint, "checkpoint step for icl_curve, attention, lens, patching (default: last)");
    auto* exportPromptSeed = x->add_option("--prompt-seed", exp.prompt_seed, "attention, lens, patching: seed of the prompt (default 0)")
        ->check(unsignedInteger());
    x->add_option("--prompt", exp.prompt_file,
                  "attention, lens, patching: your own prompt from FILE (JSON or CSV, as analyze --prompt); excludes "
                  "--prompt-seed")
        ->type_name("FILE")
        ->excludes(exportPromptSeed);
    x->add_option("--layer", exp.layer, "attention: 0-based layer of the head (default 0)")->check(atLeast(0));
    x->add_option("--head", exp.head, "attention: 0-based head (default 0)")->check(atLeast(0));
    x->add_option("--corruption", exp.corruption, "patching: change_label, different_w or shuffle_pairs (default change_label)")
        ->check(CLI::IsMember({"change_label", "different_w", "shuffle_pairs"}));
    x->add_option("--example", exp.example, "patching: the label y_i that change_label changes, i = 1 … N (default 1)")
        ->check(atLeast(1));
    x->add_option("--seed", exp.seed, "patching: seed of the corruption's random draws (default 0)")->check(unsignedInteger());
    x->add_option("--family", exp.family, "algorithm_map: gd, gdpp, newton or ridge (default newton)")
        ->check(CLI::IsMember({"gd", "gdpp", "newton", "ridge"}));
    x->add_option("--similarity", exp.similarity, "algorithm_map: errors or weights (default errors)")
        ->check(CLI::IsMember({"errors", "weights"}));

    ReportArgs report;
    auto* r = app.add_subcommand("report", "every plot that fits the experiment, plus summary.json");
    addExperimentFile(r, report.path);
    r->add_option("--out", report.out_dir, "output directory (created)")->required();
    addDpiOption(r, report.dpi);
    addJsonFlag(r, report.json);

    AnalyzeArgs analyze;
    auto* a = app.add_subcommand("analyze", "run an analysis on a checkpoint and store it in the file");
    addExperimentFile(a, analyze.path);
    a->add_option("analysis", analyze.kind,
                  "gd-alignment, eta-scan, layers, ood, interpolate, copy, kernel, probe, paste, attention, lens, patching, "
                  "icl-iwl or algorithm-map")
        ->required()
        ->check(CLI::IsMember(analysisKinds()));
    auto* promptSeedOpt = a->add_option("--prompt-seed", analyze.prompt_seed,
                                        "attention, lens, patching: seed of the prompt drawn from the run's task (default 0)")
                              ->check(unsignedInteger());
    a->add_option("--prompt", analyze.prompt_file,
                  "attention, lens, patching: your own prompt from FILE instead of a drawn one: JSON {\"x\": [[...], ...], "
                  "\"y\": [...]} or CSV with header x_1,...,x_d,y, N+1 points with the query last (its label may be left "
                  "out); checked against the run's d and the model's largest N; excludes --prompt-seed (patching: the "
                  "corruption acts on this prompt, --seed still seeds it)")
        ->type_name("FILE")
        ->excludes(promptSeedOpt);
    a->add_option("--corruption", analyze.corruption,
                  "patching: how the corrupted prompt differs: change_label (one y_i), different_w (all labels from "
                  "another w) or shuffle_pairs (labels permuted) (default change_label)")
        ->check(CLI::IsMember({"change_label", "different_w", "shuffle_pairs"}));
    a->add_option("--example", analyze.example, "patching: the label y_i that change_label changes, i = 1 … N (default 1)")
        ->check(atLeast(1));
    a->add_option("--capture", analyze.capture,
                  "attention with --out FILE.h5 or --store: activation names to capture, e.g. resid_post.0,attn.pattern.1 "
                  "(default: every attn.pattern.{l}); --prompts prompts are streamed to the file in chunks")
        ->delimiter(',');
    addCheckpointOption(a, analyze.checkpoint);
    a->add_option("--show-sequence", analyze.show_sequence,
                  "icl-iwl: instead of the accuracies, print one sequence of this kind (training, training_bursty, "
                  "training_iid, icl or iwl; index --seed) with the checkpoint's prediction at its query")
        ->check(CLI::IsMember({"training", "training_bursty", "training_iid", "icl", "iwl"}));
    a->add_option("--reference", analyze.reference,
                  "gd-alignment: reference algorithm: the run's own (eval.alignment[0], else gd; the default), gd or "
                  "gdpp (K steps / layers for K linear layers), gd_k, gdpp_k, or features_gd_k (GD on meta-learned "
                  "features)");
    a->add_option("--prompts", analyze.prompts,
                  "number of prompts (default: the run's evaluation prompts; kernel: the first 128 of them; "
                  "algorithm-map: 1,000)")
        ->check(atLeast(1));
    a->add_option("--seed", analyze.seed,
                  "prompt seed (default 0: the run's own evaluation prompts); kernel: seed of the random features; "
                  "patching: seed of the corruption's random draws (default 0)")
        ->check(unsignedInteger());
    addThreadsOption(a, analyze.threads);
    addMaxMemoryOption(a, analyze.max_memory);
    addJsonFlag(a, analyze.json);
    a->add_option("--k", analyze.k, "eta-scan: number of GD steps (default: the model's layers)")
        ->check(atLeast(1));
    a->add_option("--eta-max", analyze.eta_max, "eta-scan: largest step size η")->check(CLI::Range(1e-6, 1e6));
    a->add_option("--points", analyze.points, "eta-scan: grid points")->check(CLI::Range(2, 100000));
    a->add_option("--kind", analyze.ood_kind, "ood: x_scale, w_scale, label_noise or depth")
        ->check(CLI::IsMember({"x_scale", "w_scale", "label_noise", "depth"}));
    a->add_option("--alpha", analyze.alpha, "ood: values of α (repeatable; default depends on --kind)");
    a->add_option("--target", analyze.probe.target, "probe: x, phi, y, oracle or gd_k (default phi)")
        ->check(CLI::IsMember({"x", "phi", "y", "oracle"}) | CLI::Validator(
            [](std::string& v) { return v.rfind("gd_", 0) == 0 ? std::string() : std::string("not gd_k"); }, "gd_k"));
    a->add_option("--positions", analyze.probe.positions, "probe: x, y or query tokens (default x)")
        ->check(CLI::IsMember({"x", "y", "query"}));
    a->add_option("--layer", analyze.layer, "kernel: 0-based softmax layer (default 0)")->check(atLeast(0));
    a->add_option("--head", analyze.head, "kernel: 0-based head (default 0)")->check(atLeast(0));
    a->add_option("--m", analyze.m, "kernel: numbers of random features, e.g. 16,64,256,1024,4096")
        ->delimiter(',')
        ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
    a->add_option("--seeds", analyze.seeds, "kernel: random-feature draws per m (default 5)")
        ->check(CLI::Range(int64_t(1), int64_t(1000)));
    a->add_option("--scaling", analyze.scaling,
                  "kernel: how the scores are split between queries and keys for the random features: balanced "
                  "(keys minus their mean, norms balanced by a linear map; default) or symmetric (q and k times "
                  "D^(-1/4)); both leave the attention unchanged")
        ->check(CLI::IsMember({"balanced", "symmetric"}));
    a->add_option("--cut-layer", analyze.paste.cut_layer, "paste: layer ℓ where the parent is cut (blocks ℓ..L−1 kept frozen)")
        ->check(atLeast(0));
    a->add_option("--embedding", analyze.paste.embedding, "paste: new trainable embedding: linear or transformer1 (default linear)")
        ->check(CLI::IsMember({"linear", "transformer1"}));
    a->add_option("--steps", analyze.paste.steps, "paste: Adam steps for the pasted and the scratch model (default 1000)")
        ->check(atLeast(0));
    a->add_option("--lr", analyze.paste.lr, "paste: Adam learning rate η of the new embedding and of the scratch model (default 1e-3)")
        ->check(CLI::PositiveNumber)
        ->check(CLI::Range(0.0, 10.0));
    a->add_option("--schedule", analyze.paste.schedule,
                  "paste: learning-rate schedule of both models: constant (default) or cosine (η decays to 0 at the "
                  "last step, no warm-up)")
        ->check(CLI::IsMember({"constant", "cosine"}));
    a->add_flag("--sequential{false}", analyze.paste.concurrent,
                "paste: train the pasted and the scratch model one after the other on --threads intra-op threads "
                "(default: side by side, one thread each, on a machine with 2 or more hardware threads)");
    a->add_option("--eval-every", analyze.paste.eval_every,
                  "paste: period of the loss curves' evaluations, in steps (default 100; each evaluates both models on "
                  "1,280 prompts)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
    a->add_option("--batch-size", analyze.paste.batch_size, "paste: prompts per training step (default 64)")
        ->check(CLI::Range(int64_t(1), int64_t(1) << 16));
    auto* wScaleOption = a->add_option("--w-scale", analyze.paste.w_scale,
                  "paste: τ > 0 of the linear task's weights w ~ N(0, τ²I_d) (default: the parent's task.w_scale)")
        ->check(CLI::PositiveNumber)
        ->check(CLI::Range(0.0, 1e6));
    auto* matchVarianceOption = a->add_flag("--match-label-variance", analyze.paste.match_label_variance,
                "paste: choose τ so that the linear labels ⟨w, x⟩ have the parent task's signal variance "
                "(τ = τ_parent·(E‖Φ*(x)‖² / E‖x‖²)^½), the label scale the frozen read-out was trained on")
        ->excludes(wScaleOption);
    a->add_flag("--match-label-scale", analyze.paste.match_label_scale,
                "paste: multiply the linear task's τ and σ by one factor c so that its labels have the parent "
                "task's variance (c² = (τ²E‖Φ*(x)‖² + σ²) / (τ²E‖x‖² + σ²)): the read-out's label scale at the "
                "linear task's own signal-to-noise ratio (ridge's λ and every loss ratio unchanged)")
        ->excludes(wScaleOption)
        ->excludes(matchVarianceOption);
    a->add_flag("--init-from-parent", analyze.paste.copy_parent_embedding,
                "paste: start the new module from the parent (linear, ℓ = 0: its read-in and positions; "
                "transformer1, ℓ ≥ 1: also its block ℓ − 1) instead of GPT-2's random initialisation");
    a->add_flag("--zero-new-mlp", analyze.paste.zero_new_mlp,
                "paste, with --init-from-parent and transformer1: the new block's MLP output starts at zero (the "
                "parent's attention, which copies x_i to the y-tokens, without its MLP, which computes Φ*)");
    a->add_option("--out", analyze.out,
                  "paste: experiment file for the pasted model (default RUN.paste-l<ℓ>-<embedding>.h5); an existing "
                  "file needs --force; removed again if the run is interrupted or fails. attention, lens, patching: "
                  "CSV of the patterns / lens / patching effect; attention also FILE.h5 (activations of --prompts prompts)");
    a->add_flag("--force", analyze.force, "paste, attention --out FILE.h5: replace an existing --out file");
    a->add_flag("--store", analyze.store_capture,
                "attention: capture the activations of --prompts prompts (--capture names) into the experiment file "
                "itself, under /analysis/activations/<id>, instead of a FILE.h5; algorithm-map: store the map under "
                "/analysis/algorithm_map/<id>");
    a->add_option("--families", analyze.families, "algorithm-map: families to compute, e.g. gd,newton (default gd, "
                                                  "gdpp, newton, ridge)")
        ->delimiter(',')
        ->check(CLI::IsMember({"gd", "gdpp", "newton", "ridge"}));
    a->add_flag("--all-checkpoints", analyze.all_checkpoints,
                "algorithm-map: one map per checkpoint of the run (the map across training)");

    ImportArgs importArgs;
    auto* im = app.add_subcommand("import", "write an experiment file from a foreign checkpoint: a PyTorch .pt, .safetensors "
                                            "or .npz file, or a Garg et al. run folder (model_<step>.pt, state.pt)");
    im->add_option("source", importArgs.request.source, "weights file or run folder")->required();
    im->add_option("--out", importArgs.request.out_path, "experiment file to write (RUN.h5)");
    im->add_option("--config", importArgs.request.config_file, "Garg et al.'s config.yaml or a workbench JSON config "
                                                       "(default: config.yaml in / beside the source)")
        ->check(CLI::ExistingFile);
    im->add_option("--set", importArgs.request.sets, "fill or override a config value: key.path=value (repeatable), e.g. "
                                             "model.n_heads=8, task.n_context=40");
    im->add_flag("--force", importArgs.request.force, "replace an existing output file");
    im->add_flag("--dry-run", importArgs.dry_run, "show the detected format, key mapping and inferred model; write nothing");
    addThreadsOption(im, importArgs.request.threads);
    addMaxMemoryOption(im, importArgs.request.max_memory);
    addJsonFlag(im, importArgs.json);

    ExportWeightsArgs exportWeightsArgs;
    auto* ew = app.add_subcommand("export-weights", "write a checkpoint's weights as .safetensors or a PyTorch .pt that "
                                                    "Python reads without the workbench");
    addExperimentFile(ew, exportWeightsArgs.path);
    ew->add_option("--out", exportWeightsArgs.out, "FILE.safetensors or FILE.pt")->required();
    addCheckpointOption(ew, exportWeightsArgs.checkpoint);
    ew->add_option("--layout", exportWeightsArgs.layout,
                   "workbench (the workbench's names, config in the metadata) or garg (a state dict for Garg et al.'s "
                   "TransformerModel, load_state_dict(strict=True))")
        ->check(CLI::IsMember({"workbench", "garg"}));
    ew->add_flag("--force", exportWeightsArgs.force, "replace an existing output file");
    addJsonFlag(ew, exportWeightsArgs.json);

    SweepArgs sweep;
    auto* sw = app.add_subcommand("sweep", "expand a grid of --set overrides into training runs (local processes or Slurm)");
    sw->add_option("file", sweep.path, "SWEEP.json: {\"preset\" or \"config\", \"scale\", \"set\", \"grid\", \"seeds\", \"steps\"}")
        ->required();
    sw->add_option("--out", sweep.out_dir, "directory of the runs (created)")->required();
    sw->add_option("--jobs", sweep.jobs, "training processes at a time (default 1)")->check(CLI::Range(1, 1024));
    sw->add_option("--emit-slurm", sweep.emit_slurm, "write a Slurm array script (one grid point per task) instead of running");

    AggregateArgs aggregate;
    auto* ag = app.add_subcommand("aggregate", "table (CSV) and plots of the final metrics of a sweep directory");
    ag->add_option("dir", aggregate.dir, "directory written by icl-cli sweep")->required();
    addDpiOption(ag, aggregate.dpi);
    addJsonFlag(ag, aggregate.json);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& err) {
        return app.exit(err);
    }

    // The file each command reads, named by its refusals of what is not an icl::Error.
    const auto fileReadBy = [&]() -> std::string {
        const std::pair<CLI::App*, std::string> files[] = {
            {info, infoPath}, {verify, verifyPath}, {e, eval.path}, {x, exp.path}, {r, report.path},
            {a, analyze.path}, {im, importArgs.request.source}, {ew, exportWeightsArgs.path}, {sw, sweep.path},
            {ag, aggregate.dir}, {t, train.resume ? train.out : train.request.config_file}};
        for (const auto& [command, file] : files)
            if (*command)
                return file;
        return {};
    };

    try {
        if (*presets)
            return runPresets(json);
        if (*configCmd) {
            if (!configList)
                throw icl::Error("config: give --list (the reference of every config key)");
            return runConfigList(json, configMarkdown);
        }
        if (*t) {
            if (train.request.preset.empty() && train.request.config_file.empty() && !train.resume)
                throw icl::Error("train: give --preset NAME or --config FILE (or --resume an existing --out file)");
            train.request.sets = sets;
            if (steps >= 0)
                train.request.steps = steps;
            if (seed >= 0)
                train.request.seed = static_cast<uint64_t>(seed);
            if (!device.empty())
                train.request.device = device;
            return runTrain(train);
        }
        if (*info)
            return runInfo(infoPath, json);
        if (*verify)
            return runVerify(verifyPath, json);
        if (*recover)
            return runRecover(recoverPath, acceptDamaged);
        if (*e)
            return runEval(eval);
        if (*x)
            return runExport(exp);
        if (*r)
            return runReport(report);
        if (*a)
            return runAnalyze(analyze);
        if (*im) {
            if (importArgs.request.out_path.empty() && !importArgs.dry_run)
                throw icl::Error("import: give --out RUN.h5 (or --dry-run to see what would be imported)");
            return runImport(importArgs);
        }
        if (*ew)
            return runExportWeights(exportWeightsArgs);
        if (*sw)
            return runSweep(sweep);
        if (*ag)
            return runAggregate(aggregate);
    } catch (const icl::Error& err) {
        printErrorLine(err.what());
        return 1;
    } catch (const std::exception& err) {
        // What else reading a file can throw (std::bad_alloc, std::length_error, nlohmann's and LibTorch's
        // errors) is about the file the command reads: "FILE: what is wrong", never a backtrace.
        if (const std::string file = fileReadBy(); !file.empty()) {
            printErrorLine(icl::fileErrorMessage(file, err));
            return 1;
        }
        printErrorLine("internal error: " + icl::firstLine(err.what()));
        return 2;
    }
    return 0;
}
