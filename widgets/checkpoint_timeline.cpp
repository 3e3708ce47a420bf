#include "widgets/checkpoint_timeline.h"

#include <algorithm>
#include <cstdlib>

#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>

namespace icl::widgets {

CheckpointTimeline::CheckpointTimeline(QWidget* parent)
    : QWidget(parent)
    , m_slider(new QSlider(Qt::Horizontal, this))
    , m_label(new QLabel(this))
    , m_range(new QLabel(this))
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    auto* caption = new QLabel(tr("Checkpoint:"), this);
    layout->addWidget(caption);
    layout->addWidget(m_slider, 1);
    layout->addWidget(m_label);
    layout->addWidget(m_range);
    m_slider->setObjectName(QStringLiteral("checkpointSlider"));
    m_slider->setTickPosition(QSlider::TicksBelow);
    m_slider->setPageStep(1);
    m_label->setObjectName(QStringLiteral("checkpointLabel"));
    m_label->setMinimumWidth(m_label->fontMetrics().horizontalAdvance(QStringLiteral("step 000000000")));
    m_range->setStyleSheet(QStringLiteral("color: palette(mid);"));
    m_slider->setToolTip(tr("Saved checkpoints of the open experiment; analysis pages follow the selection"));

    connect(m_slider, &QSlider::valueChanged, this, [this](int index) {
        updateLabel();
        if (index >= 0 && size_t(index) < m_steps.size())
            Q_EMIT checkpointSelected(qint64(m_steps[size_t(index)]));
    });
    setSteps({});
}

void CheckpointTimeline::setSteps(std::vector<int64_t> steps)
{
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    m_steps = std::move(steps);
    m_damaged.clear();
    {
        const QSignalBlocker blocker(m_slider);
        m_slider->setRange(0, std::max<int>(0, int(m_steps.size()) - 1));
        m_slider->setValue(m_slider->maximum());
    }
    m_slider->setEnabled(!m_steps.empty());
    m_range->setText(m_steps.empty()
            ? QString()
            : tr("(%1 saved, %2 … %3)").arg(m_steps.size()).arg(m_steps.front()).arg(m_steps.back()));
    updateLabel();
}

int64_t CheckpointTimeline::currentStep() const
{
    const int index = m_slider->value();
    if (m_steps.empty() || index < 0 || size_t(index) >= m_steps.size())
        return -1;
    return m_steps[size_t(index)];
}

int64_t CheckpointTimeline::setCurrentStep(int64_t step)
{
    if (m_steps.empty())
        return -1;
    size_t best = 0;
    for (size_t i = 1; i < m_steps.size(); ++i)
        if (std::llabs(m_steps[i] - step) < std::llabs(m_steps[best] - step))
            best = i;
    m_slider->setValue(int(best)); // emits checkpointSelected when it changes
    return m_steps[best];
}

void CheckpointTimeline::setDamaged(std::map<int64_t, std::string> damaged)
{
    m_damaged = std::move(damaged);
    if (m_slider->value() == m_slider->maximum()) { // the default selection: the last checkpoint that is usable
        int i = m_slider->maximum();
        while (i > 0 && m_damaged.count(m_steps[size_t(i)]))
            --i;
        const QSignalBlocker blocker(m_slider);
        m_slider->setValue(i);
    }
    const QString text = m_range->text().section(QStringLiteral(" — "), 0, 0);
    m_range->setText(m_damaged.empty() ? text : tr("%1 — %2 damaged").arg(text).arg(m_damaged.size()));
    updateLabel();
}

void CheckpointTimeline::updateLabel()
{
    const int64_t step = currentStep();
    const auto damaged = m_damaged.find(step);
    if (step >= 0 && damaged != m_damaged.end()) {
        m_label->setText(tr("step %1 (damaged)").arg(step));
        m_label->setStyleSheet(QStringLiteral("color: #c0392b; font-weight: bold;"));
        m_label->setToolTip(QString::fromStdString(damaged->second));
        return;
    }
    m_label->setStyleSheet(QString());
    m_label->setToolTip(QString());
    m_label->setText(step < 0 ? tr("no checkpoints") : tr("step %1").arg(step));
}

} // namespace icl::widgets
