#pragma once
// The Attention page's tables: the head summaries (entropy, copy mass, the example the query attends to most;
// sortable), the predictions of the model and every baseline with their errors, and the prompt cells' delegate.

#include <string>
#include <vector>

#include <QString>
#include <QStyledItemDelegate>
#include <QTableWidget>

#include "core/types/inspection.h"

namespace icl::gui {

/// Readable predictor names: "least_squares" → "least squares", "gd_3" → "GD-3", …
QString predictorLabel(const std::string& name);

/// Prompt-editor cells: when a number's text (4 significant digits) is wider than its column, paints it with fewer
/// digits (3, 2, 1, then one digit in exponent form) instead of eliding it, so that d + 1 columns fit the panel. Only
/// the painting changes: the item's text (what the editor edits), its tooltip (all 17 digits) and its value
/// (Qt::UserRole).
class FitNumberDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override;
};

/// One row per head (layer "L", head "H", entropy, copy mass "copy", query → example "i (weight)"; short headers with
/// tooltips so that every column fits 1280 × 800), sortable by the exact values; selecting
/// a row emits headSelected. Thread affinity: GUI thread only.
class HeadSummaryTable : public QTableWidget {
    Q_OBJECT
public:
    explicit HeadSummaryTable(QWidget* parent = nullptr);
    /// Shows `heads` and selects the row of (layer, head) without emitting headSelected.
    void fill(const std::vector<icl::HeadSummary>& heads, int layer, int head);
    /// Selects the row of (layer, head) without emitting headSelected.
    void selectHead(int layer, int head);

Q_SIGNALS:
    /// The user selected the row of (layer, head).
    void headSelected(int layer, int head);

private:
    bool m_filling = false;
};

/// The predictions ŷ of the model (bold) and every baseline with the run's loss against the query's label
/// (column 0 keeps the predictor's name in Qt::UserRole; numbers with 4 significant digits, the exact value in the
/// tooltip and in Qt::UserRole). Thread affinity: GUI thread only.
class PredictionTable : public QTableWidget {
    Q_OBJECT
public:
    explicit PredictionTable(QWidget* parent = nullptr);
    void fill(const std::vector<icl::PredictorValue>& predictions);
};

} // namespace icl::gui
