#include "app/gui/new_experiment_dialog.h"

#include <vector>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include "app/gui/page_widgets.h"
#include "app/gui/train_page.h"
#include "core/error.h"
#include "core/io/config.h"

namespace icl::gui {

std::vector<icl::PresetInfo> availablePresets()
{
    try {
        return icl::listPresets();
    } catch (const icl::Error&) {
        return {};
    }
}

NewExperimentDialog::NewExperimentDialog(const QString& preset, QWidget* parent)
    : QDialog(parent)
    , m_preset(new QComboBox(this))
    , m_scale(new QComboBox(this))
    , m_output(new QLineEdit(this))
    , m_description(new QLabel(this))
{
    setWindowTitle(tr("New experiment from preset"));
    const std::vector<icl::PresetInfo> presets = availablePresets();
    for (const icl::PresetInfo& p : presets)
        m_preset->addItem(qs(p.name), qs(p.name));
    const int index = m_preset->findData(preset.isEmpty() ? QString::fromLatin1(icl::kDefaultPreset) : preset);
    if (index >= 0)
        m_preset->setCurrentIndex(index);
    m_scale->addItem(tr("quick (minutes on a CPU)"), QStringLiteral("quick"));
    m_scale->addItem(tr("paper (published settings, GPU)"), QStringLiteral("paper"));
    m_description->setWordWrap(true);
    m_description->setStyleSheet(QStringLiteral("color: gray;"));
    auto* browse = new QPushButton(tr("Browse…"), this);
    auto* outputRow = makeFieldRow(m_output, { browse });

    auto* form = new QFormLayout;
    form->addRow(tr("Preset"), m_preset);
    form->addRow(QString(), m_description);
    form->addRow(tr("Scale"), m_scale);
    form->addRow(tr("Output file"), outputRow);
    auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    box->button(QDialogButtonBox::Ok)->setText(tr("Create and train"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(box);
    resize(560, sizeHint().height());

    auto update = [this, presets] {
        const QString name = m_preset->currentData().toString();
        for (const icl::PresetInfo& p : presets)
            if (qs(p.name) == name)
                m_description->setText(QStringLiteral("%1<br><i>%2</i>")
                                           .arg(qs(p.description).toHtmlEscaped(), qs(p.reproduces).toHtmlEscaped()));
        m_output->setText(TrainPage::defaultOutputPath(name));
    };
    connect(m_preset, &QComboBox::currentIndexChanged, this, update);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = askExperimentFileToWrite(this, tr("Experiment file"), m_output->text(), true);
        if (!path.isEmpty())
            m_output->setText(path);
    });
    connect(box, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(box, &QDialogButtonBox::rejected, this, &QDialog::reject);
    box->button(QDialogButtonBox::Ok)->setEnabled(m_preset->count() > 0);
    update();
}

QString NewExperimentDialog::preset() const
{
    return m_preset->currentData().toString();
}
QString NewExperimentDialog::scale() const
{
    return m_scale->currentData().toString();
}
QString NewExperimentDialog::outputPath() const
{
    return m_output->text().trimmed();
}

} // namespace icl::gui
