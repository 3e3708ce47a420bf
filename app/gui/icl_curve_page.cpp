#include "app/gui/icl_curve_page.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

namespace {

enum JobKey { CurveJob = 200 };

QString number(double v)
{
    return std::isfinite(v) ? QString::number(v, 'g', 3) : QStringLiteral("—");
}

} // namespace

IclCurvePage::IclCurvePage(QWidget* parent)
    : QWidget(parent)
    , m_runner(new AnalysisRunner(this))
{
    setObjectName(QStringLiteral("iclCurvePage"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompts"), this));
    m_prompts = new QSpinBox(this);
    m_prompts->setObjectName(QStringLiteral("iclCurvePrompts"));
    m_prompts->setRange(0, 1000000);
    m_prompts->setSingleStep(256);
    m_prompts->setSpecialValueText(tr("run's evaluation prompts"));
    m_prompts->setToolTip(tr("Number of prompts the curve is averaged over (the run's own fixed evaluation prompts "
                             "when 0, so that the model's error at the largest N equals its eval loss)"));
    controls->addWidget(m_prompts);
    controls->addStretch(1);
    layout->addLayout(controls);

    m_summaryLabel = new QLabel(QStringLiteral("—"), this);
    m_summaryLabel->setObjectName(QStringLiteral("iclCurveSummary"));
    m_summaryLabel->setWordWrap(true);
    m_summaryLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summaryLabel);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("iclCurveStatus"));
    m_status->setWordWrap(true);
    layout->addWidget(m_status);

    m_plot = new widgets::PlotView(this);
    m_plot->setObjectName(QStringLiteral("iclCurvePlot"));
    layout->addWidget(m_plot, 1);

    connect(m_prompts, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
        m_stale = true;
        if (ready())
            run();
    });
    connect(m_runner, &AnalysisRunner::started, this, &IclCurvePage::busyStarted);
    connect(m_runner, &AnalysisRunner::finished, this, &IclCurvePage::busyFinished);
}

IclCurvePage::~IclCurvePage()
{
    if (m_stop)
        *m_stop = true;
}

void IclCurvePage::showExperiment(const icl::RunSummary& summary, qint64 step)
{
    cancel();
    ++m_generation;
    m_summary = summary;
    m_path = summary.path;
    m_step = step;
    m_curve = {};
    m_plot->setFigure(icl::Figure {});
    m_summaryLabel->setText(QStringLiteral("—"));
    m_status->clear();
    m_stale = true;
    if (ready())
        run();
}

void IclCurvePage::selectCheckpoint(qint64 step)
{
    if (step == m_step && !m_stale)
        return;
    m_step = step;
    m_stale = true;
    if (ready())
        run();
}

void IclCurvePage::setActive(bool active)
{
    m_active = active;
    if (active && m_stale && ready())
        run();
}

bool IclCurvePage::isBusy() const
{
    return m_runner->isBusy();
}

void IclCurvePage::cancel()
{
    if (m_stop)
        *m_stop = true;
    const bool wasBusy = m_runner->isBusy();
    m_runner->cancel();
    if (wasBusy) {
        m_stale = true;
        m_status->setText(tr("Cancelled. Select a checkpoint to compute again."));
    }
}

void IclCurvePage::setPromptCount(int64_t n)
{
    m_prompts->setValue(int(n)); // re-runs through valueChanged when it changes
}

icl::IclCurveOptions IclCurvePage::options() const
{
    icl::IclCurveOptions o;
    o.checkpoint_step = m_step;
    o.n_prompts = m_prompts->value();
    o.store = false;
    return o;
}

bool IclCurvePage::ready() const
{
    return m_active && !m_path.empty() && m_step >= 0;
}

void IclCurvePage::run()
{
    m_stale = false;
    const quint64 generation = ++m_generation;
    if (m_stop)
        *m_stop = true; // the previous analysis is superseded
    auto stop = std::make_shared<std::atomic<bool>>(false);
    m_stop = stop;
    const icl::IclCurveOptions o = options();
    const std::string path = m_path;
    m_status->setText(tr("Computing the ICL curve at checkpoint %1…").arg(m_step));
    m_runner->enqueue(
        CurveJob, tr("ICL curve"),
        [this, generation, path, o, stop]() -> AnalysisRunner::Continuation {
            auto curve = std::make_shared<icl::IclCurve>(icl::computeIclCurve(
                path, o,
                [this, stop](int64_t done, int64_t total) {
                    const int percent = int(100 * done / std::max<int64_t>(1, total));
                    QMetaObject::invokeMethod(
                        this,
                        [this, percent] { Q_EMIT progressChanged(percent, tr("ICL curve: %1%").arg(percent)); },
                        Qt::QueuedConnection);
                    return !*stop;
                },
                [this, generation](const icl::IclCurve& first) {
                    QMetaObject::invokeMethod(
                        this,
                        [this, generation, first] {
                            if (generation == m_generation)
                                showCurve(first, true);
                        },
                        Qt::QueuedConnection);
                }));
            return [this, generation, curve] {
                if (generation != m_generation)
                    return;
                showCurve(*curve, false);
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_generation)
                return;
            m_status->setText(error == QLatin1String("cancelled") ? tr("Cancelled.") : error);
        });
}

void IclCurvePage::showCurve(const icl::IclCurve& curve, bool preview)
{
    m_curve = curve;
    m_plot->setFigure(icl::iclCurveFigure(m_curve, m_summary));
    QString text = tr("Checkpoint %1, %2 prompts").arg(m_curve.checkpoint_step).arg(m_curve.n_prompts);
    if (!m_curve.n_examples.empty()) {
        text += tr("; error with %1 in-context examples:").arg(m_curve.n_examples.back());
        QStringList parts;
        for (const icl::IclCurveSeries& s : m_curve.series)
            if (!s.error.empty())
                parts << QStringLiteral("%1 %2").arg(QString::fromStdString(s.name), number(s.error.back()));
        text += QLatin1Char(' ') + parts.join(QStringLiteral(", "));
    }
    m_summaryLabel->setText(text);
    if (preview)
        m_status->setText(tr("First look on the first %1 prompts; computing the curve on all of them…")
                              .arg(m_curve.n_prompts));
    else
        m_status->clear();
}

} // namespace icl::gui
