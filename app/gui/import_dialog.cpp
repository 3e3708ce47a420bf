#include "app/gui/import_dialog.h"

#include <algorithm>

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

namespace icl::gui {

namespace {

const char* kLastFolderKey = "import/lastFolder";
constexpr int kPlanJob = 1;
constexpr int kImportJob = 2;

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

/// Stem of the experiment file a source becomes: the folder's name, or the file name without its suffix.
QString sourceStem(const QFileInfo& info)
{
    const QString stem = info.isDir() ? info.fileName() : info.completeBaseName();
    return stem.isEmpty() ? QStringLiteral("imported") : stem;
}

void rememberFolder(const QString& source)
{
    const QFileInfo info(source);
    // A run folder is remembered by its parent: the next dialog starts beside it.
    QSettings().setValue(kLastFolderKey, info.absolutePath());
}

QLabel* grayLabel(const QString& text, QWidget* parent)
{
    auto* label = new QLabel(text, parent);
    label->setStyleSheet(QStringLiteral("color: gray;"));
    return label;
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
    auto* sourceRow = new QHBoxLayout;
    sourceRow->addWidget(new QLabel(tr("Source"), this));
    sourceRow->addWidget(m_sourceEdit, 1);
    sourceRow->addWidget(pickFile);
    sourceRow->addWidget(pickFolder);

    // --- what was found ---
    m_sources->setObjectName(QStringLiteral("importSources"));
    m_sources->setHorizontalHeaderLabels({ tr("File"), tr("Format"), tr("Step"), tr("SHA-256") });
    m_sources->verticalHeader()->setVisible(false);
    m_sources->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_sources->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_sources->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    for (int c = 1; c < 4; ++c)
        m_sources->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_sources->verticalHeader()->setDefaultSectionSize(m_sources->fontMetrics().height() + 8);
    m_sources->setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
    m_inferred->setObjectName(QStringLiteral("importInferred"));
    m_inferred->setWordWrap(true);
    m_inferred->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont bold = m_inferred->font();
    bold.setBold(true);
    m_inferred->setFont(bold);
    m_layout->setObjectName(QStringLiteral("importLayout"));
    m_prefixes->setObjectName(QStringLiteral("importPrefixes"));
    m_prefixes->setWordWrap(true);
    m_warnings->setObjectName(QStringLiteral("importWarnings"));
    m_warnings->setWordWrap(true);
    m_warnings->setStyleSheet(QStringLiteral("color: #b06000;"));
    m_warnings->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_mapping->setObjectName(QStringLiteral("importMapping"));
    m_mapping->setHorizontalHeaderLabels({ tr("Source tensor"), tr("Workbench parameter") });
    m_mapping->verticalHeader()->setVisible(false);
    m_mapping->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_mapping->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_mapping->setWordWrap(false);
    m_mapping->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_mapping->verticalHeader()->setDefaultSectionSize(m_mapping->fontMetrics().height() + 6);
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
    auto* configRow = new QHBoxLayout;
    configRow->addWidget(m_configFile, 1);
    configRow->addWidget(pickConfig);
    m_setLine->setObjectName(QStringLiteral("importSets"));
    m_setLine->setPlaceholderText(tr("key=value … (e.g. eval.n_prompts=512), applied last"));
    m_setLine->setToolTip(tr("Overrides of the resolved config, like icl-cli import --set key=value"));
    m_recheck->setObjectName(QStringLiteral("recheckButton"));
    m_recheck->setToolTip(tr("Plan the import again with these values"));
    auto* setRow = new QHBoxLayout;
    setRow->addWidget(m_setLine, 1);
    setRow->addWidget(m_recheck);
    // One form: the values asked for (inserted at the top), then the config file and the overrides.
    m_form->addRow(tr("Config file"), configRow);
    m_form->addRow(tr("--set"), setRow);
    auto* configLayout = new QVBoxLayout(config);
    configLayout->addWidget(m_noMissing);
    configLayout->addLayout(m_form);

    m_errorLabel->setObjectName(QStringLiteral("importError"));
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setStyleSheet(QStringLiteral("color: #c00000;"));
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorLabel->setVisible(false);

    // --- output ---
    m_output->setObjectName(QStringLiteral("importOutput"));
    auto* pickOutput = new QPushButton(tr("Browse…"), this);
    m_replace->setObjectName(QStringLiteral("importReplace"));
    m_replace->setToolTip(tr("Replace the experiment file if it exists"));
    auto* outputRow = new QHBoxLayout;
    outputRow->addWidget(new QLabel(tr("Output"), this));
    outputRow->addWidget(m_output, 1);
    outputRow->addWidget(pickOutput);
    outputRow->addWidget(m_replace);
    m_outputNote->setStyleSheet(QStringLiteral("color: #b06000;"));
    m_outputNote->setVisible(false);

    // --- progress and buttons ---
    m_progress->setObjectName(QStringLiteral("importProgress"));
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_progress->setTextVisible(false);
    m_status->setObjectName(QStringLiteral("importStatus"));
    m_status->setWordWrap(true);
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
    connect(pickFile, &QPushButton::clicked, this, [this] {
        const QString path = browseForSource(this, false);
        if (!path.isEmpty())
            setSource(path);
    });
    connect(pickFolder, &QPushButton::clicked, this, [this] {
        const QString path = browseForSource(this, true);
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
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Experiment file"), outputPath(), tr("Experiment files (*.h5)"));
        if (path.isEmpty())
            return;
        setOutputPath(path.endsWith(QStringLiteral(".h5")) ? path : path + QStringLiteral(".h5"));
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

QWidget* ImportDialog::missingField(const QString& key) const
{
    for (const auto& [k, field] : m_fields)
        if (k == key)
            return field;
    return nullptr;
}

QString ImportDialog::fieldValue(const QString& key) const
{
    QWidget* field = missingField(key);
    if (auto* spin = qobject_cast<QSpinBox*>(field))
        return spin->value() > spin->minimum() ? QString::number(spin->value()) : QString();
    if (auto* combo = qobject_cast<QComboBox*>(field))
        return combo->currentData().toString();
    if (auto* line = qobject_cast<QLineEdit*>(field))
        return line->text().trimmed();
    return {};
}

void ImportDialog::addMissingFields(const std::vector<std::string>& missing)
{
    for (const std::string& k : missing) {
        const QString key = qs(k);
        if (missingField(key))
            continue;
        QWidget* field = nullptr;
        QString hint;
        const QString required = tr("required");
        if (key == QLatin1String("model.n_heads") || key == QLatin1String("task.n_context")
            || key == QLatin1String("task.d")) {
            auto* spin = new QSpinBox(this);
            spin->setRange(0, key == QLatin1String("model.n_heads") ? 4096 : 1000000);
            spin->setSpecialValueText(required); // 0: not given yet
            spin->setMinimumWidth(120);
            if (key == QLatin1String("model.n_heads"))
                hint = tr("attention heads per layer; must divide d_model (the weights do not say)");
            else if (key == QLatin1String("task.n_context"))
                hint = tr("in-context examples per prompt");
            else
                hint = tr("input dimension d of the regression task");
            connect(spin, &QSpinBox::valueChanged, this, [this] {
                updateButtons();
                m_replanTimer->start();
            });
            field = spin;
        } else if (key == QLatin1String("task.kind")) {
            auto* combo = new QComboBox(this);
            combo->addItem(tr("choose…"), QString());
            for (const char* kind : { "linear_regression", "sparse_linear_regression", "noisy_linear_regression" })
                combo->addItem(QString::fromLatin1(kind), QString::fromLatin1(kind));
            hint = tr("the regression task the model was trained on");
            connect(combo, &QComboBox::currentIndexChanged, this, [this] {
                updateButtons();
                m_replanTimer->start();
            });
            field = combo;
        } else {
            auto* line = new QLineEdit(this);
            line->setPlaceholderText(required);
            line->setMinimumWidth(240);
            hint = tr("a number, true / false or a string");
            connect(line, &QLineEdit::textChanged, this, &ImportDialog::updateButtons);
            connect(line, &QLineEdit::editingFinished, this, [this, line] {
                if (line->isModified()) {
                    line->setModified(false);
                    replan();
                }
            });
            field = line;
        }
        field->setObjectName(QStringLiteral("missing:%1").arg(key));
        field->setToolTip(hint);
        auto* row = new QWidget(this);
        auto* rowLayout = new QHBoxLayout(row);
        rowLayout->setContentsMargins(0, 0, 0, 0);
        field->setParent(row);
        rowLayout->addWidget(field);
        rowLayout->addWidget(grayLabel(hint, row), 1);
        auto* label = new QLabel(key, this);
        QFont bold = label->font();
        bold.setBold(true);
        label->setFont(bold);
        label->setToolTip(tr("No file gives %1").arg(key));
        m_form->insertRow(int(m_fields.size()), label, row);
        m_fields.emplace_back(key, field);
    }
    m_noMissing->setVisible(m_fields.empty());
}

icl::ImportRequest ImportDialog::request() const
{
    icl::ImportRequest request;
    request.source = m_sourcePath.toStdString();
    request.config_file = QDir::fromNativeSeparators(m_configFile->text().trimmed()).toStdString();
    for (const QString& s : sets())
        request.sets.push_back(s.toStdString());
    request.out_path = outputPath().toStdString();
    request.force = m_replace->isChecked();
    return request;
}

void ImportDialog::replan()
{
    m_replanTimer->stop();
    if (m_sourcePath.isEmpty() || m_importing)
        return;
    const icl::ImportRequest request = this->request();
    const uint64_t serial = ++m_planSerial;
    m_planOk = false;
    m_status->setText(tr("Reading %1…").arg(QFileInfo(m_sourcePath).fileName()));
    m_runner->enqueue(
        kPlanJob, tr("Planning the import"),
        [this, request, serial]() -> AnalysisRunner::Continuation {
            // Worker thread: only the copied request is used here.
            auto plan = std::make_shared<icl::ImportPlan>(icl::planImport(request));
            return [this, plan, serial] {
                if (serial == m_planSerial)
                    showPlan(*plan);
            };
        },
        [this, serial](const QString& message) {
            if (serial == m_planSerial)
                showPlanError(message);
        });
    updateButtons();
}

void ImportDialog::fitSourcesHeight()
{
    // As tall as its rows (one to five; more scroll), so that the mapping table gets the room.
    const int rows = std::clamp(m_sources->rowCount(), 1, 5);
    m_sources->setFixedHeight(m_sources->horizontalHeader()->sizeHint().height()
        + rows * m_sources->verticalHeader()->defaultSectionSize() + 2 * m_sources->frameWidth());
}

void ImportDialog::clearPlanView()
{
    m_sources->setRowCount(0);
    fitSourcesHeight();
    m_mapping->setRowCount(0);
    m_dropped->clear();
    m_inferred->setText(QStringLiteral("–"));
    m_layout->setText(QStringLiteral("–"));
    m_prefixes->setText(QStringLiteral("–"));
    m_warnings->clear();
    m_warnings->setVisible(false);
    m_tabs->setTabText(0, tr("Key mapping"));
    m_tabs->setTabText(1, tr("Dropped"));
    m_noMissing->setVisible(false); // said only of a plan
}

void ImportDialog::showPlan(const icl::ImportPlan& plan)
{
    m_plan = plan;
    m_planOk = true;
    setError({});

    m_sources->setRowCount(int(plan.sources.size()));
    for (int r = 0; r < int(plan.sources.size()); ++r) {
        const icl::ImportSource& s = plan.sources[size_t(r)];
        auto* file = new QTableWidgetItem(QFileInfo(qs(s.path)).fileName());
        file->setToolTip(QDir::toNativeSeparators(qs(s.path)));
        auto* step = new QTableWidgetItem(QString::number(s.step));
        step->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        const QString sha = qs(s.sha256);
        auto* digest = new QTableWidgetItem(sha.left(12) + (sha.size() > 12 ? QStringLiteral("…") : QString()));
        digest->setToolTip(sha);
        digest->setFont(QFont(QStringLiteral("monospace")));
        m_sources->setItem(r, 0, file);
        m_sources->setItem(r, 1, new QTableWidgetItem(qs(s.format)));
        m_sources->setItem(r, 2, step);
        m_sources->setItem(r, 3, digest);
    }
    fitSourcesHeight();
    m_inferred->setText(plan.inferred.empty() ? QStringLiteral("–") : qs(plan.inferred));
    m_layout->setText(tr("%1 names → workbench %2").arg(qs(plan.layout), qs(plan.model_kind)));
    QStringList prefixes;
    for (const std::string& p : plan.prefixes_removed)
        prefixes << QStringLiteral("\"%1\"").arg(qs(p));
    m_prefixes->setText(prefixes.isEmpty() ? tr("none") : prefixes.join(QStringLiteral(", ")));
    QStringList warnings;
    for (const std::string& w : plan.warnings)
        warnings << QStringLiteral("⚠ ") + qs(w);
    m_warnings->setText(warnings.join(QLatin1Char('\n')));
    m_warnings->setVisible(!warnings.isEmpty());

    m_mapping->setRowCount(int(plan.mapping.size()));
    for (int r = 0; r < int(plan.mapping.size()); ++r) {
        const auto& [from, to] = plan.mapping[size_t(r)];
        auto* source = new QTableWidgetItem(qs(from));
        source->setToolTip(qs(from));
        auto* target = new QTableWidgetItem(qs(to));
        target->setToolTip(qs(to));
        m_mapping->setItem(r, 0, source);
        m_mapping->setItem(r, 1, target);
    }
    m_dropped->clear();
    for (const std::string& d : plan.dropped)
        m_dropped->addItem(qs(d));
    m_tabs->setTabText(0, tr("Key mapping (%1)").arg(plan.mapping.size()));
    m_tabs->setTabText(1, tr("Dropped (%1)").arg(plan.dropped.size()));

    addMissingFields(plan.missing);
    if (!plan.missing.empty()) {
        QStringList keys;
        for (const std::string& k : plan.missing)
            keys << qs(k);
        m_status->setText(tr("No file gives %1: fill in the fields marked required.").arg(keys.join(QStringLiteral(", "))));
    } else {
        m_status->setText(tr("Ready to import %n checkpoint(s).", nullptr, int(plan.sources.size())));
    }
    updateButtons();
    Q_EMIT planFinished(true, QString());
}

void ImportDialog::showPlanError(const QString& message)
{
    m_planOk = false;
    clearPlanView();
    setError(message);
    m_status->setText(tr("Cannot import this source as it is."));
    updateButtons();
    Q_EMIT planFinished(false, message);
}

void ImportDialog::setError(const QString& message)
{
    m_error = message;
    // icl::Error messages are one line; anything else (e.g. a LibTorch error with its backtrace) shows its
    // first line, the whole text in the tooltip.
    const QString firstLine = message.section(QLatin1Char('\n'), 0, 0);
    m_errorLabel->setText(firstLine);
    m_errorLabel->setToolTip(firstLine == message ? QString() : message);
    m_errorLabel->setVisible(!message.isEmpty());
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

void ImportDialog::startImport()
{
    if (isBusy() || !m_planOk || !m_import->isEnabled())
        return;
    const icl::ImportRequest request = this->request();
    const QString out = outputPath();
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_cancelFlag = cancelFlag;
    m_importing = true;
    setError({});
    m_progress->setRange(0, 0); // busy until the first report
    m_progress->setTextVisible(true);
    m_status->setText(tr("Importing into %1…").arg(QFileInfo(out).fileName()));
    m_runner->enqueue(
        kImportJob, tr("Importing"),
        [this, request, cancelFlag, out]() -> AnalysisRunner::Continuation {
            // Worker thread: progress goes to the GUI thread as queued calls; the dialog's destructor joins
            // this thread before the dialog goes away.
            const icl::ImportCallback callback
                = [this, cancelFlag](int64_t done, int64_t total, const std::string& message) {
                      const QString text = QString::fromStdString(message);
                      QMetaObject::invokeMethod(
                          this, [this, done, total, text] { onImportProgress(done, total, text); },
                          Qt::QueuedConnection);
                      return !cancelFlag->load();
                  };
            auto result = std::make_shared<icl::ImportResult>(icl::importWeights(request, callback));
            return [this, result, out] { finishImport(*result, out); };
        },
        [this](const QString& message) { failImport(message); });
    updateButtons();
}

void ImportDialog::cancelImport()
{
    if (!m_importing || !m_cancelFlag)
        return;
    m_cancelFlag->store(true);
    m_status->setText(tr("Cancelling…"));
    m_cancel->setEnabled(false);
}

void ImportDialog::onImportProgress(qint64 done, qint64 total, const QString& message)
{
    if (!m_importing)
        return;
    if (total > 0) {
        m_progress->setRange(0, int(std::min<qint64>(total, 1 << 30)));
        m_progress->setValue(int(std::min(done, total)));
    }
    if (!m_cancelFlag || !m_cancelFlag->load())
        m_status->setText(message.isEmpty() ? tr("Checkpoint %1 of %2").arg(done).arg(total) : message);
}

void ImportDialog::finishImport(const icl::ImportResult& result, const QString& outPath)
{
    m_importing = false;
    m_cancelFlag.reset();
    m_cancel->setEnabled(true);
    if (result.cancelled) {
        m_progress->setRange(0, 1);
        m_progress->setValue(0);
        const QString message = tr("Import cancelled: nothing was written.");
        m_status->setText(message);
        updateButtons();
        Q_EMIT importFinished(false, message);
        if (m_closeWhenDone)
            QDialog::reject();
        return;
    }
    m_progress->setRange(0, 1);
    m_progress->setValue(1);
    rememberFolder(m_sourcePath);
    const QString message = tr("Imported %n checkpoint(s) into %1 (eval loss %2).", nullptr, int(result.steps.size()))
                                .arg(QDir::toNativeSeparators(outPath))
                                .arg(result.eval_loss, 0, 'g', 4);
    m_status->setText(message);
    updateButtons();
    Q_EMIT importFinished(true, message);
    Q_EMIT imported(outPath);
    accept();
}

void ImportDialog::failImport(const QString& message)
{
    m_importing = false;
    m_cancelFlag.reset();
    m_cancel->setEnabled(true);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    setError(message);
    m_status->setText(tr("Import failed: nothing was written."));
    updateButtons();
    Q_EMIT importFinished(false, message);
    if (m_closeWhenDone)
        QDialog::reject();
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
