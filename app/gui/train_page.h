#pragma once
// Train page: choose a preset or config file, start/stop/resume training, live loss curves.

#include <cstdint>
#include <memory>

#include <QElapsedTimer>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "app/gui/gui_forward.h"
#include "app/gui/live_loss.h"
#include "app/gui/page_widgets.h"
#include "core/types/run_summary.h"

namespace icl::gui {

class CheckpointTable;
class TrainingJob;

/// Preset/config chooser, output path, Start/Stop/Resume, progress with ETA, the live loss plot
/// (train loss, eval loss and every baseline's eval loss on the same axes) and the checkpoint list.
/// Training runs on a worker thread (TrainingJob); the plot is redrawn on a 40 ms timer.
/// Thread affinity: GUI thread only.
class TrainPage : public QWidget {
    Q_OBJECT
public:
    explicit TrainPage(QWidget* parent = nullptr);
    ~TrainPage() override;

    /// Selects a preset and scale ("quick" or "paper") as the config source.
    void setPreset(const QString& name, const QString& scale);
    /// Uses a JSON config file as the config source.
    void setConfigFile(const QString& path);
    void setOutputPath(const QString& path);
    QString outputPath() const;

    /// Shows a saved experiment: its loss curves (icl::lossFigure) and checkpoints. The config source becomes the
    /// run's own config and the output a new file beside it (proposedOutputPath), so Start never replaces the open
    /// run; Resume continues the open run.
    void showExperiment(const icl::RunSummary& summary);

    /// The first of `<dir>/<stem>-2.h5`, `<stem>-3.h5`, … beside `run` that does not exist (never `run` itself).
    static QString proposedOutputPath(const QString& run);

    /// The file Resume continues: the open run, or the output file when no run is open.
    QString resumePath() const;

    /// The resolved config Start would train (the chosen source with the Steps and Device overrides). Throws
    /// icl::Error when the source is missing or invalid.
    nlohmann::json chosenConfig() const;

    bool isRunning() const;

    /// Default output for a new run of `preset`: runs/<preset>-<yyyyMMdd-HHmmss>.h5 under the
    /// current directory.
    static QString defaultOutputPath(const QString& preset);

    widgets::PlotView* lossPlot() const { return m_plot; }
    QTableWidget* checkpointTable() const;

public Q_SLOTS:
    /// Starts a new run from the chosen config. `overwrite` replaces an existing output file;
    /// otherwise the user is asked (or, when `ask` is false, an error is reported). Returns false
    /// (after reporting why) when the run could not start.
    bool startTraining(bool ask = true, bool overwrite = false);
    /// Continues resumePath() from its last checkpoint to the Steps total (0: the file's). A run already at that
    /// total is not restarted silently: with `ask` the user is offered a new total, otherwise the result line says
    /// "FILE already finished at step N" and false is returned.
    bool resumeTraining(bool ask = true);
    /// Stops the running job after the current step.
    void stopTraining();
    /// Selects the checkpoint row of `step` in the checkpoint list.
    void selectCheckpoint(qint64 step);

Q_SIGNALS:
    void trainingStarted();
    /// A checkpoint of the running job was committed to its file (GUI thread).
    void checkpointSaved(qint64 step);
    /// The running job committed an evaluation (metrics rows, maybe a checkpoint) to `path` (GUI thread).
    void metricsCommitted(const QString& path);
    /// Progress for the status bar: percent in [0, 100] or -1 while preparing.
    void progressChanged(int percent, const QString& text);
    /// The run ended; `ok` false when it failed (the error was reported through errorOccurred).
    void trainingFinished(bool ok, const QString& path);
    /// A file was written (the run ended, possibly stopped or failed after some checkpoints).
    void experimentWritten(const QString& path);
    /// An error for the user (a dialog in the window, stderr in scripted mode).
    void errorOccurred(const QString& title, const QString& message);
    void statusMessage(const QString& message);

private:
    bool launch(const nlohmann::json& config, const QString& out, bool resume, bool force);
    void drainProgress();
    void onJobFinished(bool ok, const QString& message);
    void updateButtons();

    TrainingJob* m_job = nullptr;
    QTimer* m_redrawTimer = nullptr;
    LiveLossCurves m_live;
    bool m_liveDirty = false;
    QString m_runPath;
    QElapsedTimer m_clock;
    QString m_openRun;                                      ///< the run shown by showExperiment, "" before
    std::shared_ptr<const icl::ExperimentConfig> m_openConfig; ///< its config (the "Open run" source)

    /// The config chooser: a preset at a scale or a config file (the radio buttons choose), the output file, and the
    /// steps and device that override the config.
    struct ConfigChooser {
        QRadioButton* fromPreset = nullptr;
        QComboBox* preset = nullptr;
        QComboBox* scale = nullptr;
        QRadioButton* fromFile = nullptr;
        FileField file;
        QRadioButton* fromRun = nullptr; ///< the open run's config (shown once a run is open)
        QLabel* runName = nullptr;
        FileField output;
        QSpinBox* steps = nullptr;
        QComboBox* device = nullptr;
    } m_config;
    /// The run controls: Start, Stop and Resume, the progress bar with the ETA beside it, and the result line below.
    struct RunControls {
        QPushButton* start = nullptr;
        QPushButton* stop = nullptr;
        QPushButton* resume = nullptr;
        QProgressBar* progress = nullptr;
        QLabel* eta = nullptr;
        QLabel* result = nullptr;
    } m_run;
    widgets::PlotView* m_plot = nullptr;
    CheckpointTable* m_checkpoints = nullptr;
};

} // namespace icl::gui
