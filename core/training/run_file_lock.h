#pragma once
// Exclusive claim of a run file by the process that trains into it. Core-internal.

#include <string>

namespace icl {

/// Claims the experiment file `path` for training: an open-file-description lock (Linux F_OFD_SETLK) on the
/// sidecar "<path>.lock", held for the object's lifetime and released by the kernel if the process dies, so a
/// crash leaves no stale claim. The run file itself cannot carry the lock, because every commit replaces it by a
/// rename. The sidecar is removed on destruction. Where the sidecar cannot be created (a missing or read-only
/// directory) nothing is claimed and the caller's own file errors apply. Throws icl::Error when another trainer,
/// in this process or another, holds the claim. Thread affinity: any.
class RunFileLock {
public:
    explicit RunFileLock(const std::string& path);
    ~RunFileLock();
    RunFileLock(const RunFileLock&) = delete;
    RunFileLock& operator=(const RunFileLock&) = delete;

private:
    std::string m_sidecar;
    int m_fd = -1;
};

} // namespace icl
