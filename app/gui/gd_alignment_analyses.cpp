// The checkpoint analyses of the GD alignment page (GdAlignmentPage::compute and the tab's controls start them):
// each runs on the page's worker and shows its result in its own tab.
#include "app/gui/gd_alignment_page.h"

#include <cmath>
#include <memory>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QSpinBox>

#include "app/gui/analysis_runner.h"
#include "app/gui/gd_alignment_views.h"
#include "core/report.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"

namespace icl::gui {

template <class Result>
void GdAlignmentPage::runAnalysis(Analysis which, const QString& label, QLabel* status, std::function<Result()> work,
    std::function<void(const Result&)> show, std::function<void()> clear)
{
    const quint64 generation = ++m_analysisGeneration[which];
    runner()->enqueue(
        which, label,
        [this, which, generation, work = std::move(work), show = std::move(show)]() -> AnalysisRunner::Continuation {
            auto result = std::make_shared<Result>(work());
            return [this, which, generation, result, show] {
                if (generation == m_analysisGeneration[which])
                    show(*result);
            };
        },
        [this, which, generation, status, clear = std::move(clear)](const QString& error) {
            if (generation != m_analysisGeneration[which])
                return;
            clear();
            setStatus(status, error, true);
        });
}

void GdAlignmentPage::runMetrics()
{
    const QString refName = prettyReference(reference());
    m_metrics->setPending(m_step, refName);
    setStatus(m_scatter.status, tr("Computing the alignment of checkpoint %1 with %2…").arg(m_step).arg(refName),
        false, true);
    icl::GdAlignmentOptions options;
    options.checkpoint_step = m_step;
    options.reference = reference();
    options.store = false;
    using Result = std::pair<icl::AlignmentResult, icl::Figure>;
    runAnalysis<Result>(
        Metrics, tr("alignment with %1").arg(refName), m_scatter.status,
        [path = m_path, options, summary = m_summary] {
            icl::AlignmentResult result = icl::computeGdAlignment(path, options);
            icl::Figure figure = icl::predictionScatterFigure(result, summary);
            return Result(std::move(result), std::move(figure));
        },
        [this](const Result& r) {
            m_metrics->showResult(r.first);
            m_scatter.plot->setFigure(r.second);
            setStatus(m_scatter.status, QString());
            Q_EMIT firstLookShown(); // the metrics come first; the other views follow
        },
        [this] {
            m_metrics->clear();
            m_scatter.plot->setFigure(icl::Figure {});
        });
}

void GdAlignmentPage::runWeights()
{
    setStatus(m_weightsStatus, tr("Reading the weights of checkpoint %1…").arg(m_step), false, true);
    runAnalysis<std::vector<icl::LsaWeightView>>(
        Weights, tr("learned weights"), m_weightsStatus,
        [path = m_path, step = m_step] { return icl::lsaWeightViews(path, step); },
        [this](const std::vector<icl::LsaWeightView>& views) {
            m_weights->setViews(views, m_tied, metadata());
            setStatus(m_weightsStatus, QString());
        },
        [this] { m_weights->clear(); });
}

void GdAlignmentPage::runEtaScan()
{
    const int64_t k = m_etaK->value();
    setStatus(m_eta.status, tr("Scanning η for %1 GD step(s)…").arg(k), false, true);
    using Result = std::pair<icl::EtaScan, icl::Figure>;
    runAnalysis<Result>(
        EtaScan, tr("η scan"), m_eta.status,
        [path = m_path, step = m_step, k, summary = m_summary] {
            icl::EtaScan scan = icl::computeEtaScan(path, step, k, 4.0, 200, false);
            icl::Figure figure = icl::etaScanFigure(scan, summary);
            // GD's loss grows by orders of magnitude past the stable η; on a log axis the minimum and
            // the model's loss stay readable.
            figure.log_y = true;
            return Result(std::move(scan), std::move(figure));
        },
        [this, k](const Result& r) {
            m_eta.plot->setFigure(r.second);
            const icl::EtaScan& s = r.first;
            QString text = tr("Best η for %1 step(s) on the evaluation prompts (the scan's minimum): %2 (loss %3); "
                              "trained model: loss %4.")
                               .arg(k)
                               .arg(metricText(s.best_eta), metricText(s.best_loss), metricText(s.model_loss));
            if (std::isfinite(s.fitted_eta))
                text += tr(" GD-%1's η fitted in training on the tuning prompts, which the other views use: %2 "
                           "(loss %3 here); the two η differ by the prompts they are fitted on.")
                            .arg(k)
                            .arg(metricText(s.fitted_eta), metricText(s.fitted_loss));
            setStatus(m_eta.status, text);
        },
        [this] { m_eta.plot->setFigure(icl::Figure {}); });
}

void GdAlignmentPage::runOod()
{
    const std::string kind = m_oodKind->currentData().toString().toStdString();
    setStatus(m_ood.status, tr("Evaluating out of distribution (%1)…").arg(m_oodKind->currentText()), false, true);
    runAnalysis<icl::Figure>(
        Ood, tr("out-of-distribution curves"), m_ood.status,
        [path = m_path, step = m_step, kind, summary = m_summary] {
            return icl::oodFigure(icl::computeOod(path, step, kind, {}, 4000, false), summary);
        },
        [this](const icl::Figure& figure) {
            m_ood.plot->setFigure(figure);
            setStatus(m_ood.status, QString());
        },
        [this] { m_ood.plot->setFigure(icl::Figure {}); });
}

void GdAlignmentPage::runLayers()
{
    const bool gdpp = m_withGdpp->isChecked() && m_layers > 1;
    setStatus(m_layersStatus,
        gdpp ? tr("Comparing %1 layer read-outs with GD and GD++ (fitting GD++ takes a while)…").arg(m_layers)
             : tr("Comparing %1 layer read-out(s) with GD…").arg(m_layers),
        false, true);
    runAnalysis<std::vector<icl::LayerStepRow>>(
        Layers, gdpp ? tr("K layers vs K steps of GD and GD++") : tr("K layers vs K steps of GD"), m_layersStatus,
        [path = m_path, step = m_step, gdpp] { return icl::compareLayersWithSteps(path, step, gdpp); },
        [this](const std::vector<icl::LayerStepRow>& rows) {
            m_layerTable->setRows(rows);
            setStatus(m_layersStatus,
                tr("Layer k: the model's read-out after k layers; GD-k: k GD steps with a line-searched η; "
                   "GD++-k: k layers of GD++ (von Oswald et al. Fig. 3). Losses are 0.5·MSE on the evaluation "
                   "prompts; — where not defined (GD++ needs k > 1)."));
        },
        [this] { m_layerTable->setRowCount(0); });
}

void GdAlignmentPage::runCopy()
{
    setStatus(m_copyStatus, tr("Computing layer-1 gradient norms of checkpoint %1…").arg(m_step), false, true);
    runAnalysis<icl::CopyAnalysis>(
        Copy, tr("copy analysis of layer 1"), m_copyStatus,
        [path = m_path, step = m_step] { return icl::computeCopyAnalysis(path, step, 64, false); },
        [this](const icl::CopyAnalysis& copy) {
            icl::Matrix m;
            m.name = "‖∂ layer-1 output (row) / ∂ input token (column)‖, checkpoint " + std::to_string(copy.checkpoint_step);
            m.rows = m.cols = copy.tokens;
            m.data = copy.gradient_norm;
            m.row_labels = m.col_labels = copy.token_labels;
            m_copyHeatmap->setMetadata(metadata());
            m_copyHeatmap->setMatrix(m);
            m_copySummary->setText(
                tr("Mean gradient norm of the layer-1 output at x-token k with respect to input token j: "
                   "own (j = k) %1, next (j = k+1, the token holding y_k) %2, others %3. next/other = %4%5")
                    .arg(metricText(copy.own), metricText(copy.next), metricText(copy.other),
                        metricText(copy.nextOtherRatio()),
                        copy.nextOtherRatio() > 2 ? tr(": layer 1 copies y_k into the x_k token.")
                                                  : tr(": no copy yet.")));
            setStatus(m_copyStatus, QString());
        },
        [this] { m_copyHeatmap->setMatrix(icl::Matrix {}); });
}

} // namespace icl::gui
