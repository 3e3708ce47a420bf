#include "app/gui/gd_alignment_page.h"

#include <filesystem>
#include <memory>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "app/gui/gd_alignment_views.h"
#include "app/gui/page_widgets.h"
#include "core/io/config.h"
#include "core/io/kinds.h"
#include "core/report.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"

namespace icl::gui {

namespace {

const char* kTabNames[] = { "training", "scatter", "weights", "eta", "layers", "ood", "copy" };

/// A row of controls above a tab's view: `label` (when not empty), `field`, then space.
QWidget* controlsRow(const QString& label, QWidget* field)
{
    auto* row = new QWidget;
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    if (!label.isEmpty())
        layout->addWidget(new QLabel(label, row));
    layout->addWidget(field);
    layout->addStretch(1);
    return row;
}

} // namespace

GdAlignmentPage::GdAlignmentPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("gdAlignment"), parent)
{
    m_status->hide(); // each tab has its own status line
    followTrainingWith([this] { showAlignmentOverTraining(); });
    const auto [content, layout] = createContent(
        tr("Open an experiment with a linear self-attention (LSA) model to compare it with gradient descent."));
    layout->setContentsMargins(0, 0, 0, 0);

    // --- the selected checkpoint vs GD-K ---
    m_metrics = new AlignmentMetricsStrip(content);
    layout->addWidget(m_metrics);

    m_tabs = new QTabWidget(content);
    m_tabs->setObjectName(QStringLiteral("gdAlignmentTabs"));
    m_tabs->setDocumentMode(true);
    layout->addWidget(m_tabs, 1);

    // (a) over training
    m_alignment = addPlotTab(nullptr, QStringLiteral("alignmentPlot"), QStringLiteral("alignmentStatus"),
        tr("Over training"), tr("Alignment metrics recorded at each evaluation during training"));

    // (b) model vs GD predictions
    m_scatter = addPlotTab(nullptr, QStringLiteral("scatterPlot"), QStringLiteral("scatterStatus"), tr("Model vs GD"),
        tr("Predictions of the selected checkpoint against GD on the same prompts"));

    // (c) learned weights vs the construction
    m_weightsStatus = makeTabStatusLabel(QStringLiteral("weightsStatus"), this);
    m_weights = new LsaWeightsTab(m_weightsStatus);
    m_tabs->addTab(m_weights, tr("Weights"));
    m_tabs->setTabToolTip(2, tr("Learned W_KᵀW_Q and P·W_V next to the GD construction"));

    // (d) η scan
    m_etaK = makeSpinBox(nullptr, "etaStepsChooser", 1, 64, 1);
    m_etaK->setToolTip(tr("Number of GD steps whose loss is scanned over η (default: the model's layers)"));
    m_eta = addPlotTab(controlsRow(tr("GD steps k:"), m_etaK), QStringLiteral("etaScanPlot"),
        QStringLiteral("etaStatus"), tr("η scan"),
        tr("Loss of k GD steps against the step size η, next to the model's loss"));
    connect(m_etaK, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
        if (ready())
            runEtaScan();
    });

    // (e) K layers vs K steps
    m_withGdpp = makeCheckBox(this, "gdppCheck", tr("Compare with GD++ (fits GD++ for k > 1; a few seconds per layer)"),
        true, QString());
    m_layerTable = new LayerStepTable(this);
    m_layersStatus = makeTabStatusLabel(QStringLiteral("layersStatus"), this);
    addTab(controlsRow(QString(), m_withGdpp), m_layersStatus, m_layerTable, tr("Layers vs steps"),
        tr("The read-out after k layers against k steps of GD and of GD++"));
    connect(m_withGdpp, &QCheckBox::toggled, this, [this] {
        if (ready())
            runLayers();
    });

    // (f) out of distribution
    m_oodKind = new QComboBox;
    m_oodKind->setObjectName(QStringLiteral("oodKindChooser"));
    m_oodKind->addItem(tr("input range (x ~ U(−α, α))"), QStringLiteral("x_scale"));
    m_oodKind->addItem(tr("task scale (w ~ N(0, α²I))"), QStringLiteral("w_scale"));
    m_oodKind->addItem(tr("context label noise σ"), QStringLiteral("label_noise"));
    m_oodKind->addItem(tr("depth: apply the tied layer α times"), QStringLiteral("depth"));
    m_ood = addPlotTab(controlsRow(tr("Shift:"), m_oodKind), QStringLiteral("oodPlot"), QStringLiteral("oodStatus"),
        tr("Out of distribution"), tr("Model, GD and least squares on prompts from a shifted distribution"));
    connect(m_oodKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        if (ready())
            runOod();
    });

    // (g) copy analysis (interleaved layout)
    m_copySummary = makeTextLine(QStringLiteral("copySummary"), this);
    m_copyHeatmap = new widgets::HeatmapView(this);
    m_copyHeatmap->setObjectName(QStringLiteral("copyHeatmap"));
    m_copyStatus = makeTabStatusLabel(QStringLiteral("copyStatus"), this);
    addTab(m_copySummary, m_copyStatus, m_copyHeatmap, tr("Copy (layer 1)"),
        tr("Interleaved layout: how strongly each layer-1 output token depends on each input token; a first layer "
           "that copies y_i into the x_i token lights up the diagonal next to the main one"));

    connect(runner(), &AnalysisRunner::progress, this, [this](int done, int total, const QString& label) {
        if (!label.isEmpty())
            m_currentJob = label;
        const int percent = total > 0 ? 100 * done / total : 0;
        Q_EMIT progressChanged(percent, tr("GD alignment: %1 (%2 of %3 done)").arg(m_currentJob).arg(done).arg(total));
    });
}

