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
#include "app/gui/training_job.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

namespace {

QString qs(const std::string& s)
{
    return QString::fromStdString(s);
}

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
            parts << QStringLiteral("%1 %2").arg(qs(key.substr(9)), formatLoss(summary.lastMetric(key)));
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
    m_fromPreset = new QRadioButton(tr("Preset"), source);
    m_fromFile = new QRadioButton(tr("Config file"), source);
    m_fromPreset->setChecked(true);
    m_preset = new QComboBox(source);
    m_preset->setObjectName(QStringLiteral("presetCombo"));
    m_preset->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_preset->setMinimumContentsLength(28);
    try {
        for (const icl::PresetInfo& p : icl::listPresets()) {
            m_preset->addItem(qs(p.name), qs(p.name));
            m_preset->setItemData(m_preset->count() - 1,
                QStringLiteral("%1\nReproduces: %2").arg(qs(p.description), qs(p.reproduces)), Qt::ToolTipRole);
        }
    } catch (const icl::Error& e) {
        QTimer::singleShot(
            0, this, [this, message = qs(e.what())] { Q_EMIT errorOccurred(tr("Presets unavailable"), message); });
    }
    const int defaultIndex = m_preset->findData(QString::fromLatin1(icl::kDefaultPreset));
    if (defaultIndex >= 0)
        m_preset->setCurrentIndex(defaultIndex);
    m_scale = new QComboBox(source);
    m_scale->setObjectName(QStringLiteral("scaleCombo"));
    m_scale->addItem(tr("quick (minutes on a CPU)"), QStringLiteral("quick"));
    m_scale->addItem(tr("paper (published settings, GPU)"), QStringLiteral("paper"));
    m_configFile = new QLineEdit(source);
    m_configFile->setPlaceholderText(tr("experiment config (JSON)"));
    m_browseConfig = new QPushButton(tr("Browse…"), source);
    m_output = new QLineEdit(source);
    m_output->setObjectName(QStringLiteral("outputPath"));
    m_output->setPlaceholderText(tr("runs/<preset>-<date>.h5 (default)"));
    m_browseOutput = new QPushButton(tr("Browse…"), source);
    m_steps = new QSpinBox(source);
    m_steps->setObjectName(QStringLiteral("stepsSpin"));
    m_steps->setRange(0, 100000000);
    m_steps->setSingleStep(1000);
    m_steps->setSpecialValueText(tr("from config"));
    m_steps->setToolTip(tr("Total optimisation steps (for Resume: the new total)"));
    m_device = new QComboBox(source);
    m_device->addItem(tr("from config"), QString());
    m_device->addItem(QStringLiteral("auto"), QStringLiteral("auto"));
    m_device->addItem(QStringLiteral("cpu"), QStringLiteral("cpu"));
    m_device->addItem(QStringLiteral("cuda"), QStringLiteral("cuda"));

    grid->addWidget(m_fromPreset, 0, 0);
    grid->addWidget(m_preset, 0, 1);
    grid->addWidget(new QLabel(tr("Scale"), source), 0, 2, Qt::AlignRight);
    grid->addWidget(m_scale, 0, 3);
    grid->addWidget(m_fromFile, 1, 0);
    grid->addWidget(m_configFile, 1, 1);
    grid->addWidget(m_browseConfig, 1, 2, 1, 2, Qt::AlignLeft);
    grid->addWidget(new QLabel(tr("Output file"), source), 2, 0);
    grid->addWidget(m_output, 2, 1);
    grid->addWidget(m_browseOutput, 2, 2, 1, 2, Qt::AlignLeft);
    auto* options = new QHBoxLayout;
    options->addWidget(new QLabel(tr("Steps"), source));
    options->addWidget(m_steps);
    options->addSpacing(16);
    options->addWidget(new QLabel(tr("Device"), source));
    options->addWidget(m_device);
    options->addStretch(1);
    grid->addLayout(options, 3, 1, 1, 3);
    grid->setColumnStretch(1, 1);

