#pragma once
// File ▸ Import checkpoint…: plans the import of a foreign checkpoint (PyTorch zip, safetensors, .npz, a Garg
// et al. run folder), asks for the config values no file gives, and imports it into an experiment file.

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include <QDialog>
#include <QString>
#include <QStringList>

#include "app/gui/gui_forward.h"
#include "core/training/weights_import.h"

namespace icl::gui {

class AnalysisRunner;

/// Shows icl::planImport's plan of a source (detected format, step and SHA-256 of every source file, the
/// inferred model, the key mapping source → workbench, dropped tensors, removed prefixes, warnings), a form
/// for every config key the plan reports missing, an optional config file and free "key=value" overrides,
/// and the output file; Import runs icl::importWeights with a progress bar and Cancel. Planning and
/// importing run on one worker thread (the GUI thread never waits on them, except the destructor, which
/// cancels a running import and joins). Emits imported() when the experiment file is written.
/// Thread affinity: GUI thread only.
class ImportDialog : public QDialog {
    Q_OBJECT
public:
    explicit ImportDialog(QWidget* parent = nullptr);
    ~ImportDialog() override;

    /// File suffixes (lower case, no dot) offered and accepted on drop as weights files:
    /// pt, pth, bin, safetensors, npz, npy.
    static QStringList weightsSuffixes();
    /// True for a folder or a file with one of weightsSuffixes() (the format itself is read from the bytes).
    static bool isImportSource(const QString& path);
    /// Default experiment file for `source`: <stem>.h5 next to it (a folder: beside the folder) when that
    /// folder is writable, else runs/<stem>.h5 under the current directory (where new runs go); "-2", "-3", …
    /// is appended to the stem while the file exists.
    static QString defaultOutputPath(const QString& source);
    /// Asks for a weights file (`folder` false) or a run folder, starting in the last import folder
    /// (QSettings "import/lastFolder", updated on a choice). Empty when cancelled.
    static QString browseForSource(QWidget* parent, bool folder);

    /// Plans `path` (a weights file or a run folder): resets the form and the output file to the default.
    void setSource(const QString& path);
    QString source() const { return m_sourcePath; }

    void setOutputPath(const QString& path);
    QString outputPath() const;
    /// The config file passed to planImport ("" = SOURCE/config.yaml when present); re-plans.
    void setConfigFile(const QString& path);

    /// "key=value" overrides from the form (one per filled missing-key field, then the free --set line).
    QStringList sets() const;
    /// The field asking for config key `key` (a QSpinBox, QComboBox or QLineEdit), or nullptr.
    QWidget* missingField(const QString& key) const;

    /// True once a plan succeeded and until the next plan starts; plan() is then the last plan.
    bool hasPlan() const { return m_planOk; }
    const icl::ImportPlan& plan() const { return m_plan; }
    /// The message of the last failed plan or import ("" when none).
    QString errorMessage() const { return m_error; }
    /// True while a plan or an import is queued or running.
    bool isBusy() const;
    bool isImporting() const { return m_importing; }

    QTableWidget* sourcesTable() const { return m_sources; }
    QTableWidget* mappingTable() const { return m_mapping; }
    QListWidget* droppedList() const { return m_dropped; }
    QLabel* inferredLabel() const { return m_inferred; }
    QLabel* errorLabel() const { return m_errorLabel; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* importButton() const { return m_import; }
    QPushButton* cancelButton() const { return m_cancel; }

public Q_SLOTS:
    /// Re-plans with the form's values (queued after a running plan).
    void replan();
    /// Imports with the form's values (does nothing while busy).
    void startImport();
    /// Asks a running import to stop (the core's callback returns false: nothing is written).
    void cancelImport();

Q_SIGNALS:
    /// A plan ended: `ok` false with the one-line error message.
    void planFinished(bool ok, const QString& message);
    /// The experiment file `path` was written (the dialog then closes).
    void imported(const QString& path);
    /// An import ended: written, cancelled (ok false, message says so) or refused (ok false, the error).
    void importFinished(bool ok, const QString& message);

protected:
    void reject() override;

private:
    /// Remembers where `source` is, for the next file dialog (a run folder by its parent).
    static void rememberFolder(const QString& source);
    /// A gray hint line.
    static QLabel* grayLabel(const QString& text, QWidget* parent);
    void showPlan(const icl::ImportPlan& plan);
    void showPlanError(const QString& message);
    void clearPlanView();
    void fitSourcesHeight();
    /// Adds a form row for every key of `missing` that has none yet (rows stay until the source changes).
    void addMissingFields(const std::vector<std::string>& missing);
    QString fieldValue(const QString& key) const;
    icl::ImportRequest request() const;
    void updateButtons();
    void setError(const QString& message);
    void onImportProgress(qint64 done, qint64 total, const QString& message);
    void finishImport(const icl::ImportResult& result, const QString& outPath);
    void failImport(const QString& message);

    AnalysisRunner* m_runner = nullptr;
    std::shared_ptr<std::atomic<bool>> m_cancelFlag; ///< of the running import; read by its callback
    QString m_sourcePath;
    bool m_outputEdited = false; ///< the user chose the output; a new source keeps it
    bool m_planOk = false;
    bool m_importing = false;
    bool m_closeWhenDone = false; ///< closed during an import: close once it has stopped
    uint64_t m_planSerial = 0; ///< results of superseded plans are dropped
    icl::ImportPlan m_plan;
    QString m_error;
    std::vector<std::pair<QString, QWidget*>> m_fields; ///< missing config key → its field, in the plan's order
    QTimer* m_replanTimer = nullptr;      ///< coalesces edits of the fields into one re-plan

    QLineEdit* m_sourceEdit = nullptr;
    QTableWidget* m_sources = nullptr;
    QLabel* m_inferred = nullptr;
    QLabel* m_layout = nullptr;
    QLabel* m_prefixes = nullptr;
    QLabel* m_warnings = nullptr;
    QTabWidget* m_tabs = nullptr;
    QTableWidget* m_mapping = nullptr;
    QListWidget* m_dropped = nullptr;
    QFormLayout* m_form = nullptr;
    QLabel* m_noMissing = nullptr;
    QLineEdit* m_configFile = nullptr;
    QLineEdit* m_setLine = nullptr;
    QPushButton* m_recheck = nullptr;
    QLabel* m_errorLabel = nullptr;
    QLineEdit* m_output = nullptr;
    QCheckBox* m_replace = nullptr;
    QLabel* m_outputNote = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QPushButton* m_import = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace icl::gui
