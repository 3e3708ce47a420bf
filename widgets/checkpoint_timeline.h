#pragma once
// Slider over the saved checkpoints of an experiment.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <QWidget>

class QLabel;
class QSlider;

namespace icl::widgets {

/// A slider whose positions are the saved checkpoint steps (ascending), with a "step N" label.
/// Every analysis page follows the selected checkpoint. Thread affinity: GUI thread only.
class CheckpointTimeline : public QWidget {
    Q_OBJECT
public:
    explicit CheckpointTimeline(QWidget* parent = nullptr);

    /// Replaces the checkpoint steps (sorted ascending here) and selects the last one without
    /// emitting checkpointSelected. An empty list disables the slider.
    void setSteps(std::vector<int64_t> steps);
    const std::vector<int64_t>& steps() const { return m_steps; }

    /// Marks checkpoints that cannot be used (checksum mismatch): step -> one-line reason. They stay on
    /// the slider (the others remain usable); when one is selected the label reads "step N (damaged)"
    /// in red with the reason as its tool tip. Call after setSteps; setSteps clears the marks. When the
    /// last step is selected and damaged, selects the last usable one instead, without emitting.
    void setDamaged(std::map<int64_t, std::string> damaged);
    bool isDamaged(int64_t step) const { return m_damaged.count(step) > 0; }

    /// Selected step, or -1 when there are no checkpoints.
    int64_t currentStep() const;

    /// Selects the checkpoint with this step (or the nearest saved one) and emits checkpointSelected
    /// if the selection changed. Returns the step actually selected, -1 when there are none.
    int64_t setCurrentStep(int64_t step);

    QSlider* slider() const { return m_slider; }

Q_SIGNALS:
    /// The user (or setCurrentStep) selected the checkpoint saved at `step`.
    void checkpointSelected(qint64 step);

private:
    void updateLabel();

    std::vector<int64_t> m_steps;
    std::map<int64_t, std::string> m_damaged;
    QSlider* m_slider = nullptr;
    QLabel* m_label = nullptr;
    QLabel* m_range = nullptr;
};

} // namespace icl::widgets
