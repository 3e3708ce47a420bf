#include "app/gui/icl_iwl_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextStream>
#include <QVBoxLayout>


#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "app/gui/sequence_view.h"
#include "app/gui/sweep_view.h"
#include "core/analysis/fewshot_sequence.h"
#include "core/report.h"
#include "widgets/bar_chart_view.h"
#include "widgets/exemplar_strip.h"
#include "widgets/plot_view.h"
#include "core/io/config.h"
#include "core/io/kinds.h"

namespace icl::gui {

namespace {

/// Tab indices of the page.
enum Tab { TrainingTab = 0, SweepTab = 1, SequenceTab = 2 };

/// task.kind of the run's stored config ("" when it cannot be read).
std::string taskKind(const icl::RunSummary& summary)
{
    return summary.config ? summary.config->task.kind : std::string();
}

/// True when the run splits its training classes into common and rare ones (task.n_common_classes > 0).
bool hasCommonRareSplit(const icl::RunSummary& summary)
{
    return summary.config && summary.config->task.n_common_classes > 0;
}

} // namespace

IclIwlPage::IclIwlPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("iclIwl"), parent)
{
    followTrainingWith([this] { showCurves(); });
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("iclIwlTabs"));
    outer->addWidget(m_tabs);
    auto* training = new QWidget(m_tabs);
    m_tabs->addTab(training, tr("Over training"));
    auto* layout = makeContentLayout(training);

    m_message = new QLabel(training);
    m_message->setObjectName(QStringLiteral("iclIwlMessage"));
    m_message->setWordWrap(true);
    m_message->setText(tr("Open a few-shot classification run (task fewshot_classification) to compare in-context "
                          "and in-weights learning."));
    layout->addWidget(m_message);

    m_content = new QWidget(training);
    auto* body = new QHBoxLayout(m_content);
    body->setContentsMargins(0, 0, 0, 0);
    body->setSpacing(6);
    m_plot = new widgets::PlotView(m_content);
    m_plot->setObjectName(QStringLiteral("iclIwlPlot"));
    body->addWidget(m_plot, 1);

    auto* panel = new QGroupBox(tr("Selected checkpoint"), m_content);
    panel->setObjectName(QStringLiteral("iclIwlPanel"));
    panel->setToolTip(tr("ICL: 2 holdout classes, 4 shots each, labels {0, 1} drawn per sequence. IWL: the query's "
                         "class is a training class absent from the context (no support), fixed labels."));
    auto* form = new QFormLayout(panel);
    m_sequences = makeSpinBox(panel, "iclIwlSequences", 0, 1000000, 0, 256);
    m_sequences->setSpecialValueText(tr("run's own"));
    m_sequences->setToolTip(tr("Sequences per evaluation (the run's own evaluation sequences when 0, so that the "
                               "numbers equal the metrics stored at that step; otherwise fresh sequences)"));
    form->addRow(tr("Sequences"), m_sequences);
    addValueRows(form, panel,
        { { &m_panel[CheckpointRow], "iclIwlCheckpoint", tr("Checkpoint"), QString() },
            { &m_panel[IclRow], "iclIwlIclAccuracy", tr("ICL accuracy, labels {0, 1}"),
                tr("Holdout classes, argmax over labels {0, 1} (chance 0.5)") },
            { &m_panel[IclAllLabelsRow], "iclIwlIclAllLabels", tr("ICL accuracy, all labels"),
                tr("The same holdout sequences, argmax over every label") },
            { &m_panel[IwlRow], "iclIwlIwlAccuracy", tr("IWL accuracy"),
                tr("Training classes with no support in the context, argmax over every label") },
            { &m_panel[IclInContextRow], "iclIwlIclInContext", tr("ICL: output in context"),
                tr("How often the output (argmax over every label) is a label present in the context, on the ICL "
                   "sequences") },
            { &m_panel[IwlInContextRow], "iclIwlIwlInContext", tr("IWL: output in context"),
                tr("How often the output is a label present in the context, on the IWL sequences (where the right "
                   "label never is)") } });
    // With a common / rare split of the training classes (task.n_common_classes > 0) only.
    addValueRows(form, panel,
        { { &m_panel[IclCommonRow], "iclIwlIclCommon", tr("ICL, common classes"),
              tr("2 common classes, 4 shots each, labels {0, 1} drawn per sequence, argmax over {0, 1}") },
            { &m_panel[IclRareRow], "iclIwlIclRare", tr("ICL, rare classes"), tr("The same on 2 rare classes") },
            { &m_panel[IwlCommonRow], "iclIwlIwlCommon", tr("IWL, common classes"),
                tr("Query and context from common classes, no support, argmax over every label") },
            { &m_panel[IwlRareRow], "iclIwlIwlRare", tr("IWL, rare classes"), tr("The same on rare classes") } });
    for (int row = IclCommonRow; row <= IwlRareRow; ++row)
        form->setRowVisible(m_panel[row], false);
    m_panelForm = form;
    form->addRow(m_status);
    panel->setFixedWidth(340);
    body->addWidget(panel, 0, Qt::AlignTop);
    layout->addWidget(m_content, 1);
    m_content->setVisible(false);
    layout->addStretch(0);

    // --- sweep tab ---
    m_sweepView = new SweepView(m_tabs);
    m_tabs->addTab(m_sweepView, tr("Sweep"));

    // --- sequence viewer tab ---
    m_sequenceView = new SequenceView(m_tabs);
    m_tabs->addTab(m_sequenceView, tr("Sequence"));
    connect(m_sequenceView, &SequenceView::changed, this, [this] {
        m_sequenceStale = true;
        if (sequenceReady())
            runSequence();
    });
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] {
        if (m_sequenceStale && sequenceReady())
            runSequence();
    });

    connect(m_sequences, qOverload<int>(&QSpinBox::valueChanged), this, &IclIwlPage::requestCompute);
}

