#include "app/gui/checkpoint_table.h"

#include <gtest/gtest.h>

#include "core/types/run_summary.h"

using icl::gui::CheckpointTable;

TEST(CheckpointTable, ADamagedRecordShowsNoNumbers)
{
    // readRunSummary leaves a damaged record's numbers 0: the table must not show them as a loss of 0.
    icl::RunSummary summary;
    summary.path = "run.h5";
    icl::CheckpointInfo intact;
    intact.step = 100;
    intact.train_loss = 0.5;
    intact.wall_time_s = 75.0;
    icl::CheckpointInfo damaged;
    damaged.step = 200;
    damaged.damaged = "run.h5: damaged: /checkpoints/000000200 (checksum mismatch)";
    summary.checkpoints = { intact, damaged };

    CheckpointTable table;
    table.showRun(summary);
    ASSERT_EQ(table.rowCount(), 2);
    EXPECT_EQ(table.item(0, 1)->text(), "0.5");
    EXPECT_EQ(table.item(0, 2)->text(), "1:15");
    EXPECT_EQ(table.item(1, 0)->text(), "200");
    EXPECT_EQ(table.item(1, 1)->text(), "damaged");
    EXPECT_EQ(table.item(1, 2)->text(), QString::fromUtf8("—"));
    EXPECT_EQ(table.item(1, 1)->toolTip().toStdString(), damaged.damaged);
}
