#pragma once
// The config file an import reads beside foreign checkpoints (torch-free): Garg et al.'s config.yaml or a
// workbench JSON config, as values of workbench config keys. Used by core/training/weights_import.cpp; the
// formats are in docs/weights-formats.md. Thread affinity: any thread.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace icl {

/// What a config file says, as key path → value of the workbench config, and the file's kind.
struct ImportConfigFile {
    std::string kind;     ///< "garg" (config.yaml) or "workbench" (a JSON config); "" without a file
    std::string path;
    nlohmann::json base;  ///< workbench: the resolved config
    std::map<std::string, nlohmann::json> values;  ///< workbench key path → value (garg)
    std::vector<std::string> warnings;
    std::string unsupported;  ///< a refusal that only --set can lift (e.g. a Garg task the workbench does not have)
};

/// Reads the config file `path` (at most 16 MB): a JSON object is a workbench config (resolved and validated,
/// in `base`), anything else Garg et al.'s YAML (readGargConfigYaml). Throws icl::Error naming the file.
ImportConfigFile readImportConfigFile(const std::string& path);

/// Garg et al.'s config.yaml (quinine) from its text: model.{family, n_dims, n_embd, n_layer, n_head,
/// n_positions}, training.{task, task_kwargs, data, curriculum, learning_rate, batch_size}, nesting ≤ 64 and
/// ≤ 100000 nodes (aliases counted at every use), each number within the range of the key it becomes. Throws
/// icl::Error ("PATH: model.n_layer: expected an integer in [1, 1000], got …") for a value out of range, a
/// family or data the workbench does not have, or unreadable YAML; an unsupported task is `unsupported`.
ImportConfigFile readGargConfigYaml(const std::string& path, const std::string& text);

} // namespace icl
