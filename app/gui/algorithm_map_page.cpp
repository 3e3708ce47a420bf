#include "app/gui/algorithm_map_page.h"

#include <algorithm>
#include <cmath>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "core/error.h"
#include "core/report.h"
#include "core/types/algorithm_map_matrix.h"
#include "widgets/algorithm_map_view.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"

namespace icl::gui {

AlgorithmMapPage::AlgorithmMapPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("algorithmMap"), parent)
{
    const auto [content, layout]
        = createContent(tr("Open a regression experiment with an LSA or GPT-2 model (e.g. the fu-newton "
                           "or vonoswald-lsa-multilayer preset) to see which algorithm each layer runs."));

    auto* controls = new QHBoxLayout;
    m_family = addLabelledComboBox(controls, tr("Family"), content, "algorithmMapFamily",
        tr("Algorithm family of the heatmap: gradient descent (k steps, log-spaced), GD++ (the run's fitted scalars), "
           "Iterative Newton (k iterations) or ridge (penalty λ from large to small)"),
        {{tr("Iterative Newton"), QStringLiteral("newton")}, {tr("GD"), QStringLiteral("gd")},
            {tr("GD++"), QStringLiteral("gdpp")}, {tr("ridge"), QStringLiteral("ridge")}});
    m_similarity = addLabelledComboBox(controls, tr("Similarity"), content, "algorithmMapSimilarity",
        tr("Similarity of errors (cosine of the residual sequences, Fu et al.) or of induced weights (cosine of the "
           "linear maps from one context to many queries)"),
        {{tr("errors"), QStringLiteral("errors")}, {tr("induced weights"), QStringLiteral("weights")}});
    m_promptsSpin = makeSpinBox(content, "algorithmMapPrompts", 2, 100000, int(m_prompts), 100);
    m_promptsSpin->setToolTip(tr("Evaluation prompts of the map (a first look on the first %1 comes first)")
                                  .arg(icl::kAlgorithmMapFirstLookPrompts));
    addLabelled(controls, tr("Prompts"), m_promptsSpin);
    m_acrossTraining = makePushButton(content, "algorithmMapAcrossTraining", tr("Across training"),
        tr("Compute the map at every checkpoint and plot each layer's best step against the training step"));
    controls->addWidget(m_acrossTraining);
    controls->addStretch(1);
    layout->addLayout(controls);

    m_summaryLine = makeTextLine(QStringLiteral("algorithmMapSummary"), content, QStringLiteral("—"));
    layout->addWidget(m_summaryLine);
    layout->addWidget(m_status);

    m_view = new widgets::AlgorithmMapView(content);
    m_view->setObjectName(QStringLiteral("algorithmMapView"));
    m_view->heatmap()->setCaptionVisible(false);  // too wide for the pane; exports carry it
    m_scatter = new widgets::PlotView(content);
    m_scatter->setObjectName(QStringLiteral("algorithmMapScatter"));
    m_training = new widgets::PlotView(content);
    m_training->setObjectName(QStringLiteral("algorithmMapTraining"));
    QSplitter* right = makeSplitter(Qt::Vertical, content, m_scatter, 1, m_training, 1);
    layout->addWidget(makeSplitter(Qt::Horizontal, content, m_view, 3, right, 2), 1);

    connect(m_family, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        m_cellLayer = m_cellStep = -1;
        redraw();
        showTraining();
    });
    connect(m_similarity, qOverload<int>(&QComboBox::currentIndexChanged), this, &AlgorithmMapPage::redraw);
    connect(m_promptsSpin, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) { setPromptCount(v); });
    connect(m_acrossTraining, &QPushButton::clicked, this, &AlgorithmMapPage::computeAcrossTraining);
    connect(m_view, &widgets::AlgorithmMapView::cellClicked, this, [this](int l, int s) { showCell(l, s); });
}

AlgorithmMapPage::~AlgorithmMapPage()
{
    stopWorker();
}

