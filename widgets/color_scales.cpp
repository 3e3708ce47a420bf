#include "widgets/color_scales.h"

#include <algorithm>
#include <cmath>

namespace icl::widgets {

namespace {

std::vector<QRgb> buildTable(const std::vector<std::pair<double, QColor>>& stops)
{
    std::vector<QRgb> table(256);
    for (int i = 0; i < 256; ++i) {
        const double t = i / 255.0;
        size_t k = 1;
        while (k + 1 < stops.size() && stops[k].first < t)
            ++k;
        const auto& [t0, c0] = stops[k - 1];
        const auto& [t1, c1] = stops[k];
        const double a = t1 > t0 ? std::clamp((t - t0) / (t1 - t0), 0.0, 1.0) : 0.0;
        auto mix = [a](int u, int v) { return int(std::lround(u + a * (v - u))); };
        table[size_t(i)] = qRgb(mix(c0.red(), c1.red()), mix(c0.green(), c1.green()), mix(c0.blue(), c1.blue()));
    }
    return table;
}

constexpr QRgb kNanColor = 0xFFDDDDDD;

QRgb lookup(const std::vector<QRgb>& table, double t)
{
    if (std::isnan(t))
        return kNanColor;
    const int i = int(std::lround(std::clamp(t, 0.0, 1.0) * 255.0));
    return table[size_t(i)];
}

} // namespace

const std::vector<std::pair<double, QColor>>& sequentialStops()
{
    static const std::vector<std::pair<double, QColor>> stops = {
        { 0.0, QColor(0xF7, 0xFB, 0xFF) },
        { 0.25, QColor(0xC6, 0xDB, 0xEF) },
        { 0.5, QColor(0x6B, 0xAE, 0xD6) },
        { 0.75, QColor(0x21, 0x71, 0xB5) },
        { 1.0, QColor(0x08, 0x30, 0x6B) },
    };
    return stops;
}

const std::vector<std::pair<double, QColor>>& divergingStops()
{
    static const std::vector<std::pair<double, QColor>> stops = {
        { 0.0, QColor(0x21, 0x66, 0xAC) },
        { 0.25, QColor(0x92, 0xC5, 0xDE) },
        { 0.5, QColor(0xF7, 0xF7, 0xF7) },
        { 0.75, QColor(0xF4, 0xA5, 0x82) },
        { 1.0, QColor(0xB2, 0x18, 0x2B) },
    };
    return stops;
}

const std::vector<QRgb>& sequentialTable()
{
    static const std::vector<QRgb> table = buildTable(sequentialStops());
    return table;
}

const std::vector<QRgb>& divergingTable()
{
    static const std::vector<QRgb> table = buildTable(divergingStops());
    return table;
}

QRgb sequentialColor(double value, double max)
{
    return lookup(sequentialTable(), max > 0 ? value / max : 0.0);
}

QRgb divergingColor(double value, double limit)
{
    return lookup(divergingTable(), limit > 0 ? 0.5 + 0.5 * value / limit : 0.5);
}

} // namespace icl::widgets
