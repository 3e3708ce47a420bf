#include "app/gui/probes_page.h"

#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QVBoxLayout>


#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "core/error.h"
#include "core/report.h"
#include "widgets/plot_view.h"
#include "core/io/config.h"
#include "core/io/kinds.h"

namespace icl::gui {

ProbesPage::ProbesPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("probes"), parent)
{
    const auto [content, layout]
        = createContent(tr("Open a GPT-2 experiment (e.g. the guo-representation preset) to probe its "
                           "residual stream layer by layer."));

    auto* controls = new QHBoxLayout;
    m_positions = addLabelledComboBox(controls, tr("Positions"), content, "probePositions",
        tr("Token positions whose residual stream the probes read: every x_i token, every y_i token, or the last "
           "(query) token"),
        {{tr("x tokens"), QStringLiteral("x")}, {tr("y tokens"), QStringLiteral("y")},
            {tr("query token"), QStringLiteral("query")}});
    controls->addSpacing(16);
    controls->addWidget(new QLabel(tr("Targets"), content));
    const std::map<QString, QString> tips = {
        { QStringLiteral("x"), tr("the input x_i") },
        { QStringLiteral("phi"), tr("the representation Φ*(x_i) (representation tasks)") },
        { QStringLiteral("y"), tr("the label y_i") },
        { QStringLiteral("oracle"), tr("the oracle's prediction of y_i: ridge on Φ* from the earlier examples") },
        { QStringLiteral("gd_1"), tr("one GD step's prediction of y_i from the earlier examples") },
    };
    for (const QString& t : targetNames()) {
        auto* box = new QCheckBox(t == QLatin1String("phi") ? QStringLiteral("Φ*(x)") : t, content);
        box->setObjectName(QStringLiteral("probeTarget_") + t);
        box->setToolTip(tr("Probe for %1").arg(tips.at(t)));
        box->setProperty("baseToolTip", box->toolTip());
        box->setChecked(true);
        controls->addWidget(box);
        m_targets[t] = box;
        connect(box, &QCheckBox::toggled, this, &ProbesPage::requestCompute);
    }
    controls->addStretch(1);
    layout->addLayout(controls);

    m_views = addSummaryAndPlot(layout, content, QStringLiteral("probes"), m_status);

    connect(m_positions, qOverload<int>(&QComboBox::currentIndexChanged), this, &ProbesPage::requestCompute);
}

QStringList ProbesPage::targetNames()
{
    return { QStringLiteral("x"), QStringLiteral("phi"), QStringLiteral("y"), QStringLiteral("oracle"),
        QStringLiteral("gd_1") };
}

QStringList ProbesPage::supportedTargets(const icl::RunSummary& summary)
{
    const bool representation = summary.config
        && (icl::kindOf(summary.config->task) == icl::TaskKind::Representation
            || icl::kindOf(summary.config->task) == icl::TaskKind::RepresentationMixture);
    // One GD step needs the step size fitted at training time (eval.gd_steps containing 1).
    const bool gd1 = summary.metrics.count("baseline_eta/gd_1") > 0;
    QStringList out;
    for (const QString& t : targetNames()) {
        if (!representation && (t == QLatin1String("phi") || t == QLatin1String("oracle")))
            continue;
        if (!gd1 && t == QLatin1String("gd_1"))
            continue;
        out << t;
    }
    return out;
}

bool ProbesPage::supports(const icl::RunSummary& summary, QString* why)
{
    return modelKindIs(summary, icl::ModelKind::Gpt2, tr("Probes read the residual stream of a GPT-2 model"),
        tr("Train the guo-representation or garg-linear-regression preset for an example."), why);
}

bool ProbesPage::bind(const icl::RunSummary& summary, QString* why)
{
    m_curves.clear();
    m_views.clear();
    if (!supports(summary, why)) {
        showMessage(*why);
        return false;
    }
    showContent();
    const QStringList supported = supportedTargets(summary);
    for (const auto& [name, box] : m_targets) {
        const QSignalBlocker block(box);
        const bool ok = supported.contains(name);
        box->setEnabled(ok);
        box->setChecked(ok);
        const QString base = box->property("baseToolTip").toString();
        const QString need = name == QLatin1String("gd_1")
            ? tr("a step size fitted at training time (eval.gd_steps containing 1)")
            : tr("a representation task (task.kind representation or representation_mixture)");
        box->setToolTip(ok ? base : tr("%1 — not available: needs %2").arg(base, need));
    }
    return true;
}

void ProbesPage::setPromptCounts(int64_t nFit, int64_t nTest)
{
    if (nFit == m_nFit && nTest == m_nTest)
        return;
    m_nFit = nFit;
    m_nTest = nTest;
    requestCompute();
}

