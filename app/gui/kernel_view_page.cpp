#include "app/gui/kernel_view_page.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QMetaObject>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"
#include "core/analysis/kernel_view.h"
#include "core/report/kernel_figures.h"
#include "core/io/experiment_file.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_view.h"
#include "core/io/config.h"

namespace icl::gui {

namespace {

/// The `task` section and softmax layers of a run's config ({} when unreadable).
nlohmann::json taskOf(const icl::RunSummary& s)
{
    try {
        return nlohmann::json::parse(s.config_json).at("task");
    } catch (const std::exception&) {
        return {};
    }
}

} // namespace

KernelViewPage::KernelViewPage(QWidget* parent)
    : AnalysisPage(QStringLiteral("kernelView"), parent)
{
    const auto [content, layout]
        = createContent(tr("Open an experiment with a softmax-attention layer (e.g. the renliu-kernel "
                           "preset) to compare it with its contrastive reference model."));

    auto* controls = new QHBoxLayout;
    auto spin = [&](const QString& label, const char* name, const QString& tip) {
        QSpinBox* s = makeSpinBox(content, name, 0, 0, 0);
        s->setToolTip(tip);
        addLabelled(controls, label, s);
        return s;
    };
    m_choose.layer = spin(tr("Layer"), "kernelLayer", tr("Softmax attention layer (0-based)"));
    m_choose.head = spin(tr("Head"), "kernelHead", tr("Attention head (0-based)"));
    m_choose.prompt = spin(tr("Prompt"), "kernelPrompt", tr("Evaluation prompt whose attention matrices are shown"));
    m_features = makeComboBox(content, "kernelFeatures", tr("Number of random features of the approximated attention matrix"),
        {{QStringLiteral("16"), QStringLiteral("16")}, {QStringLiteral("64"), QStringLiteral("64")},
            {QStringLiteral("256"), QStringLiteral("256")}, {QStringLiteral("1024"), QStringLiteral("1024")},
            {QStringLiteral("4096"), QStringLiteral("4096")}});
    m_features->setCurrentIndex(2);
    addLabelled(controls, tr("Random features m"), m_features);
    controls->addStretch(1);
    layout->addLayout(controls);

    m_views.summary = makeTextLine(QStringLiteral("kernelSummary"), content, QStringLiteral("—"));
    layout->addWidget(m_views.summary);
    m_status->setObjectName(QStringLiteral("kernelStatus"));
    layout->addWidget(m_status);

    auto* grid = new QGridLayout;
    grid->setSpacing(4);
    m_views.exact = new widgets::HeatmapView(content);
    m_views.exact->setObjectName(QStringLiteral("kernelExactHeatmap"));
    m_views.exact->setCaptionVisible(false);
    m_views.approx = new widgets::HeatmapView(content);
    m_views.approx->setObjectName(QStringLiteral("kernelApproxHeatmap"));
    m_views.approx->setCaptionVisible(false);
    m_views.error = new widgets::PlotView(content);
    m_views.error->setObjectName(QStringLiteral("kernelErrorPlot"));
    m_views.loss = new widgets::PlotView(content);
    m_views.loss->setObjectName(QStringLiteral("kernelLossPlot"));
    m_variants.plot = new widgets::PlotView(content);
    m_variants.plot->setObjectName(QStringLiteral("kernelVariantPlot"));

    auto* variantBox = new QWidget(content);
    auto* variantLayout = new QVBoxLayout(variantBox);
    variantLayout->setContentsMargins(0, 0, 0, 0);
    auto* variantControls = new QHBoxLayout;
    auto* addVariants = makePushButton(variantBox, "kernelAddVariants", tr("Add experiment files…"),
        tr("Compare the loss curves of other runs (e.g. the renliu-regularized, renliu-augmented and "
           "renliu-negative-samples presets)"));
    variantControls->addWidget(addVariants);
    m_variants.status = new QLabel(variantBox);
    m_variants.status->setObjectName(QStringLiteral("kernelVariantStatus"));
    m_variants.status->setWordWrap(true);
    variantControls->addWidget(m_variants.status, 1);
    variantLayout->addLayout(variantControls);
    variantLayout->addWidget(m_variants.plot, 1);

    // Two rows with their own columns: the two heatmaps and the error plot (a log-log plot with a legend, wider than a
    // heatmap needs), then the reference model's loss and the variants' curves side by side. In one 3-column grid the
    // error plot and the loss plot got a third of 1280 pixels each, half of it their legend's.
    auto* top = new QHBoxLayout;
    top->setSpacing(4);
    top->addWidget(m_views.exact, 4);
    top->addWidget(m_views.approx, 4);
    top->addWidget(m_views.error, 5);
    auto* bottom = new QHBoxLayout;
    bottom->setSpacing(4);
    bottom->addWidget(m_views.loss, 1);
    bottom->addWidget(variantBox, 1);
    grid->addLayout(top, 0, 0);
    grid->addLayout(bottom, 1, 0);
    grid->setRowStretch(0, 1);
    grid->setRowStretch(1, 1);
    layout->addLayout(grid, 1);

    const auto rerun = [this] { requestCompute(); };
    connect(m_choose.layer, qOverload<int>(&QSpinBox::valueChanged), this, rerun);
    connect(m_choose.head, qOverload<int>(&QSpinBox::valueChanged), this, rerun);
    connect(m_choose.prompt, qOverload<int>(&QSpinBox::valueChanged), this, rerun);
    connect(m_features, qOverload<int>(&QComboBox::currentIndexChanged), this, rerun);
    connect(addVariants, &QPushButton::clicked, this, [this] {
        const QStringList files = QFileDialog::getOpenFileNames(this, tr("Add experiment files"),
            QString::fromStdString(std::filesystem::path(m_path).parent_path().string()),
            tr("Experiment files (*.h5);;All files (*)"));
        addVariantFiles(files);
    });
}

bool KernelViewPage::supports(const icl::RunSummary& summary, QString* why)
{
    if (!modelKindIs(summary, icl::ModelKind::Lsa, tr("The kernel view needs an lsa model with a softmax attention layer"), {}, why))
        return false;
    if (summary.config->model.softmax_layers < 1) {
        if (why)
            *why = tr("The kernel view needs a softmax attention layer (model.softmax_layers ≥ 1); every layer "
                      "of this run is linear. Train the renliu-kernel preset for an example.");
        return false;
    }
    return true;
}

bool KernelViewPage::bind(const icl::RunSummary& summary, QString* why)
{
    ++m_variants.generation;
    if (!supports(summary, why)) {
        showMessage(*why);
        return false;
    }
    showContent();
    {
        const QSignalBlocker b1(m_choose.layer), b2(m_choose.head), b3(m_choose.prompt);
        m_choose.layer->setRange(0, int(summary.config->model.softmax_layers) - 1);
        m_choose.head->setRange(0, int(summary.config->model.n_heads) - 1);
        m_choose.prompt->setRange(0, 127);
        m_choose.layer->setValue(0);
        m_choose.head->setValue(0);
        m_choose.prompt->setValue(0);
    }
    // The variant comparison starts with this run and the runs next to it on the same task.
    m_variants.files = { QString::fromStdString(m_path) };
    const nlohmann::json task = taskOf(summary);
    std::error_code ec;
    std::vector<std::string> siblings;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(m_path).parent_path(), ec))
        if (entry.path().extension() == ".h5" && entry.path() != std::filesystem::path(m_path))
            siblings.push_back(entry.path().string());
    std::sort(siblings.begin(), siblings.end());
    for (const std::string& s : siblings) {
        if (m_variants.files.size() >= 12)
            break;
        try {
            const icl::RunSummary other = icl::readRunSummary(s);
            QString ignored;
            if (supports(other, &ignored) && taskOf(other) == task)
                m_variants.files << QString::fromStdString(s);
        } catch (const std::exception&) {
            // not an experiment file (or being written): not a variant
        }
    }
    runVariants();
    return true;
}

