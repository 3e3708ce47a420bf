#pragma once
// Text from a file (names, keys, strings, paths, and the core's error messages that quote them) as the GUI
// shows it in labels, tables, tooltips, status lines and dialogs: control characters and invalid UTF-8 as
// \xNN (core/io/display_text.h), so a file cannot put a fake line or a terminal escape into the window or
// the scripted mode's stderr. Errors are one line: "FILE: what is wrong". Thread affinity: any thread.

#include <exception>
#include <string>

#include <QString>

#include "core/io/display_text.h"
#include "core/io/file_error.h"

namespace icl::gui {

/// `text` (UTF-8) escaped for display, as a QString.
inline QString shownText(const std::string& text)
{
    return QString::fromStdString(icl::escapeForDisplay(text));
}

/// `text` (UTF-8, e.g. an exception's what()) escaped for display.
inline QString shownText(const char* text)
{
    return shownText(std::string(text ? text : ""));
}

/// `text` escaped for display (a QString made from a file's bytes, e.g. a file name).
inline QString shownText(const QString& text)
{
    return shownText(text.toStdString());
}

/// The one escaped line `e` is shown as: icl::Error's message; when `source` names the file being read,
/// fileErrorMessage(source, e) ("FILE: not enough memory …", "FILE: <first line of a LibTorch error>");
/// else "unexpected error: " and the first line of what() (never a backtrace).
inline QString errorText(const std::exception& e, const std::string& source = {})
{
    if (dynamic_cast<const icl::Error*>(&e) || !source.empty())
        return shownText(icl::fileErrorMessage(source, e));
    return shownText("unexpected error: " + icl::firstLine(e.what()));
}

} // namespace icl::gui
