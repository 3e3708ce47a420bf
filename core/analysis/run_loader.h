#pragma once
// Loading a checkpoint of an experiment file into a live model, for analyses. Core-internal.

#include <string>

#include "core/baselines/baselines.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"

namespace icl {

/// A checkpoint ready for analysis: its config, summary, model (eval mode, CPU, float32) and the
/// baselines fitted during training.
struct LoadedRun {
    RunSummary summary;
    ExperimentConfig config;
    int64_t step = 0;
    ModelHandle model;
    FittedBaselines fitted;
};

/// Loads checkpoint `step` of `path`, its parameters only (−1: the last checkpoint not damaged,
/// lastUsableCheckpoint). Throws icl::Error for a file without checkpoints, an absent or damaged step,
/// parameters that do not fit the config's model, or a few-shot classification run (its models read label
/// sequences, not prompts).
LoadedRun loadRun(const std::string& path, int64_t step);

} // namespace icl
