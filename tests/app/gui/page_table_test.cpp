// MainWindow's page table is the one registry of pages: this walks every row and checks what the window builds
// from it (navigator, View ▸ shortcuts, --page names, page<T>(), cancel on close).

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <QAction>
#include <QListWidget>
#include <QSignalSpy>

#include <gtest/gtest.h>

#include "app/gui/analysis_page.h"
#include "app/gui/attention_page.h"
#include "app/gui/main_window.h"
#include "app/gui/train_page.h"
#include "tests/support/gui_helpers.h"

using icl::gui::AnalysisPage;
using icl::gui::MainWindow;

TEST(PageTable, EveryRowHasUniqueNamesATitleAndAShortcut)
{
    const auto& table = MainWindow::pageTable();
    ASSERT_GE(table.size(), 11u);
    std::set<std::string> names;
    std::set<std::string> titles;
    std::set<QString> shortcuts;
    std::set<const QMetaObject*> types;
    for (size_t row = 0; row < table.size(); ++row) {
        const MainWindow::PageEntry& entry = table[row];
        SCOPED_TRACE(row);
        ASSERT_NE(entry.names[0], nullptr) << "every row has a documented --page name";
        for (const char* name : entry.names)
            if (name) {
                EXPECT_TRUE(names.insert(name).second) << name << " names two rows";
                EXPECT_EQ(MainWindow::pageFromName(QString::fromLatin1(name)), &entry) << name;
                EXPECT_EQ(MainWindow::pageFromName(QString::fromLatin1(name).toUpper()), &entry) << name;
            }
        ASSERT_NE(entry.title, nullptr);
        EXPECT_TRUE(titles.insert(entry.title).second) << entry.title;
        ASSERT_NE(entry.toolTip, nullptr);
        EXPECT_STRNE(entry.toolTip, "");
        ASSERT_NE(entry.type, nullptr);
        EXPECT_TRUE(types.insert(entry.type).second) << entry.type->className() << " has two rows";
        const QKeySequence shortcut = MainWindow::pageShortcut(int(row));
        EXPECT_FALSE(shortcut.isEmpty()) << entry.title << " has no View ▸ shortcut";
        EXPECT_TRUE(shortcuts.insert(shortcut.toString()).second) << shortcut.toString().toStdString();
    }
    EXPECT_EQ(MainWindow::pageFromName("nope"), nullptr);
    EXPECT_EQ(MainWindow::pageFromName(""), nullptr);
    QStringList documented;
    for (const MainWindow::PageEntry& entry : table)
        documented << QString::fromLatin1(entry.names[0]);
    EXPECT_EQ(MainWindow::pageNames(), documented);
}

TEST(PageTable, ShortcutsAreCtrlDigitsThenCtrlShiftDigits)
{
    EXPECT_EQ(MainWindow::pageShortcut(0), QKeySequence(Qt::CTRL | Qt::Key_1));
    EXPECT_EQ(MainWindow::pageShortcut(8), QKeySequence(Qt::CTRL | Qt::Key_9));
    EXPECT_EQ(MainWindow::pageShortcut(9), QKeySequence(Qt::CTRL | Qt::Key_0));
    EXPECT_EQ(MainWindow::pageShortcut(10), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_1));
    EXPECT_EQ(MainWindow::pageShortcut(19), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_0));
    EXPECT_TRUE(MainWindow::pageShortcut(20).isEmpty());
    EXPECT_TRUE(MainWindow::pageShortcut(-1).isEmpty());
}

