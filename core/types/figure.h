#pragma once
// Torch-free plot data shared by core (which builds figures from experiments), widgets (which draw
// them) and the CLI (which exports them). Plain vectors, no tensors.

#include <map>
#include <string>
#include <vector>

namespace icl {

/// One line (or scatter) on a figure. `x` and `y` have equal length; `y_lower`/`y_upper` are either
/// empty or the same length (a confidence band, e.g. a bootstrap 95% interval).
struct Series {
    enum class Style { Line, Dashed, Markers };
    std::string name;
    /// The predictor drawn, as results name it ("model", "zero", "least_squares", "ridge", "gd_1", "gdpp_3",
    /// "newton_5", …); empty for other series. A predictor keeps its colour on every figure (widgets/plot_view.h).
    std::string predictor;
    std::vector<double> x;
    std::vector<double> y;
    std::vector<double> y_lower;
    std::vector<double> y_upper;
    Style style = Style::Line;
};

/// A complete plot: labelled axes, legend entries (series names) and metadata that exporters write
/// into the file (experiment path, checkpoint step, seed).
struct Figure {
    std::string name;    ///< machine name used by `icl-cli export --plot NAME` ("loss", "icl_curve")
    std::string title;
    std::string x_label;
    std::string y_label;
    bool log_x = false;
    bool log_y = false;
    /// The x axis counts something (in-context examples, layers, GD steps): a linear axis ticks integers only.
    bool x_integer = false;
    /// Optional named ticks on a linear x axis (e.g. layers "embed", "block 0", … at x = 0, 1, …);
    /// empty: numeric ticks. Same length as x_tick_labels.
    std::vector<double> x_ticks;
    std::vector<std::string> x_tick_labels;
    std::vector<Series> series;
    std::map<std::string, std::string> metadata;

    /// One-line caption built from the metadata: "key: value · key: value" in key order
    /// (e.g. "checkpoint_step: 5000 · experiment: run.h5 · seed: 0").
    std::string caption() const
    {
        std::string out;
        for (const auto& [key, value] : metadata) {
            if (!out.empty())
                out += " · ";
            out += key + ": " + value;
        }
        return out;
    }
};

} // namespace icl
