// The journal belongs to its writer (docs/file-integrity.md): read-only opens never write the run file, whatever
// RUN.h5.journal lies beside it; they read the file as it was before an interrupted commit or refuse in one line.
// Only the writer (a commit, recoverExperimentFile) applies a journal, and only one that is the file's own.
// Journals are forged here from the layout in docs/file-format.md ("Commits and the journal"), independently of
// the code that writes them; SHA-256 comes from OpenSSL directly.
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <hdf5.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/io/checksums.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "tests/support/core_checks.h"

namespace fs = std::filesystem;

namespace {
namespace journal_tests {

constexpr uint64_t kPage = 4096;

std::string lsaConfig()
{
    return icl::test::quickPresetConfig("vonoswald-lsa-1layer").dump();
}

icl::CheckpointData checkpointAt(int64_t step)
{
    icl::CheckpointData c = icl::test::checkpointRecordAt(step);
    for (const char* name : {"layers.0.w_q", "layers.0.w_k"}) {
        icl::NamedArray w{name, {16, 16}, {}};
        for (int i = 0; i < 256; ++i)
            w.data.push_back(0.01f * float(i) - float(step) + float(name[9]));
        c.params.push_back(w);
    }
    c.optimizer.push_back({"layers.0.w_q/exp_avg", {16, 16}, std::vector<float>(256, 0.5f + float(step))});
    c.optimizer_scalars["layers.0.w_q/step"] = double(step);
    return c;
}

void commitStep(const std::string& path, int64_t step)
{
    const icl::CheckpointData cp = checkpointAt(step);
    icl::commitToExperimentFile(path, {{{"step", double(step)}, {"eval_loss", 1.0 / (step + 1)}}}, &cp);
}

// A run with three commits and a stored result.
std::string validRun(const std::string& name)
{
    const std::string path = icl::test::freshScratchFile(name);
    fs::remove(path + ".journal");
    icl::createExperimentFile(path, lsaConfig(), false);
    for (int64_t step : {0, 100, 200})
        commitStep(path, step);
    icl::storeAnalysis(path, "icl_curve", 200, 7, R"({"n_prompts":10})", R"({"error":[1,0.5]})");
    // As the next commit would: cut what HDF5 freed at the end, so a commit begins at exactly this file's size.
    EXPECT_EQ(icl::recoverExperimentFile(path).find(path + ": "), 0u);
    return path;
}

std::string bytesOf(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string& path, const std::string& bytes)
{
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Content, size and modification time of a file: a read-only open must leave all three as they were.
struct Snapshot {
    std::string bytes;
    struct timespec mtime {};
    bool operator==(const Snapshot& o) const
    {
        return bytes == o.bytes && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec;
    }
};

Snapshot snapshot(const std::string& path)
{
    Snapshot s;
    s.bytes = bytesOf(path);
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    s.mtime = st.st_mtim;
    return s;
}

// Kills a commit of step 300 into `path` (in a child process) at the `nth` fault point named `point`.
void killCommitAt(const std::string& path, const std::string& point, int nth = 1)
{
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        int seen = 0;
        icl::setCommitFaultHookForTesting([&](const std::string& p) {
            if (p == point && ++seen == nth)
                ::raise(SIGKILL);
        });
        try {
            commitStep(path, 300);
        } catch (...) {
            ::_exit(3);
        }
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the commit was not killed at " << point << " (status " << status << ")";
}

// Everything a command reads, as text (summary, every checkpoint's arrays, task arrays, stored results, verify),
// or the first refusal: two files read the same exactly when this is equal.
std::string readEverything(const std::string& path)
{
    std::string out;
    try {
        const icl::RunSummary s = icl::readRunSummary(path);
        out += s.config_json + "|" + s.created + "|";
        for (const auto& [name, v] : s.metrics) {
            out += name + ":";
            for (double x : v)
                out += std::to_string(x) + ",";
        }
        for (const auto& c : s.checkpoints) {
            out += "#" + std::to_string(c.step) + c.damaged;
            const icl::CheckpointData d = icl::readCheckpoint(path, c.step);
            for (const auto* arrays : {&d.params, &d.optimizer})
                for (const auto& a : *arrays) {
                    out += a.name + "=";
                    out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float));
                }
        }
        for (const auto& a : icl::readStoredAnalyses(path, "icl_curve"))
            out += a.id + a.options_json + a.result_json;
        for (const auto& d : icl::verifyExperimentFile(path).damaged)
            out += "damaged " + d;
    } catch (const icl::Error& e) {
        return std::string("refused: ") + e.what();
    }
    return out;
}

// ---- the journal layout of docs/file-format.md ----

void putU64(std::string& out, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getU64(const std::string& in, size_t at)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= uint64_t(static_cast<unsigned char>(in[at + size_t(i)])) << (8 * i);
    return v;
}

std::string sha256(const std::string& data, bool hex)
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d);
    if (!hex)
        return std::string(reinterpret_cast<const char*>(d), sizeof d);
    static const char* digits = "0123456789abcdef";
    std::string h;
    for (unsigned char c : d) {
        h.push_back(digits[c >> 4]);
        h.push_back(digits[c & 15]);
    }
    return h;
}

