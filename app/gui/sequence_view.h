#pragma once
// The sequence viewer tab of the ICL vs IWL page: one few-shot sequence as a row of exemplar tiles and the
// selected checkpoint's prediction at its query.

#include <array>
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

    QComboBox* kindChooser() const { return m_choose.kind; }
    QSpinBox* seedChooser() const { return m_choose.seed; }
    QPushButton* resampleButton() const { return m_choose.resample; }
    widgets::ExemplarStrip* strip() const { return m_strip; }
    widgets::BarChartView* probabilityChart() const { return m_probabilities; }
    QLabel* statusLabel() const { return m_status; }
    QLabel* infoLabel() const { return m_prediction[SequenceRow]; }
    QLabel* trueLabelLabel() const { return m_prediction[TrueLabelRow]; }
    QLabel* predictedLabelLabel() const { return m_prediction[PredictedRow]; }
    QLabel* predicted01Label() const { return m_prediction[Predicted01Row]; }
    QLabel* inContextLabel() const { return m_prediction[InContextRow]; }

Q_SIGNALS:
    /// The kind or the seed changed (by the user or resample()): the sequence to show is another one.
    void changed();

private:
    std::optional<icl::FewShotSequence> m_sequence;
    /// Which sequence: its kind and seed, and the Resample button.
    struct Chooser {
        QComboBox* kind = nullptr;
        QSpinBox* seed = nullptr;
        QPushButton* resample = nullptr;
    } m_choose;
    QLabel* m_status = nullptr;
    /// The sequence's exemplar tiles, in a scroll area one strip high.
    widgets::ExemplarStrip* m_strip = nullptr;
    QScrollArea* m_stripScroll = nullptr;
    /// The value rows of the "Prediction at the query" panel, in order; the {0, 1} row is shown for ICL
    /// sequences only.
    enum PredictionRow { SequenceRow, TrueLabelRow, PredictedRow, Predicted01Row, InContextRow, PredictionRowCount };
    std::array<QLabel*, PredictionRowCount> m_prediction {}; ///< the value label of each PredictionRow
    QFormLayout* m_predictionForm = nullptr;
    widgets::BarChartView* m_probabilities = nullptr;
};

} // namespace icl::gui
