#include "app/gui/attention_prompt_editor.h"

#include "core/error.h"
#include "core/io/prompt_file.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/gui/attention_tables.h"
#include "app/gui/page_widgets.h"

namespace icl::gui {

namespace {

/// Columns of the prompt editor (x_1 … x_d, y) that share the panel's width without a horizontal scroll bar.
constexpr int kFittedPromptColumns = 9;

/// The tooltips of the buttons that need the prompt's task vector w.
QString resampleRowTip()
{
    return PromptEditor::tr("Draw a new x for the selected row and its label from the prompt's task instance w");
}
QString relabelTip()
{
    return PromptEditor::tr("Recompute every label from w with noise σ");
}

} // namespace

PromptEditor::PromptEditor(QWidget* parent)
    : QWidget(parent)
{
    m_layout = new QVBoxLayout(this);
    m_layout->setContentsMargins(0, 0, 0, 0);
    m_layout->setSpacing(4);
    auto* promptTitle
        = new QLabel(tr("<b>Prompt</b>: in-context examples, then the query; edit a value to re-run"), this);
    promptTitle->setWordWrap(true);
    auto* titleRow = new QHBoxLayout;
    titleRow->addWidget(promptTitle, 1);
    m_layout->addLayout(titleRow);
    m_promptTable = new QTableWidget(this);
    m_promptTable->setObjectName(QStringLiteral("attentionPrompt"));
    m_promptTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_promptTable->setSelectionMode(QAbstractItemView::SingleSelection);
    // A slightly smaller font and columns that share the panel's width (numbers rounded to fit, see
    // FitNumberDelegate) keep x_1 … x_d and y on screen for d up to 8; wider prompts scroll (fillPromptTable).
    QFont promptFont = m_promptTable->font();
    if (promptFont.pointSizeF() > 0)
        promptFont.setPointSizeF(promptFont.pointSizeF() * 0.9);
    else if (promptFont.pixelSize() > 0)
        promptFont.setPixelSize(std::max(8, int(std::lround(promptFont.pixelSize() * 0.9))));
    m_promptTable->setFont(promptFont);
    m_promptTable->setItemDelegate(new FitNumberDelegate(m_promptTable));
    m_promptTable->setWordWrap(false);
    m_promptTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_promptTable->horizontalHeader()->setMinimumSectionSize(
        QFontMetrics(promptFont).horizontalAdvance(QStringLiteral("-0.0")) + 6);
    m_promptTable->verticalHeader()->setDefaultSectionSize(QFontMetrics(promptFont).height() + 6);
    m_layout->addWidget(m_promptTable, 3);

    auto* rowButtons = new QGridLayout;
    rowButtons->setSpacing(3);
    m_rowButtons[AddRow] = makePushButton(this, "attentionAdd", tr("Add"),
        tr("Add an in-context example drawn from the prompt's task (before the query)"));
    m_rowButtons[DeleteRow]
        = makePushButton(this, "attentionDelete", tr("Delete"), tr("Delete the selected in-context example"));
    m_rowButtons[MoveUp]
        = makePushButton(this, "attentionUp", tr("Up"), tr("Move the selected example one place earlier"));
    m_rowButtons[MoveDown]
        = makePushButton(this, "attentionDown", tr("Down"), tr("Move the selected example one place later"));
    m_rowButtons[DuplicateRow]
        = makePushButton(this, "attentionDuplicate", tr("Duplicate"), tr("Insert a copy of the selected row after it"));
    m_rowButtons[ResampleRow] = makePushButton(this, "attentionResampleRow", tr("Resample row"), resampleRowTip());
    for (int i = 0; i < RowButtonCount; ++i)
        rowButtons->addWidget(m_rowButtons[i], i / 3, i % 3);
    m_layout->addLayout(rowButtons);

    auto* promptRow = new QHBoxLayout;
    promptRow->setSpacing(4);
    auto* seedLabel = new QLabel(tr("Seed"), this);
    m_seed = makeSpinBox(this, "attentionSeed", 0, INT_MAX, 0); // 0: as the CLI's --prompt-seed
    m_seed->setToolTip(tr("Seed of the sampled prompt (same distribution as the training prompts)"));
    seedLabel->setBuddy(m_seed);
    m_resamplePrompt = makePushButton(this, "attentionResamplePrompt", tr("Resample prompt"),
        tr("Draw a whole new prompt (task instance w, examples and query) from the seed"));
    promptRow->addWidget(seedLabel);
    promptRow->addWidget(m_seed);
    promptRow->addWidget(m_resamplePrompt, 1);
    m_fileButtons.open = makePushButton(this, "attentionOpenPrompt", tr("Open…"),
        tr("Open a prompt of your own (Ctrl+Shift+O): JSON {\"x\": [[…], …], \"y\": […]} or CSV with the header "
           "x_1,…,x_d,y, one row per point, the query last (its y may be left empty)"));
    m_fileButtons.open->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_fileButtons.save = makePushButton(this, "attentionSavePrompt", tr("Save…"),
        tr("Save the prompt (every x and y, exactly) as JSON or CSV, to reproduce an edited prompt (Ctrl+Shift+S)"));
    m_fileButtons.save->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    titleRow->addWidget(m_fileButtons.open, 0, Qt::AlignTop);
    titleRow->addWidget(m_fileButtons.save, 0, Qt::AlignTop);
    m_layout->addLayout(promptRow);
    auto* noiseRow = new QHBoxLayout;
    noiseRow->setSpacing(4);
    m_noise = makeDoubleSpinBox(this, "attentionNoise", 3, 0.0, 100.0, 0.05);
    m_noise->setToolTip(tr("σ of the label noise: Relabel recomputes every y_i = f_w(x_i) + σ·z_i"));
    m_relabel = makePushButton(this, "attentionRelabel", tr("Relabel"), relabelTip());
    addLabelled(noiseRow, tr("Label noise σ"), m_noise);
    noiseRow->addWidget(m_relabel, 1);
    m_layout->addLayout(noiseRow);
    auto* ablationRow = new QHBoxLayout;
    m_ablation = makeComboBox(this, "attentionAblation",
        tr("Replace the selected head's output (attn.out of its layer) by zero or its mean over positions, and "
           "re-run"),
        {{tr("none"), {}}, {tr("zero-ablate the selected head"), {}}, {tr("mean-ablate the selected head"), {}}});
    addLabelled(ablationRow, tr("Ablation"), m_ablation, 1);
    m_layout->addLayout(ablationRow);

    connect(m_promptTable, &QTableWidget::itemChanged, this, &PromptEditor::cellEdited);
    connect(m_promptTable, &QTableWidget::itemSelectionChanged, this, &PromptEditor::selectionChanged);
    connect(m_rowButtons[AddRow], &QPushButton::clicked, this,
        [this] { requestEdit(PromptMutation::Kind::AddRow, m_prompt.nContext()); });
    connect(m_rowButtons[DeleteRow], &QPushButton::clicked, this, &PromptEditor::deleteSelected);
    connect(m_rowButtons[MoveUp], &QPushButton::clicked, this, [this] { moveSelected(-1); });
    connect(m_rowButtons[MoveDown], &QPushButton::clicked, this, [this] { moveSelected(+1); });
    connect(m_rowButtons[DuplicateRow], &QPushButton::clicked, this, &PromptEditor::duplicateSelected);
    connect(m_rowButtons[ResampleRow], &QPushButton::clicked, this, [this] {
        const int r = selectedPromptRow();
        if (r >= 0)
            requestEdit(PromptMutation::Kind::ResampleRow, r);
    });
    connect(m_resamplePrompt, &QPushButton::clicked, this, [this] { Q_EMIT mutationRequested(sampleMutation()); });
    connect(m_relabel, &QPushButton::clicked, this, [this] { requestEdit(PromptMutation::Kind::Relabel, 0); });
    connect(m_ablation, qOverload<int>(&QComboBox::currentIndexChanged), this, &PromptEditor::ablationChanged);
    connect(m_fileButtons.open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open prompt"), inExperimentFolder(QString()),
            tr("Prompt files (*.json *.csv);;JSON (*.json);;CSV data (*.csv);;All files (*)"));
        if (!path.isEmpty())
            Q_EMIT openRequested(path);
    });
    connect(m_fileButtons.save, &QPushButton::clicked, this, &PromptEditor::chooseSavePath);
}

