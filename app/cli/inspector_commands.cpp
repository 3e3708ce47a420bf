// icl-cli analyze RUN.h5 attention|patching|lens, and the export of their plots: the interactive
// inspector (core/analysis/inspector.h) run headless on one prompt drawn from --prompt-seed or read
// from --prompt FILE (core/io/prompt_file.h).
#include "commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/analysis/activation_capture.h"
#include "core/analysis/inspector.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/io/prompt_file.h"
#include "core/models/names.h"
#include "core/report.h"
#include "core/training/trainer.h"
#include "core/types/matrix_csv.h"
#include "display.h"
#include "options.h"
#include "plot_export.h"
#include "progress_bar.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace icl::cli {

namespace {

std::string extensionOf(const std::string& path)
{
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

/// Metadata written into exported files and CSV headers: the experiment, checkpoint and prompt seed.
std::map<std::string, std::string> promptMetadata(const std::string& path, int64_t step, uint64_t promptSeed)
{
    // The file name, as the GUI's exports and icl-cli report write it.
    return {{"experiment", fs::path(path).filename().string()},
            {"checkpoint_step", std::to_string(step)},
            {"prompt_seed", std::to_string(promptSeed)}};
}

/// promptMetadata for the analyze commands: the prompt seed, or the prompt file it was read from.
std::map<std::string, std::string> promptMetadata(const InspectorArgs& args, int64_t step)
{
    auto m = promptMetadata(args.path, step, args.prompt_seed);
    if (!args.prompt_file.empty()) {
        m.erase("prompt_seed");
        m["prompt_file"] = args.prompt_file;
    }
    return m;
}

json predictionsJson(const std::vector<PredictorValue>& values)
{
    json out = json::object();
    for (const PredictorValue& p : values)
        out[p.name] = {{"prediction", jsonNumber(p.prediction)}, {"error", jsonNumber(p.error)}};
    return out;
}

/// The prompt as the commands print it; an unknown query label (a prompt file without it) is null.
json promptJson(const Prompt& p)
{
    json y = json::array();
    for (double v : p.y)
        y.push_back(jsonNumber(v));
    json out = {{"x", p.x}, {"y", y}, {"noise_std", p.noise_std}, {"seed", p.seed}};
    if (!p.w.empty())
        out["w"] = p.w;
    return out;
}

/// The prompt of attention, lens and patching: read from --prompt FILE (checked against the run's d and the
/// model's largest N), else drawn from --prompt-seed.
Prompt commandPrompt(const InspectorArgs& args, const Inspector& inspector)
{
    if (args.prompt_file.empty())
        return inspector.samplePrompt(args.prompt_seed);
    PromptFileLimits limits;
    limits.d = inspector.inputDim();
    limits.max_points = inspector.maxContext() > 0 ? inspector.maxContext() + 1 : 0;
    const Prompt p = readPromptFile(args.prompt_file, limits);
    try {
        inspector.checkPrompt(p); // what the file cannot know: w against the run's task
    } catch (const Error& e) {
        throw Error(args.prompt_file + ": " + e.what());
    }
    return p;
}

/// Where the prompt came from, for the text output: "prompt seed 3" or "prompt FILE".
std::string promptSource(const InspectorArgs& args)
{
    return args.prompt_file.empty() ? "prompt seed " + std::to_string(args.prompt_seed) : "prompt " + args.prompt_file;
}

/// The prompt's origin in the JSON output: "prompt_seed" for a drawn prompt, "prompt_file" for a file's.
void addPromptSource(json& out, const InspectorArgs& args)
{
    if (args.prompt_file.empty())
        out["prompt_seed"] = args.prompt_seed;
    else
        out["prompt_file"] = args.prompt_file;
}

/// `text` right-aligned in `width` terminal columns (counts UTF-8 code points, so "e₁₀" is 3 wide).
std::string padLeft(const std::string& text, size_t width)
{
    size_t columns = 0;
    for (unsigned char c : text)
        columns += (c & 0xC0) != 0x80;
    return std::string(width > columns ? width - columns : 0, ' ') + text;
}

void printPredictions(const std::vector<PredictorValue>& values, double target)
{
    std::printf("  %-22s %12s %12s\n", "predictor", "ŷ_q", "error");
    for (const PredictorValue& p : values) {
        if (std::isfinite(p.error))
            std::printf("  %-22s %12.5f %12.5f\n", p.name.c_str(), p.prediction, p.error);
        else
            std::printf("  %-22s %12.5f %s\n", p.name.c_str(), p.prediction, padLeft("—", 12).c_str());
    }
    if (std::isfinite(target))
        std::printf("  %-22s %12.5f\n", "target y_q", target);
    else
        std::printf("  %-22s %12s\n", "target y_q", "unknown (not in the prompt)");
}

void requireOutExtension(const std::string& out, std::initializer_list<const char*> allowed, const std::string& what)
{
    const std::string ext = extensionOf(out);
    std::string names;
    for (const char* a : allowed) {
        if (ext == a)
            return;
        names += std::string(names.empty() ? "" : " or ") + a;
    }
    throw Error("--out " + out + ": " + what + " writes " + names + " files");
}

/// The start of a command that inspects one prompt: --out (when given) must end in one of `allowed`, and
/// the command computes on --threads. Throws icl::Error naming the option.
void startPromptCommand(const InspectorArgs& args, std::initializer_list<const char*> allowed, const std::string& what)
{
    if (!args.out.empty())
        requireOutExtension(args.out, allowed, what);
    configureThreads(args.threads);
}

/// Attention patterns of every head as CSV in long form: layer, head, query_token, key_token, weight.
void writeAttentionCsv(const Inspection& view, const std::map<std::string, std::string>& metadata,
                       const std::string& path)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f)
        throw Error("cannot write " + path);
    f << "# title: attention patterns\n";
    for (const auto& [key, value] : metadata)
        f << "# " << key << ": " << value << "\n";
    f << "layer,head,query_index,query_token,key_index,key_token,weight\n";
    char buf[64];
    for (size_t i = 0; i < view.patterns.size(); ++i) {
        const Matrix& m = view.patterns[i];
        const int64_t layer = int64_t(i) / std::max<int64_t>(1, view.n_heads);
        const int64_t head = int64_t(i) % std::max<int64_t>(1, view.n_heads);
        for (int64_t r = 0; r < m.rows; ++r)
            for (int64_t c = 0; c < m.cols; ++c) {
                std::snprintf(buf, sizeof buf, "%.9g", m.at(r, c));
                f << layer << "," << head << "," << r << "," << view.token_labels.at(size_t(r)) << "," << c << ","
                  << view.key_labels.at(size_t(c)) << "," << buf << "\n";
            }
    }
    if (!f)
        throw Error("failed writing " + path);
}

