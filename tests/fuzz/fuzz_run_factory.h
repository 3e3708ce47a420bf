#pragma once
// A small valid experiment file for the fuzz harnesses and the seed maker: the default preset's config, two metric
// rows and one checkpoint of two parameters with optimizer state, written through the experiment-file API.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/io/config.h"
#include "core/io/experiment_file.h"

namespace icl::fuzz {

/// Writes the run described above to `path` (replacing it). Throws icl::Error when it cannot.
inline void writeSmallRun(const std::string& path, bool with_task_and_analysis)
{
    icl::ConfigRequest request;
    request.preset = icl::kDefaultPreset;
    request.steps = 20;
    createExperimentFile(path, icl::resolveConfig(request).dump(), true);
    CheckpointData c;
    c.step = 20;
    c.train_loss = 0.5;
    c.wall_time_s = 1.25;
    c.params = {{"blocks.0.attn.w_q", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"head.bias", {2}, {0.5f, -0.5f}}};
    c.optimizer = {{"blocks.0.attn.w_q/exp_avg", {2, 3}, {0, 0, 0, 0, 0, 1}}};
    c.optimizer_scalars = {{"blocks.0.attn.w_q/step", 20.0}};
    commitToExperimentFile(path, {{{"step", 10.0}, {"eval_loss", 1.0}}, {{"step", 20.0}, {"eval_loss", 0.75}}}, &c);
    if (with_task_and_analysis) {
        storeTaskArrays(path, {{"phi/0/B_1", {2, 2}, {1, 0, 0, 1}}});
        storeAnalysis(path, "probe", 20, 7, R"({"layer":0})", R"({"r2":[0.5,0.25]})");
    }
}

} // namespace icl::fuzz
