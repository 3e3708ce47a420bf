// fuzz_make_seeds OUT_DIR: writes the seeds that need the workbench's own writers into OUT_DIR/<harness>/:
// experiment_file (small runs with valid checksums), journal (journals in the format of core/io/hdf5_journal.cpp,
// with the harness's mode byte first), torch_zip, safetensors, prompt and config_json; and into
// OUT_DIR/_regressions/journal/ the forged journals of issue 46 (old size 0, garbage over the superblock, a page
// index that wraps), which make_seeds.sh puts among the journal harness's regression inputs. tests/fuzz/make_seeds.sh
// runs it together with make_seeds.py (NumPy, IDX, PNG and pickle seeds); the seeds are committed under
// tests/fuzz/corpus.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/io/config.h"
#include "core/io/prompt_file.h"
#include "core/io/weights_file.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_run_factory.h"

namespace fs = std::filesystem;

namespace {

void putU64(std::string& out, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void writeBytes(const fs::path& path, const std::string& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A journal body (the digest is appended by the harness when the mode byte's bit 0 is set).
std::string journal(uint8_t mode, uint64_t old_size, const std::vector<std::pair<uint64_t, std::string>>& pages)
{
    std::string j(1, static_cast<char>(mode));
    j += "ICLJRNL1";
    putU64(j, 4096);
    putU64(j, old_size);
    putU64(j, pages.size());
    for (const auto& [index, page] : pages) {
        putU64(j, index);
        std::string p = page;
        p.resize(4096, '\0');
        j += p;
    }
    return j;
}

// The journal a commit of one metric row into a copy of `base` leaves when it is killed at `point` (a fork stops
// there), in whatever format this build writes; "" when the commit did not get there.
std::string killedCommitJournal(const std::string& base, const std::string& scratch, const std::string& point)
{
    fs::copy_file(base, scratch, fs::copy_options::overwrite_existing);
    const pid_t pid = ::fork();
    if (pid == 0) {
        icl::setCommitFaultHookForTesting([point](const std::string& p) {
            if (p == point)
                ::_exit(0);
        });
        try {
            icl::commitToExperimentFile(scratch, {{{"step", 30.0}, {"eval_loss", 0.5}}}, nullptr);
        } catch (...) {
        }
        ::_exit(1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string journal = scratch + ".journal";
    std::string bytes;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && fs::exists(journal)) {
        const std::vector<char> b = icl::fuzz::fileBytes(journal);
        bytes.assign(b.begin(), b.end());
    }
    std::error_code ec;
    for (const std::string& f : {scratch, journal, scratch + ".lock", scratch + ".tmp"})
        fs::remove(f, ec);
    return bytes;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR\n");
        return 2;
    }
    const fs::path out = argv[1];
    for (const char* d :
         {"experiment_file", "journal", "_regressions/journal", "torch_zip", "safetensors", "prompt", "config_json"})
        fs::create_directories(out / d);
    try {
        icl::fuzz::writeSmallRun((out / "experiment_file" / "run_small.h5").string(), false);
        icl::fuzz::writeSmallRun((out / "experiment_file" / "run_task_analysis.h5").string(), true);

        // The journal harness's run (committed as tests/fuzz/journal_base.h5, so that journals written against it
        // are its own: same size, same file id where the format has one) and journals against it: written by hand
        // in format 1, and left by commits killed after the journal was synced and while pages were overwritten.
        const std::string base = (out / "_journal_base.h5").string();
        icl::fuzz::writeSmallRun(base, false);
        const std::vector<char> bytes = icl::fuzz::fileBytes(base);
        const uint64_t size = bytes.size();
        const std::string first_page(bytes.begin(), bytes.begin() + std::min<size_t>(4096, bytes.size()));
        for (const char* point : {"journal synced", "overwrote a page"}) {
            const std::string j = killedCommitJournal(base, (out / "journal" / "killed.h5").string(), point);
            if (!j.empty())
                writeBytes(out / "journal" / ("killed_at_" + std::string(point == std::string("journal synced")
                                                                           ? "journal_synced" : "overwrite")),
                           std::string(1, '\2') + j);  // mode 2: then a commit (the journal is complete)
        }
        writeBytes(out / "journal" / "complete_noop", journal(3, size, {{0, first_page}}));
        writeBytes(out / "journal" / "complete_empty", journal(1, size, {}));
        writeBytes(out / "journal" / "incomplete", journal(0, size, {{0, first_page}}));
        writeBytes(out / "_regressions" / "journal" / "old_size_zero", journal(3, 0, {}));
        writeBytes(out / "_regressions" / "journal" / "garbage_superblock", journal(3, size, {{0, std::string(4096, 'A')}}));
        writeBytes(out / "_regressions" / "journal" / "index_wraps", journal(3, uint64_t(1) << 62, {{(uint64_t(1) << 52) + 16, "B"}}));

        const std::vector<icl::NamedArray> tensors = {{"blocks.0.attn.w_q", {2, 3}, {1, 2, 3, 4, 5, 6}},
                                                      {"head.bias", {2}, {0.5f, -0.5f}},
                                                      {"scalar", {}, {3.0f}}};
        icl::writeTorchZip((out / "torch_zip" / "bare.pt").string(), tensors);
        icl::writeTorchZip((out / "torch_zip" / "with_config.pt").string(), tensors,
                           {{"icl_workbench_config", R"({"model":{"kind":"lsa"}})"}});
        icl::writeSafetensors((out / "safetensors" / "plain.safetensors").string(), tensors);
        icl::writeSafetensors((out / "safetensors" / "metadata.safetensors").string(), tensors,
                              {{"format", "pt"}, {"icl_workbench_config", R"({"model":{"d_model":4}})"}});

        icl::Prompt p;
        p.x = {{0.5, -1.0}, {1.5, 2.0}, {-0.25, 0.75}};
        p.y = {1.0, -2.0, std::nan("")};
        p.w = {1.0, -0.5};
        p.noise_std = 0.1;
        p.seed = 42;
        icl::writePromptFile((out / "prompt" / "written.json").string(), p, {{"source", "fuzz seed"}});
        icl::writePromptFile((out / "prompt" / "written.csv").string(), p, {{"source", "fuzz seed"}});

        for (const icl::PresetInfo& preset : icl::listPresets()) {
            icl::ConfigRequest request;
            request.preset = preset.name;
            std::ofstream((out / "config_json" / (preset.name + ".json")).string()) << icl::resolveConfig(request).dump(1);
        }
    } catch (const icl::Error& e) {
        std::fprintf(stderr, "fuzz_make_seeds: %s\n", e.what());
        return 1;
    }
    return 0;
}