/// The pattern of one head with its token labels, named for a heatmap.
Matrix headPattern(const Inspection& view, int64_t layer, int64_t head)
{
    if (layer < 0 || layer >= view.n_layers)
        throw Error("--layer " + std::to_string(layer) + ": the model has layers 0.." + std::to_string(view.n_layers - 1));
    if (head < 0 || head >= view.n_heads)
        throw Error("--head " + std::to_string(head) + ": the model has heads 0.." + std::to_string(view.n_heads - 1));
    Matrix m = view.patterns.at(size_t(layer * view.n_heads + head));
    m.name = "attention pattern, layer " + std::to_string(layer) + ", head " + std::to_string(head)
             + " (rows: query tokens, columns: key tokens)";
    m.row_labels = view.token_labels;
    m.col_labels = view.key_labels;
    return m;
}

/// `example` is the 1-based i of y_i, as in the token labels and the GUI; PatchingOptions counts from 0.
PatchingOptions patchingOptions(const std::string& corruption, int64_t example, uint64_t seed)
{
    if (example < 1)
        throw Error("--example " + std::to_string(example) + ": expected the index i >= 1 of the label y_i to change");
    PatchingOptions o;
    o.corruption = corruptionFromName(corruption);
    o.example = example - 1;
    o.seed = seed;
    return o;
}

/// The corruption in the metadata, enough to redraw the corrupted prompt: its name, the seed of its random
/// draws and, for change_label, which label it changes.
void addCorruptionMetadata(std::map<std::string, std::string>& metadata, const PatchingOptions& o)
{
    metadata["corruption"] = corruptionName(o.corruption);
    metadata["corruption_seed"] = std::to_string(o.seed);
    if (o.corruption == Corruption::ChangeLabel)
        metadata["changed_label"] = "y_" + std::to_string(o.example + 1);
}

PatchingResult runPatchingWithProgress(Inspector& inspector, const Prompt& clean, const PatchingOptions& o)
{
    ProgressBar bar("patching");
    const PatchingResult r = inspector.patching(clean, o, bar.callback());
    bar.finish();
    return r;
}

} // namespace

