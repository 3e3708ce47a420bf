#include "app/gui/attention_page.h"

#include "core/error.h"
#include "core/io/prompt_file.h"
#include "core/report.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <filesystem>

#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QImage>
#include <QKeySequence>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyledItemDelegate>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"
#include "widgets/bar_chart_view.h"
#include "widgets/plot_view.h"
#include "core/models/names.h"

namespace icl::gui {

namespace {

enum JobKey { InspectJob = 500 };

/// A table cell that shows a rounded number and sorts by the exact value (Qt::UserRole; NaN last).
class NumberItem : public QTableWidgetItem {
public:
    bool operator<(const QTableWidgetItem& other) const override
    {
        const double a = data(Qt::UserRole).toDouble(), b = other.data(Qt::UserRole).toDouble();
        if (std::isnan(a) || std::isnan(b))
            return !std::isnan(a) && std::isnan(b);
        return a < b;
    }
};

QTableWidgetItem* numberItem(double v, int digits = 6)
{
    auto* item = new NumberItem;
    item->setData(Qt::UserRole, v);
    item->setText(std::isfinite(v) ? QString::number(v, 'g', digits) : QStringLiteral("—"));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    return item;
}

QTableWidgetItem* textItem(const QString& text)
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    return item;
}

/// Prompt-editor cells: when a number's text (4 significant digits) is wider than its column, paints it with fewer
/// digits (3, 2, 1, then one digit in exponent form) instead of eliding it, so that d + 1 columns fit the panel. Only the
/// painting changes: the item's text (what the editor edits), its tooltip (all 17 digits) and its value stay.
class FitNumberDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override
    {
        QStyledItemDelegate::initStyleOption(option, index);
        const QVariant value = index.data(Qt::UserRole);
        // Size hints (ResizeToContents) come with no rect: they measure the full text.
        if (option->rect.width() <= 0 || option->text.isEmpty() || !value.isValid())
            return;
        const double v = value.toDouble();
        if (!std::isfinite(v))
            return;
        const QStyle* style = option->widget ? option->widget->style() : QApplication::style();
        const int margin = 2 * (style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, option->widget) + 1);
        // The style lays the text out with fractional advances: keep a pixel to spare so it never elides.
        const QFontMetricsF metrics(option->font);
        const qreal room = option->rect.width() - margin - 1.0;
        auto fits = [&](const QString& text) { return metrics.horizontalAdvance(text) <= room; };
        if (fits(option->text))
            return;
        // "1.2e+02" → "1.2e2", "-6e-04" → "-6e-4".
        auto compact = [](QString text) {
            static const QRegularExpression exponent(QStringLiteral("e\\+?(-?)0*(\\d)"));
            return text.replace(exponent, QStringLiteral("e\\1\\2"));
        };
        QString shortest = option->text;
        for (int digits = 3; digits >= 0; --digits) {
            // 3, 2, 1 significant digits, then one digit in exponent form (e.g. -0.0006: "-6e-4").
            const QString candidate = compact(digits > 0 ? QString::number(v, 'g', digits) : QString::number(v, 'e', 0));
            if (candidate.size() < shortest.size())
                shortest = candidate;
            if (fits(candidate)) {
                option->text = candidate;
                return;
            }
        }
        option->text = shortest; // the style elides what still does not fit
    }
};

/// Columns of the prompt editor (x_1 … x_d, y) that share the panel's width without a horizontal scroll bar.
constexpr int kFittedPromptColumns = 9;

} // namespace

/// What one request computed on the worker.
struct AttentionPage::Result {
    icl::Prompt prompt;
    bool promptChanged = false;
    icl::Inspection inspection;
    icl::RegressionLens lens;
    std::vector<QImage> thumbnails; ///< rendered on the worker: the GUI thread only paints them
    std::vector<double> largest;
};

/// The worker thread's Inspector; only jobs of m_runner touch it (one at a time).
struct AttentionPage::WorkerState {
    std::unique_ptr<icl::Inspector> inspector;
    quint64 generation = 0;
};

