#include "app/gui/attention_tables.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QHeaderView>
#include <QRegularExpression>

namespace icl::gui {

namespace {

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
    if (std::isfinite(v))
        item->setToolTip(QString::number(v, 'g', 17)); // the exact value
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

} // namespace

void FitNumberDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const
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

QString predictorLabel(const std::string& name)
{
    if (name == "model")
        return PredictionTable::tr("model");
    if (name == "least_squares")
        return PredictionTable::tr("least squares");
    if (name.rfind("gd_", 0) == 0)
        return QStringLiteral("GD-%1").arg(shownText(name.substr(3)));
    if (name.rfind("gdpp_", 0) == 0)
        return QStringLiteral("GD++ (%1 layers)").arg(shownText(name.substr(5)));
    if (name.rfind("newton_", 0) == 0)
        return QStringLiteral("Newton-%1").arg(shownText(name.substr(7)));
    if (name == "oracle_ridge_phi")
        return PredictionTable::tr("oracle (ridge on Φ*(x))");
    if (name == "mixture_posterior")
        return PredictionTable::tr("Bayes mixture posterior");
    if (name == "knn")
        return PredictionTable::tr("3-nearest neighbours");
    QString s = shownText(name);
    s.replace('_', ' ');
    return s;
}

HeadSummaryTable::HeadSummaryTable(QWidget* parent)
    : QTableWidget(parent)
{
    setObjectName(QStringLiteral("attentionHeads"));
    setColumnCount(5);
    // Short headers so that every column fits the left column at 1280 × 800; the tooltips say what they are.
    setHorizontalHeaderLabels({ tr("L"), tr("H"), tr("entropy"), tr("copy"), tr("query → ex.") });
    horizontalHeaderItem(0)->setToolTip(tr("Layer (0-based)"));
    horizontalHeaderItem(1)->setToolTip(tr("Head (0-based)"));
    horizontalHeaderItem(2)->setToolTip(
        tr("Mean Shannon entropy (nats) of the head's rows (linear heads: |score| normalised per row)"));
    horizontalHeaderItem(3)->setToolTip(
        tr("Copy mass: mean weight of each y_i token on its own x_i token (copying; interleaved layout only)"));
    horizontalHeaderItem(4)->setToolTip(
        tr("The in-context example i the query token attends to most, and that weight: \"i (weight)\""));
    verticalHeader()->setVisible(false);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setSelectionMode(QAbstractItemView::SingleSelection);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSortingEnabled(true);
    // No sort arrow: it would widen every section (ResizeToContents) past the left column; clicking still sorts.
    horizontalHeader()->setSortIndicatorShown(false);
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    horizontalHeader()->setMinimumSectionSize(20);
    horizontalHeader()->setStretchLastSection(true);
    verticalHeader()->setDefaultSectionSize(20);
    connect(this, &QTableWidget::itemSelectionChanged, this, [this] {
        if (m_filling)
            return;
        const auto rows = selectionModel()->selectedRows();
        if (rows.isEmpty())
            return;
        QTableWidgetItem* it = item(rows.front().row(), 0);
        if (it)
            Q_EMIT headSelected(it->data(Qt::UserRole).toInt(), it->data(Qt::UserRole + 1).toInt());
    });
}

void HeadSummaryTable::fill(const std::vector<icl::HeadSummary>& heads, int selectedLayer, int selectedHead)
{
    m_filling = true;
    setSortingEnabled(false);
    setRowCount(int(heads.size()));
    bool selected = false;
    for (size_t i = 0; i < heads.size(); ++i) {
        const icl::HeadSummary& h = heads[i];
        const int r = int(i);
        auto* layer = numberItem(double(h.layer));
        layer->setText(QString::number(h.layer));
        layer->setData(Qt::UserRole, int(h.layer));
        layer->setData(Qt::UserRole + 1, int(h.head));
        setItem(r, 0, layer);
        auto* head = numberItem(double(h.head));
        head->setText(QString::number(h.head));
        setItem(r, 1, head);
        setItem(r, 2, numberItem(h.entropy, 4));
        setItem(r, 3, numberItem(h.copy_mass, 3));
        if (!h.query_to_example.empty()) {
            const auto best = std::max_element(h.query_to_example.begin(), h.query_to_example.end());
            auto* it = numberItem(*best);
            it->setText(QStringLiteral("%1 (%2)")
                            .arg(best - h.query_to_example.begin() + 1)
                            .arg(QString::number(*best, 'g', 3)));
            it->setToolTip(tr("example %1, weight %2")
                               .arg(best - h.query_to_example.begin() + 1)
                               .arg(QString::number(*best, 'g', 17)));
            setItem(r, 4, it);
        } else {
            setItem(r, 4, textItem(QStringLiteral("—")));
        }
        if (h.layer == selectedLayer && h.head == selectedHead)
            selected = true;
    }
    setSortingEnabled(true);
    horizontalHeader()->setSortIndicatorShown(false);
    m_filling = false;
    if (selected)
        selectHead(selectedLayer, selectedHead);
}

void HeadSummaryTable::selectHead(int layer, int head)
{
    m_filling = true;
    for (int r = 0; r < rowCount(); ++r) {
        QTableWidgetItem* it = item(r, 0);
        if (it && it->data(Qt::UserRole).toInt() == layer && it->data(Qt::UserRole + 1).toInt() == head)
            selectRow(r);
    }
    m_filling = false;
}

PredictionTable::PredictionTable(QWidget* parent)
    : QTableWidget(parent)
{
    setObjectName(QStringLiteral("attentionPredictions"));
    setColumnCount(3);
    setHorizontalHeaderLabels({ tr("predictor"), tr("prediction ŷ"), tr("loss vs y") });
    horizontalHeaderItem(2)->setToolTip(tr("The run's training loss on (ŷ, y_q), e.g. 0.5·(ŷ − y)²"));
    verticalHeader()->setVisible(false);
    verticalHeader()->setDefaultSectionSize(20);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
}

void PredictionTable::fill(const std::vector<icl::PredictorValue>& predictions)
{
    setRowCount(int(predictions.size()));
    for (size_t i = 0; i < predictions.size(); ++i) {
        const icl::PredictorValue& p = predictions[i];
        auto* name = textItem(predictorLabel(p.name));
        name->setData(Qt::UserRole, QString::fromStdString(p.name));
        if (p.name == "model") {
            QFont bold = name->font();
            bold.setBold(true);
            name->setFont(bold);
        }
        setItem(int(i), 0, name);
        // 4 significant digits on screen; the tooltip (and Qt::UserRole) keeps the exact value.
        setItem(int(i), 1, numberItem(p.prediction, 4));
        setItem(int(i), 2, numberItem(p.error, 4));
    }
}

} // namespace icl::gui
