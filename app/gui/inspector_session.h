#pragma once
// The icl::Inspector a page keeps on its worker thread across requests (Attention, Patching), and what the
// Attention page computes with it: the prompt mutation that needs the task instance, the inspection, the
// regression lens and the rendered thumbnails.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QImage>

#include "core/analysis/inspector.h"
#include "core/types/inspection.h"
#include "widgets/attention_scale.h"

namespace icl::gui {

/// A change of the prompt that needs the run's task instance (icl::Inspector), applied on the page's worker.
struct PromptMutation {
    enum class Kind { Sample, ResampleRow, AddRow, Relabel, Open };
    Kind kind = Kind::Sample;
    int64_t index = 0;
    uint64_t seed = 0;
    double noise = 0.0;
    std::string path; ///< Open: the prompt file
};

/// One request of the Attention page: the file and checkpoint, the prompt, an optional mutation and ablations.
struct InspectRequest {
    std::string path;
    quint64 generation = 0; ///< bumped by the page for a new experiment: the worker reloads the file
    int64_t step = -1;
    icl::Prompt prompt;
    std::optional<PromptMutation> mutation;
    std::vector<icl::Ablation> ablations;
    widgets::AttentionScale scale = widgets::AttentionScale::Linear; ///< colour-scale mode of the thumbnails
};

/// What one request computed.
struct InspectResult {
    icl::Prompt prompt;
    bool promptChanged = false; ///< the request had a mutation: `prompt` is the new one
    icl::Inspection inspection;
    icl::RegressionLens lens;
    std::vector<QImage> thumbnails; ///< rendered on the worker: the GUI thread only paints them
    std::vector<double> largest; ///< each pattern's largest |weight| (the grid's tooltips)
    widgets::AttentionScale scale = widgets::AttentionScale::Linear; ///< the mode the thumbnails were rendered in
};

/// The worker's Inspector and what it has loaded. Thread affinity: only the page's worker thread, one request
/// at a time.
class InspectorSession {
public:
    /// The Inspector of `path` at checkpoint `step`: loaded again for a new `generation` (a new experiment on
    /// the page), else switched to `step` when needed. Throws icl::Error (no such file or checkpoint).
    icl::Inspector& open(const std::string& path, quint64 generation, int64_t step);
    /// The Attention page's request: opens the checkpoint, applies the mutation and runs Inspector::inspect and
    /// Inspector::lens. Throws icl::Error (a bad prompt file, a prompt of the wrong shape).
    InspectResult inspect(const InspectRequest& request);

private:
    std::unique_ptr<icl::Inspector> m_inspector;
    quint64 m_generation = 0;
};

} // namespace icl::gui
