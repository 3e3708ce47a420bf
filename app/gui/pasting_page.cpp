#include "app/gui/pasting_page.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <system_error>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>


#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "app/gui/request_run.h"
#include "app/gui/pasting_figures.h"
#include "app/gui/pasting_options.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/report.h"
#include "widgets/plot_view.h"
#include "core/io/config.h"

namespace icl::gui {

namespace {

QString count(int64_t n)
{
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(n));
}

} // namespace

PastingPage::PastingPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("pasting"), parent, Protocol::RunOnRequest)
{
    const auto [content, layout]
        = createContent(tr("Open a trained GPT-2 experiment (e.g. the guo-pasting preset) to cut it at a "
                           "layer, train a new embedding under its frozen upper blocks and compare it "
                           "with a model trained from scratch."));

    m_parentLabel = makeTextLine(QStringLiteral("pastingParent"), content);
    layout->addWidget(m_parentLabel);

    // --- options (the names of icl-cli analyze paste and PastingOptions) ---
    m_form = new PastingOptionsForm(content);
    layout->addLayout(m_form->layout());

    m_run = new RequestRun(this, QStringLiteral("pasting"), content, tr("Run pasting"),
        tr("Train the pasted and the scratch model on a worker thread"), tr("Pasting"), tr("training steps"),
        [this] { startPasting(true, false); });
    m_run->row().cancel->setToolTip(tr("Stop the running pasting at its next training step (nothing is kept)"));
    m_run->row().progress->setToolTip(
        tr("Training steps done of the Steps field (with the scratch model: the mean of the two models)"));
    layout->addLayout(m_run->row().layout);

    layout->addWidget(m_status);
    auto* summaryRow = new QHBoxLayout;
    m_summaryLabel = makeTextLine(QStringLiteral("pastingSummary"), content, QStringLiteral("—"));
    summaryRow->addWidget(m_summaryLabel, 1);
    m_openPasted = makePushButton(content, "pastingOpenPasted", tr("Open pasted experiment"),
        tr("Open the pasted model's experiment file (an ordinary gpt2 experiment)"));
    m_openPasted->setEnabled(false);
    summaryRow->addWidget(m_openPasted, 0, Qt::AlignTop);
    layout->addLayout(summaryRow);

    auto* plots = new QSplitter(Qt::Horizontal, content);
    plots->setObjectName(QStringLiteral("pastingPlots"));
    m_iclPlot = new widgets::PlotView(plots);
    m_iclPlot->setObjectName(QStringLiteral("pastingIclPlot"));
    m_lossPlot = new widgets::PlotView(plots);
    m_lossPlot->setObjectName(QStringLiteral("pastingLossPlot"));
    plots->addWidget(m_iclPlot);
    plots->addWidget(m_lossPlot);
    plots->setChildrenCollapsible(false);
    layout->addWidget(plots, 1);
    m_currentPlot = m_iclPlot;
    for (widgets::PlotView* plot : { m_iclPlot, m_lossPlot })
        if (QWidget* canvas = plot->findChild<QWidget*>(QStringLiteral("plot")))
            canvas->installEventFilter(this);

    connect(m_form, &PastingOptionsForm::changed, this, &PastingPage::updateControls);
    connect(m_openPasted, &QPushButton::clicked, this, [this] {
        if (m_result && !m_result->out_path.empty())
            Q_EMIT openRequested(QString::fromStdString(m_result->out_path));
    });
    updateControls();
}

void PastingPage::jobsFinished()
{
    m_run->finished();
    updateControls();
}

PastingPage::~PastingPage()
{
    // The runner (a child, destroyed first) joins the worker; the run stops at its next step.
    m_run->stop();
}

QPushButton* PastingPage::runButton() const { return m_run->row().run; }
QPushButton* PastingPage::cancelButton() const { return m_run->row().cancel; }
QProgressBar* PastingPage::progressBar() const { return m_run->row().progress; }

bool PastingPage::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() == QEvent::MouseButtonPress) {
        if (m_lossPlot->isAncestorOf(qobject_cast<QWidget*>(watched)))
            m_currentPlot = m_lossPlot;
        else if (m_iclPlot->isAncestorOf(qobject_cast<QWidget*>(watched)))
            m_currentPlot = m_iclPlot;
    }
    return QWidget::eventFilter(watched, event);
}

