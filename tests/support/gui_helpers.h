#pragma once
// Helpers the GUI tests share: waiting for a window, page or dialog to be idle, the View menu's page actions, the
// page table's rows by type and by name, and the points of a plot's graph.

#include <utility>
#include <vector>

#include <QString>
#include <QTest>

#include "app/gui/main_window.h"

class QAction;
class QCPGraph;

namespace icl::test {

/// Default wait for GUI jobs (ms): generous, since a slow machine is no failure.
constexpr int kGuiTimeoutMs = 300000;

/// Processes events until `busy.isBusy()` is false (a MainWindow, a page, a dialog); false on time-out.
template <class Busy> bool waitIdle(const Busy& busy, int timeoutMs = kGuiTimeoutMs)
{
    return QTest::qWaitFor([&] { return !busy.isBusy(); }, timeoutMs);
}

/// The View menu's action with text `text` (a page's navigator title), or nullptr.
QAction* viewAction(const gui::MainWindow& window, const QString& text);

/// The page class of the page table's row for a `--page` name, or nullptr.
const QMetaObject* pageTypeNamed(const QString& name);

/// The navigator row of page class T in the page table, or -1.
template <class T> int pageRow()
{
    const auto& table = gui::MainWindow::pageTable();
    for (size_t row = 0; row < table.size(); ++row)
        if (table[row].type == &T::staticMetaObject)
            return int(row);
    return -1;
}

/// (key, value) of every point of a QCustomPlot graph, in key order.
std::vector<std::pair<double, double>> graphPoints(QCPGraph* graph);

} // namespace icl::test
