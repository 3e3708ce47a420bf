#include "app/gui/icl_iwl_page.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextStream>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "app/gui/analysis_runner.h"
#include "core/report.h"
#include "widgets/plot_view.h"

namespace icl::gui {

namespace {

enum JobKey { IclIwlJob = 900 };

/// task.kind of the run's stored config ("" when it cannot be read).
std::string taskKind(const icl::RunSummary& summary)
{
    try {
        const nlohmann::json config = nlohmann::json::parse(summary.config_json);
        if (config.contains("task") && config["task"].contains("kind") && config["task"]["kind"].is_string())
            return config["task"]["kind"].get<std::string>();
    } catch (const nlohmann::json::exception&) {
    }
    return {};
}

QLabel* valueLabel(QWidget* parent, const char* name)
{
    auto* label = new QLabel(QStringLiteral("—"), parent);
    label->setObjectName(QLatin1String(name));
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}

} // namespace

IclIwlPage::IclIwlPage(QWidget* parent)
    : QWidget(parent)
    , m_runner(new AnalysisRunner(this))
{
    setObjectName(QStringLiteral("iclIwlPage"));
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("iclIwlTabs"));
    outer->addWidget(m_tabs);
    auto* training = new QWidget(m_tabs);
    m_tabs->addTab(training, tr("Over training"));
    auto* layout = new QVBoxLayout(training);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);

    m_message = new QLabel(training);
    m_message->setObjectName(QStringLiteral("iclIwlMessage"));
    m_message->setWordWrap(true);
    m_message->setText(tr("Open a few-shot classification run (task fewshot_classification) to compare in-context "
                          "and in-weights learning."));
    layout->addWidget(m_message);

    m_content = new QWidget(training);
    auto* body = new QHBoxLayout(m_content);
    body->setContentsMargins(0, 0, 0, 0);
    body->setSpacing(6);
    m_plot = new widgets::PlotView(m_content);
    m_plot->setObjectName(QStringLiteral("iclIwlPlot"));
    body->addWidget(m_plot, 1);

    auto* panel = new QGroupBox(tr("Selected checkpoint"), m_content);
    panel->setObjectName(QStringLiteral("iclIwlPanel"));
    panel->setToolTip(tr("ICL: 2 holdout classes, 4 shots each, labels {0, 1} drawn per sequence. IWL: the query's "
                         "class is a training class absent from the context (no support), fixed labels."));
    auto* form = new QFormLayout(panel);
    m_sequences = new QSpinBox(panel);
    m_sequences->setObjectName(QStringLiteral("iclIwlSequences"));
    m_sequences->setRange(0, 1000000);
    m_sequences->setSingleStep(256);
    m_sequences->setSpecialValueText(tr("run's own"));
    m_sequences->setToolTip(tr("Sequences per evaluation (the run's own evaluation sequences when 0, so that the "
                               "numbers equal the metrics stored at that step; otherwise fresh sequences)"));
    form->addRow(tr("Sequences"), m_sequences);
    m_checkpointValue = valueLabel(panel, "iclIwlCheckpoint");
    form->addRow(tr("Checkpoint"), m_checkpointValue);
    m_iclValue = valueLabel(panel, "iclIwlIclAccuracy");
    m_iclValue->setToolTip(tr("Holdout classes, argmax over labels {0, 1} (chance 0.5)"));
    form->addRow(tr("ICL accuracy, labels {0, 1}"), m_iclValue);
    m_iclAllValue = valueLabel(panel, "iclIwlIclAllLabels");
    m_iclAllValue->setToolTip(tr("The same holdout sequences, argmax over every label"));
    form->addRow(tr("ICL accuracy, all labels"), m_iclAllValue);
    m_iwlValue = valueLabel(panel, "iclIwlIwlAccuracy");
    m_iwlValue->setToolTip(tr("Training classes with no support in the context, argmax over every label"));
    form->addRow(tr("IWL accuracy"), m_iwlValue);
    m_iclInContextValue = valueLabel(panel, "iclIwlIclInContext");
    m_iclInContextValue->setToolTip(tr("How often the output (argmax over every label) is a label present in the "
                                       "context, on the ICL sequences"));
    form->addRow(tr("ICL: output in context"), m_iclInContextValue);
    m_iwlInContextValue = valueLabel(panel, "iclIwlIwlInContext");
    m_iwlInContextValue->setToolTip(tr("How often the output is a label present in the context, on the IWL "
                                       "sequences (where the right label never is)"));
    form->addRow(tr("IWL: output in context"), m_iwlInContextValue);
    m_status = new QLabel(panel);
    m_status->setObjectName(QStringLiteral("iclIwlStatus"));
    m_status->setWordWrap(true);
    form->addRow(m_status);
    panel->setFixedWidth(340);
    body->addWidget(panel, 0, Qt::AlignTop);
    layout->addWidget(m_content, 1);
    m_content->setVisible(false);
    layout->addStretch(0);

    // --- sweep tab ---
    auto* sweep = new QWidget(m_tabs);
    m_tabs->addTab(sweep, tr("Sweep"));
    auto* sweepLayout = new QVBoxLayout(sweep);
    sweepLayout->setContentsMargins(4, 4, 4, 4);
    sweepLayout->setSpacing(4);
    auto* sweepControls = new QHBoxLayout;
    m_openSweep = new QPushButton(tr("Open sweep…"), sweep);
    m_openSweep->setObjectName(QStringLiteral("iclIwlOpenSweep"));
    m_openSweep->setToolTip(tr("A directory written by icl-cli sweep and icl-cli aggregate (reads aggregate/table.csv)"));
    sweepControls->addWidget(m_openSweep);
    sweepControls->addWidget(new QLabel(tr("against"), sweep));
    m_sweepColumn = new QComboBox(sweep);
    m_sweepColumn->setObjectName(QStringLiteral("iclIwlSweepColumn"));
    m_sweepColumn->setToolTip(tr("Grid column on the x axis; one line per combination of the other columns, averaged "
                                 "over seeds"));
    m_sweepColumn->setEnabled(false);
    sweepControls->addWidget(m_sweepColumn);
    sweepControls->addStretch(1);
    sweepLayout->addLayout(sweepControls);
    m_sweepStatus = new QLabel(tr("Open a directory aggregated with icl-cli aggregate."), sweep);
    m_sweepStatus->setObjectName(QStringLiteral("iclIwlSweepStatus"));
    m_sweepStatus->setWordWrap(true);
    m_sweepStatus->setTextInteractionFlags(Qt::TextSelectableByMouse);
    sweepLayout->addWidget(m_sweepStatus);
    m_sweepPlot = new widgets::PlotView(sweep);
    m_sweepPlot->setObjectName(QStringLiteral("iclIwlSweepPlot"));
    sweepLayout->addWidget(m_sweepPlot, 1);
    connect(m_openSweep, &QPushButton::clicked, this, &IclIwlPage::openSweepWithDialog);
    connect(m_sweepColumn, &QComboBox::currentTextChanged, this, [this] { showSweep(); });

    connect(m_sequences, qOverload<int>(&QSpinBox::valueChanged), this, [this] {
        m_stale = true;
        if (ready())
            run();
    });
    connect(m_runner, &AnalysisRunner::started, this, &IclIwlPage::busyStarted);
    connect(m_runner, &AnalysisRunner::finished, this, &IclIwlPage::busyFinished);
}

