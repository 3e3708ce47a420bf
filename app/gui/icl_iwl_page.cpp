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

enum JobKey { IclIwlJob = 900, SequenceJob = 901 };

/// Tab indices of the page.
enum Tab { TrainingTab = 0, SweepTab = 1, SequenceTab = 2 };

/// The sequence kinds in the viewer's combo box, with their names on screen.
const std::vector<std::pair<icl::FewShotSequenceKind, const char*>>& sequenceKinds()
{
    static const std::vector<std::pair<icl::FewShotSequenceKind, const char*>> kinds
        = { { icl::FewShotSequenceKind::Training, QT_TRANSLATE_NOOP("IclIwlPage", "Training (as drawn)") },
              { icl::FewShotSequenceKind::TrainingBursty, QT_TRANSLATE_NOOP("IclIwlPage", "Training, bursty") },
              { icl::FewShotSequenceKind::TrainingIid, QT_TRANSLATE_NOOP("IclIwlPage", "Training, i.i.d.") },
              { icl::FewShotSequenceKind::Icl, QT_TRANSLATE_NOOP("IclIwlPage", "ICL evaluation (holdout, labels {0, 1})") },
              { icl::FewShotSequenceKind::Iwl, QT_TRANSLATE_NOOP("IclIwlPage", "IWL evaluation (no support)") } };
    return kinds;
}

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

QLabel* valueLabel(QWidget* parent, const char* name)
{
    auto* label = new QLabel(QStringLiteral("—"), parent);
    label->setObjectName(QLatin1String(name));
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

} // namespace

