#pragma once
// What the Attention page computes on its worker thread: one icl::Inspector kept across requests, the prompt
// mutation that needs the task instance, the inspection, the regression lens and the rendered thumbnails.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QImage>

#include "app/gui/attention_prompt_editor.h"
#include "core/analysis/inspector.h"
#include "core/types/inspection.h"

namespace icl::gui {

/// One request of the Attention page: the file and checkpoint, the prompt, an optional mutation and ablations.
struct InspectRequest {
    std::string path;
    quint64 generation = 0; ///< bumped by the page for a new experiment: the worker reloads the file
    int64_t step = -1;
    icl::Prompt prompt;
    std::optional<PromptMutation> mutation;
    std::vector<icl::Ablation> ablations;
};

/// What one request computed.
struct InspectResult {
    icl::Prompt prompt;
    bool promptChanged = false; ///< the request had a mutation: `prompt` is the new one
    icl::Inspection inspection;
    icl::RegressionLens lens;
    std::vector<QImage> thumbnails; ///< rendered on the worker: the GUI thread only paints them
    std::vector<double> largest; ///< each pattern's largest |weight| (the grid's colour scale)
};

/// The worker's Inspector and what it has loaded. Thread affinity: only the page's worker thread, one request
/// at a time.
class InspectSession {
public:
    /// Loads the file (a new generation) or switches the checkpoint as needed, applies the mutation and runs
    /// Inspector::inspect and Inspector::lens. Throws icl::Error (a bad prompt file, a prompt of the wrong shape).
    InspectResult run(const InspectRequest& request);

private:
    std::unique_ptr<icl::Inspector> m_inspector;
    quint64 m_generation = 0;
};

} // namespace icl::gui
