#include "widgets/checkpoint_timeline.h"

#include <QLabel>
#include <QSignalSpy>
#include <QSlider>

#include <gtest/gtest.h>

using icl::widgets::CheckpointTimeline;

TEST(CheckpointTimeline, SortsStepsAndSelectsTheLast)
{
    CheckpointTimeline timeline;
    timeline.setSteps({ 300, 100, 200 });
    EXPECT_EQ(timeline.steps(), (std::vector<int64_t> { 100, 200, 300 }));
    EXPECT_EQ(timeline.currentStep(), 300);
    auto* label = timeline.findChild<QLabel*>("checkpointLabel");
    ASSERT_NE(label, nullptr);
    EXPECT_EQ(label->text(), "step 300");
    EXPECT_TRUE(timeline.slider()->isEnabled());
}

TEST(CheckpointTimeline, SliderEmitsTheStepOfTheCheckpoint)
{
    CheckpointTimeline timeline;
    timeline.setSteps({ 0, 1000, 2000 });
    QSignalSpy spy(&timeline, &CheckpointTimeline::checkpointSelected);
    timeline.slider()->setValue(1);
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toLongLong(), 1000);
    EXPECT_EQ(timeline.findChild<QLabel*>("checkpointLabel")->text(), "step 1000");
}

TEST(CheckpointTimeline, SetCurrentStepPicksTheNearestSavedStep)
{
    CheckpointTimeline timeline;
    timeline.setSteps({ 0, 1000, 2000 });
    QSignalSpy spy(&timeline, &CheckpointTimeline::checkpointSelected);
    EXPECT_EQ(timeline.setCurrentStep(900), 1000);
    ASSERT_EQ(spy.count(), 1);
    EXPECT_EQ(spy.at(0).at(0).toLongLong(), 1000);
    EXPECT_EQ(timeline.currentStep(), 1000);
}

TEST(CheckpointTimeline, EmptyListDisablesTheSlider)
{
    CheckpointTimeline timeline;
    timeline.setSteps({});
    EXPECT_EQ(timeline.currentStep(), -1);
    EXPECT_EQ(timeline.setCurrentStep(5), -1);
    EXPECT_FALSE(timeline.slider()->isEnabled());
    EXPECT_EQ(timeline.findChild<QLabel*>("checkpointLabel")->text(), "no checkpoints");
}

TEST(CheckpointTimeline, DamagedCheckpointsAreMarkedAndTheOthersStaySelectable)
{
    CheckpointTimeline timeline;
    timeline.setSteps({ 0, 100, 200 });
    timeline.setDamaged({ { 100, "run.h5: damaged: /checkpoints/000000100 (checksum mismatch)" } });
    auto* label = timeline.findChild<QLabel*>("checkpointLabel");
    EXPECT_EQ(label->text(), "step 200");
    EXPECT_TRUE(label->toolTip().isEmpty());
    QSignalSpy spy(&timeline, &CheckpointTimeline::checkpointSelected);
    EXPECT_EQ(timeline.setCurrentStep(100), 100);
    EXPECT_EQ(label->text(), "step 100 (damaged)");
    EXPECT_EQ(label->toolTip(), "run.h5: damaged: /checkpoints/000000100 (checksum mismatch)");
    EXPECT_TRUE(timeline.isDamaged(100));
    EXPECT_FALSE(timeline.isDamaged(0));
    EXPECT_EQ(timeline.setCurrentStep(0), 0);
    EXPECT_EQ(label->text(), "step 0");
    EXPECT_EQ(spy.count(), 2);
    timeline.setSteps({ 0, 100 });
    EXPECT_FALSE(timeline.isDamaged(100)) << "new steps clear the marks";
}

TEST(CheckpointTimeline, ADamagedLastCheckpointIsNotTheDefaultSelection)
{
    CheckpointTimeline timeline;
    QSignalSpy spy(&timeline, &CheckpointTimeline::checkpointSelected);
    timeline.setSteps({ 0, 100, 200, 300 });
    timeline.setDamaged({ { 200, "run.h5: damaged: /checkpoints/000000200 (checksum mismatch)" },
        { 300, "run.h5: damaged: /checkpoints/000000300 (checksum mismatch)" } });
    EXPECT_EQ(timeline.currentStep(), 100) << "the last usable checkpoint";
    EXPECT_EQ(timeline.findChild<QLabel*>("checkpointLabel")->text(), "step 100");
    EXPECT_EQ(spy.count(), 0) << "as setSteps' own selection, it is not a user's choice";
    EXPECT_EQ(timeline.setCurrentStep(300), 300) << "a damaged step stays selectable";

    timeline.setSteps({ 0, 100 });
    timeline.setCurrentStep(0);
    timeline.setDamaged({ { 100, "run.h5: damaged: /checkpoints/000000100 (checksum mismatch)" } });
    EXPECT_EQ(timeline.currentStep(), 0);
    timeline.setCurrentStep(100);
    timeline.setDamaged({ { 100, "run.h5: damaged: /checkpoints/000000100 (checksum mismatch)" } });
    EXPECT_EQ(timeline.currentStep(), 0) << "the last step selected and damaged moves to the usable one";
}
