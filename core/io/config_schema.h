#pragma once
// The config schema as data: every key of an experiment config with its type, default, allowed values
// and one line of documentation (the reference behind `icl-cli config --list` and docs/config.md).
// Torch-free; safe to include from the app.
//
// Every key is declared once, in buildSchema (core/io/config.cpp): path, type, default (from the
// initialiser of its field in core/io/config.h), range or choices, one line of documentation, and checks
// against keys declared before it. parseConfig, toJson, applyOverride and this reference are derived
// from it. Adding a key: its field in core/io/config.h plus one record in buildSchema; then regenerate
// docs/config.md (`icl-cli config --list --markdown > docs/config.md`; Cli.ConfigReferenceIsCurrent checks it).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace icl {

/// One key of the config schema: every key of ExperimentConfig's JSON form is declared once in
/// core/io/config.cpp (buildSchema), and parsing, validation, toJson, --set and this reference come from it.
struct ConfigKey {
    std::string path;               ///< key path, e.g. "training.lr"
    std::string type;               ///< "integer", "number", "boolean", "string", "choice", "integer list", "string list"
    nlohmann::json default_value;   ///< the value a config without the key gets
    std::string range;              ///< allowed values in words ("an integer in [1, 4096]"); "" = any value of the type
    std::vector<std::string> choices;  ///< "choice" and "string list": the allowed names
    std::string doc;                ///< one line of documentation
};

/// Every key of the schema, in declaration order (root keys, task, model, training, training.curriculum, eval).
const std::vector<ConfigKey>& configKeys();

/// The schema as JSON: {"keys": [{"path", "type", "default", "range", "choices", "doc"}, …]}.
nlohmann::json configReferenceJson();

/// The schema as plain text, one block per key (`icl-cli config --list`).
std::string configReferenceText();

/// The schema as Markdown: the content of docs/config.md (`icl-cli config --list --markdown`).
std::string configReferenceMarkdown();

} // namespace icl