struct JournalPage {
    uint64_t index = 0;
    std::string before;      // 4096 bytes
    std::string afterSha256; // 32 raw bytes
};

struct Journal {
    uint64_t oldSize = 0, newSize = 0;
    std::string fileId;  // 32 hex digits, or "" for none
    uint64_t generation = 0;
    std::vector<JournalPage> pages;
};

// Version 2: "ICLJRNL2", page size, old size, new size, page count, file id (32 bytes), generation before and
// after; per page: index, content before, SHA-256 of content after; hex SHA-256 of all before it.
std::string encode(const Journal& j)
{
    std::string out("ICLJRNL2", 8);
    putU64(out, kPage);
    putU64(out, j.oldSize);
    putU64(out, j.newSize);
    putU64(out, j.pages.size());
    out += j.fileId.empty() ? std::string(32, '\0') : j.fileId;
    putU64(out, j.generation);
    putU64(out, j.generation + 1);
    for (const auto& p : j.pages) {
        putU64(out, p.index);
        out += p.before;
        out += p.afterSha256;
    }
    return out + sha256(out, true);
}

Journal decode(const std::string& in)
{
    Journal j;
    EXPECT_EQ(in.substr(0, 8), "ICLJRNL2");
    j.oldSize = getU64(in, 16);
    j.newSize = getU64(in, 24);
    const uint64_t count = getU64(in, 32);
    j.fileId = in.substr(40, 32) == std::string(32, '\0') ? "" : in.substr(40, 32);
    j.generation = getU64(in, 72);
    for (uint64_t i = 0; i < count; ++i) {
        const size_t at = 88 + size_t(i) * (8 + kPage + 32);
        j.pages.push_back({getU64(in, at), in.substr(at + 8, kPage), in.substr(at + 8 + kPage, 32)});
    }
    EXPECT_EQ(in.size(), 88 + count * (8 + kPage + 32) + 64);
    return j;
}

// An earlier build's journal (version 1): "ICLJRNL1", page size, old size, page count; index and content before.
std::string encodeVersion1(const Journal& j)
{
    std::string out("ICLJRNL1", 8);
    putU64(out, kPage);
    putU64(out, j.oldSize);
    putU64(out, j.pages.size());
    for (const auto& p : j.pages) {
        putU64(out, p.index);
        out += p.before;
    }
    return out + sha256(out, true);
}

