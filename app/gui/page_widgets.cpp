#include "app/gui/page_widgets.h"

#include "widgets/plot_view.h"
#include "core/io/config.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QDir>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>
#include <QWidget>

namespace icl::gui {

QString formatValue(double v, int digits)
{
    return std::isfinite(v) ? QString::fromStdString(icl::formatSignificant(v, digits)) : QStringLiteral("—");
}

QString formatFullPrecision(double v)
{
    return QString::fromStdString(icl::formatFullPrecision(v));
}

RunRow makeRunRow(const QString& name, QWidget* parent, const QString& runText, const QString& runToolTip,
    const QString& progressFormat)
{
    RunRow row;
    row.layout = new QHBoxLayout;
    row.run = new QPushButton(runText, parent);
    row.run->setObjectName(name + QStringLiteral("Run"));
    row.run->setToolTip(runToolTip);
    row.cancel = new QPushButton(QCoreApplication::translate("icl::gui::AnalysisPage", "Cancel"), parent);
    row.cancel->setObjectName(name + QStringLiteral("Cancel"));
    row.progress = new QProgressBar(parent);
    row.progress->setObjectName(name + QStringLiteral("Progress"));
    row.progress->setRange(0, 1);
    row.progress->setValue(0);
    row.progress->setFormat(progressFormat);
    row.layout->addWidget(row.run);
    row.layout->addWidget(row.cancel);
    row.layout->addWidget(row.progress, 1);
    return row;
}

std::pair<int64_t, int64_t> showRunProgress(QProgressBar* progress, const RunState& state)
{
    const int64_t total = std::max<int64_t>(1, state.total.load());
    const int64_t done = std::min(state.done.load(), total);
    progress->setRange(0, int(std::min<int64_t>(total, INT_MAX)));
    progress->setValue(int(std::min<int64_t>(done, INT_MAX)));
    return { done, total };
}

QSpinBox* makeSpinBox(QWidget* parent, const char* name, int minimum, int maximum, int value, int step)
{
    auto* spin = new QSpinBox(parent);
    spin->setObjectName(QString::fromLatin1(name));
    spin->setRange(minimum, maximum);
    spin->setSingleStep(step);
    spin->setValue(value);
    return spin;
}

QComboBox* makeComboBox(QWidget* parent, const char* name, const QString& toolTip, std::initializer_list<ComboItem> items)
{
    auto* combo = new QComboBox(parent);
    combo->setObjectName(QString::fromLatin1(name));
    for (const ComboItem& item : items)
        combo->addItem(item.text, item.data);
    combo->setToolTip(toolTip);
    return combo;
}

void addLabelled(QBoxLayout* row, const QString& text, QWidget* widget, int stretch)
{
    auto* label = new QLabel(text, widget->parentWidget());
    label->setBuddy(widget);
    row->addWidget(label);
    row->addWidget(widget, stretch);
}

QComboBox* addLabelledComboBox(QBoxLayout* row, const QString& text, QWidget* parent, const char* name,
    const QString& toolTip, std::initializer_list<ComboItem> items)
{
    QComboBox* box = makeComboBox(parent, name, toolTip, items);
    addLabelled(row, text, box);
    return box;
}

QHBoxLayout* makeFieldRow(QWidget* field, std::initializer_list<QWidget*> after, const QString& label)
{
    auto* row = new QHBoxLayout;
    if (label.isEmpty())
        row->addWidget(field, 1);
    else
        addLabelled(row, label, field, 1);
    for (QWidget* w : after)
        row->addWidget(w);
    return row;
}

QDoubleSpinBox* makeDoubleSpinBox(
    QWidget* parent, const char* name, int decimals, double minimum, double maximum, double step, QDoubleSpinBox* spin)
{
    if (!spin)
        spin = new QDoubleSpinBox(parent);
    spin->setObjectName(QString::fromLatin1(name));
    spin->setDecimals(decimals);
    spin->setRange(minimum, maximum);
    spin->setSingleStep(step);
    return spin;
}

QPushButton* makePushButton(QWidget* parent, const char* name, const QString& text, const QString& toolTip)
{
    auto* button = new QPushButton(text, parent);
    button->setObjectName(QString::fromLatin1(name));
    button->setToolTip(toolTip);
    return button;
}

QCheckBox* makeCheckBox(QWidget* parent, const char* name, const QString& text, bool checked, const QString& toolTip)
{
    auto* box = new QCheckBox(text, parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setChecked(checked);
    box->setToolTip(toolTip);
    return box;
}

QLabel* makeTextLine(const QString& name, QWidget* parent, const QString& text)
{
    auto* label = new QLabel(text, parent);
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QLabel* makeValueLabel(QWidget* parent, const char* name)
{
    auto* label = new QLabel(QStringLiteral("—"), parent);
    label->setObjectName(QLatin1String(name));
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

QLabel* addValueRow(QFormLayout* form, QWidget* parent, const char* name, const QString& label, const QString& toolTip)
{
    QLabel* value = makeValueLabel(parent, name);
    if (!toolTip.isEmpty())
        value->setToolTip(toolTip);
    form->addRow(label, value);
    return value;
}

void addValueRows(QFormLayout* form, QWidget* parent, std::initializer_list<ValueRow> rows)
{
    for (const ValueRow& r : rows)
        *r.value = addValueRow(form, parent, r.name, r.label, r.toolTip);
}

void SummaryAndPlot::clear() const
{
    plot->setFigure(icl::Figure {});
    summary->setText(QStringLiteral("—"));
}

SummaryAndPlot addSummaryAndPlot(QVBoxLayout* layout, QWidget* parent, const QString& name, QLabel* status)
{
    SummaryAndPlot views;
    views.summary = makeTextLine(name + QStringLiteral("Summary"), parent, QStringLiteral("—"));
    layout->addWidget(views.summary);
    layout->addWidget(status);
    views.plot = new widgets::PlotView(parent);
    views.plot->setObjectName(name + QStringLiteral("Plot"));
    layout->addWidget(views.plot, 1);
    return views;
}

QVBoxLayout* makeContentLayout(QWidget* content)
{
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    return layout;
}

QGroupBox* makeGroupBox(const QString& title, QWidget* parent, QWidget* content, QVBoxLayout** layout)
{
    auto* box = new QGroupBox(title, parent);
    auto* boxLayout = new QVBoxLayout(box);
    boxLayout->setContentsMargins(4, 4, 4, 4);
    if (content)
        boxLayout->addWidget(content);
    if (layout)
        *layout = boxLayout;
    return box;
}

QSplitter* makeSplitter(
    Qt::Orientation orientation, QWidget* parent, QWidget* first, int firstStretch, QWidget* second, int secondStretch)
{
    auto* splitter = new QSplitter(orientation, parent);
    splitter->addWidget(first);
    splitter->addWidget(second);
    splitter->setStretchFactor(0, firstStretch);
    splitter->setStretchFactor(1, secondStretch);
    splitter->setChildrenCollapsible(false);
    return splitter;
}

void FileField::setEnabled(bool enabled) const
{
    path->setEnabled(enabled);
    browse->setEnabled(enabled);
}

FileField makeFileField(QWidget* parent, const QString& placeholder, const QString& browseText)
{
    FileField f;
    f.path = new QLineEdit(parent);
    f.path->setPlaceholderText(placeholder);
    f.browse = new QPushButton(browseText, parent);
    return f;
}

namespace {
QString& experimentFolderStore()
{
    static QString folder;
    return folder;
}
} // namespace

QString experimentFolder() { return experimentFolderStore(); }

void setExperimentFolder(const QString& folder) { experimentFolderStore() = folder; }

QString inExperimentFolder(const QString& name)
{
    const QString folder = experimentFolder();
    if (folder.isEmpty() || (!name.isEmpty() && QFileInfo(name).isAbsolute()))
        return name;
    return name.isEmpty() ? folder : QDir(folder).filePath(name);
}

QString askExperimentFileToWrite(QWidget* parent, const QString& title, const QString& start, bool confirmOverwrite)
{
    const QString path = QFileDialog::getSaveFileName(parent, title, inExperimentFolder(start),
        QCoreApplication::translate("icl::gui::AnalysisPage", "Experiment files (*.h5)"), nullptr,
        confirmOverwrite ? QFileDialog::Options() : QFileDialog::DontConfirmOverwrite);
    if (path.isEmpty() || path.endsWith(QStringLiteral(".h5")))
        return path;
    return path + QStringLiteral(".h5");
}

FieldGrid::FieldGrid(QWidget* parent)
    : m_parent(parent)
    , m_grid(new QGridLayout)
{
    m_grid->setHorizontalSpacing(8);
    m_grid->setVerticalSpacing(4);
}

void FieldGrid::add(int row, int column, const QString& label, QWidget* field, const QString& toolTip)
{
    auto* l = new QLabel(label, m_parent);
    l->setBuddy(field);
    l->setToolTip(toolTip);
    field->setToolTip(toolTip);
    m_grid->addWidget(l, row, 2 * column);
    m_grid->addWidget(field, row, 2 * column + 1);
}

bool modelKindIs(const icl::RunSummary& summary, icl::ModelKind kind, const QString& what, const QString& hint,
    QString* why)
{
    if (!summary.config) {
        if (why)
            *why = QCoreApplication::translate("icl::gui::AnalysisPage", "The experiment's config was not read.");
        return false;
    }
    if (icl::kindOf(summary.config->model) == kind)
        return true;
    const std::string& actual = summary.config->model.kind;
    if (why) {
        *why = QCoreApplication::translate("icl::gui::AnalysisPage", "%1; this run has a %2 model.")
                   .arg(what, shownText(actual));
        if (!hint.isEmpty())
            *why += QLatin1Char(' ') + hint;
    }
    return false;
}

} // namespace icl::gui
