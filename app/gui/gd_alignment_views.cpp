#include "app/gui/gd_alignment_views.h"

#include <cmath>

#include <QApplication>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "widgets/heatmap_view.h"

namespace icl::gui {

namespace {

} // namespace

const char* const kSignNote
    = "Sign: the layer computes P·W_V·Z·Zᵀ·W_KᵀW_Q, so the two products are determined only up to a joint sign "
      "(both flipped is the same layer); compare them with the construction as a pair.";

namespace {

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

} // namespace

QString prettyReference(const std::string& ref)
{
    const QString r = shownText(ref);
    if (r.startsWith(QLatin1String("gdpp_")))
        return QStringLiteral("GD++-") + r.mid(5);
    if (r.startsWith(QLatin1String("features_gd_")))
        return QStringLiteral("features + GD-") + r.mid(12);
    if (r.startsWith(QLatin1String("gd_")))
        return QStringLiteral("GD-") + r.mid(3);
    return r;
}

QString metricText(double v)
{
    return formatValue(v);
}

QLabel* makeTabStatusLabel(const QString& objectName, QWidget* parent)
{
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText); // errors quote a file's names: never rendered as rich text
    label->setVisible(false);
    return label;
}

AlignmentMetricsStrip::AlignmentMetricsStrip(QWidget* parent)
    : QFrame(parent)
{
    setFrameShape(QFrame::StyledPanel);
    auto* grid = new QGridLayout(this);
    grid->setContentsMargins(8, 4, 8, 4);
    grid->setHorizontalSpacing(18);
    grid->setVerticalSpacing(0);
    m_title = new QLabel(tr("Selected checkpoint vs GD"), this);
    m_title->setObjectName(QStringLiteral("metricsTitle"));
    QFont titleFont = m_title->font();
    titleFont.setBold(true);
    m_title->setFont(titleFont);
    m_title->setWordWrap(true);
    m_title->setMinimumWidth(240);
    grid->addWidget(m_title, 0, 0, 2, 1);
    const char* names[] = { "modelCosineValue", "predictionDifferenceValue", "modelDifferenceValue",
        "relativeModelDifferenceValue", "modelLossValue", "referenceLossValue" };
    for (const char* name : names)
        m_values.push_back(valueLabel(QString::fromLatin1(name), this));
    const QString captions[] = { tr("model cosine"), tr("prediction difference"), tr("model difference"),
        tr("relative model difference"), tr("model loss"), tr("GD loss") };
    const QString tips[] = {
        tr("Mean cosine between the model's and GD's sensitivities ∂ŷ/∂x_query (1 = same direction)"),
        tr("Mean |ŷ_model − ŷ_GD| on the same prompts"),
        tr("Mean ‖∂ŷ_model/∂x − ∂ŷ_GD/∂x‖₂"),
        tr("Model difference divided by the mean norm of GD's sensitivity"),
        tr("0.5·mean (ŷ_model − y)² on the evaluation prompts"),
        tr("0.5·mean (ŷ_GD − y)² on the same prompts"),
    };
    for (int i = 0; i < 6; ++i) {
        auto* caption = new QLabel(captions[i], this);
        QPalette pal = caption->palette();
        pal.setColor(QPalette::WindowText, QColor(0x55, 0x55, 0x55));
        caption->setPalette(pal);
        caption->setToolTip(tips[i]);
        m_values[size_t(i)]->setToolTip(tips[i]);
        m_tips.push_back(tips[i]);
        grid->addWidget(caption, 0, i + 1);
        grid->addWidget(m_values[size_t(i)], 1, i + 1);
    }
    grid->setColumnStretch(7, 1);
}

void AlignmentMetricsStrip::setValues(const QString& text)
{
    for (QLabel* l : m_values)
        l->setText(text);
}

void AlignmentMetricsStrip::setPending(qint64 step, const QString& reference)
{
    m_title->setText(tr("Checkpoint %1 vs %2").arg(step).arg(reference));
    setValues(QStringLiteral("…"));
}

void AlignmentMetricsStrip::clear()
{
    setValues(QStringLiteral("—"));
}