IclIwlPage::IclIwlPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("iclIwl"), parent)
{
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
    m_sequences = new QSpinBox(panel);
    m_sequences->setObjectName(QStringLiteral("iclIwlSequences"));
    m_sequences->setRange(0, 1000000);
    m_sequences->setSingleStep(256);
    m_sequences->setSpecialValueText(tr("run's own"));
    m_sequences->setToolTip(tr("Sequences per evaluation (the run's own evaluation sequences when 0, so that the "
                               "numbers equal the metrics stored at that step; otherwise fresh sequences)"));
    form->addRow(tr("Sequences"), m_sequences);
    m_checkpointValue = valueLabel(panel, "iclIwlCheckpoint");
    form->addRow(tr("Checkpoint"), m_checkpointValue);
    m_iclValue = valueLabel(panel, "iclIwlIclAccuracy");
    m_iclValue->setToolTip(tr("Holdout classes, argmax over labels {0, 1} (chance 0.5)"));
    form->addRow(tr("ICL accuracy, labels {0, 1}"), m_iclValue);
    m_iclAllValue = valueLabel(panel, "iclIwlIclAllLabels");
    m_iclAllValue->setToolTip(tr("The same holdout sequences, argmax over every label"));
    form->addRow(tr("ICL accuracy, all labels"), m_iclAllValue);
    m_iwlValue = valueLabel(panel, "iclIwlIwlAccuracy");
    m_iwlValue->setToolTip(tr("Training classes with no support in the context, argmax over every label"));
    form->addRow(tr("IWL accuracy"), m_iwlValue);
    m_iclInContextValue = valueLabel(panel, "iclIwlIclInContext");
    m_iclInContextValue->setToolTip(tr("How often the output (argmax over every label) is a label present in the "
                                       "context, on the ICL sequences"));
    form->addRow(tr("ICL: output in context"), m_iclInContextValue);
    m_iwlInContextValue = valueLabel(panel, "iclIwlIwlInContext");
    m_iwlInContextValue->setToolTip(tr("How often the output is a label present in the context, on the IWL "
                                       "sequences (where the right label never is)"));
    form->addRow(tr("IWL: output in context"), m_iwlInContextValue);
    // With a common / rare split of the training classes (task.n_common_classes > 0) only.
    const std::vector<std::tuple<QLabel**, const char*, QString, QString>> split = {
        { &m_iclCommonValue, "iclIwlIclCommon", tr("ICL, common classes"),
            tr("2 common classes, 4 shots each, labels {0, 1} drawn per sequence, argmax over {0, 1}") },
        { &m_iclRareValue, "iclIwlIclRare", tr("ICL, rare classes"), tr("The same on 2 rare classes") },
        { &m_iwlCommonValue, "iclIwlIwlCommon", tr("IWL, common classes"),
            tr("Query and context from common classes, no support, argmax over every label") },
        { &m_iwlRareValue, "iclIwlIwlRare", tr("IWL, rare classes"), tr("The same on rare classes") } };
    for (const auto& [value, name, text, tip] : split) {
        *value = valueLabel(panel, name);
        (*value)->setToolTip(tip);
        form->addRow(text, *value);
        form->setRowVisible(*value, false);
    }
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
    m_sequenceTab = new QWidget(m_tabs);
    m_sequenceTab->setObjectName(QStringLiteral("iclIwlSequenceTab"));
    m_tabs->addTab(m_sequenceTab, tr("Sequence"));
    auto* seqLayout = makeContentLayout(m_sequenceTab);
    auto* seqControls = new QHBoxLayout;
    seqControls->addWidget(new QLabel(tr("Sequence"), m_sequenceTab));
    m_sequenceKind = new QComboBox(m_sequenceTab);
    m_sequenceKind->setObjectName(QStringLiteral("iclIwlSequenceKind"));
    for (const auto& [kind, name] : sequenceKinds())
        m_sequenceKind->addItem(tr(name), QString::fromStdString(icl::fewShotSequenceKindName(kind)));
    m_sequenceKind->setToolTip(tr("Training: as the task draws it (bursty with probability p_bursty), or forced bursty "
                                  "(query class ×3, a second class ×3, others) or i.i.d. ICL: 2 holdout classes × 4 "
                                  "shots, labels {0, 1} drawn per sequence. IWL: the query's class is absent from the "
                                  "context."));
    seqControls->addWidget(m_sequenceKind);
    seqControls->addWidget(new QLabel(tr("seed"), m_sequenceTab));
    m_sequenceSeed = new QSpinBox(m_sequenceTab);
    m_sequenceSeed->setObjectName(QStringLiteral("iclIwlSequenceSeed"));
    m_sequenceSeed->setRange(0, 1000000000);
    m_sequenceSeed->setToolTip(tr("Index of the draw: the same kind and seed give the same sequence (ICL/IWL seed s: "
                                  "the first sequence of that evaluation set with index s)"));
    seqControls->addWidget(m_sequenceSeed);
    m_resample = new QPushButton(tr("Resample"), m_sequenceTab);
    m_resample->setObjectName(QStringLiteral("iclIwlResample"));
    m_resample->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_resample->setToolTip(tr("Draw the next sequence (seed + 1) (Ctrl+R)"));
    seqControls->addWidget(m_resample);
    m_sequenceStatus = makeTextLine(QStringLiteral("iclIwlSequenceStatus"), m_sequenceTab);
    seqControls->addWidget(m_sequenceStatus, 1);
    seqLayout->addLayout(seqControls);

    m_strip = new widgets::ExemplarStrip(m_sequenceTab);
    m_strip->setObjectName(QStringLiteral("iclIwlSequenceStrip"));
    m_strip->setTileSide(80);
    m_stripScroll = new QScrollArea(m_sequenceTab);
    m_stripScroll->setWidget(m_strip);
    m_stripScroll->setWidgetResizable(true);
    m_stripScroll->setFrameShape(QFrame::NoFrame);
    m_stripScroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_stripScroll->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    m_stripScroll->setBackgroundRole(QPalette::Base); // the viewport below the strip, as the strip
    seqLayout->addWidget(m_stripScroll);

    auto* seqBody = new QHBoxLayout;
    auto* prediction = new QGroupBox(tr("Prediction at the query"), m_sequenceTab);
    prediction->setObjectName(QStringLiteral("iclIwlPredictionPanel"));
    m_sequenceForm = new QFormLayout(prediction);
    m_sequenceInfo = valueLabel(prediction, "iclIwlSequenceInfo");
    m_sequenceInfo->setWordWrap(true);
    m_sequenceForm->addRow(tr("Sequence"), m_sequenceInfo);
    m_trueLabel = valueLabel(prediction, "iclIwlTrueLabel");
    m_sequenceForm->addRow(tr("True label"), m_trueLabel);
    m_predictedLabel = valueLabel(prediction, "iclIwlPredictedLabel");
    m_predictedLabel->setToolTip(tr("Argmax of the query logits over every label (as the accuracies)"));
    m_sequenceForm->addRow(tr("Predicted label"), m_predictedLabel);
    m_predicted01 = valueLabel(prediction, "iclIwlPredicted01");
    m_predicted01->setToolTip(tr("Argmax over labels {0, 1} only: the read-out of the ICL accuracy (chance 0.5)"));
    m_sequenceForm->addRow(tr("Predicted over {0, 1}"), m_predicted01);
    m_inContext = valueLabel(prediction, "iclIwlPredictionInContext");
    m_inContext->setToolTip(tr("Whether the predicted label is the label of some in-context example"));
    m_sequenceForm->addRow(tr("Prediction is in context"), m_inContext);
    prediction->setFixedWidth(340);
    seqBody->addWidget(prediction, 0, Qt::AlignTop);
    m_probabilities = new widgets::BarChartView(m_sequenceTab);
    m_probabilities->setObjectName(QStringLiteral("iclIwlProbabilities"));
    m_probabilities->setCaptionVisible(false);
    seqBody->addWidget(m_probabilities, 1);
    seqLayout->addLayout(seqBody, 1);
    clearSequence();

    connect(m_sequenceKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        m_sequenceStale = true;
        if (sequenceReady())
            runSequence();
    });
    connect(m_sequenceSeed, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
        m_sequenceStale = true;
        if (sequenceReady())
            runSequence();
    });
    connect(m_resample, &QPushButton::clicked, this, &IclIwlPage::resampleSequence);
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

