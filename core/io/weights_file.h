#pragma once
// Foreign weight files, torch-free: PyTorch `torch.save` zip archives (read with a restricted unpickler that
// treats the pickle as data, never code), safetensors, NumPy .npz / .npy; and writers for safetensors and
// PyTorch zip checkpoints that Python reads with no workbench code. The format is always detected from the
// bytes, never from the file name. Thread affinity: any thread (no shared state).
//
// Formats (docs/weights-formats.md):
//   - PyTorch zip (torch.save, PyTorch >= 1.6): a zip archive "<name>/data.pkl" (pickle protocol 2),
//     "<name>/data/<key>" (raw little-endian storages), "<name>/version"; tensors are rebuilt with
//     torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...).
//   - safetensors: u64 little-endian header length n, n bytes of JSON header
//     {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data.
//   - NumPy: .npy (magic "\x93NUMPY", version, header dict literal, data); .npz is a zip of .npy files.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/io/experiment_file.h"  // NamedArray
#include "core/io/memory_budget.h"

namespace icl {

/// Container format of a weights file, detected from its bytes by detectWeightsFormat.
enum class WeightsFormat {
    TorchZip,     ///< torch.save zip archive (PyTorch >= 1.6)
    Safetensors,  ///< Hugging Face safetensors
    Npz,          ///< numpy.savez / savez_compressed
    Npy,          ///< one numpy.save array
    TorchScript,  ///< torch.jit.save archive (zip holding constants.pkl / code/): recognised, refused
    TorchLegacy,  ///< pre-1.6 torch.save (pickle stream with a magic number, not a zip): recognised, refused
    Unknown,
};

/// Stable lower-case name of a format: "pytorch-zip", "safetensors", "npz", "npy", "torchscript",
/// "pytorch-legacy", "unknown".
std::string weightsFormatName(WeightsFormat format);

/// The format of the file at `path`, from its first bytes (and, for zip archives, their entry names).
/// Throws icl::Error when the file cannot be opened or read.
WeightsFormat detectWeightsFormat(const std::string& path);

/// Every tensor of one weights file, converted to float32.
struct WeightsFile {
    WeightsFormat format = WeightsFormat::Unknown;
    /// Tensors as stored (names unchanged: prefixes such as "module." are kept), converted to float32,
    /// row-major and contiguous whatever the source's storage offset and stride. Order: as in the file.
    std::vector<NamedArray> tensors;
    /// Source dtype of each tensor: "float32", "float16", "bfloat16", "float64", "int64", "int32",
    /// "int16", "int8", "uint8", "bool".
    std::map<std::string, std::string> source_dtypes;
    /// PyTorch files: "" for a bare state dict (a dict of tensors, e.g. an OrderedDict), else the key of
    /// the outer dict that held it ("model_state_dict", "state_dict" or "model").
    std::string container_key;
    /// PyTorch files: the outer dict's integer "train_step" (Garg et al.'s state.pt), when present.
    std::optional<int64_t> train_step;
    /// safetensors: the "__metadata__" map; PyTorch files: the outer dict's string values (e.g. the
    /// workbench's own "icl_workbench_config"). Empty otherwise.
    std::map<std::string, std::string> metadata;
};

/// Called by readWeightsFile once a file's headers are read and checked, before any tensor data is inflated,
/// read or allocated: `header` is what readWeightsFile will return, every tensor with its name and shape but
/// empty data. Throw (icl::Error) to refuse the file; the import checks the model the tensors imply here.
using WeightsHeaderCheck = std::function<void(const WeightsFile& header)>;

/// Reads every tensor of the weights file at `path` (format from detectWeightsFormat), charging `budget` before
/// each allocation the file's contents size: decompressed zip entries (before they are inflated), the pickle's
/// values and containers, a safetensors header, and every tensor at its materialised float32 size (a stride-0
/// view of one float counts all its elements), all tensors of the file at once before the first is read.
/// Throws icl::Error with a one-line message naming the file and the problem for: an unknown, truncated or
/// damaged file; a TorchScript or legacy PyTorch file (the message says what the file is and gives the one
/// Python line that converts it); a pickle that names a global outside the allow-list (the message names it;
/// nothing is called); a pickle that is not a state dict, or larger than 256 MB; safetensors headers that lie
/// (length past the end of the file or > 100 MB, nesting deeper than 64, offsets past the data, overlapping
/// ranges, a size that does not match the shape, unknown dtype); NumPy arrays of an unsupported dtype or a size
/// other than their shape's; "FILE: refused: … would need 6.71 GB, over the memory budget of …" for a file over
/// the budget; whatever `check` throws. Names from the file are escaped in messages (escapeForDisplay).
WeightsFile readWeightsFile(const std::string& path, MemoryBudget& budget, const WeightsHeaderCheck& check = {});

/// readWeightsFile with a budget of its own (the default: ICL_MAX_MEMORY, else a quarter of the RAM).
WeightsFile readWeightsFile(const std::string& path);

/// Writes `tensors` (float32) as a safetensors file: dtype "F32", keys in the given order, `metadata` as
/// "__metadata__" (omitted when empty). Throws icl::Error when the file cannot be written.
void writeSafetensors(const std::string& path, const std::vector<NamedArray>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Writes `tensors` (float32) as a PyTorch zip checkpoint that `torch.load` reads (PyTorch >= 1.6, pickle
/// protocol 2, one storage per tensor, archive folder "archive"): a bare collections.OrderedDict of tensors
/// when `metadata` is empty (what `model.load_state_dict(torch.load(path))` expects), otherwise a dict
/// {"state_dict": OrderedDict, key: str for each metadata entry}. Throws icl::Error when it cannot be written.
void writeTorchZip(const std::string& path, const std::vector<NamedArray>& tensors,
                   const std::map<std::string, std::string>& metadata = {});

} // namespace icl
