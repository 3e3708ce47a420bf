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

/// A tab: an optional row of controls, a status line and the main widget.
QWidget* tabPage(QWidget* controls, QLabel* status, QWidget* body)
{
    auto* page = new QWidget;
    auto* layout = makeContentLayout(page);
    if (controls)
        layout->addWidget(controls);
    layout->addWidget(status);
    layout->addWidget(body, 1);
    return page;
}

} // namespace

GdAlignmentPage::GdAlignmentPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("gdAlignment"), parent)
{
    m_status->hide(); // each tab has its own status line
    QWidget* content = createContent(
        tr("Open an experiment with a linear self-attention (LSA) model to compare it with gradient descent."));
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);

    // --- the selected checkpoint vs GD-K ---
    m_metrics = new AlignmentMetricsStrip(content);
    layout->addWidget(m_metrics);

    m_tabs = new QTabWidget(content);
    m_tabs->setObjectName(QStringLiteral("gdAlignmentTabs"));
    m_tabs->setDocumentMode(true);
    layout->addWidget(m_tabs, 1);

    // (a) over training
    m_alignmentPlot = new widgets::PlotView(this);
    m_alignmentPlot->setObjectName(QStringLiteral("alignmentPlot"));
    m_alignmentStatus = makeTabStatusLabel(QStringLiteral("alignmentStatus"), this);
    m_tabs->addTab(tabPage(nullptr, m_alignmentStatus, m_alignmentPlot), tr("Over training"));
    m_tabs->setTabToolTip(0, tr("Alignment metrics recorded at each evaluation during training"));

    // (b) model vs GD predictions
    m_scatterPlot = new widgets::PlotView(this);
    m_scatterPlot->setObjectName(QStringLiteral("scatterPlot"));
    m_scatterStatus = makeTabStatusLabel(QStringLiteral("scatterStatus"), this);
    m_tabs->addTab(tabPage(nullptr, m_scatterStatus, m_scatterPlot), tr("Model vs GD"));
    m_tabs->setTabToolTip(1, tr("Predictions of the selected checkpoint against GD on the same prompts"));

    // (c) learned weights vs the construction
    m_weightsStatus = makeTabStatusLabel(QStringLiteral("weightsStatus"), this);
    m_weights = new LsaWeightsTab(m_weightsStatus);
    m_tabs->addTab(m_weights, tr("Weights"));
    m_tabs->setTabToolTip(2, tr("Learned W_KᵀW_Q and P·W_V next to the GD construction"));

    // (d) η scan
    auto* etaControls = new QWidget(this);
    auto* ec = new QHBoxLayout(etaControls);
    ec->setContentsMargins(0, 0, 0, 0);
    ec->addWidget(new QLabel(tr("GD steps k:"), etaControls));
    m_etaK = new QSpinBox(etaControls);
    m_etaK->setObjectName(QStringLiteral("etaStepsChooser"));
    m_etaK->setRange(1, 64);
    m_etaK->setToolTip(tr("Number of GD steps whose loss is scanned over η (default: the model's layers)"));
    ec->addWidget(m_etaK);
    ec->addStretch(1);
    m_etaPlot = new widgets::PlotView(this);
    m_etaPlot->setObjectName(QStringLiteral("etaScanPlot"));
    m_etaStatus = makeTabStatusLabel(QStringLiteral("etaStatus"), this);
    m_tabs->addTab(tabPage(etaControls, m_etaStatus, m_etaPlot), tr("η scan"));
    m_tabs->setTabToolTip(3, tr("Loss of k GD steps against the step size η, next to the model's loss"));
    connect(m_etaK, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
        if (ready())
            runEtaScan();
    });

    // (e) K layers vs K steps
    auto* layerControls = new QWidget(this);
    auto* lc = new QHBoxLayout(layerControls);
    lc->setContentsMargins(0, 0, 0, 0);
    m_withGdpp = new QCheckBox(tr("Compare with GD++ (fits GD++ for k > 1; a few seconds per layer)"), layerControls);
    m_withGdpp->setObjectName(QStringLiteral("gdppCheck"));
    m_withGdpp->setChecked(true);
    lc->addWidget(m_withGdpp);
    lc->addStretch(1);
    m_layerTable = new LayerStepTable(this);
    m_layersStatus = makeTabStatusLabel(QStringLiteral("layersStatus"), this);
    m_tabs->addTab(tabPage(layerControls, m_layersStatus, m_layerTable), tr("Layers vs steps"));
    m_tabs->setTabToolTip(4, tr("The read-out after k layers against k steps of GD and of GD++"));
    connect(m_withGdpp, &QCheckBox::toggled, this, [this] {
        if (ready())
            runLayers();
    });

    // (f) out of distribution
    auto* oodControls = new QWidget(this);
    auto* oc = new QHBoxLayout(oodControls);
    oc->setContentsMargins(0, 0, 0, 0);
    oc->addWidget(new QLabel(tr("Shift:"), oodControls));
    m_oodKind = new QComboBox(oodControls);
    m_oodKind->setObjectName(QStringLiteral("oodKindChooser"));
    m_oodKind->addItem(tr("input range (x ~ U(−α, α))"), QStringLiteral("x_scale"));
    m_oodKind->addItem(tr("task scale (w ~ N(0, α²I))"), QStringLiteral("w_scale"));
    m_oodKind->addItem(tr("context label noise σ"), QStringLiteral("label_noise"));
    m_oodKind->addItem(tr("depth: apply the tied layer α times"), QStringLiteral("depth"));
    oc->addWidget(m_oodKind);
    oc->addStretch(1);
    m_oodPlot = new widgets::PlotView(this);
    m_oodPlot->setObjectName(QStringLiteral("oodPlot"));
    m_oodStatus = makeTabStatusLabel(QStringLiteral("oodStatus"), this);
    m_tabs->addTab(tabPage(oodControls, m_oodStatus, m_oodPlot), tr("Out of distribution"));
    m_tabs->setTabToolTip(5, tr("Model, GD and least squares on prompts from a shifted distribution"));
    connect(m_oodKind, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        if (ready())
            runOod();
    });

    // (g) copy analysis (interleaved layout)
    m_copySummary = makeTextLine(QStringLiteral("copySummary"), this);
    m_copyHeatmap = new widgets::HeatmapView(this);
    m_copyHeatmap->setObjectName(QStringLiteral("copyHeatmap"));
    m_copyStatus = makeTabStatusLabel(QStringLiteral("copyStatus"), this);
    m_tabs->addTab(tabPage(m_copySummary, m_copyStatus, m_copyHeatmap), tr("Copy (layer 1)"));
    m_tabs->setTabToolTip(6, tr("Interleaved layout: how strongly each layer-1 output token depends on each input "
                                "token; a first layer that copies y_i into the x_i token lights up the diagonal "
                                "next to the main one"));

    connect(runner(), &AnalysisRunner::progress, this, [this](int done, int total, const QString& label) {
        if (!label.isEmpty())
            m_currentJob = label;
        const int percent = total > 0 ? 100 * done / total : 0;
        Q_EMIT progressChanged(percent, tr("GD alignment: %1 (%2 of %3 done)").arg(m_currentJob).arg(done).arg(total));
    });
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
        return m_alignmentPlot;
    case 1:
        return m_scatterPlot;
    case 3:
        return m_etaPlot;
    case 5:
        return m_oodPlot;
    default:
        return nullptr;
    }
}

