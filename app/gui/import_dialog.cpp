#include "app/gui/import_dialog.h"

#include <algorithm>
#include <utility>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"

namespace icl::gui {

namespace {

const char* kLastFolderKey = "import/lastFolder";

/// Stem of the experiment file a source becomes: the folder's name, or the file name without its suffix.
QString sourceStem(const QFileInfo& info)
{
    const QString stem = info.isDir() ? info.fileName() : info.completeBaseName();
    return stem.isEmpty() ? QStringLiteral("imported") : stem;
}

/// A read-only table of whole-row selection without row numbers: `headers`, rows `padding` px taller than the text.
void setUpTable(QTableWidget* table, const QStringList& headers, int padding)
{
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + padding);
}

} // namespace

ImportDialog::ImportDialog(QWidget* parent)
    : QDialog(parent)
    , m_runner(new AnalysisRunner(this))
    , m_replanTimer(new QTimer(this))
    , m_sourceEdit(new QLineEdit(this))
    , m_sources(new QTableWidget(0, 4, this))
    , m_inferred(new QLabel(this))
    , m_layout(new QLabel(this))
    , m_prefixes(new QLabel(this))
    , m_warnings(new QLabel(this))
    , m_tabs(new QTabWidget(this))
    , m_mapping(new QTableWidget(0, 2, this))
    , m_dropped(new QListWidget(this))
    , m_form(new QFormLayout)
    , m_noMissing(grayLabel(tr("Every config value was found in the files."), this))
    , m_configFile(new QLineEdit(this))
    , m_setLine(new QLineEdit(this))
    , m_recheck(new QPushButton(tr("Re-check"), this))
    , m_errorLabel(new QLabel(this))
    , m_output(new QLineEdit(this))
    , m_replace(new QCheckBox(tr("Replace"), this))
    , m_outputNote(new QLabel(this))
    , m_progress(new QProgressBar(this))
    , m_status(new QLabel(this))
    , m_import(new QPushButton(tr("Import"), this))
    , m_cancel(new QPushButton(tr("Cancel"), this))
{
    setWindowTitle(tr("Import checkpoint"));
    setObjectName(QStringLiteral("importDialog"));
    setSizeGripEnabled(true);

    // --- source ---
    m_sourceEdit->setObjectName(QStringLiteral("importSource"));
    m_sourceEdit->setReadOnly(true);
    m_sourceEdit->setPlaceholderText(tr("a .pt / .safetensors / .npz file or a run folder (model_<step>.pt, config.yaml)"));
    auto* pickFile = new QPushButton(tr("File…"), this);
    pickFile->setToolTip(tr("Choose a weights file: PyTorch .pt/.pth/.bin, .safetensors, .npz or .npy"));
    auto* pickFolder = new QPushButton(tr("Run folder…"), this);
    pickFolder->setToolTip(tr("Choose a run folder in Garg et al.'s layout: model_<step>.pt, state.pt, config.yaml"));
    auto* sourceRow = makeFieldRow(m_sourceEdit, { pickFile, pickFolder }, tr("Source"));

    // --- what was found ---
    m_sources->setObjectName(QStringLiteral("importSources"));
    setUpTable(m_sources, { tr("File"), tr("Format"), tr("Step"), tr("SHA-256") }, 8);
    m_sources->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int c = 1; c < 4; ++c)
        m_sources->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_sources->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_inferred->setObjectName(QStringLiteral("importInferred"));
    m_inferred->setWordWrap(true);
    m_inferred->setTextFormat(Qt::PlainText);
    m_layout->setTextFormat(Qt::PlainText);
    m_inferred->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = m_inferred->font();
    bold.setBold(true);
    m_inferred->setFont(bold);
    m_layout->setObjectName(QStringLiteral("importLayout"));
    m_prefixes->setObjectName(QStringLiteral("importPrefixes"));
    m_prefixes->setWordWrap(true);
    m_prefixes->setTextFormat(Qt::PlainText); // a file's names and warnings: never rendered as rich text
    m_warnings->setObjectName(QStringLiteral("importWarnings"));
    m_warnings->setWordWrap(true);
    m_warnings->setTextFormat(Qt::PlainText);
    m_warnings->setStyleSheet(QStringLiteral("color: #b06000;"));
    m_warnings->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_mapping->setObjectName(QStringLiteral("importMapping"));
    setUpTable(m_mapping, { tr("Source tensor"), tr("Workbench parameter") }, 6);
    m_mapping->setWordWrap(false);
    m_mapping->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_dropped->setObjectName(QStringLiteral("importDropped"));
    m_tabs->addTab(m_mapping, tr("Key mapping"));
    m_tabs->addTab(m_dropped, tr("Dropped"));

    auto* found = new QGroupBox(tr("Found"), this);
    auto* foundForm = new QFormLayout;
    foundForm->addRow(tr("Model"), m_inferred);
    foundForm->addRow(tr("Layout"), m_layout);
    foundForm->addRow(tr("Prefixes removed"), m_prefixes);
    auto* foundLayout = new QVBoxLayout(found);
    foundLayout->addWidget(m_sources);
    foundLayout->addLayout(foundForm);
    foundLayout->addWidget(m_warnings);
    foundLayout->addWidget(m_tabs, 1);

    // --- config: values no file gives, config file, overrides ---
    auto* config = new QGroupBox(tr("Config"), this);
    m_configFile->setObjectName(QStringLiteral("importConfigFile"));
    m_configFile->setPlaceholderText(tr("config.yaml in the run folder, if any"));
    m_configFile->setToolTip(tr("Garg et al.'s config.yaml (its model: and training.task) or a workbench JSON config"));
    auto* pickConfig = new QPushButton(tr("Config file…"), this);
    auto* configRow = makeFieldRow(m_configFile, { pickConfig });
    m_setLine->setObjectName(QStringLiteral("importSets"));
    m_setLine->setPlaceholderText(tr("key=value … (e.g. eval.n_prompts=512), applied last"));
    m_setLine->setToolTip(tr("Overrides of the resolved config, like icl-cli import --set key=value"));
    m_recheck->setObjectName(QStringLiteral("recheckButton"));
    m_recheck->setToolTip(tr("Plan the import again with these values"));
    auto* setRow = makeFieldRow(m_setLine, { m_recheck });
    // One form: the values asked for (inserted at the top), then the config file and the overrides.
    m_form->addRow(tr("Config file"), configRow);
    m_form->addRow(tr("--set"), setRow);
    auto* configLayout = new QVBoxLayout(config);
    configLayout->addWidget(m_noMissing);
    configLayout->addLayout(m_form);

    m_errorLabel->setObjectName(QStringLiteral("importError"));
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setTextFormat(Qt::PlainText);
    m_errorLabel->setStyleSheet(QStringLiteral("color: #c00000;"));
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setVisible(false);

    // --- output ---
    m_output->setObjectName(QStringLiteral("importOutput"));
    auto* pickOutput = new QPushButton(tr("Browse…"), this);
    m_replace->setObjectName(QStringLiteral("importReplace"));
    m_replace->setToolTip(tr("Replace the experiment file if it exists"));
    auto* outputRow = makeFieldRow(m_output, { pickOutput, m_replace }, tr("Output"));
    m_outputNote->setStyleSheet(QStringLiteral("color: #b06000;"));
    m_outputNote->setVisible(false);

    // --- progress and buttons ---
    m_progress->setObjectName(QStringLiteral("importProgress"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_status->setObjectName(QStringLiteral("importStatus"));
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText);
    m_import->setObjectName(QStringLiteral("importButton"));
    m_import->setDefault(true);
    m_import->setToolTip(tr("Write the experiment file (every checkpoint, evaluated on the run's prompts)"));
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setToolTip(tr("Stop a running import (nothing is written), or close"));
    auto* buttons = new QDialogButtonBox(this);
    buttons->addButton(m_import, QDialogButtonBox::AcceptRole);
    buttons->addButton(m_cancel, QDialogButtonBox::RejectRole);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(sourceRow);
    layout->addWidget(found, 1);
    layout->addWidget(config);
    layout->addWidget(m_errorLabel);
    layout->addLayout(outputRow);
    layout->addWidget(m_outputNote);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addWidget(buttons);
    resize(860, 780);
    clearPlanView();

    m_replanTimer->setSingleShot(true);
    m_replanTimer->setInterval(300);
    connect(m_replanTimer, &QTimer::timeout, this, &ImportDialog::replan);
    connect(m_runner, &AnalysisRunner::finished, this, &ImportDialog::updateButtons);
    for (auto [pick, folder] : {std::pair{pickFile, false}, std::pair{pickFolder, true}})
        connect(pick, &QPushButton::clicked, this, [this, folder = folder] {
            const QString path = browseForSource(this, folder);
            if (!path.isEmpty())
                setSource(path);
        });
    connect(pickConfig, &QPushButton::clicked, this, [this] {
        const QString start = m_configFile->text().isEmpty() ? QFileInfo(m_sourcePath).absolutePath()
                                                             : m_configFile->text();
        const QString path = QFileDialog::getOpenFileName(this, tr("Config file"), start,
            tr("Config files (*.yaml *.yml *.json);;All files (*)"));
        if (!path.isEmpty())
            setConfigFile(path);
    });
    connect(m_configFile, &QLineEdit::editingFinished, this, [this] {
        if (m_configFile->isModified()) {
            m_configFile->setModified(false);
            replan();
        }
    });
    connect(m_setLine, &QLineEdit::returnPressed, this, &ImportDialog::replan);
    connect(m_recheck, &QPushButton::clicked, this, &ImportDialog::replan);
    connect(pickOutput, &QPushButton::clicked, this, [this] {
        const QString path = askExperimentFileToWrite(this, tr("Experiment file"), outputPath(), true);
        if (path.isEmpty())
            return;
        setOutputPath(path);
        m_outputEdited = true;
    });
    connect(m_output, &QLineEdit::textEdited, this, [this] { m_outputEdited = true; });
    connect(m_output, &QLineEdit::textChanged, this, &ImportDialog::updateButtons);
    connect(m_replace, &QCheckBox::toggled, this, &ImportDialog::updateButtons);
    connect(m_import, &QPushButton::clicked, this, &ImportDialog::startImport);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (m_importing)
            cancelImport();
        else
            reject();
    });
    updateButtons();
}

