#pragma once
// Attention page: the attention patterns of every head for one prompt, a prompt editor that re-runs
// the model on every edit, the model's prediction beside every baseline, and the regression lens.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "app/gui/analysis_page.h"
#include "app/gui/attention_prompt_editor.h"
#include "app/gui/gui_forward.h"
#include "core/analysis/inspector.h"
#include "core/types/figure.h"
#include "core/types/inspection.h"
#include "core/types/run_summary.h"
#include <QString>
#include <QStringList>

namespace icl::widgets {
struct BarChart;
} // namespace icl::widgets

namespace icl::gui {

class AttentionHeadViews;
class InspectorSession;
class PredictionTable;
struct InspectResult;

/// Interactive inspector of one checkpoint (issue "Interactive inspector"; von Oswald et al. 2023 for
/// LSA, Guo et al. 2023 for GPT-2). One icl::Inspector lives on the page's worker thread
/// (AnalysisRunner): every prompt edit, checkpoint change or ablation re-runs Inspector::inspect and
/// Inspector::lens there (and renders the thumbnails, so the GUI thread only paints); a newer request replaces a queued
/// one and the result of a superseded one is dropped (latest request wins). Shows: the layers × heads grid of
/// attention-pattern thumbnails, the selected head large (token labels, legend, hover "query → key: weight", click a
/// row to select a query token), that row as a bar chart, the head summaries (entropy, copy mass; sortable), the
/// regression lens with GD-k / ridge / least-squares lines, the prompt editor (edit, add, delete, move,
/// duplicate, resample a row or the whole prompt, label noise σ, Open…/Save… a prompt file as JSON or CSV:
/// core/io/prompt_file.h) and the predictions of the model and every baseline with their errors against
/// the true label (none when the query's label is unknown, e.g. left out of an opened file). Computes
/// only while shown (setActive). The prompt editor (PromptEditor), the tables (HeadSummaryTable,
/// PredictionTable) and the worker's computation (InspectorSession) are their own classes; the page binds them.
/// Thread affinity: GUI thread only.
class AttentionPage : public AnalysisPage {
    Q_OBJECT
public:
    explicit AttentionPage(QWidget* parent = nullptr);
    ~AttentionPage() override;

    /// Prompt edits re-run in milliseconds: they drive Cancel and idle, not the progress bar.
    bool reportsProgress() const override { return false; }

    /// The prompt shown in the editor (empty before the first sample).
    const icl::Prompt& prompt() const { return m_editor->prompt(); }
    bool hasPrompt() const { return m_editor->hasPrompt(); }
    /// Replaces the prompt (e.g. from a test or another page) and re-runs the model.
    void setPrompt(const icl::Prompt& prompt);
    /// Opens a prompt file (the Open… button): read on the worker with icl::readPromptFile, checked against
    /// the run's d and the model's largest N, then inspected exactly as an edit. A bad file shows its one-line
    /// error in the status line and keeps the current prompt. A prompt without a task vector w cannot
    /// resample a row or relabel (those buttons are off, their tooltips say why).
    void openPrompt(const QString& path);
    /// The file the prompt was opened from (empty for a sampled prompt).
    const QString& promptFile() const { return m_editor->promptFile(); }
    /// The inspection shown (empty before the first result and after an error).
    const std::optional<icl::Inspection>& inspection() const { return m_inspection; }
    const std::optional<icl::RegressionLens>& lens() const { return m_lens; }
    int selectedLayer() const { return m_layer; }
    int selectedHead() const { return m_head; }
    int selectedQuery() const { return m_query; }
    /// Selects the head shown large (no recomputation).
    void selectHead(int layer, int head);
    /// Selects the query row of the bar chart.
    void selectQuery(int row);

    /// Export metadata of every plot: experiment, checkpoint_step, seed (the prompt's), prompt, ablation.
    std::map<std::string, std::string> metadata() const;
    /// Regression lens figure: the read-out of each layer's residual stream at the query; GD after k steps
    /// as markers at x = k (k = 0: the zero predictor at the embedding); ridge, least squares, the oracle,
    /// GD steps beyond the model's depth and the true label as horizontal dashed lines.
    static icl::Figure lensFigure(const icl::RegressionLens& lens, const std::map<std::string, std::string>& metadata);

    /// Writes the prompt with icl::writePromptFile (the Save… button): JSON when `path` ends in ".json", else
    /// CSV ("# key: value" lines of metadata(), header x_1,…,x_d,y, one row per point, the query last);
    /// numbers read back exactly, so an edited prompt stays reproducible. False and `*error` (one line)
    /// when the file cannot be written.
    bool exportPrompt(const std::string& path, std::string* error) const;

    /// Names of the tabs under the large pattern, for `--page attention --tab NAME`: "query-row", "lens".
    static QStringList tabNames();
    /// Shows the tab `name` (one of tabNames()).
    void showTab(const QString& name);

    /// Exports the plot last clicked (File ▸ Export current plot); false when none is shown.
    bool exportCurrentPlot() override;

    widgets::AttentionGrid* grid() const;
    widgets::AttentionPatternView* patternView() const;
    widgets::BarChartView* rowChart() const;
    widgets::PlotView* lensPlot() const;
    QTableWidget* headTable() const;
    QTableWidget* predictionTable() const;
    /// The prompt editor: the prompt table, seed, noise and ablation choosers and the edit buttons.
    PromptEditor* promptEditor() const { return m_editor; }
    QLabel* targetLabel() const { return m_predictions.target; }

Q_SIGNALS:
    /// The prompt changed (edit, resample, new experiment); the Patching page can follow it.
    void promptChanged(const icl::Prompt& prompt);

protected:
    /// A new experiment (the base's compute-when-shown protocol): drops the previous prompt and results; the
    /// checkpoint is loaded and a prompt sampled (seed from the seed box) when the page is (or becomes) shown.
    bool bind(const icl::RunSummary& summary, QString* why) override;
    /// Runs the model and every baseline on the prompt (with the pending edit) at the bound checkpoint; a new
    /// checkpoint from the timeline re-runs the current prompt.
    void compute() override;
    /// Drops queued requests and the result of the running one.
    void cancelJobs() override;
    void jobsFinished() override { updateControls(); }

private:
    void request(std::optional<PromptMutation> mutation = std::nullopt);
    void showResult(const InspectResult& result);
    void showInspection();
    void showSelectedHead();
    void fillTarget();
    void updateControls();
    void promptEdited();
    void clearViews();
    std::vector<icl::Ablation> ablations() const;

    /// The Inspector and what it has loaded; used only by jobs on the runner's worker thread.
    std::shared_ptr<InspectorSession> m_worker;
    quint64 m_experimentGeneration = 0; ///< bumped by showExperiment: the worker reloads the file
    std::optional<PromptMutation> m_pendingMutation;

    std::optional<icl::Inspection> m_inspection;
    std::optional<icl::RegressionLens> m_lens;
    int m_layer = 0;
    int m_head = 0;
    int m_query = -1;

    QLabel* m_headingLabel = nullptr;
    /// Under the prompt editor: the query's true label (with the ablation in effect) and every predictor's prediction.
    struct PredictionViews {
        QLabel* target = nullptr;
        PredictionTable* table = nullptr;
    } m_predictions;
    AttentionHeadViews* m_views = nullptr;
    PromptEditor* m_editor = nullptr;
};

} // namespace icl::gui