bool AlgorithmMapPage::supports(const icl::RunSummary& summary, QString* why)
{
    if (!summary.config) {
        if (why)
            *why = tr("The experiment's config could not be read.");
        return false;
    }
    const std::string reason = icl::algorithmMapUnavailableReason(summary.config->task.kind, summary.config->model.kind,
                                                                  summary.config->model.n_layers);
    if (!reason.empty()) {
        if (why) {
            QString text = qs(reason);
            text[0] = text[0].toUpper();
            *why = text + QLatin1Char('.');
        }
        return false;
    }
    return true;
}

bool AlgorithmMapPage::bind(const icl::RunSummary& summary, QString* why)
{
    m_map = {};
    m_trainingMaps.clear();
    m_cellLayer = m_cellStep = -1;
    m_scatter->setFigure({});
    icl::Figure hint;
    hint.title = tr("Best step of every layer across training: press Across training").toStdString();
    hint.x_label = "training step";
    hint.y_label = "best step k*(ℓ)";
    m_training->setFigure(hint);
    m_summaryLine->setText(QStringLiteral("—"));
    if (!supports(summary, why)) {
        showMessage(*why);
        return false;
    }
    showContent();
    auto* model = qobject_cast<QStandardItemModel*>(m_family->model());
    for (int i = 0; model && i < m_family->count(); ++i) {
        model->item(i)->setEnabled(true);
        model->item(i)->setToolTip(QString());
    }
    redraw();
    return true;
}

void AlgorithmMapPage::setPromptCount(int64_t n)
{
    if (n == m_prompts)
        return;
    m_prompts = n;
    {
        const QSignalBlocker block(m_promptsSpin);
        m_promptsSpin->setValue(int(n));
    }
    m_trainingMaps.clear();
    requestCompute();
}

bool AlgorithmMapPage::setFamily(const QString& family)
{
    const int index = m_family->findData(family);
    auto* model = qobject_cast<QStandardItemModel*>(m_family->model());
    if (index < 0 || (model && !model->item(index)->isEnabled()))
        return false;
    m_family->setCurrentIndex(index);
    return true;
}

void AlgorithmMapPage::setShowWeights(bool weights)
{
    m_similarity->setCurrentIndex(m_similarity->findData(weights ? QStringLiteral("weights") : QStringLiteral("errors")));
}

QString AlgorithmMapPage::currentFamily() const
{
    return m_family->currentData().toString();
}

void AlgorithmMapPage::compute()
{
    const Ticket t = newTicket();
    icl::AlgorithmMapOptions o;
    o.checkpoint_step = m_step;
    o.n_prompts = m_prompts;
    o.store = false;
    const std::string path = m_path;
    m_status->setText(tr("Computing the algorithm map at checkpoint %1…").arg(m_step));
    const Progress progress = progressReporter(t, tr("Algorithm map"));
    const auto firstLook
        = firstLookCallback<icl::AlgorithmMap>(t, [this](const icl::AlgorithmMap& first) { showMap(first); });
    submit<icl::AlgorithmMap>(
        AlgorithmMapJob, tr("algorithm map"), t,
        [path, o, progress, firstLook] { return icl::computeAlgorithmMap(path, o, progress, firstLook); },
        [this](const icl::AlgorithmMap& map) { showMap(map); });
}

void AlgorithmMapPage::computeAcrossTraining()
{
    if (!m_supported || m_path.empty())
        return;
    const Ticket t = newTicket();
    icl::AlgorithmMapOptions o;
    o.n_prompts = m_prompts;
    o.store = false;
    const std::string path = m_path;
    m_status->setText(tr("Computing the algorithm map at every checkpoint…"));
    const Progress progress = progressReporter(t, tr("Algorithm map across training"));
    using Maps = std::vector<icl::AlgorithmMap>;
    submit<Maps>(
        AlgorithmMapTrainingJob, tr("algorithm map across training"), t,
        [path, o, progress] { return icl::computeAlgorithmMaps(path, o, {}, progress); },
        [this](const Maps& maps) {
            m_trainingMaps = maps;
            for (const icl::AlgorithmMap& m : maps)
                if (m.checkpoint_step == m_step)
                    showMap(m);
            m_status->clear();
            showTraining();
        });
}

void AlgorithmMapPage::showMap(const icl::AlgorithmMap& map)
{
    m_map = map;
    updateFamilies();
    redraw();
    if (map.first_look) {
        m_status->setText(tr("First look on the first %1 prompts; computing the map on %2…").arg(map.n_prompts).arg(m_prompts));
        Q_EMIT firstLookShown();
    } else {
        m_status->clear();
    }
}