/// `analyze attention --out FILE.h5` (or `--store`: into the experiment file under /analysis/activations/<id>): the
/// attention patterns (or the --capture names) of --prompts prompts, streamed in chunks after a size estimate.
int runAttentionCapture(const InspectorArgs& args)
{
    if (args.store_capture && !args.out.empty())
        throw Error("--store: the capture goes into " + args.path + " itself; leave out --out " + args.out);
    if (!args.store_capture && fs::exists(args.out) && !args.force)
        throw Error("--out " + args.out + ": the file exists (add --force to replace it)");
    configureThreads(args.threads);
    CaptureOptions o;
    o.n_prompts = args.prompts > 0 ? args.prompts : 1;
    o.seed = args.prompt_seed;
    o.checkpoint_step = args.checkpoint;
    o.out_path = args.out;
    o.overwrite = args.force;
    if (!args.capture.empty()) {
        o.names = args.capture;
    } else {
        const RunSummary s = readRunSummary(args.path);
        const json cfg = storedJson(s.config_json);
        const int64_t layers = cfg.is_object() && cfg.contains("model") && cfg["model"].is_object()
                                   ? cfg["model"].value("n_layers", int64_t(1))
                                   : 1;
        for (int64_t l = 0; l < layers; ++l)
            o.names.push_back(actName(Act::AttnPattern, l));
    }
    const CaptureEstimate e = estimateCapture(args.path, o.names, o.n_prompts, o.chunk, o.checkpoint_step);
    std::cerr << "capturing " << e.names.size() << " activation(s) of " << e.n_prompts << " prompt(s): "
              << formatBytes(e.total_bytes) << " written, " << formatBytes(e.chunk_bytes) << " in memory per chunk of "
              << e.chunk << "\n";
    ProgressBar bar("capture");
    const CaptureResult r = captureActivations(args.path, o, bar.callback());
    bar.finish();
    if (args.json) {
        json shapes = json::object();
        for (size_t i = 0; i < e.names.size(); ++i)
            shapes[e.names[i]] = e.shapes[i];
        printJsonObj(json{{"analysis", "attention"},
                          {"out", r.file},
                          {"group", r.group},
                          {"checkpoint_step", r.checkpoint_step},
                          {"n_prompts", e.n_prompts},
                          {"prompt_seed", args.prompt_seed},
                          {"names", e.names},
                          {"shapes", shapes},
                          {"bytes", e.total_bytes}});
        return 0;
    }
    std::cout << "wrote " << shown(r.file) << (r.group == "/" ? "" : ":" + shown(r.group)) << ": " << e.names.size()
              << " dataset(s) [" << e.n_prompts
              << ", …] at checkpoint " << r.checkpoint_step << ", plus the prompts x and y\n";
    return 0;
}

