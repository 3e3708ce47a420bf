// Fuzz harness: opening an experiment file (core/io/experiment_file.h) as every read-only command does:
// readRunSummary, then readCheckpoint of each checkpoint it lists (whole, and its parameters only as the analyses
// read it), lastUsableCheckpoint, readTaskArrays, readStoredAnalyses, and
// verifyExperimentFile (which never throws). The input is written to /dev/shm as RUN.h5 (the readers take a path;
// HDF5's core driver would need a reader that takes a file access list). Seeds: corpus/experiment_file (small
// runs written by fuzz_make_seeds: a checkpoint, metrics, task arrays, an analysis; version 1 and 2).
// Beyond "no crash": a read-only open must leave the file as it was.
#include <algorithm>

#include "core/io/experiment_file.h"
#include "tests/fuzz/fuzz_file_driver.h"

const char* const icl::fuzz::kInputName = "RUN.h5";

void icl::fuzz::fuzzInput(const std::string& path, const uint8_t* data, size_t size)
{
    icl::RunSummary summary;
    if (icl::fuzz::readOrRefuse("readRunSummary", [&] { summary = icl::readRunSummary(path); })) {
        for (const icl::CheckpointInfo& c : summary.checkpoints) {
            icl::fuzz::readOrRefuse("readCheckpoint", [&] { (void)icl::readCheckpoint(path, c.step); });
            icl::fuzz::readOrRefuse("readCheckpoint(ParamsOnly)", [&] {
                (void)icl::readCheckpoint(path, c.step, icl::CheckpointParts::ParamsOnly);
            });
        }
        if (!summary.checkpoints.empty())
            icl::fuzz::readOrRefuse("lastUsableCheckpoint", [&] { (void)icl::lastUsableCheckpoint(summary); });
        icl::fuzz::readOrRefuse("readTaskArrays", [&] { (void)icl::readTaskArrays(path); });
        for (const auto& analyses : summary.analyses) {
            const std::string& kind = analyses.first;
            icl::fuzz::readOrRefuse("readStoredAnalyses", [&] { (void)icl::readStoredAnalyses(path, kind); });
        }
    }
    icl::fuzz::readOrRefuse("verifyExperimentFile", [&] { (void)icl::verifyExperimentFile(path); });
    std::error_code ec;
    if (std::filesystem::file_size(path, ec) != size || ec)  // before reading it back
        icl::fuzz::finding("readRunSummary", "a read-only open changed the size of RUN.h5");
    const std::vector<char> after = icl::fuzz::fileBytes(path);
    if (after.size() != size || !std::equal(after.begin(), after.end(), reinterpret_cast<const char*>(data)))
        icl::fuzz::finding("readRunSummary", "a read-only open changed RUN.h5");
}
