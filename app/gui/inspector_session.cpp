#include "app/gui/inspector_session.h"

#include "core/io/prompt_file.h"

#include <algorithm>

#include "widgets/attention_grid.h"

namespace icl::gui {

namespace {

/// Applies `m` to `p` with the run's task instance.
void applyMutation(const icl::Inspector& insp, const PromptMutation& m, icl::Prompt& p)
{
    switch (m.kind) {
    case PromptMutation::Kind::Sample:
        p = insp.samplePrompt(m.seed);
        break;
    case PromptMutation::Kind::ResampleRow:
        insp.resampleExample(p, m.index, m.seed);
        break;
    case PromptMutation::Kind::AddRow: {
        const size_t at = size_t(std::clamp<int64_t>(m.index, 0, p.nContext()));
        const size_t from = at > 0 ? at - 1 : at;
        p.x.insert(p.x.begin() + long(at), p.x[from]);
        p.y.insert(p.y.begin() + long(at), p.y[from]);
        if (!p.w.empty())
            insp.resampleExample(p, int64_t(at), m.seed);
        break;
    }
    case PromptMutation::Kind::Relabel:
        insp.relabel(p, m.noise, m.seed);
        break;
    case PromptMutation::Kind::Open: {
        icl::PromptFileLimits limits;
        limits.d = insp.inputDim();
        limits.max_points = insp.maxContext() > 0 ? insp.maxContext() + 1 : 0;
        p = icl::readPromptFile(m.path, limits);
        break;
    }
    }
}

} // namespace

icl::Inspector& InspectorSession::open(const std::string& path, quint64 generation, int64_t step)
{
    if (!m_inspector || m_generation != generation) {
        m_inspector.reset();
        m_inspector = std::make_unique<icl::Inspector>(path, step);
        m_generation = generation;
    } else if (m_inspector->checkpointStep() != step) {
        m_inspector->setCheckpoint(step);
    }
    return *m_inspector;
}

InspectResult InspectorSession::inspect(const InspectRequest& request)
{
    icl::Inspector& insp = open(request.path, request.generation, request.step);
    InspectResult result;
    result.prompt = request.prompt;
    if (request.mutation) {
        result.promptChanged = true;
        applyMutation(insp, *request.mutation, result.prompt);
    }
    result.inspection = insp.inspect(result.prompt, request.ablations);
    result.lens = insp.lens(result.prompt, request.ablations);
    const icl::Inspection& in = result.inspection;
    result.scale = request.scale;
    for (size_t i = 0; i < in.patterns.size(); ++i) {
        const bool softmax = i < in.softmax_head.size() ? bool(in.softmax_head[i]) : true;
        result.thumbnails.push_back(widgets::AttentionGrid::renderThumbnail(in.patterns[i], softmax, request.scale));
        result.largest.push_back(widgets::AttentionGrid::largestMagnitude(in.patterns[i]));
    }
    return result;
}

} // namespace icl::gui
