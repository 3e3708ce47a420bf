#include "app/gui/gd_alignment_page.h"

#include <cmath>
#include <filesystem>
#include <memory>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>


#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "core/report.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "core/io/config.h"
#include "core/io/kinds.h"

namespace icl::gui {

namespace {

const char* kTabNames[] = { "training", "scatter", "weights", "eta", "layers", "ood", "copy" };

/// "gd_2" → "GD-2", "gdpp_3" → "GD++-3", "features_gd_1" → "features + GD-1".
QString prettyReference(const std::string& ref)
{
    const QString r = QString::fromStdString(ref);
    if (r.startsWith(QLatin1String("gdpp_")))
        return QStringLiteral("GD++-") + r.mid(5);
    if (r.startsWith(QLatin1String("features_gd_")))
        return QStringLiteral("features + GD-") + r.mid(12);
    if (r.startsWith(QLatin1String("gd_")))
        return QStringLiteral("GD-") + r.mid(3);
    return r;
}

QString number(double v)
{
    return std::isnan(v) ? QStringLiteral("—") : QString::number(v, 'g', 6);
}

QLabel* valueLabel(const QString& objectName, QWidget* parent)
{
    auto* label = new QLabel(QStringLiteral("—"), parent);
    label->setObjectName(objectName);
    QFont f = label->font();
    f.setBold(true);
    f.setPointSizeF(f.pointSizeF() * 1.15);
    label->setFont(f);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QLabel* makeStatusLabel(const QString& objectName, QWidget* parent)
{
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    label->setWordWrap(true);
    label->setVisible(false);
    return label;
}

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
    auto* strip = new QFrame(content);
    strip->setFrameShape(QFrame::StyledPanel);
    auto* grid = new QGridLayout(strip);
    grid->setContentsMargins(8, 4, 8, 4);
    grid->setHorizontalSpacing(18);
    grid->setVerticalSpacing(0);
    m_metricsTitle = new QLabel(tr("Selected checkpoint vs GD"), strip);
    m_metricsTitle->setObjectName(QStringLiteral("metricsTitle"));
    QFont titleFont = m_metricsTitle->font();
    titleFont.setBold(true);
    m_metricsTitle->setFont(titleFont);
    m_metricsTitle->setWordWrap(true);
    m_metricsTitle->setMinimumWidth(240);
    grid->addWidget(m_metricsTitle, 0, 0, 2, 1);
    m_cosine = valueLabel(QStringLiteral("modelCosineValue"), strip);
    m_predictionDifference = valueLabel(QStringLiteral("predictionDifferenceValue"), strip);
    m_modelDifference = valueLabel(QStringLiteral("modelDifferenceValue"), strip);
    m_relativeDifference = valueLabel(QStringLiteral("relativeModelDifferenceValue"), strip);
    m_modelLoss = valueLabel(QStringLiteral("modelLossValue"), strip);
    m_referenceLoss = valueLabel(QStringLiteral("referenceLossValue"), strip);
    const std::pair<QString, QLabel*> metrics[] = {
        { tr("model cosine"), m_cosine },
        { tr("prediction difference"), m_predictionDifference },
        { tr("model difference"), m_modelDifference },
        { tr("relative model difference"), m_relativeDifference },
        { tr("model loss"), m_modelLoss },
        { tr("GD loss"), m_referenceLoss },
    };
    const QString tips[] = {
        tr("Mean cosine between the model's and GD's sensitivities ∂ŷ/∂x_query (1 = same direction)"),
        tr("Mean |ŷ_model − ŷ_GD| on the same prompts"),
        tr("Mean ‖∂ŷ_model/∂x − ∂ŷ_GD/∂x‖₂"),
        tr("Model difference divided by the mean norm of GD's sensitivity"),
        tr("0.5·mean (ŷ_model − y)² on the evaluation prompts"),
        tr("0.5·mean (ŷ_GD − y)² on the same prompts"),
    };
    for (int i = 0; i < 6; ++i) {
        auto* caption = new QLabel(metrics[i].first, strip);
        QPalette pal = caption->palette();
        pal.setColor(QPalette::WindowText, QColor(0x55, 0x55, 0x55));
        caption->setPalette(pal);
        caption->setToolTip(tips[i]);
        metrics[i].second->setToolTip(tips[i]);
        grid->addWidget(caption, 0, i + 1);
        grid->addWidget(metrics[i].second, 1, i + 1);
    }
    grid->setColumnStretch(7, 1);
    layout->addWidget(strip);

    m_tabs = new QTabWidget(content);
    m_tabs->setObjectName(QStringLiteral("gdAlignmentTabs"));
    m_tabs->setDocumentMode(true);
    layout->addWidget(m_tabs, 1);

    // (a) over training
    m_alignmentPlot = new widgets::PlotView(this);
    m_alignmentPlot->setObjectName(QStringLiteral("alignmentPlot"));
    m_alignmentStatus = makeStatusLabel(QStringLiteral("alignmentStatus"), this);
    m_tabs->addTab(tabPage(nullptr, m_alignmentStatus, m_alignmentPlot), tr("Over training"));
    m_tabs->setTabToolTip(0, tr("Alignment metrics recorded at each evaluation during training"));

    // (b) model vs GD predictions
    m_scatterPlot = new widgets::PlotView(this);
    m_scatterPlot->setObjectName(QStringLiteral("scatterPlot"));
    m_scatterStatus = makeStatusLabel(QStringLiteral("scatterStatus"), this);
    m_tabs->addTab(tabPage(nullptr, m_scatterStatus, m_scatterPlot), tr("Model vs GD"));
    m_tabs->setTabToolTip(1, tr("Predictions of the selected checkpoint against GD on the same prompts"));

    // (c) learned weights vs the construction
    auto* weightControls = new QWidget(this);
    auto* wc = new QHBoxLayout(weightControls);
    wc->setContentsMargins(0, 0, 0, 0);
    wc->addWidget(new QLabel(tr("Layer:"), weightControls));
    m_layer = new QComboBox(weightControls);
    m_layer->setObjectName(QStringLiteral("layerChooser"));
    m_layer->setMinimumWidth(110);
    wc->addWidget(m_layer);
    auto* weightNote = new QLabel(tr("Learned products (left) next to the GD construction of Proposition 1 "
                                     "(right); each heatmap has its own colour scale, symmetric around 0."),
        weightControls);
    weightNote->setWordWrap(true);
    wc->addWidget(weightNote, 1);
    auto* heatmaps = new QWidget(this);
    auto* hg = new QGridLayout(heatmaps);
    hg->setContentsMargins(0, 0, 0, 0);
    hg->setSpacing(4);
    m_kq = new widgets::HeatmapView(heatmaps);
    m_kqConstruction = new widgets::HeatmapView(heatmaps);
    m_pv = new widgets::HeatmapView(heatmaps);
    m_pvConstruction = new widgets::HeatmapView(heatmaps);
    m_kq->setObjectName(QStringLiteral("learnedKqHeatmap"));
    m_kqConstruction->setObjectName(QStringLiteral("constructionKqHeatmap"));
    m_pv->setObjectName(QStringLiteral("learnedPvHeatmap"));
    m_pvConstruction->setObjectName(QStringLiteral("constructionPvHeatmap"));
    for (widgets::HeatmapView* h : { m_kq, m_kqConstruction, m_pv, m_pvConstruction })
        h->setCaptionVisible(false);
    hg->addWidget(m_kq, 0, 0);
    hg->addWidget(m_kqConstruction, 0, 1);
    hg->addWidget(m_pv, 1, 0);
    hg->addWidget(m_pvConstruction, 1, 1);
    m_weightsStatus = makeStatusLabel(QStringLiteral("weightsStatus"), this);
    m_tabs->addTab(tabPage(weightControls, m_weightsStatus, heatmaps), tr("Weights"));
    m_tabs->setTabToolTip(2, tr("Learned W_KᵀW_Q and P·W_V next to the GD construction"));
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, &GdAlignmentPage::showLayer);

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
    m_etaStatus = makeStatusLabel(QStringLiteral("etaStatus"), this);
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
    m_layerTable = new QTableWidget(0, 6, this);
    m_layerTable->setObjectName(QStringLiteral("layerStepTable"));
    m_layerTable->setHorizontalHeaderLabels({ tr("layer k"), tr("model loss"), tr("GD-k loss"), tr("GD++-k loss"),
        tr("cosine vs GD-k"), tr("cosine vs GD++-k") });
    m_layerTable->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_layerTable->verticalHeader()->setVisible(false);
    m_layerTable->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_layerTable->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_layerTable->setAlternatingRowColors(true);
    m_layersStatus = makeStatusLabel(QStringLiteral("layersStatus"), this);
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
    m_oodStatus = makeStatusLabel(QStringLiteral("oodStatus"), this);
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
    m_copyStatus = makeStatusLabel(QStringLiteral("copyStatus"), this);
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
    if (m_stack->currentWidget() != m_message && m_tabs->currentIndex() == 2 && m_kq->matrix().rows > 0) {
        widgets::HeatmapView* focused = m_kq;
        for (widgets::HeatmapView* h : { m_kq, m_kqConstruction, m_pv, m_pvConstruction })
            if (h->isAncestorOf(QApplication::focusWidget()))
                focused = h;
        focused->exportWithDialog();
        return true;
    }
    return false;
}

widgets::HeatmapView* GdAlignmentPage::heatmap(bool kq, bool construction) const
{
    if (kq)
        return construction ? m_kqConstruction : m_kq;
    return construction ? m_pvConstruction : m_pv;
}

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
    m_metricsTitle->setText(tr("Checkpoint %1 vs %2").arg(m_step).arg(prettyReference(reference())));
    runMetrics();
    if (m_interleaved)
        runCopy();
    runWeights();
    runEtaScan();
    runOod();
    runLayers();
}