bool GdAlignmentPage::exportCurrentPlot()
{
    if (widgets::PlotView* plot = currentPlot()) {
        plot->exportWithDialog();
        return true;
    }
    if (m_stack->currentWidget() != m_message && m_tabs->currentIndex() == 6 && m_copyHeatmap->matrix().rows > 0) {
        m_copyHeatmap->exportWithDialog();
        return true;
    }
    return m_stack->currentWidget() != m_message && m_tabs->currentIndex() == 2 && m_weights->exportFocused();
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
                       .arg(QString::fromStdString(kind));
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

void GdAlignmentPage::cancel()
{
    runner()->cancel();
    // Everything not computed for this checkpoint is computed again when asked.
    m_stale = true;
    for (QLabel* s : { m_scatterStatus, m_weightsStatus, m_etaStatus, m_layersStatus, m_oodStatus, m_copyStatus })
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

void GdAlignmentPage::updateTrainingCurves(const icl::RunSummary& summary)
{
    if (summary.path != m_path || !m_supported) {
        showExperiment(summary, summary.checkpoints.empty() ? -1 : summary.checkpoints.back().step);
        return;
    }
    m_summary = summary;
    showAlignmentOverTraining();
}

void GdAlignmentPage::showAlignmentOverTraining()
{
    try {
        m_alignmentPlot->setFigure(icl::alignmentFigure(m_summary));
        setStatus(m_alignmentStatus, QString());
    } catch (const std::exception& e) {
        icl::Figure empty;
        empty.name = "alignment";
        empty.title = "Alignment of the model with gradient descent during training";
        empty.x_label = "training step";
        empty.y_label = "cosine / difference";
        m_alignmentPlot->setFigure(empty);
        setStatus(m_alignmentStatus,
            tr("%1. The checkpoint analyses in the other tabs still work.").arg(QString::fromStdString(e.what())),
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

template <class Result>
void GdAlignmentPage::runAnalysis(Analysis which, const QString& label, QLabel* status, std::function<Result()> work,
    std::function<void(const Result&)> show, std::function<void()> clear)
{
    const quint64 generation = ++m_analysisGeneration[which];
    runner()->enqueue(
        which, label,
        [this, which, generation, work = std::move(work), show = std::move(show)]() -> AnalysisRunner::Continuation {
            auto result = std::make_shared<Result>(work());
            return [this, which, generation, result, show] {
                if (generation == m_analysisGeneration[which])
                    show(*result);
            };
        },
        [this, which, generation, status, clear = std::move(clear)](const QString& error) {
            if (generation != m_analysisGeneration[which])
                return;
            clear();
            setStatus(status, error, true);
        });
}

void GdAlignmentPage::runMetrics()
{
    const QString refName = prettyReference(reference());
    m_metrics->setPending(m_step, refName);
    setStatus(m_scatterStatus, tr("Computing the alignment of checkpoint %1 with %2…").arg(m_step).arg(refName),
        false, true);
    icl::GdAlignmentOptions options;
    options.checkpoint_step = m_step;
    options.reference = reference();
    options.store = false;
    using Result = std::pair<icl::AlignmentResult, icl::Figure>;
    runAnalysis<Result>(
        Metrics, tr("alignment with %1").arg(refName), m_scatterStatus,
        [path = m_path, options, summary = m_summary] {
            icl::AlignmentResult result = icl::computeGdAlignment(path, options);
            icl::Figure figure = icl::predictionScatterFigure(result, summary);
            return Result(std::move(result), std::move(figure));
        },
        [this](const Result& r) {
            m_metrics->showResult(r.first);
            m_scatterPlot->setFigure(r.second);
            setStatus(m_scatterStatus, QString());
            Q_EMIT firstLookShown(); // the metrics come first; the other views follow
        },
        [this] {
            m_metrics->clear();
            m_scatterPlot->setFigure(icl::Figure {});
        });
}

void GdAlignmentPage::runWeights()
{
    setStatus(m_weightsStatus, tr("Reading the weights of checkpoint %1…").arg(m_step), false, true);
    runAnalysis<std::vector<icl::LsaWeightView>>(
        Weights, tr("learned weights"), m_weightsStatus,
        [path = m_path, step = m_step] { return icl::lsaWeightViews(path, step); },
        [this](const std::vector<icl::LsaWeightView>& views) {
            m_weights->setViews(views, m_tied, metadata());
            setStatus(m_weightsStatus, QString());
        },
        [this] { m_weights->clear(); });
}

void GdAlignmentPage::runEtaScan()
{
    const int64_t k = m_etaK->value();
    setStatus(m_etaStatus, tr("Scanning η for %1 GD step(s)…").arg(k), false, true);
    using Result = std::pair<icl::EtaScan, icl::Figure>;
    runAnalysis<Result>(
        EtaScan, tr("η scan"), m_etaStatus,
        [path = m_path, step = m_step, k, summary = m_summary] {
            icl::EtaScan scan = icl::computeEtaScan(path, step, k, 4.0, 200, false);
            icl::Figure figure = icl::etaScanFigure(scan, summary);
            // GD's loss grows by orders of magnitude past the stable η; on a log axis the minimum and
            // the model's loss stay readable.
            figure.log_y = true;
            return Result(std::move(scan), std::move(figure));
        },
        [this, k](const Result& r) {
            m_etaPlot->setFigure(r.second);
            setStatus(m_etaStatus,
                tr("Best η for %1 step(s): %2 (loss %3); trained model: loss %4")
                    .arg(k)
                    .arg(metricText(r.first.best_eta), metricText(r.first.best_loss), metricText(r.first.model_loss)));
        },
        [this] { m_etaPlot->setFigure(icl::Figure {}); });
}

void GdAlignmentPage::runOod()
{
    const std::string kind = m_oodKind->currentData().toString().toStdString();
    setStatus(m_oodStatus, tr("Evaluating out of distribution (%1)…").arg(m_oodKind->currentText()), false, true);
    runAnalysis<icl::Figure>(
        Ood, tr("out-of-distribution curves"), m_oodStatus,
        [path = m_path, step = m_step, kind, summary = m_summary] {
            return icl::oodFigure(icl::computeOod(path, step, kind, {}, 4000, false), summary);
        },
        [this](const icl::Figure& figure) {
            m_oodPlot->setFigure(figure);
            setStatus(m_oodStatus, QString());
        },
        [this] { m_oodPlot->setFigure(icl::Figure {}); });
}

void GdAlignmentPage::runLayers()
{
    const bool gdpp = m_withGdpp->isChecked() && m_layers > 1;
    setStatus(m_layersStatus,
        gdpp ? tr("Comparing %1 layer read-outs with GD and GD++ (fitting GD++ takes a while)…").arg(m_layers)
             : tr("Comparing %1 layer read-out(s) with GD…").arg(m_layers),
        false, true);
    runAnalysis<std::vector<icl::LayerStepRow>>(
        Layers, gdpp ? tr("K layers vs K steps of GD and GD++") : tr("K layers vs K steps of GD"), m_layersStatus,
        [path = m_path, step = m_step, gdpp] { return icl::compareLayersWithSteps(path, step, gdpp); },
        [this](const std::vector<icl::LayerStepRow>& rows) {
            m_layerTable->setRows(rows);
            setStatus(m_layersStatus,
                tr("Layer k: the model's read-out after k layers; GD-k: k GD steps with a line-searched η; "
                   "GD++-k: k layers of GD++ (von Oswald et al. Fig. 3). Losses are 0.5·MSE on the evaluation "
                   "prompts; — where not defined (GD++ needs k > 1)."));
        },
        [this] { m_layerTable->setRowCount(0); });
}

void GdAlignmentPage::runCopy()
{
    setStatus(m_copyStatus, tr("Computing layer-1 gradient norms of checkpoint %1…").arg(m_step), false, true);
    runAnalysis<icl::CopyAnalysis>(
        Copy, tr("copy analysis of layer 1"), m_copyStatus,
        [path = m_path, step = m_step] { return icl::computeCopyAnalysis(path, step, 64, false); },
        [this](const icl::CopyAnalysis& copy) {
            icl::Matrix m;
            m.name = "‖∂ layer-1 output (row) / ∂ input token (column)‖, checkpoint " + std::to_string(copy.checkpoint_step);
            m.rows = m.cols = copy.tokens;
            m.data = copy.gradient_norm;
            m.row_labels = m.col_labels = copy.token_labels;
            m_copyHeatmap->setMetadata(metadata());
            m_copyHeatmap->setMatrix(m);
            m_copySummary->setText(
                tr("Mean gradient norm of the layer-1 output at x-token k with respect to input token j: "
                   "own (j = k) %1, next (j = k+1, the token holding y_k) %2, others %3. next/other = %4%5")
                    .arg(metricText(copy.own), metricText(copy.next), metricText(copy.other),
                        metricText(copy.nextOtherRatio()),
                        copy.nextOtherRatio() > 2 ? tr(": layer 1 copies y_k into the x_k token.")
                                                  : tr(": no copy yet.")));
            setStatus(m_copyStatus, QString());
        },
        [this] { m_copyHeatmap->setMatrix(icl::Matrix {}); });
}

} // namespace icl::gui
