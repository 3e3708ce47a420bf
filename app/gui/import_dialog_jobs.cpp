// ImportDialog's two jobs on its worker: planning the import (what the source holds, the config values it lacks,
// shown in the dialog as they are found) and running it.
#include "app/gui/import_dialog.h"

#include <algorithm>

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "app/gui/analysis_runner.h"
#include "app/gui/page_widgets.h"

namespace icl::gui {

namespace {

constexpr int kPlanJob = 1;
constexpr int kImportJob = 2;

} // namespace

QWidget* ImportDialog::missingField(const QString& key) const
{
    for (const auto& [k, field] : m_fields)
        if (k == key)
            return field;
    return nullptr;
}

QString ImportDialog::fieldValue(const QString& key) const
{
    QWidget* field = missingField(key);
    if (auto* spin = qobject_cast<QSpinBox*>(field))
        return spin->value() > spin->minimum() ? QString::number(spin->value()) : QString();
    if (auto* combo = qobject_cast<QComboBox*>(field))
        return combo->currentData().toString();
    if (auto* line = qobject_cast<QLineEdit*>(field))
        return line->text().trimmed();
    return {};
}

void ImportDialog::addMissingFields(const std::vector<std::string>& missing)
{
    for (const std::string& k : missing) {
        const QString key = qs(k);
        if (missingField(key))
            continue;
        QWidget* field = nullptr;
        QString hint;
        const QString required = tr("required");
        if (key == QLatin1String("model.n_heads") || key == QLatin1String("task.n_context")
            || key == QLatin1String("task.d")) {
            auto* spin = new QSpinBox(this);
            spin->setRange(0, key == QLatin1String("model.n_heads") ? 4096 : 1000000);
            spin->setSpecialValueText(required); // 0: not given yet
            spin->setMinimumWidth(120);
            if (key == QLatin1String("model.n_heads"))
                hint = tr("attention heads per layer; must divide d_model (the weights do not say)");
            else if (key == QLatin1String("task.n_context"))
                hint = tr("in-context examples per prompt");
            else
                hint = tr("input dimension d of the regression task");
            connect(spin, &QSpinBox::valueChanged, this, [this] {
                updateButtons();
                m_replanTimer->start();
            });
            field = spin;
        } else if (key == QLatin1String("task.kind")) {
            auto* combo = new QComboBox(this);
            combo->addItem(tr("choose…"), QString());
            for (const char* kind : { "linear_regression", "sparse_linear_regression", "noisy_linear_regression" })
                combo->addItem(QString::fromLatin1(kind), QString::fromLatin1(kind));
            hint = tr("the regression task the model was trained on");
            connect(combo, &QComboBox::currentIndexChanged, this, [this] {
                updateButtons();
                m_replanTimer->start();
            });
            field = combo;
        } else {
            auto* line = new QLineEdit(this);
            line->setPlaceholderText(required);
            line->setMinimumWidth(240);
            hint = tr("a number, true / false or a string");
            connect(line, &QLineEdit::textChanged, this, &ImportDialog::updateButtons);
            connect(line, &QLineEdit::editingFinished, this, [this, line] {
                if (line->isModified()) {
                    line->setModified(false);
                    replan();
                }
            });
            field = line;
        }
        field->setObjectName(QStringLiteral("missing:%1").arg(key));
        field->setToolTip(hint);
        auto* row = new QWidget(this);
        auto* rowLayout = new QHBoxLayout(row);
        rowLayout->setContentsMargins(0, 0, 0, 0);
        field->setParent(row);
        rowLayout->addWidget(field);
        rowLayout->addWidget(grayLabel(hint, row), 1);
        auto* label = new QLabel(key, this);
        QFont bold = label->font();
        bold.setBold(true);
        label->setFont(bold);
        label->setToolTip(tr("No file gives %1").arg(key));
        m_form->insertRow(int(m_fields.size()), label, row);
        m_fields.emplace_back(key, field);
    }
    m_noMissing->setVisible(m_fields.empty());
}

icl::ImportRequest ImportDialog::request() const
{
    icl::ImportRequest request;
    request.source = m_sourcePath.toStdString();
    request.config_file = QDir::fromNativeSeparators(m_configFile->text().trimmed()).toStdString();
    for (const QString& s : sets())
        request.sets.push_back(s.toStdString());
    request.out_path = outputPath().toStdString();
    request.force = m_replace->isChecked();
    return request;
}

void ImportDialog::replan()
{
    m_replanTimer->stop();
    if (m_sourcePath.isEmpty() || m_importing)
        return;
    const icl::ImportRequest request = this->request();
    const uint64_t serial = ++m_planSerial;
    m_planOk = false;
    m_status->setText(tr("Reading %1…").arg(shownText(QFileInfo(m_sourcePath).fileName())));
    m_runner->setSource(m_sourcePath.toStdString());
    m_runner->enqueue(
        kPlanJob, tr("Planning the import"),
        [this, request, serial]() -> AnalysisRunner::Continuation {
            // Worker thread: only the copied request is used here.
            auto plan = std::make_shared<icl::ImportPlan>(icl::planImport(request));
            return [this, plan, serial] {
                if (serial == m_planSerial)
                    showPlan(*plan);
            };
        },
        [this, serial](const QString& message) {
            if (serial == m_planSerial)
                showPlanError(message);
        });
    updateButtons();
}

void ImportDialog::fitSourcesHeight()
{
    // As tall as its rows (one to five; more scroll), so that the mapping table gets the room.
    const int rows = std::clamp(m_sources->rowCount(), 1, 5);
    m_sources->setFixedHeight(m_sources->horizontalHeader()->sizeHint().height()
        + rows * m_sources->verticalHeader()->defaultSectionSize() + 2 * m_sources->frameWidth());
}

void ImportDialog::clearPlanView()
{
    m_sources->setRowCount(0);
    fitSourcesHeight();
    m_mapping->setRowCount(0);
    m_dropped->clear();
    m_inferred->setText(QStringLiteral("–"));
    m_layout->setText(QStringLiteral("–"));
    m_prefixes->setText(QStringLiteral("–"));
    m_warnings->clear();
    m_warnings->setVisible(false);
    m_tabs->setTabText(0, tr("Key mapping"));
    m_tabs->setTabText(1, tr("Dropped"));
    m_noMissing->setVisible(false); // said only of a plan
}

void ImportDialog::showPlan(const icl::ImportPlan& plan)
{
    m_plan = plan;
    m_planOk = true;
    setError({});

    m_sources->setRowCount(int(plan.sources.size()));
    for (int r = 0; r < int(plan.sources.size()); ++r) {
        const icl::ImportSource& s = plan.sources[size_t(r)];
        auto* file = new QTableWidgetItem(shownText(QFileInfo(qs(s.path)).fileName()));
        file->setToolTip(shownText(QDir::toNativeSeparators(qs(s.path))));
        auto* step = new QTableWidgetItem(QString::number(s.step));
        step->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        const QString sha = shownText(s.sha256);
        auto* digest = new QTableWidgetItem(sha.left(12) + (sha.size() > 12 ? QStringLiteral("…") : QString()));
        digest->setToolTip(sha);
        digest->setFont(QFont(QStringLiteral("monospace")));
        m_sources->setItem(r, 0, file);
        m_sources->setItem(r, 1, new QTableWidgetItem(shownText(s.format)));
        m_sources->setItem(r, 2, step);
        m_sources->setItem(r, 3, digest);
    }
    fitSourcesHeight();
    m_inferred->setText(plan.inferred.empty() ? QStringLiteral("–") : shownText(plan.inferred));
    m_layout->setText(tr("%1 names → workbench %2").arg(shownText(plan.layout), shownText(plan.model_kind)));
    QStringList prefixes;
    for (const std::string& p : plan.prefixes_removed)
        prefixes << QStringLiteral("\"%1\"").arg(shownText(p));
    m_prefixes->setText(prefixes.isEmpty() ? tr("none") : prefixes.join(QStringLiteral(", ")));
    QStringList warnings;
    for (const std::string& w : plan.warnings)
        warnings << QStringLiteral("⚠ ") + shownText(w);
    m_warnings->setText(warnings.join(QLatin1Char('\n')));
    m_warnings->setVisible(!warnings.isEmpty());

    m_mapping->setRowCount(int(plan.mapping.size()));
    for (int r = 0; r < int(plan.mapping.size()); ++r) {
        const auto& [from, to] = plan.mapping[size_t(r)];
        auto* source = new QTableWidgetItem(shownText(from));
        source->setToolTip(shownText(from));
        auto* target = new QTableWidgetItem(shownText(to));
        target->setToolTip(shownText(to));
        m_mapping->setItem(r, 0, source);
        m_mapping->setItem(r, 1, target);
    }
    m_dropped->clear();
    for (const std::string& d : plan.dropped)
        m_dropped->addItem(shownText(d));
    m_tabs->setTabText(0, tr("Key mapping (%1)").arg(plan.mapping.size()));
    m_tabs->setTabText(1, tr("Dropped (%1)").arg(plan.dropped.size()));

    addMissingFields(plan.missing);
    if (!plan.missing.empty()) {
        QStringList keys;
        for (const std::string& k : plan.missing)
            keys << qs(k);
        m_status->setText(tr("No file gives %1: fill in the fields marked required.").arg(keys.join(QStringLiteral(", "))));
    } else {
        m_status->setText(tr("Ready to import %n checkpoint(s).", nullptr, int(plan.sources.size())));
    }
    updateButtons();
    Q_EMIT planFinished(true, QString());
}

void ImportDialog::showPlanError(const QString& message)
{
    m_planOk = false;
    clearPlanView();
    setError(message);
    m_status->setText(tr("Cannot import this source as it is."));
    updateButtons();
    Q_EMIT planFinished(false, message);
}

void ImportDialog::setError(const QString& message)
{
    m_error = message;
    // icl::Error messages are one line; anything else (e.g. a LibTorch error with its backtrace) shows its
    // first line, the whole text in the tooltip.
    const QString firstLine = message.section(QLatin1Char('\n'), 0, 0);
    m_errorLabel->setText(firstLine);
    m_errorLabel->setToolTip(firstLine == message ? QString() : message);
    m_errorLabel->setVisible(!message.isEmpty());
}

void ImportDialog::startImport()
{
    if (isBusy() || !m_planOk || !m_import->isEnabled())
        return;
    const icl::ImportRequest request = this->request();
    const QString out = outputPath();
    auto cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_cancelFlag = cancelFlag;
    m_importing = true;
    setError({});
    m_progress->setRange(0, 0); // busy until the first report
    m_progress->setTextVisible(true);
    m_status->setText(tr("Importing into %1…").arg(QFileInfo(out).fileName()));
    m_runner->enqueue(
        kImportJob, tr("Importing"),
        [this, request, cancelFlag, out]() -> AnalysisRunner::Continuation {
            // Worker thread: progress goes to the GUI thread as queued calls; the dialog's destructor joins
            // this thread before the dialog goes away.
            const icl::ImportCallback callback
                = [this, cancelFlag](int64_t done, int64_t total, const std::string& message) {
                      const QString text = shownText(message);
                      QMetaObject::invokeMethod(
                          this, [this, done, total, text] { onImportProgress(done, total, text); },
                          Qt::QueuedConnection);
                      return !cancelFlag->load();
                  };
            auto result = std::make_shared<icl::ImportResult>(icl::importWeights(request, callback));
            return [this, result, out] { finishImport(*result, out); };
        },
        [this](const QString& message) { failImport(message); });
    updateButtons();
}

void ImportDialog::cancelImport()
{
    if (!m_importing || !m_cancelFlag)
        return;
    m_cancelFlag->store(true);
    m_status->setText(tr("Cancelling…"));
    m_cancel->setEnabled(false);
}

void ImportDialog::onImportProgress(qint64 done, qint64 total, const QString& message)
{
    if (!m_importing)
        return;
    if (total > 0) {
        m_progress->setRange(0, int(std::min<qint64>(total, 1 << 30)));
        m_progress->setValue(int(std::min(done, total)));
    }
    if (!m_cancelFlag || !m_cancelFlag->load())
        m_status->setText(message.isEmpty() ? tr("Checkpoint %1 of %2").arg(done).arg(total) : message);
}

void ImportDialog::finishImport(const icl::ImportResult& result, const QString& outPath)
{
    m_importing = false;
    m_cancelFlag.reset();
    m_cancel->setEnabled(true);
    if (result.cancelled) {
        m_progress->setRange(0, 1);
        m_progress->setValue(0);
        const QString message = tr("Import cancelled: nothing was written.");
        m_status->setText(message);
        updateButtons();
        Q_EMIT importFinished(false, message);
        if (m_closeWhenDone)
            QDialog::reject();
        return;
    }
    m_progress->setRange(0, 1);
    m_progress->setValue(1);
    rememberFolder(m_sourcePath);
    const QString message = tr("Imported %n checkpoint(s) into %1 (eval loss %2).", nullptr, int(result.steps.size()))
                                .arg(QDir::toNativeSeparators(outPath))
                                .arg(result.eval_loss, 0, 'g', 4);
    m_status->setText(message);
    updateButtons();
    Q_EMIT importFinished(true, message);
    Q_EMIT imported(outPath);
    accept();
}

void ImportDialog::failImport(const QString& message)
{
    m_importing = false;
    m_cancelFlag.reset();
    m_cancel->setEnabled(true);
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_progress->setTextVisible(false);
    setError(message);
    m_status->setText(tr("Import failed: nothing was written."));
    updateButtons();
    Q_EMIT importFinished(false, message);
    if (m_closeWhenDone)
        QDialog::reject();
}

} // namespace icl::gui
