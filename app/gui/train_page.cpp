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
    m_steps = makeSpinBox(source, "stepsSpin", 0, 100000000, 0, 1000);
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
