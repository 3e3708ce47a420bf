#pragma once
// The ICL Workbench main window: page navigator, checkpoint timeline, status bar.

#include <array>
#include <functional>
#include <optional>
#include <vector>

#include <QElapsedTimer>
#include <QKeySequence>
#include <QMainWindow>
#include <QPointer>
#include <QSet>
#include <QStringList>
#include <QStyle>

#include "app/gui/gui_forward.h"
#include "core/types/run_summary.h"

namespace icl::gui {

class AnalysisPage;
class ExperimentsPage;
class ImportDialog;
class TrainPage;

/// Left navigator of the pages registered in pageTable() (Experiments, Train, then the analysis pages), the
/// checkpoint timeline every page follows, and a status bar with the compute device, progress and
/// Cancel. Owns the open experiment and the recent-files list (QSettings).
/// Thread affinity: GUI thread only.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    /// One row of the page table: everything MainWindow needs to know about a page.
    struct PageEntry {
        const QMetaObject* type; ///< the page's class (T::staticMetaObject)
        std::array<const char*, 3> names; ///< `--page` names (the first is the documented one; nullptr: none)
        const char* title; ///< navigator text (translated)
        const char* toolTip; ///< navigator tool tip (translated)
        QStyle::StandardPixmap icon;
        std::function<QWidget*(MainWindow*)> make; ///< creates the page
    };
    /// The page table, in navigator order (main_window_pages.cpp): the one registry of pages. Adding a page: its
    /// files, one row there, and its line in app/gui/CMakeLists.txt (docs/architecture.md, "Adding a page").
    static const std::vector<PageEntry>& pageTable();

    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    /// The table's row of page class T, or nullptr.
    template <class T> static const PageEntry* pageEntry()
    {
        for (const PageEntry& entry : pageTable())
            if (entry.type == &T::staticMetaObject)
                return &entry;
        return nullptr;
    }
    /// The table's row for a command-line name (any of its `names`, case-insensitive), or nullptr.
    static const PageEntry* pageFromName(const QString& name);
    /// The documented `--page` name of every row, in navigator order ("experiments", "train", …).
    static QStringList pageNames();
    /// View ▸ shortcut of navigator row `row`: Ctrl+1…9, Ctrl+0, then Ctrl+Shift+1…9, Ctrl+Shift+0.
    static QKeySequence pageShortcut(int row);

    /// Scripted mode (--screenshot/--quit): errors go to stderr instead of dialogs, the window has a
    /// fixed 1280×800 size, and neither geometry nor recent files are written to the settings.
    void setScripted(bool scripted);
    bool isScripted() const { return m_scripted; }

    /// What a path given on the command line is (see pathKind).
    enum class PathKind {
        Experiment, ///< an experiment file (or anything else: openExperiment reports what is wrong)
        ImportSource, ///< a weights file or a Garg et al. run folder: goes to the import dialog
        Sweep, ///< a sweep folder aggregated by icl-cli aggregate, or its table.csv
    };
    /// ImportSource for a file whose bytes icl::detectWeightsFormat recognises (PyTorch zip or legacy, TorchScript,
    /// safetensors, .npz, .npy, whatever its name; the dialog explains the refused ones) and for a folder with
    /// model_<step>.pt or state.pt (isGargRunFolder); Sweep for any other folder and for a .csv file; Experiment
    /// otherwise, also for a missing or unreadable file. Reads at most the file's first bytes (and a zip's entry
    /// names); never throws.
    static PathKind pathKind(const QString& path);
    /// True for a folder in Garg et al.'s layout: it holds model_<step>.pt or state.pt.
    static bool isGargRunFolder(const QString& path);
    /// Opens a path as `icl-workbench PATH` does, by pathKind: an experiment with openExperiment, an import source
    /// with importSource (as a drop does), a sweep on the ICL vs IWL page's Sweep tab (that page shown). Returns false
    /// when the experiment or the sweep could not be read (reported by openExperiment, or in the Sweep tab's status).
    bool openPath(const QString& path);

    /// Reads the experiment at `path` and shows it on every page. On failure reports the
    /// icl::Error message (dialog, or stderr when scripted) and returns false; never throws.
    bool openExperiment(const QString& path);
    /// The open experiment (empty path when none).
    const icl::RunSummary& experiment() const { return m_experiment; }

