#pragma once
// Crash-safe in-place commits into an HDF5 file, in time proportional to what a commit writes
// (docs/file-integrity.md, "Commit cost" and "The journal belongs to its writer"). Core-internal: includes
// hdf5.h, so only core .cpp files include it.
//
// A commit opens the file through a virtual file driver of its own: bytes past the file's size when the commit
// began go straight to the file; bytes before it are kept in 4 KiB pages in memory. Commit::finish() journals
// the pages' original content (RUN.h5.journal, with SHA-256s, file id and generation), syncs, overwrites the
// pages and deletes the journal. Only the writer applies or removes a journal; readers (ReadView) overlay it
// read-only or refuse in one line. Locks: OFD byte-range locks on RUN.h5 (byte 1: the writer; byte 0
// exclusive: a live journal; byte 0 shared: readers). Design and checks: docs/file-integrity.md.
// Thread affinity: callers hold the experiment file's HDF5 mutex.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <hdf5.h>

namespace icl::journal {

/// Size of the pages the journal saves and restores (bytes).
inline constexpr uint64_t kPageSize = 4096;

/// "RUN.h5.journal": the undo journal of `path`.
std::string journalPath(const std::string& path);

/// The one-line refusal of a journal that is not applied: "RUN.h5: RUN.h5.journal <what>; it was left as it is and
/// the file was not changed (remove RUN.h5.journal if no commit of RUN.h5 was interrupted)".
std::string refusal(const std::string& path, const std::string& what);

/// A new random file id: 32 lower-case hex digits (128 bits from the kernel's random source).
std::string newFileId();

/// The state of a file a journal is bound to: the root's `file_id` ("" for a file of an earlier build that
/// has none) and `generation` (the number of commits made by builds that count them; 0 when absent).
struct Binding {
    std::string file_id;
    uint64_t generation = 0;
};

/// A journal found beside a file and checked (core-internal; see ReadView and WriterLock).
struct Leftover;

/// What readers do about a journal: the writer's own check also accepts an earlier build's journal
/// (`Policy::writer`), which readers refuse with the repair command (`Policy::reader`).
enum class Policy { reader, writer };

/// A read-only view of `path` held while reading it: a shared lock on byte 0 (waits while a commit overwrites
/// pages) and, when a journal left by an interrupted commit lies beside the file, the file as it was before
/// that commit (the journal's saved pages overlaid in memory). Never opens the file or the journal for
/// writing. Throws icl::Error (one line naming the file) for a path that is not a regular file and for a
/// journal that is not this file's (another file's, an earlier commit's, a link, a FIFO, oversized, out of
/// bounds) or that a reader may not use (Policy::reader and an earlier build's journal).
class ReadView {
public:
    explicit ReadView(const std::string& path, Policy policy = Policy::reader);
    ~ReadView();
    ReadView(const ReadView&) = delete;
    ReadView& operator=(const ReadView&) = delete;
    /// A new file access property list for opening the file read-only (caller closes it with H5Pclose): the
    /// default driver, or the read-only overlay driver when a journal is overlaid.
    hid_t fileAccess() const;
    /// True when reads see the file as it was before an interrupted commit (a journal is overlaid).
    bool overlaid() const;
    /// With overlaid(): whether the journal records the binding (journals of earlier builds do not) and which.
    bool bound() const;
    const Binding& binding() const;
    /// What the view did about a leftover journal, for RunSummary::notes ("" when there was none).
    const std::string& note() const { return m_note; }

private:
    std::string m_path;
    int m_fd = -1;
    std::shared_ptr<Leftover> m_leftover;
    std::string m_note;
};

/// The writer's lock on `path` (byte 1), held for the object's lifetime. Before the constructor returns, a
/// journal left by a killed commit is checked as ReadView checks it (Policy::writer) and then either removed
/// (an incomplete journal: its commit was killed before it overwrote anything) or applied (the file rolled
/// back to its previous commit, then the journal removed). `validate` is called before a roll-back, with the
/// journal still in place and no byte-0 lock held: it reads the file through a ReadView, i.e. as the
/// roll-back will leave it, and throws icl::Error to refuse. Throws icl::Error for a file that cannot be
/// opened for writing and for a journal that is not this file's (the file and journal are then untouched).
class WriterLock {
public:
    WriterLock(const std::string& path, const std::function<void()>& validate);
    ~WriterLock();
    WriterLock(const WriterLock&) = delete;
    WriterLock& operator=(const WriterLock&) = delete;
    /// The read-write descriptor of the file; its open file description holds the locks.
    int fd() const { return m_fd; }
    /// What was done about a leftover journal ("" when there was none).
    const std::string& recovery() const { return m_recovery; }
    /// Cuts off bytes past HDF5's end of allocation (left by a commit killed before its journal); returns how
    /// many. Takes byte 0 exclusively while it does.
    uint64_t trimPastEndOfAllocation();

private:
    std::string m_path;
    int m_fd = -1;
    std::string m_recovery;
};

/// The state a commit's VFD shares with it (pages held back, the old size, the fault hook).
struct CommitState;

/// One in-place commit of `path`. The constructor takes the writer lock (WriterLock: a stale journal is
/// checked, `validate` called, and it is rolled back) and trims bytes past HDF5's end of allocation left by a
/// killed commit. Open the file with fileAccess(), edit, close it, then call finish(). A commit destroyed
/// without finish() (an error) restores what it overwrote and truncates the file back to its old size, so it
/// leaves nothing it created. `fault` is called at each point where a crash test may kill the process: every
/// write HDF5 makes ("HDF5 write"), and each step of finish().
class Commit {
public:
    Commit(const std::string& path, std::function<void(const std::string&)> fault,
           const std::function<void()>& validate);
    ~Commit();
    Commit(const Commit&) = delete;
    Commit& operator=(const Commit&) = delete;
    /// A file access property list with the commit's driver (caller closes it with H5Pclose).
    hid_t fileAccess() const;
    /// The binding before this commit (the root's file id and generation as read); the commit writes
    /// generation + 1 and records both in its journal. Call before finish().
    void setBinding(const Binding& before);
    /// After H5Fclose: sync, journal, overwrite, sync, delete the journal. Throws icl::Error with the
    /// system's reason; the file is then as before the commit (or, if even the roll-back failed, the journal
    /// stays and the next writer rolls back).
    void finish();
    /// The system's reason for the last failed write of the driver ("No space left on device"), or "".
    std::string lastError() const;
    /// What the writer lock did about a leftover journal ("" when there was none).
    const std::string& recovery() const { return m_lock.recovery(); }

private:
    void abort() noexcept;
    bool restoreSaved() noexcept;
    std::string m_path;
    WriterLock m_lock;
    int m_fd = -1;  // m_lock.fd()
    std::unique_ptr<CommitState> m_state;
    Binding m_binding;
    bool m_bindingSet = false;
    std::vector<std::pair<uint64_t, std::vector<char>>> m_saved;  // pages journaled: index, original content
    bool m_journalWritten = false;
    bool m_finished = false;
};

} // namespace icl::journal