AttentionPage::AttentionPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("attention"), parent)
    , m_worker(std::make_shared<WorkerState>())
{
    QWidget* content = createContent(tr("Open a trained experiment to see what each head attends to, edit the prompt "
                                        "and compare the model's prediction with gradient descent, ridge and least "
                                        "squares."));
    auto* layout = makeContentLayout(content);
    m_headingLabel = new QLabel(content);
    m_headingLabel->setObjectName(QStringLiteral("attentionHeading"));
    m_headingLabel->setWordWrap(true);
    layout->addWidget(m_headingLabel);

    auto* columns = new QSplitter(Qt::Horizontal, content);
    columns->setObjectName(QStringLiteral("attentionColumns"));
    columns->setChildrenCollapsible(false);

    // --- left: thumbnails and head summaries ---
    auto* left = new QSplitter(Qt::Vertical, columns);
    left->setChildrenCollapsible(false);
    m_grid = new widgets::AttentionGrid(left);
    m_grid->setToolTip(tr("Attention pattern of every head (layer × head); click one to show it large"));
    m_headTable = new QTableWidget(left);
    m_headTable->setObjectName(QStringLiteral("attentionHeads"));
    m_headTable->setColumnCount(5);
    m_headTable->setHorizontalHeaderLabels(
        { tr("layer"), tr("head"), tr("entropy"), tr("copy mass"), tr("query → ex.") });
    m_headTable->horizontalHeaderItem(2)->setToolTip(
        tr("Mean Shannon entropy (nats) of the head's rows (linear heads: |score| normalised per row)"));
    m_headTable->horizontalHeaderItem(3)->setToolTip(
        tr("Mean weight of each y_i token on its own x_i token (copying; interleaved layout only)"));
    m_headTable->horizontalHeaderItem(4)->setToolTip(
        tr("The in-context example the query token attends to most, and that weight"));
    m_headTable->verticalHeader()->setVisible(false);
    m_headTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_headTable->setSelectionMode(QAbstractItemView::SingleSelection);
    m_headTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_headTable->setSortingEnabled(true);
    m_headTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_headTable->horizontalHeader()->setStretchLastSection(true);
    left->addWidget(m_grid);
    left->addWidget(m_headTable);
    left->setStretchFactor(0, 3);
    left->setStretchFactor(1, 2);

    // --- middle: the selected head large; its query row and the regression lens below ---
    auto* middle = new QSplitter(Qt::Vertical, columns);
    middle->setChildrenCollapsible(false);
    m_patternView = new widgets::AttentionPatternView(middle);
    m_patternView->setObjectName(QStringLiteral("attentionPatternView"));
    m_lowerTabs = new QTabWidget(middle);
    m_lowerTabs->setObjectName(QStringLiteral("attentionLowerTabs"));
    m_rowChart = new widgets::BarChartView(m_lowerTabs);
    m_rowChart->setObjectName(QStringLiteral("attentionRowChart"));
    m_rowChart->setCaptionVisible(false); // the heading says it; exports carry the caption
    m_lensPlot = new widgets::PlotView(m_lowerTabs);
    m_lensPlot->setObjectName(QStringLiteral("attentionLensPlot"));
    m_lowerTabs->addTab(m_rowChart, tr("Query row"));
    m_lowerTabs->addTab(m_lensPlot, tr("Regression lens"));
    middle->addWidget(m_patternView);
    middle->addWidget(m_lowerTabs);
    middle->setStretchFactor(0, 3);
    middle->setStretchFactor(1, 2);

    // --- right: prompt editor and predictions ---
    auto* right = new QWidget(columns);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->setSpacing(4);
    auto* promptTitle = new QLabel(tr("<b>Prompt</b>: in-context examples, then the query; edit a value to re-run"), right);
    promptTitle->setWordWrap(true);
    auto* titleRow = new QHBoxLayout;
    titleRow->addWidget(promptTitle, 1);
    rightLayout->addLayout(titleRow);
    m_promptTable = new QTableWidget(right);
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
    rightLayout->addWidget(m_promptTable, 3);

    auto* rowButtons = new QGridLayout;
    rowButtons->setSpacing(3);
    auto button = [&](const QString& text, const char* name, const QString& tip) {
        auto* b = new QPushButton(text, right);
        b->setObjectName(QString::fromLatin1(name));
        b->setToolTip(tip);
        return b;
    };
    m_add = button(tr("Add"), "attentionAdd", tr("Add an in-context example drawn from the prompt's task (before the query)"));
    m_delete = button(tr("Delete"), "attentionDelete", tr("Delete the selected in-context example"));
    m_up = button(tr("Up"), "attentionUp", tr("Move the selected example one place earlier"));
    m_down = button(tr("Down"), "attentionDown", tr("Move the selected example one place later"));
    m_duplicate = button(tr("Duplicate"), "attentionDuplicate", tr("Insert a copy of the selected row after it"));
    m_resampleRow = button(tr("Resample row"), "attentionResampleRow",
        tr("Draw a new x for the selected row and its label from the prompt's task instance w"));
    rowButtons->addWidget(m_add, 0, 0);
    rowButtons->addWidget(m_delete, 0, 1);
    rowButtons->addWidget(m_duplicate, 0, 2);
    rowButtons->addWidget(m_up, 1, 0);
    rowButtons->addWidget(m_down, 1, 1);
    rowButtons->addWidget(m_resampleRow, 1, 2);
    rightLayout->addLayout(rowButtons);

    auto* promptRow = new QHBoxLayout;
    promptRow->setSpacing(4);
    auto* seedLabel = new QLabel(tr("Seed"), right);
    m_seed = new QSpinBox(right);
    m_seed->setObjectName(QStringLiteral("attentionSeed"));
    m_seed->setRange(0, INT_MAX);
    m_seed->setValue(1);
    m_seed->setToolTip(tr("Seed of the sampled prompt (same distribution as the training prompts)"));
    seedLabel->setBuddy(m_seed);
    m_resamplePrompt = button(tr("Resample prompt"), "attentionResamplePrompt",
        tr("Draw a whole new prompt (task instance w, examples and query) from the seed"));
    promptRow->addWidget(seedLabel);
    promptRow->addWidget(m_seed);
    promptRow->addWidget(m_resamplePrompt, 1);
    m_openPrompt = button(tr("Open…"), "attentionOpenPrompt",
        tr("Open a prompt of your own (Ctrl+Shift+O): JSON {\"x\": [[…], …], \"y\": […]} or CSV with the header "
           "x_1,…,x_d,y, one row per point, the query last (its y may be left empty)"));
    m_openPrompt->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    m_savePrompt = button(tr("Save…"), "attentionSavePrompt",
        tr("Save the prompt (every x and y, exactly) as JSON or CSV, to reproduce an edited prompt (Ctrl+Shift+S)"));
    m_savePrompt->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    titleRow->addWidget(m_openPrompt, 0, Qt::AlignTop);
    titleRow->addWidget(m_savePrompt, 0, Qt::AlignTop);
    rightLayout->addLayout(promptRow);
    auto* noiseRow = new QHBoxLayout;
    noiseRow->setSpacing(4);
    auto* noiseLabel = new QLabel(tr("Label noise σ"), right);
    m_noise = new QDoubleSpinBox(right);
    m_noise->setObjectName(QStringLiteral("attentionNoise"));
    m_noise->setDecimals(3);
    m_noise->setRange(0.0, 100.0);
    m_noise->setSingleStep(0.05);
    m_noise->setToolTip(tr("σ of the label noise: Relabel recomputes every y_i = f_w(x_i) + σ·z_i"));
    noiseLabel->setBuddy(m_noise);
    m_relabel = button(tr("Relabel"), "attentionRelabel", tr("Recompute every label from w with noise σ"));
    noiseRow->addWidget(noiseLabel);
    noiseRow->addWidget(m_noise);
    noiseRow->addWidget(m_relabel, 1);
    rightLayout->addLayout(noiseRow);
    auto* ablationRow = new QHBoxLayout;
    auto* ablationLabel = new QLabel(tr("Ablation"), right);
    m_ablation = new QComboBox(right);
    m_ablation->setObjectName(QStringLiteral("attentionAblation"));
    m_ablation->addItem(tr("none"));
    m_ablation->addItem(tr("zero-ablate the selected head"));
    m_ablation->addItem(tr("mean-ablate the selected head"));
    m_ablation->setToolTip(tr("Replace the selected head's output (attn.out of its layer) by zero or its mean over "
                              "positions, and re-run"));
    ablationLabel->setBuddy(m_ablation);
    ablationRow->addWidget(ablationLabel);
    ablationRow->addWidget(m_ablation, 1);
    rightLayout->addLayout(ablationRow);

    m_target = new QLabel(right);
    m_target->setObjectName(QStringLiteral("attentionTarget"));
    m_target->setWordWrap(true);
    rightLayout->addWidget(m_target);
    m_predictionTable = new QTableWidget(right);
    m_predictionTable->setObjectName(QStringLiteral("attentionPredictions"));
    m_predictionTable->setColumnCount(3);
    m_predictionTable->setHorizontalHeaderLabels({ tr("predictor"), tr("prediction ŷ"), tr("loss vs y") });
    m_predictionTable->horizontalHeaderItem(2)->setToolTip(tr("The run's training loss on (ŷ, y_q), e.g. 0.5·(ŷ − y)²"));
    m_predictionTable->verticalHeader()->setVisible(false);
    m_predictionTable->verticalHeader()->setDefaultSectionSize(20);
    m_predictionTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_predictionTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_predictionTable->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_predictionTable->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    rightLayout->addWidget(m_predictionTable, 2);
    rightLayout->addWidget(m_status);

    columns->addWidget(left);
    columns->addWidget(middle);
    columns->addWidget(right);
    columns->setStretchFactor(0, 3);
    columns->setStretchFactor(1, 4);
    columns->setStretchFactor(2, 3);
    columns->setSizes({ 290, 430, 380 }); // the prompt editor: x_1 … x_8 and y side by side
    layout->addWidget(columns, 1);

    m_currentView = m_patternView;
    for (QWidget* view : std::initializer_list<QWidget*> { m_patternView, m_rowChart, m_lensPlot })
        for (QWidget* child : view->findChildren<QWidget*>())
            child->installEventFilter(this);

    // --- wiring ---
    connect(m_grid, &widgets::AttentionGrid::headSelected, this, &AttentionPage::selectHead);
    connect(m_patternView, &widgets::AttentionPatternView::querySelected, this, &AttentionPage::selectQuery);
    connect(m_headTable, &QTableWidget::itemSelectionChanged, this, [this] {
        if (m_filling)
            return;
        const auto rows = m_headTable->selectionModel()->selectedRows();
        if (rows.isEmpty())
            return;
        QTableWidgetItem* item = m_headTable->item(rows.front().row(), 0);
        if (item)
            selectHead(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toInt());
    });
    connect(m_promptTable, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
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
            m_status->setText(tr("“%1” is not a number").arg(text));
            return;
        }
        if (std::isnan(v) && std::isnan(slot))
            return; // still unknown: nothing to re-run
        slot = v;
        item->setData(Qt::UserRole, v);
        promptEdited();
    });
    connect(m_promptTable, &QTableWidget::itemSelectionChanged, this, &AttentionPage::updateControls);
    connect(m_add, &QPushButton::clicked, this, [this] {
        Mutation m;
        m.kind = Mutation::Kind::AddRow;
        m.index = m_prompt.nContext();
        m.seed = nextSeed();
        ++m_edits;
        request(m);
    });
    connect(m_delete, &QPushButton::clicked, this, [this] {
        const int r = selectedPromptRow();
        if (r < 0 || r >= m_prompt.nContext() || m_prompt.nContext() <= 1)
            return;
        m_prompt.x.erase(m_prompt.x.begin() + r);
        m_prompt.y.erase(m_prompt.y.begin() + r);
        fillPromptTable();
        m_promptTable->selectRow(std::min(r, int(m_prompt.nContext()) - 1));
        promptEdited();
    });
    auto move = [this](int delta) {
        const int r = selectedPromptRow(), to = r + delta;
        if (r < 0 || r >= m_prompt.nContext() || to < 0 || to >= m_prompt.nContext())
            return;
        std::swap(m_prompt.x[size_t(r)], m_prompt.x[size_t(to)]);
        std::swap(m_prompt.y[size_t(r)], m_prompt.y[size_t(to)]);
        fillPromptTable();
        m_promptTable->selectRow(to);
        promptEdited();
    };
    connect(m_up, &QPushButton::clicked, this, [move] { move(-1); });
    connect(m_down, &QPushButton::clicked, this, [move] { move(+1); });
    connect(m_duplicate, &QPushButton::clicked, this, [this] {
        const int r = selectedPromptRow();
        if (r < 0 || r > m_prompt.nContext())
            return;
        const int at = int(std::min<int64_t>(r + 1, m_prompt.nContext())); // a copy of the query becomes the last example
        const std::vector<double> x = m_prompt.x[size_t(r)];
        const double y = m_prompt.y[size_t(r)];
        if (!std::isfinite(y)) {
            m_status->setText(tr("The query has no label: type one in its y cell before duplicating it as an example."));
            return;
        }
        m_prompt.x.insert(m_prompt.x.begin() + at, x);
        m_prompt.y.insert(m_prompt.y.begin() + at, y);
        fillPromptTable();
        m_promptTable->selectRow(at);
        promptEdited();
    });
    connect(m_resampleRow, &QPushButton::clicked, this, [this] {
        const int r = selectedPromptRow();
        if (r < 0)
            return;
        Mutation m;
        m.kind = Mutation::Kind::ResampleRow;
        m.index = r;
        m.seed = nextSeed();
        ++m_edits;
        request(m);
    });
    connect(m_resamplePrompt, &QPushButton::clicked, this, [this] {
        Mutation m;
        m.kind = Mutation::Kind::Sample;
        m.seed = uint64_t(m_seed->value());
        request(m);
    });
    connect(m_relabel, &QPushButton::clicked, this, [this] {
        Mutation m;
        m.kind = Mutation::Kind::Relabel;
        m.noise = m_noise->value();
        m.seed = nextSeed();
        ++m_edits;
        request(m);
    });
    connect(m_ablation, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] { request(); });
    connect(m_openPrompt, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open prompt"), QString(),
            tr("Prompt files (*.json *.csv);;JSON (*.json);;CSV data (*.csv);;All files (*)"));
        if (!path.isEmpty())
            openPrompt(path);
    });
    connect(m_savePrompt, &QPushButton::clicked, this, [this] {
        const QString json = tr("JSON (*.json)"), csv = tr("CSV data (*.csv)");
        QString filter = csv;
        const QString base = m_promptFile.isEmpty() ? QStringLiteral("prompt-seed%1").arg(m_prompt.seed)
                                                    : QFileInfo(m_promptFile).completeBaseName();
        QString path = QFileDialog::getSaveFileName(
            this, tr("Save prompt"), base + QStringLiteral(".csv"), csv + QStringLiteral(";;") + json, &filter);
        if (path.isEmpty())
            return;
        // The chosen filter decides the format when the name has neither extension.
        const QString suffix = QFileInfo(path).suffix().toLower();
        if (suffix != QLatin1String("json") && suffix != QLatin1String("csv"))
            path += filter == json ? QStringLiteral(".json") : QStringLiteral(".csv");
        std::string error;
        if (!exportPrompt(path.toStdString(), &error))
            QMessageBox::warning(this, tr("Save failed"), QString::fromStdString(error));
        else
            m_status->setText(tr("Saved the prompt to %1.").arg(QFileInfo(path).fileName()));
    });
    clearViews();
    updateControls();
}

