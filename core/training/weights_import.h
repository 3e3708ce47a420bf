#pragma once
// Import of foreign checkpoints into an experiment file, and export of a run's weights (torch-free header;
// LibTorch in weights_import.cpp). Used by `icl-cli import`, `icl-cli export-weights` and the GUI's
// File ▸ Import checkpoint… Thread affinity: any thread; one call per output file at a time.
//
// Sources: a weights file (PyTorch zip, safetensors, .npz; see core/io/weights_file.h) or a folder in Garg et
// al.'s layout (model_<step>.pt and/or state.pt, config.yaml). Layouts of the tensor names:
//   - "garg": Garg et al.'s TransformerModel over Hugging Face GPT2Model (_read_in, _backbone.wpe,
//     _backbone.h.{i}.ln_1 / attn.c_attn / attn.c_proj / ln_2 / mlp.c_fc / mlp.c_proj, _backbone.ln_f,
//     _read_out), mapped onto the workbench gpt2 model (Conv1D weights are [in, out]; c_attn holds q, k, v
//     side by side, split into heads; wte, attn.bias and attn.masked_bias are dropped);
//   - "workbench": the workbench's own gpt2 / lsa parameter names (what export-weights writes).
// DDP and torch.compile prefixes ("module.", "_orig_mod.", nested) are removed first.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace icl {

/// What to import and where.
struct ImportRequest {
    std::string source;       ///< a weights file or a Garg run folder
    /// Garg's config.yaml (its model: and training.task) or a workbench JSON config; "" = SOURCE/config.yaml
    /// (or the config.yaml beside a single file) when present.
    std::string config_file;
    std::vector<std::string> sets;  ///< "key.path=value" overrides of the resolved config, applied last
    std::string out_path;           ///< experiment file to write (RUN.h5)
    bool force = false;             ///< replace an existing out_path
    int threads = 0;                ///< LibTorch intra-op threads for the evaluation; 0 = hardware concurrency
    /// Bytes the import may allocate on the files' say-so (--max-memory): decompressed entries, pickles, tensors,
    /// the model they imply; 0 = defaultMemoryBudget() (ICL_MAX_MEMORY, else a quarter of the RAM).
    uint64_t max_memory = 0;
};

/// One source file of an import.
struct ImportSource {
    std::string path;
    std::string format;   ///< weightsFormatName(): "pytorch-zip", "safetensors", "npz"
    std::string sha256;   ///< lower-case hex digest of the file's bytes
    int64_t step = 0;     ///< checkpoint step it becomes (model_<step>.pt, state.pt's train_step, else 0)
};

/// What an import will do, found without writing anything (the GUI's dialog shows it before importing).
struct ImportPlan {
    std::string layout;                      ///< "garg" or "workbench"
    std::string model_kind;                  ///< "gpt2" or "lsa"
    std::vector<ImportSource> sources;       ///< one per checkpoint, in step order
    /// Source tensor name (prefixes removed) → workbench parameter name(s) it becomes, e.g.
    /// "_backbone.h.0.attn.c_attn.weight" → "blocks.0.attn.W_Q, blocks.0.attn.W_K, blocks.0.attn.W_V".
    std::vector<std::pair<std::string, std::string>> mapping;
    std::vector<std::string> dropped;        ///< source tensors the model does not use (wte, attn.bias, …)
    std::vector<std::string> prefixes_removed;  ///< "module.", "_orig_mod." when found
    std::vector<std::string> warnings;       ///< e.g. "float16 weights converted to float32"
    /// Config key paths no file gives a value for (e.g. "model.n_heads"): --set them (the dialog asks).
    /// importWeights refuses a plan with missing keys.
    std::vector<std::string> missing;
    std::string inferred;                    ///< one line: "gpt2, 12 layers, d_model 256, 8 heads, d = 20, N = 40"
    std::string config_json;                 ///< the resolved experiment config (valid when missing is empty)
};

/// Reads the sources and the config and builds the plan, within one memory budget (ImportRequest::max_memory).
/// Each file's names and shapes are checked before its data is read: a known layout, layer indices and sizes
/// within the config limits (model.n_layers ≤ 1000, model.d_model ≤ 65536, …), and the model they imply
/// within the budget. Throws icl::Error (one line, names from files escaped) for an unreadable or refused source
/// file (see readWeightsFile), an unknown layout, a step in a file name or metadata out of range, sizes outside
/// the config limits, a model over the budget ("FILE: refused: its model (gpt2, …) would need …"), tensors that
/// do not fit the model (the message lists the first 12 missing, unexpected or wrongly shaped tensors with their
/// shapes and the expected shapes), a config file over 16 MB or nested deeper than 64 levels, a YAML number out
/// of the range of its key (quoted as written), and values on which config file, --set and tensors disagree (the
/// message names all three). LibTorch and allocation errors become "SOURCE: …" lines too.
ImportPlan planImport(const ImportRequest& request);

/// Progress of an import: checkpoint `done` of `total` (then evaluated); return false to cancel.
using ImportCallback = std::function<bool(int64_t done, int64_t total, const std::string& message)>;

/// What importWeights wrote.
struct ImportResult {
    ImportPlan plan;
    bool cancelled = false;        ///< the callback asked to stop: nothing was written
    std::vector<int64_t> steps;    ///< checkpoint steps written
    double eval_loss = 0.0;        ///< 0.5·MSE of the last checkpoint on the run's evaluation prompts
};

/// Imports: plans, loads every checkpoint strictly into the workbench model, evaluates it on the run's
/// evaluation prompts and baselines (as training would), and writes an ordinary experiment file with
/// /import provenance (source paths, formats, SHA-256 of each source file, key mapping, "imported: not
/// trained here"). Writes RUN.h5.import-tmp and renames it at the end: a refused or cancelled import leaves
/// no RUN.h5 and never touches an existing one unless `force`. Throws icl::Error as planImport, and when
/// out_path exists without force or the plan has missing keys.
ImportResult importWeights(const ImportRequest& request, const ImportCallback& callback = {});

/// Writes the weights of checkpoint `step` (−1 = the last one not damaged) of run `run_path` to `out_path`: safetensors
/// when it ends in ".safetensors", a PyTorch zip checkpoint when it ends in ".pt" / ".pth". Layout
/// "workbench": the workbench's parameter names, with the run's config in the file's metadata
/// ("icl_workbench_config"), so importing it back is bitwise identical; "garg" (gpt2 regression runs only):
/// a state dict that Garg et al.'s TransformerModel.load_state_dict accepts with strict=True (a bare
/// OrderedDict in a .pt, as transformers 4.17 names it: the unused wte as zeros [50257, d_model] (GPT2Config's
/// default vocabulary), each layer's attn.bias as the causal mask [1, 1, P, P] and attn.masked_bias −1e4,
/// all float32; load_state_dict copies them into the buffers' own dtypes).
/// Throws icl::Error for an unknown extension or layout, a run that has no such checkpoint, or a garg
/// layout on a model it does not fit.
/// Returns the step written.
int64_t exportWeights(const std::string& run_path, const std::string& out_path, int64_t step,
                      const std::string& layout);

} // namespace icl