int runAttention(const InspectorArgs& args)
{
    if (!args.out.empty())
        requireOutExtension(args.out, {".csv", ".h5"}, "attention");
    if (extensionOf(args.out) == ".h5" || args.store_capture) {
        if (!args.prompt_file.empty())
            throw Error("--prompt: attention --out FILE.h5 captures --prompts prompts drawn from the run's task; "
                        "give --out FILE.csv (or no --out) to inspect the prompt of a file");
        return runAttentionCapture(args);
    }
    configureThreads(args.threads);
    Inspector inspector(args.path, args.checkpoint);
    const Prompt prompt = commandPrompt(args, inspector);
    const Inspection view = inspector.inspect(prompt);
    const auto metadata = promptMetadata(args, view.checkpoint_step);
    if (!args.out.empty())
        writeAttentionCsv(view, metadata, args.out);
    if (args.json) {
        json heads = json::array();
        for (const HeadSummary& h : view.heads)
            heads.push_back({{"layer", h.layer},
                             {"head", h.head},
                             {"entropy", jsonNumber(h.entropy)},
                             {"copy_mass", jsonNumber(h.copy_mass)},
                             {"query_to_example", h.query_to_example}});
        json patterns = json::array();
        for (const Matrix& m : view.patterns) {
            json rows = json::array();
            for (int64_t r = 0; r < m.rows; ++r)
                rows.push_back(std::vector<double>(m.data.begin() + r * m.cols, m.data.begin() + (r + 1) * m.cols));
            patterns.push_back(rows);
        }
        json out = {{"analysis", "attention"},
                    {"checkpoint_step", view.checkpoint_step},
                    {"n_layers", view.n_layers},
                    {"n_heads", view.n_heads},
                    {"token_labels", view.token_labels},
                    {"key_labels", view.key_labels},
                    {"softmax_head", view.softmax_head},
                    {"target", jsonNumber(view.target)},
                    {"predictions", predictionsJson(view.predictions)},
                    {"heads", heads},
                    {"patterns", patterns},
                    {"prompt", promptJson(prompt)}};
        addPromptSource(out, args);
        if (!args.out.empty())
            out["out"] = args.out;
        printJsonObj(out);
        return 0;
    }
    std::cout << "attention of " << shown(args.path) << " at checkpoint " << view.checkpoint_step << " on "
              << shown(promptSource(args)) << " (" << view.n_layers << (view.n_layers == 1 ? " layer × " : " layers × ")
              << view.n_heads << (view.n_heads == 1 ? " head, " : " heads, ")
              << view.token_labels.size() << " tokens, " << view.key_labels.size() << " keys):\n";
    printPredictions(view.predictions, view.target);
    std::vector<HeadSummary> heads = view.heads;
    const bool interleaved = !heads.empty() && std::isfinite(heads.front().copy_mass);
    std::stable_sort(heads.begin(), heads.end(), [&](const HeadSummary& a, const HeadSummary& b) {
        return interleaved ? a.copy_mass > b.copy_mass : a.entropy < b.entropy;
    });
    std::cout << "  heads (sorted by " << (interleaved ? "copy mass" : "entropy") << "):\n"
              << "    layer head   entropy   copy mass   query→example (largest)\n";
    for (const HeadSummary& h : heads) {
        const auto best = std::max_element(h.query_to_example.begin(), h.query_to_example.end());
        std::printf("    %5lld %4lld %9.4f %11.4f   ", static_cast<long long>(h.layer), static_cast<long long>(h.head),
                    h.entropy, h.copy_mass);
        if (best != h.query_to_example.end())
            std::printf("example %lld: %.4f", static_cast<long long>(best - h.query_to_example.begin() + 1), *best);
        std::printf("\n");
    }
    if (!args.out.empty())
        std::cout << "  patterns written to " << shown(args.out) << "\n";
    return 0;
}

int runLens(const InspectorArgs& args)
{
    startPromptCommand(args, {".csv"}, "lens");
    Inspector inspector(args.path, args.checkpoint);
    const Prompt prompt = commandPrompt(args, inspector);
    const RegressionLens lens = inspector.lens(prompt);
    if (!args.out.empty()) {
        auto meta = promptMetadata(args, lens.checkpoint_step);
        meta.erase("experiment");  // lensFigure names the run itself
        meta.erase("checkpoint_step");
        const Figure f = lensFigure(lens, inspector.summary(), meta);
        exportPlot(f, args.out, "csv", 0);
    }
    if (args.json) {
        json out = {{"analysis", "lens"},
                    {"checkpoint_step", lens.checkpoint_step},
                    {"layer_labels", lens.layer_labels},
                    {"prediction", lens.prediction},
                    {"target", jsonNumber(lens.target)},
                    {"references", predictionsJson(lens.references)},
                    {"prompt", promptJson(prompt)}};
        addPromptSource(out, args);
        printJsonObj(out);
        return 0;
    }
    std::cout << "regression lens of " << shown(args.path) << " at checkpoint " << lens.checkpoint_step << " on "
              << shown(promptSource(args)) << " (read-out of the residual stream at the query):\n";
    for (size_t l = 0; l < lens.prediction.size(); ++l)
        std::printf("  %-12s %12.5f\n", l < lens.layer_labels.size() ? lens.layer_labels[l].c_str() : "?",
                    std::abs(lens.prediction[l]) < 5e-6 ? 0.0 : lens.prediction[l]);  // no "-0.00000"
    std::cout << " references on the same prompt:\n";
    printPredictions(lens.references, lens.target);
    return 0;
}

