#pragma once
// The Pasting page's options: the fields of icl::PastingOptions (the names of `icl-cli analyze paste`), laid out
// in a grid the page places under the parent's line.

#include <cstdint>

#include <QObject>
#include <QString>

#include "app/gui/gui_forward.h"
#include "app/gui/page_widgets.h"
#include "app/gui/pasting_figures.h"
#include "core/analysis/pasting.h"

namespace icl::gui {

/// `icl-cli analyze PARENT paste` default output: PARENT's folder and stem + ".paste-l<ℓ>-<embedding>.h5".
QString pastingOutputPath(const QString& parentPath, int64_t cutLayer, const QString& embedding);

/// Cut layer ℓ, embedding, steps, learning rate η, batch size, evaluation prompts and period, w_scale τ, seed, the
/// scratch model, "Start from parent", "Without its MLP", "Match label variance", "Match label scale" (at most one
/// of the two), the learning-rate schedule and the output file (object names "pastingCutLayer", …), and a "Guo et al.
/// settings" button that fills in the settings `scripts/reproduce.sh` pastes the guo-pasting preset with. The fields
/// are children of the page's content widget; the form keeps them and their grid. Thread affinity: GUI thread only.
class PastingOptionsForm : public QObject {
    Q_OBJECT
public:
    /// Builds the fields as children of `content`.
    explicit PastingOptionsForm(QWidget* content);

    /// The grid of the fields, for the page's layout.
    QGridLayout* layout() const { return m_fields.layout(); }
    /// A new parent: the cut layer's range 0..L−1, the parent's w_scale and seed as the defaults' texts, the
    /// default output next to `parentPath`.
    void bindParent(const ParentConfig& parent, const QString& parentPath);
    /// The options of the next run (checkpoint `step`; out_path: the field or the default; overwrite false;
    /// store true).
    icl::PastingOptions options(qint64 step, int threads) const;
    /// Every field is off while a pasting runs; "Start from parent" and "Without its MLP" only where they are
    /// defined.
    void setBusy(bool busy);
    /// The pasting of the guo-pasting preset at the quick scale, as `scripts/reproduce.sh` runs it (README): a
    /// transformer1 embedding at ℓ = 1 (or the parent's last block) started from the parent, Match label scale,
    /// 2,000 steps of Adam with η = 2·10⁻³ and cosine decay, batch 64, the scratch model beside it, the parent's
    /// seed, evaluations every 250 steps. The output file keeps its default.
    void applyGuoSettings();

    QSpinBox* cutLayer() const { return m_cutLayer; }
    QComboBox* embedding() const { return m_embedding; }
    QSpinBox* steps() const { return m_steps; }
    QDoubleSpinBox* learningRate() const { return m_lr; }
    QSpinBox* batchSize() const { return m_batchSize; }
    QSpinBox* evalPrompts() const { return m_nEval; }
    QSpinBox* evalEvery() const { return m_evalEvery; }
    QDoubleSpinBox* wScale() const { return m_wScale; }
    QSpinBox* seed() const { return m_seed; }
    QCheckBox* trainScratch() const { return m_trainScratch; }
    QCheckBox* initFromParent() const { return m_initFromParent; }
    QCheckBox* zeroNewMlp() const { return m_zeroNewMlp; }
    QCheckBox* matchLabelVariance() const { return m_matchLabels; }
    QCheckBox* matchLabelScale() const { return m_matchScale; }
    QComboBox* schedule() const { return m_schedule; }
    QPushButton* guoSettings() const { return m_guoSettings; }
    QLineEdit* output() const { return m_output.path; }

Q_SIGNALS:
    /// The cut layer, the embedding, "Start from parent", "Match label variance" or "Match label scale" changed (which of the start options are defined
    /// depends on them).
    void changed();

private:
    void updateDefaultOutput();
    void browseOutput();

    FieldGrid m_fields;
    QString m_parentPath;
    QSpinBox* m_cutLayer = nullptr;
    QComboBox* m_embedding = nullptr;
    QSpinBox* m_steps = nullptr;
    QDoubleSpinBox* m_lr = nullptr;
    QSpinBox* m_batchSize = nullptr;
    QSpinBox* m_nEval = nullptr;
    QSpinBox* m_evalEvery = nullptr;
    QDoubleSpinBox* m_wScale = nullptr;
    QSpinBox* m_seed = nullptr;
    QCheckBox* m_trainScratch = nullptr;
    QCheckBox* m_initFromParent = nullptr;
    QCheckBox* m_zeroNewMlp = nullptr;
    QCheckBox* m_matchLabels = nullptr;
    QCheckBox* m_matchScale = nullptr;
    QComboBox* m_schedule = nullptr;
    QPushButton* m_guoSettings = nullptr;
    FileField m_output;
};

} // namespace icl::gui
