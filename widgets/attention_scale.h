#pragma once
// The colour-scale modes of the attention views, free of Qt (and of torch) so that icl-cli can name them.

#include <initializer_list>
#include <string>

namespace icl::widgets {

/// How softmax attention weights are coloured (the Attention page's toolbar, `icl-cli export --plot attention
/// --attention-scale`): Linear over [0, 1]; Row: each query row ÷ its largest weight, over [0, 1]; Log: log₁₀ of the
/// weight over [kAttentionLogFloor, 1] (smaller weights take the lowest colour). Linear (LSA) scores always use the
/// diverging scale, symmetric around 0 (Row: each row ÷ its largest |score|).
enum class AttentionScale { Linear, Row, Log };

/// Lower end of the logarithmic scale: 10⁻³.
inline constexpr double kAttentionLogFloor = 1e-3;

/// "linear", "row" or "log".
inline const char* attentionScaleName(AttentionScale scale)
{
    switch (scale) {
    case AttentionScale::Row:
        return "row";
    case AttentionScale::Log:
        return "log";
    case AttentionScale::Linear:
        break;
    }
    return "linear";
}

/// Parses "linear", "row" or "log"; false (and `*scale` unchanged) for anything else.
inline bool parseAttentionScale(const std::string& name, AttentionScale* scale)
{
    for (AttentionScale s : { AttentionScale::Linear, AttentionScale::Row, AttentionScale::Log })
        if (name == attentionScaleName(s)) {
            *scale = s;
            return true;
        }
    return false;
}

} // namespace icl::widgets