void GdAlignmentPage::runMetrics()
{
    const quint64 generation = ++m_analysisGeneration[Metrics];
    for (QLabel* l :
        { m_cosine, m_predictionDifference, m_modelDifference, m_relativeDifference, m_modelLoss, m_referenceLoss })
        l->setText(QStringLiteral("…"));
    const QString refName = prettyReference(reference());
    setStatus(m_scatterStatus, tr("Computing the alignment of checkpoint %1 with %2…").arg(m_step).arg(refName),
        false, true);
    icl::GdAlignmentOptions options;
    options.checkpoint_step = m_step;
    options.reference = reference();
    options.store = false;
    const std::string path = m_path;
    const icl::RunSummary summary = m_summary;
    runner()->enqueue(
        Metrics, tr("alignment with %1").arg(refName),
        [this, generation, path, options, summary]() -> AnalysisRunner::Continuation {
            auto result = std::make_shared<icl::AlignmentResult>(icl::computeGdAlignment(path, options));
            auto figure = std::make_shared<icl::Figure>(icl::predictionScatterFigure(*result, summary));
            return [this, generation, result, figure] {
                if (generation != m_analysisGeneration[Metrics])
                    return;
                const icl::AlignmentMetrics& m = result->metrics;
                m_cosine->setText(number(m.model_cosine));
                m_predictionDifference->setText(number(m.prediction_difference));
                m_modelDifference->setText(number(m.model_difference));
                m_relativeDifference->setText(number(m.relative_model_difference));
                m_modelLoss->setText(number(m.model_loss));
                m_referenceLoss->setText(number(m.reference_loss));
                m_metricsTitle->setText(tr("Checkpoint %1 vs %2\n(η = %3, %4 prompts)")
                                            .arg(result->checkpoint_step)
                                            .arg(prettyReference(result->reference))
                                            .arg(QString::number(result->reference_eta, 'g', 4))
                                            .arg(result->n_prompts));
                m_scatterPlot->setFigure(*figure);
                setStatus(m_scatterStatus, QString());
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[Metrics])
                return;
            for (QLabel* l : { m_cosine, m_predictionDifference, m_modelDifference, m_relativeDifference, m_modelLoss,
                     m_referenceLoss })
                l->setText(QStringLiteral("—"));
            m_scatterPlot->setFigure(icl::Figure {});
            setStatus(m_scatterStatus, error, true);
        });
}

