#pragma once
// Crash-safe in-place commits into an HDF5 file, in time proportional to what a commit writes
// (docs/file-integrity.md, "Commit cost"). Core-internal: includes hdf5.h, so only core .cpp files include it.
//
// HDF5 rewrites its metadata (superblock, object headers, link and chunk indexes) in place and in no
// particular order, so a process killed during a flush leaves a file that is neither the old nor the new
// version. A commit therefore opens the file through a virtual file driver (VFD) of its own that splits
// every write HDF5 makes at the file's size when the commit began (`old size`):
//   - bytes at or past the old size (a new checkpoint's arrays, new metadata blocks) go straight to the
//     file: the previous version does not reach them;
//   - bytes before it (metadata and metric chunks rewritten in place, space HDF5 reuses) are kept in
//     memory, in 4 KiB pages, and served back to HDF5's reads.
// After HDF5 has closed the file, Commit::finish() writes the *original* content of every page it is about
// to overwrite to RUN.h5.journal (with its SHA-256), syncs it and its directory, overwrites the pages, syncs
// the file (the new bytes with it) and deletes the journal: three fsyncs per commit. A journal that is complete (its SHA-256 matches) is a commit
// killed while overwriting: the next open rolls the file back from it (the previous version, exactly); an
// incomplete one is a commit killed before it overwrote anything and is deleted. The file is never
// copied; the journal holds only the pages a commit overwrites.
//
// Locks (Linux OFD byte-range locks on RUN.h5 itself; none where the file system has none):
//   byte 1 exclusive: the writer, for the whole commit (one writer at a time, others wait);
//   byte 0 exclusive: while the journal exists (writing it, overwriting pages, rolling back);
//   byte 0 shared:    every reader while it reads (ReadLock), so no reader sees half-overwritten pages.
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

/// A shared lock on `path` held while reading it. Before locking, a journal left by a killed commit is
/// rolled back (rolledBack() then says so). Throws icl::Error (one line, naming the file) when a stale
/// journal cannot be rolled back, e.g. on a read-only file system.
class ReadLock {
public:
    explicit ReadLock(const std::string& path);
    ~ReadLock();
    ReadLock(const ReadLock&) = delete;
    ReadLock& operator=(const ReadLock&) = delete;
    /// What the open did about a leftover journal ("" when there was none).
    const std::string& recovery() const { return m_recovery; }

private:
    int m_fd = -1;
    std::string m_recovery;
};

/// The state a commit's VFD shares with it (pages held back, the old size, the fault hook).
struct CommitState;

/// One in-place commit of `path`. The constructor takes the writer lock, rolls back a stale journal and trims
/// bytes past HDF5's end of allocation left by a killed commit. Open the file with fileAccess(), edit, close
/// it, then call finish(). A commit destroyed without finish() (an error) truncates the file back to its old
/// size, so it leaves nothing it created. `fault` is called at each point where a crash test may kill the
/// process: every write HDF5 makes ("HDF5 write"), and each step of finish().
class Commit {
public:
    Commit(const std::string& path, std::function<void(const std::string&)> fault);
    ~Commit();
    Commit(const Commit&) = delete;
    Commit& operator=(const Commit&) = delete;
    /// A file access property list with the commit's driver (caller closes it with H5Pclose).
    hid_t fileAccess() const;
    /// After H5Fclose: sync, journal, overwrite, sync, delete the journal. Throws icl::Error with the
    /// system's reason; the file is then as before the commit (or, if even the roll-back failed, the journal
    /// stays and the next open rolls back).
    void finish();
    /// The system's reason for the last failed write of the driver ("No space left on device"), or "".
    std::string lastError() const;

private:
    void abort() noexcept;
    std::string m_path;
    int m_fd = -1;  // read-write descriptor of the data file; its OFD holds the locks
    std::unique_ptr<CommitState> m_state;
    bool m_finished = false;
};

} // namespace icl::journal
