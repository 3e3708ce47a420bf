#pragma once
// The Attention page's prompt editor: the prompt's in-context examples and query as an editable table, the row
// buttons (add, delete, move, duplicate, resample), the seed, label noise and ablation choosers, Open…/Save….

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include <QString>
#include <QWidget>

#include "app/gui/gui_forward.h"
#include "app/gui/inspector_session.h"
#include "core/types/inspection.h"

class QTableWidgetItem;

namespace icl::gui {

/// The right column of the Attention page: holds the prompt (icl::Prompt, its file and its number of edits) and
/// edits it. Edits it can make alone (a cell, delete, move, duplicate) change the prompt and emit edited();
/// those that need the task instance (add, resample, relabel, a new sample, a file) emit mutationRequested().
/// The page appends what it shows below the editor (target, predictions, status) to columnLayout().
/// Thread affinity: GUI thread only.
class PromptEditor : public QWidget {
    Q_OBJECT
public:
    explicit PromptEditor(QWidget* parent = nullptr);

    /// The prompt shown (empty before the first sample).
    const icl::Prompt& prompt() const { return m_prompt; }
    bool hasPrompt() const { return m_hasPrompt; }
    /// The file the prompt was opened from (empty for a sampled prompt).
    const QString& promptFile() const { return m_promptFile; }
    /// Edits since the prompt was sampled or opened.
    int edits() const { return m_edits; }
    /// A sample from the seed box's seed.
    PromptMutation sampleMutation() const;
    /// 0: no ablation, 1: zero-ablate the selected head, 2: mean-ablate it.
    int ablationIndex() const;

    /// No prompt (a new run): clears the table, the file, the edits and the ablation (without signals).
    void reset();
    /// Replaces the prompt (no file, edits kept) and shows it.
    void setPrompt(const icl::Prompt& prompt);
    /// Shows a prompt the worker computed; `file` is set when it was opened, `fresh` (sampled or opened) resets
    /// the edits and the noise box to the prompt's σ. The selected row stays selected.
    void showComputedPrompt(const icl::Prompt& prompt, bool fresh, const QString& file);
    /// Enables what applies: `busy` while a mutation is on its way, `runOpen` when a run and checkpoint are
    /// bound, `inspected` when a result is shown (the ablation needs one).
    void updateControls(bool busy, bool runOpen, bool inspected);
    /// Writes the prompt with icl::writePromptFile (JSON for ".json", else CSV with `metadata` as "# key: value").
    bool exportPrompt(
        const std::string& path, const std::map<std::string, std::string>& metadata, std::string* error) const;

    /// The column's layout, for the widgets the page places below the editor.
    QVBoxLayout* columnLayout() const { return m_layout; }
    QTableWidget* promptTable() const { return m_promptTable; }
    QSpinBox* seedChooser() const { return m_seed; }
    QDoubleSpinBox* noiseChooser() const { return m_noise; }
    QComboBox* ablationChooser() const { return m_ablation; }
    QPushButton* deleteButton() const { return m_rowButtons[DeleteRow]; }
    QPushButton* downButton() const { return m_rowButtons[MoveDown]; }
    QPushButton* duplicateButton() const { return m_rowButtons[DuplicateRow]; }
    QPushButton* resampleRowButton() const { return m_rowButtons[ResampleRow]; }
    QPushButton* resamplePromptButton() const { return m_resamplePrompt; }
    QPushButton* relabelButton() const { return m_relabel; }

Q_SIGNALS:
    /// The prompt was edited here (it is already changed): re-run the model.
    void edited();
    /// A change that needs the task instance; counted as an edit unless it is a sample or a file.
    void mutationRequested(const icl::gui::PromptMutation& mutation);
    /// Open… chose `path`.
    void openRequested(const QString& path);
    /// Save… chose `path`.
    void saveRequested(const QString& path);
    /// A line for the page's status line (a rejected cell, a query without a label).
    void statusMessage(const QString& text);
    /// The ablation chooser changed.
    void ablationChanged();
    /// The selected row changed (the page updates the controls).
    void selectionChanged();

private:
    void fillPromptTable();
    int selectedPromptRow() const;
    uint64_t nextSeed();
    void cellEdited(QTableWidgetItem* item);
    void moveSelected(int delta);
    void duplicateSelected();
    void deleteSelected();
    void requestEdit(PromptMutation::Kind kind, int64_t index);
    void chooseSavePath();

    icl::Prompt m_prompt;
    bool m_hasPrompt = false;
    QString m_promptFile;
    int m_edits = 0;
    uint64_t m_editCounter = 0;
    bool m_filling = false;

    QVBoxLayout* m_layout = nullptr;
    QTableWidget* m_promptTable = nullptr;
    /// The buttons under the prompt table, in their grid order (two rows of three).
    enum RowButton { AddRow, DeleteRow, DuplicateRow, MoveUp, MoveDown, ResampleRow, RowButtonCount };
    std::array<QPushButton*, RowButtonCount> m_rowButtons {};
    QSpinBox* m_seed = nullptr;
    QPushButton* m_resamplePrompt = nullptr;
    QDoubleSpinBox* m_noise = nullptr;
    QPushButton* m_relabel = nullptr;
    QComboBox* m_ablation = nullptr;
    /// Open… and Save… of the title row.
    struct PromptFileButtons {
        QPushButton* open = nullptr;
        QPushButton* save = nullptr;
    } m_fileButtons;
};

} // namespace icl::gui
