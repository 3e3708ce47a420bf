#pragma once
// The sequence viewer tab of the ICL vs IWL page: one few-shot sequence as a row of exemplar tiles and the
// selected checkpoint's prediction at its query.

#include <cstdint>
#include <optional>
#include <string>

#include <QWidget>

#include "app/gui/gui_forward.h"
#include "core/analysis/fewshot_sequence.h"

namespace icl::gui {

/// Shows one sequence drawn by icl::sampleFewShotSequence (a training sequence as drawn, bursty or i.i.d., an ICL
/// or an IWL evaluation sequence; its kind and seed chosen here, Resample draws seed + 1) as exemplar tiles with
/// their classes and labels (holdout and rare classes marked, the query highlighted), and the prediction at the
/// query: true and predicted label, the prediction over {0, 1} for ICL sequences, whether the prediction is a
/// label of the context, and the five most probable labels as a bar chart. The page samples the sequence (on its
/// worker) when changed() asks for it. Thread affinity: GUI thread only.
class SequenceView : public QWidget {
    Q_OBJECT
public:
    explicit SequenceView(QWidget* parent = nullptr);

    /// Sets the kind and seed without emitting changed().
    void setSequence(icl::FewShotSequenceKind kind, uint64_t seed);
    icl::FewShotSequenceKind kind() const;
    uint64_t seed() const;
    /// The next seed (0 after the largest); emits changed().
    void resample();
    /// Shows `s` of the run `experiment` (its file name goes into the chart's export metadata).
    void showSequence(const icl::FewShotSequence& s, const std::string& experiment);
    /// No sequence ("—" everywhere, an empty chart).
    void clear();
    /// The sequence shown (empty before the first one, after an error and for another run).
    const std::optional<icl::FewShotSequence>& sequence() const { return m_sequence; }

    QComboBox* kindChooser() const { return m_sequenceKind; }
    QSpinBox* seedChooser() const { return m_sequenceSeed; }
    QPushButton* resampleButton() const { return m_resample; }
    widgets::ExemplarStrip* strip() const { return m_strip; }
    widgets::BarChartView* probabilityChart() const { return m_probabilities; }
    QLabel* statusLabel() const { return m_sequenceStatus; }
    QLabel* infoLabel() const { return m_sequenceInfo; }
    QLabel* trueLabelLabel() const { return m_trueLabel; }
    QLabel* predictedLabelLabel() const { return m_predictedLabel; }
    QLabel* predicted01Label() const { return m_predicted01; }
    QLabel* inContextLabel() const { return m_inContext; }

Q_SIGNALS:
    /// The kind or the seed changed (by the user or resample()): the sequence to show is another one.
    void changed();

private:
    std::optional<icl::FewShotSequence> m_sequence;
    QComboBox* m_sequenceKind = nullptr;
    QSpinBox* m_sequenceSeed = nullptr;
    QPushButton* m_resample = nullptr;
    QLabel* m_sequenceStatus = nullptr;
    widgets::ExemplarStrip* m_strip = nullptr;
    QScrollArea* m_stripScroll = nullptr;
    QLabel* m_sequenceInfo = nullptr;
    QLabel* m_trueLabel = nullptr;
    QLabel* m_predictedLabel = nullptr;
    QLabel* m_predicted01 = nullptr;
    QLabel* m_inContext = nullptr;
    QFormLayout* m_sequenceForm = nullptr;
    widgets::BarChartView* m_probabilities = nullptr;
};

} // namespace icl::gui
