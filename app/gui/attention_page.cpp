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

AttentionPage::AttentionPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("attention"), parent)
    , m_worker(std::make_shared<InspectorSession>())
{
    const auto [content, layout]
        = createContent(tr("Open a trained experiment to see what each head attends to, edit the prompt "
                           "and compare the model's prediction with gradient descent, ridge and least "
                           "squares."));
    m_headingLabel = new QLabel(content);
    m_headingLabel->setObjectName(QStringLiteral("attentionHeading"));
    m_headingLabel->setWordWrap(true);
    m_headingLabel->setTextFormat(Qt::PlainText); // names a file and may quote an error
    // This page's status line is rich text (errors in red): what it shows from a file is HTML-escaped.
    statusLabel()->setTextFormat(Qt::RichText);
    layout->addWidget(m_headingLabel);

    auto* columns = new QSplitter(Qt::Horizontal, content);
    columns->setObjectName(QStringLiteral("attentionColumns"));
    columns->setChildrenCollapsible(false);

    // --- left: thumbnails and head summaries; middle: the selected head large, its query row, the lens ---
    m_views = new AttentionHeadViews(columns);

    // --- right: prompt editor and predictions ---
    m_editor = new PromptEditor(columns);
    m_predictions.target = new QLabel(m_editor);
    m_predictions.target->setObjectName(QStringLiteral("attentionTarget"));
    m_predictions.target->setWordWrap(true);
    m_editor->columnLayout()->addWidget(m_predictions.target);
    m_predictions.table = new PredictionTable(m_editor);
    m_editor->columnLayout()->addWidget(m_predictions.table, 3);
    m_editor->columnLayout()->addWidget(m_status);

    columns->addWidget(m_editor);
    columns->setStretchFactor(0, 3);
    columns->setStretchFactor(1, 4);
    columns->setStretchFactor(2, 3);
    // The head table's five columns; the prompt editor: x_1 … x_8 and y side by side.
    columns->setSizes({ 310, 410, 380 });
    layout->addWidget(columns, 1);

    // --- wiring ---
    connect(grid(), &widgets::AttentionGrid::headSelected, this, &AttentionPage::selectHead);
    connect(patternView(), &widgets::AttentionPatternView::querySelected, this, &AttentionPage::selectQuery);
    connect(m_views->headTable(), &HeadSummaryTable::headSelected, this, &AttentionPage::selectHead);
    connect(m_editor, &PromptEditor::edited, this, &AttentionPage::promptEdited);
    connect(m_editor, &PromptEditor::mutationRequested, this, [this](const PromptMutation& m) { request(m); });
    connect(m_editor, &PromptEditor::statusMessage, m_status, &QLabel::setText);
    connect(m_editor, &PromptEditor::selectionChanged, this, &AttentionPage::updateControls);
    connect(m_editor, &PromptEditor::ablationChanged, this, [this] { request(); });
    connect(m_editor, &PromptEditor::openRequested, this, &AttentionPage::openPrompt);
    connect(m_editor, &PromptEditor::saveRequested, this, [this](const QString& path) {
        std::string error;
        if (!exportPrompt(path.toStdString(), &error))
            QMessageBox::warning(this, tr("Save failed"), shownText(error));
        else
            m_status->setText(tr("Saved the prompt to %1.").arg(shownText(QFileInfo(path).fileName()).toHtmlEscaped()));
    });
    clearViews();
    updateControls();
}

AttentionPage::~AttentionPage() = default; // the runner (a child) joins its worker

widgets::AttentionGrid* AttentionPage::grid() const
{
    return m_views->grid();
}
widgets::AttentionPatternView* AttentionPage::patternView() const
{
    return m_views->patternView();
}
widgets::BarChartView* AttentionPage::rowChart() const
{
    return m_views->rowChart();
}
widgets::PlotView* AttentionPage::lensPlot() const
{
    return m_views->lensPlot();
}
QTableWidget* AttentionPage::headTable() const
{
    return m_views->headTable();
}
QTableWidget* AttentionPage::predictionTable() const
{
    return m_predictions.table;
}

bool AttentionPage::bind(const icl::RunSummary& summary, QString* why)
{
    ++m_experimentGeneration;
    m_editor->reset();
    m_pendingMutation.reset();
    m_inspection.reset();
    m_lens.reset();
    m_layer = 0;
    m_head = 0;
    m_query = -1;
    clearViews();
    const QString file = shownText(QFileInfo(QString::fromStdString(summary.path)).fileName());
    if (summary.path.empty() || summary.checkpoints.empty() || checkpointStep() < 0) {
        *why = summary.path.empty() ? tr("Open a trained experiment to inspect its attention.")
                                    : tr("%1 has no saved checkpoint to inspect.").arg(file);
        showMessage(*why);
        updateControls();
        return false;
    }
    showContent();
    m_headingLabel->setText(tr("%1 · checkpoint %2 · loading…").arg(file).arg(checkpointStep()));
    m_pendingMutation = m_editor->sampleMutation();  // the first prompt, sampled when the page computes
    return true;
}