AttentionPage::~AttentionPage() = default; // the runner (a child) joins its worker

bool AttentionPage::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::MouseButtonPress) {
        auto* w = qobject_cast<QWidget*>(watched);
        for (QWidget* view : std::initializer_list<QWidget*> { m_patternView, m_rowChart, m_lensPlot })
            if (w && (view == w || view->isAncestorOf(w)))
                m_currentView = view;
    }
    return QWidget::eventFilter(watched, event);
}

QString AttentionPage::predictorLabel(const std::string& name)
{
    if (name == "model")
        return tr("model");
    if (name == "least_squares")
        return tr("least squares");
    if (name.rfind("gd_", 0) == 0)
        return QStringLiteral("GD-%1").arg(QString::fromStdString(name.substr(3)));
    if (name.rfind("gdpp_", 0) == 0)
        return QStringLiteral("GD++ (%1 layers)").arg(QString::fromStdString(name.substr(5)));
    if (name == "oracle_ridge_phi")
        return tr("oracle (ridge on Φ*(x))");
    if (name == "mixture_posterior")
        return tr("Bayes mixture posterior");
    if (name == "knn")
        return tr("3-nearest neighbours");
    QString s = QString::fromStdString(name);
    s.replace('_', ' ');
    return s;
}

void AttentionPage::showExperiment(const icl::RunSummary& summary, qint64 step)
{
    runner()->cancel();
    ++m_experimentGeneration;
    m_summary = summary;
    m_step = step;
    m_prompt = icl::Prompt {};
    m_hasPrompt = false;
    m_promptFile.clear();
    m_edits = 0;
    m_pendingMutation.reset();
    m_inspection.reset();
    m_lens.reset();
    m_layer = 0;
    m_head = 0;
    m_query = -1;
    {
        const QSignalBlocker block(m_ablation);
        m_ablation->setCurrentIndex(0);
    }
    clearViews();
    fillPromptTable();
    m_status->clear();
    if (summary.path.empty() || summary.checkpoints.empty() || step < 0) {
        showMessage(summary.path.empty()
                ? tr("Open a trained experiment to inspect its attention.")
                : tr("%1 has no saved checkpoint to inspect.").arg(QFileInfo(QString::fromStdString(summary.path)).fileName()));
        m_dirty = false;
        updateControls();
        return;
    }
    showContent();
    m_headingLabel->setText(tr("%1 · checkpoint %2 · loading…")
                                .arg(QFileInfo(QString::fromStdString(summary.path)).fileName())
                                .arg(step));
    Mutation m;
    m.kind = Mutation::Kind::Sample;
    m.seed = uint64_t(m_seed->value());
    request(m);
}

