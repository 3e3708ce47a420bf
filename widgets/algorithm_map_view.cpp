#include "widgets/algorithm_map_view.h"

#include <cmath>
#include <fstream>

#include <QAction>
#include <QMessageBox>
#include <QMouseEvent>
#include <QToolBar>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "core/types/algorithm_map_matrix.h"
#include "widgets/figure_export.h"
#include "widgets/heatmap_view.h"
#include "widgets/plot_export.h"

namespace icl::widgets {

AlgorithmMapView::AlgorithmMapView(QWidget* parent)
    : QWidget(parent)
    , m_toolBar(new QToolBar(this))
    , m_heatmap(new HeatmapView(this))
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    m_toolBar->setIconSize(QSize(16, 16));
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction* exportAction = m_toolBar->addAction(tr("Export…"), this, &AlgorithmMapView::exportWithDialog);
    exportAction->setObjectName(QStringLiteral("exportAction"));
    exportAction->setToolTip(tr("Export the map as PNG, SVG, PDF, or its values as CSV"));
    layout->addWidget(m_toolBar);
    layout->addWidget(m_heatmap, 1);
    // The heatmap's own export would leave out the best-match curve: this view exports instead.
    m_heatmap->setToolBarVisible(false);
    m_heatmap->setObjectName(QStringLiteral("algorithmMapHeatmap"));
    m_heatmap->setColorLimit(1.0);

    QCustomPlot* plot = m_heatmap->plot();
    // A parametric curve keeps the points in layer order (a graph would sort them by column).
    m_best = new QCPCurve(plot->xAxis, plot->yAxis);
    m_best->setName(tr("best step"));
    QPen pen(QColor(0x11, 0x11, 0x11));
    pen.setWidthF(1.6);
    m_best->setPen(pen);
    m_best->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(Qt::black, 1.2), QBrush(Qt::white), 7));
    connect(plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        int row = 0, col = 0;
        if (event->button() == Qt::LeftButton && m_heatmap->cellAt(event->position(), &row, &col))
            Q_EMIT cellClicked(row, col);
    });
    rebuild();
}

AlgorithmMapView::~AlgorithmMapView() = default;

void AlgorithmMapView::setMap(const icl::AlgorithmMap& map, const std::string& family, bool weights)
{
    m_map = map;
    m_family = family;
    m_weights = weights;
    rebuild();
}

void AlgorithmMapView::setMetadata(const std::map<std::string, std::string>& metadata)
{
    m_metadata = metadata;
    rebuild();
}

void AlgorithmMapView::rebuild()
{
    const icl::AlgorithmFamilyMap* f = m_map.family(m_family);
    icl::Matrix m;
    QVector<double> keys, values;
    if (f && f->available()) {
        m = icl::algorithmMapMatrix(m_map, *f, m_weights);
        const std::vector<double>& best = m_weights ? f->best_step_weights : f->best_step;
        for (size_t l = 0; l < best.size(); ++l)
            for (int64_t s = 0; s < f->nSteps(); ++s)
                if (f->steps[size_t(s)] == best[l]) {
                    keys.push_back(double(s));
                    values.push_back(double(l));
                    break;
                }
    } else {
        m.name = icl::algorithmFamilyTitle(m_family) + ": "
               + (f ? f->unavailable : std::string("not computed for this map"));
    }
    m_heatmap->setMatrix(m);
    m_heatmap->setMetadata(m_metadata);
    m_heatmap->setAxisLabels("layer ℓ", f && f->step_name == "lambda" ? "ridge penalty λ" : "step k");
    m_heatmap->setColorLabel(m_weights ? "similarity of induced weights" : "similarity of errors");
    QVector<double> t(keys.size());
    for (int i = 0; i < keys.size(); ++i)
        t[i] = i;
    m_best->setData(t, keys, values, true);
    m_heatmap->replotNow();
}

bool AlgorithmMapView::exportTo(const std::string& path, const std::string& format, int dpi, std::string* error) const
{
    return exportAlgorithmMap(m_map, m_family, m_weights, m_metadata, path, format, dpi, error);
}

void AlgorithmMapView::exportWithDialog()
{
    QString base = QStringLiteral("algorithm_map_%1").arg(QString::fromStdString(m_family));
    ExportTarget target;
    if (!askExportTarget(this, tr("Export algorithm map"), base, &target))
        return;
    std::string error;
    if (!exportTo(target.path, target.format, target.dpi, &error)) {
        QMessageBox::warning(this, tr("Export failed"), QString::fromStdString(error));
        return;
    }
    Q_EMIT exported(QString::fromStdString(target.path));
}

bool exportAlgorithmMap(const icl::AlgorithmMap& map, const std::string& family, bool weights,
    const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& format, int dpi,
    std::string* error)
{
    auto fail = [error](const std::string& message) {
        if (error)
            *error = message;
        return false;
    };
    if (format != "png" && format != "svg" && format != "pdf" && format != "csv")
        return fail("unknown export format \"" + format + "\" (expected png, svg, pdf or csv)");
    const icl::AlgorithmFamilyMap* f = map.family(family);
    if (!f)
        return fail("algorithm map: no family \"" + family + "\"");
    if (!f->available())
        return fail("algorithm map: family \"" + family + "\" is not on the map: " + f->unavailable);
    if (format == "csv") {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (out)
            out << icl::algorithmMapCsv(map, *f, weights, metadata);
        if (!out)
            return fail("cannot write " + path);
        return true;
    }
    if (format == "png" && (dpi < 10 || dpi > 2400))
        return fail("dpi: expected 10..2400, got " + std::to_string(dpi));
    if (!ensureExportApplication(error))
        return false;
    AlgorithmMapView view;
    view.m_toolBar->setVisible(false);
    view.setMap(map, family, weights);
    view.setMetadata(metadata);
    view.m_heatmap->setCaptionVisible(true);
    view.resize(kExportLogicalWidth, kExportLogicalHeight);
    view.m_heatmap->resize(kExportLogicalWidth, kExportLogicalHeight);
    view.m_heatmap->plot()->resize(kExportLogicalWidth, kExportLogicalHeight);
    return writePlotFile(view.m_heatmap->plot(), path, format, dpi, icl::algorithmMapMatrix(map, *f, weights).name,
        metadata, error);
}

} // namespace icl::widgets
