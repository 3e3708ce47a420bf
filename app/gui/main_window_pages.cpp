// MainWindow's page table (every page it shows, in navigator order), page names, and the menu bar.
#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>

#include "app/gui/algorithm_map_page.h"
#include "app/gui/attention_page.h"
#include "app/gui/experiments_page.h"
#include "app/gui/gd_alignment_page.h"
#include "app/gui/icl_curve_page.h"
#include "app/gui/icl_iwl_page.h"
#include "app/gui/kernel_view_page.h"
#include "app/gui/pasting_page.h"
#include "app/gui/patching_page.h"
#include "app/gui/probes_page.h"
#include "app/gui/train_page.h"

namespace icl::gui {

const std::vector<MainWindow::PageEntry>& MainWindow::pageTable()
{
    // The one place a page is registered: navigator order (= Page), --page names, title, tool tip, icon, factory.
    // View ▸ Ctrl+1…9, Ctrl+0 follow this order.
    static const std::vector<PageEntry> table = {
        { Page::Experiments, { "experiments" }, QT_TR_NOOP("Experiments"),
            QT_TR_NOOP("Open saved experiments, recent files and presets"), QStyle::SP_DirOpenIcon,
            [](MainWindow* w) -> QWidget* { return w->m_experimentsPage = new ExperimentsPage(w); } },
        { Page::Train, { "train" }, QT_TR_NOOP("Train"),
            QT_TR_NOOP("Train a model with live loss curves and checkpoints"), QStyle::SP_MediaPlay,
            [](MainWindow* w) -> QWidget* { return w->m_trainPage = new TrainPage(w); } },
        { Page::GdAlignment, { "gd-alignment", "gd_alignment" }, QT_TR_NOOP("GD alignment"),
            QT_TR_NOOP("Compare a trained linear self-attention model with gradient descent (von Oswald et al.)"),
            QStyle::SP_FileDialogContentsView,
            [](MainWindow* w) -> QWidget* { return w->m_gdAlignmentPage = new GdAlignmentPage(w); } },
        { Page::KernelView, { "kernel", "kernel-view", "kernel_view" }, QT_TR_NOOP("Kernel view"),
            QT_TR_NOOP("Softmax attention as one GD step of a contrastive reference model, exactly and with random "
                       "features (Ren & Liu)"),
            QStyle::SP_FileDialogDetailedView,
            [](MainWindow* w) -> QWidget* { return w->m_kernelViewPage = new KernelViewPage(w); } },
        { Page::IclCurve, { "icl-curve", "icl_curve" }, QT_TR_NOOP("ICL curve"),
            QT_TR_NOOP("Model and every baseline against the number of in-context examples, with bootstrap CIs "
                       "(Garg et al.)"),
            QStyle::SP_FileDialogInfoView,
            [](MainWindow* w) -> QWidget* { return w->m_iclCurvePage = new IclCurvePage(w); } },
        { Page::Probes, { "probes", "probe" }, QT_TR_NOOP("Probes"),
            QT_TR_NOOP("Linear probes on every layer of a GPT-2's residual stream, one line per target (Guo et al.)"),
            QStyle::SP_FileDialogListView,
            [](MainWindow* w) -> QWidget* { return w->m_probesPage = new ProbesPage(w); } },
        { Page::Pasting, { "pasting", "paste" }, QT_TR_NOOP("Pasting"),
            QT_TR_NOOP("Cut a GPT-2 at layer ℓ, train a new embedding under its frozen upper blocks and compare with a "
                       "model trained from scratch and with ridge (Guo et al.)"),
            QStyle::SP_ArrowUp, [](MainWindow* w) -> QWidget* { return w->m_pastingPage = new PastingPage(w); } },
        { Page::Attention, { "attention" }, QT_TR_NOOP("Attention"),
            QT_TR_NOOP("Attention patterns of every head, a prompt editor that re-runs the model on every edit, the "
                       "model beside GD, ridge and least squares, and the regression lens"),
            QStyle::SP_DesktopIcon,
            [](MainWindow* w) -> QWidget* { return w->m_attentionPage = new AttentionPage(w); } },
        { Page::Patching, { "patching", "patch" }, QT_TR_NOOP("Patching"),
            QT_TR_NOOP("Activation patching: the clean residual stream at each (layer, position) patched into a "
                       "corrupted run"),
            QStyle::SP_BrowserReload,
            [](MainWindow* w) -> QWidget* { return w->m_patchingPage = new PatchingPage(w); } },
        { Page::IclIwl, { "icl-iwl", "icl_iwl" }, QT_TR_NOOP("ICL vs IWL"),
            QT_TR_NOOP("Few-shot classification: in-context (holdout classes) vs in-weights accuracy over training "
                       "and at the selected checkpoint (Chan et al.)"),
            QStyle::SP_MessageBoxInformation,
            [](MainWindow* w) -> QWidget* { return w->m_iclIwlPage = new IclIwlPage(w); } },
        { Page::AlgorithmMap, { "algorithm-map", "algorithm_map" }, QT_TR_NOOP("Algorithm map"),
            QT_TR_NOOP("Which algorithm does each layer run? Every layer against GD, GD++, Iterative Newton and ridge "
                       "steps, with the best-matching step per layer, across training (Fu et al., von Oswald et al.)"),
            QStyle::SP_FileDialogNewFolder,
            [](MainWindow* w) -> QWidget* { return w->m_algorithmMapPage = new AlgorithmMapPage(w); } },
    };
    return table;
}

std::optional<MainWindow::Page> MainWindow::pageFromName(const QString& name)
{
    const QString n = name.trimmed().toLower();
    for (const PageEntry& entry : pageTable())
        for (const char* alias : entry.names)
            if (alias && n == QLatin1String(alias))
                return entry.page;
    return std::nullopt;
}

void MainWindow::createMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open experiment…"), this, &MainWindow::openWithDialog);
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &recent"));
    file->addSeparator();
    QAction* importFile = file->addAction(tr("&Import checkpoint…"), this, &MainWindow::importCheckpoint);
    importFile->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    importFile->setToolTip(tr("Import a PyTorch .pt, .safetensors or .npz checkpoint into an experiment file"));
    QAction* importFolder = file->addAction(tr("Import run &folder…"), this, &MainWindow::importRunFolder);
    importFolder->setToolTip(tr("Import a run folder in Garg et al.'s layout (model_<step>.pt, state.pt, config.yaml)"));
    file->addSeparator();
    QAction* exportPlot = file->addAction(tr("&Export current plot…"), this, &MainWindow::exportCurrentPlot);
    exportPlot->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setMenuRole(QAction::QuitRole);

    QMenu* train = menuBar()->addMenu(tr("&Train"));
    m_startAction = train->addAction(tr("&Start training"), this, [this] {
        showPage(Page::Train);
        m_trainPage->startTraining();
    });
    m_startAction->setShortcut(QKeySequence(Qt::Key_F5));
    m_stopAction = train->addAction(tr("S&top training"), m_trainPage, &TrainPage::stopTraining);
    m_stopAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_stopAction->setEnabled(false);
    train->addAction(tr("&Resume training"), this, [this] {
        showPage(Page::Train);
        m_trainPage->resumeTraining();
    });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_navigator->count(); ++i) {
        QAction* a = view->addAction(m_navigator->item(i)->text(), this, [this, i] { m_navigator->setCurrentRow(i); });
        // Ctrl+1…9 for the first nine pages, Ctrl+0 for the tenth (ICL vs IWL).
        if (i < 9)
            a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
        else if (i == 9)
            a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ICL Workbench"), this, &MainWindow::about);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

} // namespace icl::gui