bool PastingPage::supports(const icl::RunSummary& summary, QString* why)
{
    return modelKindIs(summary, icl::ModelKind::Gpt2, tr("Pasting cuts a GPT-2 model into layers"),
        tr("Train the guo-pasting or guo-representation preset for an example."), why);
}

QString PastingPage::defaultOutputPath(const QString& parentPath, int64_t cutLayer, const QString& embedding)
{
    return pastingOutputPath(parentPath, cutLayer, embedding);
}

bool PastingPage::bind(const icl::RunSummary& summary, QString* why)
{
    clearResult();
    if (!supports(summary, why)) {
        m_parentLayers = 0;
        showMessage(*why);
        return false;
    }
    showContent();
    const ParentConfig p = parentConfig(summary);
    m_parentLayers = p.n_layers;
    m_form->bindParent(p, QString::fromStdString(summary.path));
    showLatestStored();
    return true; // checkpointChanged follows
}

void PastingPage::showLatestStored()
{
    // The latest pasting stored in the parent, as it was computed (a new run replaces it on the page). A few
    // attributes of the file: read here, on the GUI thread.
    if (!m_summary.analyses.count("pasting"))
        return;
    try {
        const std::vector<icl::StoredPasting> stored = icl::readStoredPastings(m_summary.path);
        if (stored.empty())
            return;
        const icl::StoredPasting& latest = stored.back();
        showResult(latest.result, latest.options);
        m_status->setText(tr("Showing the pasting stored in this file as /analysis/pasting/%1 (%2); Run pasting "
                             "computes a new one.")
                              .arg(shownText(latest.id), shownText(latest.created)));
    } catch (const std::exception& e) {
        m_status->setText(tr("The stored pasting results cannot be read: %1").arg(errorText(e, m_path)));
    }
}

void PastingPage::checkpointChanged(bool)
{
    if (!m_supported) {
        updateControls();
        return;
    }
    const qint64 step = m_step;
    const ParentConfig p = parentConfig(m_summary);
    QString text = tr("Parent: %1 · checkpoint %2 · gpt2 with L = %3 blocks, d_model %4 · task.w_scale %5 · seed %6")
                       .arg(shownText(QFileInfo(QString::fromStdString(m_summary.path)).fileName()))
                       .arg(step >= 0 ? QString::number(step) : tr("none"))
                       .arg(p.n_layers)
                       .arg(p.d_model)
                       .arg(formatValue(p.w_scale))
                       .arg(p.seed);
    const auto stored = m_summary.analyses.find("pasting");
    if (stored != m_summary.analyses.end() && stored->second > 0)
        text += stored->second == 1
            ? tr(" · 1 pasting result stored in the file under /analysis/pasting")
            : tr(" · %1 pasting results stored in the file under /analysis/pasting").arg(stored->second);
    m_parentLabel->setText(text);
    updateControls();
}

void PastingPage::cancelJobs() { m_run->cancel(); }

icl::PastingOptions PastingPage::options() const { return m_form->options(m_step, m_threads); }