    /// The pages, one per table row, in navigator order.
    const std::vector<QWidget*>& pages() const { return m_pageList; }
    /// The page of class T (the first one that is a T), or nullptr.
    template <class T> T* page() const
    {
        for (QWidget* w : m_pageList)
            if (auto* p = qobject_cast<T*>(w))
                return p;
        return nullptr;
    }
    /// Shows `page` (one of pages()), the page of the table row `entry`, or the page of class T.
    void showPage(QWidget* page);
    void showPage(const PageEntry& entry);
    template <class T> void showPage() { showPage(page<T>()); }
    /// The page shown now.
    QWidget* currentPage() const;

    /// Selects the saved checkpoint nearest to `step` on the timeline; returns the step selected or -1.
    qint64 selectCheckpoint(qint64 step);

    /// The plot of the current page, or nullptr when the page has none.
    widgets::PlotView* currentPlot() const;

    /// True while a page has work running (training, analyses).
    bool isBusy() const;
    /// Calls `done` (once, on the GUI thread) when no job is running any more.
    void whenIdle(std::function<void()> done);

    /// Draws pending plot changes now (before grabbing a screenshot).
    void flushPlots();

    widgets::CheckpointTimeline* timeline() const { return m_timeline; }
    QStringList recentFiles() const;
    /// Puts `path` first in File ▸ Open recent and on the Experiments page (at most 10; saved unless scripted).
    void addRecentFile(const QString& path);
    /// The open import dialog (File ▸ Import checkpoint…, or a dropped weights file / folder), or nullptr.
    ImportDialog* importDialog() const;

    /// Opens the import dialog on `source` (a weights file or a Garg run folder) and starts planning it;
    /// reuses an open dialog unless it is importing. When the import is written, the new experiment is
    /// opened on the Attention page. Returns the dialog (nullptr when an import is running).
    ImportDialog* importSource(const QString& source);

public Q_SLOTS:
    void openWithDialog();
    /// Asks for a weights file (File ▸ Import checkpoint…, Ctrl+I) and opens the import dialog on it.
    void importCheckpoint();
    /// Asks for a run folder (File ▸ Import run folder…) and opens the import dialog on it.
    void importRunFolder();
    void exportCurrentPlot();
    void about();

Q_SIGNALS:
    /// All running jobs have finished (emitted after training or a page's analyses end).
    void idle();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    /// Every analysis page (AnalysisPage) follows the checkpoint `step`, and the Train page too.
    void followCheckpoint(qint64 step);
    void showError(const QString& title, const QString& message);
    /// The File, Train, View (one entry per page) and Help menus.
    void createMenus();
    /// Reads the recent-files list from QSettings.
    void loadRecentFiles();
    void updateRecentMenu();
    /// Shows `percent` (< 0: busy, no percentage) in the status bar's progress bar and `text` as its message.
    void showProgress(int percent, const QString& text);
    /// Enables Cancel and the training actions from what runs now; emits idle when nothing does.
    void updateBusy();

    bool m_scripted = false;
    QStringList m_recentFiles; ///< most recent first; saved in QSettings unless scripted
    icl::RunSummary m_experiment;
    QElapsedTimer m_liveRefresh; ///< throttles the live alignment refresh during training

    QListWidget* m_navigator = nullptr;
    QStackedWidget* m_pages = nullptr;
    std::vector<QWidget*> m_pageList; ///< one page per table row, in navigator order
    std::vector<AnalysisPage*> m_analysisPages; ///< pages of the table that follow the AnalysisPage protocol
    ExperimentsPage* m_experimentsPage = nullptr; ///< page<ExperimentsPage>(), which the window drives
    TrainPage* m_trainPage = nullptr; ///< page<TrainPage>(), which the window drives
    widgets::CheckpointTimeline* m_timeline = nullptr;
    QLabel* m_deviceLabel = nullptr;
    QProgressBar* m_progress = nullptr;
    QSet<AnalysisPage*> m_cancelled; ///< pages whose running job was cancelled (their end says "cancelled")
    QPushButton* m_cancel = nullptr;
    QMenu* m_recentMenu = nullptr;
    QPointer<QObject> m_importDialog; ///< an ImportDialog (QPointer of the complete type lives in the .cpp)
    QAction* m_startAction = nullptr;
    QAction* m_stopAction = nullptr;
};

} // namespace icl::gui
