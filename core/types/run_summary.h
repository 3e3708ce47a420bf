#pragma once
// Torch-free summary of an experiment file, read by the GUI and the CLI `info` command.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace icl {

struct ExperimentConfig; // core/io/config.h (torch-free)

/// One saved checkpoint (/checkpoints/<step>).
struct CheckpointInfo {
    int64_t step = 0;
    double train_loss = 0.0;
    double wall_time_s = 0.0;  ///< seconds of training when the checkpoint was written
    /// Empty, or the one-line reason the checkpoint cannot be used ("RUN.h5: damaged: /checkpoints/000000100
    /// (checksum mismatch)"); then step comes from the group's name and the other fields are 0.
    std::string damaged;
};

/// Everything in an experiment file except the parameters.
struct RunSummary {
    std::string path;
    std::string format;       ///< always "icl-workbench" for files that open
    int format_version = 0;
    std::string app_version;
    std::string created;      ///< ISO 8601
    std::string config_json;  ///< the full resolved config
    /// The same config parsed and validated once by readRunSummary (include core/io/config.h to read it): pages and
    /// commands read typed fields instead of parsing config_json again. Null in a summary not made by readRunSummary.
    std::shared_ptr<const ExperimentConfig> config;
    std::vector<CheckpointInfo> checkpoints;                 ///< ascending by step
    std::map<std::string, std::vector<double>> metrics;      ///< /metrics/<series>, e.g. "eval_loss", "baseline/gd_1"
    std::map<std::string, int> analyses;                     ///< /analysis/<kind> -> number of stored results
    /// /import's provenance JSON of a run imported from a foreign checkpoint (icl-cli import); empty for runs trained here.
    std::string import_json;
    /// True when the file carries checksums (format version >= 2); version 1 files cannot detect damage.
    bool checksums = false;
    /// Objects found damaged while opening (checkpoints, analyses), one line each; the rest is usable.
    std::vector<std::string> damaged;
    /// Remarks for `info` and the GUI (no checksums; a leftover RUN.h5.tmp of an interrupted commit).
    std::vector<std::string> notes;

    /// Last value of a metric series, or NaN when the series is missing or empty.
    double lastMetric(const std::string& series) const
    {
        auto it = metrics.find(series);
        if (it == metrics.end() || it->second.empty())
            return std::numeric_limits<double>::quiet_NaN();
        return it->second.back();
    }
};

} // namespace icl
