#include "core/io/hdf5_journal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if H5_VERSION_GE(1, 13, 0)
#include <H5FDdevelop.h>  // HDF5 >= 1.13 declares the driver interface here
#endif

#include "core/error.h"
#include "core/io/checksums.h"

namespace fs = std::filesystem;

namespace icl::journal {

struct CommitState {
    std::string path;
    uint64_t oldSize = 0;                          // bytes HDF5 may not overwrite before the journal
    std::map<uint64_t, std::vector<char>> pages;  // page index -> new content (bytes < oldSize count)
    std::function<void(const std::string&)> fault;
    int lastErrno = 0;
};

namespace {

constexpr char kMagic[8] = {'I', 'C', 'L', 'J', 'R', 'N', 'L', '1'};
constexpr size_t kHeaderBytes = 32;  // magic, page size, old size, page count
constexpr size_t kDigestBytes = 64;  // hex SHA-256 of everything before it

std::string reason(int err)
{
    return std::strerror(err);
}

// Reads n bytes at off; bytes past the end of the file read as zeros (as HDF5's sec2 driver does).
bool preadAll(int fd, void* buf, size_t n, uint64_t off)
{
    char* p = static_cast<char*>(buf);
    while (n > 0) {
        const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(off));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        if (r == 0) {
            std::memset(p, 0, n);
            return true;
        }
        p += r;
        n -= static_cast<size_t>(r);
        off += static_cast<uint64_t>(r);
    }
    return true;
}

bool pwriteAll(int fd, const void* buf, size_t n, uint64_t off)
{
    const char* p = static_cast<const char*>(buf);
    while (n > 0) {
        const ssize_t r = ::pwrite(fd, p, n, static_cast<off_t>(off));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += r;
        n -= static_cast<size_t>(r);
        off += static_cast<uint64_t>(r);
    }
    return true;
}

bool writeAll(int fd, const void* buf, size_t n)
{
    const char* p = static_cast<const char*>(buf);
    while (n > 0) {
        const ssize_t r = ::write(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

// Blocking OFD lock of one byte (F_RDLCK, F_WRLCK or F_UNLCK); false where the file system has no locks.
bool lockByte(int fd, off_t byte, short type)
{
    struct flock l {};
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = byte;
    l.l_len = 1;
    while (::fcntl(fd, F_OFD_SETLKW, &l) != 0) {
        if (errno != EINTR)
            return false;
    }
    return true;
}

// Makes a created or removed directory entry durable.
bool syncParent(const std::string& path)
{
    fs::path parent = fs::path(path).parent_path();
    if (parent.empty())
        parent = ".";
    const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

void putU64(std::string& out, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t getU64(const std::string& in, size_t at)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v |= uint64_t(static_cast<unsigned char>(in[at + static_cast<size_t>(i)])) << (8 * i);
    return v;
}

// Caller holds byte 0 exclusively. Rolls the file back from a complete journal, or removes an incomplete one
// (its commit was killed before it overwrote anything). Returns what was done, "" when there is no journal.
std::string recover(int fd, const std::string& path)
{
    const std::string j = journalPath(path);
    std::error_code ec;
    if (!fs::exists(j, ec))
        return "";
    std::string content;
    {
        const int jfd = ::open(j.c_str(), O_RDONLY | O_CLOEXEC);
        if (jfd < 0)
            throw Error(path + ": cannot read " + j + " left by an interrupted commit (" + reason(errno) + ")");
        char buf[1 << 16];
        for (;;) {
            const ssize_t r = ::read(jfd, buf, sizeof buf);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                const int err = errno;
                ::close(jfd);
                throw Error(path + ": cannot read " + j + " left by an interrupted commit (" + reason(err) + ")");
            }
            if (r == 0)
                break;
            content.append(buf, static_cast<size_t>(r));
        }
        ::close(jfd);
    }
    const size_t record = 8 + kPageSize;
    bool complete = content.size() >= kHeaderBytes + kDigestBytes && std::memcmp(content.data(), kMagic, 8) == 0
                    && getU64(content, 8) == kPageSize;
    uint64_t oldSize = 0, count = 0;
    if (complete) {
        oldSize = getU64(content, 16);
        count = getU64(content, 24);
        complete = count <= content.size() / record
                   && content.size() == kHeaderBytes + count * record + kDigestBytes
                   && checksums::Sha256().bytes(content.data(), content.size() - kDigestBytes).hex()
                          == content.substr(content.size() - kDigestBytes);
    }
    if (!complete) {
        // Killed while writing the journal: the file was not overwritten yet.
        if (!fs::remove(j, ec) || ec)
            throw Error(path + ": cannot remove " + j + " left by an interrupted commit (" + ec.message() + ")");
        syncParent(path);
        return j + " of an interrupted commit was incomplete (the file had not been changed) and is removed";
    }
    for (uint64_t i = 0; i < count; ++i) {
        const size_t at = kHeaderBytes + static_cast<size_t>(i) * record;
        const uint64_t start = getU64(content, at) * kPageSize;
        if (start >= oldSize)
            continue;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kPageSize, oldSize - start));
        if (!pwriteAll(fd, content.data() + at + 8, n, start))
            throw Error(path + ": cannot roll back an interrupted commit from " + j + " (" + reason(errno) + ")");
    }
    if (::ftruncate(fd, static_cast<off_t>(oldSize)) != 0 || ::fsync(fd) != 0)
        throw Error(path + ": cannot roll back an interrupted commit from " + j + " (" + reason(errno) + ")");
    if (!fs::remove(j, ec) || ec)
        throw Error(path + ": cannot remove " + j + " after rolling back (" + ec.message() + ")");
    syncParent(path);
    return "an interrupted commit was rolled back from " + j + " (the file holds the commit before it)";
}

// ---- The commit's virtual file driver (HDF5 1.10 VFD interface; 1.13+ adds version and value) ----

struct DriverInfo {
    CommitState* state = nullptr;
};

struct JournaledFile {
    H5FD_t pub;  // first: HDF5 treats a pointer to this struct as an H5FD_t*
    int fd = -1;
    haddr_t eoa = 0;
    haddr_t eof = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    CommitState* state = nullptr;
};

JournaledFile* self(H5FD_t* f)
{
    return reinterpret_cast<JournaledFile*>(f);
}
const JournaledFile* self(const H5FD_t* f)
{
    return reinterpret_cast<const JournaledFile*>(f);
}

H5FD_t* jOpen(const char* name, unsigned flags, hid_t fapl, haddr_t)
{
    const auto* info = static_cast<const DriverInfo*>(H5Pget_driver_info(fapl));
    if (!info || !info->state || (flags & (H5F_ACC_TRUNC | H5F_ACC_CREAT)) || !(flags & H5F_ACC_RDWR))
        return nullptr;  // in-place commits of existing files only
    const int fd = ::open(name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return nullptr;
    }
    auto* f = new JournaledFile();
    f->fd = fd;
    f->eof = static_cast<haddr_t>(st.st_size);
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->state = info->state;
    return &f->pub;
}

herr_t jClose(H5FD_t* file)
{
    JournaledFile* f = self(file);
    const int status = ::close(f->fd);
    delete f;
    return status == 0 ? 0 : -1;
}

int jCmp(const H5FD_t* a, const H5FD_t* b)
{
    const JournaledFile* x = self(a);
    const JournaledFile* y = self(b);
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino)
        return x->ino < y->ino ? -1 : 1;
    return 0;
}

herr_t jQuery(const H5FD_t*, unsigned long* flags)
{
    if (flags)
        *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE
                 | H5FD_FEAT_AGGREGATE_SMALLDATA;
    return 0;
}

haddr_t jGetEoa(const H5FD_t* file, H5FD_mem_t)
{
    return self(file)->eoa;
}

herr_t jSetEoa(H5FD_t* file, H5FD_mem_t, haddr_t addr)
{
    self(file)->eoa = addr;
    return 0;
}

haddr_t jGetEof(const H5FD_t* file, H5FD_mem_t)
{
    return self(file)->eof;
}

herr_t jRead(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf)
{
    JournaledFile* f = self(file);
    if (addr == HADDR_UNDEF || !preadAll(f->fd, buf, size, addr))
        return -1;
    // Pages held back by this commit are newer than the file.
    const uint64_t oldSize = f->state->oldSize;
    const uint64_t end = std::min<uint64_t>(addr + size, oldSize);
    auto& pages = f->state->pages;
    for (auto it = pages.lower_bound(addr / kPageSize); it != pages.end() && it->first * kPageSize < end; ++it) {
        const uint64_t from = std::max<uint64_t>(addr, it->first * kPageSize);
        const uint64_t to = std::min<uint64_t>(end, (it->first + 1) * kPageSize);
        if (from < to)
            std::memcpy(static_cast<char*>(buf) + (from - addr), it->second.data() + (from - it->first * kPageSize),
                        static_cast<size_t>(to - from));
    }
    return 0;
}

herr_t jWrite(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, const void* buf)
{
    JournaledFile* f = self(file);
    CommitState& s = *f->state;
    if (s.fault)
        s.fault("HDF5 write");
    if (addr == HADDR_UNDEF)
        return -1;
    const char* in = static_cast<const char*>(buf);
    const uint64_t end = addr + size;
    // Before the old size: into the held-back pages (loaded from the file on first touch).
    for (uint64_t at = addr; at < std::min<uint64_t>(end, s.oldSize);) {
        const uint64_t page = at / kPageSize;
        auto it = s.pages.find(page);
        if (it == s.pages.end()) {
            std::vector<char> content(kPageSize);
            if (!preadAll(f->fd, content.data(), kPageSize, page * kPageSize)) {
                s.lastErrno = errno;
                return -1;
            }
            it = s.pages.emplace(page, std::move(content)).first;
        }
        const uint64_t to = std::min<uint64_t>({end, s.oldSize, (page + 1) * kPageSize});
        std::memcpy(it->second.data() + (at - page * kPageSize), in + (at - addr), static_cast<size_t>(to - at));
        at = to;
    }
    // At or past it: straight to the file, where the previous version does not look.
    if (end > s.oldSize) {
        const uint64_t from = std::max<uint64_t>(addr, s.oldSize);
        if (!pwriteAll(f->fd, in + (from - addr), static_cast<size_t>(end - from), from)) {
            s.lastErrno = errno;
            return -1;
        }
        f->eof = std::max<haddr_t>(f->eof, end);
    }
    return 0;
}

// HDF5 sets the file's size to its end of allocation; never below the old size before the journal (the
// bytes there belong to the previous version until the commit is complete).
herr_t jTruncate(H5FD_t* file, hid_t, hbool_t)
{
    JournaledFile* f = self(file);
    const haddr_t want = std::max<haddr_t>(f->eoa, f->state->oldSize);
    if (want != f->eof) {
        if (::ftruncate(f->fd, static_cast<off_t>(want)) != 0) {
            f->state->lastErrno = errno;
            return -1;
        }
        f->eof = want;
    }
    return 0;
}

hid_t driverId()
{
    static hid_t id = -1;
    if (id >= 0 && H5Iis_valid(id) > 0)
        return id;
    static H5FD_class_t cls = [] {
        H5FD_class_t c;
        std::memset(&c, 0, sizeof c);
#if H5_VERSION_GE(1, 13, 0)
        // Written against HDF5 1.10's interface (Debian 12); these two fields are what 1.13+ adds up front.
        c.version = H5FD_CLASS_VERSION;
        c.value = static_cast<H5FD_class_value_t>(510);  // 256-511: drivers not registered with The HDF Group
#endif
        c.name = "icl_journaled";
        c.maxaddr = (haddr_t(1) << (8 * sizeof(off_t) - 1)) - 1;
        c.fc_degree = H5F_CLOSE_WEAK;
        c.fapl_size = sizeof(DriverInfo);
        c.open = jOpen;
        c.close = jClose;
        c.cmp = jCmp;
        c.query = jQuery;
        c.get_eoa = jGetEoa;
        c.set_eoa = jSetEoa;
        c.get_eof = jGetEof;
        c.read = jRead;
        c.write = jWrite;
        c.truncate = jTruncate;
        const H5FD_mem_t map[] = H5FD_FLMAP_DICHOTOMY;
        std::copy(std::begin(map), std::end(map), c.fl_map);
        return c;
    }();
    id = H5FDregister(&cls);
    if (id < 0)
        throw Error("cannot register the journaled HDF5 file driver");
    return id;
}

// HDF5's end of allocation of `path` (what its superblock says the file uses), or 0 when unknown.
uint64_t endOfAllocation(const std::string& path)
{
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return 0;
    haddr_t eoa = 0;
    hsize_t userblock = 1;
    const hid_t fcpl = H5Fget_create_plist(f);
    if (fcpl >= 0) {
        H5Pget_userblock(fcpl, &userblock);
        H5Pclose(fcpl);
    }
    if (userblock != 0 || H5Fget_eoa(f, &eoa) < 0)
        eoa = 0;
    H5Fclose(f);
    return eoa;
}

} // namespace

