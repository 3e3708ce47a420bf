#include "core/training/weights_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/checked_size.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/io/import_config.h"
#include "core/io/kinds.h"
#include "core/io/weights_file.h"
#include "core/models/model.h"
#include "core/models/names.h"
#include "core/training/checkpoint.h"
#include "core/runtime/device.h"
#include "core/training/regression_evaluation.h"
#include "core/training/run_file_lock.h"
#include "core/tasks/seeds.h"

namespace icl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// Config key written into the metadata of the workbench's own exports (safetensors __metadata__, the .pt's outer dict).
constexpr const char* kConfigMetadataKey = "icl_workbench_config";
/// GPT2Config's default vocabulary: the size of the (unused) wte of Garg et al.'s models.
constexpr int64_t kGpt2Vocabulary = 50257;

std::string sha256File(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(path + ": cannot open");
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1) {
        EVP_MD_CTX_free(ctx);
        throw Error("SHA-256 is not available");
    }
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0)
            EVP_DigestUpdate(ctx, buf.data(), size_t(in.gcount()));
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, digest, &len);
    EVP_MD_CTX_free(ctx);
    std::ostringstream hex;
    for (unsigned int i = 0; i < len; ++i)
        hex << std::hex << std::setw(2) << std::setfill('0') << int(digest[i]);
    return hex.str();
}

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

torch::Tensor toTensor(const NamedArray& a) { return arrayToTensor(a); }

NamedArray toArray(const std::string& name, const torch::Tensor& t)
{
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    NamedArray a;
    a.name = name;
    a.shape.assign(c.sizes().begin(), c.sizes().end());
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return a;
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }


/// `text` as a non-negative decimal integer of at most `max`, or nullopt (digits only; no sign, no spaces).
std::optional<int64_t> decimal(const std::string& text, int64_t max)
{
    int64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [at, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || at != end || v > max)
        return std::nullopt;
    return v;
}

/// The largest step a run has (training.steps' limit).
int64_t maxStep() { return configIntegerRange("training.steps").second; }

/// A budget for reading one file of an import: what `budget` has left, with messages naming `path`; charge its use
/// to `budget` afterwards with settle().
struct FileBudget {
    FileBudget(const std::string& path, const MemoryBudget& budget)
        : file(path, std::max<uint64_t>(budget.limit() - budget.used(), 1))
    {
    }
    void settle(MemoryBudget& budget, const std::string& what) { budget.charge(file.used(), what); }
    MemoryBudget file;
};

// --- sources ---------------------------------------------------------------------------------------------------

struct LoadedSource {
    ImportSource info;
    WeightsFile file;
};

/// The checkpoint files of a request, read, in step order. Two files of one step (model_<step>.pt and state.pt):
/// the model file is kept, with a warning in `warnings` when their tensors differ. Each file is read within what
/// `budget` has left (and charged to it), `check` run on its names and shapes before its data is read.
std::vector<LoadedSource> loadSources(
    const std::string& source, std::vector<std::string>& warnings, MemoryBudget& budget,
    const std::function<void(const WeightsFile& header, const MemoryBudget& file_budget)>& check)
{
    std::error_code ec;
    if (!fs::exists(source, ec))
        throw Error(source + ": no such file or folder");
    std::vector<std::pair<int64_t, std::string>> files;  // (step from the name, path); step −1 = state.pt
    if (fs::is_directory(source, ec)) {
        static const std::regex modelStep(R"(model_(\d+)\.pt)");
        for (const auto& entry : fs::directory_iterator(source, ec)) {
            const std::string name = entry.path().filename().string();
            std::smatch m;
            if (std::regex_match(name, m, modelStep)) {
                const std::optional<int64_t> step = decimal(m[1].str(), maxStep());
                if (!step)
                    throw Error(entry.path().string() + ": the step " + m[1].str() + " in its name is out of range (a run "
                                + "has at most " + std::to_string(maxStep()) + " steps, training.steps)");
                files.emplace_back(*step, entry.path().string());
            }
            else if (name == "state.pt")
                files.emplace_back(-1, entry.path().string());
        }
        if (files.empty())
            throw Error(source + ": no model_<step>.pt or state.pt in this folder (Garg et al.'s run layout); give a "
                                 "weights file instead");
    } else {
        files.emplace_back(-2, source);
    }
    std::vector<LoadedSource> out;
    std::set<int64_t> steps;
    for (const auto& [nameStep, path] : files) {
        LoadedSource s;
        FileBudget fileBudget(path, budget);
        s.file = readWeightsFile(path, fileBudget.file,
                                 [&](const WeightsFile& header) { check(header, fileBudget.file); });
        fileBudget.settle(budget, "reading " + path);
        s.info.path = fs::absolute(path).lexically_normal().string();
        s.info.format = weightsFormatName(s.file.format);
        s.info.sha256 = sha256File(path);
        if (nameStep >= 0)
            s.info.step = nameStep;
        else if (s.file.train_step) {
            if (*s.file.train_step < 0)
                throw Error(path + ": train_step " + std::to_string(*s.file.train_step) + " is negative");
            s.info.step = *s.file.train_step;
        }
        else if (auto it = s.file.metadata.find("icl_workbench_step"); it != s.file.metadata.end()) {
            const std::optional<int64_t> step = decimal(it->second, maxStep());
            if (!step)
                throw Error(path + ": damaged icl_workbench_step metadata \"" + it->second
                            + "\" (expected a step from 0 to " + std::to_string(maxStep()) + ")");
            s.info.step = *step;
        }
        else
            s.info.step = 0;
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const LoadedSource& a, const LoadedSource& b) {
        // A model_<step>.pt and a state.pt of the same step hold the same weights: the model file comes first.
        if (a.info.step != b.info.step)
            return a.info.step < b.info.step;
        return fs::path(a.info.path).filename() != "state.pt" && fs::path(b.info.path).filename() == "state.pt";
    });
    std::vector<LoadedSource> unique;
    for (auto& s : out) {
        if (steps.insert(s.info.step).second) {
            unique.push_back(std::move(s));
            continue;
        }
        const LoadedSource& kept = unique.back();
        bool same = kept.file.tensors.size() == s.file.tensors.size();
        for (size_t i = 0; same && i < s.file.tensors.size(); ++i)
            same = kept.file.tensors[i].name == s.file.tensors[i].name && kept.file.tensors[i].data == s.file.tensors[i].data;
        warnings.push_back(fs::path(s.info.path).filename().string() + " is also step " + std::to_string(s.info.step)
                           + (same ? " with the same weights" : " but holds other weights") + ": " +
                           fs::path(kept.info.path).filename().string() + " is imported");
    }
    return unique;
}