IclIwlPage::~IclIwlPage()
{
    if (m_stop)
        *m_stop = true;
}

QString IclIwlPage::fractionText(double value, int64_t n)
{
    if (!std::isfinite(value))
        return QStringLiteral("—");
    return QStringLiteral("%1 (%2/%3)")
        .arg(QString::number(value, 'f', 4))
        .arg(std::llround(value * double(n)))
        .arg(n);
}

void IclIwlPage::showExperiment(const icl::RunSummary& summary, qint64 step)
{
    cancel();
    ++m_generation;
    m_summary = summary;
    m_path = summary.path;
    m_step = step;
    m_result.reset();
    m_status->clear();
    clearPanel();
    const std::string kind = taskKind(summary);
    m_supported = kind == "fewshot_classification";
    m_content->setVisible(m_supported);
    m_message->setVisible(!m_supported);
    if (!m_supported) {
        m_plot->setFigure(icl::Figure {});
        m_message->setText(tr("The ICL vs IWL page is for fewshot_classification runs (Chan et al. 2022); this run's "
                              "task is %1.")
                               .arg(kind.empty() ? tr("unknown") : QString::fromStdString(kind)));
        m_stale = false;
        return;
    }
    showCurves();
    m_stale = true;
    if (ready())
        run();
}

void IclIwlPage::updateTrainingCurves(const icl::RunSummary& summary)
{
    if (summary.path != m_path || !m_supported) {
        showExperiment(summary, summary.checkpoints.empty() ? -1 : summary.checkpoints.back().step);
        return;
    }
    m_summary = summary;
    showCurves();
}

