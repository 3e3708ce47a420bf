#include "app/gui/train_page.h"

#include <cmath>
#include <set>

#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/checkpoint_table.h"
#include "app/gui/page_widgets.h"
#include "app/gui/training_job.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

namespace {

/// "eval loss 0.0123 · least_squares 0.0001 · ..." from a summary's last metric row.
QString finalMetricsText(const icl::RunSummary& summary)
{
    QStringList parts;
    const double step = summary.lastMetric("step");
    if (!std::isnan(step))
        parts << QObject::tr("step %1").arg(qint64(step));
    parts << QObject::tr("train loss %1").arg(formatLoss(summary.lastMetric("train_loss")));
    parts << QObject::tr("eval loss %1").arg(formatLoss(summary.lastMetric("eval_loss")));
    for (const auto& [key, values] : summary.metrics)
        if (key.rfind("baseline/", 0) == 0)
            parts << QStringLiteral("%1 %2").arg(shownText(key.substr(9)), formatLoss(summary.lastMetric(key)));
    return parts.join(QStringLiteral(" · "));
}

} // namespace

TrainPage::TrainPage(QWidget* parent)
    : QWidget(parent)
    , m_job(new TrainingJob(this))
    , m_redrawTimer(new QTimer(this))
{
    // --- config chooser ---
    auto* source = new QGroupBox(tr("Experiment"), this);
    auto* grid = new QGridLayout(source);
    m_config.fromPreset = new QRadioButton(tr("Preset"), source);
    m_config.fromFile = new QRadioButton(tr("Config file"), source);
    m_config.fromRun = new QRadioButton(tr("Open run"), source);
    m_config.fromRun->setObjectName(QStringLiteral("fromRunRadio"));
    m_config.fromRun->setToolTip(tr("Train a new model from the open run's config"));
    m_config.runName = new QLabel(source);
    m_config.runName->setObjectName(QStringLiteral("runConfigLabel"));
    m_config.fromPreset->setChecked(true);
    m_config.preset = new QComboBox(source);
    m_config.preset->setObjectName(QStringLiteral("presetCombo"));
    m_config.preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_config.preset->setMinimumContentsLength(28);
    try {
        for (const icl::PresetInfo& p : icl::listPresets()) {
            m_config.preset->addItem(qs(p.name), qs(p.name));
            m_config.preset->setItemData(m_config.preset->count() - 1,
                QStringLiteral("%1\nReproduces: %2").arg(qs(p.description), qs(p.reproduces)), Qt::ToolTipRole);
        }
    } catch (const icl::Error& e) {
        QTimer::singleShot(
            0, this, [this, message = qs(e.what())] { Q_EMIT errorOccurred(tr("Presets unavailable"), message); });
    }
    const int defaultIndex = m_config.preset->findData(QString::fromLatin1(icl::kDefaultPreset));
    if (defaultIndex >= 0)
        m_config.preset->setCurrentIndex(defaultIndex);
    m_config.scale = new QComboBox(source);
    m_config.scale->setObjectName(QStringLiteral("scaleCombo"));
    m_config.scale->addItem(tr("quick (minutes on a CPU)"), QStringLiteral("quick"));
    m_config.scale->addItem(tr("paper (published settings, GPU)"), QStringLiteral("paper"));
    m_config.file = makeFileField(source, tr("experiment config (JSON)"), tr("Browse…"));
    m_config.output = makeFileField(source, tr("runs/<preset>-<date>.h5 (default)"), tr("Browse…"));
    m_config.output.path->setObjectName(QStringLiteral("outputPath"));
    m_config.file.browse->setObjectName(QStringLiteral("configBrowse"));
    m_config.steps = makeSpinBox(source, "stepsSpin", 0, 100000000, 0, 1000);
    m_config.steps->setSpecialValueText(tr("from config"));
    m_config.steps->setToolTip(tr("Total optimisation steps (for Resume: the new total)"));
    m_config.device = new QComboBox(source);
    m_config.device->addItem(tr("from config"), QString());
    m_config.device->addItem(QStringLiteral("auto"), QStringLiteral("auto"));
    m_config.device->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
    m_config.device->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));

    grid->addWidget(m_config.fromPreset, 0, 0);
    grid->addWidget(m_config.preset, 0, 1);
    grid->addWidget(new QLabel(tr("Scale"), source), 0, 2, Qt::AlignRight);
    grid->addWidget(m_config.scale, 0, 3);
    grid->addWidget(m_config.fromFile, 1, 0);
    grid->addWidget(m_config.file.path, 1, 1);
    grid->addWidget(m_config.file.browse, 1, 2, 1, 2, Qt::AlignLeft);
    grid->addWidget(m_config.fromRun, 2, 0);
    grid->addWidget(m_config.runName, 2, 1, 1, 3);
    m_config.fromRun->hide(); // until a run is open
    m_config.runName->hide();
    grid->addWidget(new QLabel(tr("Output file"), source), 3, 0);
    grid->addWidget(m_config.output.path, 3, 1);
    grid->addWidget(m_config.output.browse, 3, 2, 1, 2, Qt::AlignLeft);
    auto* options = new QHBoxLayout;
    options->addWidget(new QLabel(tr("Steps"), source));
    options->addWidget(m_config.steps);
    options->addSpacing(16);
    options->addWidget(new QLabel(tr("Device"), source));
    options->addWidget(m_config.device);
    options->addStretch(1);
    grid->addLayout(options, 4, 1, 1, 3);
    grid->setColumnStretch(1, 1);

    // --- run controls ---
    m_run.start = makePushButton(this, "startButton", tr("Start"), tr("Train a new model from the chosen config (F5)"));
    m_run.stop = makePushButton(
        this, "stopButton", tr("Stop"), tr("Stop after the current step; the last checkpoint is saved (Esc)"));
    m_run.resume
        = makePushButton(this, "resumeButton", tr("Resume"), tr("Continue the open run from its last checkpoint"));
    m_run.progress = new QProgressBar(this);
    m_run.progress->setObjectName(QStringLiteral("trainProgress"));
    m_run.progress->setRange(0, 100);
    m_run.progress->setValue(0);
    m_run.progress->setTextVisible(false);
    m_run.eta = new QLabel(this);
    m_run.eta->setObjectName(QStringLiteral("etaLabel"));
    m_run.eta->setMinimumWidth(
        m_run.eta->fontMetrics().horizontalAdvance(QStringLiteral("step 000000 / 000000 · 000.0 steps/s · ETA 00:00")));
    auto* controls = new QHBoxLayout;
    controls->addWidget(m_run.start);
    controls->addWidget(m_run.stop);
    controls->addWidget(m_run.resume);
    controls->addSpacing(12);
    controls->addWidget(m_run.progress, 1);
    controls->addWidget(m_run.eta);

    m_run.result = new QLabel(this);
    m_run.result->setObjectName(QStringLiteral("resultLabel"));
    m_run.result->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_run.result->setWordWrap(true);

    // --- live plot and checkpoint list ---
    m_plot = new widgets::PlotView(this);
    m_plot->setObjectName(QStringLiteral("trainLossPlot"));
    m_plot->setFigure(m_live.figure());
    m_checkpoints = new CheckpointTable(this);
    auto* checkpointBox = makeGroupBox(tr("Checkpoints"), this, m_checkpoints);
    auto* splitter = makeSplitter(Qt::Horizontal, this, m_plot, 4, checkpointBox, 1);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(source);
    layout->addLayout(controls);
    layout->addWidget(m_run.result);
    layout->addWidget(splitter, 1);

    // --- behaviour ---
    auto sourceChanged = [this] {
        const bool preset = m_config.fromPreset->isChecked();
        m_config.preset->setEnabled(preset && !isRunning());
        m_config.scale->setEnabled(preset && !isRunning());
        m_config.file.setEnabled(m_config.fromFile->isChecked() && !isRunning());
    };
    connect(m_config.fromPreset, &QRadioButton::toggled, this, sourceChanged);
    connect(m_config.fromFile, &QRadioButton::toggled, this, sourceChanged);
    connect(m_config.file.browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Experiment config"), inExperimentFolder(m_config.file.path->text()), tr("JSON config (*.json);;All files (*)"));
        if (!path.isEmpty())
            setConfigFile(path);
    });
    connect(m_config.output.browse, &QPushButton::clicked, this, [this] {
        const QString path = askExperimentFileToWrite(this, tr("Experiment file"), m_config.output.path->text(), false);
        if (!path.isEmpty())
            setOutputPath(path);
    });
    connect(m_config.output.path, &QLineEdit::textChanged, this, &TrainPage::updateButtons);
    connect(m_run.start, &QPushButton::clicked, this, [this] { startTraining(); });
    connect(m_run.stop, &QPushButton::clicked, this, &TrainPage::stopTraining);
    connect(m_run.resume, &QPushButton::clicked, this, [this] { resumeTraining(); });
    connect(m_job, &TrainingJob::finished, this, &TrainPage::onJobFinished);
    m_redrawTimer->setInterval(40); // coalesces progress reports: never one redraw per step
    connect(m_redrawTimer, &QTimer::timeout, this, &TrainPage::drainProgress);

    sourceChanged();
    updateButtons();
}