bool PastingPage::startPasting(bool ask, bool overwrite)
{
    if (!m_supported || isBusy())
        return false;
    if (m_step < 0) {
        m_status->setText(tr("The experiment has no checkpoint to paste from."));
        return false;
    }
    icl::PastingOptions o = options();
    const QString out = QString::fromStdString(o.out_path);
    if (out.isEmpty()) {
        m_status->setText(tr("Choose an output file for the pasted model."));
        return false;
    }
    if (QFileInfo(out).absoluteFilePath() == QFileInfo(QString::fromStdString(m_summary.path)).absoluteFilePath()) {
        m_status->setText(tr("The output file must differ from the parent."));
        return false;
    }
    if (QFileInfo::exists(out) && !overwrite) {
        if (!ask) {
            m_status->setText(tr("%1 already exists; choose another output file.").arg(out));
            return false;
        }
        const auto answer = QMessageBox::question(
            this, tr("Overwrite experiment?"), tr("%1 already exists. Replace it with the new pasted model?").arg(out));
        if (answer != QMessageBox::Yes)
            return false;
    }
    o.overwrite = true; // confirmed, or nothing to overwrite
    const QString dir = QFileInfo(out).absolutePath();
    if (!QDir().mkpath(dir)) {
        m_status->setText(tr("Cannot create the folder %1.").arg(dir));
        return false;
    }

    clearResult();
    const Ticket request = newTicket();
    // Progress in the units of the Steps field: the core counts the pasted and scratch models' steps together.
    const std::shared_ptr<RunState> state = m_run->start(o.steps);
    m_status->setText(tr("Pasting at ℓ = %1 (%2 embedding) from checkpoint %3: training…")
                          .arg(o.cut_layer)
                          .arg(shownText(o.embedding))
                          .arg(m_step));
    const std::string parentPath = m_summary.path;
    runner()->enqueue(
        PastingJob, tr("pasting"),
        [this, request, parentPath, o, state]() -> AnalysisRunner::Continuation {
            icl::PastingResult result;
            try {
                result = icl::computePasting(
                    parentPath, o, [state, steps = o.steps](int64_t done, int64_t total) {
                        return state->report(total > 0 ? done * steps / total : done, steps);
                    });
            } catch (const icl::Error&) {
                // Progress is reported only after the output file was created, so a cancelled run wrote
                // it: remove the half-trained model (its link to the parent is written only at the end).
                if (state->cancelled) {
                    std::error_code ec;
                    std::filesystem::remove(o.out_path, ec);
                }
                throw;
            }
            auto shown = std::make_shared<icl::PastingResult>(std::move(result));
            return [this, request, shown, o] {
                if (!isCurrent(request))
                    return;
                showResult(*shown, o);
            };
        },
        m_run->errorHandler([this, request] { return isCurrent(request); },
            tr("; the partial file %1 was removed").arg(shownText(o.out_path))));
    updateControls();
    return true;
}

void PastingPage::showResult(const icl::PastingResult& r, const icl::PastingOptions& o)
{
    // The parent now holds one more /analysis/pasting result.
    try {
        m_summary = icl::readRunSummary(m_summary.path);
    } catch (const std::exception&) {
    }
    selectCheckpoint(m_step);
    m_result = r;
    m_iclPlot->setFigure(pastingIclCurvesFigure(r, o, m_summary));
    m_lossPlot->setFigure(pastingLossCurvesFigure(r, o, m_summary));
    const QString frozen = r.embedding == "transformer1"
        ? tr("1 new block + frozen blocks %1..%2").arg(r.cut_layer).arg(r.parent_layers - 1)
        : tr("frozen blocks %1..%2").arg(r.cut_layer).arg(r.parent_layers - 1);
    QString text = tr("ℓ = %1, %2 embedding: %3 of checkpoint %4 (%5 blocks in all), %6 steps in %7 s.")
                       .arg(r.cut_layer)
                       .arg(shownText(r.embedding), frozen)
                       .arg(r.parent_step)
                       .arg(r.pasted_layers)
                       .arg(r.steps)
                       .arg(QString::number(r.wall_time_s, 'f', 1));
    text += QLatin1Char('\n')
        + tr("Query loss 0.5·MSE: pasted %1 (%2 trainable parameters)")
              .arg(formatValue(r.pasted_loss), count(r.trainable_pasted));
    if (o.train_scratch)
        text += tr(", scratch %1 (%2 parameters)").arg(formatValue(r.scratch_loss), count(r.trainable_scratch));
    text += tr(", ridge %1 (λ = σ²/τ² = %2), zero %3; frozen parameters bitwise unchanged.")
                .arg(formatValue(r.ridge_loss), formatValue(r.ridge_lambda), formatValue(r.zero_loss));
    if (!r.out_path.empty()) {
        text += QLatin1Char('\n') + tr("Pasted model: %1").arg(shownText(r.out_path));
        if (!r.analysis_id.empty())
            text += tr(" · comparison stored in the parent as /analysis/pasting/%1")
                        .arg(shownText(r.analysis_id));
    }
    m_summaryLabel->setText(text);
    m_status->clear();
    updateControls();
}

void PastingPage::clearResult()
{
    m_result.reset();
    m_iclPlot->setFigure(pastingEmptyFigure(true));  // labelled axes before the first result
    m_lossPlot->setFigure(pastingEmptyFigure(false));
    m_summaryLabel->setText(QStringLiteral("—"));
    m_run->resetProgress();
    updateControls();
}

void PastingPage::updateControls()
{
    const bool busy = isBusy();
    const bool ready = m_supported && m_step >= 0;
    m_form->setBusy(busy);
    m_run->updateButtons(ready);
    m_openPasted->setEnabled(m_result && !m_result->out_path.empty());
}

} // namespace icl::gui
