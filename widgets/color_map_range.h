#pragma once
// The coordinate range of a QCPColorMap's cells along one axis, with cell i centred on i.

#include <qcustomplot.h>

namespace icl::widgets {

/// 0 … n − 1 for n ≥ 2 cells. A single cell gets −0.5 … 0.5: QCustomPlot sizes a cell from the distance between the
/// first and last cell centres, so a one-row (or one-column) map with the range 0 … 0 would draw nothing (a 1-layer
/// model's algorithm map).
inline QCPRange colorMapCellRange(int n)
{
    return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, n - 1);
}

} // namespace icl::widgets
