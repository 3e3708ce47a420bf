#include "app/gui/experiments_page.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QFrame>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "app/gui/new_experiment_dialog.h"
#include "app/gui/train_page.h"
#include "app/gui/page_widgets.h"
#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/config.h"
#include "core/io/display_json.h"

namespace icl::gui {

ExperimentsPage::ExperimentsPage(QWidget* parent)
    : QWidget(parent)
    , m_recent(new QListWidget(this))
    , m_presets(new QTableWidget(this))
    , m_summary(new QTextBrowser(this))
{
    auto* open = makePushButton(this, "openButton", tr("Open experiment…"),
        tr("Open a saved experiment file (.h5) — or drop one onto the window (Ctrl+O)"));
    auto* create = new QPushButton(tr("New experiment from preset…"), this);
    create->setObjectName(QStringLiteral("newExperimentButton"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(open);
    buttons->addWidget(create);
    buttons->addStretch(1);

    m_recent->setObjectName(QStringLiteral("recentList"));
    m_recent->setToolTip(tr("Double-click to open"));
    auto* recentBox = makeGroupBox(tr("Recent experiments"), this, m_recent);

    m_summary->setObjectName(QStringLiteral("experimentSummary"));
    m_summary->setOpenLinks(false);
    m_summary->setHtml(tr("<p style='color:gray'>No experiment open. Open a <b>.h5</b> file (Ctrl+O), drop one "
                          "here, or start a new experiment from a preset below.</p>"));
    QVBoxLayout* summaryLayout = nullptr;
    auto* summaryBox = makeGroupBox(tr("Experiment"), this, nullptr, &summaryLayout);

    // Provenance of an imported run, above its summary (hidden for runs trained here).
    m_provenance.box = new QFrame(summaryBox);
    m_provenance.box->setObjectName(QStringLiteral("importProvenance"));
    auto* provenanceLayout = new QVBoxLayout(m_provenance.box);
    provenanceLayout->setContentsMargins(0, 0, 0, 4);
    provenanceLayout->setSpacing(3);
    m_provenance.heading = new QLabel(m_provenance.box);
    m_provenance.heading->setObjectName(QStringLiteral("importProvenanceLabel"));
    m_provenance.heading->setWordWrap(true);
    m_provenance.heading->setTextFormat(Qt::PlainText);
    QFont bold = m_provenance.heading->font();
    bold.setBold(true);
    m_provenance.heading->setFont(bold);
    m_provenance.heading->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_provenance.heading->setToolTip(tr("This run's weights come from a foreign checkpoint (icl-cli import or File ▸ "
                                        "Import checkpoint…); its checkpoints have no training loss or wall time"));
    m_provenance.sources = new QTableWidget(0, 4, m_provenance.box);
    m_provenance.sources->setObjectName(QStringLiteral("importProvenanceSources"));
    m_provenance.sources->setHorizontalHeaderLabels({ tr("source"), tr("format"), tr("step"), tr("SHA-256") });
    m_provenance.sources->verticalHeader()->setVisible(false);
    m_provenance.sources->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_provenance.sources->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_provenance.sources->setWordWrap(false);
    m_provenance.sources->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_provenance.sources->horizontalHeader()->setStretchLastSection(true);
    m_provenance.sources->verticalHeader()->setDefaultSectionSize(m_provenance.sources->fontMetrics().height() + 6);
    m_provenance.sources->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_provenance.notes = makeTextLine(QStringLiteral("importProvenanceNotes"), m_provenance.box);
    provenanceLayout->addWidget(m_provenance.heading);
    provenanceLayout->addWidget(m_provenance.sources);
    provenanceLayout->addWidget(m_provenance.notes);
    m_provenance.box->setVisible(false);
    summaryLayout->addWidget(m_provenance.box);
    summaryLayout->addWidget(m_summary, 1);

    m_presets->setObjectName(QStringLiteral("presetTable"));
    m_presets->setColumnCount(3);
    m_presets->setHorizontalHeaderLabels({ tr("preset"), tr("reproduces"), tr("description") });
    m_presets->verticalHeader()->setVisible(false);
    m_presets->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_presets->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_presets->setSelectionMode(QAbstractItemView::SingleSelection);
    m_presets->setWordWrap(false);
    // "reproduces" and "description" share the width (elided, the whole text in the tool tip): sized to its contents
    // "reproduces" alone filled 1280 pixels and left the description behind a scroll bar.
    m_presets->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    m_presets->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_presets->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    const std::vector<icl::PresetInfo> presets = availablePresets();
    m_presets->setRowCount(int(presets.size()));
    for (size_t i = 0; i < presets.size(); ++i) {
        const icl::PresetInfo& p = presets[i];
        auto* name = new QTableWidgetItem(qs(p.name));
        name->setData(Qt::UserRole, qs(p.name));
        m_presets->setItem(int(i), 0, name);
        auto* reproduces = new QTableWidgetItem(qs(p.reproduces));
        reproduces->setToolTip(qs(p.reproduces));
        m_presets->setItem(int(i), 1, reproduces);
        auto* description = new QTableWidgetItem(qs(p.description));
        description->setToolTip(qs(p.description));
        m_presets->setItem(int(i), 2, description);
    }
    if (!presets.empty())
        m_presets->selectRow(0);
    auto* presetBox = makeGroupBox(tr("Presets — reproduce a figure (double-click to train)"), this, m_presets);

    // The file names of the recent list need less room than the summary's metric names and values; the presets get
    // about five rows at 1280 × 800.
    auto* top = makeSplitter(Qt::Horizontal, this, recentBox, 1, summaryBox, 3);
    top->setSizes({ 300, 900 });
    auto* vertical = makeSplitter(Qt::Vertical, this, top, 2, presetBox, 1);
    vertical->setSizes({ 440, 220 });

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(vertical, 1);

    connect(open, &QPushButton::clicked, this, &ExperimentsPage::browseForExperiment);
    connect(create, &QPushButton::clicked, this, &ExperimentsPage::newExperimentFromPreset);
    connect(m_recent, &QListWidget::itemActivated, this,
        [this](QListWidgetItem* item) { Q_EMIT openRequested(item->data(Qt::UserRole).toString()); });
    connect(m_presets, &QTableWidget::cellDoubleClicked, this, [this](int, int) { newExperimentFromPreset(); });
}

void ExperimentsPage::setRecentFiles(const QStringList& paths)
{
    m_recent->clear();
    for (const QString& path : paths) {
        auto* item = new QListWidgetItem(shownText(QFileInfo(path).fileName()), m_recent);
        item->setData(Qt::UserRole, path);
        item->setToolTip(path);
        if (!QFileInfo::exists(path))
            item->setForeground(Qt::gray);
    }
}

void ExperimentsPage::browseForExperiment()
{
    const QString start
        = m_recent->count() > 0 ? QFileInfo(m_recent->item(0)->data(Qt::UserRole).toString()).path() : QString();
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open experiment"), start, tr("Experiment files (*.h5);;All files (*)"));
    if (!path.isEmpty())
        Q_EMIT openRequested(path);
}

void ExperimentsPage::newExperimentFromPreset()
{
    QString preset;
    const int row = m_presets->currentRow();
    if (row >= 0 && m_presets->item(row, 0))
        preset = m_presets->item(row, 0)->data(Qt::UserRole).toString();
    NewExperimentDialog dialog(preset, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    Q_EMIT newExperimentRequested(dialog.preset(), dialog.scale(), dialog.outputPath());
}

void ExperimentsPage::showProvenance(const std::string& importJson)
{
    m_provenance.sources->setRowCount(0);
    m_provenance.heading->clear();
    m_provenance.notes->clear();
    m_provenance.notes->setVisible(false);
    m_provenance.box->setVisible(!importJson.empty());
    if (importJson.empty())
        return; // trained here
    nlohmann::json j;
    try {
        j = icl::parseBoundedJson(importJson, "/import");
        if (!j.is_object())
            throw std::runtime_error("not a JSON object");
    } catch (const std::exception& e) {
        m_provenance.heading->setText(
            tr("Imported, not trained here (the file's /import provenance cannot be read: %1)").arg(shownText(e.what())));
        m_provenance.sources->setVisible(false);
        return;
    }
    auto str = [](const nlohmann::json& o, const char* key) {
        const auto it = o.find(key);
        return it != o.end() && it->is_string() ? shownText(it->get<std::string>()) : QString();
    };
    auto strings = [](const nlohmann::json& o, const char* key) {
        QStringList out;
        const auto it = o.find(key);
        if (it != o.end() && it->is_array())
            for (const nlohmann::json& v : *it)
                if (v.is_string())
                    out << shownText(v.get<std::string>());
        return out;
    };
    const QString imported = str(j, "imported"), layout = str(j, "layout");
    QString heading
        = imported.isEmpty() ? tr("Imported, not trained here") : tr("Imported %1, not trained here").arg(imported);
    if (!layout.isEmpty())
        heading += tr(" (%1 layout)").arg(layout);
    m_provenance.heading->setText(heading);

    const auto sources = j.find("sources");
    const bool hasSources = sources != j.end() && sources->is_array() && !sources->empty();
    m_provenance.sources->setVisible(hasSources);
    if (hasSources) {
        m_provenance.sources->setRowCount(int(sources->size()));
        int row = 0;
        for (const nlohmann::json& source : *sources) {
            const nlohmann::json s = source.is_object() ? source : nlohmann::json::object();
            const QString path = str(s, "path"), sha = str(s, "sha256");
            auto* file = new QTableWidgetItem(QFileInfo(path).fileName());
            file->setToolTip(path);
            auto* format = new QTableWidgetItem(str(s, "format"));
            const auto step = s.find("step");
            auto* stepItem = new QTableWidgetItem(
                step != s.end() && step->is_number_integer() ? QString::number(step->get<int64_t>()) : QStringLiteral("–"));
            stepItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            auto* digest = new QTableWidgetItem(sha.size() > 12 ? sha.left(12) + QStringLiteral("…") : sha);
            digest->setToolTip(tr("SHA-256 of %1:\n%2").arg(QFileInfo(path).fileName(), sha));
            digest->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
            m_provenance.sources->setItem(row, 0, file);
            m_provenance.sources->setItem(row, 1, format);
            m_provenance.sources->setItem(row, 2, stepItem);
            m_provenance.sources->setItem(row, 3, digest);
            ++row;
        }
        // Every row shown, no scroll bar: the sources are few (one per checkpoint).
        const int rows = std::min(m_provenance.sources->rowCount(), 8);
        m_provenance.sources->setFixedHeight(m_provenance.sources->horizontalHeader()->sizeHint().height()
            + rows * m_provenance.sources->verticalHeader()->defaultSectionSize()
            + 2 * m_provenance.sources->frameWidth() + 2);
    }

    QStringList notes;
    const QStringList prefixes = strings(j, "prefixes_removed");
    if (!prefixes.isEmpty())
        notes << tr("prefixes removed: %1").arg(prefixes.join(QStringLiteral(", ")).toHtmlEscaped());
    for (const QString& warning : strings(j, "warnings"))
        notes << QStringLiteral("<span style='color:#b35900'>⚠ %1</span>").arg(warning.toHtmlEscaped());
    m_provenance.notes->setText(notes.join(QStringLiteral("<br>")));
    m_provenance.notes->setVisible(!notes.isEmpty());
}

void ExperimentsPage::showExperiment(const icl::RunSummary& summary)
{
    showProvenance(summary.import_json);
    auto esc = [](const std::string& s) { return shownText(s).toHtmlEscaped(); };
    QString html;
    html += QStringLiteral("<h3>%1</h3>").arg(shownText(QFileInfo(qs(summary.path)).fileName()).toHtmlEscaped());
    html += QStringLiteral("<table cellspacing='2' cellpadding='2'>");
    auto row = [&](const QString& key, const QString& value) {
        html += QStringLiteral("<tr><td style='color:gray'>%1</td><td>%2</td></tr>").arg(key, value);
    };
    row(tr("file"), esc(summary.path));
    row(tr("format"), QStringLiteral("%1 v%2").arg(esc(summary.format)).arg(summary.format_version));
    row(tr("created"), esc(summary.created));
    row(tr("app version"), esc(summary.app_version));
    if (summary.checkpoints.empty())
        row(tr("checkpoints"), tr("none"));
    else
        row(tr("checkpoints"),
            tr("%1 (steps %2 … %3)")
                .arg(summary.checkpoints.size())
                .arg(summary.checkpoints.front().step)
                .arg(summary.checkpoints.back().step));
    html += QStringLiteral("</table>");

    html += QStringLiteral("<h4>%1</h4><table cellspacing='2' cellpadding='2'>").arg(tr("Final metrics"));
    for (const auto& [key, values] : summary.metrics) {
        double v = summary.lastMetric(key);
        // An imported checkpoint was not trained here: the 0 s the file stores is no wall time.
        if (!summary.import_json.empty() && key == "wall_time_s" && v == 0.0)
            v = std::numeric_limits<double>::quiet_NaN();
        html += QStringLiteral("<tr><td style='color:gray'>%1</td><td align='right'>%2</td></tr>")
                    .arg(esc(key), formatValue(v));
    }
    html += QStringLiteral("</table>");

    QString config = shownText(summary.config_json);
    try {
        config = qs(icl::jsonForDisplay(icl::parseBoundedJson(summary.config_json, summary.path), 2));
    } catch (const std::exception&) {
    }
    html += QStringLiteral("<h4>%1</h4><pre>%2</pre>").arg(tr("Config"), config.toHtmlEscaped());
    m_summary->setHtml(html);
}

} // namespace icl::gui