void KernelViewPage::addVariantFiles(const QStringList& paths)
{
    bool added = false;
    for (const QString& p : paths)
        if (!p.isEmpty() && !m_variants.files.contains(p)) {
            m_variants.files << p;
            added = true;
        }
    if (added)
        runVariants();
}

void KernelViewPage::compute()
{
    const Ticket t = newTicket();
    icl::KernelViewOptions o;
    o.checkpoint_step = m_step;
    o.layer = m_choose.layer->value();
    o.head = m_choose.head->value();
    o.prompt = m_choose.prompt->value();
    o.matrix_m = m_features->currentData().toInt();
    o.store = false;
    const std::string path = m_path;
    m_status->setText(tr("Computing the kernel view of layer %1, head %2 at checkpoint %3…")
                          .arg(o.layer)
                          .arg(o.head)
                          .arg(m_step));
    const Progress progress = progressReporter(t, tr("Kernel view"));
    submit<icl::KernelView>(
        KernelJob, tr("kernel view"), t, [path, o, progress] { return icl::computeKernelView(path, o, progress); },
        [this](const icl::KernelView& kv) {
                const std::map<std::string, std::string> meta
                    = { { "experiment", std::filesystem::path(kv.path).filename().string() },
                          { "checkpoint_step", std::to_string(kv.checkpoint_step) },
                          { "layer", std::to_string(kv.layer) },
                          { "head", std::to_string(kv.head) },
                          { "prompt", std::to_string(kv.prompt) } };
                // One colour scale for both matrices so that they compare cell by cell.
                double limit = 0.0;
                for (double x : kv.exact_attention.data)
                    limit = std::max(limit, std::abs(x));
                for (double x : kv.approx_attention.data)
                    limit = std::max(limit, std::abs(x));
                m_views.exact->setMetadata(meta);
                m_views.exact->setColorLimit(limit);
                m_views.exact->setMatrix(kv.exact_attention);
                m_views.approx->setMetadata(meta);
                m_views.approx->setColorLimit(limit);
                m_views.approx->setMatrix(kv.approx_attention);
                m_views.error->setFigure(icl::kernelErrorFigure(kv));
                m_views.loss->setFigure(icl::referenceLossFigure(kv));
                m_views.summary->setText(
                    tr("Checkpoint %1, layer %2, head %3 (%4 attention, %5 prompts, %6 queries × %7 keys): exact-kernel "
                       "reference model vs the layer: max error %8 (output %9, attention %10). Random features: "
                       "fitted slope of the output error vs m %11 (attention %12; 1/√m is −0.5). Mean query/key "
                       "norm seen by the features %13 / %14.")
                        .arg(kv.checkpoint_step)
                        .arg(kv.layer)
                        .arg(kv.head)
                        .arg(shownText(kv.attention_variant))
                        .arg(kv.n_prompts)
                        .arg(kv.n_queries)
                        .arg(kv.n_keys)
                        .arg(formatValue(kv.exact_max_error), formatValue(kv.exact_output_max_abs), formatValue(kv.exact_attention_max_abs),
                            QString::number(kv.sweep.output_rmse.slope, 'f', 3),
                            QString::number(kv.sweep.attention_rmse.slope, 'f', 3), QString::number(kv.query_norm_mean, 'f', 2),
                            QString::number(kv.key_norm_mean, 'f', 2)));
                m_status->clear();
        });
}

