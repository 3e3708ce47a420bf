#pragma once
// The kinds an experiment config chooses between (task kind, model kind, token layout) as enums, each
// with one name table: the names are the config's JSON values (`task.kind: "fewshot_classification"`)
// and the only place they are spelled. Torch-free; safe to include from the app.
//
//   if (kindOf(config.model) == ModelKind::Gpt2) …
//   const char* n = kindName(TaskKind::SineRegression);     // "sine_regression"
//   std::optional<ModelKind> k = kindFromName<ModelKind>("lstm");
//
// Adding a kind: one enumerator and one row of its table below; the config schema
// (core/io/config.cpp) takes its choices from the table.

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace icl {

/// `task.kind` (the tasks are described at TaskConfig in core/io/config.h).
enum class TaskKind {
    LinearRegression,
    SparseLinearRegression,
    NoisyLinearRegression,
    SineRegression,
    Representation,
    RepresentationMixture,
    FewshotClassification,
};

/// `model.kind`: von Oswald et al.'s linear self-attention, the GPT-2 decoder (Garg et al.; with
/// fewshot_classification Chan et al.'s classifier), and Chan et al.'s recurrent baselines.
enum class ModelKind { Lsa, Gpt2, Lstm, Rnn };

/// `task.layout`: "pair" (one token e_i = (x_i, y_i) per example) or "interleaved" (x and y tokens).
enum class TaskLayout { Pair, Interleaved };

/// Name table of an enum: NameTable<E>::entries lists every value once with its config name.
template <class E>
struct NameTable;

template <>
struct NameTable<TaskKind> {
    static constexpr const char* what = "task kind";
    static constexpr std::array<std::pair<TaskKind, const char*>, 7> entries{{
        {TaskKind::LinearRegression, "linear_regression"},
        {TaskKind::SparseLinearRegression, "sparse_linear_regression"},
        {TaskKind::NoisyLinearRegression, "noisy_linear_regression"},
        {TaskKind::SineRegression, "sine_regression"},
        {TaskKind::Representation, "representation"},
        {TaskKind::RepresentationMixture, "representation_mixture"},
        {TaskKind::FewshotClassification, "fewshot_classification"},
    }};
};

template <>
struct NameTable<ModelKind> {
    static constexpr const char* what = "model kind";
    static constexpr std::array<std::pair<ModelKind, const char*>, 4> entries{{
        {ModelKind::Lsa, "lsa"},
        {ModelKind::Gpt2, "gpt2"},
        {ModelKind::Lstm, "lstm"},
        {ModelKind::Rnn, "rnn"},
    }};
};

template <>
struct NameTable<TaskLayout> {
    static constexpr const char* what = "task layout";
    static constexpr std::array<std::pair<TaskLayout, const char*>, 2> entries{{
        {TaskLayout::Pair, "pair"},
        {TaskLayout::Interleaved, "interleaved"},
    }};
};

/// The config name of `value` ("gpt2" for ModelKind::Gpt2).
template <class E>
const char* kindName(E value)
{
    for (const auto& [v, name] : NameTable<E>::entries)
        if (v == value)
            return name;
    return "?";  // unreachable for a value of the enum
}

/// The value named `name`, or nullopt when the table has no such name.
template <class E>
std::optional<E> kindFromName(std::string_view name)
{
    for (const auto& [v, n] : NameTable<E>::entries)
        if (name == n)
            return v;
    return std::nullopt;
}

/// Every name of the table, in table order (the choices of the config key).
template <class E>
std::vector<std::string> kindNames()
{
    std::vector<std::string> out;
    for (const auto& entry : NameTable<E>::entries)
        out.emplace_back(entry.second);
    return out;
}

/// True for the regression tasks whose prompts are (x, ⟨w, x⟩ + noise) pairs: linear, sparse and
/// noisy linear regression (Garg et al. 2022's function classes with a weight vector w).
inline bool isLinearRegression(TaskKind k)
{
    return k == TaskKind::LinearRegression || k == TaskKind::SparseLinearRegression
        || k == TaskKind::NoisyLinearRegression;
}

/// True for Guo et al. 2023's representation tasks (one Φ* or a mixture of them).
inline bool isRepresentationTask(TaskKind k)
{
    return k == TaskKind::Representation || k == TaskKind::RepresentationMixture;
}

/// True for Chan et al.'s recurrent baselines (lstm, rnn).
inline bool isRecurrent(ModelKind k) { return k == ModelKind::Lstm || k == ModelKind::Rnn; }

struct TaskConfig;   // core/io/config.h
struct ModelConfig;  // core/io/config.h

/// The typed kind of a parsed config (its string fields hold the names of the tables above).
/// Throws icl::Error naming the key ("task.kind: unknown task kind \"x\"") for a hand-built struct
/// whose string is not in the name table; never for a struct from parseConfig.
TaskKind kindOf(const TaskConfig& task);
ModelKind kindOf(const ModelConfig& model);   ///< as above, for model.kind
TaskLayout layoutOf(const TaskConfig& task);  ///< as above, for task.layout (all three in core/io/config.cpp)

} // namespace icl
