#pragma once
// Experiments page: open saved experiment files, recent files, presets ("new experiment").

#include <QStringList>
#include <QWidget>

#include "app/gui/gui_forward.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// Lists recent experiment files and the presets, and shows the summary (metadata, checkpoints,
/// final metrics, config) of the open experiment; for a run imported from a foreign checkpoint
/// (RunSummary::import_json) also its provenance above the summary: "Imported <time>, not trained here
/// (<layout> layout)", every source file with format, step and SHA-256 (shortened; the full digest and path
/// in the tooltips), removed prefixes and warnings. Opening and creating are requests to the main
/// window, which owns the files. Thread affinity: GUI thread only.
class ExperimentsPage : public QWidget {
    Q_OBJECT
public:
    explicit ExperimentsPage(QWidget* parent = nullptr);

    void setRecentFiles(const QStringList& paths);
    /// Shows the summary of an opened experiment.
    void showExperiment(const icl::RunSummary& summary);

    QListWidget* recentList() const { return m_recent; }
    QTableWidget* presetTable() const { return m_presets; }
    QTextBrowser* summaryView() const { return m_summary; }
    /// The provenance of an imported run (hidden for runs trained here).
    QWidget* provenanceBox() const { return m_provenance.box; }
    /// "Imported <time>, not trained here (<layout> layout)" (empty for runs trained here).
    QLabel* provenanceLabel() const { return m_provenance.heading; }
    /// One row per source file: file name, format, step, SHA-256 (first 12 hex digits and "…").
    QTableWidget* provenanceSources() const { return m_provenance.sources; }
    /// Removed prefixes and warnings of the import (hidden when there are none).
    QLabel* provenanceNotes() const { return m_provenance.notes; }

public Q_SLOTS:
    /// Asks for a .h5 file and requests to open it.
    void browseForExperiment();
    /// Asks for preset, scale and output file (preselecting the highlighted preset).
    void newExperimentFromPreset();

Q_SIGNALS:
    void openRequested(const QString& path);
    void newExperimentRequested(const QString& preset, const QString& scale, const QString& outputPath);

private:
    /// Fills (or hides, for "") the provenance box from RunSummary::import_json.
    void showProvenance(const std::string& importJson);

    /// The provenance box above the summary (imported runs only): heading, source files, notes.
    struct ProvenanceBox {
        QWidget* box = nullptr;
        QLabel* heading = nullptr;
        QTableWidget* sources = nullptr;
        QLabel* notes = nullptr;
    } m_provenance;
    QListWidget* m_recent = nullptr;
    QTableWidget* m_presets = nullptr;
    QTextBrowser* m_summary = nullptr;
};

} // namespace icl::gui
