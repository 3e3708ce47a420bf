#pragma once
// Torch-free. JSON from a file parsed with a nesting limit: nlohmann's parser is iterative, but dump(),
// comparisons and the project's own walks recurse once per level, so a file nested a million levels deep
// would overflow the stack after parsing. Thread affinity: any thread.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace icl {

/// Deepest nesting of arrays and objects accepted from a file (the workbench's own files nest 6 deep).
inline constexpr int kMaxJsonDepth = 64;

/// Parses `text` as JSON (nlohmann::json or nlohmann::ordered_json), refusing nesting deeper than `max_depth`
/// before it is built. Throws icl::Error "<source>: JSON nested deeper than 64 levels" or
/// "<source>: not valid JSON (<parser's reason>)".
template <class Json = nlohmann::json>
Json parseBoundedJson(const std::string& text, const std::string& source, int max_depth = kMaxJsonDepth)
{
    struct TooDeep {};
    try {
        return Json::parse(text, [max_depth](int depth, typename Json::parse_event_t event, Json&) {
            if (depth >= max_depth  // depth counts the containers around this one
                && (event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start))
                throw TooDeep{};
            return true;
        });
    } catch (const TooDeep&) {
        throw Error(source + ": JSON nested deeper than " + std::to_string(max_depth) + " levels");
    } catch (const typename Json::exception& e) {
        throw Error(source + ": not valid JSON (" + std::string(e.what()) + ")");
    }
}

/// True when `value` nests no deeper than `max_depth` (for trees built from other formats, such as YAML).
/// Walks with an explicit stack, never recursing.
template <class Json>
bool jsonDepthAtMost(const Json& value, int max_depth = kMaxJsonDepth)
{
    std::vector<std::pair<const Json*, int>> stack{{&value, 0}};
    while (!stack.empty()) {
        auto [v, depth] = stack.back();
        stack.pop_back();
        if (!v->is_structured())
            continue;
        if (depth + 1 > max_depth)
            return false;
        for (const auto& child : *v)
            stack.emplace_back(&child, depth + 1);
    }
    return true;
}

} // namespace icl