bool ProbesPage::setPositions(const QString& positions)
{
    const int index = m_positions->findData(positions);
    if (index < 0)
        return false;
    m_positions->setCurrentIndex(index); // re-runs through currentIndexChanged when it changes
    return true;
}

void ProbesPage::setTargetChecked(const QString& target, bool checked)
{
    QCheckBox* box = targetCheck(target);
    if (box && box->isEnabled())
        box->setChecked(checked);
}

QCheckBox* ProbesPage::targetCheck(const QString& target) const
{
    const auto it = m_targets.find(target);
    return it == m_targets.end() ? nullptr : it->second;
}

QStringList ProbesPage::checkedTargets() const
{
    QStringList out;
    for (const QString& t : targetNames()) {
        const QCheckBox* box = m_targets.at(t);
        if (box->isEnabled() && box->isChecked())
            out << t;
    }
    return out;
}

icl::ProbeOptions ProbesPage::options(const QString& target) const
{
    icl::ProbeOptions o;
    o.checkpoint_step = m_step;
    o.target = target.toStdString();
    o.positions = m_positions->currentData().toString().toStdString();
    o.n_fit = m_nFit;
    o.n_test = m_nTest;
    o.store = false;
    return o;
}

void ProbesPage::compute()
{
    const Ticket t = newTicket();
    const QStringList targets = checkedTargets();
    if (targets.isEmpty()) {
        runner()->cancel();
        m_curves.clear();
        m_views.plot->setFigure(icl::probeFigure(m_curves, m_summary));
        m_views.summary->setText(QStringLiteral("—"));
        m_status->setText(tr("Check at least one target."));
        return;
    }
    const icl::ProbeOptions base = options(targets.front());
    std::vector<std::string> names;
    for (const QString& target : targets)
        names.push_back(target.toStdString());
    const std::string path = m_path;
    m_status->setText(tr("Fitting probes at checkpoint %1 for %2…").arg(m_step).arg(targets.join(QStringLiteral(", "))));
    const Progress progress = progressReporter(t, tr("Probes"));
    // The first look (the first fit and test prompts) is shown while the rest is fitted.
    using Curves = std::vector<icl::ProbeCurve>;
    const auto firstLook = firstLookCallback<Curves>(t, [this](const Curves& first) {
        if (!first.empty())
            showCurves(first, true);
    });
    struct Fitted {
        std::vector<icl::ProbeCurve> curves;
        std::vector<std::string> failed; ///< a target that fails leaves the others shown
    };
    submit<Fitted>(
        ProbeJob, tr("linear probes"), t,
        [path, base, names, progress, firstLook] {
            Fitted f;
            f.curves = icl::computeProbes(path, base, names, &f.failed, progress, firstLook); // one shared forward pass
            return f;
        },
        [this](const Fitted& f) {
            QStringList errors;
            for (const std::string& e : f.failed)
                errors << shownText(e);
            if (f.curves.empty()) {
                m_curves.clear();
                m_views.clear();
            } else {
                showCurves(f.curves, false);
            }
            m_status->setText(errors.join(QLatin1Char('\n')));
        });
}

void ProbesPage::showCurves(const std::vector<icl::ProbeCurve>& curves, bool firstLook)
{
    m_curves = curves;
    m_views.plot->setFigure(icl::probeFigure(m_curves, m_summary));
    QStringList parts;
    for (const icl::ProbeCurve& c : m_curves) {
        size_t best = 0;
        for (size_t l = 1; l < c.normalised_mse.size(); ++l)
            if (c.normalised_mse[l] < c.normalised_mse[best])
                best = l;
        const QString name = c.target == "phi" ? QStringLiteral("Φ*(x)") : shownText(c.target);
        if (c.normalised_mse.empty())
            continue;
        if (best == 0)
            parts << tr("%1 %2 at embed (best)").arg(name, formatValue(c.normalised_mse[0]));
        else
            parts << tr("%1 %2 at %3 (embed %4)")
                         .arg(name, formatValue(c.normalised_mse[best]), shownText(c.layer_labels.at(best)),
                             formatValue(c.normalised_mse.front()));
    }
    const icl::ProbeCurve& first = m_curves.front();
    m_views.summary->setText(tr("Checkpoint %1, %2 positions, %3 fit / %4 test rows. Lowest normalised MSE: %5")
                                 .arg(first.checkpoint_step)
                                 .arg(shownText(first.positions))
                                 .arg(first.n_fit)
                                 .arg(first.n_test)
                                 .arg(parts.join(QStringLiteral("; "))));
    if (firstLook) {
        m_status->setText(tr("First look on the first %1 fit and %1 test prompts; fitting on all %2 + %3…")
                              .arg(icl::kProbeFirstLookPrompts)
                              .arg(m_nFit)
                              .arg(m_nTest));
        Q_EMIT firstLookShown();
    }
}

} // namespace icl::gui
