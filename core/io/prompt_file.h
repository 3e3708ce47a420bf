#pragma once
// Prompt files: a regression prompt written or read by a person (torch-free; used by icl-cli
// `analyze … --prompt FILE` and the GUI prompt editor). Thread affinity: any thread.
//
// JSON: {"x": [[x_11, …, x_1d], …, [x_q1, …, x_qd]], "y": [y_1, …, y_N]} — N+1 points, the last one the
//       query; "y" has N values (query label unknown) or N+1 (the last is the query's true label).
//       Optional "w" (the task vector), "noise_std", "seed" are kept when present.
// CSV:  one point per row, header "x_1,…,x_d,y", the last row the query (its y may be empty); lines
//       starting with '#' are comments ("# key: value" metadata, as the GUI's Export writes).

#include <cstdint>
#include <map>
#include <string>

#include "core/types/inspection.h"

namespace icl {

/// What a prompt file must fit: the model's input dimension d and the most points (N+1) it can take.
struct PromptFileLimits {
    int64_t d = 0;           ///< required width of every x row (0 = take it from the file)
    int64_t max_points = 0;  ///< most points N+1 the model takes (0 = no limit)
};

/// Reads a prompt from `path` (JSON when the first non-blank character is '{', else CSV). A query label that
/// is not given becomes NaN in Prompt::y (the inspector then shows no error for it). Throws icl::Error
/// with a one-line message naming the file, the row (1-based point index, or CSV line) and what was
/// expected for: wrong dimension, ragged rows, non-numbers, fewer than 2 points, more points than
/// limits.max_points, a y count that is neither N nor N+1.
Prompt readPromptFile(const std::string& path, const PromptFileLimits& limits = {});

/// Writes `prompt` to `path`: JSON when the path ends in ".json", else CSV (with "# key: value" lines for
/// `metadata`). Numbers are written with 17 significant digits, so reading the file back gives the same
/// doubles. Throws icl::Error when the file cannot be written.
void writePromptFile(const std::string& path, const Prompt& prompt,
                     const std::map<std::string, std::string>& metadata = {});

} // namespace icl
