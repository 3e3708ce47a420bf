// TrainPage's training runs: starting a new run or resuming one (TrainingJob on its thread), stopping it, and the
// live loss curves and progress while it trains.
#include "app/gui/train_page.h"

#include <algorithm>
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
#include <QInputDialog>
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
#include "app/gui/shown_text.h"
#include "app/gui/training_job.h"
#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

bool TrainPage::startTraining(bool ask, bool overwrite)
{
    if (isRunning())
        return false;
    QString out = m_config.output.path->text().trimmed();
    if (out.isEmpty()) {
        const QString base = m_config.fromPreset->isChecked()
            ? m_config.preset->currentData().toString()
            : QFileInfo(m_config.file.path->text()).completeBaseName();
        out = defaultOutputPath(base);
        m_config.output.path->setText(out);
    }
    bool force = overwrite;
    if (QFileInfo::exists(out) && !force) {
        if (!ask) {
            Q_EMIT errorOccurred(
                tr("Training not started"), tr("%1 already exists; choose another output file.").arg(out));
            return false;
        }
        // Replacing a file loses it: an explicit choice, with No as the default (Enter keeps the file).
        QMessageBox box(QMessageBox::Warning, tr("Replace experiment?"),
            tr("%1 already exists. Replace it with a new run? Its checkpoints and analyses are lost.")
                .arg(shownText(out)),
            QMessageBox::Yes | QMessageBox::No, this);
        box.setObjectName(QStringLiteral("replaceExperimentBox"));
        box.button(QMessageBox::Yes)->setText(tr("Replace"));
        box.setDefaultButton(QMessageBox::No);
        box.setEscapeButton(QMessageBox::No);
        if (box.exec() != QMessageBox::Yes)
            return false;
        force = true;
    }
    nlohmann::json config;
    try {
        config = chosenConfig();
    } catch (const icl::Error& e) {
        Q_EMIT errorOccurred(tr("Invalid config"), QString::fromStdString(e.what()));
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

bool TrainPage::resumeTraining(bool ask)
{
    if (isRunning())
        return false;
    const QString out = resumePath();
    icl::RunSummary saved;
    nlohmann::json config;
    try {
        if (out.isEmpty())
            throw icl::Error("no experiment file to resume: choose the output file");
        saved = icl::readRunSummary(out.toStdString());
        config = icl::parseBoundedJson(saved.config_json, out.toStdString());
    } catch (const std::exception& e) { // raw: showError escapes it
        Q_EMIT errorOccurred(tr("Cannot resume"), QString::fromStdString(icl::fileErrorMessage(out.toStdString(), e)));
        return false;
    }
    // A run already at its total has nothing to continue: say so, and offer a larger total.
    const int64_t total = m_config.steps->value() > 0 ? m_config.steps->value()
        : saved.config                                ? saved.config->training.steps
                                                      : 0;
    const int64_t last = saved.checkpoints.empty() ? -1 : saved.checkpoints.back().step;
    if (last >= 0 && total <= last) {
        const QString finished = tr("%1 already finished at step %2").arg(shownText(QFileInfo(out).fileName())).arg(last);
        const int most = m_config.steps->maximum();
        if (!ask || last >= most) {
            m_run.result->setText(tr("%1; set Steps to a new total above %2 to train on.").arg(finished).arg(last));
            Q_EMIT statusMessage(m_run.result->text());
            return false;
        }
        QInputDialog dialog(this);
        dialog.setObjectName(QStringLiteral("moreStepsDialog"));
        dialog.setWindowTitle(tr("Run already finished"));
        dialog.setLabelText(tr("%1. Train on to a new total of steps:").arg(finished));
        dialog.setInputMode(QInputDialog::IntInput);
        dialog.setIntRange(int(last) + 1, most);
        dialog.setIntValue(int(std::min<int64_t>(most, 2 * std::max<int64_t>(last, 1))));
        if (dialog.exec() != QDialog::Accepted) {
            m_run.result->setText(finished + QLatin1Char('.'));
            return false;
        }
        m_config.steps->setValue(dialog.intValue());
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
        options.steps = m_config.steps->value();
    m_runPath = out;
    m_plot->setFigure(m_live.figure());
    m_run.result->clear();
    m_run.progress->setRange(0, 0); // busy until the first report
    m_run.eta->setText(tr("preparing…"));
    if (!m_job->start(config, options))
        return false;
    m_redrawTimer->start();
    m_run.progress->setTextVisible(true);
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
    m_run.eta->setText(tr("stopping…"));
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
        m_run.progress->setRange(0, 0);
        text = last.message.empty() ? tr("preparing…") : shownText(last.message);
    } else {
        m_run.progress->setRange(0, 100);
        percent = last.total_steps > 0 ? int(100 * last.step / last.total_steps) : 0;
        m_run.progress->setValue(percent);
        const int64_t done = last.step - last.start_step;
        const double rate = last.elapsed_s > 0 ? done / last.elapsed_s : 0.0;
        const double eta = rate > 0 ? (last.total_steps - last.step) / rate : NAN;
        text = tr("step %1 / %2 · %3 steps/s · ETA %4")
                   .arg(last.step)
                   .arg(last.total_steps)
                   .arg(rate, 0, 'f', 1)
                   .arg(formatDuration(eta));
        if (!last.message.empty())
            text += QStringLiteral(" · ") + shownText(last.message);
    }
    if (!m_job->stopRequested())
        m_run.eta->setText(text);
    Q_EMIT progressChanged(percent, text);
    if (m_live.rows() != rowsBefore)
        m_plot->setFigure(m_live.figure());
}

void TrainPage::onJobFinished(bool ok, const QString& message)
{
    drainProgress();
    m_redrawTimer->stop();
    m_run.progress->setRange(0, 100);
    const icl::TrainResult& r = m_job->result();
    if (ok) {
        m_run.progress->setValue(r.stopped ? m_run.progress->value() : 100);
        QStringList parts;
        parts << (r.stopped ? tr("Stopped at step %1").arg(r.final_step) : tr("Finished at step %1").arg(r.final_step));
        parts << tr("device %1").arg(shownText(r.device));
        parts << tr("eval loss %1").arg(formatLoss(r.eval_loss));
        for (const auto& [name, loss] : r.baselines)
            parts << QStringLiteral("%1 %2").arg(shownText(name), formatLoss(loss));
        m_run.result->setText(parts.join(QStringLiteral(" · ")));
        m_run.eta->setText(r.stopped ? tr("stopped") : tr("done"));
        Q_EMIT statusMessage(parts.join(QStringLiteral(" · ")));
    } else {
        m_run.eta->setText(tr("failed"));
        m_run.result->setText(tr("Training failed: %1").arg(shownText(message)));
        Q_EMIT errorOccurred(tr("Training failed"), message);
    }
    updateButtons();
    if (QFileInfo::exists(m_runPath))
        Q_EMIT experimentWritten(m_runPath);
    Q_EMIT trainingFinished(ok, m_runPath);
}

} // namespace icl::gui
