#pragma once
// Pasting page (Guo et al. 2023, docs/science.md §2): cut a trained GPT-2 at layer ℓ, train a new embedding
// under its frozen upper blocks and a same-size model from scratch, and compare their ICL curves with
// ridge regression.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <QString>

#include "app/gui/analysis_page.h"
#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"
#include "app/gui/pasting_options.h"
#include "core/analysis/pasting.h"
#include "core/types/figure.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// Configures and runs icl::computePasting on the open gpt2 experiment (the parent) at the checkpoint
/// selected on the timeline, like `icl-cli analyze RUN.h5 paste`: the pasted model is written to a new
/// experiment file (default RUN.paste-l<ℓ>-<embedding>.h5 next to the parent) and the comparison is
/// stored in the parent under /analysis/pasting/<id>. Nothing runs until Run is pressed. The run goes
/// to a worker thread (AnalysisRunner); its (done, total) training steps feed the progress bar through
/// a polling timer; Cancel makes the progress callback return false, and a cancelled run shows no
/// result and leaves no pasted file behind. Two plots: the ICL curves (pasted, scratch, ridge, zero)
/// against the number of in-context examples, and the loss curves over training steps; both export
/// like every PlotView (PNG, SVG, PDF, CSV). gpt2 runs only; others get a message instead.
/// Thread affinity: GUI thread only.
class RequestRun;

class PastingPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit PastingPage(QWidget* parent = nullptr);
    ~PastingPage() override;

    /// Asks the running pasting to stop at its next training step (no-op when idle).
    void cancelJobs() override;
    QString cancelledMessage() const override { return tr("Pasting cancelled (stops at its next training step)"); }
    QString doneMessage() const override { return tr("Pasting: done"); }

    /// Starts a pasting with the page's options. When the output file exists and `overwrite` is false,
    /// asks first (`ask`) or refuses with a status message. Returns false when nothing was started
    /// (unsupported run, busy, refused overwrite).
    bool startPasting(bool ask = true, bool overwrite = false);

    /// gpt2 models only; `why` gets the message shown otherwise.
    static bool supports(const icl::RunSummary& summary, QString* why);
    /// `icl-cli analyze PARENT paste` default output: PARENT's folder and stem + ".paste-l<ℓ>-<embedding>.h5".
    static QString defaultOutputPath(const QString& parentPath, int64_t cutLayer, const QString& embedding);

    /// The options of the next run, from the controls (checkpoint: the timeline's; out_path: the field or
    /// the default; overwrite false; store true).
    icl::PastingOptions options() const;
    /// Intra-op threads of the run (0 = all cores; tests use 1).
    void setThreads(int threads) { m_threads = threads; }

    /// The result shown (empty before the first finished run, and after a cancelled or failed one).
    const std::optional<icl::PastingResult>& result() const { return m_result; }
    /// The plot the File ▸ Export action exports: the one last clicked, else the ICL curves.
    widgets::PlotView* currentPlot() const override { return m_currentPlot; }

    widgets::PlotView* iclPlot() const { return m_iclPlot; }
    widgets::PlotView* lossPlot() const { return m_lossPlot; }
    /// The options form: cut layer, embedding, training and evaluation settings, output file.
    PastingOptionsForm* optionsForm() const { return m_form; }
    QPushButton* runButton() const;
    QPushButton* cancelButton() const;
    QPushButton* openPastedButton() const { return m_openPasted; }
    QProgressBar* progressBar() const;
    QLabel* summaryLabel() const { return m_summaryLabel; }

Q_SIGNALS:
    /// The user asked to open the pasted model's experiment file.
    void openRequested(const QString& path);

protected:
    /// Binds a parent file: sets the cut-layer range to 0..L−1 and shows the latest pasting stored in the file
    /// (icl::readStoredPastings), if any, else no result. False (with the message) for a run that is not a gpt2.
    bool bind(const icl::RunSummary& summary, QString* why) override;
    /// Shows the parent checkpoint of the next run (the timeline's).
    void checkpointChanged(bool changed) override;
    bool eventFilter(QObject* watched, QEvent* event) override;
    void jobsFinished() override;

private:
    void showResult(const icl::PastingResult& result, const icl::PastingOptions& options);
    void showLatestStored();
    void clearResult();
    void updateControls();

    int64_t m_parentLayers = 0;
    int m_threads = 0;
    std::optional<icl::PastingResult> m_result;

    QLabel* m_parentLabel = nullptr;
    PastingOptionsForm* m_form = nullptr;
    RequestRun* m_run = nullptr; ///< Run, Cancel, the progress bar and the running pasting's state
    QPushButton* m_openPasted = nullptr;
    QLabel* m_summaryLabel = nullptr;
    widgets::PlotView* m_iclPlot = nullptr;
    widgets::PlotView* m_lossPlot = nullptr;
    widgets::PlotView* m_currentPlot = nullptr;
};

} // namespace icl::gui