void AttentionPage::selectCheckpoint(qint64 step)
{
    if (step == m_step)
        return;
    m_step = step;
    request();
}

void AttentionPage::setActive(bool active)
{
    m_active = active;
    if (active && m_dirty)
        request();
}

void AttentionPage::cancel()
{
    if (!isBusy())
        return;
    runner()->cancel();
    ++m_request; // a result still running is dropped
    m_pendingMutation.reset();
    m_status->setText(tr("Cancelled."));
    updateControls();
}

void AttentionPage::setPrompt(const icl::Prompt& prompt)
{
    m_prompt = prompt;
    m_hasPrompt = true;
    m_promptFile.clear();
    m_pendingMutation.reset();
    fillPromptTable();
    Q_EMIT promptChanged(m_prompt);
    request();
}

void AttentionPage::openPrompt(const QString& path)
{
    if (m_summary.path.empty() || m_step < 0) {
        m_status->setText(tr("Open an experiment first: a prompt is checked against its model."));
        return;
    }
    Mutation m;
    m.kind = Mutation::Kind::Open;
    m.path = path.toStdString();
    request(m);
}

uint64_t AttentionPage::nextSeed()
{
    // Distinct, reproducible draws per edit of a prompt sampled from the seed box's seed.
    return uint64_t(m_seed->value()) * 1000003ULL + (++m_editCounter);
}