PromptMutation PromptEditor::sampleMutation() const
{
    PromptMutation m;
    m.kind = PromptMutation::Kind::Sample;
    m.seed = uint64_t(m_seed->value());
    return m;
}

int PromptEditor::ablationIndex() const
{
    return m_ablation->currentIndex();
}

uint64_t PromptEditor::nextSeed()
{
    // Distinct, reproducible draws per edit of a prompt sampled from the seed box's seed.
    return uint64_t(m_seed->value()) * 1000003ULL + (++m_editCounter);
}

void PromptEditor::requestEdit(PromptMutation::Kind kind, int64_t index)
{
    PromptMutation m;
    m.kind = kind;
    m.index = index;
    if (kind == PromptMutation::Kind::Relabel)
        m.noise = m_noise->value();
    m.seed = nextSeed();
    ++m_edits;
    Q_EMIT mutationRequested(m);
}

void PromptEditor::reset()
{
    m_prompt = icl::Prompt {};
    m_hasPrompt = false;
    m_promptFile.clear();
    m_edits = 0;
    {
        const QSignalBlocker block(m_ablation);
        m_ablation->setCurrentIndex(0);
    }
    fillPromptTable();
}

void PromptEditor::setPrompt(const icl::Prompt& prompt)
{
    m_prompt = prompt;
    m_hasPrompt = true;
    m_promptFile.clear();
    fillPromptTable();
}