TrainPage::~TrainPage() = default;

QTableWidget* TrainPage::checkpointTable() const { return m_checkpoints; }

void TrainPage::setPreset(const QString& name, const QString& scale)
{
    const int index = m_config.preset->findData(name);
    if (index < 0) {
        Q_EMIT errorOccurred(tr("Unknown preset"), tr("There is no preset named \"%1\".").arg(name));
        return;
    }
    m_config.preset->setCurrentIndex(index);
    const int scaleIndex = m_config.scale->findData(scale);
    if (scaleIndex >= 0)
        m_config.scale->setCurrentIndex(scaleIndex);
    m_config.fromPreset->setChecked(true);
}

void TrainPage::setConfigFile(const QString& path)
{
    m_config.file.path->setText(path);
    m_config.fromFile->setChecked(true);
}

void TrainPage::setOutputPath(const QString& path)
{
    m_config.output.path->setText(path);
}

QString TrainPage::outputPath() const
{
    return m_config.output.path->text();
}

bool TrainPage::isRunning() const
{
    return m_job->isRunning();
}

QString TrainPage::defaultOutputPath(const QString& preset)
{
    const QString stamp = QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss"));
    return QDir::current().filePath(QStringLiteral("runs/%1-%2.h5").arg(preset.isEmpty() ? "run" : preset, stamp));
}