std::vector<icl::Ablation> AttentionPage::ablations() const
{
    if (m_ablation->currentIndex() <= 0 || !m_inspection)
        return {};
    icl::Ablation a;
    a.kind = m_ablation->currentIndex() == 1 ? icl::Ablation::Kind::Zero : icl::Ablation::Kind::Mean;
    a.name = icl::actName(icl::Act::AttnOut, m_layer);
    a.head = m_head;
    return { a };
}

void AttentionPage::promptEdited()
{
    ++m_edits;
    Q_EMIT promptChanged(m_prompt);
    request();
}

void AttentionPage::request(std::optional<Mutation> mutation)
{
    if (mutation)
        m_pendingMutation = mutation;
    if (m_summary.path.empty() || m_step < 0)
        return;
    if (!m_active) {
        m_dirty = true;
        return;
    }
    m_dirty = false;
    if (!m_hasPrompt && !m_pendingMutation) {
        Mutation m;
        m.kind = Mutation::Kind::Sample;
        m.seed = uint64_t(m_seed->value());
        m_pendingMutation = m;
    }
    const quint64 id = ++m_request;
    const std::shared_ptr<WorkerState> worker = m_worker;
    const std::string path = m_summary.path;
    const quint64 generation = m_experimentGeneration;
    const int64_t step = m_step;
    const icl::Prompt prompt = m_prompt;
    const std::optional<Mutation> mutation_ = m_pendingMutation;
    const std::vector<icl::Ablation> ablation = ablations();
    runner()->enqueue(
        InspectJob, tr("attention"),
        [this, id, worker, path, generation, step, prompt, mutation_, ablation]() -> AnalysisRunner::Continuation {
            // Worker thread: only this job touches the Inspector.
            if (!worker->inspector || worker->generation != generation) {
                worker->inspector.reset();
                worker->inspector = std::make_unique<icl::Inspector>(path, step);
                worker->generation = generation;
            } else if (worker->inspector->checkpointStep() != step) {
                worker->inspector->setCheckpoint(step);
            }
            icl::Inspector& insp = *worker->inspector;
            auto result = std::make_shared<Result>();
            result->prompt = prompt;
            if (mutation_) {
                result->promptChanged = true;
                icl::Prompt& p = result->prompt;
                switch (mutation_->kind) {
                case Mutation::Kind::Sample:
                    p = insp.samplePrompt(mutation_->seed);
                    break;
                case Mutation::Kind::ResampleRow:
                    insp.resampleExample(p, mutation_->index, mutation_->seed);
                    break;
                case Mutation::Kind::AddRow: {
                    const size_t at = size_t(std::clamp<int64_t>(mutation_->index, 0, p.nContext()));
                    const size_t from = at > 0 ? at - 1 : at;
                    p.x.insert(p.x.begin() + long(at), p.x[from]);
                    p.y.insert(p.y.begin() + long(at), p.y[from]);
                    if (!p.w.empty())
                        insp.resampleExample(p, int64_t(at), mutation_->seed);
                    break;
                }
                case Mutation::Kind::Relabel:
                    insp.relabel(p, mutation_->noise, mutation_->seed);
                    break;
                case Mutation::Kind::Open: {
                    icl::PromptFileLimits limits;
                    limits.d = insp.inputDim();
                    limits.max_points = insp.maxContext() > 0 ? insp.maxContext() + 1 : 0;
                    p = icl::readPromptFile(mutation_->path, limits);
                    break;
                }
                }
            }
            result->inspection = insp.inspect(result->prompt, ablation);
            result->lens = insp.lens(result->prompt, ablation);
            const icl::Inspection& in = result->inspection;
            for (size_t i = 0; i < in.patterns.size(); ++i) {
                const bool softmax = i < in.softmax_head.size() ? bool(in.softmax_head[i]) : true;
                result->thumbnails.push_back(widgets::AttentionGrid::renderThumbnail(in.patterns[i], softmax));
                result->largest.push_back(widgets::AttentionGrid::largestMagnitude(in.patterns[i]));
            }
            return [this, id, result] {
                if (id != m_request)
                    return; // superseded
                showResult(*result);
            };
        },
        [this, id](const QString& error) {
            if (id != m_request)
                return;
            m_pendingMutation.reset();
            m_status->setText(QStringLiteral("<span style='color:#B2182B'>%1</span>").arg(error.toHtmlEscaped()));
            if (!m_hasPrompt)
                m_headingLabel->setText(tr("Cannot inspect this experiment: %1").arg(error));
            updateControls();
        });
    m_status->setText(tr("Running the model…"));
    updateControls();
}