void ImportDialog::rememberFolder(const QString& source)
{
    const QFileInfo info(source);
    // A run folder is remembered by its parent: the next dialog starts beside it.
    QSettings().setValue(kLastFolderKey, info.absolutePath());
}

QLabel* ImportDialog::grayLabel(const QString& text, QWidget* parent)
{
    auto* label = new QLabel(text, parent);
    label->setStyleSheet(QStringLiteral("color: gray;"));
    return label;
}

ImportDialog::~ImportDialog()
{
    // A running import stops at its next callback; the runner joins its worker before the dialog goes.
    if (m_cancelFlag)
        m_cancelFlag->store(true);
    delete m_runner;
    m_runner = nullptr;
}

QStringList ImportDialog::weightsSuffixes()
{
    return { QStringLiteral("pt"), QStringLiteral("pth"), QStringLiteral("bin"), QStringLiteral("safetensors"),
        QStringLiteral("npz"), QStringLiteral("npy") };
}

bool ImportDialog::isImportSource(const QString& path)
{
    const QFileInfo info(path);
    if (info.isDir())
        return true;
    return info.isFile() && weightsSuffixes().contains(info.suffix().toLower());
}

QString ImportDialog::defaultOutputPath(const QString& source)
{
    const QFileInfo info(QFileInfo(source).absoluteFilePath());
    const QString stem = sourceStem(info);
    QDir dir = info.absoluteDir(); // a folder's parent, a file's folder
    if (!QFileInfo(dir.absolutePath()).isWritable())
        dir = QDir(QDir::current().filePath(QStringLiteral("runs")));
    QString path = dir.filePath(stem + QStringLiteral(".h5"));
    for (int i = 2; QFileInfo::exists(path); ++i)
        path = dir.filePath(QStringLiteral("%1-%2.h5").arg(stem).arg(i));
    return QDir::cleanPath(path);
}

