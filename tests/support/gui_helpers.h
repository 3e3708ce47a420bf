#pragma once
// Helpers the GUI tests share: a suite's own folder, opening a run in a scripted window (and on a page), waiting for
// a window, page or dialog to be idle, the View menu's page actions, the page table's rows by type and by name, and
// the points of a plot's graph (tests/support/plot_helpers.h).

#include <string>

#include <QDir>
#include <QString>
#include <QStringList>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "tests/support/plot_helpers.h"

class QAction;

namespace icl::test {

/// Default wait for GUI jobs (ms): generous, since a slow machine is no failure.
constexpr int kGuiTimeoutMs = 300000;

/// Processes events until `busy.isBusy()` is false (a MainWindow, a page, a dialog); false on time-out.
template <class Busy> bool waitIdle(const Busy& busy, int timeoutMs = kGuiTimeoutMs)
{
    return QTest::qWaitFor([&] { return !busy.isBusy(); }, timeoutMs);
}

/// A new, empty folder below this process's scratch folder (tests/support/scratch.h), removed at exit: the files of
/// one test suite. Throws std::runtime_error when it cannot be created.
QDir scratchFolder(const char* prefix);

/// Makes `window` scripted (errors to stderr, no dialogs, nothing saved) and opens the experiment file `path`; a
/// failure names the file and the status bar's message.
::testing::AssertionResult openScripted(gui::MainWindow& window, const std::string& path);

/// openScripted, then shows page T (a page that computes when shown starts its analysis).
template <class T> ::testing::AssertionResult openOnPage(gui::MainWindow& window, const std::string& path)
{
    ::testing::AssertionResult opened = openScripted(window, path);
    if (opened)
        window.showPage<T>();
    return opened;
}

/// Makes `window` scripted, shows page T, then opens `path` there (as a user who opens a file on that page).
template <class T> ::testing::AssertionResult openOnShownPage(gui::MainWindow& window, const std::string& path)
{
    window.setScripted(true);
    window.showPage<T>();
    return openScripted(window, path);
}

/// Whether `text` contains every one of `parts`; a failure lists the missing parts and the text.
::testing::AssertionResult containsAll(const QString& text, const QStringList& parts);

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

} // namespace icl::test