void AttentionPage::showResult(const Result& result)
{
    const bool sampled = m_pendingMutation && m_pendingMutation->kind == Mutation::Kind::Sample;
    const bool opened = m_pendingMutation && m_pendingMutation->kind == Mutation::Kind::Open;
    if (sampled)
        m_promptFile.clear();
    else if (opened)
        m_promptFile = QString::fromStdString(m_pendingMutation->path);
    m_pendingMutation.reset();
    if (result.promptChanged) {
        m_prompt = result.prompt;
        m_hasPrompt = true;
        if (sampled || opened) {
            m_edits = 0;
            const QSignalBlocker block(m_noise);
            m_noise->setValue(m_prompt.noise_std);
        }
        const int selected = selectedPromptRow();
        fillPromptTable();
        if (selected >= 0 && size_t(selected) < m_prompt.y.size())
            m_promptTable->selectRow(selected);
        Q_EMIT promptChanged(m_prompt);
    }
    m_inspection = result.inspection;
    m_lens = result.lens;
    m_grid->setThumbnails(result.inspection.n_layers, result.inspection.n_heads, result.thumbnails,
        result.inspection.softmax_head, result.largest);
    showInspection();
    QString status = tr("Model and baselines re-run in %1 ms.").arg(result.inspection.elapsed_ms, 0, 'f', 1);
    if (opened) {
        QString what = tr("Opened %1 (N = %2, d = %3).")
                           .arg(QFileInfo(m_promptFile).fileName())
                           .arg(m_prompt.nContext())
                           .arg(m_prompt.dim());
        if (m_prompt.w.empty())
            what += tr(" It has no task vector w: Resample row and Relabel are off.");
        if (!std::isfinite(m_prompt.y.back()))
            what += tr(" The query's label is unknown: no errors are shown.");
        status = what + QLatin1Char(' ') + status;
    }
    m_status->setText(status);
    updateControls();
}

std::map<std::string, std::string> AttentionPage::metadata() const
{
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(m_summary.path).filename().string();
    m["checkpoint_step"] = std::to_string(m_inspection ? m_inspection->checkpoint_step : m_step);
    m["seed"] = std::to_string(m_prompt.seed);
    if (!m_promptFile.isEmpty())
        m["prompt_file"] = QFileInfo(m_promptFile).fileName().toStdString();
    std::string prompt = "N = " + std::to_string(m_prompt.nContext()) + ", d = " + std::to_string(m_prompt.dim());
    if (m_edits > 0)
        prompt += ", edited (" + std::to_string(m_edits) + (m_edits == 1 ? " edit)" : " edits)");
    m["prompt"] = prompt;
    if (m_ablation->currentIndex() > 0)
        m["ablation"] = std::string(m_ablation->currentIndex() == 1 ? "zero" : "mean") + " "
            + icl::actName(icl::Act::AttnOut, m_layer) + " head " + std::to_string(m_head);
    return m;
}

icl::Figure AttentionPage::lensFigure(const icl::RegressionLens& lens, const std::map<std::string, std::string>& metadata)
{
    icl::Figure f = icl::lensFigure(lens, icl::RunSummary {}, metadata);  // the figure icl-cli export draws
    f.name = "regression_lens";
    if (!std::isfinite(lens.target)) // the query's label is unknown (an opened prompt without it): no line
        f.series.erase(std::remove_if(f.series.begin(), f.series.end(),
                           [](const icl::Series& s) { return s.name == "true label y_q"; }),
            f.series.end());
    return f;
}