/// Removes DDP ("module.") and torch.compile ("_orig_mod.") prefixes, nested in any order (moves the tensors).
std::vector<NamedArray> stripPrefixes(std::vector<NamedArray> tensors, std::vector<std::string>& removed)
{
    std::set<std::string> seen;
    for (NamedArray& a : tensors) {
        for (bool again = true; again;) {
            again = false;
            for (const char* p : {"module.", "_orig_mod."})
                if (startsWith(a.name, p)) {
                    a.name = a.name.substr(std::string(p).size());
                    if (seen.insert(p).second)
                        removed.push_back(p);
                    again = true;
                }
        }
    }
    std::set<std::string> names;
    for (const NamedArray& a : tensors)
        if (!names.insert(a.name).second)
            throw Error("two tensors are named " + a.name + " once the prefixes "
                        + (removed.empty() ? "" : removed[0]) + "… are removed");
    return tensors;
}

// --- layouts ---------------------------------------------------------------------------------------------------

/// Sizes read off the tensors.
struct TensorSizes {
    std::string kind;  ///< "gpt2" or "lsa"
    int64_t d = 0, d_model = 0, n_layers = 0, n_positions = 0;
    int64_t n_heads = 0;  ///< 0 when the tensors do not tell (Garg's fused c_attn)
};

const NamedArray* find(const std::vector<NamedArray>& tensors, const std::string& name)
{
    for (const NamedArray& a : tensors)
        if (a.name == name)
            return &a;
    return nullptr;
}

/// The layers the tensors under `prefix` ("_backbone.h.", "blocks.") imply: 1 + the largest layer index. An index
/// is the digits up to the next dot, parsed with bounds: one past model.n_layers' limit (1000) refuses the file
/// before anything is built for it; a name without digits there is not a layer's (checkGarg lists it).
int64_t countLayers(const std::vector<NamedArray>& tensors, const std::string& prefix)
{
    const int64_t maxLayers = configIntegerRange("model.n_layers").second;
    int64_t n = 0;
    for (const NamedArray& a : tensors)
        if (startsWith(a.name, prefix)) {
            const std::string rest = a.name.substr(prefix.size());
            const std::string index = rest.substr(0, rest.find('.'));
            if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
                continue;
            const std::optional<int64_t> layer = decimal(index, maxLayers - 1);
            if (!layer)
                throw Error("tensor " + a.name + " names layer " + index + ", but a model has at most "
                            + std::to_string(maxLayers) + " layers (model.n_layers)");
            n = std::max<int64_t>(n, *layer + 1);
        }
    return n;
}

std::string keyList(const std::vector<NamedArray>& tensors, size_t most = 6)
{
    std::string s;
    for (size_t i = 0; i < tensors.size() && i < most; ++i)
        s += (i ? ", " : "") + tensors[i].name + " " + shapeText(tensors[i].shape);
    if (tensors.size() > most)
        s += ", … (" + std::to_string(tensors.size()) + " tensors)";
    return s;
}

/// "garg" or "workbench" from the names.
std::string detectLayout(const std::vector<NamedArray>& tensors)
{
    if (find(tensors, "_read_in.weight") || find(tensors, "_backbone.wpe.weight"))
        return "garg";
    if (find(tensors, "read_in.weight") || find(tensors, attnWeightPath(ModelKind::Lsa, 0, AttnWeight::Q))
        || find(tensors, attnWeightPath(ModelKind::Gpt2, 0, AttnWeight::Q)))
        return "workbench";
    throw Error("the tensors (" + keyList(tensors)
                + ") are neither Garg et al.'s TransformerModel (_read_in.weight, _backbone.h.0.attn.c_attn.weight, …) "
                  "nor the workbench's gpt2 / lsa (read_in.weight, blocks.0.attn.W_Q, …)");
}

TensorSizes gargSizes(const std::vector<NamedArray>& t)
{
    const NamedArray* readIn = find(t, "_read_in.weight");
    const NamedArray* wpe = find(t, "_backbone.wpe.weight");
    if (!readIn || readIn->shape.size() != 2 || !wpe || wpe->shape.size() != 2)
        throw Error("Garg et al.'s layout needs _read_in.weight [n_embd, n_dims] and _backbone.wpe.weight "
                    "[2·n_positions, n_embd]; found " + keyList(t));
    TensorSizes s;
    s.kind = "gpt2";
    s.d_model = readIn->shape[0];
    s.d = readIn->shape[1];
    s.n_positions = wpe->shape[0];
    s.n_layers = countLayers(t, "_backbone.h.");
    if (s.n_layers == 0)
        throw Error("Garg et al.'s layout: no _backbone.h.<layer> tensors");
    return s;
}