// The root's file id and generation, read with plain HDF5.
std::pair<std::string, uint64_t> bindingOf(const std::string& path)
{
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    std::string id;
    uint64_t generation = 0;
    if (H5Aexists(f, "file_id") > 0) {
        const hid_t a = H5Aopen(f, "file_id", H5P_DEFAULT);
        const hid_t t = H5Aget_type(a);
        id.resize(H5Tget_size(t));
        H5Aread(a, t, id.data());
        H5Tclose(t);
        H5Aclose(a);
    }
    if (H5Aexists(f, "generation") > 0) {
        const hid_t a = H5Aopen(f, "generation", H5P_DEFAULT);
        H5Aread(a, H5T_NATIVE_UINT64, &generation);
        H5Aclose(a);
    }
    H5Fclose(f);
    return {id, generation};
}

// A journal of this file forged to pass every check but the one under test: the current content of page `index`
// as "after", and `before` as its content before the commit.
Journal forgedFor(const std::string& path, uint64_t index, const std::string& before)
{
    const std::string bytes = bytesOf(path);
    const auto [id, generation] = bindingOf(path);
    Journal j;
    j.oldSize = j.newSize = bytes.size();
    j.fileId = id;
    j.generation = generation;
    j.pages.push_back({index, before, sha256(bytes.substr(index * kPage, kPage), false)});
    return j;
}

// What lies at `path`, without following a link or opening a FIFO: a link's target, a regular file's bytes, or
// the kind of file.
std::string entryAt(const std::string& path)
{
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        return "absent";
    if (S_ISLNK(st.st_mode))
        return "link to " + fs::read_symlink(path).string();
    if (S_ISREG(st.st_mode))
        return "file " + bytesOf(path);
    return "mode " + std::to_string(st.st_mode);
}

const std::string kLeftAlone = "; it was left as it is and the file was not changed";

