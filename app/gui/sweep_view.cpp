#include "app/gui/sweep_view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QTextStream>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "core/types/figure.h"
#include "widgets/plot_view.h"

namespace icl::gui {

SweepView::SweepView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = makeContentLayout(this);
    auto* sweepControls = new QHBoxLayout;
    m_openSweep = makePushButton(this, "iclIwlOpenSweep", tr("Open sweep…"),
        tr("A directory written by icl-cli sweep and icl-cli aggregate (reads aggregate/table.csv)"));
    sweepControls->addWidget(m_openSweep);
    sweepControls->addWidget(new QLabel(tr("against"), this));
    m_sweepColumn = new QComboBox(this);
    m_sweepColumn->setObjectName(QStringLiteral("iclIwlSweepColumn"));
    m_sweepColumn->setToolTip(tr("Grid column on the x axis; one line per combination of the other columns, averaged "
                                 "over seeds"));
    m_sweepColumn->setEnabled(false);
    sweepControls->addWidget(m_sweepColumn);
    sweepControls->addStretch(1);
    layout->addLayout(sweepControls);
    m_sweepStatus = makeTextLine(QStringLiteral("iclIwlSweepStatus"), this, tr("Open a directory aggregated with icl-cli aggregate."));
    m_sweepStatus->setTextFormat(Qt::PlainText);
    layout->addWidget(m_sweepStatus);
    m_sweepPlot = new widgets::PlotView(this);
    m_sweepPlot->setObjectName(QStringLiteral("iclIwlSweepPlot"));
    layout->addWidget(m_sweepPlot, 1);
    connect(m_openSweep, &QPushButton::clicked, this, &SweepView::openSweepWithDialog);
    connect(m_sweepColumn, &QComboBox::currentTextChanged, this, [this] { showSweep(); });
}

void SweepView::openSweepWithDialog()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open sweep directory"));
    if (!dir.isEmpty())
        openSweep(dir);
}

bool SweepView::openSweep(const QString& dir)
{
    QString path = dir;
    if (QFileInfo(dir).isDir()) {
        path = QDir(dir).filePath(QStringLiteral("aggregate/table.csv"));
        if (!QFileInfo::exists(path) && QFileInfo::exists(QDir(dir).filePath(QStringLiteral("table.csv"))))
            path = QDir(dir).filePath(QStringLiteral("table.csv"));
    }
    auto fail = [this](const QString& message) {
        m_sweep = {};
        {
            const QSignalBlocker block(m_sweepColumn);
            m_sweepColumn->clear();
        }
        m_sweepColumn->setEnabled(false);
        m_sweepPlot->setFigure(icl::Figure {});
        m_sweepStatus->setText(message);
        return false;
    };
    // A table from elsewhere is untrusted: a regular file of bounded size (a FIFO would block the open), and its
    // cells escaped once here (they become combo items, axis labels and legends).
    constexpr qint64 kMaxTableBytes = qint64(64) << 20;
    const QFileInfo info(path);
    if (info.exists() && !info.isFile())
        return fail(tr("%1: not a regular file, expected a sweep table").arg(shownText(path)));
    if (info.exists() && info.size() > kMaxTableBytes)
        return fail(tr("%1: %2 bytes, more than a sweep table may have (%3)")
                        .arg(shownText(path))
                        .arg(info.size())
                        .arg(kMaxTableBytes));
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return fail(tr("%1: no aggregated sweep table (run icl-cli aggregate %2 first)").arg(shownText(path), shownText(dir)));
    QTextStream in(&file);
    icl::SweepTable table;
    table.source = shownText(path).toStdString();
    auto escapedCells = [](const QString& line) {
        std::vector<std::string> cells;
        for (const QString& c : line.split(QLatin1Char(',')))
            cells.push_back(shownText(c).toStdString());
        return cells;
    };
    table.columns = escapedCells(in.readLine());
    const auto has = [&](const char* name) {
        return std::find(table.columns.begin(), table.columns.end(), name) != table.columns.end();
    };
    const auto step = std::find(table.columns.begin(), table.columns.end(), "step");
    table.n_grid = size_t(step - table.columns.begin());
    if (step == table.columns.end() || !has("icl_accuracy") || !has("iwl_accuracy"))
        return fail(tr("%1: not a sweep table (expected grid columns, step, icl_accuracy and iwl_accuracy in the "
                       "header)")
                        .arg(shownText(path)));
    int line = 1;
    while (!in.atEnd()) {
        const QString text = in.readLine();
        ++line;
        if (text.trimmed().isEmpty())
            continue;
        std::vector<std::string> cells = escapedCells(text);
        if (cells.size() != table.columns.size())
            return fail(tr("%1, line %2: %3 cells, the header has %4").arg(shownText(path)).arg(line).arg(cells.size()).arg(
                table.columns.size()));
        table.rows.push_back(std::move(cells));
    }
    if (table.rows.empty())
        return fail(tr("%1: no runs in the table").arg(shownText(path)));
    m_sweep = table;
    const QStringList columns = sweepColumns();
    {
        const QSignalBlocker block(m_sweepColumn);
        m_sweepColumn->clear();
        m_sweepColumn->addItems(columns);
    }
    m_sweepColumn->setEnabled(!columns.isEmpty());
    if (columns.isEmpty()) {
        m_sweepPlot->setFigure(icl::Figure {});
        m_sweepStatus->setText(
            tr("%1: %2 runs, but no grid column with two or more values to plot against")
                .arg(shownText(path))
                .arg(table.rows.size()));
        return true;
    }
    showSweep();
    return true;
}

QStringList SweepView::sweepColumns() const
{
    QStringList out;
    for (const std::string& c : icl::sweepPlotColumns(m_sweep))
        out << QString::fromStdString(c);
    return out;
}

bool SweepView::setSweepColumn(const QString& column)
{
    const int index = m_sweepColumn->findText(column);
    if (index < 0)
        return false;
    m_sweepColumn->setCurrentIndex(index);
    showSweep(); // also when it was already current
    return true;
}

void SweepView::showSweep()
{
    const QString column = m_sweepColumn->currentText();
    if (!sweepColumns().contains(column))
        return;
    const icl::Figure f = icl::sweepFigure(m_sweep, column.toStdString());
    m_sweepPlot->setFigure(f);
    m_sweepStatus->setText(tr("%1: %2 runs; %3, averaged over seeds")
                               .arg(QString::fromStdString(m_sweep.source))
                               .arg(m_sweep.rows.size())
                               .arg(QString::fromStdString(f.y_label)));
}

} // namespace icl::gui