void PromptEditor::showComputedPrompt(const icl::Prompt& prompt, bool fresh, const QString& file)
{
    if (fresh)
        m_promptFile = file;
    m_prompt = prompt;
    m_hasPrompt = true;
    if (fresh) {
        m_edits = 0;
        const QSignalBlocker block(m_noise);
        m_noise->setValue(m_prompt.noise_std);
    }
    const int selected = selectedPromptRow();
    fillPromptTable();
    if (selected >= 0 && size_t(selected) < m_prompt.y.size())
        m_promptTable->selectRow(selected);
}

void PromptEditor::cellEdited(QTableWidgetItem* item)
{
    if (m_filling || !m_hasPrompt)
        return;
    const int r = item->row(), c = item->column();
    const int64_t d = m_prompt.dim();
    if (r < 0 || size_t(r) >= m_prompt.y.size() || c < 0 || c > d)
        return;
    double& slot = c < d ? m_prompt.x[size_t(r)][size_t(c)] : m_prompt.y[size_t(r)];
    const QString text = item->text().trimmed();
    bool ok = false;
    double v = text.toDouble(&ok);
    if (r == m_prompt.nContext() && c == d && text.isEmpty()) {
        ok = true; // the query's label may be unknown: no errors are shown then
        v = NAN;
    } else if (!std::isfinite(v)) {
        ok = false;
    }
    if (!ok) {
        const QSignalBlocker block(m_promptTable);
        item->setText(std::isfinite(slot) ? formatValue(slot, 6) : QString());
        Q_EMIT statusMessage(tr("“%1” is not a number").arg(text));
        return;
    }
    if (std::isnan(v) && std::isnan(slot))
        return; // still unknown: nothing to re-run
    slot = v;
    item->setData(Qt::UserRole, v);
    ++m_edits;
    Q_EMIT edited();
}

void PromptEditor::deleteSelected()
{
    const int r = selectedPromptRow();
    if (r < 0 || r >= m_prompt.nContext() || m_prompt.nContext() <= 1)
        return;
    m_prompt.x.erase(m_prompt.x.begin() + r);
    m_prompt.y.erase(m_prompt.y.begin() + r);
    fillPromptTable();
    m_promptTable->selectRow(std::min(r, int(m_prompt.nContext()) - 1));
    ++m_edits;
    Q_EMIT edited();
}

void PromptEditor::moveSelected(int delta)
{
    const int r = selectedPromptRow(), to = r + delta;
    if (r < 0 || r >= m_prompt.nContext() || to < 0 || to >= m_prompt.nContext())
        return;
    std::swap(m_prompt.x[size_t(r)], m_prompt.x[size_t(to)]);
    std::swap(m_prompt.y[size_t(r)], m_prompt.y[size_t(to)]);
    fillPromptTable();
    m_promptTable->selectRow(to);
    ++m_edits;
    Q_EMIT edited();
}

void PromptEditor::duplicateSelected()
{
    const int r = selectedPromptRow();
    if (r < 0 || r > m_prompt.nContext())
        return;
    const int at = int(std::min<int64_t>(r + 1, m_prompt.nContext())); // a copy of the query becomes the last example
    const std::vector<double> x = m_prompt.x[size_t(r)];
    const double y = m_prompt.y[size_t(r)];
    if (!std::isfinite(y)) {
        Q_EMIT statusMessage(tr("The query has no label: type one in its y cell before duplicating it as an example."));
        return;
    }
    m_prompt.x.insert(m_prompt.x.begin() + at, x);
    m_prompt.y.insert(m_prompt.y.begin() + at, y);
    fillPromptTable();
    m_promptTable->selectRow(at);
    ++m_edits;
    Q_EMIT edited();
}

void PromptEditor::chooseSavePath()
{
    const QString json = tr("JSON (*.json)"), csv = tr("CSV data (*.csv)");
    QString filter = csv;
    const QString base = m_promptFile.isEmpty() ? QStringLiteral("prompt-seed%1").arg(m_prompt.seed)
                                                : QFileInfo(m_promptFile).completeBaseName();
    QString path = QFileDialog::getSaveFileName(
        this, tr("Save prompt"), m_promptFile.isEmpty() ? inExperimentFolder(base + QStringLiteral(".csv"))
                                                        : QFileInfo(m_promptFile).dir().filePath(base + QStringLiteral(".csv")),
        csv + QStringLiteral(";;") + json, &filter);
    if (path.isEmpty())
        return;
    // The chosen filter decides the format when the name has neither extension.
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix != QLatin1String("json") && suffix != QLatin1String("csv"))
        path += filter == json ? QStringLiteral(".json") : QStringLiteral(".csv");
    Q_EMIT saveRequested(path);
}