QString TrainPage::proposedOutputPath(const QString& run)
{
    const QFileInfo info(run);
    const QDir dir = info.absoluteDir();
    QString stem = info.completeBaseName();
    // A proposal made from a proposal counts on ("run-2" → "run-3", not "run-2-2").
    const int dash = stem.lastIndexOf(QLatin1Char('-'));
    bool numbered = false;
    if (dash > 0)
        stem.mid(dash + 1).toInt(&numbered);
    const QString base = numbered ? stem.left(dash) : stem;
    for (int n = 2;; ++n) {
        const QString candidate = dir.filePath(QStringLiteral("%1-%2.h5").arg(base).arg(n));
        if (!QFileInfo::exists(candidate) && QFileInfo(candidate).absoluteFilePath() != info.absoluteFilePath())
            return candidate;
    }
}

QString TrainPage::resumePath() const
{
    return m_openRun.isEmpty() ? m_config.output.path->text().trimmed() : m_openRun;
}

nlohmann::json TrainPage::chosenConfig() const
{
    const QString device = m_config.device->currentData().toString();
    if (m_config.fromRun->isChecked()) {
        if (!m_openConfig)
            throw icl::Error("no open run to take the config from");
        icl::ExperimentConfig config = *m_openConfig;
        if (m_config.steps->value() > 0)
            config.training.steps = m_config.steps->value();
        if (!device.isEmpty())
            config.device = device.toStdString();
        return icl::toJson(icl::parseConfig(icl::toJson(config))); // validated like any other source
    }
    icl::ConfigRequest request;
    if (m_config.fromPreset->isChecked()) {
        request.preset = m_config.preset->currentData().toString().toStdString();
        request.scale = m_config.scale->currentData().toString().toStdString();
        if (request.preset.empty())
            throw icl::Error("no preset chosen");
    } else {
        request.config_file = m_config.file.path->text().toStdString();
        if (request.config_file.empty())
            throw icl::Error("no config file chosen");
    }
    if (m_config.steps->value() > 0)
        request.steps = m_config.steps->value();
    if (!device.isEmpty())
        request.device = device.toStdString();
    return icl::resolveConfig(request);
}