// Every read-only entry point refuses `path` with a line containing `fragment` and leaves the file (and the
// journal) exactly as they were; then the writer refuses it the same way, also without changing anything.
void expectRefusedByEveryone(const std::string& path, const std::string& fragment)
{
    const Snapshot file = snapshot(path);
    const std::string journal = entryAt(path + ".journal");
    const std::string e = icl::test::errorOf([&] { icl::readRunSummary(path); });
    EXPECT_EQ(e.rfind(path + ": ", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e.find(fragment), std::string::npos) << e;
    EXPECT_NE(icl::test::errorOf([&] { icl::readCheckpoint(path, 100); }).find(fragment), std::string::npos);
    EXPECT_NE(icl::test::errorOf([&] { icl::readTaskArrays(path); }).find(fragment), std::string::npos);
    EXPECT_NE(icl::test::errorOf([&] { icl::readStoredAnalyses(path, "icl_curve"); }).find(fragment),
              std::string::npos);
    const icl::FileVerification v = icl::verifyExperimentFile(path);
    EXPECT_TRUE(v.damaged.empty());
    EXPECT_NE(v.refused.find(fragment), std::string::npos) << v.refused;
    EXPECT_TRUE(snapshot(path) == file) << "a read-only open changed the run file";
    EXPECT_EQ(entryAt(path + ".journal"), journal) << "a read-only open changed the journal";

    const std::string w = icl::test::errorOf([&] { commitStep(path, 300); });
    EXPECT_NE(w.find(fragment), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << w;
    const std::string r = icl::test::errorOf([&] { icl::recoverExperimentFile(path); });
    EXPECT_NE(r.find(fragment), std::string::npos) << r;
    EXPECT_TRUE(snapshot(path) == file) << "the writer applied a journal that is not the file's";
    EXPECT_EQ(entryAt(path + ".journal"), journal);
}

// Runs `f` with a watchdog: a read that blocks (a FIFO) fails the test instead of hanging it.
void withinSeconds(unsigned seconds, const std::function<void()>& f)
{
    ::alarm(seconds);
    f();
    ::alarm(0);
}


TEST(ExperimentFileJournal, NewFilesHaveARandomIdAndEveryCommitAdvancesTheGeneration)
{
    const std::string a = icl::test::freshScratchFile("journal_id_a.h5");
    const std::string b = icl::test::freshScratchFile("journal_id_b.h5");
    icl::createExperimentFile(a, lsaConfig(), false);
    icl::createExperimentFile(b, lsaConfig(), false);
    const auto [idA, genA] = bindingOf(a);
    EXPECT_EQ(idA.size(), 32u);
    EXPECT_EQ(idA.find_first_not_of("0123456789abcdef"), std::string::npos) << idA;
    EXPECT_EQ(genA, 0u);
    EXPECT_NE(bindingOf(b).first, idA);
    commitStep(a, 0);
    icl::storeAnalysis(a, "icl_curve", 0, 1, "{}", "{}");
    EXPECT_EQ(bindingOf(a), std::make_pair(idA, uint64_t(2)));
    EXPECT_TRUE(icl::readRunSummary(a).damaged.empty());
}

TEST(ExperimentFileJournal, AKilledCommitIsReadAsBeforeItAndRolledBackOnlyByTheWriter)
{
    const std::string path = validRun("journal_killed.h5");
    const std::string before = bytesOf(path);
    const std::string want = readEverything(path);
    ASSERT_EQ(want.find("refused"), std::string::npos) << want;
    // Killed after overwriting the first page in place: the file on disk is neither version.
    killCommitAt(path, "overwrote a page");
    ASSERT_TRUE(fs::exists(path + ".journal"));
    ASSERT_NE(bytesOf(path), before);
    const Snapshot killed = snapshot(path);
    // Every reader reads the file as it was before that commit, and writes nothing.
    EXPECT_EQ(readEverything(path), want);
    const icl::RunSummary s = icl::readRunSummary(path);
    ASSERT_EQ(s.notes.size(), 1u);
    EXPECT_EQ(s.notes[0], "a commit was interrupted and left " + path + ".journal; this is the file as it was before "
                          "that commit (`icl-cli recover " + path
                              + "` or the next `train --resume` restores it on disk)");
    EXPECT_TRUE(snapshot(path) == killed) << "a read-only open changed the run file";
    EXPECT_TRUE(fs::exists(path + ".journal"));
    // The writer rolls it back: byte for byte the file before the commit.
    EXPECT_EQ(icl::recoverExperimentFile(path), path + ": an interrupted commit was rolled back from " + path
                                                    + ".journal (the file holds the commit before it)");
    EXPECT_EQ(bytesOf(path), before);
    EXPECT_FALSE(fs::exists(path + ".journal"));
    EXPECT_EQ(icl::recoverExperimentFile(path), path + ": nothing to recover (no interrupted commit)");
    EXPECT_EQ(readEverything(path), want);
}

TEST(ExperimentFileJournal, ACommitKilledBeforeItsJournalLeavesBytesTheWriterCutsOff)
{
    const std::string path = validRun("journal_closed.h5");
    const std::string before = bytesOf(path);
    const std::string want = readEverything(path);
    killCommitAt(path, "closed");  // the new checkpoint's bytes are past the old end; nothing else changed
    EXPECT_FALSE(fs::exists(path + ".journal"));
    const uint64_t grown = fs::file_size(path) - before.size();
    ASSERT_GT(grown, 0u);
    EXPECT_EQ(readEverything(path), want);
    EXPECT_EQ(icl::recoverExperimentFile(path), path + ": cut " + std::to_string(grown)
                                                    + " bytes an interrupted commit had written past the end of the "
                                                      "file's data");
    EXPECT_EQ(bytesOf(path), before);
}

TEST(ExperimentFileJournal, RecoverLeavesAFileThatIsNotAnExperimentFileAlone)
{
    // Another program's HDF5 file with bytes past its end of allocation, which recover would cut from a run.
    const std::string path = icl::test::freshScratchFile("journal_foreign.h5");
    H5Fclose(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    { std::ofstream(path, std::ios::binary | std::ios::app) << std::string(5000, 'x'); }
    const Snapshot before = snapshot(path);
    EXPECT_EQ(icl::test::errorOf([&] { icl::recoverExperimentFile(path); }),
              path + ": not an ICL Workbench experiment file (no 'format' attribute)");
    EXPECT_TRUE(snapshot(path) == before);
}

TEST(ExperimentFileJournal, ForgedJournalsAreRefusedAndLeaveTheFileByteIdentical)
{
    const std::string path = validRun("journal_forged.h5");
    const std::string bytes = bytesOf(path);
    const uint64_t size = bytes.size();
    const auto [id, generation] = bindingOf(path);
    std::mt19937_64 rng(46);
    std::string garbage(kPage, '\0');
    for (char& c : garbage)
        c = static_cast<char>(rng());
    const std::string j = path + ".journal";
    auto forged = [&](const Journal& journal, const std::string& fragment) {
        SCOPED_TRACE(fragment);
        writeBytes(j, encode(journal));
        expectRefusedByEveryone(path, fragment);
        fs::remove(j);
        EXPECT_EQ(bytesOf(path), bytes);
    };
    Journal base = forgedFor(path, 0, bytes.substr(0, kPage));

    Journal zero = base;
    zero.oldSize = 0;  // an earlier build truncated the run to 0 bytes
    forged(zero, j + " records an old size of 0 bytes (no experiment file is empty)" + kLeftAlone);

    Journal larger = base;
    larger.oldSize = larger.newSize = size + 1;
    forged(larger, j + " records an old size of " + std::to_string(size + 1) + " bytes, larger than the file ("
                       + std::to_string(size) + " bytes)" + kLeftAlone);

    Journal foreign = base;  // neither the page's content before nor after: not this file's
    foreign.pages[0].before = garbage;
    foreign.pages[0].afterSha256 = sha256(garbage, false);
    forged(foreign, j + " does not match this file (page 0 holds neither its content before nor after the journal's "
                        "commit: a journal of another file or of an earlier commit)" + kLeftAlone);

    // Bound to the file in every field a forger can copy, but restoring garbage over the superblock: the file as the
    // journal would leave it does not open, so nobody reads it and the writer does not apply it.
    forged(forgedFor(path, 0, garbage),
           "(the file as it was before the commit interrupted in " + j + "; nothing was changed)");

    Journal overflow = base;  // index · 4096 wraps to 0 in 64 bits (earlier builds grew the file to 64 GiB)
    overflow.pages[0].index = uint64_t(1) << 52;
    forged(overflow, j + " records page 4503599627370496, whose offset overflows 64 bits" + kLeftAlone);

    Journal past = base;
    past.pages[0].index = (size + kPage - 1) / kPage;
    forged(past, j + " records page " + std::to_string(past.pages[0].index) + " at byte "
                     + std::to_string(past.pages[0].index * kPage) + ", past the file's old size of "
                     + std::to_string(size) + " bytes" + kLeftAlone);

    Journal otherId = base;  // another file id, the pages otherwise this file's
    otherId.fileId = std::string(32, 'a');
    forged(otherId, j + " belongs to another file or commit (it records file id " + otherId.fileId + ", generation "
                        + std::to_string(generation) + "; the file before that commit has file id " + id
                        + ", generation " + std::to_string(generation) + ")" + kLeftAlone);

    Journal otherGeneration = base;
    otherGeneration.generation = generation + 5;
    forged(otherGeneration, "belongs to another file or commit (it records file id " + id + ", generation "
                                + std::to_string(generation + 5));

    // Not journals at all.
    auto planted = [&](const std::function<void()>& plant, const std::string& fragment) {
        SCOPED_TRACE(fragment);
        plant();
        withinSeconds(60, [&] { expectRefusedByEveryone(path, fragment); });
        fs::remove(j);
        EXPECT_EQ(bytesOf(path), bytes);
    };
    planted([&] { fs::create_symlink("/dev/zero", j); }, j + " is a symbolic link, not a journal" + kLeftAlone);
    planted([&] { ASSERT_EQ(::mkfifo(j.c_str(), 0600), 0); }, j + " is not a regular file (a FIFO)" + kLeftAlone);
    planted([&] { fs::create_directory(j); }, j + " is not a regular file (a directory)" + kLeftAlone);
    planted([&] { writeBytes(j, "hello, this is not a journal"); },
            j + " is not a journal of an ICL Workbench commit" + kLeftAlone);
    planted([&] {
        writeBytes(j, encode(base));
        fs::resize_file(j, 3 * size + (1 << 20));  // sparse: no disk used
    }, j + " is larger than a journal of this file can be");
}

TEST(ExperimentFileJournal, AJournalOfAnotherRunFileIsRefused)
{
    const std::string a = validRun("journal_other_a.h5");
    const std::string b = validRun("journal_other_b.h5");
    killCommitAt(a, "journal synced");  // a complete journal of a, nothing overwritten yet
    fs::copy_file(a + ".journal", b + ".journal");
    expectRefusedByEveryone(b, " does not match this file (page ");
    // Beside its own file it is valid: a reads as before the commit, and its writer rolls it back.
    EXPECT_EQ(readEverything(a).find("refused"), std::string::npos);
    EXPECT_NE(icl::recoverExperimentFile(a).find("rolled back"), std::string::npos);
}

TEST(ExperimentFileJournal, AStaleJournalOfAnEarlierCommitIsRefused)
{
    const std::string path = validRun("journal_stale.h5");
    const std::string copy = icl::test::freshScratchFile("journal_stale_copy.h5");
    fs::copy_file(path, copy);
    killCommitAt(copy, "journal synced");
    const std::string stale = bytesOf(copy + ".journal");
    ASSERT_FALSE(stale.empty());
    // The run goes on: the same commit, completed, and one more.
    commitStep(path, 300);
    commitStep(path, 400);
    writeBytes(path + ".journal", stale);
    expectRefusedByEveryone(path, " does not match this file (page ");
}

TEST(ExperimentFileJournal, AnIncompleteJournalIsReadAroundAndRemovedByTheWriter)
{
    const std::string path = validRun("journal_incomplete.h5");
    const std::string copy = icl::test::freshScratchFile("journal_incomplete_copy.h5");
    fs::copy_file(path, copy);
    killCommitAt(copy, "journal synced");
    const std::string want = readEverything(path);
    // A commit killed while writing its journal had not changed the file yet.
    writeBytes(path + ".journal", bytesOf(copy + ".journal").substr(0, 5000));
    const Snapshot file = snapshot(path);
    EXPECT_EQ(readEverything(path), want);
    const icl::RunSummary s = icl::readRunSummary(path);
    ASSERT_EQ(s.notes.size(), 1u);
    EXPECT_EQ(s.notes[0], path + ".journal of an interrupted commit is incomplete (the commit had not changed the file "
                                 "yet); `icl-cli recover " + path + "` or the next commit removes it");
    EXPECT_TRUE(snapshot(path) == file);
    EXPECT_TRUE(fs::exists(path + ".journal"));
    commitStep(path, 300);
    EXPECT_FALSE(fs::exists(path + ".journal"));
    EXPECT_EQ(icl::readRunSummary(path).checkpoints.size(), 4u);
}

TEST(ExperimentFileJournal, AnEarlierBuildsJournalIsRefusedByReadersAndRolledBackByRecover)
{
    const std::string path = validRun("journal_version1.h5");
    const std::string before = bytesOf(path);
    killCommitAt(path, "overwrote a page");
    const Journal j = decode(bytesOf(path + ".journal"));
    writeBytes(path + ".journal", encodeVersion1(j));
    const Snapshot killed = snapshot(path);
    const std::string e = icl::test::errorOf([&] { icl::readRunSummary(path); });
    EXPECT_EQ(e, path + ": an interrupted commit of an earlier build left " + path + ".journal; run `icl-cli recover "
                     + path + "` (or the next `train --resume`) to roll it back");
    EXPECT_TRUE(snapshot(path) == killed);
    EXPECT_NE(icl::recoverExperimentFile(path).find("rolled back"), std::string::npos);
    EXPECT_EQ(bytesOf(path), before);
}

TEST(ExperimentFileJournal, AJournalRestoringADamagedFileIsAppliedOnlyWhenAccepted)
{
    const std::string path = validRun("journal_damaged.h5");
    // A checkpoint array damaged before the commit that is then killed (bit rot, say).
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, "/checkpoints/000000000/params/layers.0.w_k", H5P_DEFAULT);
    const haddr_t offset = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    ASSERT_NE(offset, HADDR_UNDEF);
    {
        std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(static_cast<std::streamoff>(offset + 5));
        io.put('\x7f');
    }
    const std::string before = bytesOf(path);
    killCommitAt(path, "overwrote a page");
    const Snapshot killed = snapshot(path);
    const std::string e = icl::test::errorOf([&] { icl::recoverExperimentFile(path); });
    EXPECT_EQ(e, path + ": " + path + ".journal would restore a file with 1 damaged object (" + path
                     + ": damaged: /checkpoints/000000000/params/layers.0.w_k (checksum mismatch)); it was left as it "
                       "is and the file was not changed (`icl-cli recover " + path + " --accept-damaged` rolls back "
                       "anyway)");
    EXPECT_TRUE(snapshot(path) == killed);
    EXPECT_NE(icl::test::errorOf([&] { commitStep(path, 300); }).find("would restore a file with 1 damaged object"),
              std::string::npos);
    EXPECT_TRUE(snapshot(path) == killed);
    EXPECT_NE(icl::recoverExperimentFile(path, true).find("rolled back"), std::string::npos);
    EXPECT_EQ(bytesOf(path), before);
}

TEST(ExperimentFileJournal, AFileOfAnEarlierBuildGetsItsIdAtItsFirstCommit)
{
    const std::string path = validRun("journal_no_id.h5");
    {
        // The root as earlier builds wrote it: no file id, no generation (and its seal over what is left).
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
        const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl);
        ASSERT_GE(f, 0);
        H5Adelete(f, "file_id");
        H5Adelete(f, "generation");
        icl::checksums::seal(f);
        H5Fclose(f);
        H5Pclose(fapl);
    }
    icl::recoverExperimentFile(path);  // trims what HDF5 freed at the end, so the copy below is the whole file
    EXPECT_EQ(bindingOf(path), std::make_pair(std::string(), uint64_t(0)));
    const std::string want = readEverything(path);
    ASSERT_EQ(want.find("refused"), std::string::npos) << want;
    const std::string copy = icl::test::freshScratchFile("journal_no_id_copy.h5");
    fs::copy_file(path, copy);
    // Its first commit killed half way: the journal records "no file id, generation 0".
    killCommitAt(copy, "overwrote a page");
    const Journal j = decode(bytesOf(copy + ".journal"));
    EXPECT_EQ(j.fileId, "");
    EXPECT_EQ(j.generation, 0u);
    EXPECT_EQ(readEverything(copy), want);
    EXPECT_NE(icl::recoverExperimentFile(copy).find("rolled back"), std::string::npos);
    EXPECT_EQ(bytesOf(copy), bytesOf(path));
    // Completed, it gets an id and generation 1.
    commitStep(path, 300);
    EXPECT_EQ(bindingOf(path).first.size(), 32u);
    EXPECT_EQ(bindingOf(path).second, 1u);
}

} // namespace journal_tests
} // namespace