void AttentionPage::clearViews()
{
    m_grid->clear();
    m_patternView->clear();
    m_rowChart->setChart(widgets::BarChart {});
    m_lensPlot->setFigure(icl::Figure {});
    m_headTable->setRowCount(0);
    m_predictionTable->setRowCount(0);
    m_target->clear();
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
    m_grid->setSelectedHead(m_layer, m_head);
    const int T = int(in.token_labels.size());
    if (m_query < 0 || m_query >= T)
        m_query = T - 1;
    m_headingLabel->setText(tr("%1 · checkpoint %2 · %3 × %4 · %5 tokens · %6%7")
                                .arg(QFileInfo(QString::fromStdString(m_summary.path)).fileName())
                                .arg(in.checkpoint_step)
                                .arg(in.n_layers == 1 ? tr("1 layer") : tr("%1 layers").arg(in.n_layers))
                                .arg(in.n_heads == 1 ? tr("1 head") : tr("%1 heads").arg(in.n_heads))
                                .arg(T)
                                .arg(m_promptFile.isEmpty() ? tr("prompt seed %1").arg(m_prompt.seed)
                                                            : tr("prompt %1").arg(QFileInfo(m_promptFile).fileName()))
                                .arg(m_edits > 0 ? tr(", edited") : QString()));
    showSelectedHead();
    fillHeadTable();
    fillPredictions();
    if (m_lens)
        m_lensPlot->setFigure(lensFigure(*m_lens, metadata()));
}

void AttentionPage::showSelectedHead()
{
    if (!m_inspection)
        return;
    const icl::Inspection& in = *m_inspection;
    const size_t index = size_t(m_layer * in.n_heads + m_head);
    if (index >= in.patterns.size())
        return;
    const icl::Matrix& pattern = in.patterns[index];
    const bool softmax = index < in.softmax_head.size() ? bool(in.softmax_head[index]) : true;
    std::map<std::string, std::string> meta = metadata();
    m_patternView->setMetadata(meta);
    m_patternView->setPattern(pattern, softmax);
    m_patternView->setSelectedQuery(m_query);

    widgets::BarChart chart;
    chart.name = "attention_row";
    const std::string query = size_t(m_query) < in.token_labels.size() ? in.token_labels[size_t(m_query)] : "?";
    chart.title = "Attention of " + query + " (layer " + std::to_string(m_layer) + ", head " + std::to_string(m_head) + ")";
    chart.x_label = "key token";
    chart.y_label = softmax ? "attention weight" : "attention score (linear)";
    chart.labels = in.key_labels;
    if (m_query >= 0 && m_query < pattern.rows)
        for (int64_t c = 0; c < pattern.cols; ++c)
            chart.values.push_back(pattern.at(m_query, c));
    chart.labels.resize(chart.values.size());
    meta["layer"] = std::to_string(m_layer);
    meta["head"] = std::to_string(m_head);
    meta["query_token"] = query;
    chart.metadata = meta;
    m_rowChart->setChart(chart);
}

void AttentionPage::fillHeadTable()
{
    m_filling = true;
    m_headTable->setSortingEnabled(false);
    const auto& heads = m_inspection->heads;
    m_headTable->setRowCount(int(heads.size()));
    int selectedRow = -1;
    for (size_t i = 0; i < heads.size(); ++i) {
        const icl::HeadSummary& h = heads[i];
        const int r = int(i);
        auto* layer = numberItem(double(h.layer));
        layer->setText(QString::number(h.layer));
        layer->setData(Qt::UserRole, int(h.layer));
        layer->setData(Qt::UserRole + 1, int(h.head));
        m_headTable->setItem(r, 0, layer);
        auto* head = numberItem(double(h.head));
        head->setText(QString::number(h.head));
        m_headTable->setItem(r, 1, head);
        m_headTable->setItem(r, 2, numberItem(h.entropy, 4));
        m_headTable->setItem(r, 3, numberItem(h.copy_mass, 3));
        if (!h.query_to_example.empty()) {
            const auto best = std::max_element(h.query_to_example.begin(), h.query_to_example.end());
            auto* item = numberItem(*best);
            item->setText(QStringLiteral("example %1 (%2)")
                              .arg(best - h.query_to_example.begin() + 1)
                              .arg(QString::number(*best, 'g', 3)));
            m_headTable->setItem(r, 4, item);
        } else {
            m_headTable->setItem(r, 4, textItem(QStringLiteral("—")));
        }
        if (h.layer == m_layer && h.head == m_head)
            selectedRow = r;
    }
    m_headTable->setSortingEnabled(true);
    if (selectedRow >= 0) {
        for (int r = 0; r < m_headTable->rowCount(); ++r) {
            QTableWidgetItem* item = m_headTable->item(r, 0);
            if (item && item->data(Qt::UserRole).toInt() == m_layer && item->data(Qt::UserRole + 1).toInt() == m_head)
                m_headTable->selectRow(r);
        }
    }
    m_filling = false;
}