QString IclIwlPage::fractionText(double value, int64_t n)
{
    if (!std::isfinite(value))
        return QStringLiteral("—");
    return QStringLiteral("%1 (%2/%3)")
        .arg(QString::number(value, 'f', 4))
        .arg(std::llround(value * double(n)))
        .arg(n);
}

bool IclIwlPage::bind(const icl::RunSummary& summary, QString* why)
{
    if (m_sequencePending) { // its result was dropped with the runner's queue
        m_sequencePending = false;
        m_sequenceView->statusLabel()->setText(tr("Cancelled. Resample to draw again."));
    }
    m_result.reset();
    clearPanel();
    m_sequenceView->clear();
    const std::string kind = taskKind(summary);
    const bool supported
        = summary.config && icl::kindOf(summary.config->task) == icl::TaskKind::FewshotClassification;
    for (int row = IclCommonRow; row <= IwlRareRow; ++row)
        m_panelForm->setRowVisible(m_panel[row], supported && hasCommonRareSplit(summary));
    m_content->setVisible(supported);
    m_message->setVisible(!supported);
    if (!supported) {
        m_plot->setFigure(icl::Figure {});
        *why = tr("The ICL vs IWL page is for fewshot_classification runs (Chan et al. 2022); this run's task is %1.")
                   .arg(kind.empty() ? tr("unknown") : shownText(kind));
        m_message->setText(*why);
        m_sequenceStale = false;
        m_sequenceView->statusLabel()->setText(tr("The sequence viewer is for fewshot_classification runs."));
        return false;
    }
    showCurves();
    m_sequenceStale = true;
    return true;
}

void IclIwlPage::showCurves()
{
    try {
        m_plot->setFigure(icl::iclIwlFigure(m_summary));
    } catch (const std::exception& e) { // a run that has not evaluated yet
        m_plot->setFigure(icl::Figure {});
        m_status->setText(errorText(e, m_summary.path));
    }
}

void IclIwlPage::clearPanel()
{
    for (QLabel* label : m_panel)
        label->setText(QStringLiteral("—"));
}

bool IclIwlPage::isStale() const
{
    return m_stale || m_sequenceStale;
}

void IclIwlPage::markStale()
{
    m_stale = true;
    m_sequenceStale = true;
}

void IclIwlPage::refresh()
{
    AnalysisPage::refresh();
    if (m_sequenceStale && sequenceReady())
        runSequence();
}

void IclIwlPage::cancelJobs()
{
    AnalysisPage::cancelJobs();
    if (m_sequencePending) { // its result is dropped with the runner's queue
        m_sequencePending = false;
        m_sequenceStale = true;
        m_sequenceView->statusLabel()->setText(tr("Cancelled. Resample to draw again."));
    }
}

void IclIwlPage::setSequenceCount(int64_t n)
{
    m_sequences->setValue(int(n)); // re-runs through valueChanged when it changes
}

icl::IclIwlOptions IclIwlPage::options() const
{
    icl::IclIwlOptions o;
    o.checkpoint_step = m_step;
    o.n_sequences = m_sequences->value();
    return o;
}

void IclIwlPage::compute()
{
    const Ticket t = newTicket();
    const icl::IclIwlOptions o = options();
    const std::string path = m_path;
    m_status->setText(tr("Evaluating checkpoint %1…").arg(m_step));
    const Progress progress = progressReporter(t, tr("ICL vs IWL"));
    // The ICL accuracy is shown as soon as it is known (half the work); the IWL evaluation follows.
    const auto firstLook = firstLookCallback<icl::IclIwlResult>(
        t, [this](const icl::IclIwlResult& first) { showResult(first, true); });
    submit<icl::IclIwlResult>(
        IclIwlJob, tr("ICL vs IWL"), t,
        [path, o, progress, firstLook] { return icl::computeIclIwl(path, o, progress, firstLook); },
        [this](const icl::IclIwlResult& r) { showResult(r, false); }, [this] { clearPanel(); });
}