int runPatching(const InspectorArgs& args)
{
    startPromptCommand(args, {".csv"}, "patching");
    Inspector inspector(args.path, args.checkpoint);
    const Prompt clean = commandPrompt(args, inspector);
    const PatchingOptions o = patchingOptions(args.corruption, args.example, args.seed);
    const PatchingResult r = runPatchingWithProgress(inspector, clean, o);
    auto metadata = promptMetadata(args, r.checkpoint_step);
    addCorruptionMetadata(metadata, o);
    if (!args.out.empty())
        writeMatrixCsv(r.effect, metadata, args.out);
    if (args.json) {
        json effect = json::array();
        for (int64_t i = 0; i < r.effect.rows; ++i) {
            json row = json::array();
            for (int64_t j = 0; j < r.effect.cols; ++j)
                row.push_back(jsonNumber(r.effect.at(i, j)));
            effect.push_back(row);
        }
        json out = {{"analysis", "patching"},
                    {"checkpoint_step", r.checkpoint_step},
                    {"corruption", r.corruption},
                    {"example", o.example + 1},
                    {"seed", o.seed},
                    {"clean_prediction", jsonNumber(r.clean_prediction)},
                    {"corrupted_prediction", jsonNumber(r.corrupted_prediction)},
                    {"n_prompts", r.n_prompts},
                    {"n_skipped", r.n_skipped},
                    {"layer_labels", r.effect.row_labels},
                    {"token_labels", r.effect.col_labels},
                    {"patching_effect", effect},
                    {"prompt", promptJson(clean)},
                    {"corrupted_prompt", promptJson(inspector.corrupt(clean, o))}};
        addPromptSource(out, args);
        printJsonObj(out);
        return 0;
    }
    std::cout << "activation patching of " << shown(args.path) << " at checkpoint " << r.checkpoint_step << " on "
              << shown(promptSource(args)) << " (" << r.corruption << "): clean ŷ_q " << r.clean_prediction << ", corrupted "
              << r.corrupted_prediction << "\n"
              << "  effect of patching the clean residual stream (0 = corrupted, 1 = clean):\n";
    std::printf("  %-24s", "");
    for (const auto& c : r.effect.col_labels)
        std::printf(" %s", padLeft(c, 7).c_str());
    std::printf("\n");
    for (int64_t i = 0; i < r.effect.rows; ++i) {
        std::printf("  %-24s", size_t(i) < r.effect.row_labels.size() ? r.effect.row_labels[size_t(i)].c_str() : "");
        for (int64_t j = 0; j < r.effect.cols; ++j)
            std::printf(" %7.3f", std::abs(r.effect.at(i, j)) < 5e-4 ? 0.0 : r.effect.at(i, j));  // no "-0.000"
        std::printf("\n");
    }
    if (r.n_skipped >= r.n_prompts)
        std::cout << "  the clean and corrupted predictions differ by less than 1e-6: the effect is undefined (nan); "
                  << (args.prompt_file.empty() ? "try another --prompt-seed, --example or --seed\n"
                                               : "try another --example or --seed\n");
    if (!args.out.empty())
        std::cout << "  effect written to " << shown(args.out) << "\n";
    return 0;
}

bool isInspectorPlot(const std::string& plot)
{
    return plot == "attention" || plot == "patching" || plot == "lens";
}

void exportInspectorPlot(const ExportArgs& args)
{
    Inspector inspector(args.path, args.checkpoint);
    // The same prompt as `analyze … --prompt FILE` / `--prompt-seed S`, and the same metadata.
    InspectorArgs source;
    source.path = args.path;
    source.prompt_seed = args.prompt_seed;
    source.prompt_file = args.prompt_file;
    const Prompt prompt = commandPrompt(source, inspector);
    auto metadata = promptMetadata(source, inspector.checkpointStep());
    if (args.plot == "lens") {
        const RegressionLens lens = inspector.lens(prompt);
        std::map<std::string, std::string> origin = metadata;
        origin.erase("experiment");
        origin.erase("checkpoint_step");
        exportPlot(lensFigure(lens, inspector.summary(), origin), args.out, args.format, args.dpi);
        return;
    }
    if (args.plot == "attention") {
        const Inspection view = inspector.inspect(prompt);
        Matrix m = headPattern(view, args.layer, args.head);
        m.name = "Attention pattern, layer " + std::to_string(args.layer) + ", head " + std::to_string(args.head);
        metadata["layer"] = std::to_string(args.layer);
        metadata["head"] = std::to_string(args.head);
        // Drawn by the Attention page's own view: the same colours, colour bar and axis titles as its export.
        const bool softmax = view.softmax_head.at(size_t(args.layer * view.n_heads + args.head));
        if (!softmax && args.attention_scale == "log")
            throw Error("--attention-scale log: layer " + std::to_string(args.layer) + ", head "
                        + std::to_string(args.head) + " is a linear-attention head (its scores have any sign); the "
                        "log scale is for softmax weights only (use linear or row)");
        metadata["attention_scale"] = args.attention_scale;
        exportAttentionPlot(m, softmax, metadata, args.out, args.format, args.dpi, args.attention_scale);
        return;
    }
    const PatchingOptions o = patchingOptions(args.corruption, args.example, args.seed);
    const PatchingResult r = runPatchingWithProgress(inspector, prompt, o);
    if (r.n_skipped >= r.n_prompts)  // an empty heatmap would say nothing
        throw Error("patching: the clean and corrupted predictions differ by less than 1e-6, the effect is undefined; "
                    "try another --prompt-seed or --example");
    addCorruptionMetadata(metadata, o);
    Matrix m = r.effect;
    m.name = "activation patching (" + r.corruption + "): 0 = corrupted, 1 = clean";
    exportHeatmap(m, metadata, args.out, args.format, args.dpi, 1.0);
}