void GdAlignmentPage::runWeights()
{
    const quint64 generation = ++m_analysisGeneration[Weights];
    setStatus(m_weightsStatus, tr("Reading the weights of checkpoint %1…").arg(m_step), false, true);
    const std::string path = m_path;
    const qint64 step = m_step;
    runner()->enqueue(
        Weights, tr("learned weights"),
        [this, generation, path, step]() -> AnalysisRunner::Continuation {
            auto views = std::make_shared<std::vector<icl::LsaWeightView>>(icl::lsaWeightViews(path, step));
            return [this, generation, views] {
                if (generation != m_analysisGeneration[Weights])
                    return;
                m_weightViews = *views;
                const int keep = m_layer->currentIndex();
                {
                    const QSignalBlocker block(m_layer);
                    m_layer->clear();
                    for (const icl::LsaWeightView& v : m_weightViews)
                        m_layer->addItem(m_tied ? tr("tied layer") : tr("layer %1").arg(v.layer));
                    m_layer->setCurrentIndex(keep >= 0 && keep < m_layer->count() ? keep : 0);
                }
                showLayer(m_layer->currentIndex());
                setStatus(m_weightsStatus, QString());
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[Weights])
                return;
            m_weightViews.clear();
            m_layer->clear();
            for (widgets::HeatmapView* h : { m_kq, m_kqConstruction, m_pv, m_pvConstruction })
                h->setMatrix(icl::Matrix {});
            setStatus(m_weightsStatus, error, true);
        });
}