void AlignmentMetricsStrip::showResult(const icl::AlignmentResult& result)
{
    const icl::AlignmentMetrics& m = result.metrics;
    const double values[] = { m.model_cosine, m.prediction_difference, m.model_difference, m.relative_model_difference,
        m.model_loss, m.reference_loss };
    for (size_t i = 0; i < m_values.size(); ++i) {
        m_values[i]->setText(metricText(values[i]));
        // Full precision in the tool tip; the label shows 4 significant digits.
        m_values[i]->setToolTip(m_tips[i] + QStringLiteral("\n") + formatFullPrecision(values[i]));
    }
    m_title->setText(tr("Checkpoint %1 vs %2\n(η = %3, %4 prompts)")
                         .arg(result.checkpoint_step)
                         .arg(prettyReference(result.reference))
                         .arg(formatValue(result.reference_eta))
                         .arg(result.n_prompts));
    m_title->setToolTip(tr("η: the step size of %1 fitted during training on the tuning prompts (closed form for "
                           "one step, line search for more), %2")
                            .arg(prettyReference(result.reference), formatFullPrecision(result.reference_eta)));
}

LsaWeightsTab::LsaWeightsTab(QLabel* status, QWidget* parent)
    : QWidget(parent)
{
    auto* weightControls = new QWidget(this);
    auto* wc = new QHBoxLayout(weightControls);
    wc->setContentsMargins(0, 0, 0, 0);
    wc->addWidget(new QLabel(tr("Layer:"), weightControls));
    m_layer = new QComboBox(weightControls);
    m_layer->setObjectName(QStringLiteral("layerChooser"));
    m_layer->setMinimumWidth(110);
    wc->addWidget(m_layer);
    auto* weightNote = new QLabel(tr("Learned products (left) next to the GD construction of Proposition 1 "
                                     "(right); each heatmap has its own colour scale, symmetric around 0.\n%1")
                                      .arg(QString::fromUtf8(kSignNote)),
        weightControls);
    weightNote->setObjectName(QStringLiteral("weightsNote"));
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
    auto* layout = makeContentLayout(this);
    layout->addWidget(weightControls);
    layout->addWidget(status);
    layout->addWidget(heatmaps, 1);
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, &LsaWeightsTab::showLayer);
}

widgets::HeatmapView* LsaWeightsTab::heatmap(bool kq, bool construction) const
{
    if (kq)
        return construction ? m_kqConstruction : m_kq;
    return construction ? m_pvConstruction : m_pv;
}

void LsaWeightsTab::setViews(
    const std::vector<icl::LsaWeightView>& views, bool tied, const std::map<std::string, std::string>& metadata)
{
    m_views = views;
    m_metadata = metadata;
    const int keep = m_layer->currentIndex();
    {
        const QSignalBlocker block(m_layer);
        m_layer->clear();
        for (const icl::LsaWeightView& v : m_views)
            m_layer->addItem(tied ? tr("tied layer") : tr("layer %1").arg(v.layer));
        m_layer->setCurrentIndex(keep >= 0 && keep < m_layer->count() ? keep : 0);
    }
    showLayer(m_layer->currentIndex());
}

void LsaWeightsTab::clear()
{
    m_views.clear();
    m_layer->clear();
    for (widgets::HeatmapView* h : { m_kq, m_kqConstruction, m_pv, m_pvConstruction })
        h->setMatrix(icl::Matrix {});
}

void LsaWeightsTab::showLayer(int index)
{
    if (index < 0 || size_t(index) >= m_views.size())
        return;
    const icl::LsaWeightView& v = m_views[size_t(index)];
    auto meta = m_metadata;
    meta["layer"] = std::to_string(v.layer);
    meta["sign"] = kSignNote; // in every exported heatmap's caption
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

bool LsaWeightsTab::exportFocused()
{
    if (m_kq->matrix().rows <= 0)
        return false;
    widgets::HeatmapView* focused = m_kq;
    for (widgets::HeatmapView* h : { m_kq, m_kqConstruction, m_pv, m_pvConstruction })
        if (h->isAncestorOf(QApplication::focusWidget()))
            focused = h;
    focused->exportWithDialog();
    return true;
}

LayerStepTable::LayerStepTable(QWidget* parent)
    : QTableWidget(0, 6, parent)
{
    setObjectName(QStringLiteral("layerStepTable"));
    setHorizontalHeaderLabels({ tr("layer k"), tr("model loss"), tr("GD-k loss"), tr("GD++-k loss"),
        tr("cosine vs GD-k"), tr("cosine vs GD++-k") });
    horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    verticalHeader()->setVisible(false);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setAlternatingRowColors(true);
}

void LayerStepTable::setRows(const std::vector<icl::LayerStepRow>& rows)
{
    setRowCount(int(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) {
        const icl::LayerStepRow& r = rows[i];
        const QString cells[] = { QString::number(r.layer), metricText(r.model_loss), metricText(r.gd_loss),
            metricText(r.gdpp_loss), metricText(r.vs_gd.model_cosine), metricText(r.vs_gdpp.model_cosine) };
        for (int c = 0; c < 6; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            setItem(int(i), c, item);
        }
    }
}

} // namespace icl::gui
