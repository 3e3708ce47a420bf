#pragma once
// Activation capture of many prompts, streamed to HDF5 in chunks (issue 5: "only what is asked for;
// memory estimate before a large capture; captures of many prompts stream to the experiment file in
// chunks"). Torch-free facade for the GUI and `icl-cli analyze`.
//
// Intended usage (worker thread):
//     const CaptureEstimate e = estimateCapture("run.h5", {"resid_post.3", "attn.pattern.0"}, 10000);
//     CaptureOptions o;  o.names = e.names;  o.n_prompts = 10000;  o.out_path = "acts.h5";
//     const CaptureResult r = captureActivations("run.h5", o, [&](int64_t done, int64_t total) { return !stop; });

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace icl {

/// Size of a capture before it runs. Shapes are per prompt (the batch dimension left out), for the
/// run's task size N: e.g. resid_post.{l} [T, D], attn.pattern.{l} [H, T, T_keys].
struct CaptureEstimate {
    std::vector<std::string> names;
    std::vector<std::vector<int64_t>> shapes;  ///< per name, one prompt's shape
    int64_t bytes_per_prompt = 0;              ///< float32 bytes of every requested activation of one prompt
    int64_t total_bytes = 0;                   ///< bytes written: n_prompts · bytes_per_prompt (+ the prompts)
    int64_t chunk_bytes = 0;                   ///< bytes held in memory at once: chunk · bytes_per_prompt
    int64_t n_prompts = 0;
    int64_t chunk = 0;
};

struct CaptureOptions {
    /// Activation names (docs/architecture.md): embed, resid_pre.{l}, resid_post.{l}, attn.pattern.{l},
    /// attn.q/k/v.{l}, attn.out.{l}, attn.result.{l}, mlp.out.{l}. Only these are kept.
    std::vector<std::string> names;
    int64_t n_prompts = 1000;
    uint64_t seed = 1;              ///< prompts: samplePrompts(task, chunk, mixSeed(seed, chunk index))
    int64_t chunk = 256;            ///< prompts per forward pass and per HDF5 write
    int64_t checkpoint_step = -1;   ///< −1 = the last checkpoint
    /// Where to write: empty = into the experiment file under /analysis/<kind>/<id> (copy-on-write, so
    /// an interrupted capture leaves the file as it was); else a new HDF5 file.
    std::string out_path;
    bool overwrite = false;          ///< replace an existing out_path
    std::string kind = "activations";  ///< group under /analysis in the experiment file
    /// Refuse a capture whose written size (total_bytes) exceeds this. Default 8 GiB.
    int64_t max_total_bytes = int64_t(8) << 30;
    /// Refuse a chunk whose captured tensors (chunk_bytes) exceed this in memory. Default 1 GiB.
    int64_t max_chunk_bytes = int64_t(1) << 30;
};

/// What a capture wrote: datasets <name> [n_prompts, shape…] (float32, chunked along prompts), x
/// [n_prompts, N+1, d] and y [n_prompts, N+1] (the prompts), with attrs checkpoint_step, seed, names
/// (JSON list), created.
struct CaptureResult {
    std::string file;   ///< the file written
    std::string group;  ///< "/" for an out_path, else "/analysis/<kind>/<id>"
    int64_t checkpoint_step = 0;
    CaptureEstimate estimate;
};

/// Shapes and sizes of capturing `names` for `n_prompts` prompts of the run at `path` (one forward
/// pass of one prompt). Throws icl::Error for a name the model does not produce (listing the names
/// it has), a bad file, n_prompts < 1 or chunk < 1.
CaptureEstimate estimateCapture(const std::string& path, const std::vector<std::string>& names, int64_t n_prompts,
                                int64_t chunk = 256, int64_t checkpoint_step = -1);

/// Runs the capture, chunk by chunk: each chunk is one forward pass (no gradients) whose requested
/// activations are appended to extendible HDF5 datasets, so memory stays at one chunk. Progress gets
/// (prompts done, n_prompts) after each chunk and returns false to cancel: icl::Error("cancelled"),
/// and nothing is left behind (no out_path, the experiment file unchanged). Throws icl::Error with
/// the estimate when it exceeds max_total_bytes or max_chunk_bytes, for an existing out_path
/// without overwrite, and as estimateCapture does.
/// Thread affinity: any one thread.
CaptureResult captureActivations(const std::string& path, const CaptureOptions& options,
                                 const std::function<bool(int64_t, int64_t)>& progress = {});

/// "1.5 GiB", "320 KiB", "12 B".
std::string formatBytes(int64_t bytes);

} // namespace icl