TensorSizes workbenchSizes(const std::vector<NamedArray>& t)
{
    TensorSizes s;
    if (const NamedArray* wq = find(t, attnWeightPath(ModelKind::Gpt2, 0, AttnWeight::Q))) {
        const NamedArray* readIn = find(t, "read_in.weight");
        const NamedArray* pos = find(t, "pos_embed");
        if (!readIn || readIn->shape.size() != 2 || !pos || pos->shape.size() != 2 || wq->shape.size() != 3)
            throw Error("the workbench's gpt2 layout needs read_in.weight [d_model, d], pos_embed [n_positions, d_model] "
                        "and blocks.<l>.attn.W_Q [n_heads, d_model, d_head]; found " + keyList(t));
        s.kind = "gpt2";
        s.d_model = readIn->shape[0];
        s.d = readIn->shape[1];
        s.n_positions = pos->shape[0];
        s.n_heads = wq->shape[0];
        s.n_layers = countLayers(t, "blocks.");
    } else {
        s.kind = "lsa";
        s.n_layers = countLayers(t, "blocks.");
    }
    return s;
}

/// One checked source tensor of Garg's layout: its name and expected shape.
struct Expected {
    std::string name;
    std::vector<int64_t> shape;
    bool used = true;  ///< false: a buffer the workbench model does not use (dropped)
};

std::vector<Expected> gargExpected(const TensorSizes& s, int64_t vocabRows, const std::vector<NamedArray>& t)
{
    const int64_t D = s.d_model, P = s.n_positions;
    std::vector<Expected> e = {{"_read_in.weight", {D, s.d}}, {"_read_in.bias", {D}}, {"_backbone.wpe.weight", {P, D}}};
    if (vocabRows > 0)
        e.push_back({"_backbone.wte.weight", {vocabRows, D}, false});
    for (int64_t l = 0; l < s.n_layers; ++l) {
        const std::string h = "_backbone.h." + std::to_string(l) + ".";
        for (const char* ln : {"ln_1", "ln_2"}) {
            e.push_back({h + ln + ".weight", {D}});
            e.push_back({h + ln + ".bias", {D}});
        }
        e.push_back({h + "attn.c_attn.weight", {D, 3 * D}});
        e.push_back({h + "attn.c_attn.bias", {3 * D}});
        e.push_back({h + "attn.c_proj.weight", {D, D}});
        e.push_back({h + "attn.c_proj.bias", {D}});
        e.push_back({h + "mlp.c_fc.weight", {D, 4 * D}});
        e.push_back({h + "mlp.c_fc.bias", {4 * D}});
        e.push_back({h + "mlp.c_proj.weight", {4 * D, D}});
        e.push_back({h + "mlp.c_proj.bias", {D}});
        // Buffers of transformers < 4.31 (persistent then): the causal mask and the masked-score constant.
        if (const NamedArray* b = find(t, h + "attn.bias"))
            e.push_back({h + "attn.bias", b->shape.size() == 4 ? b->shape : std::vector<int64_t>{1, 1, P, P}, false});
        if (find(t, h + "attn.masked_bias"))
            e.push_back({h + "attn.masked_bias", {}, false});
    }
    e.push_back({"_backbone.ln_f.weight", {D}});
    e.push_back({"_backbone.ln_f.bias", {D}});
    e.push_back({"_read_out.weight", {1, D}});
    e.push_back({"_read_out.bias", {1}});
    return e;
}

/// Checks a Garg state dict against the expected keys and shapes; lists every offending key.
void checkGarg(const std::vector<NamedArray>& t, const TensorSizes& s, const std::string& where)
{
    const NamedArray* wte = find(t, "_backbone.wte.weight");
    const std::vector<Expected> expected = gargExpected(s, wte && wte->shape.size() == 2 ? wte->shape[0] : 0, t);
    std::map<std::string, const NamedArray*> byName;
    for (const NamedArray& a : t)
        byName.emplace(a.name, &a);
    const auto elements = [](const std::vector<int64_t>& shape) {
        int64_t n = 1;
        for (const int64_t d : shape)
            n *= d;  // readWeightsFile checked every shape's product for overflow
        return n;
    };
    std::vector<std::string> problems;
    std::set<std::string> known;
    for (const Expected& e : expected) {
        known.insert(e.name);
        const auto it = byName.find(e.name);
        if (it == byName.end())
            problems.push_back("missing " + e.name + " (expected " + shapeText(e.shape) + ")");
        else if (it->second->shape != e.shape && !(e.shape.empty() && elements(it->second->shape) == 1))
            problems.push_back(e.name + " is " + shapeText(it->second->shape) + ", expected " + shapeText(e.shape));
    }
    for (const NamedArray& a : t)
        if (!known.count(a.name))
            problems.push_back("unexpected " + a.name + " " + shapeText(a.shape));
    if (!problems.empty()) {
        std::string msg = where + ": the tensors do not fit Garg et al.'s TransformerModel (n_embd "
                          + std::to_string(s.d_model) + ", n_dims " + std::to_string(s.d) + ", "
                          + std::to_string(s.n_layers) + " layers): ";
        constexpr size_t kListed = 12;  // one readable line, whatever the file holds
        for (size_t i = 0; i < problems.size() && i < kListed; ++i)
            msg += (i ? "; " : "") + problems[i];
        if (problems.size() > kListed)
            msg += "; … and " + std::to_string(problems.size() - kListed) + " more";
        throw Error(msg);
    }
}

