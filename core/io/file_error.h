#pragma once
// Torch-free, Qt-free. What a reader lets through besides icl::Error — std::bad_alloc, std::length_error,
// std::out_of_range, nlohmann's exceptions, c10::Error (whose what() carries a backtrace) — turned into the one
// line every refusal of a file is: "FILE: what is wrong". The CLI and the GUI call it where a command or a page
// reads a file; "internal error" stays for what no file can cause. Thread affinity: any thread.

#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace icl {

/// The first line of `text` (a c10::Error's what() continues with "Exception raised from …" and a backtrace).
inline std::string firstLine(std::string_view text)
{
    const size_t end = text.find_first_of("\r\n");
    return std::string(text.substr(0, end));
}

/// One line about `source` for `e`, an exception thrown while reading it: icl::Error's message as it is (it
/// names the file already); "SOURCE: not enough memory to read it (…)" for std::bad_alloc; "SOURCE: a size
/// in the file is out of range (…)" for std::length_error; "SOURCE: a value in the file is out of range (…)"
/// for std::out_of_range; "SOURCE: unexpected content (…)" for nlohmann's "[json.exception.…]" errors; else
/// "SOURCE: " and the first line of what(). Raw text: escape it (escapeForDisplay) where it is shown.
inline std::string fileErrorMessage(const std::string& source, const std::exception& e)
{
    if (dynamic_cast<const Error*>(&e))
        return e.what();
    std::string what = firstLine(e.what());
    if (what.rfind("[json.exception.", 0) == 0) {  // "[json.exception.type_error.302] type must be …"
        const size_t close = what.find("] ");
        return source + ": unexpected content (" + (close == std::string::npos ? what : what.substr(close + 2)) + ")";
    }
    if (dynamic_cast<const std::bad_alloc*>(&e))
        return source + ": not enough memory to read it (the file asks for more than this machine can allocate)";
    if (dynamic_cast<const std::length_error*>(&e))
        return source + ": a size in the file is out of range (" + what + ")";
    if (dynamic_cast<const std::out_of_range*>(&e))
        return source + ": a value in the file is out of range (" + what + ")";
    return source + ": " + (what.empty() ? std::string("unreadable") : what);
}

/// Runs `body()`; any std::exception it throws other than icl::Error is rethrown as icl::Error with
/// fileErrorMessage(source, e). Returns what `body` returns.
template <class F>
decltype(auto) withFileErrors(const std::string& source, F&& body)
{
    try {
        return std::forward<F>(body)();
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        throw Error(fileErrorMessage(source, e));
    }
}

} // namespace icl
