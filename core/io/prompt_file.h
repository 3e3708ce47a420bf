#pragma once
// Prompt files: a regression prompt written or read by a person (torch-free; used by icl-cli
// `analyze … --prompt FILE` and the GUI prompt editor). Thread affinity: any thread.
//
// JSON: {"x": [[x_11, …, x_1d], …, [x_q1, …, x_qd]], "y": [y_1, …, y_N]} — N+1 points, the last one the
//       query; "y" has N values (query label unknown) or N+1 (the last is the query's true label, or
//       null when unknown). A row of d = 1 may be a plain number. Optional "w" (the task vector),
//       "noise_std", "seed" and "component" are kept when present; "metadata" (an object of strings,
//       as written) and other keys are ignored.
// CSV:  one point per row, header "x_1,…,x_d,y", the last row the query (its y may be empty or left out);
//       lines starting with '#' are comments ("# key: value" metadata, as the GUI's Save… writes), of
//       which "# seed:", "# noise_std:", "# w: w_1 … w_k" and "# component:" are read back into the
//       Prompt. Also read: the GUI's older exports (a leading "token" column, names "x[1]", …).

#include <cstdint>
#include <map>
#include <string>

#include "core/types/inspection.h"

namespace icl {

/// Largest prompt file read (a prompt of 100,000 points of d = 10 written out takes about 20 MB less).
inline constexpr uint64_t kMaxPromptFileBytes = uint64_t(16) << 20;
/// Most points N+1 and widest row d a prompt file may have, whatever the model (the model's limits are
/// usually far smaller: PromptFileLimits).
inline constexpr int64_t kMaxPromptPoints = 100000;
inline constexpr int64_t kMaxPromptDim = 100000;
/// Largest magnitude of a value in a prompt (x, the labels, w). The models compute in float32: a finite 1e308 from a
/// file made every prediction NaN. The tasks' values are of order 1 to 100.
inline constexpr double kMaxPromptMagnitude = 1e6;

/// What a prompt file must fit: the model's input dimension d and the most points (N+1) it can take.
struct PromptFileLimits {
    int64_t d = 0;           ///< required width of every x row (0 = take it from the file)
    int64_t max_points = 0;  ///< most points N+1 the model takes (0 = kMaxPromptPoints)
    uint64_t max_memory = 0; ///< memory budget of the read in bytes (0 = defaultMemoryBudget())
    double max_magnitude = kMaxPromptMagnitude; ///< largest |value| (∞: any finite value, for a bit-exact round trip)
};

/// Reads a prompt from `path` (JSON when the first non-blank character is '{' or '[', else CSV). A query
/// label that is not given becomes NaN in Prompt::y (the inspector then shows no error for it); w stays
/// empty unless the file gives it. Throws icl::Error with a one-line message naming the file, the row
/// (JSON: "point i", 1-based, or "y_i"; CSV: "line L, column x_c") and what was expected for: wrong
/// dimension (limits.d), ragged rows, non-numbers, NaN/±Inf, a value beyond ±limits.max_magnitude, fewer than 2 points, more points than
/// limits.max_points, a y count that is neither N nor N+1, a missing "x" or "y" (JSON) or header (CSV),
/// a header whose names are not x_1,…,x_d,y, and an unreadable file; and, before allocating for them, a
/// file that is not a regular file or is over kMaxPromptFileBytes, JSON nested deeper than 64 levels, a CSV
/// line of more than kMaxPromptDim + 2 columns, more than kMaxPromptPoints points, and a file whose parse
/// would need more than the memory budget. Nothing else escapes (no std::bad_alloc, no nlohmann exception).
Prompt readPromptFile(const std::string& path, const PromptFileLimits& limits = {});

/// Writes `prompt` to `path`: JSON when the path ends in ".json" (any case), else CSV ("# key: value"
/// lines for `metadata`, then "# seed:", "# noise_std:", "# w:" and "# component:" from the prompt, the
/// header x_1,…,x_d,y and one row per point). A NaN query label is written as unknown (N labels in
/// JSON, an empty y cell in CSV). Numbers are written in the shortest form that reads back as the same
/// double (at most 17 significant digits), so readPromptFile gives back the same Prompt. Throws
/// icl::Error when the prompt is malformed (x and y counts differ, ragged rows, a non-finite value other
/// than the query's label) or the file cannot be written.
void writePromptFile(const std::string& path, const Prompt& prompt,
                     const std::map<std::string, std::string>& metadata = {});

} // namespace icl
