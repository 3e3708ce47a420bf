#pragma once
// Torch-free. Opening a file from outside for reading: only a regular file is read (a FIFO would block the
// reader forever, a device such as /dev/zero never ends), and its size is known before anything is allocated
// for its contents. Thread affinity: any thread; one object per thread.

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/io/memory_budget.h"

namespace icl {

/// A regular file open for reading; the descriptor is closed with the object (unless release()d).
class RegularFile {
public:
    /// Opens `path` read-only (a symlink is followed: the user named it; O_NONBLOCK, so opening a FIFO does not
    /// wait for a writer) and checks with fstat that it is a regular file. `what` names what was expected
    /// ("prompt file (JSON or CSV)", "IDX file"). Throws icl::Error "PATH: no such file", "PATH: is a folder,
    /// expected a WHAT", "PATH: not a regular file (a FIFO, device or socket), expected a WHAT" or "PATH: cannot
    /// open for reading (<reason>)".
    RegularFile(const std::string& path, const std::string& what)
        : m_path(path)
    {
        m_fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (m_fd < 0) {
            const int e = errno;
            struct stat st {};
            if (e == ENOENT || e == ENOTDIR)
                throw Error(path + ": no such file");
            if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                throw Error(path + ": is a folder, expected " + article(what) + what);
            throw Error(path + ": cannot open for reading (" + std::strerror(e) + ")");
        }
        struct stat st {};
        if (::fstat(m_fd, &st) != 0) {
            const int e = errno;
            ::close(m_fd);
            throw Error(path + ": cannot read (" + std::strerror(e) + ")");
        }
        if (S_ISDIR(st.st_mode)) {
            ::close(m_fd);
            throw Error(path + ": is a folder, expected " + article(what) + what);
        }
        if (!S_ISREG(st.st_mode)) {
            ::close(m_fd);
            throw Error(path + ": not a regular file (a FIFO, device or socket), expected " + article(what) + what);
        }
        // Regular files never block; reads go back to blocking mode for clarity.
        ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) & ~O_NONBLOCK);
        m_size = static_cast<uint64_t>(st.st_size);
    }
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;
    ~RegularFile()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }

    int fd() const { return m_fd; }
    /// Size in bytes when opened (fstat).
    uint64_t size() const { return m_size; }
    const std::string& path() const { return m_path; }
    /// Gives up ownership of the descriptor (e.g. to zlib's gzdopen, which closes it).
    int release()
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

    /// The whole file. Refuses, before reading, a file over `max_bytes` ("PATH: 20.0 MB, more than the 16.8 MB a
    /// WHAT may have") and charges its size to `budget` when given; a file that grows while it is read is cut
    /// at max_bytes + 1 and refused the same way. Throws icl::Error on a read error.
    std::string readAll(uint64_t max_bytes, const std::string& what, MemoryBudget* budget = nullptr)
    {
        if (m_size > max_bytes)
            throw Error(m_path + ": " + formatBytes(m_size) + ", more than the " + formatBytes(max_bytes) + " "
                        + article(what) + what + " may have");
        if (budget)
            budget->charge(m_size, "the file's " + formatBytes(m_size));
        std::string text(static_cast<size_t>(m_size), '\0');
        size_t got = 0;
        for (;;) {
            if (got == text.size()) {
                if (text.size() > max_bytes)
                    throw Error(m_path + ": more than the " + formatBytes(max_bytes) + " " + article(what) + what
                                + " may have (the file grew while it was read)");
                text.resize(text.size() + 4096);
            }
            const ssize_t n = ::read(m_fd, &text[got], text.size() - got);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                throw Error(m_path + ": cannot read (" + std::strerror(errno) + ")");
            }
            if (n == 0)
                break;
            got += static_cast<size_t>(n);
        }
        text.resize(got);
        return text;
    }

private:
    static std::string article(const std::string& noun)
    {
        if (noun.empty())
            return {};
        const char c = noun.front();
        const bool vowel = c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'I' || c == 'A'
                           || c == 'E' || c == 'O' || c == 'U';
        return vowel ? "an " : "a ";
    }

    std::string m_path;
    int m_fd = -1;
    uint64_t m_size = 0;
};

} // namespace icl