bool PromptEditor::exportPrompt(
    const std::string& path, const std::map<std::string, std::string>& metadata, std::string* error) const
{
    try {
        icl::writePromptFile(path, m_prompt, metadata);
    } catch (const icl::Error& e) {
        if (error)
            *error = e.what();
        return false;
    }
    return true;
}

void PromptEditor::fillPromptTable()
{
    m_filling = true;
    const QSignalBlocker block(m_promptTable);
    const int64_t N = m_prompt.nContext(), d = m_prompt.dim();
    m_promptTable->clearContents();
    m_promptTable->setRowCount(m_hasPrompt ? int(N + 1) : 0);
    m_promptTable->setColumnCount(m_hasPrompt ? int(d + 1) : 0);
    // Up to kFittedPromptColumns columns share the panel's width; more keep their natural width and scroll.
    m_promptTable->horizontalHeader()->setSectionResizeMode(
        d + 1 <= kFittedPromptColumns ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
    QStringList header, rows;
    for (int64_t c = 0; c < d; ++c)
        header << (d == 1 ? QStringLiteral("x") : QStringLiteral("x[%1]").arg(c + 1));
    header << QStringLiteral("y");
    for (int64_t r = 0; r < N; ++r)
        rows << QString::number(r + 1);
    rows << tr("query");
    if (m_hasPrompt) {
        m_promptTable->setHorizontalHeaderLabels(header);
        m_promptTable->setVerticalHeaderLabels(rows);
        for (int64_t r = 0; r <= N; ++r)
            for (int64_t c = 0; c <= d; ++c) {
                const double v = c < d ? m_prompt.x[size_t(r)][size_t(c)] : m_prompt.y[size_t(r)];
                // 4 significant digits keep d = 20 columns readable; the exact value stays in the prompt. An
                // unknown query label (NaN) is an empty cell.
                auto* item = new QTableWidgetItem(std::isfinite(v) ? QString::number(v, 'g', 4) : QString());
                item->setData(Qt::UserRole, v);
                item->setToolTip(QString::number(v, 'g', 17));
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                if (r == N)
                    item->setBackground(QColor(0xFF, 0xF4, 0xE0));
                if (r == N && c == d)
                    item->setToolTip(std::isfinite(v)
                            ? tr("%1 — the query's true label y_q (the errors are measured against it)")
                                  .arg(QString::number(v, 'g', 17))
                            : tr("The query's true label y_q is unknown; type it to see the errors"));
                m_promptTable->setItem(int(r), int(c), item);
            }
    }
    m_filling = false;
}

int PromptEditor::selectedPromptRow() const
{
    const auto rows = m_promptTable->selectionModel()->selectedRows();
    if (!rows.isEmpty())
        return rows.front().row();
    return m_promptTable->currentRow();
}

void PromptEditor::updateControls(bool busy, bool runOpen, bool inspected)
{
    const bool editable = m_hasPrompt && !busy;
    const int r = selectedPromptRow();
    const int64_t N = m_prompt.nContext();
    const bool example = r >= 0 && r < N;
    const bool hasTask = !m_prompt.w.empty();
    m_promptTable->setEnabled(editable);
    m_rowButtons[AddRow]->setEnabled(editable);
    m_rowButtons[DeleteRow]->setEnabled(editable && example && N > 1);
    m_rowButtons[MoveUp]->setEnabled(editable && example && r > 0);
    m_rowButtons[MoveDown]->setEnabled(editable && example && r + 1 < N);
    m_rowButtons[DuplicateRow]->setEnabled(editable && r >= 0 && r <= N);
    m_rowButtons[ResampleRow]->setEnabled(editable && hasTask && r >= 0 && r <= N);
    m_relabel->setEnabled(editable && hasTask);
    m_noise->setEnabled(editable && hasTask);
    // A prompt without its task instance (an opened file without "w") has no label function to draw from.
    const QString noTask = tr(" — off: the prompt has no task vector w (e.g. opened from a file without one)");
    m_rowButtons[ResampleRow]->setToolTip(resampleRowTip() + (m_hasPrompt && !hasTask ? noTask : QString()));
    m_relabel->setToolTip(relabelTip() + (m_hasPrompt && !hasTask ? noTask : QString()));
    m_resamplePrompt->setEnabled(runOpen && !busy);
    m_fileButtons.open->setEnabled(runOpen && !busy);
    m_fileButtons.save->setEnabled(m_hasPrompt);
    m_ablation->setEnabled(inspected);
}

} // namespace icl::gui