TEST(PageTable, TheNavigatorListsThePagesInTheDocumentedOrder)
{
    // The order, names and shortcuts the README and `icl-workbench --help` give, written out here.
    struct Documented {
        const char* title;
        std::vector<const char*> names;
        QKeySequence shortcut;
    };
    const std::vector<Documented> documented = {
        { "Experiments", { "experiments" }, QKeySequence(Qt::CTRL | Qt::Key_1) },
        { "Train", { "train" }, QKeySequence(Qt::CTRL | Qt::Key_2) },
        { "GD alignment", { "gd-alignment", "gd_alignment" }, QKeySequence(Qt::CTRL | Qt::Key_3) },
        { "Kernel view", { "kernel", "kernel-view", "kernel_view" }, QKeySequence(Qt::CTRL | Qt::Key_4) },
        { "ICL curve", { "icl-curve", "icl_curve" }, QKeySequence(Qt::CTRL | Qt::Key_5) },
        { "Probes", { "probes", "probe" }, QKeySequence(Qt::CTRL | Qt::Key_6) },
        { "Pasting", { "pasting", "paste" }, QKeySequence(Qt::CTRL | Qt::Key_7) },
        { "Attention", { "attention" }, QKeySequence(Qt::CTRL | Qt::Key_8) },
        { "Patching", { "patching", "patch" }, QKeySequence(Qt::CTRL | Qt::Key_9) },
        { "ICL vs IWL", { "icl-iwl", "icl_iwl" }, QKeySequence(Qt::CTRL | Qt::Key_0) },
        { "Algorithm map", { "algorithm-map", "algorithm_map" }, QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_1) },
    };
    MainWindow window;
    auto* navigator = window.findChild<QListWidget*>("pageNavigator");
    ASSERT_NE(navigator, nullptr);
    ASSERT_EQ(navigator->count(), int(documented.size()));
    for (size_t row = 0; row < documented.size(); ++row) {
        SCOPED_TRACE(documented[row].title);
        EXPECT_EQ(navigator->item(int(row))->text(), QString::fromUtf8(documented[row].title));
        for (const char* name : documented[row].names)
            EXPECT_EQ(icl::test::pageTypeNamed(QString::fromLatin1(name)), window.pages()[row]->metaObject()) << name;
        QAction* action = icl::test::viewAction(window, QString::fromUtf8(documented[row].title));
        ASSERT_NE(action, nullptr);
        EXPECT_EQ(action->shortcut(), documented[row].shortcut);
    }
    EXPECT_EQ(window.pages()[icl::test::pageRow<icl::gui::AttentionPage>()], window.page<icl::gui::AttentionPage>());
}

TEST(PageTable, TheWindowBuildsOnePagePerRowInNavigatorOrder)
{
    MainWindow window;
    const auto& table = MainWindow::pageTable();
    ASSERT_EQ(window.pages().size(), table.size());
    auto* navigator = window.findChild<QListWidget*>("pageNavigator");
    ASSERT_NE(navigator, nullptr);
    ASSERT_EQ(navigator->count(), int(table.size()));
    for (size_t row = 0; row < table.size(); ++row) {
        const MainWindow::PageEntry& entry = table[row];
        QWidget* page = window.pages()[row];
        SCOPED_TRACE(entry.title);
        ASSERT_NE(page, nullptr);
        EXPECT_EQ(page->metaObject(), entry.type);
        EXPECT_EQ(navigator->item(int(row))->text(), QString::fromUtf8(entry.title));
        EXPECT_EQ(navigator->item(int(row))->toolTip(), QString::fromUtf8(entry.toolTip));
        // page<T>() returns the first page that is a T: no earlier row may be a T (a subclass of this row's page).
        for (size_t earlier = 0; earlier < row; ++earlier)
            EXPECT_FALSE(window.pages()[earlier]->metaObject()->inherits(entry.type))
                << table[earlier].title << " would be found by page<" << entry.type->className() << ">()";
        QAction* action = icl::test::viewAction(window, QString::fromUtf8(entry.title));
        ASSERT_NE(action, nullptr);
        EXPECT_EQ(action->shortcut(), MainWindow::pageShortcut(int(row)));
        action->trigger();
        EXPECT_EQ(window.currentPage(), page);
        window.showPage(table[0]);
        window.showPage(entry);
        EXPECT_EQ(window.currentPage(), page);
    }
    // page<T>() and showPage<T>() find the rows of their classes.
    ASSERT_NE(window.page<icl::gui::AttentionPage>(), nullptr);
    EXPECT_EQ(window.page<icl::gui::AttentionPage>(), window.pages()[icl::test::pageRow<icl::gui::AttentionPage>()]);
    window.showPage<icl::gui::TrainPage>();
    EXPECT_EQ(window.currentPage(), window.pages()[icl::test::pageRow<icl::gui::TrainPage>()]);
    EXPECT_EQ(MainWindow::pageEntry<icl::gui::TrainPage>(), &table[icl::test::pageRow<icl::gui::TrainPage>()]);
}

TEST(PageTable, ClosingTheWindowCancelsEveryAnalysisPage)
{
    MainWindow window;
    window.setScripted(true);
    std::vector<std::unique_ptr<QSignalSpy>> spies;
    std::vector<const char*> titles;
    for (size_t row = 0; row < window.pages().size(); ++row)
        if (auto* page = qobject_cast<AnalysisPage*>(window.pages()[row])) {
            spies.push_back(std::make_unique<QSignalSpy>(page, &AnalysisPage::cancelRequested));
            titles.push_back(MainWindow::pageTable()[row].title);
        }
    ASSERT_GE(spies.size(), 9u) << "the analysis pages of the table";
    window.show();
    window.close();
    for (size_t i = 0; i < spies.size(); ++i)
        EXPECT_EQ(spies[i]->count(), 1) << titles[i] << " was not cancelled on close";
}