namespace {

/// --prompt-seed S and --prompt FILE (which exclude each other) of an analysis of one prompt; `patching` adds what
/// --prompt means for the corruption.
void addPromptOptions(CLI::App* kind, InspectorArgs& a, bool patching)
{
    auto* seed
        = kind->add_option("--prompt-seed", a.prompt_seed, "seed of the prompt drawn from the run's task (default 0)")
              ->check(unsignedInteger());
    kind->add_option("--prompt", a.prompt_file,
            std::string("your own prompt from FILE instead of a drawn one: JSON {\"x\": [[...], ...], \"y\": "
                        "[...]} or CSV with header x_1,...,x_d,y, N+1 points with the query last (its label "
                        "may be left out); checked against the run's d and the model's largest N; excludes "
                        "--prompt-seed")
                + (patching ? " (the corruption acts on this prompt, --seed still seeds it)" : ""))
        ->type_name("FILE")
        ->excludes(seed);
}

} // namespace

namespace {

/// analyze FILE attention.
void addAttention(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<InspectorArgs>(analyze, "attention",
        "attention patterns on one prompt, or the activations of --prompts prompts", runAttention);
    InspectorArgs& a = *args;
    addPromptOptions(k, a, false);
    k->add_option(
        "--out", a.out, "CSV of the patterns, or FILE.h5: the activations of --prompts prompts (--capture names)");
    k->add_flag("--force", a.force, "with --out FILE.h5: replace an existing --out file");
    k->add_option("--prompts", a.prompts,
         "with --out FILE.h5 or --store: prompts captured, streamed to the file in chunks (default 1)")
        ->check(atLeast(1));
    k->add_option("--capture", a.capture,
         "with --out FILE.h5 or --store: activation names to capture, e.g. resid_post.0,attn.pattern.1 "
         "(default: every attn.pattern.{l})")
        ->delimiter(',');
    k->add_flag("--store", a.store_capture,
        "capture the activations of --prompts prompts (--capture names) into the experiment file itself, "
        "under /analysis/activations/<id>, instead of a FILE.h5");
}

/// analyze FILE lens.
void addLens(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<InspectorArgs>(
        analyze, "lens", "regression lens: the read-out at the query after each layer, on one prompt", runLens);
    addPromptOptions(k, *args, false);
    k->add_option("--out", args->out, "CSV of the lens");
}

/// analyze FILE patching.
void addPatching(CLI::App* analyze)
{
    auto [k, args] = addAnalysis<InspectorArgs>(analyze, "patching",
        "activation patching: the effect of each clean activation on a corrupted prompt", runPatching);
    InspectorArgs& a = *args;
    addPromptOptions(k, a, true);
    k->add_option("--corruption", a.corruption,
         "how the corrupted prompt differs: change_label (one y_i), different_w (all labels from another w) "
         "or shuffle_pairs (labels permuted) (default change_label)")
        ->check(CLI::IsMember({ "change_label", "different_w", "shuffle_pairs" }));
    k->add_option("--example", a.example, "the label y_i that change_label changes, i = 1 … N (default 1)")
        ->check(atLeast(1));
    k->add_option("--seed", a.seed, "seed of the corruption's random draws (default 0)")->check(unsignedInteger());
    k->add_option("--out", a.out, "CSV of the patching effect");
}

} // namespace

void addInspectorAnalyses(CLI::App* analyze)
{
    addAttention(analyze);
    addLens(analyze);
    addPatching(analyze);
}

} // namespace icl::cli