/// Garg et al.'s TransformerModel (Hugging Face GPT2Model) → the workbench gpt2's parameters.
/// Conv1D weights are [in, out]: q = x W[:, 0:D] + b[0:D], head h takes columns h·dh … (h+1)·dh − 1.
std::vector<NamedArray> gargToWorkbench(const std::vector<NamedArray>& t, const TensorSizes& s, int64_t H,
                                        std::vector<std::pair<std::string, std::string>>* mapping,
                                        std::vector<std::string>* dropped)
{
    const int64_t D = s.d_model, dh = D / H;
    auto get = [&](const std::string& name) { return toTensor(*find(t, name)); };
    std::vector<NamedArray> out;
    auto put = [&](const std::string& src, const std::string& dst, const torch::Tensor& value) {
        out.push_back(toArray(dst, value));
        if (mapping) {
            if (!mapping->empty() && mapping->back().first == src)
                mapping->back().second += ", " + dst;
            else
                mapping->emplace_back(src, dst);
        }
    };
    auto same = [&](const std::string& src, const std::string& dst) { put(src, dst, get(src)); };
    same("_read_in.weight", "read_in.weight");
    same("_read_in.bias", "read_in.bias");
    same("_backbone.wpe.weight", "pos_embed");
    for (int64_t l = 0; l < s.n_layers; ++l) {
        const std::string h = "_backbone.h." + std::to_string(l) + ".", b = blockPrefix(l);
        same(h + "ln_1.weight", b + "ln1.weight");
        same(h + "ln_1.bias", b + "ln1.bias");
        const torch::Tensor w = get(h + "attn.c_attn.weight"), bias = get(h + "attn.c_attn.bias");
        const char* names[3] = {"Q", "K", "V"};
        const AttnWeight qkv[3] = {AttnWeight::Q, AttnWeight::K, AttnWeight::V};
        for (int i = 0; i < 3; ++i)
            put(h + "attn.c_attn.weight", attnWeightPath(ModelKind::Gpt2, l, qkv[i]),
                w.narrow(1, i * D, D).reshape({D, H, dh}).permute({1, 0, 2}));
        for (int i = 0; i < 3; ++i)
            put(h + "attn.c_attn.bias", b + "attn.b_" + names[i], bias.narrow(0, i * D, D).reshape({H, dh}));
        put(h + "attn.c_proj.weight", attnWeightPath(ModelKind::Gpt2, l, AttnWeight::O), get(h + "attn.c_proj.weight").reshape({H, dh, D}));
        same(h + "attn.c_proj.bias", b + "attn.b_O");
        same(h + "ln_2.weight", b + "ln2.weight");
        same(h + "ln_2.bias", b + "ln2.bias");
        same(h + "mlp.c_fc.weight", b + "mlp.W_in");
        same(h + "mlp.c_fc.bias", b + "mlp.b_in");
        same(h + "mlp.c_proj.weight", b + "mlp.W_out");
        same(h + "mlp.c_proj.bias", b + "mlp.b_out");
    }
    same("_backbone.ln_f.weight", "ln_final.weight");
    same("_backbone.ln_f.bias", "ln_final.bias");
    same("_read_out.weight", "read_out.weight");
    same("_read_out.bias", "read_out.bias");
    if (dropped)
        for (const NamedArray& a : t)
            if (a.name == "_backbone.wte.weight" || (startsWith(a.name, "_backbone.h.")
                                                      && (a.name.size() > 10
                                                          && (a.name.rfind(".attn.bias") == a.name.size() - 10
                                                              || a.name.rfind(".attn.masked_bias")
                                                                     == a.name.size() - 17))))
                dropped->push_back(a.name);
    return out;
}

/// The inverse of gargToWorkbench for a gpt2 of `cfg`, with the buffers transformers 4.17 keeps in the state dict: wte
/// (zeros [50257, D], unused), each layer's attn.bias (the causal mask [1, 1, P, P]) and attn.masked_bias (−1e4).
std::vector<NamedArray> workbenchToGarg(const std::vector<NamedArray>& params, const ExperimentConfig& cfg,
                                        const std::string& where)
{
    auto get = [&](const std::string& name) {
        const NamedArray* a = find(params, name);
        if (!a)
            throw Error(where + ": parameter " + name + " is missing");
        return toTensor(*a);
    };
    const torch::Tensor posEmbed = get("pos_embed");
    const int64_t D = cfg.model.d_model, H = cfg.model.n_heads, P = posEmbed.size(0), L = cfg.model.n_layers;
    std::vector<NamedArray> out;
    auto put = [&](const std::string& name, const torch::Tensor& v) { out.push_back(toArray(name, v)); };
    put("_read_in.weight", get("read_in.weight"));
    put("_read_in.bias", get("read_in.bias"));
    put("_backbone.wte.weight", torch::zeros({kGpt2Vocabulary, D}));
    put("_backbone.wpe.weight", posEmbed);
    const torch::Tensor mask = torch::ones({P, P}).tril().view({1, 1, P, P});
    for (int64_t l = 0; l < L; ++l) {
        const std::string h = "_backbone.h." + std::to_string(l) + ".", b = blockPrefix(l);
        put(h + "ln_1.weight", get(b + "ln1.weight"));
        put(h + "ln_1.bias", get(b + "ln1.bias"));
        put(h + "attn.bias", mask);
        put(h + "attn.masked_bias", torch::full({}, -1e4));
        std::vector<torch::Tensor> w, bias;
        const std::pair<const char*, AttnWeight> qkv[] = {{"Q", AttnWeight::Q}, {"K", AttnWeight::K}, {"V", AttnWeight::V}};
        for (const auto& [n, weight] : qkv) {
            w.push_back(get(attnWeightPath(ModelKind::Gpt2, l, weight)).permute({1, 0, 2}).reshape({D, D}));
            bias.push_back(get(b + "attn.b_" + n).reshape({D}));
        }
        put(h + "attn.c_attn.weight", torch::cat(w, 1));
        put(h + "attn.c_attn.bias", torch::cat(bias, 0));
        put(h + "attn.c_proj.weight", get(attnWeightPath(ModelKind::Gpt2, l, AttnWeight::O)).reshape({H * (D / H), D}));
        put(h + "attn.c_proj.bias", get(b + "attn.b_O"));
        put(h + "ln_2.weight", get(b + "ln2.weight"));
        put(h + "ln_2.bias", get(b + "ln2.bias"));
        put(h + "mlp.c_fc.weight", get(b + "mlp.W_in"));
        put(h + "mlp.c_fc.bias", get(b + "mlp.b_in"));
        put(h + "mlp.c_proj.weight", get(b + "mlp.W_out"));
        put(h + "mlp.c_proj.bias", get(b + "mlp.b_out"));
    }
    put("_backbone.ln_f.weight", get("ln_final.weight"));
    put("_backbone.ln_f.bias", get("ln_final.bias"));
    put("_read_out.weight", get("read_out.weight"));
    put("_read_out.bias", get("read_out.bias"));
    return out;
}

