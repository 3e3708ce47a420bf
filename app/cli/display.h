#pragma once
// icl-cli: text from a file as the terminal shows it, and the one line every error is (docs/security.md).
// A file's names, keys and strings are escaped wherever they are printed (control characters as \xNN), so a
// file cannot move the cursor, clear the screen or print a line of its own. Thread affinity: main thread.

#include <iostream>
#include <string>

#include "core/io/bounded_json.h"
#include "core/io/display_json.h"
#include "core/io/display_text.h"

namespace icl::cli {

/// `text` (a name, key, path or string from a file) as printed in human-readable output: escapeForDisplay.
inline std::string shown(const std::string& text)
{
    return escapeForDisplay(text);
}

/// Prints "icl-cli: MESSAGE" on stderr as one escaped line, whatever the message holds (core's messages quote
/// names and strings from files raw).
inline void printErrorLine(const std::string& message)
{
    std::cerr << "icl-cli: " << escapeForDisplay(message) << "\n";
}

/// JSON stored in a file (its config, its /import provenance) parsed for showing: nesting bounded
/// (parseBoundedJson), a discarded value when it is not valid JSON (callers show it as damaged).
inline nlohmann::json storedJson(const std::string& text)
{
    try {
        return parseBoundedJson(text, "stored JSON");
    } catch (const Error&) {
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
}

} // namespace icl::cli
