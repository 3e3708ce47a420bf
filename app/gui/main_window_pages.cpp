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

namespace {
/// A row of the page table for page class T (a Q_OBJECT widget constructed as T(QWidget* parent)).
template <class T>
MainWindow::PageEntry row(
    std::array<const char*, 3> names, const char* title, const char* toolTip, QStyle::StandardPixmap icon)
{
    return { &T::staticMetaObject, names, title, toolTip, icon, [](MainWindow* w) -> QWidget* { return new T(w); } };
}
} // namespace

const std::vector<MainWindow::PageEntry>& MainWindow::pageTable()
{
    // The one place a page is registered: navigator order, --page names, title, tool tip, icon; the page's class
    // gives its factory, page<T>() and showPage<T>(). View ▸ shortcuts (pageShortcut) follow this order.
    static const std::vector<PageEntry> table = {
        row<ExperimentsPage>({ "experiments" }, QT_TR_NOOP("Experiments"),
            QT_TR_NOOP("Open saved experiments, recent files and presets"), QStyle::SP_DirOpenIcon),
        row<TrainPage>({ "train" }, QT_TR_NOOP("Train"),
            QT_TR_NOOP("Train a model with live loss curves and checkpoints"), QStyle::SP_MediaPlay),
        row<GdAlignmentPage>({ "gd-alignment", "gd_alignment" }, QT_TR_NOOP("GD alignment"),
            QT_TR_NOOP("Compare a trained linear self-attention model with gradient descent (von Oswald et al.)"),
            QStyle::SP_FileDialogContentsView),
        row<KernelViewPage>({ "kernel", "kernel-view", "kernel_view" }, QT_TR_NOOP("Kernel view"),
            QT_TR_NOOP("Softmax attention as one GD step of a contrastive reference model, exactly and with random "
                       "features (Ren & Liu)"),
            QStyle::SP_FileDialogDetailedView),
        row<IclCurvePage>({ "icl-curve", "icl_curve" }, QT_TR_NOOP("ICL curve"),
            QT_TR_NOOP("Model and every baseline against the number of in-context examples, with bootstrap CIs "
                       "(Garg et al.)"),
            QStyle::SP_FileDialogInfoView),
        row<ProbesPage>({ "probes", "probe" }, QT_TR_NOOP("Probes"),
            QT_TR_NOOP("Linear probes on every layer of a GPT-2's residual stream, one line per target (Guo et al.)"),
            QStyle::SP_FileDialogListView),
        row<PastingPage>({ "pasting", "paste" }, QT_TR_NOOP("Pasting"),
            QT_TR_NOOP("Cut a GPT-2 at layer ℓ, train a new embedding under its frozen upper blocks and compare with a "
                       "model trained from scratch and with ridge (Guo et al.)"),
            QStyle::SP_ArrowUp),
        row<AttentionPage>({ "attention" }, QT_TR_NOOP("Attention"),
            QT_TR_NOOP("Attention patterns of every head, a prompt editor that re-runs the model on every edit, the "
                       "model beside GD, ridge and least squares, and the regression lens"),
            QStyle::SP_DesktopIcon),
        row<PatchingPage>({ "patching", "patch" }, QT_TR_NOOP("Patching"),
            QT_TR_NOOP("Activation patching: the clean residual stream at each (layer, position) patched into a "
                       "corrupted run"),
            QStyle::SP_BrowserReload),
        row<IclIwlPage>({ "icl-iwl", "icl_iwl" }, QT_TR_NOOP("ICL vs IWL"),
            QT_TR_NOOP("Few-shot classification: in-context (holdout classes) vs in-weights accuracy over training "
                       "and at the selected checkpoint (Chan et al.)"),
            QStyle::SP_MessageBoxInformation),
        row<AlgorithmMapPage>({ "algorithm-map", "algorithm_map" }, QT_TR_NOOP("Algorithm map"),
            QT_TR_NOOP("Which algorithm does each layer run? Every layer against GD, GD++, Iterative Newton and ridge "
                       "steps, with the best-matching step per layer, across training (Fu et al., von Oswald et al.)"),
            QStyle::SP_FileDialogNewFolder),
    };
    return table;
}

const MainWindow::PageEntry* MainWindow::pageFromName(const QString& name)
{
    const QString n = name.trimmed().toLower();
    for (const PageEntry& entry : pageTable())
        for (const char* alias : entry.names)
            if (alias && n == QLatin1String(alias))
                return &entry;
    return nullptr;
}

QStringList MainWindow::pageNames()
{
    QStringList names;
    for (const PageEntry& entry : pageTable())
        names << QString::fromLatin1(entry.names[0]);
    return names;
}

QKeySequence MainWindow::pageShortcut(int row)
{
    // Ctrl+1…9, Ctrl+0 for the first ten rows; Ctrl+Shift and the same digits for the next ten.
    if (row < 0 || row >= 20)
        return {};
    const int digit = row % 10;
    const Qt::Key key = digit == 9 ? Qt::Key_0 : Qt::Key(Qt::Key_1 + digit);
    return row < 10 ? QKeySequence(Qt::CTRL | key) : QKeySequence(Qt::CTRL | Qt::SHIFT | key);
}

void MainWindow::createMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open experiment…"), this, &MainWindow::openWithDialog);
    open->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    file->addSeparator();
    QAction* importFile = file->addAction(tr("&Import checkpoint…"), this, &MainWindow::importCheckpoint);
    importFile->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    importFile->setToolTip(tr("Import a PyTorch .pt, .safetensors or .npz checkpoint into an experiment file"));
    QAction* importFolder = file->addAction(tr("Import run &folder…"), this, &MainWindow::importRunFolder);
    importFolder->setToolTip(
        tr("Import a run folder in Garg et al.'s layout (model_<step>.pt, state.pt, config.yaml)"));
    file->addSeparator();
    QAction* exportPlot = file->addAction(tr("&Export current plot…"), this, &MainWindow::exportCurrentPlot);
    exportPlot->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setMenuRole(QAction::QuitRole);

    QMenu* train = menuBar()->addMenu(tr("&Train"));
    m_startAction = train->addAction(tr("&Start training"), this, [this] {
        showPage(m_trainPage);
        m_trainPage->startTraining();
    });
    m_startAction->setShortcut(QKeySequence(Qt::Key_F5));
    m_stopAction = train->addAction(tr("S&top training"), m_trainPage, &TrainPage::stopTraining);
    m_stopAction->setShortcut(QKeySequence(Qt::Key_Escape));
    m_stopAction->setEnabled(false);
    train->addAction(tr("&Resume training"), this, [this] {
        showPage(m_trainPage);
        m_trainPage->resumeTraining();
    });

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_navigator->count(); ++i) {
        QAction* a = view->addAction(m_navigator->item(i)->text(), this, [this, i] { m_navigator->setCurrentRow(i); });
        a->setShortcut(pageShortcut(i));
    }

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About ICL Workbench"), this, &MainWindow::about);
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

} // namespace icl::gui
