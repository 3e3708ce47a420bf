#include "app/gui/patching_page.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>


#include "app/gui/analysis_runner.h"
#include "app/gui/inspector_session.h"
#include "app/gui/page_widgets.h"
#include "app/gui/request_run.h"
#include "widgets/heatmap_view.h"
#include "core/io/config.h"

namespace icl::gui {

namespace {

QString corruptionText(icl::Corruption c)
{
    switch (c) {
    case icl::Corruption::ChangeLabel:
        return QObject::tr("change one label");
    case icl::Corruption::DifferentW:
        return QObject::tr("different task vector w");
    case icl::Corruption::ShufflePairs:
        return QObject::tr("shuffle labels among the examples");
    }
    return QString();
}

} // namespace

/// What one run computed on the worker.
PatchingPage::PatchingPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("patching"), parent, Protocol::RunOnRequest)
    , m_worker(std::make_shared<InspectorSession>())
{
    const auto [content, layout] = createContent(
        tr("Open a trained experiment to patch its residual stream from a clean prompt into a corrupted one."));
    m_heading = new QLabel(content);
    m_heading->setObjectName(QStringLiteral("patchingHeading"));
    m_heading->setWordWrap(true);
    layout->addWidget(m_heading);

    FieldGrid fields(content);
    QGridLayout* grid = fields.layout();
    m_corruption = new QComboBox(content);
    m_corruption->setObjectName(QStringLiteral("patchingCorruption"));
    for (icl::Corruption c : { icl::Corruption::ChangeLabel, icl::Corruption::DifferentW, icl::Corruption::ShufflePairs })
        m_corruption->addItem(corruptionText(c), QString::fromStdString(icl::corruptionName(c)));
    fields.add(0, 0, tr("Corruption"), m_corruption,
        tr("How the corrupted prompt differs from the clean one: one label y_i redrawn, every label from an "
           "independent task vector w′, or the labels permuted among the examples"));
    m_example = makeSpinBox(content, "patchingExample", 1, 1, 1);
    fields.add(0, 1, tr("Changed example i"), m_example, tr("The in-context example whose label is changed (1-based)"));
    m_seed = makeSpinBox(content, "patchingSeed", 0, INT_MAX, 0); // the CLI's defaults
    fields.add(0, 2, tr("Corruption seed"), m_seed, tr("Seed of the corruption's random draws"));
    m_useShared = makeCheckBox(content, "patchingUseShared", tr("Use the Attention page's prompt"), true,
        tr("Patch the prompt shown (and edited) on the Attention page; otherwise sample one from the prompt seed"));
    grid->addWidget(m_useShared, 1, 0, 1, 2);
    m_promptSeed = makeSpinBox(content, "patchingPromptSeed", 0, INT_MAX, 0);
    fields.add(1, 1, tr("Prompt seed"), m_promptSeed,
        tr("Seed of the clean prompt when the Attention page has none or it is not used (the Attention page's "
           "default seed is 0 too)"));
    for (int c : { 1, 3, 5 })
        grid->setColumnStretch(c, 1);
    layout->addLayout(grid);

    m_run = new RequestRun(this, QStringLiteral("patching"), content, tr("Run patching"),
        tr("Patch the clean residual stream at every (layer, position) into the corrupted run"), tr("Patching"),
        tr("patched runs"), [this] { startPatching(); });
    layout->addLayout(m_run->row().layout);
    layout->addWidget(m_status);

    auto* split = new QSplitter(Qt::Horizontal, content);
    split->setChildrenCollapsible(false);
    m_heatmap = new widgets::HeatmapView(split);
    m_heatmap->setObjectName(QStringLiteral("patchingHeatmap"));
    m_heatmap->setColorLimit(1.0);
    m_heatmap->setAxisLabels("patched residual stream", "token position");
    m_heatmap->setColorLabel("patching effect (0 = corrupted, 1 = clean)");
    auto* side = new QWidget(split);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    m_summaryLabel = makeTextLine(QStringLiteral("patchingSummary"), side, QStringLiteral("—"));
    sideLayout->addWidget(m_summaryLabel);
    m_labels = new QTableWidget(side);
    m_labels->setObjectName(QStringLiteral("patchingLabels"));
    m_labels->setColumnCount(2);
    m_labels->setHorizontalHeaderLabels({ tr("clean y"), tr("corrupted y") });
    m_labels->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_labels->verticalHeader()->setDefaultSectionSize(20);
    m_labels->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    sideLayout->addWidget(m_labels, 1);
    split->addWidget(m_heatmap);
    split->addWidget(side);
    split->setStretchFactor(0, 4);
    split->setStretchFactor(1, 1);
    split->setSizes({ 820, 260 });
    layout->addWidget(split, 1);

    connect(m_corruption, qOverload<int>(&QComboBox::currentIndexChanged), this, &PatchingPage::updateControls);
    connect(m_useShared, &QCheckBox::toggled, this, &PatchingPage::updateControls);
    updateControls();
}

void PatchingPage::jobsFinished()
{
    m_run->finished();
    updateControls();
}

PatchingPage::~PatchingPage()
{
    m_run->stop(); // the runner (a child, destroyed first) joins the worker after the next forward pass
}