// --- config ----------------------------------------------------------------------------------------------------

/// Value of a dotted key path in a JSON object, or nullptr.
const json* lookup(const json& j, const std::string& path)
{
    const json* cur = &j;
    std::stringstream ss(path);
    std::string part;
    while (std::getline(ss, part, '.')) {
        if (!cur->is_object() || !cur->contains(part))
            return nullptr;
        cur = &(*cur)[part];
    }
    return cur;
}

void assign(json& j, const std::string& path, const json& value)
{
    json* cur = &j;
    std::stringstream ss(path);
    std::string part;
    std::vector<std::string> parts;
    while (std::getline(ss, part, '.'))
        parts.push_back(part);
    for (size_t i = 0; i + 1 < parts.size(); ++i)
        cur = &(*cur)[parts[i]];
    (*cur)[parts.back()] = value;
}

std::string valueText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

/// The integer at a key path, or 0 when absent or not an integer (parseConfig then names the bad value).
int64_t integerAt(const json& j, const std::string& path)
{
    const json* v = lookup(j, path);
    return v && v->is_number_integer() ? v->get<int64_t>() : 0;
}

/// The config file of a request: --config, else config.yaml in the source folder or beside the source file.
std::string configPathFor(const ImportRequest& request)
{
    if (!request.config_file.empty())
        return request.config_file;
    std::error_code ec;
    const fs::path src(request.source);
    const fs::path candidate = fs::is_directory(src, ec) ? src / "config.yaml" : src.parent_path() / "config.yaml";
    return fs::exists(candidate, ec) ? candidate.string() : std::string();
}

/// Everything a plan needs that planImport and importWeights share: the read sources, mapped to workbench names.
struct Prepared {
    ImportPlan plan;
    std::vector<LoadedSource> sources;
    std::vector<std::vector<NamedArray>> params;  ///< per source: workbench parameter names (empty while keys are missing)
};

json storedConfig(const LoadedSource& s)
{
    auto it = s.file.metadata.find(kConfigMetadataKey);
    if (it == s.file.metadata.end())
        return nullptr;
    return parseBoundedJson(it->second, s.info.path + ": its " + kConfigMetadataKey + " metadata");
}

/// The sizes the tensors imply checked against the config limits (a file is refused before any model is built
/// or any tensor read); `evidence` names the tensor each size comes from.
void checkSizeLimits(const std::string& path, const TensorSizes& s, const std::vector<NamedArray>& t)
{
    if (s.kind != "gpt2")
        return;
    const auto within = [&](const std::string& key, int64_t value, const std::string& from) {
        const auto [min, max] = configIntegerRange(key);
        if (value < min || value > max) {
            const NamedArray* a = find(t, from);
            throw Error(path + ": the tensors imply " + key + " = " + std::to_string(value) + " (" + from + " "
                        + (a ? shapeText(a->shape) : std::string()) + "), outside the config limits [" + std::to_string(min)
                        + ", " + std::to_string(max) + "]");
        }
    };
    const bool garg = find(t, "_read_in.weight") != nullptr;
    const std::string readIn = garg ? "_read_in.weight" : "read_in.weight";
    within("model.d_model", s.d_model, readIn);
    within("task.d", s.d, readIn);
    within("model.n_positions", s.n_positions, garg ? "_backbone.wpe.weight" : "pos_embed");
    if (s.n_heads > 0)
        within("model.n_heads", s.n_heads, attnWeightPath(ModelKind::Gpt2, 0, AttnWeight::Q));
}

/// The gpt2 of `s` as a config (for its size: heads do not change it).
ExperimentConfig gpt2Of(const TensorSizes& s)
{
    ExperimentConfig c;
    c.model.kind = "gpt2";
    c.task.layout = "interleaved";
    c.task.d = s.d;
    c.model.d_model = s.d_model;
    c.model.n_layers = s.n_layers;
    c.model.n_heads = std::max<int64_t>(s.n_heads, 1);
    c.model.n_positions = s.n_positions;
    return c;
}