    // --- run controls ---
    m_start = new QPushButton(tr("Start"), this);
    m_start->setObjectName(QStringLiteral("startButton"));
    m_start->setToolTip(tr("Train a new model from the chosen config (F5)"));
    m_stop = new QPushButton(tr("Stop"), this);
    m_stop->setObjectName(QStringLiteral("stopButton"));
    m_stop->setToolTip(tr("Stop after the current step; the last checkpoint is saved (Esc)"));
    m_resume = new QPushButton(tr("Resume"), this);
    m_resume->setObjectName(QStringLiteral("resumeButton"));
    m_resume->setToolTip(tr("Continue the output file from its last checkpoint"));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("trainProgress"));
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_eta = new QLabel(this);
    m_eta->setObjectName(QStringLiteral("etaLabel"));
    m_eta->setMinimumWidth(
        m_eta->fontMetrics().horizontalAdvance(QStringLiteral("step 000000 / 000000 · 000.0 steps/s · ETA 00:00")));
    auto* controls = new QHBoxLayout;
    controls->addWidget(m_start);
    controls->addWidget(m_stop);
    controls->addWidget(m_resume);
    controls->addSpacing(12);
    controls->addWidget(m_progress, 1);
    controls->addWidget(m_eta);

    m_result = new QLabel(this);
    m_result->setObjectName(QStringLiteral("resultLabel"));
    m_result->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_result->setWordWrap(true);

    // --- live plot and checkpoint list ---
    m_plot = new widgets::PlotView(this);
    m_plot->setObjectName(QStringLiteral("trainLossPlot"));
    m_plot->setFigure(m_live.figure());
    m_checkpoints = new CheckpointTable(this);
    auto* checkpointBox = new QGroupBox(tr("Checkpoints"), this);
    auto* checkpointLayout = new QVBoxLayout(checkpointBox);
    checkpointLayout->setContentsMargins(4, 4, 4, 4);
    checkpointLayout->addWidget(m_checkpoints);
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(m_plot);
    splitter->addWidget(checkpointBox);
    splitter->setStretchFactor(0, 4);
    splitter->setStretchFactor(1, 1);
    splitter->setChildrenCollapsible(false);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(source);
    layout->addLayout(controls);
    layout->addWidget(m_result);
    layout->addWidget(splitter, 1);

    // --- behaviour ---
    auto sourceChanged = [this] {
        const bool preset = m_fromPreset->isChecked();
        m_preset->setEnabled(preset && !isRunning());
        m_scale->setEnabled(preset && !isRunning());
        m_configFile->setEnabled(!preset && !isRunning());
        m_browseConfig->setEnabled(!preset && !isRunning());
    };
    connect(m_fromPreset, &QRadioButton::toggled, this, sourceChanged);
    connect(m_browseConfig, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            this, tr("Experiment config"), m_configFile->text(), tr("JSON config (*.json);;All files (*)"));
        if (!path.isEmpty())
            setConfigFile(path);
    });
    connect(m_browseOutput, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Experiment file"), m_output->text(),
            tr("Experiment files (*.h5)"), nullptr, QFileDialog::DontConfirmOverwrite);
        if (!path.isEmpty())
            setOutputPath(path.endsWith(QStringLiteral(".h5")) ? path : path + QStringLiteral(".h5"));
    });
    connect(m_output, &QLineEdit::textChanged, this, &TrainPage::updateButtons);
    connect(m_start, &QPushButton::clicked, this, [this] { startTraining(); });
    connect(m_stop, &QPushButton::clicked, this, &TrainPage::stopTraining);
    connect(m_resume, &QPushButton::clicked, this, [this] { resumeTraining(); });
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
    const int index = m_preset->findData(name);
    if (index < 0) {
        Q_EMIT errorOccurred(tr("Unknown preset"), tr("There is no preset named \"%1\".").arg(name));
        return;
    }
    m_preset->setCurrentIndex(index);
    const int scaleIndex = m_scale->findData(scale);
    if (scaleIndex >= 0)
        m_scale->setCurrentIndex(scaleIndex);
    m_fromPreset->setChecked(true);
}

void TrainPage::setConfigFile(const QString& path)
{
    m_configFile->setText(path);
    m_fromFile->setChecked(true);
}

void TrainPage::setOutputPath(const QString& path)
{
    m_output->setText(path);
}