void GdAlignmentPage::showLayer(int index)
{
    if (index < 0 || size_t(index) >= m_weightViews.size())
        return;
    const icl::LsaWeightView& v = m_weightViews[size_t(index)];
    auto meta = metadata();
    meta["layer"] = std::to_string(v.layer);
    const std::pair<widgets::HeatmapView*, const icl::Matrix*> views[] = {
        { m_kq, &v.learned_kq },
        { m_kqConstruction, &v.construction_kq },
        { m_pv, &v.learned_pv },
        { m_pvConstruction, &v.construction_pv },
    };
    for (const auto& [view, matrix] : views) {
        view->setMatrix(*matrix);
        view->setMetadata(meta);
    }
}

void GdAlignmentPage::runEtaScan()
{
    const quint64 generation = ++m_analysisGeneration[EtaScan];
    const int64_t k = m_etaK->value();
    setStatus(m_etaStatus, tr("Scanning η for %1 GD step(s)…").arg(k), false, true);
    const std::string path = m_path;
    const qint64 step = m_step;
    const icl::RunSummary summary = m_summary;
    runner()->enqueue(
        EtaScan, tr("η scan"),
        [this, generation, path, step, k, summary]() -> AnalysisRunner::Continuation {
            const icl::EtaScan scan = icl::computeEtaScan(path, step, k, 4.0, 200, false);
            auto figure = std::make_shared<icl::Figure>(icl::etaScanFigure(scan, summary));
            // GD's loss grows by orders of magnitude past the stable η; on a log axis the minimum and
            // the model's loss stay readable.
            figure->log_y = true;
            const double bestEta = scan.best_eta, bestLoss = scan.best_loss, modelLoss = scan.model_loss;
            return [this, generation, figure, bestEta, bestLoss, modelLoss, k] {
                if (generation != m_analysisGeneration[EtaScan])
                    return;
                m_etaPlot->setFigure(*figure);
                setStatus(m_etaStatus,
                    tr("Best η for %1 step(s): %2 (loss %3); trained model: loss %4")
                        .arg(k)
                        .arg(number(bestEta), number(bestLoss), number(modelLoss)));
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[EtaScan])
                return;
            m_etaPlot->setFigure(icl::Figure {});
            setStatus(m_etaStatus, error, true);
        });
}

void GdAlignmentPage::runOod()
{
    const quint64 generation = ++m_analysisGeneration[Ood];
    const std::string kind = m_oodKind->currentData().toString().toStdString();
    setStatus(m_oodStatus, tr("Evaluating out of distribution (%1)…").arg(m_oodKind->currentText()), false, true);
    const std::string path = m_path;
    const qint64 step = m_step;
    const icl::RunSummary summary = m_summary;
    runner()->enqueue(
        Ood, tr("out-of-distribution curves"),
        [this, generation, path, step, kind, summary]() -> AnalysisRunner::Continuation {
            const icl::OodCurve curve = icl::computeOod(path, step, kind, {}, 4000, false);
            auto figure = std::make_shared<icl::Figure>(icl::oodFigure(curve, summary));
            return [this, generation, figure] {
                if (generation != m_analysisGeneration[Ood])
                    return;
                m_oodPlot->setFigure(*figure);
                setStatus(m_oodStatus, QString());
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[Ood])
                return;
            m_oodPlot->setFigure(icl::Figure {});
            setStatus(m_oodStatus, error, true);
        });
}

