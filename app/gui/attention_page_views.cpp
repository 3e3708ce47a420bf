// AttentionPage's views of a result: the attention grid and patterns, the head and prediction tables, the regression
// lens, the query's true label, and the export metadata.
#include "app/gui/attention_page.h"

#include "core/models/names.h"
#include "core/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "app/gui/attention_head_views.h"
#include "app/gui/inspector_session.h"
#include "app/gui/attention_tables.h"
#include "app/gui/page_widgets.h"
#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/plot_view.h"

namespace icl::gui {

void AttentionPage::showResult(const InspectResult& result)
{
    const bool sampled = m_pendingMutation && m_pendingMutation->kind == PromptMutation::Kind::Sample;
    const bool opened = m_pendingMutation && m_pendingMutation->kind == PromptMutation::Kind::Open;
    const QString file = opened ? QString::fromStdString(m_pendingMutation->path) : QString();
    m_pendingMutation.reset();
    if (result.promptChanged) {
        m_editor->showComputedPrompt(result.prompt, sampled || opened, file);
        Q_EMIT promptChanged(m_editor->prompt());
    }
    m_inspection = result.inspection;
    m_lens = result.lens;
    grid()->setThumbnails(result.inspection.n_layers, result.inspection.n_heads, result.thumbnails,
        result.inspection.softmax_head, result.largest, result.scale, result.inspection.patterns);
    showInspection();
    QString status = tr("Model and baselines re-run in %1 ms.").arg(result.inspection.elapsed_ms, 0, 'f', 1);
    const icl::Prompt& prompt = m_editor->prompt();
    if (opened) {
        QString what = tr("Opened %1 (N = %2, d = %3).")
                           .arg(shownText(QFileInfo(m_editor->promptFile()).fileName()).toHtmlEscaped())
                           .arg(prompt.nContext())
                           .arg(prompt.dim());
        if (prompt.w.empty())
            what += tr(" It has no task vector w: Resample row and Relabel are off.");
        if (!std::isfinite(prompt.y.back()))
            what += tr(" The query's label is unknown: no errors are shown.");
        status = what + QLatin1Char(' ') + status;
    }
    m_status->setText(status);
    updateControls();
}

std::map<std::string, std::string> AttentionPage::metadata() const
{
    const icl::Prompt& p = m_editor->prompt();
    const int edits = m_editor->edits();
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(m_summary.path).filename().string();
    m["checkpoint_step"] = std::to_string(m_inspection ? m_inspection->checkpoint_step : m_step);
    m["seed"] = std::to_string(p.seed);
    if (!m_editor->promptFile().isEmpty())
        m["prompt_file"] = QFileInfo(m_editor->promptFile()).fileName().toStdString();
    std::string prompt = "N = " + std::to_string(p.nContext()) + ", d = " + std::to_string(p.dim());
    if (edits > 0)
        prompt += ", edited (" + std::to_string(edits) + (edits == 1 ? " edit)" : " edits)");
    m["prompt"] = prompt;
    if (m_editor->ablationIndex() > 0)
        m["ablation"] = std::string(m_editor->ablationIndex() == 1 ? "zero" : "mean") + " "
            + icl::actName(icl::Act::AttnOut, m_layer) + " head " + std::to_string(m_head);
    return m;
}

icl::Figure AttentionPage::lensFigure(
    const icl::RegressionLens& lens, const std::map<std::string, std::string>& metadata)
{
    icl::Figure f = icl::lensFigure(lens, icl::RunSummary {}, metadata); // the figure icl-cli export draws
    f.name = "regression_lens";
    if (!std::isfinite(lens.target)) // the query's label is unknown (an opened prompt without it): no line
        f.series.erase(std::remove_if(f.series.begin(), f.series.end(),
                           [](const icl::Series& s) { return s.name == "true label y_q"; }),
            f.series.end());
    return f;
}

void AttentionPage::clearViews()
{
    m_views->clear();
    m_predictions.table->setRowCount(0);
    m_predictions.target->clear();
}

void AttentionPage::showInspection()
{
    if (!m_inspection)
        return;
    const icl::Inspection& in = *m_inspection;
    std::vector<icl::Matrix> patterns = in.patterns;
    for (size_t i = 0; i < patterns.size(); ++i) {
        patterns[i].row_labels = in.token_labels;
        patterns[i].col_labels = in.key_labels;
        const int64_t layer = in.n_heads > 0 ? int64_t(i) / in.n_heads : 0;
        const int64_t head = in.n_heads > 0 ? int64_t(i) % in.n_heads : 0;
        patterns[i].name = "Attention pattern, layer " + std::to_string(layer) + ", head " + std::to_string(head);
    }
    m_inspection->patterns = patterns;
    if (m_layer >= in.n_layers || m_head >= in.n_heads) {
        m_layer = 0;
        m_head = 0;
    }
    grid()->setSelectedHead(m_layer, m_head);
    const int T = int(in.token_labels.size());
    if (m_query < 0 || m_query >= T)
        m_query = T - 1;
    const QString file = m_editor->promptFile();
    m_headingLabel->setText(tr("%1 · checkpoint %2 · %3 × %4 · %5 tokens · %6%7")
                                .arg(shownText(QFileInfo(QString::fromStdString(m_summary.path)).fileName()))
                                .arg(in.checkpoint_step)
                                .arg(in.n_layers == 1 ? tr("1 layer") : tr("%1 layers").arg(in.n_layers))
                                .arg(in.n_heads == 1 ? tr("1 head") : tr("%1 heads").arg(in.n_heads))
                                .arg(T)
                                .arg(file.isEmpty() ? tr("prompt seed %1").arg(m_editor->prompt().seed)
                                                    : tr("prompt %1").arg(shownText(QFileInfo(file).fileName())))
                                .arg(m_editor->edits() > 0 ? tr(", edited") : QString()));
    showSelectedHead();
    m_views->headTable()->fill(in.heads, m_layer, m_head);
    m_predictions.table->fill(in.predictions);
    fillTarget();
    if (m_lens)
        lensPlot()->setFigure(lensFigure(*m_lens, metadata()));
}

void AttentionPage::showSelectedHead()
{
    if (m_inspection)
        m_views->showHead(*m_inspection, m_layer, m_head, m_query, metadata());
}

void AttentionPage::fillTarget()
{
    const icl::Inspection& in = *m_inspection;
    const int ablation = m_editor->ablationIndex();
    m_predictions.target->setText(
        (std::isfinite(in.target) ? tr("True label of the query y = <b>%1</b>%2").arg(formatValue(in.target, 6))
                                  : tr("True label of the query: <b>unknown</b> (type it in the query's y "
                                       "cell to see the errors)%1"))
            .arg(ablation > 0 ? tr(" · layer %1 head %2 %3-ablated")
                                    .arg(m_layer)
                                    .arg(m_head)
                                    .arg(ablation == 1 ? tr("zero") : tr("mean"))
                              : QString()));
}

} // namespace icl::gui