void KernelViewPage::runVariants()
{
    const quint64 generation = ++m_variants.generation;
    const QStringList files = m_variants.files;
    m_variants.status->setText(tr("Reading %1 experiment file(s)…").arg(files.size()));
    runner()->enqueue(
        VariantsJob, tr("variant loss curves"),
        [this, generation, files]() -> AnalysisRunner::Continuation {
            std::vector<icl::RunSummary> runs;
            QStringList failed;
            for (const QString& f : files) {
                try {
                    runs.push_back(icl::readRunSummary(f.toStdString()));
                } catch (const std::exception& e) {
                    failed << QStringLiteral("%1 (%2)").arg(shownText(QFileInfo(f).fileName()), errorText(e, f.toStdString()));
                }
            }
            auto figure = std::make_shared<icl::Figure>(icl::variantLossFigure(runs));
            const int shown = int(runs.size());
            return [this, generation, figure, failed, shown] {
                if (generation != m_variants.generation)
                    return;
                m_variants.plot->setFigure(*figure);
                m_variants.status->setText(failed.isEmpty()
                        ? tr("%1 run(s) on this task").arg(shown)
                        : tr("Not shown: %1").arg(failed.join(QStringLiteral("; "))));
            };
        },
        [this, generation](const QString& error) {
            if (generation == m_variants.generation)
                m_variants.status->setText(error);
        });
}

} // namespace icl::gui