void IclIwlPage::showExperiment(const icl::RunSummary& summary, qint64 step)
{
    cancel();
    ++m_generation;
    m_summary = summary;
    m_path = summary.path;
    m_step = step;
    m_result.reset();
    m_status->clear();
    clearPanel();
    clearSequence();
    const std::string kind = taskKind(summary);
    m_supported = summary.config && icl::kindOf(summary.config->task) == icl::TaskKind::FewshotClassification;
    for (QLabel* label : { m_iclCommonValue, m_iclRareValue, m_iwlCommonValue, m_iwlRareValue })
        m_panelForm->setRowVisible(label, m_supported && hasCommonRareSplit(summary));
    m_content->setVisible(m_supported);
    m_message->setVisible(!m_supported);
    if (!m_supported) {
        m_plot->setFigure(icl::Figure {});
        m_message->setText(tr("The ICL vs IWL page is for fewshot_classification runs (Chan et al. 2022); this run's "
                              "task is %1.")
                               .arg(kind.empty() ? tr("unknown") : QString::fromStdString(kind)));
        m_stale = false;
        m_sequenceStale = false;
        m_sequenceStatus->setText(tr("The sequence viewer is for fewshot_classification runs."));
        return;
    }
    showCurves();
    m_stale = true;
    m_sequenceStale = true;
    if (ready())
        compute();
    if (sequenceReady())
        runSequence();
}

void IclIwlPage::updateTrainingCurves(const icl::RunSummary& summary)
{
    if (summary.path != m_path || !m_supported) {
        showExperiment(summary, summary.checkpoints.empty() ? -1 : summary.checkpoints.back().step);
        return;
    }
    m_summary = summary;
    showCurves();
}

void IclIwlPage::showCurves()
{
    try {
        m_plot->setFigure(icl::iclIwlFigure(m_summary));
    } catch (const std::exception& e) { // a run that has not evaluated yet
        m_plot->setFigure(icl::Figure {});
        m_status->setText(QString::fromStdString(e.what()));
    }
}

void IclIwlPage::clearPanel()
{
    for (QLabel* label : { m_checkpointValue, m_iclValue, m_iclAllValue, m_iwlValue, m_iclInContextValue,
             m_iwlInContextValue, m_iclCommonValue, m_iclRareValue, m_iwlCommonValue, m_iwlRareValue })
        label->setText(QStringLiteral("—"));
}

void IclIwlPage::selectCheckpoint(qint64 step)
{
    const bool changed = step != m_step;
    if (!changed && !m_stale && !m_sequenceStale)
        return;
    m_step = step;
    if (changed) {
        m_stale = true;
        m_sequenceStale = true;
    }
    if (m_stale && ready())
        compute();
    if (m_sequenceStale && sequenceReady())
        runSequence();
}

void IclIwlPage::setActive(bool active)
{
    AnalysisPage::setActive(active);
    if (active && m_sequenceStale && sequenceReady())
        runSequence();
}