QString TrainPage::outputPath() const
{
    return m_output->text();
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

nlohmann::json TrainPage::resolveChosenConfig()
{
    icl::ConfigRequest request;
    if (m_fromPreset->isChecked()) {
        request.preset = m_preset->currentData().toString().toStdString();
        request.scale = m_scale->currentData().toString().toStdString();
        if (request.preset.empty())
            throw icl::Error("no preset chosen");
    } else {
        request.config_file = m_configFile->text().toStdString();
        if (request.config_file.empty())
            throw icl::Error("no config file chosen");
    }
    if (m_steps->value() > 0)
        request.steps = m_steps->value();
    const QString device = m_device->currentData().toString();
    if (!device.isEmpty())
        request.device = device.toStdString();
    return icl::resolveConfig(request);
}

bool TrainPage::startTraining(bool ask, bool overwrite)
{
    if (isRunning())
        return false;
    QString out = m_output->text().trimmed();
    if (out.isEmpty()) {
        const QString base = m_fromPreset->isChecked() ? m_preset->currentData().toString()
                                                       : QFileInfo(m_configFile->text()).completeBaseName();
        out = defaultOutputPath(base);
        m_output->setText(out);
    }
    bool force = overwrite;
    if (QFileInfo::exists(out) && !force) {
        if (!ask) {
            Q_EMIT errorOccurred(
                tr("Training not started"), tr("%1 already exists; choose another output file.").arg(out));
            return false;
        }
        const auto answer = QMessageBox::question(
            this, tr("Overwrite experiment?"), tr("%1 already exists. Replace it with a new run?").arg(out));
        if (answer != QMessageBox::Yes)
            return false;
        force = true;
    }
    nlohmann::json config;
    try {
        config = resolveChosenConfig();
    } catch (const icl::Error& e) {
        Q_EMIT errorOccurred(tr("Invalid config"), qs(e.what()));
        return false;
    }
    const QString dir = QFileInfo(out).absolutePath();
    if (!QDir().mkpath(dir)) {
        Q_EMIT errorOccurred(tr("Training not started"), tr("Cannot create the folder %1.").arg(dir));
        return false;
    }
    m_live.reset(out.toStdString(), config.dump());
    m_checkpoints->setRowCount(0);
    return launch(config, out, false, force);
}

bool TrainPage::resumeTraining()
{
    if (isRunning())
        return false;
    const QString out = m_output->text().trimmed();
    icl::RunSummary saved;
    nlohmann::json config;
    try {
        if (out.isEmpty())
            throw icl::Error("no experiment file to resume: choose the output file");
        saved = icl::readRunSummary(out.toStdString());
        config = nlohmann::json::parse(saved.config_json);
    } catch (const std::exception& e) {
        Q_EMIT errorOccurred(tr("Cannot resume"), qs(e.what()));
        return false;
    }
    m_live.resume(saved);
    m_checkpoints->showRun(saved);
    return launch(config, out, true, false);
}

bool TrainPage::launch(const nlohmann::json& config, const QString& out, bool resume, bool force)
{
    icl::TrainOptions options;
    options.out_path = out.toStdString();
    options.resume = resume;
    options.force = force;
    if (resume)
        options.steps = m_steps->value();
    m_runPath = out;
    m_plot->setFigure(m_live.figure());
    m_result->clear();
    m_progress->setRange(0, 0); // busy until the first report
    m_eta->setText(tr("preparing…"));
    if (!m_job->start(config, options))
        return false;
    m_redrawTimer->start();
    m_progress->setTextVisible(true);
    updateButtons();
    Q_EMIT trainingStarted();
    Q_EMIT progressChanged(-1, tr("Preparing %1").arg(QFileInfo(out).fileName()));
    return true;
}

void TrainPage::stopTraining()
{
    if (!isRunning())
        return;
    m_job->requestStop();
    m_eta->setText(tr("stopping…"));
    Q_EMIT statusMessage(tr("Stopping after the current step…"));
    updateButtons();
}

void TrainPage::drainProgress()
{
    const std::vector<icl::TrainProgress> reports = m_job->takeProgress();
    if (reports.empty())
        return;
    const size_t rowsBefore = m_live.rows();
    bool committed = false;
    for (const icl::TrainProgress& p : reports) {
        m_live.add(p);
        committed |= p.evaluated;
        if (p.checkpointed) {
            m_checkpoints->addCheckpoint(p.step, p.checkpoint_train_loss, p.wall_time_s);
            Q_EMIT checkpointSaved(p.step);
        }
    }
    if (committed)
        Q_EMIT metricsCommitted(m_runPath);
    const icl::TrainProgress& last = reports.back();
    QString text;
    int percent = -1;
    if (last.phase == icl::TrainProgress::Phase::Preparing) {
        m_progress->setRange(0, 0);
        text = last.message.empty() ? tr("preparing…") : qs(last.message);
    } else {
        m_progress->setRange(0, 100);
        percent = last.total_steps > 0 ? int(100 * last.step / last.total_steps) : 0;
        m_progress->setValue(percent);
        const int64_t done = last.step - last.start_step;
        const double rate = last.elapsed_s > 0 ? done / last.elapsed_s : 0.0;
        const double eta = rate > 0 ? (last.total_steps - last.step) / rate : NAN;
        text = tr("step %1 / %2 · %3 steps/s · ETA %4")
                   .arg(last.step)
                   .arg(last.total_steps)
                   .arg(rate, 0, 'f', 1)
                   .arg(formatDuration(eta));
        if (!last.message.empty())
            text += QStringLiteral(" · ") + qs(last.message);
    }
    if (!m_job->stopRequested())
        m_eta->setText(text);
    Q_EMIT progressChanged(percent, text);
    if (m_live.rows() != rowsBefore)
        m_plot->setFigure(m_live.figure());
}

void TrainPage::onJobFinished(bool ok, const QString& message)
{
    drainProgress();
    m_redrawTimer->stop();
    m_progress->setRange(0, 100);
    const icl::TrainResult& r = m_job->result();
    if (ok) {
        m_progress->setValue(r.stopped ? m_progress->value() : 100);
        QStringList parts;
        parts << (r.stopped ? tr("Stopped at step %1").arg(r.final_step) : tr("Finished at step %1").arg(r.final_step));
        parts << tr("device %1").arg(qs(r.device));
        parts << tr("eval loss %1").arg(formatLoss(r.eval_loss));
        for (const auto& [name, loss] : r.baselines)
            parts << QStringLiteral("%1 %2").arg(qs(name), formatLoss(loss));
        m_result->setText(parts.join(QStringLiteral(" · ")));
        m_eta->setText(r.stopped ? tr("stopped") : tr("done"));
        Q_EMIT statusMessage(parts.join(QStringLiteral(" · ")));
    } else {
        m_eta->setText(tr("failed"));
        m_result->setText(tr("Training failed: %1").arg(message));
        Q_EMIT errorOccurred(tr("Training failed"), message);
    }
    updateButtons();
    if (QFileInfo::exists(m_runPath))
        Q_EMIT experimentWritten(m_runPath);
    Q_EMIT trainingFinished(ok, m_runPath);
}

void TrainPage::showExperiment(const icl::RunSummary& summary)
{
    if (isRunning())
        return; // the live run keeps the plot
    try {
        m_plot->setFigure(icl::lossFigure(summary));
    } catch (const icl::Error& e) {
        icl::Figure empty = LiveLossCurves().figure();
        empty.title = e.what();
        m_plot->setFigure(empty);
    }
    m_checkpoints->showRun(summary);
    m_output->setText(qs(summary.path));
    if (summary.config && !summary.config->preset.empty() && m_preset->findData(qs(summary.config->preset)) >= 0)
        setPreset(qs(summary.config->preset), qs(summary.config->scale.empty() ? "quick" : summary.config->scale));
    m_result->setText(tr("%1: %2").arg(QFileInfo(qs(summary.path)).fileName(), finalMetricsText(summary)));
    m_progress->setRange(0, 100);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    m_eta->clear();
    updateButtons();
}

void TrainPage::selectCheckpoint(qint64 step) { m_checkpoints->selectStep(step); }

void TrainPage::updateButtons()
{
    const bool running = isRunning();
    m_start->setEnabled(!running);
    m_stop->setEnabled(running && !m_job->stopRequested());
    m_resume->setEnabled(!running && QFileInfo::exists(m_output->text().trimmed()));
    const bool preset = m_fromPreset->isChecked();
    m_fromPreset->setEnabled(!running);
    m_fromFile->setEnabled(!running);
    m_preset->setEnabled(!running && preset);
    m_scale->setEnabled(!running && preset);
    m_configFile->setEnabled(!running && !preset);
    m_browseConfig->setEnabled(!running && !preset);
    m_output->setEnabled(!running);
    m_browseOutput->setEnabled(!running);
    m_steps->setEnabled(!running);
    m_device->setEnabled(!running);
}

} // namespace icl::gui