std::string journalPath(const std::string& path)
{
    return path + ".journal";
}

ReadLock::ReadLock(const std::string& path)
{
    m_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0)
        return;  // the open that follows reports why
    lockByte(m_fd, 0, F_RDLCK);
    std::error_code ec;
    if (!fs::exists(journalPath(path), ec))
        return;
    // A live commit holds byte 0 exclusively while its journal exists: this one was left by a killed process.
    const int rw = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (rw < 0)
        throw Error(path + ": an interrupted commit left " + journalPath(path)
                    + "; open the file once with write access to roll it back (" + reason(errno) + ")");
    ::close(m_fd);
    m_fd = rw;
    lockByte(m_fd, 0, F_WRLCK);
    m_recovery = recover(m_fd, path);
    lockByte(m_fd, 0, F_RDLCK);  // converts the lock without releasing it
}

ReadLock::~ReadLock()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

Commit::Commit(const std::string& path, std::function<void(const std::string&)> fault)
    : m_path(path)
    , m_state(std::make_unique<CommitState>())
{
    m_state->path = path;
    m_state->fault = std::move(fault);
    m_fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (m_fd < 0)
        throw Error(path + ": cannot open for writing (" + reason(errno) + ")");
    lockByte(m_fd, 1, F_WRLCK);  // one writer at a time
    lockByte(m_fd, 0, F_WRLCK);
    try {
        recover(m_fd, path);
        // Bytes past the end of allocation are not part of any version (left by a killed commit): trim them.
        struct stat st {};
        const uint64_t eoa = endOfAllocation(path);
        if (eoa > 0 && ::fstat(m_fd, &st) == 0 && uint64_t(st.st_size) > eoa)
            if (::ftruncate(m_fd, static_cast<off_t>(eoa)) != 0)
                throw Error(path + ": cannot trim what an interrupted commit left (" + reason(errno) + ")");
        if (::fstat(m_fd, &st) != 0)
            throw Error(path + ": cannot read its size (" + reason(errno) + ")");
        m_state->oldSize = static_cast<uint64_t>(st.st_size);
    } catch (...) {
        ::close(m_fd);
        m_fd = -1;
        throw;
    }
    lockByte(m_fd, 0, F_UNLCK);
}