void IclIwlPage::showCurves()
{
    try {
        m_plot->setFigure(icl::iclIwlFigure(m_summary));
    } catch (const std::exception& e) { // a run that has not evaluated yet
        m_plot->setFigure(icl::Figure {});
        m_status->setText(QString::fromStdString(e.what()));
    }
}

void IclIwlPage::clearPanel()
{
    for (QLabel* label :
        { m_checkpointValue, m_iclValue, m_iclAllValue, m_iwlValue, m_iclInContextValue, m_iwlInContextValue })
        label->setText(QStringLiteral("—"));
}

void IclIwlPage::selectCheckpoint(qint64 step)
{
    if (step == m_step && !m_stale)
        return;
    m_step = step;
    m_stale = true;
    if (ready())
        run();
}

void IclIwlPage::setActive(bool active)
{
    m_active = active;
    if (active && m_stale && ready())
        run();
}

bool IclIwlPage::isBusy() const
{
    return m_runner->isBusy();
}

void IclIwlPage::cancel()
{
    if (m_stop)
        *m_stop = true;
    const bool wasBusy = m_runner->isBusy();
    m_runner->cancel();
    if (wasBusy) {
        m_stale = true;
        m_status->setText(tr("Cancelled. Select a checkpoint to evaluate again."));
    }
}

void IclIwlPage::setSequenceCount(int64_t n)
{
    m_sequences->setValue(int(n)); // re-runs through valueChanged when it changes
}

icl::IclIwlOptions IclIwlPage::options() const
{
    icl::IclIwlOptions o;
    o.checkpoint_step = m_step;
    o.n_sequences = m_sequences->value();
    return o;
}

bool IclIwlPage::ready() const
{
    return m_active && m_supported && !m_path.empty() && m_step >= 0;
}

void IclIwlPage::run()
{
    m_stale = false;
    const quint64 generation = ++m_generation;
    if (m_stop)
        *m_stop = true; // the previous evaluation is superseded
    auto stop = std::make_shared<std::atomic<bool>>(false);
    m_stop = stop;
    const icl::IclIwlOptions o = options();
    const std::string path = m_path;
    m_status->setText(tr("Evaluating checkpoint %1…").arg(m_step));
    m_runner->enqueue(
        IclIwlJob, tr("ICL vs IWL"),
        [this, generation, path, o, stop]() -> AnalysisRunner::Continuation {
            const icl::IclIwlResult r = icl::computeIclIwl(path, o, [this, stop](int64_t done, int64_t total) {
                const int percent = int(100 * done / std::max<int64_t>(1, total));
                QMetaObject::invokeMethod(
                    this, [this, percent] { Q_EMIT progressChanged(percent, tr("ICL vs IWL: %1%").arg(percent)); },
                    Qt::QueuedConnection);
                return !*stop;
            });
            return [this, generation, r] {
                if (generation != m_generation)
                    return;
                m_result = r;
                m_checkpointValue->setText(tr("step %1").arg(r.checkpoint_step));
                m_iclValue->setText(fractionText(r.icl_accuracy, r.n_sequences));
                m_iclAllValue->setText(fractionText(r.icl_accuracy_all_labels, r.n_sequences));
                m_iwlValue->setText(fractionText(r.iwl_accuracy, r.n_sequences));
                m_iclInContextValue->setText(fractionText(r.icl_in_context_rate, r.n_sequences));
                m_iwlInContextValue->setText(fractionText(r.iwl_in_context_rate, r.n_sequences));
                m_status->clear();
            };
        },
        [this, generation](const QString& error) {
            if (generation != m_generation)
                return;
            clearPanel();
            m_status->setText(error == QLatin1String("cancelled") ? tr("Cancelled.") : error);
        });
}