void AlgorithmMapPage::updateFamilies()
{
    auto* model = qobject_cast<QStandardItemModel*>(m_family->model());
    if (!model)
        return;
    for (int i = 0; i < m_family->count(); ++i) {
        const icl::AlgorithmFamilyMap* f = m_map.family(m_family->itemData(i).toString().toStdString());
        const bool ok = f && f->available();
        model->item(i)->setEnabled(ok);
        model->item(i)->setToolTip(ok ? QString() : tr("Not available: %1").arg(f ? qs(f->unavailable) : tr("not computed")));
    }
    if (!model->item(m_family->currentIndex())->isEnabled())
        for (int i = 0; i < m_family->count(); ++i)
            if (model->item(i)->isEnabled()) {
                m_family->setCurrentIndex(i);  // redraws through currentIndexChanged
                break;
            }
}

void AlgorithmMapPage::redraw()
{
    const std::string family = currentFamily().toStdString();
    const bool weights = m_similarity->currentData().toString() == QLatin1String("weights");
    std::map<std::string, std::string> metadata;
    if (!m_map.layers.empty())
        metadata = icl::algorithmMapMetadata(m_map, family, weights, m_summary);
    m_view->setMetadata(metadata);
    m_view->setMap(m_map, family, weights);
    if (m_map.layers.empty()) {
        m_summaryLine->setText(QStringLiteral("—"));
        return;
    }
    // One line per family: k*(ℓ) over the middle layers and its fit.
    QStringList parts;
    for (const icl::AlgorithmFamilyMap& f : m_map.families) {
        if (!f.available())
            continue;
        const icl::AlgorithmMapFit& fit = f.fit;
        const QString y = fit.kind == "linear" ? tr("k*") : fit.kind == "log_lambda"
                                                                              ? tr("log₁₀ λ*")
                                                                              : tr("log₁₀ k*");
        parts << tr("%1: %2 slope %3 per layer, R² %4 (layers %5–%6)")
                     .arg(qs(icl::algorithmFamilyTitle(f.family)), y, formatValue(fit.slope), formatValue(fit.r2))
                     .arg(fit.first_layer)
                     .arg(fit.last_layer);
    }
    m_summaryLine->setText(tr("Checkpoint %1, %2 prompts (%3). ").arg(m_map.checkpoint_step).arg(m_map.n_prompts)
                           .arg(m_map.readout == "probe" ? tr("layers read by probes") : tr("layers read at the y-slot"))
                       + parts.join(QStringLiteral("; ")));
    if (m_cellLayer < 0) {
        // Until a cell is clicked: the last layer against its best step of the shown family.
        const icl::AlgorithmFamilyMap* f = m_map.family(family);
        if (f && f->available() && !f->best_step.empty())
            for (int64_t s = 0; s < f->nSteps(); ++s)
                if (f->steps[size_t(s)] == f->best_step.back()) {
                    showCell(int(m_map.layers.size()) - 1, int(s));
                    return;
                }
        m_scatter->setFigure({});
        return;
    }
    showCell(m_cellLayer, m_cellStep);
}

bool AlgorithmMapPage::showCell(int layerIndex, int stepIndex)
{
    try {
        m_scatter->setFigure(
            icl::algorithmMapCellFigure(m_map, currentFamily().toStdString(), layerIndex, stepIndex, m_summary));
    } catch (const icl::Error&) {
        return false;  // no such cell, or the family is not available
    }
    m_cellLayer = layerIndex;
    m_cellStep = stepIndex;
    return true;
}

void AlgorithmMapPage::showTraining()
{
    if (m_trainingMaps.empty())
        return;
    try {
        m_training->setFigure(icl::algorithmMapTrainingFigure(m_trainingMaps, currentFamily().toStdString(), m_summary));
    } catch (const icl::Error& e) {
        m_training->setFigure({});
        m_status->setText(qs(e.what()));
    }
}

bool AlgorithmMapPage::exportCurrentPlot()
{
    return exportIfShown(!m_map.layers.empty(), m_view);
}

} // namespace icl::gui
