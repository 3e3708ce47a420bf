#pragma once
// Torch-free, Qt-free. JSON that holds strings from a file, written where a terminal, a dialog or a report
// shows it: still valid JSON with the file's values (what machines read), but never an exception for invalid
// UTF-8 (nlohmann's dump() throws type_error.316) and never a raw control character. Thread affinity: any thread.

#include <string>

#include <nlohmann/json.hpp>

namespace icl {

/// `value` as JSON text (`indent` as nlohmann's dump: -1 one line). Invalid UTF-8 in a string becomes U+FFFD
/// (nothing else can be written as valid JSON); C0 controls are escaped by JSON itself ("\u001b", "\n"), and
/// the C1 controls U+0080–U+009F, which JSON allows raw but terminals may act on (U+009B starts an escape
/// sequence), are written as "\u0080" … "\u009f". Parsing the result gives back every valid string unchanged.
inline std::string jsonForDisplay(const nlohmann::json& value, int indent = -1)
{
    const std::string s = value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    // dump()'s output is valid UTF-8, so 0xC2 is a lead byte; U+0080–U+009F occur only inside strings.
    size_t from = 0;
    for (size_t i = s.find('\xc2'); i != std::string::npos; i = s.find('\xc2', i + 1)) {
        const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
        if (next < 0x80 || next > 0x9f)
            continue;
        out.append(s, from, i - from);
        out += "\\u00";
        out += hex[next >> 4];
        out += hex[next & 0xf];
        from = i + 2;
    }
    out.append(s, from, std::string::npos);
    return out;
}

} // namespace icl
