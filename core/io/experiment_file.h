#pragma once
// The experiment file (HDF5), torch-free. Schema in DESIGN.md:
//   /  attrs format="icl-workbench", format_version=1, app_version, created
//   /config attr json;  /checkpoints/<step:09d>/{params,optimizer};  /metrics/<series>
// Every write is a commit: the file is copied to RUN.h5.tmp, changed, flushed and renamed over
// RUN.h5, so a crash leaves the previous complete version readable.
// Thread affinity: any thread, but one writer per file; HDF5 calls are serialised by a global mutex.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/types/run_summary.h"

namespace icl {

inline constexpr const char* kFileFormat = "icl-workbench";
inline constexpr int kFileFormatVersion = 1;

/// A float32 array with an explicit row-major shape (a parameter or an optimizer state tensor).
struct NamedArray {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};

/// Everything one checkpoint holds.
struct CheckpointData {
    int64_t step = 0;
    double train_loss = 0.0;
    double wall_time_s = 0.0;
    std::vector<NamedArray> params;     ///< names as in named_parameters(): "blocks.0.attn.w_q"
    std::vector<NamedArray> optimizer;  ///< "<param>/exp_avg", "<param>/exp_avg_sq", ...
    std::map<std::string, double> optimizer_scalars;  ///< e.g. "<param>/step"
};

/// Creates a new experiment file holding the root attributes and /config. Throws icl::Error when
/// the file exists and `overwrite` is false, or when it cannot be written.
void createExperimentFile(const std::string& path, const std::string& config_json, bool overwrite);

/// Opens and validates an experiment file; throws icl::Error with a one-line reason for a missing,
/// truncated, damaged or foreign file (wrong `format` attribute or unsupported version).
RunSummary readRunSummary(const std::string& path);

/// Reads one checkpoint (params and optimizer state). Throws icl::Error if absent.
CheckpointData readCheckpoint(const std::string& path, int64_t step);

/// One row per evaluation: series name -> value. All rows of a file carry the same series.
using MetricsRow = std::map<std::string, double>;

/// Appends metric rows and, optionally, a checkpoint in one crash-safe commit.
/// `truncate_after_step` >= 0 first drops metric rows whose "step" exceeds it (used on resume).
void commitToExperimentFile(const std::string& path, const std::vector<MetricsRow>& rows,
                            const CheckpointData* checkpoint, int64_t truncate_after_step = -1);

/// Writes fixed arrays of the task under /task/ (e.g. "phi/0/B_1": layer 1 of the representation Φ*_0
/// of Guo et al., so other tools can recompute Φ*(x)); one crash-safe commit. Existing names are replaced.
void storeTaskArrays(const std::string& path, const std::vector<NamedArray>& arrays);

/// Every array under /task/ with names relative to it ("phi/0/B_1"); empty when the file has none.
std::vector<NamedArray> readTaskArrays(const std::string& path);

/// Writes a JSON result under /analysis/<kind>/<id> with attrs checkpoint_step, seed, created and
/// options json. Returns the id used.
std::string storeAnalysis(const std::string& path, const std::string& kind, int64_t checkpoint_step,
                          uint64_t seed, const std::string& options_json, const std::string& result_json);

/// Records where an imported run came from under /import (attr json: source paths, formats, SHA-256 of each source
/// file, key mapping, "trained_here": false); one crash-safe commit. Files of runs trained here have no /import.
void storeImportProvenance(const std::string& path, const std::string& provenance_json);

} // namespace icl
