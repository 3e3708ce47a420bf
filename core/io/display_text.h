#pragma once
// Torch-free. Text from a file (tensor names, keys, strings) made safe to print: a file must not be able
// to move the cursor, clear the screen or print a fake line in a terminal, a dialog or a report.
// Thread affinity: any thread.

#include <cstdint>
#include <string>
#include <string_view>

namespace icl {

/// `text` with every control character (C0, DEL, the C1 range U+0080–U+009F) and every byte that is not
/// part of valid UTF-8 written as `\xNN`, and a backslash as `\\`; printable UTF-8 is kept as it is.
/// Escaping is idempotent on its own output's printable part only: apply it once, where text is shown.
inline std::string escapeForDisplay(std::string_view text)
{
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    auto escapeByte = [&](unsigned char c) {
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xf];
    };
    size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                escapeByte(c);
            else if (c == '\\')
                out += "\\\\";
            else
                out += static_cast<char>(c);
            ++i;
            continue;
        }
        // Multi-byte UTF-8: length from the lead byte, continuation bytes 10xxxxxx, no overlong forms,
        // no surrogates, nothing past U+10FFFF.
        size_t n = 0;
        uint32_t cp = 0;
        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            cp = c & 0x07;
        }
        bool valid = n > 0 && i + n <= text.size();
        for (size_t k = 1; valid && k < n; ++k) {
            const auto cc = static_cast<unsigned char>(text[i + k]);
            valid = (cc & 0xc0) == 0x80;
            cp = (cp << 6) | (cc & 0x3f);
        }
        valid = valid && !(n == 3 && cp < 0x800) && !(n == 4 && (cp < 0x10000 || cp > 0x10ffff))
                && !(cp >= 0xd800 && cp <= 0xdfff);
        if (!valid) {
            escapeByte(c);
            ++i;
            continue;
        }
        if (cp >= 0x80 && cp <= 0x9f) {  // C1 controls (CSI = U+009B starts escape sequences on some terminals)
            for (size_t k = 0; k < n; ++k)
                escapeByte(static_cast<unsigned char>(text[i + k]));
        } else {
            out.append(text.substr(i, n));
        }
        i += n;
    }
    return out;
}

} // namespace icl