widgets::PlotView* IclIwlPage::currentPlot() const
{
    return m_tabs->currentIndex() == 1 ? m_sweepPlot : m_plot;
}

void IclIwlPage::openSweepWithDialog()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open sweep directory"));
    if (!dir.isEmpty())
        openSweep(dir);
}

bool IclIwlPage::openSweep(const QString& dir)
{
    m_tabs->setCurrentIndex(1);
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
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly | QIODevice::Text))
        return fail(tr("%1: no aggregated sweep table (run icl-cli aggregate %2 first)").arg(path, dir));
    QTextStream in(&file);
    SweepTable table;
    table.path = path;
    table.columns = in.readLine().split(QLatin1Char(','));
    table.n_grid = int(table.columns.indexOf(QStringLiteral("step")));
    if (table.n_grid < 0 || !table.columns.contains(QStringLiteral("icl_accuracy"))
        || !table.columns.contains(QStringLiteral("iwl_accuracy")))
        return fail(tr("%1: not a sweep table (expected grid columns, step, icl_accuracy and iwl_accuracy in the "
                       "header)")
                        .arg(path));
    int line = 1;
    while (!in.atEnd()) {
        const QString text = in.readLine();
        ++line;
        if (text.trimmed().isEmpty())
            continue;
        const QStringList cells = text.split(QLatin1Char(','));
        if (cells.size() != table.columns.size())
            return fail(tr("%1, line %2: %3 cells, the header has %4").arg(path).arg(line).arg(cells.size()).arg(
                table.columns.size()));
        table.rows.push_back(cells);
    }
    if (table.rows.empty())
        return fail(tr("%1: no runs in the table").arg(path));
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
            tr("%1: %2 runs, but no numeric grid column with two or more values to plot against")
                .arg(path)
                .arg(table.rows.size()));
        return true;
    }
    showSweep();
    return true;
}

QStringList IclIwlPage::sweepColumns() const
{
    QStringList out;
    for (int c = 0; c < m_sweep.n_grid; ++c) {
        if (m_sweep.columns[c] == QLatin1String("seed"))
            continue;
        std::set<double> values;
        bool numeric = true;
        for (const QStringList& row : m_sweep.rows) {
            bool ok = false;
            values.insert(row[c].toDouble(&ok));
            numeric &= ok;
        }
        if (numeric && values.size() >= 2)
            out << m_sweep.columns[c];
    }
    return out;
}

bool IclIwlPage::setSweepColumn(const QString& column)
{
    const int index = m_sweepColumn->findText(column);
    if (index < 0)
        return false;
    m_sweepColumn->setCurrentIndex(index);
    showSweep(); // also when it was already current
    return true;
}

void IclIwlPage::showSweep()
{
    const int x = int(m_sweep.columns.indexOf(m_sweepColumn->currentText()));
    if (x < 0 || x >= m_sweep.n_grid)
        return;
    const QString xName = m_sweep.columns[x];
    icl::Figure f;
    f.name = "sweep_" + xName.toStdString();
    f.title = "ICL and IWL accuracy vs " + xName.toStdString();
    f.x_label = xName.toStdString();
    f.y_label = "final accuracy";
    f.metadata = { { "sweep", m_sweep.path.toStdString() }, { "runs", std::to_string(m_sweep.rows.size()) } };
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
        groups[group][row[x].toDouble()].push_back(&row);
    }
    const std::vector<std::pair<QString, QString>> shown
        = { { QStringLiteral("icl_accuracy"), QStringLiteral("ICL") }, { QStringLiteral("iwl_accuracy"), QStringLiteral("IWL") } };
    for (const auto& [group, points] : groups)
        for (const auto& [metric, label] : shown) {
            const int column = int(m_sweep.columns.indexOf(metric));
            icl::Series s;
            s.name = (label + (group.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(group))).toStdString();
            s.style = metric == QLatin1String("iwl_accuracy") ? icl::Series::Style::Dashed : icl::Series::Style::Line;
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