GdAlignmentPage::PlotTab GdAlignmentPage::addPlotTab(QWidget* controls, const QString& plotName,
    const QString& statusName, const QString& title, const QString& toolTip)
{
    PlotTab tab;
    tab.plot = new widgets::PlotView(this);
    tab.plot->setObjectName(plotName);
    tab.status = makeTabStatusLabel(statusName, this);
    addTab(controls, tab.status, tab.plot, title, toolTip);
    return tab;
}

void GdAlignmentPage::addTab(QWidget* controls, QLabel* status, QWidget* body, const QString& title,
    const QString& toolTip)
{
    auto* page = new QWidget;
    auto* layout = makeContentLayout(page);
    if (controls)
        layout->addWidget(controls);
    layout->addWidget(status);
    layout->addWidget(body, 1);
    m_tabs->setTabToolTip(m_tabs->addTab(page, title), toolTip);
}

GdAlignmentPage::~GdAlignmentPage()
{
    stopWorker(); // join the worker before the widgets its results would go to are destroyed
}

QStringList GdAlignmentPage::tabNames()
{
    QStringList names;
    for (const char* n : kTabNames)
        names << QString::fromLatin1(n);
    return names;
}

bool GdAlignmentPage::showTab(const QString& name)
{
    const int index = int(tabNames().indexOf(name.trimmed().toLower()));
    if (index < 0)
        return false;
    m_tabs->setCurrentIndex(index);
    return true;
}

widgets::PlotView* GdAlignmentPage::currentPlot() const
{
    if (m_stack->currentWidget() == m_message)
        return nullptr;
    switch (m_tabs->currentIndex()) {
    case 0:
        return m_alignment.plot;
    case 1:
        return m_scatter.plot;
    case 3:
        return m_eta.plot;
    case 5:
        return m_ood.plot;
    default:
        return nullptr;
    }
}

bool GdAlignmentPage::exportCurrentPlot()
{
    if (AnalysisPage::exportCurrentPlot())
        return true;
    const bool content = m_stack->currentWidget() != m_message;
    if (content && m_tabs->currentIndex() == 6)
        return exportIfShown(m_copyHeatmap->matrix().rows > 0, m_copyHeatmap);
    return content && m_tabs->currentIndex() == 2 && m_weights->exportFocused();
}

widgets::HeatmapView* GdAlignmentPage::heatmap(bool kq, bool construction) const
{
    return m_weights->heatmap(kq, construction);
}

QComboBox* GdAlignmentPage::layerChooser() const { return m_weights->layerChooser(); }
QTableWidget* GdAlignmentPage::layerTable() const { return m_layerTable; }

