#pragma once
// The one number format of the figure style (docs/architecture.md, "Figure style"): what a person reads — figure
// titles, legends, captions, value labels on the pages — shows 4 significant digits; CSV/JSON exports and tool tips
// keep full precision. Locale independent (std::to_chars: Qt sets LC_NUMERIC from the environment, where printf
// would write a decimal comma). Torch-free, Qt-free: used by core/report, widgets and the GUI.

#include <charconv>
#include <cmath>
#include <string>

namespace icl {

/// Significant digits of numbers that are read on screen and in figures.
constexpr int kShownDigits = 4;

/// `v` with `digits` (1…17) significant digits in printf's %g form (no trailing zeros, exponent below 1e-4 and from
/// 10^digits): 1.4937181828736623 → "1.494", 3.92246e-11 → "3.922e-11", 11.9529 → "11.95", 12345.6 → "1.235e+04",
/// 0.5 → "0.5". Whole numbers below 10^9 in magnitude (steps, counts) are written in full: 3000, 20000. NaN (not
/// computed) is "—", infinities "∞" and "−∞", −0 is "0".
inline std::string formatSignificant(double v, int digits = kShownDigits)
{
    if (std::isnan(v))
        return "—";
    if (std::isinf(v))
        return v > 0 ? "∞" : "−∞";
    if (v == 0.0)
        return "0";
    digits = digits < 1 ? 1 : digits > 17 ? 17 : digits;
    char buf[64];
    if (std::fabs(v) < 1e9 && v == std::trunc(v)) {
        const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
        return std::string(buf, r.ptr);
    }
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, digits);
    return std::string(buf, r.ptr);
}

/// `v` in full precision for tool tips: the shortest text that reads back as `v` (0.1 → "0.1",
/// 1.4937181828736623 → "1.4937181828736623"); NaN is "—".
inline std::string formatFullPrecision(double v)
{
    if (std::isnan(v))
        return "—";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

} // namespace icl
