#include "app/gui/pasting_options.h"
#include "app/gui/page_widgets.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <string>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>

namespace icl::gui {

namespace {

/// Shows learning rates as 0.001 or 1e-05 rather than with a fixed number of decimals.
class LearningRateSpinBox : public QDoubleSpinBox {
public:
    using QDoubleSpinBox::QDoubleSpinBox;
    QString textFromValue(double value) const override { return QString::number(value, 'g', 6); }
};

} // namespace

QString pastingOutputPath(const QString& parentPath, int64_t cutLayer, const QString& embedding)
{
    // The same name as icl-cli analyze paste without --out.
    const std::filesystem::path p(parentPath.toStdString());
    const std::string name
        = p.stem().string() + ".paste-l" + std::to_string(cutLayer) + "-" + embedding.toStdString() + ".h5";
    return QString::fromStdString((p.parent_path() / name).string());
}

PastingOptionsForm::PastingOptionsForm(QWidget* content)
    : QObject(content)
    , m_fields(content)
{
    QGridLayout* grid = m_fields.layout();
    m_cutLayer = makeSpinBox(content, "pastingCutLayer", 0, 0, 0);
    m_fields.add(0, 0, tr("Cut layer ℓ"), m_cutLayer,
        tr("The parent's blocks ℓ..L−1, final LayerNorm and read-out are kept frozen; its read-in, positions and "
           "blocks 0..ℓ−1 are replaced by the new embedding"));
    const QString embeddingTip = tr("New trainable embedding: linear (a read-in and learned positions) or "
                                    "transformer1 (the same plus one new GPT-2 block before the frozen ones)");
    m_embedding = makeComboBox(content, "pastingEmbedding", embeddingTip,
        { { tr("linear"), QStringLiteral("linear") }, { tr("transformer1"), QStringLiteral("transformer1") } });
    m_fields.add(0, 1, tr("Embedding"), m_embedding, embeddingTip);
    m_steps = makeSpinBox(content, "pastingSteps", 1, 10000000, 1000, 100);
    m_fields.add(0, 2, tr("Steps"), m_steps,
        tr("Adam steps for the pasted model and, on the same batches, for the scratch model"));
    m_lr = makeDoubleSpinBox(content, "pastingLearningRate", 7, 1e-7, 1.0, 1e-4, new LearningRateSpinBox(content));
    m_lr->setValue(1e-3);
    m_fields.add(0, 3, tr("Learning rate η"), m_lr,
        tr("Adam learning rate (β = 0.9, 0.999); the peak rate with the cosine schedule"));

    m_batchSize = makeSpinBox(content, "pastingBatchSize", 1, 1000000, 64);
    m_fields.add(1, 0, tr("Batch size"), m_batchSize, tr("Prompts per training step"));
    m_nEval = makeSpinBox(content, "pastingEvalPrompts", 2, 10000000, 1280, 256);
    m_fields.add(1, 1, tr("Eval prompts"), m_nEval,
        tr("Fixed evaluation prompts, the same for every model and baseline (icl-cli --prompts)"));
    m_evalEvery = makeSpinBox(content, "pastingEvalEvery", 1, 10000000, 100);
    m_fields.add(1, 2, tr("Eval every"), m_evalEvery, tr("Evaluation period of the loss curves, in training steps"));
    m_wScale = makeDoubleSpinBox(content, "pastingWScale", 4, 0.0, 1000.0, 0.05);
    m_wScale->setSpecialValueText(tr("parent's"));
    m_fields.add(1, 3, tr("w_scale τ"), m_wScale,
        tr("Task weights w ~ N(0, τ²·I_d) of the linear regression the new embedding is trained on; 0 = the "
           "parent's task.w_scale"));

    m_seed = makeSpinBox(content, "pastingSeed", 0, INT_MAX, 0);
    m_seed->setSpecialValueText(tr("parent's"));
    m_fields.add(2, 0, tr("Seed"), m_seed,
        tr("Seed of the initialisation, training batches and evaluation prompts; 0 = the parent's seed"));
    m_trainScratch = makeCheckBox(content, "pastingTrainScratch", tr("Train scratch model"), true,
        tr("Also train a model of the same architecture (new embedding + the same number of blocks, all trainable) "
           "from scratch on the same batches"));
    grid->addWidget(m_trainScratch, 2, 2, 1, 1);
    m_initFromParent = makeCheckBox(content, "pastingInitFromParent", tr("Start from parent"), false,
        tr("Initialise the new module from the parent instead of GPT-2's random initialisation (it stays "
           "trainable): linear at ℓ = 0 copies the read-in and positions; transformer1 at ℓ ≥ 1 also copies block "
           "ℓ − 1 into the new block. The scratch model is never initialised from the parent."));
    grid->addWidget(m_initFromParent, 2, 3, 1, 1);
    m_zeroNewMlp = makeCheckBox(content, "pastingZeroNewMlp", tr("Without its MLP"), false,
        tr("With Start from parent and transformer1: the new block's MLP output starts at zero — the parent's "
           "attention (which copies x_i to the y-tokens) kept, its MLP (which computes Φ*) dropped (icl-cli "
           "--zero-new-mlp)"));
    grid->addWidget(m_zeroNewMlp, 2, 4, 1, 1);
    m_matchLabels = makeCheckBox(content, "pastingMatchLabelVariance", tr("Match label variance"), false,
        tr("Choose τ so that the linear labels ⟨w, x⟩ have the parent task's signal variance, τ = τ_parent·(E‖Φ*(x)‖² "
           "/ E‖x‖²)^½: the label scale the frozen read-out was trained on (icl-cli --match-label-variance)"));
    grid->addWidget(m_matchLabels, 2, 5, 1, 1);
    const QString matchScaleTip
        = tr("Multiply the linear task's τ and σ by one factor c so that its labels have the parent task's "
             "variance, c² = (τ²E‖Φ*(x)‖² + σ²) / (τ²E‖x‖² + σ²): the read-out's label scale at the linear "
             "task's own signal-to-noise ratio, so ridge's λ and every loss ratio stay the parent's (icl-cli "
             "--match-label-scale)");
    m_matchScale = makeCheckBox(content, "pastingMatchLabelScale", tr("Match label scale"), false, matchScaleTip);
    grid->addWidget(m_matchScale, 2, 6, 1, 1);
    m_guoSettings = makePushButton(content, "pastingGuoSettings", tr("Guo et al. settings"),
        tr("Fill in the pasting that scripts/reproduce.sh runs on the guo-pasting preset (README): transformer1 at "
           "ℓ = 1 started from the parent, Match label scale, 2,000 steps, η = 2·10⁻³ with cosine decay, batch 64, "
           "the scratch model beside it"));
    grid->addWidget(m_guoSettings, 2, 7, 1, 1);
    const QString scheduleTip = tr("Learning rate over the steps, for both models: constant η, or cosine decay from η "
                                   "to 0 at the last step (icl-cli --schedule)");
    m_schedule = makeComboBox(content, "pastingSchedule", scheduleTip,
        { { tr("constant"), QStringLiteral("constant") }, { tr("cosine"), QStringLiteral("cosine") } });
    m_fields.add(3, 0, tr("Schedule"), m_schedule, scheduleTip);
    m_output = makeFileField(content, QString(), tr("Browse…"));
    m_output.path->setObjectName(QStringLiteral("pastingOutput"));
    m_output.path->setClearButtonEnabled(true);
    m_output.browse->setObjectName(QStringLiteral("pastingBrowse"));
    auto* outputRow = makeFieldRow(m_output.path, { m_output.browse });
    auto* outputLabel = new QLabel(tr("Output"), content);
    outputLabel->setBuddy(m_output.path);
    const QString outputTip = tr("New experiment file for the pasted model (empty: PARENT.paste-l<ℓ>-<embedding>.h5 "
                                 "next to the parent, as icl-cli analyze paste)");
    outputLabel->setToolTip(outputTip);
    m_output.path->setToolTip(outputTip);
    grid->addWidget(outputLabel, 3, 2);
    grid->addLayout(outputRow, 3, 3, 1, 5);
    for (int c : { 1, 3, 5, 7 })
        grid->setColumnStretch(c, 1);

    connect(m_cutLayer, qOverload<int>(&QSpinBox::valueChanged), this, &PastingOptionsForm::updateDefaultOutput);
    connect(m_cutLayer, qOverload<int>(&QSpinBox::valueChanged), this, &PastingOptionsForm::changed);
    connect(m_embedding, qOverload<int>(&QComboBox::currentIndexChanged), this, &PastingOptionsForm::changed);
    connect(
        m_embedding, qOverload<int>(&QComboBox::currentIndexChanged), this, &PastingOptionsForm::updateDefaultOutput);
    connect(m_initFromParent, &QCheckBox::toggled, this, &PastingOptionsForm::changed);
    connect(m_matchLabels, &QCheckBox::toggled, this, &PastingOptionsForm::changed);
    connect(m_matchScale, &QCheckBox::toggled, this, &PastingOptionsForm::changed);
    // τ is given, matched to the parent's signal variance, or scaled with σ to its label variance: one of them.
    connect(m_matchLabels, &QCheckBox::toggled, this, [this](bool on) {
        if (on)
            m_matchScale->setChecked(false);
    });
    connect(m_matchScale, &QCheckBox::toggled, this, [this](bool on) {
        if (on)
            m_matchLabels->setChecked(false);
    });
    connect(m_output.browse, &QPushButton::clicked, this, &PastingOptionsForm::browseOutput);
    connect(m_guoSettings, &QPushButton::clicked, this, &PastingOptionsForm::applyGuoSettings);
}

void PastingOptionsForm::applyGuoSettings()
{
    m_embedding->setCurrentIndex(m_embedding->findData(QStringLiteral("transformer1")));
    m_cutLayer->setValue(1); // clamped to the parent's last block
    m_initFromParent->setChecked(true);
    m_zeroNewMlp->setChecked(false);
    m_matchScale->setChecked(true);
    m_steps->setValue(2000);
    m_lr->setValue(2e-3);
    m_schedule->setCurrentIndex(m_schedule->findData(QStringLiteral("cosine")));
    m_batchSize->setValue(64);
    m_evalEvery->setValue(250);
    m_trainScratch->setChecked(true);
    m_seed->setValue(0); // the parent's
    Q_EMIT changed();
}

void PastingOptionsForm::bindParent(const ParentConfig& p, const QString& parentPath)
{
    m_parentPath = parentPath;
    {
        const QSignalBlocker block(m_cutLayer);
        m_cutLayer->setRange(0, int(std::max<int64_t>(0, p.n_layers - 1)));
    }
    m_wScale->setSpecialValueText(tr("parent's (%1)").arg(formatValue(p.w_scale)));
    m_seed->setSpecialValueText(tr("parent's (%1)").arg(p.seed));
    m_output.path->clear();
    updateDefaultOutput();
}

icl::PastingOptions PastingOptionsForm::options(qint64 step, int threads) const
{
    icl::PastingOptions o;
    o.checkpoint_step = step;
    o.cut_layer = m_cutLayer->value();
    o.embedding = m_embedding->currentData().toString().toStdString();
    o.steps = m_steps->value();
    o.lr = m_lr->value();
    o.schedule = m_schedule->currentData().toString().toStdString();
    o.batch_size = m_batchSize->value();
    o.n_eval = m_nEval->value();
    o.eval_every = m_evalEvery->value();
    o.match_label_variance = m_matchLabels->isChecked();
    o.match_label_scale = m_matchScale->isChecked();
    o.w_scale = o.match_label_variance || o.match_label_scale ? 0.0 : m_wScale->value();
    o.seed = uint64_t(m_seed->value());
    o.train_scratch = m_trainScratch->isChecked();
    o.copy_parent_embedding = m_initFromParent->isEnabled() && m_initFromParent->isChecked();
    o.zero_new_mlp = m_zeroNewMlp->isEnabled() && m_zeroNewMlp->isChecked();
    const QString out = m_output.path->text().trimmed();
    o.out_path = (out.isEmpty() ? m_output.path->placeholderText() : out).toStdString();
    o.overwrite = false;
    o.store = true;
    o.threads = threads;
    return o;
}

void PastingOptionsForm::setBusy(bool busy)
{
    for (QWidget* w : std::initializer_list<QWidget*> { m_cutLayer, m_embedding, m_steps, m_lr, m_batchSize, m_nEval,
             m_evalEvery, m_seed, m_trainScratch, m_matchLabels, m_matchScale, m_schedule, m_guoSettings })
        w->setEnabled(!busy);
    m_output.setEnabled(!busy);
    m_wScale->setEnabled(!busy && !m_matchLabels->isChecked() && !m_matchScale->isChecked()); // given or matched
    // Starting from the parent is defined for linear at ℓ = 0 and transformer1 at ℓ ≥ 1 (PastingOptions).
    const bool transformer1 = m_embedding->currentData().toString() == QLatin1String("transformer1");
    m_initFromParent->setEnabled(!busy && (transformer1 ? m_cutLayer->value() >= 1 : m_cutLayer->value() == 0));
    // Dropping the new block's MLP is defined only for a transformer1 started from the parent.
    m_zeroNewMlp->setEnabled(m_initFromParent->isEnabled() && transformer1 && m_initFromParent->isChecked());
}

void PastingOptionsForm::updateDefaultOutput()
{
    if (m_parentPath.isEmpty())
        return;
    m_output.path->setPlaceholderText(
        pastingOutputPath(m_parentPath, m_cutLayer->value(), m_embedding->currentData().toString()));
}

void PastingOptionsForm::browseOutput()
{
    const QString start = m_output.path->text().isEmpty() ? m_output.path->placeholderText() : m_output.path->text();
    const QString path
        = askExperimentFileToWrite(m_output.path->window(), tr("Pasted model's experiment file"), start, false);
    if (!path.isEmpty())
        m_output.path->setText(path);
}

} // namespace icl::gui