void GdAlignmentPage::runLayers()
{
    const quint64 generation = ++m_analysisGeneration[Layers];
    const bool gdpp = m_withGdpp->isChecked() && m_layers > 1;
    setStatus(m_layersStatus,
        gdpp ? tr("Comparing %1 layer read-outs with GD and GD++ (fitting GD++ takes a while)…").arg(m_layers)
             : tr("Comparing %1 layer read-out(s) with GD…").arg(m_layers),
        false, true);
    const std::string path = m_path;
    const qint64 step = m_step;
    runner()->enqueue(
        Layers, gdpp ? tr("K layers vs K steps of GD and GD++") : tr("K layers vs K steps of GD"),
        [this, generation, path, step, gdpp]() -> AnalysisRunner::Continuation {
            auto rows = std::make_shared<std::vector<icl::LayerStepRow>>(icl::compareLayersWithSteps(path, step, gdpp));
            return [this, generation, rows] {
                if (generation != m_analysisGeneration[Layers])
                    return;
                m_layerTable->setRowCount(int(rows->size()));
                for (size_t i = 0; i < rows->size(); ++i) {
                    const icl::LayerStepRow& r = (*rows)[i];
                    const QString cells[] = { QString::number(r.layer), number(r.model_loss), number(r.gd_loss),
                        number(r.gdpp_loss), number(r.vs_gd.model_cosine), number(r.vs_gdpp.model_cosine) };
                    for (int c = 0; c < 6; ++c) {
                        auto* item = new QTableWidgetItem(cells[c]);
                        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                        m_layerTable->setItem(int(i), c, item);
                    }
                }
                setStatus(m_layersStatus,
                    tr("Layer k: the model's read-out after k layers; GD-k: k GD steps with a line-searched η; "
                       "GD++-k: k layers of GD++ (von Oswald et al. Fig. 3). Losses are 0.5·MSE on the evaluation "
                       "prompts; — where not defined (GD++ needs k > 1)."));
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[Layers])
                return;
            m_layerTable->setRowCount(0);
            setStatus(m_layersStatus, error, true);
        });
}

void GdAlignmentPage::runCopy()
{
    const quint64 generation = ++m_analysisGeneration[Copy];
    setStatus(m_copyStatus, tr("Computing layer-1 gradient norms of checkpoint %1…").arg(m_step), false, true);
    const std::string path = m_path;
    const qint64 step = m_step;
    runner()->enqueue(
        Copy, tr("copy analysis of layer 1"),
        [this, generation, path, step]() -> AnalysisRunner::Continuation {
            auto copy = std::make_shared<icl::CopyAnalysis>(icl::computeCopyAnalysis(path, step, 64, false));
            return [this, generation, copy] {
                if (generation != m_analysisGeneration[Copy])
                    return;
                icl::Matrix m;
                m.name = "‖∂ layer-1 output (row) / ∂ input token (column)‖, checkpoint " + std::to_string(copy->checkpoint_step);
                m.rows = m.cols = copy->tokens;
                m.data = copy->gradient_norm;
                m.row_labels = m.col_labels = copy->token_labels;
                m_copyHeatmap->setMetadata(metadata());
                m_copyHeatmap->setMatrix(m);
                m_copySummary->setText(
                    tr("Mean gradient norm of the layer-1 output at x-token k with respect to input token j: "
                       "own (j = k) %1, next (j = k+1, the token holding y_k) %2, others %3. next/other = %4%5")
                        .arg(number(copy->own), number(copy->next), number(copy->other),
                            number(copy->nextOtherRatio()),
                            copy->nextOtherRatio() > 2 ? tr(": layer 1 copies y_k into the x_k token.")
                                                       : tr(": no copy yet.")));
                setStatus(m_copyStatus, QString());
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_analysisGeneration[Copy])
                return;
            m_copyHeatmap->setMatrix(icl::Matrix {});
            setStatus(m_copyStatus, error, true);
        });
}

} // namespace icl::gui
