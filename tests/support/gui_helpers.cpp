#include "tests/support/gui_helpers.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <qcustomplot.h>

namespace icl::test {

QAction* viewAction(const gui::MainWindow& window, const QString& text)
{
    for (QAction* menu : window.menuBar()->actions())
        if (menu->menu() && menu->text() == QLatin1String("&View"))
            for (QAction* a : menu->menu()->actions())
                if (a->text() == text)
                    return a;
    return nullptr;
}

const QMetaObject* pageTypeNamed(const QString& name)
{
    const gui::MainWindow::PageEntry* entry = gui::MainWindow::pageFromName(name);
    return entry ? entry->type : nullptr;
}

std::vector<std::pair<double, double>> graphPoints(QCPGraph* graph)
{
    std::vector<std::pair<double, double>> out;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        out.emplace_back(it->key, it->value);
    return out;
}

} // namespace icl::test
