#pragma once
// The sweep tab of the ICL vs IWL page (Chan et al. 2022's sweeps over burstiness, number of classes, Zipf
// exponent, model kind): the final ICL and IWL accuracy of every run of an aggregated sweep against one grid column.

#include <vector>

#include <QString>
#include <QStringList>
#include <QWidget>

#include "app/gui/gui_forward.h"
#include "core/report/sweep_figure.h"

namespace icl::gui {

/// Reads DIR/aggregate/table.csv (written by `icl-cli aggregate`) and draws icl::sweepFigure for a chosen grid
/// column: the final ICL and IWL accuracy (the final eval loss of a regression sweep), one line per combination of
/// the other non-seed columns, averaged over seeds, the same figure as the aggregate's own plots.
/// Thread affinity: GUI thread only.
class SweepView : public QWidget {
    Q_OBJECT
public:
    explicit SweepView(QWidget* parent = nullptr);

    /// Reads DIR/aggregate/table.csv (or DIR/table.csv, or the CSV file itself). On a missing or malformed table
    /// shows the reason in statusLabel() and returns false.
    bool openSweep(const QString& dir);
    /// Grid columns of the open sweep with at least two values (seed excluded), in table order.
    QStringList sweepColumns() const;
    /// Draws ICL and IWL accuracy against grid column `column` (one of sweepColumns()); false if it is not one.
    bool setSweepColumn(const QString& column);
    /// Asks for a sweep directory and opens it.
    void openSweepWithDialog();

    widgets::PlotView* plot() const { return m_sweepPlot; }
    QComboBox* columnChooser() const { return m_sweepColumn; }
    QPushButton* openButton() const { return m_openSweep; }
    QLabel* statusLabel() const { return m_sweepStatus; }

private:
    void showSweep();

    /// The open sweep table (cells already escaped for display), drawn by icl::sweepFigure.
    icl::SweepTable m_sweep;

    QPushButton* m_openSweep = nullptr;
    QComboBox* m_sweepColumn = nullptr;
    QLabel* m_sweepStatus = nullptr;
    widgets::PlotView* m_sweepPlot = nullptr;
};

} // namespace icl::gui