QPushButton* PatchingPage::runButton() const { return m_run->row().run; }
QPushButton* PatchingPage::cancelButton() const { return m_run->row().cancel; }
QProgressBar* PatchingPage::progressBar() const { return m_run->row().progress; }

bool PatchingPage::bind(const icl::RunSummary& summary, QString* why)
{
    ++m_experimentGeneration;
    m_shared.reset();
    m_contextLength = summary.config ? summary.config->task.n_context : 0;
    clearResult();
    if (summary.path.empty() || summary.checkpoints.empty() || m_step < 0) {
        *why = tr("This experiment has no saved checkpoint to patch.");
        showMessage(*why);
        return false;
    }
    showContent();
    return true;
}

void PatchingPage::checkpointChanged(bool changed)
{
    if (changed && m_result)
        clearResult();
    const qint64 step = m_step;
    m_heading->setText(tr("%1 · checkpoint %2 · effect = (ŷ_patched − ŷ_corrupted) / (ŷ_clean − ŷ_corrupted) at the "
                          "query: 0 = corrupted, 1 = clean")
                           .arg(shownText(QFileInfo(QString::fromStdString(m_summary.path)).fileName()))
                           .arg(step >= 0 ? QString::number(step) : tr("none")));
    updateControls();
}

void PatchingPage::setSharedPrompt(const icl::Prompt& prompt)
{
    m_shared = prompt;
    updateControls();
}

std::optional<icl::Prompt> PatchingPage::sharedPrompt() const
{
    if (m_useShared->isChecked() && m_shared && !m_shared->y.empty())
        return m_shared;
    return std::nullopt;
}

void PatchingPage::cancelJobs() { m_run->cancel(); }

icl::PatchingOptions PatchingPage::options() const
{
    icl::PatchingOptions o;
    o.corruption = icl::corruptionFromName(m_corruption->currentData().toString().toStdString());
    o.example = m_example->value() - 1;
    o.seed = uint64_t(m_seed->value());
    return o;
}

bool PatchingPage::startPatching()
{
    if (m_summary.path.empty() || m_step < 0 || isBusy())
        return false;
    clearResult();
    const Ticket request = newTicket();
    const std::shared_ptr<RunState> state = m_run->start(0);
    const icl::PatchingOptions o = options();
    const std::optional<icl::Prompt> shared = sharedPrompt();
    const uint64_t promptSeed = uint64_t(m_promptSeed->value());
    const std::shared_ptr<InspectorSession> worker = m_worker;
    const std::string path = m_summary.path;
    const quint64 fileGeneration = m_experimentGeneration;
    const int64_t step = m_step;
    m_status->setText(tr("Patching (%1) at checkpoint %2…").arg(m_corruption->currentText()).arg(step));
    runner()->enqueue(
        PatchingJob, tr("patching"),
        [this, request, state, o, shared, promptSeed, worker, path, fileGeneration, step]()
            -> AnalysisRunner::Continuation {
            icl::Inspector& insp = worker->open(path, fileGeneration, step); // only this job touches it
            auto out = std::make_shared<Output>();
            out->clean = shared ? *shared : insp.samplePrompt(promptSeed);
            out->shared = shared.has_value();
            out->options = o;
            out->corrupted = insp.corrupt(out->clean, o);
            auto rowsDone = std::make_shared<int64_t>(0);
            out->result = insp.patching(
                out->clean, o,
                [state](int64_t done, int64_t total) { return state->report(done, total); },
                [this, request, out, rowsDone](const icl::PatchingResult& partial) {
                    // Each row as soon as it is done; the last one is the full result, shown below.
                    const int64_t done = ++*rowsDone;
                    if (done >= partial.effect.rows)
                        return;
                    Output shown = *out;
                    shown.result = partial;
                    QMetaObject::invokeMethod(
                        this,
                        [this, request, shown, done] {
                            if (isCurrent(request))
                                showRows(shown, done);
                        },
                        Qt::QueuedConnection);
                });
            return [this, request, out] {
                if (!isCurrent(request))
                    return;
                showOutput(*out);
            };
        },
        m_run->errorHandler([this, request] { return isCurrent(request); }));
    updateControls();
    return true;
}

void PatchingPage::updateControls()
{
    const bool busy = isBusy();
    const bool ready = !m_summary.path.empty() && m_step >= 0;
    const bool shared = m_useShared->isChecked() && m_shared && !m_shared->y.empty();
    const int64_t N = shared ? m_shared->nContext() : m_contextLength;
    if (N > 0)
        m_example->setRange(1, int(N));
    else
        m_example->setRange(1, 1000);
    m_example->setEnabled(!busy
        && icl::corruptionFromName(m_corruption->currentData().toString().toStdString())
            == icl::Corruption::ChangeLabel);
    for (QWidget* w : std::initializer_list<QWidget*> { m_corruption, m_seed, m_useShared })
        w->setEnabled(!busy);
    m_promptSeed->setEnabled(!busy && !shared);
    m_run->updateButtons(ready);
}

bool PatchingPage::exportCurrentPlot()
{
    return exportIfShown(m_result.has_value(), m_heatmap);
}

} // namespace icl::gui