Commit::~Commit()
{
    if (!m_finished)
        abort();
    if (m_fd >= 0)
        ::close(m_fd);
}

hid_t Commit::fileAccess() const
{
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        throw Error("H5Pcreate");
    DriverInfo info;
    info.state = m_state.get();
    if (H5Pset_driver(fapl, driverId(), &info) < 0) {
        H5Pclose(fapl);
        throw Error("cannot select the journaled HDF5 file driver");
    }
    return fapl;
}

std::string Commit::lastError() const
{
    return m_state->lastErrno ? reason(m_state->lastErrno) : std::string();
}

void Commit::finish()
{
    CommitState& s = *m_state;
    auto fault = [&](const char* point) {
        if (s.fault)
            s.fault(point);
    };
    const std::string j = journalPath(m_path);
    fault("closed");
    // What this commit added past the old size need not be on disk yet: until the journal is gone, a crash rolls
    // back to the old size, and the fsync after the overwrite below covers both.
    // 1. The original content of every page about to be overwritten, with its SHA-256.
    lockByte(m_fd, 0, F_WRLCK);  // readers wait from here until the journal is gone
    {
        std::string header(kMagic, 8);
        putU64(header, kPageSize);
        putU64(header, s.oldSize);
        putU64(header, s.pages.size());
        const int jfd = ::open(j.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (jfd < 0)
            throw Error(m_path + ": cannot create " + j + " (" + reason(errno) + ")");
        checksums::Sha256 sha;
        bool ok = writeAll(jfd, header.data(), header.size());
        sha.bytes(header.data(), header.size());
        std::string record;
        for (auto it = s.pages.begin(); ok && it != s.pages.end(); ++it) {
            record.clear();
            putU64(record, it->first);
            record.resize(8 + kPageSize);
            ok = preadAll(m_fd, record.data() + 8, kPageSize, it->first * kPageSize)
                 && writeAll(jfd, record.data(), record.size());
            sha.bytes(record.data(), record.size());
        }
        const std::string digest = sha.hex();
        ok = ok && writeAll(jfd, digest.data(), digest.size());
        if (ok)
            fault("journal written");
        ok = ok && ::fsync(jfd) == 0;
        const int err = errno;
        ::close(jfd);
        if (!ok || !syncParent(j)) {
            std::error_code ec;
            fs::remove(j, ec);
            throw Error(m_path + ": cannot write " + j + " (" + reason(ok ? errno : err) + ")");
        }
    }
    fault("journal synced");
    // 2. Overwrite the pages and sync the file (new bytes included); a failure here rolls back from the journal.
    auto rollBack = [&](int err, const char* what) {
        try {
            recover(m_fd, m_path);
        } catch (const Error& e) {
            throw Error(m_path + ": " + what + " (" + reason(err) + "); " + e.what());
        }
        throw Error(m_path + ": " + what + " (" + reason(err) + ")");
    };
    for (const auto& [page, content] : s.pages) {
        const uint64_t start = page * kPageSize;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kPageSize, s.oldSize - start));
        if (!pwriteAll(m_fd, content.data(), n, start))
            rollBack(errno, "cannot write");
        fault("overwrote a page");
    }
    if (::fsync(m_fd) != 0)
        rollBack(errno, "cannot write");
    fault("synced");
    // 3. The commit is complete once the journal is gone. Its removal is not synced: should a power loss bring
    // it back, the next open rolls back this commit only (the next commit's journal, created and synced in the
    // same directory, makes the removal durable first).
    std::error_code ec;
    if (!fs::remove(j, ec) || ec)
        throw Error(m_path + ": cannot remove " + j + " (" + ec.message() + ")");
    m_finished = true;
    fault("journal removed");
    lockByte(m_fd, 0, F_UNLCK);
}

void Commit::abort() noexcept
{
    if (m_fd < 0)
        return;
    // Whatever this commit wrote goes: pages overwritten are restored from its journal (if it got that far),
    // and the file is cut back to its old size.
    try {
        recover(m_fd, m_path);
    } catch (...) {
        return;  // the journal stays; the next open rolls back
    }
    if (::ftruncate(m_fd, static_cast<off_t>(m_state->oldSize)) == 0)
        ::fsync(m_fd);
}

} // namespace icl::journal