QString ImportDialog::browseForSource(QWidget* parent, bool folder)
{
    QSettings settings;
    const QString start = settings.value(kLastFolderKey).toString();
    QString path;
    if (folder) {
        path = QFileDialog::getExistingDirectory(parent, tr("Import run folder"), start);
    } else {
        QStringList patterns;
        for (const QString& suffix : weightsSuffixes())
            patterns << QStringLiteral("*.") + suffix;
        path = QFileDialog::getOpenFileName(parent, tr("Import checkpoint"), start,
            tr("Weights files (%1);;All files (*)").arg(patterns.join(QLatin1Char(' '))));
    }
    if (!path.isEmpty())
        rememberFolder(path);
    return path;
}

void ImportDialog::setSource(const QString& path)
{
    if (m_importing)
        return;
    m_sourcePath = QDir::cleanPath(QFileInfo(path).absoluteFilePath());
    m_sourceEdit->setText(QDir::toNativeSeparators(m_sourcePath));
    m_sourceEdit->setToolTip(m_sourceEdit->text());
    setWindowTitle(tr("Import checkpoint — %1").arg(QFileInfo(m_sourcePath).fileName()));
    // The values asked for belong to the previous source.
    for (const auto& [key, field] : m_fields)
        m_form->removeRow(field->parentWidget()); // the row's container (field and hint)
    m_fields.clear();
    m_configFile->clear();
    m_setLine->clear();
    if (!m_outputEdited)
        m_output->setText(QDir::toNativeSeparators(defaultOutputPath(m_sourcePath)));
    clearPlanView();
    replan();
}

