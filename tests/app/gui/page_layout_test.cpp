// Pages in the default window (1280 × 800, a first start and every scripted run): the Experiments page shows every
// column of the presets table without scrolling and several presets at once, the Kernel view page gives its
// log-log error plot and its loss plot the room their legends take. Geometry is read from the laid-out widgets.

#include <QHeaderView>
#include <QListWidget>
#include <QScrollBar>
#include <QTableWidget>
#include <QTextBrowser>
#include <QTest>

#include <gtest/gtest.h>

#include "app/gui/experiments_page.h"
#include "app/gui/kernel_view_page.h"
#include "app/gui/main_window.h"
#include "tests/support/gui_helpers.h"
#include "tests/support/tiny_runs.h"

using icl::gui::ExperimentsPage;
using icl::gui::KernelViewPage;
using icl::gui::MainWindow;

namespace {
/// Shows `window` at its scripted size on page T and lets the layouts settle.
template <class T> void showAtDefaultSize(MainWindow& window)
{
    window.setScripted(true);
    window.show();
    window.showPage<T>();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    ASSERT_EQ(window.size(), QSize(1280, 800));
}
} // namespace

TEST(PageLayout, ExperimentsPageShowsEveryPresetColumnAndFiveRowsAt1280x800)
{
    MainWindow window;
    showAtDefaultSize<ExperimentsPage>(window);
    ExperimentsPage* page = window.page<ExperimentsPage>();
    QTableWidget* table = page->presetTable();
    ASSERT_EQ(table->columnCount(), 3);
    EXPECT_EQ(table->horizontalScrollBar()->maximum(), 0) << "the presets table scrolls sideways";
    const int viewportWidth = table->viewport()->width();
    for (int c = 0; c < table->columnCount(); ++c) {
        SCOPED_TRACE(c);
        const int left = table->horizontalHeader()->sectionViewportPosition(c);
        const int width = table->horizontalHeader()->sectionSize(c);
        EXPECT_GE(left, 0);
        EXPECT_LE(left + width, viewportWidth);
        EXPECT_GE(width, 150) << "column " << table->horizontalHeaderItem(c)->text().toStdString();
    }
    // Rows wholly inside the viewport.
    int fullRows = 0;
    for (int r = 0; r < table->rowCount(); ++r)
        if (table->rowViewportPosition(r) >= 0
            && table->rowViewportPosition(r) + table->rowHeight(r) <= table->viewport()->height())
            ++fullRows;
    EXPECT_GE(fullRows, 5);
    // The summary (metric names and values, the config) gets the room; the recent list holds file names.
    EXPECT_GE(page->summaryView()->width(), 2 * page->recentList()->width());
}

TEST(PageLayout, KernelViewGivesItsPlotsMoreRoomThanAHeatmapAt1280x800)
{
    MainWindow window;
    ASSERT_TRUE(
        window.openExperiment(QString::fromStdString(icl::test::tinyRun(icl::test::TinyRun::SoftmaxAttention))));
    showAtDefaultSize<KernelViewPage>(window);
    ASSERT_TRUE(icl::test::waitIdle(window));
    QCoreApplication::processEvents();
    KernelViewPage* page = window.page<KernelViewPage>();
    auto widget = [page](const char* name) {
        auto* w = page->findChild<QWidget*>(QString::fromLatin1(name));
        EXPECT_NE(w, nullptr) << name;
        return w;
    };
    QWidget* exact = widget("kernelExactHeatmap");
    QWidget* approx = widget("kernelApproxHeatmap");
    QWidget* error = widget("kernelErrorPlot");
    QWidget* loss = widget("kernelLossPlot");
    QWidget* variants = widget("kernelVariantPlot");
    ASSERT_TRUE(exact && approx && error && loss && variants);
    ASSERT_TRUE(error->isVisible());
    // The error plot: wider than a heatmap (its legend takes about 180 pixels); the loss plot and the variants'
    // plot share the second row.
    EXPECT_GT(error->width(), exact->width() + 50);
    EXPECT_NEAR(exact->width(), approx->width(), 2);
    EXPECT_GE(loss->width(), error->width());
    EXPECT_NEAR(loss->width(), variants->width(), 10);
}