void TrainPage::showExperiment(const icl::RunSummary& summary)
{
    if (isRunning())
        return; // the live run keeps the plot
    try {
        m_plot->setFigure(icl::lossFigure(summary));
    } catch (const icl::Error& e) {
        icl::Figure empty = LiveLossCurves().figure();
        empty.title = icl::escapeForDisplay(e.what());
        m_plot->setFigure(empty);
    }
    m_checkpoints->showRun(summary);
    m_openRun = qs(summary.path);
    m_openConfig = summary.config;
    // A new run goes beside the open one, never over it; the default source is the open run's own config.
    m_config.output.path->setText(proposedOutputPath(m_openRun));
    if (summary.config && !summary.config->preset.empty() && m_config.preset->findData(qs(summary.config->preset)) >= 0)
        setPreset(qs(summary.config->preset), qs(summary.config->scale.empty() ? "quick" : summary.config->scale));
    const QString name = shownText(QFileInfo(m_openRun).fileName());
    m_config.fromRun->setVisible(bool(m_openConfig));
    m_config.runName->setVisible(bool(m_openConfig));
    if (m_openConfig) {
        const icl::ExperimentConfig& c = *m_openConfig;
        m_config.runName->setText(tr("%1 — its config (%2, %3, %4 steps)%5")
                                      .arg(name, shownText(c.preset.empty() ? std::string("no preset") : c.preset),
                                          shownText(c.task.kind))
                                      .arg(c.training.steps)
                                      .arg(summary.import_json.empty() ? QString() : tr(" (imported; trains anew)")));
        m_config.runName->setToolTip(shownText(summary.path));
        m_config.fromRun->setChecked(true);
    }
    m_run.result->setText(tr("%1: %2").arg(shownText(QFileInfo(qs(summary.path)).fileName()), finalMetricsText(summary)));
    m_run.progress->setRange(0, 100);
    m_run.progress->setValue(0);
    m_run.progress->setTextVisible(false);
    m_run.eta->clear();
    updateButtons();
}

void TrainPage::selectCheckpoint(qint64 step) { m_checkpoints->selectStep(step); }

void TrainPage::updateButtons()
{
    const bool running = isRunning();
    m_run.start->setEnabled(!running);
    m_run.stop->setEnabled(running && !m_job->stopRequested());
    const QString resume = resumePath();
    m_run.resume->setEnabled(!running && QFileInfo::exists(resume));
    m_run.resume->setToolTip(resume.isEmpty() ? tr("Continue the open run from its last checkpoint")
                                              : tr("Continue %1 from its last checkpoint").arg(shownText(resume)));
    const bool preset = m_config.fromPreset->isChecked();
    m_config.fromPreset->setEnabled(!running);
    m_config.fromFile->setEnabled(!running);
    m_config.fromRun->setEnabled(!running);
    m_config.preset->setEnabled(!running && preset);
    m_config.scale->setEnabled(!running && preset);
    m_config.file.setEnabled(!running && m_config.fromFile->isChecked());
    m_config.output.setEnabled(!running);
    m_config.steps->setEnabled(!running);
    m_config.device->setEnabled(!running);
}

} // namespace icl::gui