void ImportDialog::setOutputPath(const QString& path)
{
    m_output->setText(QDir::toNativeSeparators(path));
    m_outputEdited = true;
}

QString ImportDialog::outputPath() const
{
    return QDir::fromNativeSeparators(m_output->text().trimmed());
}

void ImportDialog::setConfigFile(const QString& path)
{
    m_configFile->setText(QDir::toNativeSeparators(path));
    m_configFile->setModified(false);
    replan();
}

QStringList ImportDialog::sets() const
{
    QStringList out;
    for (const auto& [key, field] : m_fields) {
        const QString value = fieldValue(key);
        if (!value.isEmpty())
            out << QStringLiteral("%1=%2").arg(key, value);
    }
    // The free line: "a.b=1 c=2", "--set a.b=1" or "--set=a.b=1".
    const QStringList tokens = m_setLine->text().split(QRegularExpression(QStringLiteral("\\s+")), Qt::SkipEmptyParts);
    for (QString token : tokens) {
        if (token == QLatin1String("--set"))
            continue;
        if (token.startsWith(QLatin1String("--set=")))
            token = token.mid(6);
        out << token;
    }
    return out;
}

bool ImportDialog::isBusy() const
{
    return m_runner && m_runner->isBusy();
}

void ImportDialog::updateButtons()
{
    const bool busy = isBusy();
    const QString out = outputPath();
    const bool exists = !out.isEmpty() && QFileInfo::exists(out);
    m_outputNote->setText(exists && !m_replace->isChecked()
            ? tr("%1 exists: tick Replace to overwrite it, or choose another file.").arg(QFileInfo(out).fileName())
            : QString());
    m_outputNote->setVisible(!m_outputNote->text().isEmpty());
    // Every value asked for must be given (a plan's missing keys all have a field by now).
    bool filled = true;
    for (const auto& [key, field] : m_fields)
        filled = filled && !fieldValue(key).isEmpty();
    m_import->setEnabled(!busy && m_planOk && filled && !out.isEmpty() && (!exists || m_replace->isChecked()));
    m_recheck->setEnabled(!m_importing && !m_sourcePath.isEmpty());
    m_output->setEnabled(!m_importing);
    m_replace->setEnabled(!m_importing);
    m_cancel->setText(m_importing ? tr("Cancel import") : tr("Close"));
}

void ImportDialog::reject()
{
    // Closing during an import cancels it and closes once the worker has stopped (never waits here).
    if (m_importing) {
        m_closeWhenDone = true;
        cancelImport();
        return;
    }
    QDialog::reject();
}

} // namespace icl::gui
