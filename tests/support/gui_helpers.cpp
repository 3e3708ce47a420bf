#include "tests/support/gui_helpers.h"

#include <QAction>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>

#include "tests/support/scratch.h"

namespace icl::test {

QDir scratchFolder(const char* prefix)
{
    return QDir(QString::fromStdString(scratchSubdir(prefix)));
}

::testing::AssertionResult openScripted(gui::MainWindow& window, const std::string& path)
{
    window.setScripted(true);
    if (window.openExperiment(QString::fromStdString(path)))
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "cannot open " << path << ": "
                                         << window.statusBar()->currentMessage().toStdString();
}

::testing::AssertionResult containsAll(const QString& text, const QStringList& parts)
{
    QStringList missing;
    for (const QString& part : parts)
        if (!text.contains(part))
            missing.append(QLatin1Char('"') + part + QLatin1Char('"'));
    if (missing.isEmpty())
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "missing " << missing.join(QStringLiteral(", ")).toStdString() << " in:\n"
                                         << text.toStdString();
}

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

} // namespace icl::test
