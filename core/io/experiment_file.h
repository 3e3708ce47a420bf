#pragma once
// The experiment file (HDF5), torch-free. Schema in docs/file-format.md:
//   /  attrs format="icl-workbench", format_version=2, app_version, created
//   /config attr json;  /checkpoints/<step:09d>/{params,optimizer};  /metrics/<series>
// Format version 2 adds SHA-256 checksums (docs/file-integrity.md); readers refuse what does not match
// ("RUN.h5: damaged: … (checksum mismatch)"); version 1 files (no checksums) still open. Every write is a
// crash-safe commit (core/io/hdf5_journal.h); every reader checks type, shape and size first (hdf5_read.h).
// Thread affinity: any thread, but one writer per file; HDF5 calls are serialised by a global mutex.
//
// Intended usage: readRunSummary() is *the* way to open a file (format, version, checksums, config
// validation); readCheckpoint() then verifies the checkpoint it reads; verifyExperimentFile() checks all.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/types/run_summary.h"

namespace icl {

inline constexpr const char* kFileFormat = "icl-workbench";
inline constexpr int kFileFormatVersion = 2;
/// Oldest format version this build reads (version 1: no checksums).
inline constexpr int kOldestFileFormatVersion = 1;

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

/// Opens and validates an experiment file: the one open path of every command and page. Checks the
/// format and version, verifies the checksums of the root, /config, /metrics and /import, parses and
/// validates the config (parseConfig). Throws icl::Error with one line ("RUN.h5: damaged: /config
/// (checksum mismatch)", "RUN.h5: /config: training.lr: …") for a missing, truncated, damaged or foreign
/// file. A checkpoint or analysis whose own checksum fails does not fail the file: it is listed in
/// RunSummary::damaged and flagged in CheckpointInfo::damaged, and the rest stays usable.
RunSummary readRunSummary(const std::string& path);

/// The step of the last checkpoint whose record is not damaged (CheckpointInfo::damaged): the checkpoint an
/// analysis, an evaluation or an export uses when none is named. Throws icl::Error when `summary` holds no
/// checkpoint, or when every one is damaged (naming the last one's damage).
int64_t lastUsableCheckpoint(const RunSummary& summary);

/// The checkpoint an analysis reads for a requested `step`: the step itself when `summary` lists it, the last
/// usable one (lastUsableCheckpoint) for -1. Throws icl::Error naming the file and the saved steps for a step
/// the file does not hold or one below -1 (a damaged step is refused later, by readCheckpoint, with its damage).
int64_t checkpointToRead(const RunSummary& summary, int64_t step);

/// What readCheckpoint reads: a resumed run needs the optimizer state; an analysis, an evaluation or an export
/// reads the parameters only, so damaged optimizer state does not stand in its way.
enum class CheckpointParts { ParamsAndOptimizer, ParamsOnly };

/// Reads one checkpoint (params and, unless `parts` says ParamsOnly, optimizer state) and verifies every array
/// it reads against the checkpoint's checksums. Throws icl::Error if absent or damaged ("RUN.h5: damaged:
/// /checkpoints/000000100/params/blocks.0.attn.w_q (checksum mismatch)"); damaged data is never returned.
CheckpointData readCheckpoint(const std::string& path, int64_t step,
                              CheckpointParts parts = CheckpointParts::ParamsAndOptimizer);

/// Repairs what an interrupted commit left beside `path`, as the next commit (`train --resume`) would: takes the
/// writer lock, checks that RUN.h5.journal is this file's (docs/file-integrity.md, "The journal belongs to its
/// writer"), reads the file as the roll-back will leave it (every object verified; with `accept_damaged` it need
/// only open) and then rolls it back, removes an incomplete journal, and cuts bytes a killed commit wrote past
/// the end of the file's data. Returns one line saying what was done ("RUN.h5: nothing to recover (no
/// interrupted commit)"). Throws icl::Error (one line) for a journal that is not this file's or would restore a
/// damaged file, and for a file that is not an experiment file; the file and journal are then untouched. Used by
/// `icl-cli recover`.
std::string recoverExperimentFile(const std::string& path, bool accept_damaged = false);

/// Result of verifyExperimentFile.
struct FileVerification {
    bool checksums = false;            ///< false for format version 1 files (damage cannot be detected)
    int64_t objects_checked = 0;       ///< groups, attributes sets and datasets read and compared
    std::vector<std::string> damaged;  ///< one line per damaged object ("RUN.h5: damaged: … (…)")
    std::vector<std::string> notes;    ///< e.g. no checksums, a leftover RUN.h5.tmp
    /// Empty, or why the file is not read at all (missing, not an experiment file, a journal it does not own): one
    /// line, and nothing was checked.
    std::string refused;
};

/// Reads every object of the file (every checkpoint, task array, analysis and captured activation) and
/// checks it against its checksum. Never throws: damage that stops the file from opening (its root, /config)
/// is its one entry in `damaged`; a file that is not read at all says why in `refused`. Cost: one read of the whole file (SHA-256 runs at ~1.8 GB/s here).
FileVerification verifyExperimentFile(const std::string& path);

/// One row per evaluation: series name -> value. All rows of a file carry the same series.
using MetricsRow = std::map<std::string, double>;

/// Appends metric rows and, optionally, a checkpoint in one crash-safe commit.
/// `truncate_after_step` >= 0 first drops metric rows whose "step" exceeds it (used on resume).
/// A checkpoint that carries optimizer state takes over from the earlier ones: their optimizer state is dropped
/// (only the last checkpoint's is needed to resume), except at steps that are multiples of
/// `keep_optimizer_every` (> 0). A damaged earlier checkpoint is left untouched. Existing metric series are
/// verified first; throws icl::Error naming a damaged series instead of extending it.
void commitToExperimentFile(const std::string& path, const std::vector<MetricsRow>& rows,
                            const CheckpointData* checkpoint, int64_t truncate_after_step = -1,
                            int64_t keep_optimizer_every = 0);

/// Writes fixed arrays of the task under /task/ (e.g. "phi/0/B_1": layer 1 of the representation Φ*_0
/// of Guo et al., so other tools can recompute Φ*(x)); one crash-safe commit. Existing names are replaced.
void storeTaskArrays(const std::string& path, const std::vector<NamedArray>& arrays);

/// Every array under /task/ with names relative to it ("phi/0/B_1"); empty when the file has none.
std::vector<NamedArray> readTaskArrays(const std::string& path);

/// Writes a JSON result under /analysis/<kind>/<id> with attrs checkpoint_step, seed, created and
/// options json. Returns the id used.
std::string storeAnalysis(const std::string& path, const std::string& kind, int64_t checkpoint_step,
                          uint64_t seed, const std::string& options_json, const std::string& result_json);

/// One result stored by storeAnalysis: /analysis/<kind>/<id> with its attributes as written.
struct StoredAnalysis {
    std::string id;              ///< "0001", "0002", … in the order they were stored
    int64_t checkpoint_step = 0;
    uint64_t seed = 0;
    std::string created;         ///< ISO 8601 time of storing
    std::string options_json;    ///< the analysis's options
    std::string result_json;     ///< the analysis's result
};

/// Every result stored under /analysis/<kind>, in id order; empty when there is none. A result whose checksum
/// fails is left out (readRunSummary lists it among the damaged objects). Throws icl::Error for a file that
/// cannot be opened or is not an experiment file. Thread-safe (HDF5 calls are serialised).
std::vector<StoredAnalysis> readStoredAnalyses(const std::string& path, const std::string& kind);

/// Records where an imported run came from under /import (attr json: source paths, formats, SHA-256 of each source
/// file, key mapping, "trained_here": false); one crash-safe commit. Files of runs trained here have no /import.
void storeImportProvenance(const std::string& path, const std::string& provenance_json);

/// True while HDF5 holds any file or object open in this process (a file that a leaked handle keeps open would
/// only be flushed by HDF5's exit handler). Thread affinity: any thread; takes the experiment file's HDF5 mutex.
bool anyHdf5ObjectOpen();

/// Test hook: called with the name of each point of a commit ("locked", "opened", "appended metrics/<series>",
/// "wrote params/<name>", "sealed checkpoint", "linked checkpoint", "edited", each "HDF5 write" HDF5 makes,
/// "closed", "journal written", "journal synced", each "overwrote a page", "synced",
/// "journal removed"), so a crash test can kill the writer there. Empty function: no hook (the default). The
/// hook must not throw (it runs inside HDF5's calls).
void setCommitFaultHookForTesting(std::function<void(const std::string& point)> hook);

} // namespace icl