void AttentionPage::cancelJobs()
{
    if (!isBusy())
        return;
    runner()->cancel();
    (void)newTicket(); // a result still running is dropped
    m_pendingMutation.reset();
    m_status->setText(tr("Cancelled."));
    updateControls();
}

void AttentionPage::setPrompt(const icl::Prompt& prompt)
{
    m_editor->setPrompt(prompt);
    m_pendingMutation.reset();
    Q_EMIT promptChanged(prompt);
    request();
}

void AttentionPage::openPrompt(const QString& path)
{
    if (m_summary.path.empty() || m_step < 0) {
        m_status->setText(tr("Open an experiment first: a prompt is checked against its model."));
        return;
    }
    PromptMutation m;
    m.kind = PromptMutation::Kind::Open;
    m.path = path.toStdString();
    request(m);
}

std::vector<icl::Ablation> AttentionPage::ablations() const
{
    if (m_editor->ablationIndex() <= 0 || !m_inspection)
        return {};
    icl::Ablation a;
    a.kind = m_editor->ablationIndex() == 1 ? icl::Ablation::Kind::Zero : icl::Ablation::Kind::Mean;
    a.name = icl::actName(icl::Act::AttnOut, m_layer);
    a.head = m_head;
    return { a };
}

void AttentionPage::promptEdited()
{
    Q_EMIT promptChanged(m_editor->prompt());
    request();
}

void AttentionPage::request(std::optional<PromptMutation> mutation)
{
    if (mutation)
        m_pendingMutation = mutation;
    requestCompute(); // now when shown, else when the page is shown next
}

void AttentionPage::compute()
{
    if (!m_editor->hasPrompt() && !m_pendingMutation)
        m_pendingMutation = m_editor->sampleMutation();
    const Ticket ticket = newTicket();
    InspectRequest r;
    r.path = m_summary.path;
    r.generation = m_experimentGeneration;
    r.step = m_step;
    r.prompt = m_editor->prompt();
    r.mutation = m_pendingMutation;
    r.ablations = ablations();
    r.scale = patternView()->scaleMode();
    runner()->enqueue(
        InspectJob, tr("attention"),
        [this, ticket, worker = m_worker, r]() -> AnalysisRunner::Continuation {
            // Worker thread: only this job touches the Inspector.
            auto result = std::make_shared<InspectResult>(worker->inspect(r));
            return [this, ticket, result] {
                if (isCurrent(ticket))
                    showResult(*result); // else superseded
            };
        },
        [this, ticket](const QString& error) {
            if (!isCurrent(ticket))
                return;
            m_pendingMutation.reset();
            m_status->setText(QStringLiteral("<span style='color:#B2182B'>%1</span>").arg(error.toHtmlEscaped()));
            if (!m_editor->hasPrompt())
                m_headingLabel->setText(tr("Cannot inspect this experiment: %1").arg(error));
            updateControls();
        });
    m_status->setText(tr("Running the model…"));
    updateControls();
}

void AttentionPage::selectHead(int layer, int head)
{
    const bool changed = layer != m_layer || head != m_head;
    m_layer = layer;
    m_head = head;
    grid()->setSelectedHead(layer, head);
    if (m_inspection)
        m_views->headTable()->selectHead(layer, head);
    showSelectedHead();
    if (changed && m_editor->ablationIndex() > 0)
        request(); // the ablated head changed
}

void AttentionPage::selectQuery(int row)
{
    m_query = row;
    showSelectedHead();
    m_views->showQueryRow();
}

void AttentionPage::updateControls()
{
    m_editor->updateControls(
        m_pendingMutation.has_value(), !m_summary.path.empty() && m_step >= 0, m_inspection.has_value());
}

bool AttentionPage::exportPrompt(const std::string& path, std::string* error) const
{
    return m_editor->exportPrompt(path, metadata(), error);
}

QStringList AttentionPage::tabNames()
{
    return { QStringLiteral("query-row"), QStringLiteral("lens") };
}

void AttentionPage::showTab(const QString& name)
{
    m_views->showTab(name);
}

bool AttentionPage::exportCurrentPlot()
{
    if (!m_inspection)
        return false;
    m_views->exportCurrent();
    return true;
}

} // namespace icl::gui
