#pragma once
// Patching page: activation patching of the residual stream (clean prompt → corrupted run), shown as a
// layer × position heatmap of the normalised effect on the query prediction.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <QString>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"
#include "core/analysis/inspector.h"
#include "core/types/inspection.h"
#include "core/types/run_summary.h"

namespace icl::gui {

class InspectorSession;

/// Runs Inspector::patching (activation patching, Meng et al. 2022 / Heimersheim & Nanda; the ICL setting
/// of the issue "Interactive inspector") on the checkpoint selected on the timeline: the clean prompt is
/// the Attention page's current prompt (with its edits) or one sampled from the page's prompt seed; the
/// corruption changes one label, draws a different task vector w, or shuffles the labels among the
/// examples (seeded). The run goes to the page's worker thread with (done, total) progress and Cancel;
/// the heatmap shows effect[l][t] = (ŷ_patched − ŷ_corrupted) / (ŷ_clean − ŷ_corrupted) with layer and
/// token labels and a colour legend, next to the clean and corrupted predictions and labels; rows appear
/// as they are computed, the final one first (Inspector::patching's rows callback). Exports
/// PNG/SVG/PDF and the effect matrix as CSV. Nothing runs until Run is pressed (or --run).
/// Thread affinity: GUI thread only.
class RequestRun;

class PatchingPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit PatchingPage(QWidget* parent = nullptr);
    ~PatchingPage() override;

    /// The Attention page's prompt, used when "Use the Attention page's prompt" is checked.
    void setSharedPrompt(const icl::Prompt& prompt);
    /// Stops the running patching at its next forward pass; nothing is shown.
    void cancelJobs() override;
    QString cancelledMessage() const override { return tr("Patching cancelled (stops after the running forward pass)"); }
    QString doneMessage() const override { return tr("Patching: done"); }

    /// Starts a patching with the page's options. Returns false when nothing was started (no
    /// experiment or checkpoint, busy).
    bool startPatching();

    /// The options of the next run, from the controls.
    icl::PatchingOptions options() const;
    /// The clean prompt of the next run when it comes from the Attention page (else empty: sampled
    /// on the worker from the prompt seed).
    std::optional<icl::Prompt> sharedPrompt() const;

    /// The result shown (empty before the first finished run and after a cancelled or failed one), and
    /// the clean and corrupted prompts it was computed on.
    const std::optional<icl::PatchingResult>& result() const { return m_result; }
    const icl::Prompt& cleanPrompt() const { return m_clean; }
    const icl::Prompt& corruptedPrompt() const { return m_corrupted; }
    /// Export metadata: experiment, checkpoint_step, seed, prompt, corruption.
    std::map<std::string, std::string> metadata() const;

    bool exportCurrentPlot() override;

    widgets::HeatmapView* heatmap() const { return m_heatmap; }
    QComboBox* corruptionChooser() const { return m_corruption; }
    QSpinBox* exampleChooser() const { return m_example; }
    QSpinBox* seedChooser() const { return m_seed; }
    QSpinBox* promptSeedChooser() const { return m_promptSeed; }
    QCheckBox* sharedPromptCheck() const { return m_useShared; }
    QPushButton* runButton() const;
    QPushButton* cancelButton() const;
    QProgressBar* progressBar() const;
    QLabel* summaryLabel() const { return m_summaryLabel; }
    QTableWidget* labelTable() const { return m_labels; }

protected:
    /// Binds an experiment: clears the result and the shared prompt; false (with the message) when it has no
    /// saved checkpoint to patch.
    bool bind(const icl::RunSummary& summary, QString* why) override;
    /// The next run uses the bound checkpoint; a shown result of another checkpoint is cleared.
    void checkpointChanged(bool changed) override;
    void jobsFinished() override;

private:
    /// One run's output: the result and the prompts and options it was computed with.
    struct Output {
        icl::PatchingResult result;
        icl::Prompt clean;
        icl::Prompt corrupted;
        icl::PatchingOptions options;
        bool shared = false;
    };

    void showOutput(const Output& output);
    /// Rows computed so far (the others NaN) on the heatmap, while the run goes on.
    void showRows(const Output& partial, int64_t rowsDone);
    /// Shows out.result's effect on the heatmap (labels, colour limit); returns the matrix shown.
    icl::Matrix showEffect(const Output& out);
    void clearResult();
    void updateControls();

    std::shared_ptr<InspectorSession> m_worker; ///< used only by jobs on the runner's worker thread
    quint64 m_experimentGeneration = 0;
    int64_t m_contextLength = 0; ///< the run's task.n_context (range of "Changed example i" for sampled prompts)
    std::optional<icl::Prompt> m_shared;
    std::optional<icl::PatchingResult> m_result;
    icl::Prompt m_clean;
    icl::Prompt m_corrupted;
    icl::PatchingOptions m_resultOptions;
    bool m_resultShared = false;

    QLabel* m_heading = nullptr;
    QComboBox* m_corruption = nullptr;
    QSpinBox* m_example = nullptr;
    QSpinBox* m_seed = nullptr;
    QSpinBox* m_promptSeed = nullptr;
    QCheckBox* m_useShared = nullptr;
    RequestRun* m_run = nullptr; ///< Run, Cancel, the progress bar and the running patching's state
    QLabel* m_summaryLabel = nullptr;
    QTableWidget* m_labels = nullptr;
    widgets::HeatmapView* m_heatmap = nullptr;
};

} // namespace icl::gui
