// Fuzz harness: a forged RUN.h5.journal beside a valid run file (core/io/hdf5_journal.h). The input's first byte
// selects what the harness does with the rest, the journal:
//   bit 0: append the hex SHA-256 of the journal, as a complete journal ends (docs/file-integrity.md), so that
//          mutations get past the checksum to the header and the page records;
//   bit 1: after the read-only open, commit one metric row (a writer, which may roll the file back).
// Checked beyond "no crash": a read-only open (readRunSummary, verifyExperimentFile) leaves RUN.h5 and the journal
// byte-identical (issue 46: only the writer applies or removes a journal; ICL_FUZZ_JOURNAL_READONLY=0 turns this
// check off, to explore the roll-back code of a build that still applies journals on open), and a writer never
// leaves the file much larger than the run plus what one commit adds. The run is tests/fuzz/journal_base.h5
// (ICL_FUZZ_JOURNAL_BASE), fixed so that the seeds, journals of killed commits into it (make_seeds.cpp), are its
// own. Seeds: corpus/journal.
#include <algorithm>
#include <cstring>

#include "core/io/checksums.h"
#include "core/io/experiment_file.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::vector<char> g_base;   // the valid run
uintmax_t g_growth = 0;     // bytes one commit of a metric row adds to it
bool g_check_readonly = true;

const std::vector<icl::MetricsRow> kRow = {{{"step", 30.0}, {"eval_loss", 0.5}}};

void writeBase(const std::string& path)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(g_base.data(), static_cast<std::streamsize>(g_base.size()));
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    icl::fuzz::initialize();
    const char* check = std::getenv("ICL_FUZZ_JOURNAL_READONLY");
    g_check_readonly = !(check && std::strcmp(check, "0") == 0);
    g_base = icl::fuzz::fileBytes(ICL_FUZZ_JOURNAL_BASE);
    if (g_base.empty()) {
        std::fprintf(stderr, "fuzz_journal: cannot read %s\n", ICL_FUZZ_JOURNAL_BASE);
        std::abort();
    }
    const std::string base = icl::fuzz::scratchDir() + "/base.h5";
    writeBase(base);
    icl::commitToExperimentFile(base, kRow, nullptr);
    g_growth = std::filesystem::file_size(base) - g_base.size();
    std::filesystem::remove(base);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    const uint8_t mode = data[0];
    std::string journal(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (mode & 1)
        journal += icl::checksums::Sha256().bytes(journal.data(), journal.size()).hex();
    const std::string path = icl::fuzz::scratchDir() + "/RUN.h5";
    writeBase(path);
    const std::string jpath = icl::fuzz::writeInput("RUN.h5.journal", journal.data(), journal.size());

    icl::fuzz::readOrRefuse("readRunSummary", [&] { (void)icl::readRunSummary(path); });
    icl::fuzz::readOrRefuse("verifyExperimentFile", [&] { (void)icl::verifyExperimentFile(path); });
    if (g_check_readonly) {
        std::error_code size_ec;
        const uintmax_t bytes = std::filesystem::file_size(path, size_ec);  // before reading: it may be 64 GiB
        if (size_ec || bytes != g_base.size() || icl::fuzz::fileBytes(path) != g_base)
            icl::fuzz::finding("readRunSummary", "a read-only open beside a journal changed RUN.h5 (" +
                                                     std::to_string(g_base.size()) + " -> " +
                                                     std::to_string(size_ec ? 0 : bytes) + " bytes)");
        std::error_code ec;
        if (!std::filesystem::exists(jpath, ec))
            icl::fuzz::finding("readRunSummary", "a read-only open removed RUN.h5.journal");
        const std::vector<char> j = icl::fuzz::fileBytes(jpath);
        if (j.size() != journal.size() || !std::equal(j.begin(), j.end(), journal.begin()))
            icl::fuzz::finding("readRunSummary", "a read-only open changed RUN.h5.journal");
    }
    if (mode & 2) {
        icl::fuzz::readOrRefuse("commitToExperimentFile", [&] { icl::commitToExperimentFile(path, kRow, nullptr); });
        std::error_code ec;
        const uintmax_t bytes = std::filesystem::file_size(path, ec);
        if (!ec && bytes > g_base.size() + 2 * g_growth + 65536)
            icl::fuzz::finding("commitToExperimentFile", "a commit beside a forged journal grew RUN.h5 from " +
                                                             std::to_string(g_base.size()) + " to " +
                                                             std::to_string(bytes) + " bytes");
    }
    std::error_code ec;
    std::filesystem::remove(jpath, ec);
    return 0;
}
