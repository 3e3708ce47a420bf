#include "core/training/run_file_lock.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "core/error.h"

namespace icl {

RunFileLock::RunFileLock(const std::string& path)
    : m_sidecar(path + ".lock")
{
    m_fd = ::open(m_sidecar.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0)
        return;  // no claim possible here; creating or opening the run file reports the problem
    struct flock claim {};
    claim.l_type = F_WRLCK;
    claim.l_whence = SEEK_SET;  // l_start = l_len = 0: the whole file; l_pid must be 0 for OFD locks
    if (::fcntl(m_fd, F_OFD_SETLK, &claim) != 0) {
        const int err = errno;
        ::close(m_fd);
        m_fd = -1;
        if (err == EAGAIN || err == EACCES)
            throw Error(path + ": another process is training into this file (" + m_sidecar
                        + " is held); wait for it to finish or stop it, then resume");
        return;  // locks unsupported on this file system: train without the claim
    }
}

RunFileLock::~RunFileLock()
{
    if (m_fd < 0)
        return;
    std::remove(m_sidecar.c_str());  // while still held, so no other trainer is using this sidecar
    ::close(m_fd);
}

} // namespace icl