/// What an import checks on each file's names and shapes before its data is read (readWeightsFile's
/// WeightsHeaderCheck): a known layout, sizes within the config limits, Garg's names and shapes, and the model the
/// tensors imply within the memory budget.
void checkImportHeader(const WeightsFile& header, const MemoryBudget& budget)
{
    const std::string& path = budget.source();
    std::vector<NamedArray> named;
    named.reserve(header.tensors.size());
    for (const NamedArray& a : header.tensors) {
        NamedArray n;
        n.name = a.name;
        n.shape = a.shape;
        named.push_back(std::move(n));
    }
    std::vector<std::string> removed;
    TensorSizes sizes;
    std::string layout;
    try {
        named = stripPrefixes(std::move(named), removed);
        layout = detectLayout(named);
        sizes = layout == "garg" ? gargSizes(named) : workbenchSizes(named);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
    checkSizeLimits(path, sizes, named);
    if (layout == "garg")
        checkGarg(named, sizes, path);
    if (sizes.kind == "gpt2")
        checkModelMemory(gpt2Of(sizes), budget);
}

Prepared prepare(const ImportRequest& request, MemoryBudget& budget)
{
    Prepared p;
    ImportPlan& plan = p.plan;
    p.sources = loadSources(request.source, plan.warnings, budget, checkImportHeader);
    std::vector<std::vector<NamedArray>> tensors;
    for (LoadedSource& s : p.sources) {
        for (const NamedArray& a : s.file.tensors)
            for (float v : a.data)
                if (!std::isfinite(v))
                    throw Error(s.info.path + ": tensor " + a.name + " holds " + (std::isnan(v) ? "NaN" : "infinite")
                                + " values: a damaged or diverged checkpoint is not imported");
        tensors.push_back(stripPrefixes(std::move(s.file.tensors), plan.prefixes_removed));
        plan.sources.push_back(s.info);
        std::set<std::string> warned;
        for (const auto& [name, dtype] : s.file.source_dtypes)
            if (dtype != "float32" && warned.insert(dtype).second
                && dtype != "uint8" && dtype != "bool")  // uint8 / bool: the causal-mask buffers, dropped
                plan.warnings.push_back(fs::path(s.info.path).filename().string() + ": " + dtype
                                        + " tensors converted to float32"
                                        + (dtype.find("int") != std::string::npos ? " (integer weights?)" : ""));
        s.file.tensors.clear();  // the stripped copy is kept
    }
    try {
        plan.layout = detectLayout(tensors.front());
    } catch (const Error& e) {
        throw Error(p.sources.front().info.path + ": " + e.what());
    }
    for (size_t i = 1; i < tensors.size(); ++i)
        if (detectLayout(tensors[i]) != plan.layout)
            throw Error(p.sources[i].info.path + ": another layout than " + p.sources.front().info.path);
    const TensorSizes sizes = plan.layout == "garg" ? gargSizes(tensors.front()) : workbenchSizes(tensors.front());
    plan.model_kind = sizes.kind;
    if (plan.layout == "garg")
        for (size_t i = 0; i < tensors.size(); ++i)
            checkGarg(tensors[i], sizes, p.sources[i].info.path);

    // --- the config: file values, tensor values and --set, checked against each other
    const std::string configPath = configPathFor(request);
    ImportConfigFile file;
    if (!configPath.empty())
        file = readImportConfigFile(configPath);
    json stored = storedConfig(p.sources.back());
    json sets = json::object();
    for (const std::string& s : request.sets)
        applyOverride(sets, s);
    if (!file.unsupported.empty() && !lookup(sets, "task.kind"))
        throw Error(file.unsupported);

    json config;
    if (file.kind == "workbench")
        config = file.base;
    else if (!stored.is_null())
        config = stored;
    else if (sizes.kind == "gpt2") {
        ConfigRequest base;
        base.preset = "garg-linear-regression";
        base.scale = "paper";
        config = resolveConfig(base);
        config["preset"] = "";
        config["scale"] = "";
        config["training"]["curriculum"]["enabled"] = false;
    } else {
        throw Error(p.sources.front().info.path
                    + ": an lsa model's options (tied, heads, softmax layers, …) are not in its tensors: give the run's "
                      "workbench config with --config CONFIG.json");
    }
    config["description"] = "imported from " + fs::absolute(request.source).lexically_normal().string();
    config["training"]["steps"] = std::max<int64_t>(p.sources.back().info.step, 0);
    for (const auto& [key, value] : file.values)
        assign(config, key, value);

    std::map<std::string, json> fromTensors;
    if (sizes.kind == "gpt2") {
        fromTensors["model.kind"] = "gpt2";
        fromTensors["task.d"] = sizes.d;
        fromTensors["model.d_model"] = sizes.d_model;
        fromTensors["model.n_layers"] = sizes.n_layers;
        fromTensors["model.n_positions"] = sizes.n_positions;
        if (sizes.n_heads > 0)
            fromTensors["model.n_heads"] = sizes.n_heads;
    }
    const std::string tensorWhere = fs::path(p.sources.front().info.path).filename().string();
    for (const auto& [key, value] : fromTensors) {
        const json* fromFile = file.values.count(key) ? &file.values.at(key)
                               : file.kind == "workbench" || !stored.is_null() ? lookup(config, key)
                                                                               : nullptr;
        const json* fromSet = lookup(sets, key);
        const bool fileDiffers = fromFile && *fromFile != value && !(key == "model.n_positions" && fromFile->is_number()
                                                                      && fromFile->get<int64_t>() == 0);
        const bool setDiffers = fromSet && *fromSet != value;
        if (fileDiffers || setDiffers)
            throw Error(key + ": the config file " + (configPath.empty() ? std::string("(none)") : configPath) + " says "
                        + (fromFile ? valueText(*fromFile) : std::string("nothing")) + ", --set says "
                        + (fromSet ? valueText(*fromSet) : std::string("nothing")) + ", the tensors of " + tensorWhere
                        + " say " + valueText(value));
        assign(config, key, value);
    }
    if (sizes.kind == "gpt2") {
        config["task"]["layout"] = "interleaved";
        const bool nGiven = file.values.count("task.n_context") || lookup(sets, "task.n_context") || file.kind == "workbench"
                            || !stored.is_null();
        if (!nGiven) {
            const int64_t n = (sizes.n_positions - 1) / 2;
            config["task"]["n_context"] = n;
            plan.warnings.push_back("task.n_context not given: N = " + std::to_string(n) + ", the most the model's "
                                    + std::to_string(sizes.n_positions) + " positions take (--set task.n_context=N)");
        }
    }
    const bool haveConfig = !file.kind.empty() || !stored.is_null();
    if (sizes.kind == "gpt2" && sizes.n_heads == 0 && !file.values.count("model.n_heads") && !lookup(sets, "model.n_heads"))
        plan.missing.push_back("model.n_heads");
    if (!haveConfig && !lookup(sets, "task.kind"))
        plan.missing.push_back("task.kind");
    for (const std::string& s : request.sets)
        applyOverride(config, s);

    // The heads count only when something gave them (not the base preset's default).
    const bool headsMissing = std::find(plan.missing.begin(), plan.missing.end(), "model.n_heads") != plan.missing.end();
    const int64_t H = headsMissing ? 0 : integerAt(config, "model.n_heads");
    if (plan.layout == "garg" && H > 0 && sizes.d_model % H != 0)
        throw Error("model.n_heads: " + std::to_string(H) + " (" + (lookup(sets, "model.n_heads") ? std::string("--set")
                                                                    : configPath.empty() ? std::string("the config")
                                                                                         : configPath)
                    + ") does not divide the width of the tensors, n_embd = " + std::to_string(sizes.d_model));
    if (plan.layout == "garg")
        for (size_t i = 0; i < tensors.size(); ++i)
            p.params.push_back(gargToWorkbench(tensors[i], sizes, std::max<int64_t>(H, 1), i == 0 ? &plan.mapping : nullptr,
                                               i == 0 ? &plan.dropped : nullptr));
    else {
        for (const NamedArray& a : tensors.front())
            plan.mapping.emplace_back(a.name, a.name);
        p.params = std::move(tensors);
    }

    std::ostringstream inferred;
    inferred << sizes.kind;
    if (sizes.kind == "gpt2")
        inferred << ", " << sizes.n_layers << " layers, d_model " << sizes.d_model << ", "
                 << (H > 0 ? std::to_string(H) : std::string("?")) << " heads, " << sizes.n_positions << " positions, d = "
                 << sizes.d << ", N = " << integerAt(config, "task.n_context");
    else
        inferred << ", " << sizes.n_layers << " layers";
    if (config.contains("task") && config["task"].contains("kind") && !(plan.missing.size() && !haveConfig))
        inferred << ", task " << valueText(config["task"]["kind"]);
    plan.inferred = inferred.str();

    if (!plan.missing.empty()) {
        // Check the user's --set values now, with stand-ins for what is missing, so a misspelt key
        // (model.n_head) is named at once instead of after the missing values are given.
        json probe = config;
        for (const std::string& key : plan.missing)
            assign(probe, key, key == "task.kind" ? json("linear_regression") : json(1));
        (void)parseConfig(probe);
        p.params.clear();
        return p;
    }
    if (const json* kind = lookup(config, "task.kind"); kind && *kind == "fewshot_classification")
        throw Error("task.kind: importing few-shot classification models is not supported (regression models only)");
    const ExperimentConfig cfg = parseConfig(config);  // throws naming the key path
    plan.config_json = toJson(cfg).dump(2);
    // The model the config builds, refused before it is built when over the budget (a --set or a config file may
    // size it past what the tensors did).
    checkModelMemory(cfg, budget);
    // Strict load into the model the config builds: every missing, unexpected or wrongly shaped parameter is named.
    ModelHandle model = makeModel(cfg, seeds::init(cfg.seed));
    for (size_t i = 0; i < p.params.size(); ++i)
        loadParams(*model.module, p.params[i], p.sources[i].info.path);
    return p;
}

std::string isoNowUtc()
{
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

json provenanceJson(const ImportPlan& plan)
{
    json j;
    j["trained_here"] = false;
    j["imported"] = isoNowUtc();
    j["layout"] = plan.layout;
    j["sources"] = json::array();
    for (const ImportSource& s : plan.sources)
        j["sources"].push_back({{"path", s.path}, {"format", s.format}, {"sha256", s.sha256}, {"step", s.step}});
    j["mapping"] = json::object();
    for (const auto& [src, dst] : plan.mapping)
        j["mapping"][src] = dst;
    j["dropped"] = plan.dropped;
    j["prefixes_removed"] = plan.prefixes_removed;
    j["warnings"] = plan.warnings;
    return j;
}

/// Runs `body`, turning what LibTorch and the allocator throw into one line about `source` (icl::Error passes).
template <class Body>
auto withSourceErrors(const std::string& source, const MemoryBudget& budget, Body body) -> decltype(body())
{
    try {
        return body();
    } catch (const Error&) {
        throw;
    } catch (const c10::Error& e) {
        std::string what = e.what_without_backtrace();
        what = what.substr(0, what.find('\n'));
        throw Error(source + ": cannot be imported: " + what);
    } catch (const nlohmann::json::exception& e) {  // e.g. a name that is not UTF-8 where JSON is written
        throw Error(source + ": cannot be imported: " + e.what());
    } catch (const std::bad_alloc&) {
        throw Error(source + ": refused: the memory to import it could not be allocated (" + formatBytes(budget.used())
                    + " in use of a budget of " + formatBytes(budget.limit()) + "; --max-memory or ICL_MAX_MEMORY)");
    }
}

ImportResult importWeightsUnchecked(const ImportRequest& request, const ImportCallback& callback,
                                    MemoryBudget& budget);

} // namespace

ImportPlan planImport(const ImportRequest& request)
{
    const ScopedMemoryLimit limit(request.max_memory);  // also for the model makeModel builds (its own check)
    MemoryBudget budget(request.source, request.max_memory);
    return withSourceErrors(request.source, budget, [&] { return prepare(request, budget).plan; });
}

ImportResult importWeights(const ImportRequest& request, const ImportCallback& callback)
{
    const ScopedMemoryLimit limit(request.max_memory);  // also for the model makeModel builds (its own check)
    MemoryBudget budget(request.source, request.max_memory);
    return withSourceErrors(request.source, budget, [&] { return importWeightsUnchecked(request, callback, budget); });
}

namespace {

ImportResult importWeightsUnchecked(const ImportRequest& request, const ImportCallback& callback, MemoryBudget& budget)
{
    if (request.out_path.empty())
        throw Error("no output file given (--out RUN.h5)");
    const std::string& out = request.out_path;
    std::error_code ec;
    if (fs::exists(out, ec) && !request.force)
        throw Error(out + ": file exists (use --force to replace it)");
    const RunFileLock claim(out);  // not while a trainer writes it
    ImportResult result;
    Prepared p = prepare(request, budget);
    result.plan = p.plan;
    for (const ImportSource& s : p.plan.sources)
        if (fs::exists(out, ec) && fs::equivalent(out, s.path, ec))
            throw Error(out + ": is the source checkpoint itself; write the experiment file elsewhere");
    if (!p.plan.missing.empty()) {
        std::string keys;
        for (const auto& k : p.plan.missing)
            keys += (keys.empty() ? "" : ", ") + k;
        throw Error("the checkpoint does not say " + keys + ": give them with --set (e.g. --set " + p.plan.missing.front()
                    + "=…) or a config file with --config");
    }
    const ExperimentConfig cfg = parseConfig(json::parse(p.plan.config_json));  // written by prepare
    configureThreads(request.threads);
    const int64_t total = int64_t(p.params.size());
    auto report = [&](int64_t done, const std::string& message) { return !callback || callback(done, total, message); };

    const std::string tmp = out + ".import-tmp";
    auto cleanup = [&] {
        fs::remove(tmp, ec);
        fs::remove(tmp + ".tmp", ec);
    };
    cleanup();
    try {
        if (!report(0, "drawing " + std::to_string(cfg.eval.n_prompts) + " evaluation prompts and fitting baselines")) {
            result.cancelled = true;
            return result;
        }
        createExperimentFile(tmp, p.plan.config_json, true);
        storeFixedTaskArrays(cfg, tmp);
        const RegressionEvaluation evaluation(cfg, torch::kCPU);
        checkModelMemory(cfg, budget);
        ModelHandle model = makeModel(cfg, seeds::init(cfg.seed));
        for (int64_t i = 0; i < total; ++i) {
            const int64_t step = p.sources[size_t(i)].info.step;
            if (!report(i, "evaluating checkpoint " + std::to_string(step))) {
                cleanup();
                result.cancelled = true;
                return result;
            }
            loadParams(*model.module, p.params[size_t(i)], p.sources[size_t(i)].info.path);
            MetricsRow row;
            const double eval = evaluation.evaluate(model, row);
            const double nan = std::numeric_limits<double>::quiet_NaN();
            row["step"] = double(step);
            row["eval_loss"] = eval;
            row["train_loss"] = nan;  // not known: the run was trained elsewhere
            row["lr"] = nan;
            row["grad_norm"] = nan;
            row["wall_time_s"] = 0.0;
            CheckpointData checkpoint;
            checkpoint.step = step;
            checkpoint.train_loss = nan;
            checkpoint.params = paramsToArrays(*model.module);
            commitToExperimentFile(tmp, {row}, &checkpoint);
            result.steps.push_back(step);
            result.eval_loss = eval;
        }
        storeImportProvenance(tmp, provenanceJson(p.plan).dump(2));
        if (!report(total, "done")) {
            cleanup();
            result.cancelled = true;
            result.steps.clear();
            return result;
        }
        fs::rename(tmp, out, ec);
        if (ec)
            throw Error(out + ": cannot replace with " + tmp + " (" + ec.message() + ")");
    } catch (...) {
        cleanup();
        throw;
    }
    return result;
}

} // namespace

int64_t exportWeights(const std::string& run_path, const std::string& out_path, int64_t step, const std::string& layout)
{
    const std::string ext = fs::path(out_path).extension().string();
    const bool safetensors = ext == ".safetensors";
    if (!safetensors && ext != ".pt" && ext != ".pth")
        throw Error(out_path + ": unknown extension \"" + ext + "\" (.safetensors, or .pt / .pth for PyTorch)");
    if (layout != "workbench" && layout != "garg")
        throw Error("--layout: expected workbench or garg, got \"" + layout + "\"");
    const RunSummary summary = readRunSummary(run_path);
    if (summary.checkpoints.empty())
        throw Error(run_path + ": no checkpoints to export");
    step = checkpointToRead(summary, step);
    const ExperimentConfig cfg = parseConfig(parseBoundedJson(summary.config_json, run_path + ": /config"));
    const CheckpointData checkpoint = readCheckpoint(run_path, step, CheckpointParts::ParamsOnly);
    std::vector<NamedArray> tensors;
    std::map<std::string, std::string> metadata;
    if (layout == "workbench") {
        tensors = checkpoint.params;
        metadata[kConfigMetadataKey] = toJson(cfg).dump();
        metadata["icl_workbench_step"] = std::to_string(step);
        if (safetensors)
            metadata["format"] = "pt";
    } else {
        if (kindOf(cfg.model) != ModelKind::Gpt2 || kindOf(cfg.task) == TaskKind::FewshotClassification)
            throw Error("--layout garg: Garg et al.'s TransformerModel is the gpt2 regression model; " + run_path
                        + " holds a " + cfg.model.kind + (cfg.task.kind == "fewshot_classification" ? " classifier" : "")
                        + " (use --layout workbench)");
        // Garg's layout adds the unused wte [50257, d_model] (zeros): the run file's config sizes it.
        const MemoryBudget budget(run_path);
        budget.check(checked::mul(checked::mul(kGpt2Vocabulary, uint64_t(cfg.model.d_model), run_path), 8, run_path),
                     "the wte [" + std::to_string(kGpt2Vocabulary) + ", " + std::to_string(cfg.model.d_model)
                         + "] of Garg's layout (as a tensor and as float32 values)");
        tensors = workbenchToGarg(checkpoint.params, cfg, run_path);
        if (safetensors) {  // a .pt stays a bare state dict, as Garg's code loads it
            metadata["format"] = "pt";
            metadata["icl_workbench_step"] = std::to_string(step);
        }
    }
    if (safetensors)
        writeSafetensors(out_path, tensors, metadata);
    else
        writeTorchZip(out_path, tensors, metadata);
    return step;
}

} // namespace icl