bool GdAlignmentPage::supports(const icl::RunSummary& summary, QString* why)
{
    if (!summary.config) {
        if (why)
            *why = tr("The experiment's config was not read.");
        return false;
    }
    const std::string& kind = summary.config->model.kind;
    if (icl::kindOf(summary.config->model) != icl::ModelKind::Lsa) {
        if (why)
            *why = tr("This page needs an LSA model (model.kind \"lsa\", as in the vonoswald-* presets); this "
                      "experiment trains a \"%1\" model.")
                       .arg(shownText(kind));
        return false;
    }
    if (summary.checkpoints.empty()) {
        if (why)
            *why = tr("The experiment has no saved checkpoints yet.");
        return false;
    }
    return true;
}

std::string GdAlignmentPage::reference() const
{
    return m_reference.empty() ? "gd_" + std::to_string(m_linearLayers) : m_reference;
}

void GdAlignmentPage::cancelJobs()
{
    runner()->cancel();
    // Everything not computed for this checkpoint is computed again when asked.
    m_stale = true;
    for (QLabel* s : { m_scatter.status, m_weightsStatus, m_eta.status, m_layersStatus, m_ood.status, m_copyStatus })
        if (s->property("pending").toBool())
            setStatus(s, tr("Cancelled. Select a checkpoint to compute again."));
}

std::map<std::string, std::string> GdAlignmentPage::metadata() const
{
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(m_summary.path).filename().string();
    m["checkpoint_step"] = std::to_string(m_step);
    if (m_summary.config)
        m["seed"] = std::to_string(m_summary.config->seed);
    return m;
}

void GdAlignmentPage::setStatus(QLabel* label, const QString& text, bool error, bool pending)
{
    label->setText(text);
    label->setProperty("error", error);
    label->setProperty("pending", pending);
    label->setStyleSheet(error ? QStringLiteral("color: #B2182B;") : QStringLiteral("color: #555555;"));
    label->setVisible(!text.isEmpty());
}

bool GdAlignmentPage::bind(const icl::RunSummary& summary, QString* why)
{
    for (quint64& g : m_analysisGeneration)
        ++g; // results for the previous file are dropped
    if (!supports(summary, why)) {
        showMessage(*why);
        return false;
    }
    showContent();
    const icl::ExperimentConfig& config = *summary.config; // supports() checked it is there
    m_layers = config.model.n_layers;
    m_linearLayers = std::max<int64_t>(1, m_layers - config.model.softmax_layers);
    m_tied = config.model.tied;
    m_interleaved = icl::layoutOf(config.task) == icl::TaskLayout::Interleaved;
    m_reference = config.eval.alignment.empty() ? std::string() : config.eval.alignment.front();
    m_tabs->setTabEnabled(6, m_interleaved);
    {
        const QSignalBlocker blockK(m_etaK);
        m_etaK->setValue(int(m_linearLayers));  // K linear layers ~ K GD steps
        // The depth shift iterates a tied layer; untied models cannot be applied more often.
        const QSignalBlocker blockKind(m_oodKind);
        auto* model = qobject_cast<QStandardItemModel*>(m_oodKind->model());
        if (model && model->item(3))
            model->item(3)->setEnabled(m_tied);
        if (!m_tied && m_oodKind->currentIndex() == 3)
            m_oodKind->setCurrentIndex(0);
        m_withGdpp->setEnabled(m_layers > 1);
    }
    showAlignmentOverTraining();
    return true;
}

void GdAlignmentPage::showAlignmentOverTraining()
{
    try {
        m_alignment.plot->setFigure(icl::alignmentFigure(m_summary));
        setStatus(m_alignment.status, QString());
    } catch (const std::exception& e) {
        icl::Figure empty;
        empty.name = "alignment";
        empty.title = "Alignment of the model with gradient descent during training";
        empty.x_label = "training step";
        empty.y_label = "cosine / difference";
        m_alignment.plot->setFigure(empty);
        setStatus(m_alignment.status,
            tr("%1. The checkpoint analyses in the other tabs still work.").arg(errorText(e, m_summary.path)),
            true);
    }
}

void GdAlignmentPage::compute()
{
    m_stale = false;
    runMetrics();
    if (m_interleaved)
        runCopy();
    runWeights();
    runEtaScan();
    runOod();
    runLayers();
}

} // namespace icl::gui
