#include "app/gui/checkpoint_table.h"

#include <cmath>
#include <exception>
#include <set>

#include <QColor>
#include <QHeaderView>

#include <nlohmann/json.hpp>

#include "core/io/bounded_json.h"

namespace icl::gui {

namespace {

/// Steps of the checkpoints of `summary` that were imported from a foreign checkpoint (no wall time): the steps
/// of /import's sources, or every checkpoint when the provenance does not list them; none for runs trained here.
std::set<int64_t> importedSteps(const icl::RunSummary& summary)
{
    std::set<int64_t> steps;
    if (summary.import_json.empty())
        return steps;
    try {
        const nlohmann::json j = icl::parseBoundedJson(summary.import_json, summary.path);
        for (const nlohmann::json& source : j.at("sources"))
            steps.insert(source.at("step").get<int64_t>());
    } catch (const std::exception&) {
        steps.clear();
    }
    if (steps.empty())
        for (const icl::CheckpointInfo& c : summary.checkpoints)
            steps.insert(c.step);
    return steps;
}

} // namespace

QString formatLoss(double v)
{
    return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', 4);
}

QString formatDuration(double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0)
        return QStringLiteral("–");
    const qint64 s = qint64(std::llround(seconds));
    if (s >= 3600)
        return QStringLiteral("%1:%2:%3")
            .arg(s / 3600)
            .arg((s / 60) % 60, 2, 10, QChar('0'))
            .arg(s % 60, 2, 10, QChar('0'));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

CheckpointTable::CheckpointTable(QWidget* parent)
    : QTableWidget(0, 3, parent)
{
    setObjectName(QStringLiteral("checkpointTable"));
    setHorizontalHeaderLabels({ tr("step"), tr("train loss"), tr("wall time") });
    verticalHeader()->setVisible(false);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionBehavior(QAbstractItemView::SelectRows);
    setSelectionMode(QAbstractItemView::SingleSelection);
    horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    horizontalHeader()->setStretchLastSection(true);
    setWordWrap(false);
    setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("000000000  train loss  wall time")) + 40);
}

void CheckpointTable::showRun(const icl::RunSummary& summary)
{
    setRowCount(0);
    const std::set<int64_t> imported = importedSteps(summary);
    for (const icl::CheckpointInfo& c : summary.checkpoints)
        addCheckpoint(c.step, c.train_loss, c.wall_time_s, imported.count(c.step) > 0,
                      QString::fromStdString(c.damaged));
}

void CheckpointTable::addCheckpoint(int64_t step, double trainLoss, double wallTime, bool imported,
                                    const QString& damaged)
{
    const int row = rowCount();
    insertRow(row);
    auto* stepItem = new QTableWidgetItem(QString::number(step));
    stepItem->setData(Qt::UserRole, qint64(step));
    stepItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    auto* lossItem = new QTableWidgetItem(formatLoss(trainLoss));
    lossItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    // An imported checkpoint was trained elsewhere: the file has no wall time for it (it stores 0).
    auto* timeItem = new QTableWidgetItem(imported ? QStringLiteral("—") : formatDuration(wallTime));
    timeItem->setToolTip(imported ? tr("Imported from a foreign checkpoint: not trained here, no wall time")
                                  : tr("%1 s of training").arg(wallTime, 0, 'f', 1));
    timeItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (!damaged.isEmpty()) {
        lossItem->setText(tr("damaged"));
        timeItem->setText(QStringLiteral("—"));
        for (QTableWidgetItem* i : { stepItem, lossItem, timeItem }) {
            i->setToolTip(damaged);
            i->setForeground(QColor(0xd5, 0x5e, 0x00));  // vermillion: a warning on light and dark themes
        }
    }
    setItem(row, 0, stepItem);
    setItem(row, 1, lossItem);
    setItem(row, 2, timeItem);
    scrollToBottom();
}

void CheckpointTable::selectStep(qint64 step)
{
    for (int row = 0; row < rowCount(); ++row) {
        if (item(row, 0)->data(Qt::UserRole).toLongLong() == step) {
            selectRow(row);
            scrollToItem(item(row, 0));
            return;
        }
    }
}

} // namespace icl::gui
