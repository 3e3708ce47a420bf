// PatchingPage's result views: the effect heatmap (row by row as the rows arrive), the prediction and label
// table, the summary line and the export metadata.
#include "app/gui/patching_page.h"
#include "app/gui/request_run.h"

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
#include "widgets/heatmap_view.h"
#include "core/io/config.h"

namespace icl::gui {

std::map<std::string, std::string> PatchingPage::metadata() const
{
    std::map<std::string, std::string> m;
    m["experiment"] = std::filesystem::path(m_summary.path).filename().string();
    m["checkpoint_step"] = std::to_string(m_result ? m_result->checkpoint_step : m_step);
    m["seed"] = std::to_string(m_resultOptions.seed);
    m["prompt"] = "seed " + std::to_string(m_clean.seed) + ", N = " + std::to_string(m_clean.nContext())
        + (m_resultShared ? " (Attention page)" : "");
    std::string corruption = icl::corruptionName(m_resultOptions.corruption);
    if (m_resultOptions.corruption == icl::Corruption::ChangeLabel)
        corruption += " (example " + std::to_string(m_resultOptions.example + 1) + ")";
    m["corruption"] = corruption;
    return m;
}

icl::Matrix PatchingPage::showEffect(const Output& out)
{
    icl::Matrix effect = out.result.effect;
    const int64_t L = effect.rows - 1;
    if (effect.row_labels.size() != size_t(effect.rows)) {
        effect.row_labels.clear();
        for (int64_t l = 0; l < effect.rows; ++l)
            effect.row_labels.push_back(l < L ? "layer " + std::to_string(l) + " (resid_pre)" : "final (resid_post)");
    }
    effect.name = "Activation patching effect (" + icl::corruptionName(out.options.corruption) + ")";
    m_heatmap->setMetadata(metadata());
    m_heatmap->setMatrix(effect);
    // Symmetric around 0 and at least ±1, so that 1 (= clean) has the same colour on every run.
    double largest = 1.0;
    for (double v : effect.data)
        if (std::isfinite(v))
            largest = std::max(largest, std::abs(v));
    m_heatmap->setColorLimit(largest);
    return effect;
}

void PatchingPage::showRows(const Output& partial, int64_t rowsDone)
{
    m_clean = partial.clean;
    m_corrupted = partial.corrupted;
    m_resultOptions = partial.options;
    m_resultShared = partial.shared;
    showEffect(partial);
    m_status->setText(tr("%1 of %2 layers patched (from the final one up); the rest follow…")
                          .arg(rowsDone)
                          .arg(partial.result.effect.rows));
    if (rowsDone == 1)
        Q_EMIT firstLookShown();
}

void PatchingPage::showOutput(const Output& out)
{
    m_result = out.result;
    m_clean = out.clean;
    m_corrupted = out.corrupted;
    m_resultOptions = out.options;
    m_resultShared = out.shared;
    m_result->effect = showEffect(out);

    const icl::PatchingResult& r = out.result;
    QString text = tr("Clean prediction ŷ = <b>%1</b> · corrupted ŷ = <b>%2</b> · true label of the clean query %3")
                       .arg(formatValue(r.clean_prediction), formatValue(r.corrupted_prediction),
                           formatValue(out.clean.y.empty() ? NAN : out.clean.y.back()));
    if (r.n_skipped > 0)
        text += tr("<br><span style='color:#B2182B'>The clean and corrupted predictions agree (|Δŷ| < 1e-6): the "
                   "effect is undefined; try another corruption or seed.</span>");
    m_summaryLabel->setText(text);
    const size_t n = out.clean.y.size();
    m_labels->setRowCount(int(n));
    QStringList rows;
    for (size_t i = 0; i < n; ++i) {
        rows << (i + 1 < n ? QString::number(i + 1) : tr("query"));
        const double a = out.clean.y[i];
        const double b = i < out.corrupted.y.size() ? out.corrupted.y[i] : NAN;
        auto* ca = new QTableWidgetItem(formatValue(a));
        auto* cb = new QTableWidgetItem(formatValue(b));
        ca->setToolTip(formatFullPrecision(a)); // 4 digits shown, the exact label in the tool tip
        cb->setToolTip(formatFullPrecision(b));
        if (a != b) {
            QFont bold = cb->font();
            bold.setBold(true);
            cb->setFont(bold);
            cb->setBackground(QColor(0xFD, 0xDB, 0xC7));
        }
        m_labels->setItem(int(i), 0, ca);
        m_labels->setItem(int(i), 1, cb);
    }
    m_labels->setVerticalHeaderLabels(rows);
    m_status->setText(tr("Done: %1 patched runs.").arg(m_run->state() ? m_run->state()->total.load() : 0));
    updateControls();
}

void PatchingPage::clearResult()
{
    m_result.reset();
    m_heatmap->setMetadata({});
    icl::Matrix none;
    none.name = tr("No patching result yet: press Run patching").toStdString();  // the title of the empty heatmap
    m_heatmap->setMatrix(none);
    m_summaryLabel->setText(tr("Press Run patching to patch the clean residual stream at every layer and token "
                               "position into the corrupted run."));
    m_labels->setRowCount(0);
    m_run->resetProgress();
}

} // namespace icl::gui
