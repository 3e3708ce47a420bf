#include "app/gui/sequence_view.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "widgets/bar_chart_view.h"
#include "widgets/exemplar_strip.h"

namespace icl::gui {

namespace {

/// The sequence kinds in the viewer's combo box, with their names on screen.
const std::vector<std::pair<icl::FewShotSequenceKind, const char*>>& sequenceKinds()
{
    static const std::vector<std::pair<icl::FewShotSequenceKind, const char*>> kinds = {
        { icl::FewShotSequenceKind::Training, QT_TRANSLATE_NOOP("IclIwlPage", "Training (as drawn)") },
        { icl::FewShotSequenceKind::TrainingBursty, QT_TRANSLATE_NOOP("IclIwlPage", "Training, bursty") },
        { icl::FewShotSequenceKind::TrainingIid, QT_TRANSLATE_NOOP("IclIwlPage", "Training, i.i.d.") },
        { icl::FewShotSequenceKind::Icl, QT_TRANSLATE_NOOP("IclIwlPage", "ICL evaluation (holdout, labels {0, 1})") },
        { icl::FewShotSequenceKind::Iwl, QT_TRANSLATE_NOOP("IclIwlPage", "IWL evaluation (no support)") }
    };
    return kinds;
}

} // namespace

SequenceView::SequenceView(QWidget* parent)
    : QWidget(parent)
{
    setObjectName(QStringLiteral("iclIwlSequenceTab"));
    auto* seqLayout = makeContentLayout(this);
    auto* seqControls = new QHBoxLayout;
    seqControls->addWidget(new QLabel(tr("Sequence"), this));
    m_choose.kind = new QComboBox(this);
    m_choose.kind->setObjectName(QStringLiteral("iclIwlSequenceKind"));
    for (const auto& [kind, name] : sequenceKinds())
        m_choose.kind->addItem(QCoreApplication::translate("IclIwlPage", name),
            QString::fromStdString(icl::fewShotSequenceKindName(kind)));
    m_choose.kind->setToolTip(tr("Training: as the task draws it (bursty with probability p_bursty), or forced bursty "
                                 "(query class ×3, a second class ×3, others) or i.i.d. ICL: 2 holdout classes × 4 "
                                 "shots, labels {0, 1} drawn per sequence. IWL: the query's class is absent from the "
                                 "context."));
    seqControls->addWidget(m_choose.kind);
    seqControls->addWidget(new QLabel(tr("seed"), this));
    m_choose.seed = makeSpinBox(this, "iclIwlSequenceSeed", 0, 1000000000, 0);
    m_choose.seed->setToolTip(tr("Index of the draw: the same kind and seed give the same sequence (ICL/IWL seed s: "
                                 "the first sequence of that evaluation set with index s)"));
    seqControls->addWidget(m_choose.seed);
    m_choose.resample = new QPushButton(tr("Resample"), this);
    m_choose.resample->setObjectName(QStringLiteral("iclIwlResample"));
    m_choose.resample->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_choose.resample->setToolTip(tr("Draw the next sequence (seed + 1) (Ctrl+R)"));
    seqControls->addWidget(m_choose.resample);
    m_status = makeTextLine(QStringLiteral("iclIwlSequenceStatus"), this);
    m_status->setTextFormat(Qt::PlainText);
    seqControls->addWidget(m_status, 1);
    seqLayout->addLayout(seqControls);

    m_strip = new widgets::ExemplarStrip(this);
    m_strip->setObjectName(QStringLiteral("iclIwlSequenceStrip"));
    m_strip->setTileSide(80);
    m_stripScroll = new QScrollArea(this);
    m_stripScroll->setWidget(m_strip);
    m_stripScroll->setWidgetResizable(true);
    m_stripScroll->setFrameShape(QFrame::NoFrame);
    m_stripScroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_stripScroll->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    m_stripScroll->setBackgroundRole(QPalette::Base); // the viewport below the strip, as the strip
    seqLayout->addWidget(m_stripScroll);

    auto* seqBody = new QHBoxLayout;
    auto* prediction = new QGroupBox(tr("Prediction at the query"), this);
    prediction->setObjectName(QStringLiteral("iclIwlPredictionPanel"));
    m_predictionForm = new QFormLayout(prediction);
    m_prediction[SequenceRow] = makeValueLabel(prediction, "iclIwlSequenceInfo");
    m_prediction[SequenceRow]->setWordWrap(true);
    m_predictionForm->addRow(tr("Sequence"), m_prediction[SequenceRow]);
    addValueRows(m_predictionForm, prediction,
        { { &m_prediction[TrueLabelRow], "iclIwlTrueLabel", tr("True label"), QString() },
            { &m_prediction[PredictedRow], "iclIwlPredictedLabel", tr("Predicted label"),
                tr("Argmax of the query logits over every label (as the accuracies)") },
            { &m_prediction[Predicted01Row], "iclIwlPredicted01", tr("Predicted over {0, 1}"),
                tr("Argmax over labels {0, 1} only: the read-out of the ICL accuracy (chance 0.5)") },
            { &m_prediction[InContextRow], "iclIwlPredictionInContext", tr("Prediction is in context"),
                tr("Whether the predicted label is the label of some in-context example") } });
    prediction->setFixedWidth(340);
    seqBody->addWidget(prediction, 0, Qt::AlignTop);
    m_probabilities = new widgets::BarChartView(this);
    m_probabilities->setObjectName(QStringLiteral("iclIwlProbabilities"));
    m_probabilities->setCaptionVisible(false);
    seqBody->addWidget(m_probabilities, 1);
    seqLayout->addLayout(seqBody, 1);
    clear();

    connect(m_choose.kind, qOverload<int>(&QComboBox::currentIndexChanged), this, &SequenceView::changed);
    connect(m_choose.seed, qOverload<int>(&QSpinBox::valueChanged), this, &SequenceView::changed);
    connect(m_choose.resample, &QPushButton::clicked, this, &SequenceView::resample);
}

void SequenceView::setSequence(icl::FewShotSequenceKind kind, uint64_t seed)
{
    const QSignalBlocker blockKind(m_choose.kind), blockSeed(m_choose.seed);
    m_choose.kind->setCurrentIndex(m_choose.kind->findData(QString::fromStdString(icl::fewShotSequenceKindName(kind))));
    m_choose.seed->setValue(int(seed));
}

icl::FewShotSequenceKind SequenceView::kind() const
{
    return icl::fewShotSequenceKindFromName(m_choose.kind->currentData().toString().toStdString())
        .value_or(icl::FewShotSequenceKind::Training);
}

uint64_t SequenceView::seed() const
{
    return uint64_t(m_choose.seed->value());
}

void SequenceView::resample()
{
    if (m_choose.seed->value() < m_choose.seed->maximum())
        m_choose.seed->setValue(m_choose.seed->value() + 1); // emits changed through valueChanged
    else
        m_choose.seed->setValue(0);
}

void SequenceView::clear()
{
    m_sequence.reset();
    m_strip->clear();
    m_stripScroll->setFixedHeight(
        m_strip->sizeHint().height() + m_stripScroll->horizontalScrollBar()->sizeHint().height());
    for (QLabel* label : m_prediction)
        label->setText(QStringLiteral("—"));
    m_prediction[PredictedRow]->setStyleSheet(QString());
    m_predictionForm->setRowVisible(m_prediction[Predicted01Row], false);
    widgets::BarChart empty;
    empty.title = tr("Most probable labels at the query").toStdString();
    empty.x_label = "label";
    empty.y_label = "probability";
    m_probabilities->setChart(empty);
}

void SequenceView::showSequence(const icl::FewShotSequence& s, const std::string& experiment)
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
                        .arg(item.holdout   ? tr(" (holdout)")
                                : item.rare ? tr(" (rare)")
                                            : QString())
                        .arg(item.label);
        tiles.push_back(std::move(t));
    }
    m_strip->setTiles(std::move(tiles));
    // Room for the strip and a horizontal scroll bar (narrow windows), captions included.
    m_stripScroll->setFixedHeight(
        m_strip->sizeHint().height() + m_stripScroll->horizontalScrollBar()->sizeHint().height());

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
    m_prediction[SequenceRow]->setText(tr("%1\nseed %2, checkpoint %3").arg(kind).arg(s.seed).arg(s.checkpoint_step));
    const double pTrue = s.true_label < int64_t(s.probabilities.size()) ? s.probabilities[size_t(s.true_label)] : 0.0;
    m_prediction[TrueLabelRow]->setText(tr("%1 (p = %2)").arg(s.true_label).arg(pTrue, 0, 'f', 3));
    const double pPredicted = s.probabilities[size_t(s.predicted_label)];
    m_prediction[PredictedRow]->setText(tr("%1 (p = %2) — %3")
                                            .arg(s.predicted_label)
                                            .arg(pPredicted, 0, 'f', 3)
                                            .arg(s.correct() ? tr("correct") : tr("wrong")));
    m_prediction[PredictedRow]->setStyleSheet(s.correct()
            ? QStringLiteral("QLabel { color: #1a7f37; font-weight: bold; }")
            : QStringLiteral("QLabel { color: #c62828; font-weight: bold; }"));
    const bool isIcl = s.kind == icl::FewShotSequenceKind::Icl;
    m_predictionForm->setRowVisible(m_prediction[Predicted01Row], isIcl);
    m_prediction[Predicted01Row]->setText(isIcl
            ? tr("%1 — %2")
                  .arg(s.predicted_label_01)
                  .arg(s.predicted_label_01 == s.true_label ? tr("correct") : tr("wrong"))
            : QStringLiteral("—"));
    m_prediction[InContextRow]->setText(s.prediction_in_context ? tr("yes") : tr("no"));

    widgets::BarChart chart;
    chart.name = "sequence_top_labels";
    chart.title = tr("Most probable labels at the query").toStdString();
    chart.x_label = "label";
    chart.y_label = "probability";
    for (const auto& [label, p] : s.topLabels(5)) {
        chart.labels.push_back(std::to_string(label));
        chart.values.push_back(p);
    }
    chart.metadata = { { "experiment", experiment }, { "checkpoint_step", std::to_string(s.checkpoint_step) },
        { "sequence", icl::fewShotSequenceKindName(s.kind) }, { "seed", std::to_string(s.seed) },
        { "true_label", std::to_string(s.true_label) } };
    m_probabilities->setChart(chart);
}

} // namespace icl::gui
