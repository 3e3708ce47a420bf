// icl-cli analyze RUN.h5 icl-iwl --show-sequence KIND: one few-shot classification sequence (Chan et al. 2022)
// and the checkpoint's prediction at its query, headless (the GUI's sequence viewer, ICL vs IWL page).
#include "commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/analysis/fewshot_sequence.h"
#include "core/error.h"
#include "core/runtime/device.h"
#include "display.h"

using nlohmann::json;

namespace icl::cli {

namespace {

std::string number(double v, int precision = 4)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

/// A short text of an exemplar: its first values for a vector, size and mean intensity for an image.
std::string exemplarText(const FewShotItem& item, const std::vector<int64_t>& shape)
{
    std::ostringstream out;
    if (shape.size() == 2) {
        double mean = 0.0;
        for (float v : item.exemplar)
            mean += v;
        out << shape[0] << "×" << shape[1] << " image, mean intensity "
            << number(item.exemplar.empty() ? 0.0 : mean / double(item.exemplar.size()), 3);
        return out.str();
    }
    const size_t shown = std::min<size_t>(4, item.exemplar.size());
    out << "[";
    for (size_t i = 0; i < shown; ++i)
        out << (i ? ", " : "") << number(item.exemplar[i], 3);
    if (shown < item.exemplar.size())
        out << ", … (" << item.exemplar.size() << " values)";
    out << "]";
    return out.str();
}

} // namespace

int runShowSequence(const IclIwlArgs& args)
{
    const auto kind = fewShotSequenceKindFromName(args.show_sequence);
    if (!kind)
        throw Error("--show-sequence: expected training, training_bursty, training_iid, icl or iwl, got \""
                    + args.show_sequence + "\"");
    if (args.threads > 0)
        configureThreads(args.threads);
    const FewShotSequence s = sampleFewShotSequence(args.path, args.checkpoint, *kind, args.seed);
    const auto top = s.topLabels(5);
    if (args.json) {
        json items = json::array();
        for (const FewShotItem& item : s.items)
            items.push_back({{"class", item.class_id}, {"label", item.label}, {"holdout", item.holdout},
                             {"rare", item.rare}, {"exemplar", item.exemplar}});
        json topLabels = json::array();
        for (const auto& [label, p] : top)
            topLabels.push_back({{"label", label}, {"probability", p}});
        printJsonObj(json{{"analysis", "icl_iwl_sequence"},
                          {"checkpoint_step", s.checkpoint_step},
                          {"kind", fewShotSequenceKindName(s.kind)},
                          {"seed", s.seed},
                          {"bursty", s.bursty},
                          {"exemplar_shape", s.exemplar_shape},
                          {"items", items},
                          {"true_label", s.true_label},
                          {"predicted_label", s.predicted_label},
                          {"predicted_label_01", s.predicted_label_01},
                          {"correct", s.correct()},
                          {"prediction_in_context", s.prediction_in_context},
                          {"top_labels", topLabels},
                          {"probabilities", s.probabilities}});
        return 0;
    }
    std::string what;
    switch (s.kind) {
    case FewShotSequenceKind::Icl:
        what = "ICL evaluation sequence (2 holdout classes, labels {0, 1})";
        break;
    case FewShotSequenceKind::Iwl:
        what = "IWL evaluation sequence (no support for the query's class)";
        break;
    default:
        what = std::string("training sequence (") + (s.bursty ? "bursty" : "i.i.d.") + ")";
    }
    std::cout << what << ", seed " << s.seed << ", checkpoint " << s.checkpoint_step << " of " << shown(args.path) << ":\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-6s %8s %6s  %-8s %s\n", "item", "class", "label", "", "exemplar");
    std::cout << line;
    for (size_t i = 0; i < s.items.size(); ++i) {
        const FewShotItem& item = s.items[i];
        const bool query = i + 1 == s.items.size();
        const std::string name = query ? "query" : "x" + std::to_string(i + 1);
        std::snprintf(line, sizeof line, "  %-6s %8lld %6lld  %-8s ", name.c_str(), static_cast<long long>(item.class_id),
                      static_cast<long long>(item.label), item.holdout ? "holdout" : item.rare ? "rare" : "");
        std::cout << line << exemplarText(item, s.exemplar_shape) << (query ? "   (true label, not shown)" : "") << "\n";
    }
    const double pPredicted = s.probabilities[size_t(s.predicted_label)];
    std::cout << "predicted label " << s.predicted_label << " (p = " << number(pPredicted, 3) << "): "
              << (s.correct() ? "correct" : "wrong") << "; true label " << s.true_label
              << " (p = " << number(s.probabilities[size_t(s.true_label)], 3) << ")\n";
    if (s.kind == FewShotSequenceKind::Icl)
        std::cout << "predicted over labels {0, 1}: " << s.predicted_label_01 << " ("
                  << (s.predicted_label_01 == s.true_label ? "correct" : "wrong") << ")\n";
    std::cout << "prediction is a label of the context: " << (s.prediction_in_context ? "yes" : "no") << "\n"
              << "most probable labels:";
    for (const auto& [label, p] : top)
        std::cout << "  " << label << " " << number(p, 3);
    std::cout << "\n";
    return 0;
}

} // namespace icl::cli
