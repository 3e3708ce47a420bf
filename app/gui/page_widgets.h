#pragma once
// Small widget builders the pages share, so that each page's constructor says only what is its own.

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>

#include <QString>
#include <Qt>

#include "app/gui/gui_forward.h"
#include "app/gui/shown_text.h"
#include "core/io/kinds.h"
#include "core/types/number_format.h"
#include "core/types/run_summary.h"

namespace icl::gui {

/// `s` (UTF-8, as the core's strings) as a QString.
inline QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

/// `v` with `digits` significant digits (the figure style's 4 by default, core/types/number_format.h), or "—" when
/// it is not finite (NaN: not computed).
QString formatValue(double v, int digits = icl::kShownDigits);
/// `v` in full precision (the tool tip of a value shown with formatValue).
QString formatFullPrecision(double v);

/// The Run / Cancel / progress row of a page that computes on request. Object names "<name>Run",
/// "<name>Cancel", "<name>Progress"; the progress bar shows `progressFormat` ("%v / %m …") and starts at 0 / 1.
struct RunRow {
    QHBoxLayout* layout = nullptr;
    QPushButton* run = nullptr;
    QPushButton* cancel = nullptr;
    QProgressBar* progress = nullptr;
};
RunRow makeRunRow(const QString& name, QWidget* parent, const QString& runText, const QString& runToolTip,
    const QString& progressFormat);

/// The state a page that computes on request (pasting, patching) shares with its worker: cancel flag and
/// (done, total) steps, polled by the page's progress timer. Thread affinity: any thread (atomics).
struct RunState {
    std::atomic<bool> stop { false };
    std::atomic<bool> cancelled { false }; ///< the progress callback returned false
    std::atomic<int64_t> done { 0 };
    std::atomic<int64_t> total { 0 };
    /// The core's progress callback: records (done, total); false (and `cancelled`) once `stop` is set.
    bool report(int64_t doneSteps, int64_t totalSteps)
    {
        done = doneSteps;
        total = totalSteps;
        if (stop) {
            cancelled = true;
            return false;
        }
        return true;
    }
};

/// Shows `state`'s (done, total) steps in `progress` and returns them, with total at least 1 and done at most total.
std::pair<int64_t, int64_t> showRunProgress(QProgressBar* progress, const RunState& state);

/// A spin box with object name `name`, range [minimum, maximum], single step `step` and value `value`.
QSpinBox* makeSpinBox(QWidget* parent, const char* name, int minimum, int maximum, int value, int step = 1);

/// A double spin box with object name `name`, `decimals` decimals, range [minimum, maximum] and single step
/// `step` (the value is left at the minimum); `spin` (optional) is a subclass instance to set up instead.
QDoubleSpinBox* makeDoubleSpinBox(QWidget* parent, const char* name, int decimals, double minimum, double maximum,
    double step, QDoubleSpinBox* spin = nullptr);

/// One item of a combo box: the text shown and the data it carries.
struct ComboItem {
    QString text;
    QString data;
};

/// A combo box with object name `name`, `toolTip` and `items` (the first one current).
QComboBox* makeComboBox(QWidget* parent, const char* name, const QString& toolTip, std::initializer_list<ComboItem> items);

/// Adds a label `text` (a child of `widget`'s parent, its buddy `widget`) and `widget` with `stretch` to the
/// row of controls `row`.
void addLabelled(QBoxLayout* row, const QString& text, QWidget* widget, int stretch = 0);

/// Opens `view`'s export dialog (PNG, SVG, PDF, CSV) when `shown`; returns `shown` (what a page's
/// exportCurrentPlot answers).
template <class View>
bool exportIfShown(bool shown, View* view)
{
    if (shown)
        view->exportWithDialog();
    return shown;
}

/// makeComboBox(parent, name, toolTip, items), added to `row` after the label `text` (addLabelled).
QComboBox* addLabelledComboBox(QBoxLayout* row, const QString& text, QWidget* parent, const char* name,
    const QString& toolTip, std::initializer_list<ComboItem> items);

/// A row of `field`, stretched, and the widgets `after` it (buttons); with a `label` (non-empty) before it, as
/// addLabelled.
QHBoxLayout* makeFieldRow(QWidget* field, std::initializer_list<QWidget*> after, const QString& label = QString());

/// A push button labelled `text` with object name `name` and `toolTip`.
QPushButton* makePushButton(QWidget* parent, const char* name, const QString& text, const QString& toolTip);

/// A check box labelled `text` with object name `name`, initially `checked`, with `toolTip`.
QCheckBox* makeCheckBox(QWidget* parent, const char* name, const QString& text, bool checked, const QString& toolTip);

/// A word-wrapped, mouse-selectable text line (results, summaries, notes) with object name `name`.
QLabel* makeTextLine(const QString& name, QWidget* parent, const QString& text = QString());

/// A value in a panel ("—" until set), mouse-selectable, with object name `name`.
QLabel* makeValueLabel(QWidget* parent, const char* name);
/// A value label (makeValueLabel) appended to `form` as the row `label`, with `toolTip` (none when empty).
QLabel* addValueRow(QFormLayout* form, QWidget* parent, const char* name, const QString& label,
    const QString& toolTip = QString());

/// One row of addValueRows: where the label goes, its object name, the row's label and tool tip.
struct ValueRow {
    QLabel** value;
    const char* name;
    QString label;
    QString toolTip;
};
/// addValueRow for each of `rows`, in order.
void addValueRows(QFormLayout* form, QWidget* parent, std::initializer_list<ValueRow> rows);

/// The result views of a page with one plot, appended to `layout` under its controls: a summary line (object
/// name "<name>Summary", "—" until set), the page's status line `status` and the plot ("<name>Plot", stretched).
struct SummaryAndPlot {
    QLabel* summary = nullptr;
    widgets::PlotView* plot = nullptr;
    /// Shows nothing: an empty plot and "—" as the summary.
    void clear() const;
};
SummaryAndPlot addSummaryAndPlot(QVBoxLayout* layout, QWidget* parent, const QString& name, QLabel* status);

/// The vertical layout of a page's content: 4 px margins and spacing.
QVBoxLayout* makeContentLayout(QWidget* content);

/// A group box titled `title` with a vertical layout of 4 px margins that holds `content` (nothing when nullptr);
/// `layout`, when given, receives the layout for more widgets.
QGroupBox* makeGroupBox(const QString& title, QWidget* parent, QWidget* content, QVBoxLayout** layout = nullptr);

/// A splitter of two panes, `first` and `second`, that share its length as `firstStretch` : `secondStretch` and
/// cannot be collapsed.
QSplitter* makeSplitter(
    Qt::Orientation orientation, QWidget* parent, QWidget* first, int firstStretch, QWidget* second, int secondStretch);

/// A file name field and the button that browses for it (the page connects the button to its file dialog).
struct FileField {
    QLineEdit* path = nullptr;
    QPushButton* browse = nullptr;
    /// Enables or disables the field and its button together.
    void setEnabled(bool enabled) const;
};
/// A FileField, children of `parent`: the field with `placeholder`, then the button labelled `browseText`.
FileField makeFileField(QWidget* parent, const QString& placeholder, const QString& browseText);

/// The open experiment's folder, where file dialogs start ("" before one is open). MainWindow::openExperiment sets
/// it. GUI thread only.
QString experimentFolder();
void setExperimentFolder(const QString& folder);
/// `name` in the open experiment's folder when `name` is relative (a dialog's start), else `name` itself.
QString inExperimentFolder(const QString& name);

/// Asks for an experiment file to write: a save dialog titled `title` opened at `start` that asks before replacing an
/// existing file only when `confirmOverwrite` (otherwise the caller decides). Returns the path with ".h5" appended
/// when it lacks it, or "" when the user cancelled.
QString askExperimentFileToWrite(QWidget* parent, const QString& title, const QString& start, bool confirmOverwrite);

/// A grid of labelled fields, two columns of (label, field) pairs per row; the tool tip goes on both.
class FieldGrid {
public:
    explicit FieldGrid(QWidget* parent);
    /// Puts `field` with its label (the label's buddy) at (row, column); column counts pairs.
    void add(int row, int column, const QString& label, QWidget* field, const QString& toolTip);
    QGridLayout* layout() const { return m_grid; }

private:
    QWidget* m_parent;
    QGridLayout* m_grid;
};

/// For a page's supports(): true when the run's model.kind (its typed config, RunSummary::config) is `kind`.
/// Otherwise `why` (if given) gets "<what>; this run has a <kind> model. <hint>" (hint may be empty).
bool modelKindIs(
    const icl::RunSummary& summary, icl::ModelKind kind, const QString& what, const QString& hint, QString* why);

} // namespace icl::gui