void AttentionPage::fillPredictions()
{
    const icl::Inspection& in = *m_inspection;
    m_predictionTable->setRowCount(int(in.predictions.size()));
    for (size_t i = 0; i < in.predictions.size(); ++i) {
        const icl::PredictorValue& p = in.predictions[i];
        auto* name = textItem(predictorLabel(p.name));
        name->setData(Qt::UserRole, QString::fromStdString(p.name));
        if (p.name == "model") {
            QFont bold = name->font();
            bold.setBold(true);
            name->setFont(bold);
        }
        m_predictionTable->setItem(int(i), 0, name);
        m_predictionTable->setItem(int(i), 1, numberItem(p.prediction));
        m_predictionTable->setItem(int(i), 2, numberItem(p.error));
    }
    m_target->setText((std::isfinite(in.target) ? tr("True label of the query y = <b>%1</b>%2").arg(formatValue(in.target, 6))
                                                : tr("True label of the query: <b>unknown</b> (type it in the query's y "
                                                     "cell to see the errors)%1"))
                          .arg(m_ablation->currentIndex() > 0
                                  ? tr(" · layer %1 head %2 %3-ablated")
                                        .arg(m_layer)
                                        .arg(m_head)
                                        .arg(m_ablation->currentIndex() == 1 ? tr("zero") : tr("mean"))
                                  : QString()));
}

void AttentionPage::fillPromptTable()
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

int AttentionPage::selectedPromptRow() const
{
    const auto rows = m_promptTable->selectionModel()->selectedRows();
    if (!rows.isEmpty())
        return rows.front().row();
    return m_promptTable->currentRow();
}

void AttentionPage::selectHead(int layer, int head)
{
    const bool changed = layer != m_layer || head != m_head;
    m_layer = layer;
    m_head = head;
    m_grid->setSelectedHead(layer, head);
    if (!m_filling && m_inspection) {
        m_filling = true;
        for (int r = 0; r < m_headTable->rowCount(); ++r) {
            QTableWidgetItem* item = m_headTable->item(r, 0);
            if (item && item->data(Qt::UserRole).toInt() == layer && item->data(Qt::UserRole + 1).toInt() == head)
                m_headTable->selectRow(r);
        }
        m_filling = false;
    }
    showSelectedHead();
    if (changed && m_ablation->currentIndex() > 0)
        request(); // the ablated head changed
}

void AttentionPage::selectQuery(int row)
{
    m_query = row;
    showSelectedHead();
    m_lowerTabs->setCurrentWidget(m_rowChart);
}

void AttentionPage::updateControls()
{
    const bool editable = m_hasPrompt && !m_pendingMutation;
    const int r = selectedPromptRow();
    const int64_t N = m_prompt.nContext();
    const bool example = r >= 0 && r < N;
    const bool hasTask = !m_prompt.w.empty();
    m_promptTable->setEnabled(editable);
    m_add->setEnabled(editable);
    m_delete->setEnabled(editable && example && N > 1);
    m_up->setEnabled(editable && example && r > 0);
    m_down->setEnabled(editable && example && r + 1 < N);
    m_duplicate->setEnabled(editable && r >= 0 && r <= N);
    m_resampleRow->setEnabled(editable && hasTask && r >= 0 && r <= N);
    m_relabel->setEnabled(editable && hasTask);
    m_noise->setEnabled(editable && hasTask);
    // A prompt without its task instance (an opened file without "w") has no label function to draw from.
    const QString noTask = tr(" — off: the prompt has no task vector w (e.g. opened from a file without one)");
    m_resampleRow->setToolTip(tr("Draw a new x for the selected row and its label from the prompt's task instance w")
        + (m_hasPrompt && !hasTask ? noTask : QString()));
    m_relabel->setToolTip(tr("Recompute every label from w with noise σ") + (m_hasPrompt && !hasTask ? noTask : QString()));
    m_resamplePrompt->setEnabled(!m_summary.path.empty() && m_step >= 0 && !m_pendingMutation);
    m_openPrompt->setEnabled(!m_summary.path.empty() && m_step >= 0 && !m_pendingMutation);
    m_savePrompt->setEnabled(m_hasPrompt);
    m_ablation->setEnabled(m_inspection.has_value());
}

bool AttentionPage::exportPrompt(const std::string& path, std::string* error) const
{
    try {
        icl::writePromptFile(path, m_prompt, metadata());
    } catch (const icl::Error& e) {
        if (error)
            *error = e.what();
        return false;
    }
    return true;
}

QStringList AttentionPage::tabNames()
{
    return { QStringLiteral("query-row"), QStringLiteral("lens") };
}

void AttentionPage::showTab(const QString& name)
{
    if (name == QLatin1String("lens")) {
        m_lowerTabs->setCurrentWidget(m_lensPlot);
        m_currentView = m_lensPlot;
    } else if (name == QLatin1String("query-row")) {
        m_lowerTabs->setCurrentWidget(m_rowChart);
        m_currentView = m_rowChart;
    }
}

bool AttentionPage::exportCurrentPlot()
{
    if (!m_inspection)
        return false;
    if (m_currentView == m_rowChart)
        m_rowChart->exportWithDialog();
    else if (m_currentView == m_lensPlot)
        m_lensPlot->exportWithDialog();
    else
        m_patternView->exportWithDialog();
    return true;
}

} // namespace icl::gui