void IclIwlPage::cancel()
{
    AnalysisPage::cancel();
    if (m_sequencePending) { // its result is dropped with the runner's queue
        m_sequencePending = false;
        m_sequenceStale = true;
        m_sequenceStatus->setText(tr("Cancelled. Resample to draw again."));
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
    runner()->enqueue(
        IclIwlJob, tr("ICL vs IWL"),
        [this, t, path, o, progress]() -> AnalysisRunner::Continuation {
            const icl::IclIwlResult r = icl::computeIclIwl(path, o, progress);
            return [this, t, r] {
                if (!isCurrent(t))
                    return;
                m_result = r;
                m_checkpointValue->setText(tr("step %1").arg(r.checkpoint_step));
                m_iclValue->setText(fractionText(r.icl_accuracy, r.n_sequences));
                m_iclAllValue->setText(fractionText(r.icl_accuracy_all_labels, r.n_sequences));
                m_iwlValue->setText(fractionText(r.iwl_accuracy, r.n_sequences));
                m_iclInContextValue->setText(fractionText(r.icl_in_context_rate, r.n_sequences));
                m_iwlInContextValue->setText(fractionText(r.iwl_in_context_rate, r.n_sequences));
                const std::vector<std::pair<QLabel*, double>> split = { { m_iclCommonValue, r.icl_accuracy_common },
                    { m_iclRareValue, r.icl_accuracy_rare }, { m_iwlCommonValue, r.iwl_accuracy_common },
                    { m_iwlRareValue, r.iwl_accuracy_rare } };
                for (const auto& [label, value] : split) {
                    label->setText(fractionText(value, r.n_sequences));
                    m_panelForm->setRowVisible(label, r.common_rare_split);
                }
                m_status->clear();
            };
        },
        statusErrorHandler(t, [this] { clearPanel(); }));
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
    if (m_tabs->currentIndex() == SequenceTab) {
        if (!m_sequence)
            return false;
        m_probabilities->exportWithDialog();
        return true;
    }
    currentPlot()->exportWithDialog();
    return true;
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

void IclIwlPage::setSequence(icl::FewShotSequenceKind kind, uint64_t seed)
{
    const QSignalBlocker blockKind(m_sequenceKind), blockSeed(m_sequenceSeed);
    m_sequenceKind->setCurrentIndex(
        m_sequenceKind->findData(QString::fromStdString(icl::fewShotSequenceKindName(kind))));
    m_sequenceSeed->setValue(int(seed));
    m_sequenceStale = true;
    if (sequenceReady())
        runSequence();
}

icl::FewShotSequenceKind IclIwlPage::sequenceKind() const
{
    return icl::fewShotSequenceKindFromName(m_sequenceKind->currentData().toString().toStdString())
        .value_or(icl::FewShotSequenceKind::Training);
}

uint64_t IclIwlPage::sequenceSeed() const
{
    return uint64_t(m_sequenceSeed->value());
}

void IclIwlPage::resampleSequence()
{
    if (m_sequenceSeed->value() < m_sequenceSeed->maximum())
        m_sequenceSeed->setValue(m_sequenceSeed->value() + 1); // re-runs through valueChanged
    else
        m_sequenceSeed->setValue(0);
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
    m_sequenceStatus->setText(tr("Sampling a sequence (checkpoint %1)…").arg(step));
    runner()->enqueue(
        SequenceJob, tr("Sequence viewer"),
        [this, generation, path, step, kind, seed]() -> AnalysisRunner::Continuation {
            const icl::FewShotSequence s = icl::sampleFewShotSequence(path, step, kind, seed);
            return [this, generation, s] {
                if (generation != m_sequenceGeneration)
                    return;
                m_sequencePending = false;
                showSequence(s);
                m_sequenceStatus->clear();
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_sequenceGeneration)
                return;
            m_sequencePending = false;
            clearSequence();
            m_sequenceStatus->setText(error);
        });
}

void IclIwlPage::clearSequence()
{
    m_sequence.reset();
    m_strip->clear();
    m_stripScroll->setFixedHeight(m_strip->sizeHint().height() + m_stripScroll->horizontalScrollBar()->sizeHint().height());
    for (QLabel* label : { m_sequenceInfo, m_trueLabel, m_predictedLabel, m_predicted01, m_inContext })
        label->setText(QStringLiteral("—"));
    m_predictedLabel->setStyleSheet(QString());
    m_sequenceForm->setRowVisible(m_predicted01, false);
    widgets::BarChart empty;
    empty.title = tr("Most probable labels at the query").toStdString();
    empty.x_label = "label";
    empty.y_label = "probability";
    m_probabilities->setChart(empty);
}

void IclIwlPage::showSequence(const icl::FewShotSequence& s)
{
    m_sequence = s;
    std::vector<widgets::ExemplarTile> tiles;
    const int64_t L = s.contextLength();
    for (int64_t i = 0; i <= L; ++i) {
        const icl::FewShotItem& item = s.items[size_t(i)];
        widgets::ExemplarTile t;
        t.values = item.exemplar;
        t.shape = s.exemplar_shape;
        const bool query = i == L;
        t.highlighted = query;
        t.badge = item.holdout ? tr("holdout") : item.rare ? tr("rare") : QString();
        t.caption = query ? tr("query\nclass %1\ntrue label %2").arg(item.class_id).arg(item.label)
                          : tr("class %1\nlabel %2").arg(item.class_id).arg(item.label);
        t.toolTip = (query ? tr("query x_q: class %1%2, true label %3 (not shown to the model)")
                           : tr("x_%4: class %1%2, label y_%4 = %3").arg(i + 1))
                        .arg(item.class_id)
                        .arg(item.holdout ? tr(" (holdout)") : item.rare ? tr(" (rare)") : QString())
                        .arg(item.label);
        tiles.push_back(std::move(t));
    }
    m_strip->setTiles(std::move(tiles));
    // Room for the strip and a horizontal scroll bar (narrow windows), captions included.
    m_stripScroll->setFixedHeight(m_strip->sizeHint().height() + m_stripScroll->horizontalScrollBar()->sizeHint().height());

    QString kind;
    switch (s.kind) {
    case icl::FewShotSequenceKind::Icl:
        kind = tr("ICL evaluation: 2 holdout classes, labels {0, 1}");
        break;
    case icl::FewShotSequenceKind::Iwl:
        kind = tr("IWL evaluation: no support for the query's class");
        break;
    default:
        kind = s.bursty ? tr("training, bursty") : tr("training, i.i.d.");
    }
    m_sequenceInfo->setText(tr("%1\nseed %2, checkpoint %3").arg(kind).arg(s.seed).arg(s.checkpoint_step));
    const double pTrue = s.true_label < int64_t(s.probabilities.size()) ? s.probabilities[size_t(s.true_label)] : 0.0;
    m_trueLabel->setText(tr("%1 (p = %2)").arg(s.true_label).arg(pTrue, 0, 'f', 3));
    const double pPredicted = s.probabilities[size_t(s.predicted_label)];
    m_predictedLabel->setText(tr("%1 (p = %2) — %3")
                                  .arg(s.predicted_label)
                                  .arg(pPredicted, 0, 'f', 3)
                                  .arg(s.correct() ? tr("correct") : tr("wrong")));
    m_predictedLabel->setStyleSheet(s.correct() ? QStringLiteral("QLabel { color: #1a7f37; font-weight: bold; }")
                                                : QStringLiteral("QLabel { color: #c62828; font-weight: bold; }"));
    const bool isIcl = s.kind == icl::FewShotSequenceKind::Icl;
    m_sequenceForm->setRowVisible(m_predicted01, isIcl);
    m_predicted01->setText(isIcl ? tr("%1 — %2")
                                     .arg(s.predicted_label_01)
                                     .arg(s.predicted_label_01 == s.true_label ? tr("correct") : tr("wrong"))
                               : QStringLiteral("—"));
    m_inContext->setText(s.prediction_in_context ? tr("yes") : tr("no"));

    widgets::BarChart chart;
    chart.name = "sequence_top_labels";
    chart.title = tr("Most probable labels at the query").toStdString();
    chart.x_label = "label";
    chart.y_label = "probability";
    for (const auto& [label, p] : s.topLabels(5)) {
        chart.labels.push_back(std::to_string(label));
        chart.values.push_back(p);
    }
    chart.metadata = { { "experiment", m_path }, { "checkpoint_step", std::to_string(s.checkpoint_step) },
        { "sequence", icl::fewShotSequenceKindName(s.kind) }, { "seed", std::to_string(s.seed) },
        { "true_label", std::to_string(s.true_label) } };
    m_probabilities->setChart(chart);
}

} // namespace icl::gui
