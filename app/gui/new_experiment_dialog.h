#pragma once
// "New experiment from preset" (Experiments page, File menu): preset, scale and output file.

#include <QDialog>
#include <QString>
#include <vector>

#include "app/gui/gui_forward.h"
#include "core/io/config.h"

namespace icl::gui {

/// The presets compiled into the workbench (icl::listPresets); none when they cannot be read.
std::vector<icl::PresetInfo> availablePresets();

/// Dialog of "New experiment from preset": preset (its description below it), scale (quick/paper) and output
/// file (default: TrainPage::defaultOutputPath of the preset). Thread affinity: GUI thread.
class NewExperimentDialog : public QDialog {
    Q_OBJECT
public:
    explicit NewExperimentDialog(const QString& preset, QWidget* parent = nullptr);
    QString preset() const;
    QString scale() const;
    QString outputPath() const;

private:
    QComboBox* m_preset = nullptr;
    QComboBox* m_scale = nullptr;
    QLineEdit* m_output = nullptr;
    QLabel* m_description = nullptr;
};

} // namespace icl::gui
