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
    SweepTable table;
    table.path = shownText(path);
    auto escapedCells = [](const QString& line) {
        QStringList cells = line.split(QLatin1Char(','));
        for (QString& c : cells)
            c = shownText(c);
        return cells;
    };
    table.columns = escapedCells(in.readLine());
    table.n_grid = int(table.columns.indexOf(QStringLiteral("step")));
    if (table.n_grid < 0 || !table.columns.contains(QStringLiteral("icl_accuracy"))
        || !table.columns.contains(QStringLiteral("iwl_accuracy")))
        return fail(tr("%1: not a sweep table (expected grid columns, step, icl_accuracy and iwl_accuracy in the "
                       "header)")
                        .arg(shownText(path)));
    int line = 1;
    while (!in.atEnd()) {
        const QString text = in.readLine();
        ++line;
        if (text.trimmed().isEmpty())
            continue;
        const QStringList cells = escapedCells(text);
        if (cells.size() != table.columns.size())
            return fail(tr("%1, line %2: %3 cells, the header has %4").arg(shownText(path)).arg(line).arg(cells.size()).arg(
                table.columns.size()));
        table.rows.push_back(cells);
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
    for (int c = 0; c < m_sweep.n_grid; ++c) {
        if (m_sweep.columns[c] == QLatin1String("seed"))
            continue;
        // A numeric column counts its distinct numbers (0.9 and 0.90 are one value), any other its distinct texts.
        std::set<double> numbers;
        std::set<QString> texts;
        bool numeric = true;
        for (const QStringList& row : m_sweep.rows) {
            bool ok = false;
            numbers.insert(row[c].toDouble(&ok));
            numeric &= ok;
            texts.insert(row[c]);
        }
        if ((numeric ? numbers.size() : texts.size()) >= 2)
            out << m_sweep.columns[c];
    }
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
    const int x = int(m_sweep.columns.indexOf(m_sweepColumn->currentText()));
    if (x < 0 || x >= m_sweep.n_grid)
        return;
    const QString xName = m_sweep.columns[x];
    // A numeric column is the x axis itself; any other (model.kind: gpt2, lstm, rnn) gets one named tick per value
    // at 0, 1, … in the order of the table (the grid's order, as icl-cli aggregate draws it) and markers.
    bool numeric = true;
    std::vector<QString> categories;
    std::set<double> numbers;
    for (const QStringList& row : m_sweep.rows) {
        bool ok = false;
        numbers.insert(row[x].toDouble(&ok));
        numeric &= ok;
        if (std::find(categories.begin(), categories.end(), row[x]) == categories.end())
            categories.push_back(row[x]);
    }
    auto position = [&](const QStringList& row) {
        return numeric ? row[x].toDouble()
                       : double(std::find(categories.begin(), categories.end(), row[x]) - categories.begin());
    };
    icl::Figure f;
    f.name = "sweep_" + xName.toStdString();
    f.title = "ICL and IWL accuracy vs " + xName.toStdString();
    f.x_label = xName.toStdString();
    f.y_label = "final accuracy";
    f.metadata = { { "sweep", m_sweep.path.toStdString() }, { "runs", std::to_string(m_sweep.rows.size()) } };
    // Values spanning two decades or more (number of classes 100 … 12,800) on a log axis, as icl-cli aggregate.
    f.log_x = numeric && *numbers.begin() > 0 && *numbers.rbegin() >= 100 * *numbers.begin();
    if (!numeric)
        for (size_t i = 0; i < categories.size(); ++i) {
            f.x_ticks.push_back(double(i));
            f.x_tick_labels.push_back(categories[i].toStdString());
        }
    // Group by the other non-seed grid columns (short names: the part after the last '.').
    std::map<QString, std::map<double, std::vector<const QStringList*>>> groups;
    for (const QStringList& row : m_sweep.rows) {
        QString group;
        for (int c = 0; c < m_sweep.n_grid; ++c) {
            if (c == x || m_sweep.columns[c] == QLatin1String("seed"))
                continue;
            const QString& key = m_sweep.columns[c];
            group += (group.isEmpty() ? QString() : QStringLiteral(", ")) + key.mid(key.lastIndexOf(QLatin1Char('.')) + 1)
                + QLatin1Char(' ') + row[c];
        }
        groups[group][position(row)].push_back(&row);
    }
    const std::vector<std::pair<QString, QString>> shown
        = { { QStringLiteral("icl_accuracy"), QStringLiteral("ICL") }, { QStringLiteral("iwl_accuracy"), QStringLiteral("IWL") } };
    for (const auto& [group, points] : groups)
        for (const auto& [metric, label] : shown) {
            const int column = int(m_sweep.columns.indexOf(metric));
            icl::Series s;
            s.name = (label + (group.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(group))).toStdString();
            s.style = !numeric                                ? icl::Series::Style::Markers
                : metric == QLatin1String("iwl_accuracy") ? icl::Series::Style::Dashed
                                                          : icl::Series::Style::Line;
            for (const auto& [xv, rows] : points) {
                double sum = 0.0;
                int n = 0;
                for (const QStringList* r : rows) {
                    bool ok = false;
                    const double v = (*r)[column].toDouble(&ok);
                    if (ok && std::isfinite(v)) {
                        sum += v;
                        ++n;
                    }
                }
                if (n == 0)
                    continue; // a run without that metric (empty cell)
                s.x.push_back(xv);
                s.y.push_back(sum / n);
            }
            f.series.push_back(std::move(s));
        }
    m_sweepPlot->setFigure(f);
    m_sweepStatus->setText(tr("%1: %2 runs; final accuracies, averaged over seeds").arg(m_sweep.path).arg(m_sweep.rows.size()));
}

} // namespace icl::gui