void IclIwlPage::showResult(const icl::IclIwlResult& r, bool firstLook)
{
    m_result = r;
    m_panel[CheckpointRow]->setText(tr("step %1").arg(r.checkpoint_step));
    m_panel[IclRow]->setText(fractionText(r.icl_accuracy, r.n_sequences));
    m_panel[IclAllLabelsRow]->setText(fractionText(r.icl_accuracy_all_labels, r.n_sequences));
    m_panel[IwlRow]->setText(fractionText(r.iwl_accuracy, r.n_sequences));
    m_panel[IclInContextRow]->setText(fractionText(r.icl_in_context_rate, r.n_sequences));
    m_panel[IwlInContextRow]->setText(fractionText(r.iwl_in_context_rate, r.n_sequences));
    const std::vector<std::pair<QLabel*, double>> split
        = { { m_panel[IclCommonRow], r.icl_accuracy_common }, { m_panel[IclRareRow], r.icl_accuracy_rare },
              { m_panel[IwlCommonRow], r.iwl_accuracy_common }, { m_panel[IwlRareRow], r.iwl_accuracy_rare } };
    for (const auto& [label, value] : split) {
        label->setText(fractionText(value, r.n_sequences));
        m_panelForm->setRowVisible(label, r.common_rare_split);
    }
    if (firstLook) {
        m_status->setText(tr("ICL evaluated on %1 sequences; evaluating IWL…").arg(r.n_sequences));
        Q_EMIT firstLookShown();
    } else {
        m_status->clear();
    }
}

widgets::PlotView* IclIwlPage::currentPlot() const
{
    switch (m_tabs->currentIndex()) {
    case SweepTab:
        return m_sweepView->plot();
    case SequenceTab:
        return nullptr;
    default:
        return m_plot;
    }
}

bool IclIwlPage::exportCurrentPlot()
{
    if (m_tabs->currentIndex() == SequenceTab)
        return exportIfShown(m_sequenceView->sequence().has_value(), m_sequenceView->probabilityChart());
    return AnalysisPage::exportCurrentPlot();
}

QStringList IclIwlPage::tabNames()
{
    return { QStringLiteral("training"), QStringLiteral("sweep"), QStringLiteral("sequence") };
}

bool IclIwlPage::showTab(const QString& name)
{
    const int index = int(tabNames().indexOf(name));
    if (index < 0)
        return false;
    m_tabs->setCurrentIndex(index);
    return true;
}

bool IclIwlPage::openSweep(const QString& dir)
{
    m_tabs->setCurrentIndex(SweepTab);
    return m_sweepView->openSweep(dir);
}

bool IclIwlPage::sequenceReady() const
{
    return ready() && m_tabs->currentIndex() == SequenceTab;
}

void IclIwlPage::runSequence()
{
    m_sequenceStale = false;
    m_sequencePending = true;
    const quint64 generation = ++m_sequenceGeneration;
    const std::string path = m_path;
    const qint64 step = m_step;
    const icl::FewShotSequenceKind kind = sequenceKind();
    const uint64_t seed = sequenceSeed();
    m_sequenceView->statusLabel()->setText(tr("Sampling a sequence (checkpoint %1)…").arg(step));
    runner()->enqueue(
        SequenceJob, tr("Sequence viewer"),
        [this, generation, path, step, kind, seed]() -> AnalysisRunner::Continuation {
            const icl::FewShotSequence s = icl::sampleFewShotSequence(path, step, kind, seed);
            return [this, generation, s] {
                if (generation != m_sequenceGeneration)
                    return;
                m_sequencePending = false;
                m_sequenceView->showSequence(s, m_path);
                m_sequenceView->statusLabel()->clear();
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_sequenceGeneration)
                return;
            m_sequencePending = false;
            m_sequenceView->clear();
            m_sequenceView->statusLabel()->setText(error);
        });
}

void IclIwlPage::setSequence(icl::FewShotSequenceKind kind, uint64_t seed)
{
    m_sequenceView->setSequence(kind, seed);
    m_sequenceStale = true;
    if (sequenceReady())
        runSequence();
}

icl::FewShotSequenceKind IclIwlPage::sequenceKind() const { return m_sequenceView->kind(); }
uint64_t IclIwlPage::sequenceSeed() const { return m_sequenceView->seed(); }
void IclIwlPage::resampleSequence() { m_sequenceView->resample(); }

} // namespace icl::gui
