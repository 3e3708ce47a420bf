#include "app/gui/icl_curve_page.h"
#include "app/gui/page_widgets.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

IclCurvePage::IclCurvePage(QWidget* parent)
    : AnalysisPage(QStringLiteral("iclCurve"), parent)
{
    auto* layout = makeContentLayout(this);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Prompts"), this));
    m_prompts = makeSpinBox(this, "iclCurvePrompts", 0, 1000000, 0, 256);
    m_prompts->setSpecialValueText(tr("run's evaluation prompts"));
    m_prompts->setToolTip(tr("Number of prompts the curve is averaged over (the run's own fixed evaluation prompts "
                             "when 0, so that the model's error at the largest N equals its eval loss)"));
    controls->addWidget(m_prompts);
    controls->addStretch(1);
    layout->addLayout(controls);

    m_views = addSummaryAndPlot(layout, this, QStringLiteral("iclCurve"), m_status);

    connect(m_prompts, qOverload<int>(&QSpinBox::valueChanged), this, &IclCurvePage::requestCompute);
}

bool IclCurvePage::bind(const icl::RunSummary&, QString*)
{
    m_curve = {};
    m_views.clear();
    return true;
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

void IclCurvePage::compute()
{
    const Ticket t = newTicket();
    const icl::IclCurveOptions o = options();
    const std::string path = m_path;
    m_status->setText(tr("Computing the ICL curve at checkpoint %1…").arg(m_step));
    const Progress progress = progressReporter(t, tr("ICL curve"));
    // The first look (the curve on the first prompts) is shown while the rest is computed.
    const auto preview =
        firstLookCallback<icl::IclCurve>(t, [this](const icl::IclCurve& first) { showCurve(first, true); });
    submit<icl::IclCurve>(
        CurveJob, tr("ICL curve"), t, [path, o, progress, preview] { return icl::computeIclCurve(path, o, progress, preview); },
        [this](const icl::IclCurve& curve) { showCurve(curve, false); });
}

void IclCurvePage::showCurve(const icl::IclCurve& curve, bool preview)
{
    m_curve = curve;
    m_views.plot->setFigure(icl::iclCurveFigure(m_curve, m_summary));
    QString text = tr("Checkpoint %1, %2 prompts").arg(m_curve.checkpoint_step).arg(m_curve.n_prompts);
    if (!m_curve.n_examples.empty()) {
        text += tr("; error with %1 in-context examples:").arg(m_curve.n_examples.back());
        QStringList parts;
        for (const icl::IclCurveSeries& s : m_curve.series)
            if (!s.error.empty())
                parts << QStringLiteral("%1 %2").arg(shownText(s.name), formatValue(s.error.back()));
        text += QLatin1Char(' ') + parts.join(QStringLiteral(", "));
    }
    m_views.summary->setText(text);
    if (preview) {
        m_status->setText(tr("First look on the first %1 prompts; computing the curve on all of them…")
                              .arg(m_curve.n_prompts));
        Q_EMIT firstLookShown();
    } else
        m_status->clear();
}

} // namespace icl::gui
