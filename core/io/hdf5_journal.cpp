#include "core/io/hdf5_journal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#if H5_VERSION_GE(1, 13, 0)
#include <H5FDdevelop.h>  // HDF5 >= 1.13 declares the driver interface here
#endif

#include "core/error.h"
#include "core/io/checked_size.h"
#include "core/io/checksums.h"
#include "core/io/memory_budget.h"

namespace fs = std::filesystem;

namespace icl::journal {

struct CommitState {
    std::string path;
    uint64_t oldSize = 0;                          // bytes HDF5 may not overwrite before the journal
    std::map<uint64_t, std::vector<char>> pages;  // page index -> new content (bytes < oldSize count)
    std::function<void(const std::string&)> fault;
    int lastErrno = 0;
};

// A journal beside a file, as read and checked.
struct Leftover {
    enum class Kind { none, incomplete, complete } kind = Kind::none;
    int version = 0;           // 1: an earlier build's journal (no binding), 2: this build's
    uint64_t oldSize = 0;      // the file's size before the interrupted commit
    Binding before;            // version 2: the file's state before the commit
    std::map<uint64_t, std::vector<char>> pages;  // page index -> content before the commit (4 KiB)
    std::string digest;        // the journal's own SHA-256 (hex), to recognise it again
};

namespace {

// Version 2 (this build): magic, page size, old size, new size, page count, file id (32 ASCII hex digits or 32
// zero bytes), generation before, generation after; then per page its index, its content before the commit
// and the SHA-256 of its content after it; then the hex SHA-256 of everything before. docs/file-format.md.
constexpr char kMagic2[8] = {'I', 'C', 'L', 'J', 'R', 'N', 'L', '2'};
constexpr size_t kHeader2 = 88;
constexpr size_t kRecord2 = 8 + kPageSize + 32;
// Version 1 (earlier builds): magic, page size, old size, page count; per page its index and old content.
constexpr char kMagic1[8] = {'I', 'C', 'L', 'J', 'R', 'N', 'L', '1'};
constexpr size_t kHeader1 = 32;
constexpr size_t kRecord1 = 8 + kPageSize;
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

std::string sha256Raw(const void* data, size_t n)
{
    const std::string hex = checksums::Sha256().bytes(data, n).hex();
    std::string raw(32, '\0');
    for (size_t i = 0; i < 32; ++i)
        raw[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    return raw;
}

bool isFileId(const std::string& s)
{
    return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Bytes of the page starting at `start` that belong to a file of `oldSize` bytes.
size_t pageBytes(uint64_t start, uint64_t oldSize)
{
    return static_cast<size_t>(std::min<uint64_t>(kPageSize, oldSize - start));
}

// Reads and checks the journal of `path` (whose descriptor is `fd`, any mode). Never writes. Throws icl::Error
// (a refusal line) for a journal that cannot be this file's; returns Kind::none when there is none.
Leftover inspect(const std::string& path, int fd, Policy policy)
{
    Leftover out;
    const std::string j = journalPath(path);
    struct stat lst {};
    if (::lstat(j.c_str(), &lst) != 0) {
        if (errno == ENOENT)
            return out;
        throw Error(refusal(path, "cannot be checked (" + reason(errno) + ")"));
    }
    // Never through a link, never blocking (a FIFO opens at once without a writer), never a device.
    const int jfd = ::open(j.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (jfd < 0) {
        if (errno == ELOOP || S_ISLNK(lst.st_mode))
            throw Error(refusal(path, "is a symbolic link, not a journal"));
        throw Error(refusal(path, "cannot be read (" + reason(errno) + ")"));
    }
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } closeJournal{jfd};
    struct stat jst {}, fst {};
    if (::fstat(jfd, &jst) != 0 || ::fstat(fd, &fst) != 0)
        throw Error(refusal(path, "cannot be checked (" + reason(errno) + ")"));
    if (!S_ISREG(jst.st_mode))
        throw Error(refusal(path, std::string("is not a regular file (") + (S_ISFIFO(jst.st_mode) ? "a FIFO"
                                  : S_ISDIR(jst.st_mode)                                      ? "a directory"
                                  : S_ISCHR(jst.st_mode) || S_ISBLK(jst.st_mode)              ? "a device"
                                                                                              : "a socket")
                                      + ")"));
    // A journal holds at most every page of the file's old size, which is at most its present size.
    const uint64_t fileSize = static_cast<uint64_t>(fst.st_size);
    const uint64_t filePages = fileSize / kPageSize + (fileSize % kPageSize ? 1 : 0);
    const uint64_t bound = kHeader2 + filePages * kRecord2 + kDigestBytes;
    const uint64_t size = static_cast<uint64_t>(jst.st_size);
    if (size > bound)
        throw Error(refusal(path, "is larger than a journal of this file can be (" + formatBytes(size) + ", at most "
                                      + formatBytes(bound) + " for a file of " + formatBytes(fileSize) + ")"));
    // The file's own size bounds it; the budget bounds that (its bytes, and the saved pages kept from them).
    MemoryBudget(path).charge(checked::mul(size, 2, j), j);
    std::string content(static_cast<size_t>(size), '\0');
    size_t got = 0;
    while (got < content.size()) {
        const ssize_t r = ::read(jfd, content.data() + got, content.size() - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r < 0)
            throw Error(refusal(path, "cannot be read (" + reason(errno) + ")"));
        if (r == 0)
            break;
        got += static_cast<size_t>(r);
    }
    content.resize(got);

    // A commit killed while writing its journal leaves a prefix of one; it had not overwritten anything yet.
    const bool v2 = content.size() >= 8 ? std::memcmp(content.data(), kMagic2, 8) == 0
                                        : std::memcmp(content.data(), kMagic2, content.size()) == 0;
    const bool v1 = content.size() >= 8 && std::memcmp(content.data(), kMagic1, 8) == 0;
    if (!v1 && !v2)
        throw Error(refusal(path, "is not a journal of an ICL Workbench commit"));
    out.version = v2 ? 2 : 1;
    const size_t header = v2 ? kHeader2 : kHeader1, record = v2 ? kRecord2 : kRecord1;
    out.kind = Leftover::Kind::incomplete;
    if (content.size() < header + kDigestBytes || (content.size() - header - kDigestBytes) % record != 0)
        return out;
    out.digest = content.substr(content.size() - kDigestBytes);
    if (checksums::Sha256().bytes(content.data(), content.size() - kDigestBytes).hex() != out.digest)
        return out;
    const uint64_t count = getU64(content, v2 ? 32 : 24);
    if (count != (content.size() - header - kDigestBytes) / record)
        return out;
    out.kind = Leftover::Kind::complete;

    // Complete: every field must fit this file, or it is not this file's journal.
    if (getU64(content, 8) != kPageSize)
        throw Error(refusal(path, "has a page size of " + std::to_string(getU64(content, 8)) + " bytes, not "
                                      + std::to_string(kPageSize)));
    out.oldSize = getU64(content, 16);
    if (out.oldSize == 0)
        throw Error(refusal(path, "records an old size of 0 bytes (no experiment file is empty)"));
    if (out.oldSize > fileSize)
        throw Error(refusal(path, "records an old size of " + std::to_string(out.oldSize)
                                      + " bytes, larger than the file (" + std::to_string(fileSize) + " bytes)"));
    const uint64_t oldPages = out.oldSize / kPageSize + (out.oldSize % kPageSize ? 1 : 0);
    if (count > oldPages)
        throw Error(refusal(path, "records " + std::to_string(count) + " pages, more than the "
                                      + std::to_string(oldPages) + " of the file before its commit"));
    std::vector<std::string> newDigests;
    if (v2) {
        const uint64_t newSize = getU64(content, 24);
        if (newSize < out.oldSize)
            throw Error(refusal(path, "records a file size after its commit smaller than before it"));
        const std::string id = content.substr(40, 32);
        if (id == std::string(32, '\0'))
            out.before.file_id.clear();
        else if (isFileId(id))
            out.before.file_id = id;
        else
            throw Error(refusal(path, "records an invalid file id"));
        out.before.generation = getU64(content, 72);
        if (getU64(content, 80) != out.before.generation + 1)
            throw Error(refusal(path, "records generations that are not consecutive"));
    }
    for (uint64_t i = 0; i < count; ++i) {
        const size_t at = header + static_cast<size_t>(i) * record;
        const uint64_t index = getU64(content, at);
        uint64_t start = 0;
        try {
            start = checked::mul(index, kPageSize, "page index");
        } catch (const Error&) {
            throw Error(refusal(path, "records page " + std::to_string(index) + ", whose offset overflows 64 bits"));
        }
        if (start >= out.oldSize)
            throw Error(refusal(path, "records page " + std::to_string(index) + " at byte " + std::to_string(start)
                                          + ", past the file's old size of " + std::to_string(out.oldSize)
                                          + " bytes"));
        if (!out.pages.empty() && index <= out.pages.rbegin()->first)
            throw Error(refusal(path, "records page " + std::to_string(index) + " out of order"));
        out.pages.emplace(index, std::vector<char>(content.data() + at + 8, content.data() + at + 8 + kPageSize));
        if (v2)
            newDigests.push_back(content.substr(at + 8 + kPageSize, 32));
    }
    if (v2) {
        // Bound to this file in its present state: each page the commit overwrites holds, now, either its content
        // before the commit (not yet overwritten) or after it. A journal of another file, or of an earlier commit
        // of this one (the file has been committed since), fails here.
        std::vector<char> now(kPageSize);
        size_t k = 0;
        for (const auto& [index, old] : out.pages) {
            const uint64_t start = index * kPageSize;
            const size_t n = pageBytes(start, out.oldSize);
            if (!preadAll(fd, now.data(), n, start))
                throw Error(refusal(path, "cannot be checked against the file (" + reason(errno) + ")"));
            if (std::memcmp(now.data(), old.data(), n) != 0 && sha256Raw(now.data(), n) != newDigests[k])
                throw Error(refusal(path, "does not match this file (page " + std::to_string(index)
                                              + " holds neither its content before nor after the journal's commit: "
                                                "a journal of another file or of an earlier commit)"));
            ++k;
        }
    } else if (policy == Policy::reader) {
        throw Error(path + ": an interrupted commit of an earlier build left " + j + "; run `icl-cli recover " + path
                    + "` (or the next `train --resume`) to roll it back");
    }
    return out;
}

// Caller holds the writer lock and byte 0 exclusively: restores the pages of `l` and cuts the file to its old size
// (never larger than it was before the commit: old size <= present size was checked), syncs, removes the journal.
void rollBack(int fd, const std::string& path, const Leftover& l)
{
    const std::string j = journalPath(path);
    for (const auto& [index, old] : l.pages)
        if (!pwriteAll(fd, old.data(), pageBytes(index * kPageSize, l.oldSize), index * kPageSize))
            throw Error(path + ": cannot roll back an interrupted commit from " + j + " (" + reason(errno) + ")");
    if (::ftruncate(fd, static_cast<off_t>(l.oldSize)) != 0 || ::fsync(fd) != 0)
        throw Error(path + ": cannot roll back an interrupted commit from " + j + " (" + reason(errno) + ")");
    if (::unlink(j.c_str()) != 0)
        throw Error(path + ": cannot remove " + j + " after rolling back (" + reason(errno) + ")");
    syncParent(path);
}

// ---- Drivers (HDF5 1.10 VFD interface; 1.13+ adds version and value) ----

struct DriverInfo {
    CommitState* state = nullptr;                       // the commit's driver
    const std::shared_ptr<Leftover>* overlay = nullptr;  // the read-only overlay driver: the journal's pages
    int fd = -1;                                         // overlay: the reader's descriptor (dup'ed on open)
};

struct JournaledFile {
    H5FD_t pub;  // first: HDF5 treats a pointer to this struct as an H5FD_t*
    int fd = -1;
    haddr_t eoa = 0;
    haddr_t eof = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    CommitState* state = nullptr;
    const Leftover* overlay = nullptr;
    std::shared_ptr<const Leftover>* keep = nullptr;  // keeps `overlay` alive while HDF5 holds the file open
};

JournaledFile* self(H5FD_t* f)
{
    return reinterpret_cast<JournaledFile*>(f);
}
const JournaledFile* self(const H5FD_t* f)
{
    return reinterpret_cast<const JournaledFile*>(f);
}

JournaledFile* makeFile(int fd, CommitState* state, const std::shared_ptr<Leftover>* overlay)
{
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        return nullptr;
    }
    auto* f = new JournaledFile();
    f->fd = fd;
    f->eof = overlay ? static_cast<haddr_t>((*overlay)->oldSize) : static_cast<haddr_t>(st.st_size);
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->state = state;
    if (overlay) {
        f->keep = new std::shared_ptr<const Leftover>(*overlay);
        f->overlay = f->keep->get();
    }
    return f;
}

H5FD_t* jOpen(const char* name, unsigned flags, hid_t fapl, haddr_t)
{
    const auto* info = static_cast<const DriverInfo*>(H5Pget_driver_info(fapl));
    if (!info || !info->state || (flags & (H5F_ACC_TRUNC | H5F_ACC_CREAT)) || !(flags & H5F_ACC_RDWR))
        return nullptr;  // in-place commits of existing files only
    const int fd = ::open(name, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    JournaledFile* f = makeFile(fd, info->state, nullptr);
    return f ? &f->pub : nullptr;
}

// The overlay driver reads the descriptor the reader locked and checked the journal against, read-only.
H5FD_t* oOpen(const char*, unsigned flags, hid_t fapl, haddr_t)
{
    const auto* info = static_cast<const DriverInfo*>(H5Pget_driver_info(fapl));
    if (!info || !info->overlay || !*info->overlay || info->fd < 0
        || (flags & (H5F_ACC_TRUNC | H5F_ACC_CREAT | H5F_ACC_RDWR)))
        return nullptr;
    const int fd = ::fcntl(info->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return nullptr;
    JournaledFile* f = makeFile(fd, nullptr, info->overlay);
    return f ? &f->pub : nullptr;
}

herr_t jClose(H5FD_t* file)
{
    JournaledFile* f = self(file);
    const int status = ::close(f->fd);
    delete f->keep;
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

// Copies the pages of `pages` that fall into [addr, min(addr + size, limit)) over buf.
void overlayPages(const std::map<uint64_t, std::vector<char>>& pages, uint64_t limit, haddr_t addr, size_t size,
                  void* buf)
{
    const uint64_t end = std::min<uint64_t>(addr + size, limit);
    for (auto it = pages.lower_bound(addr / kPageSize); it != pages.end() && it->first * kPageSize < end; ++it) {
        const uint64_t from = std::max<uint64_t>(addr, it->first * kPageSize);
        const uint64_t to = std::min<uint64_t>(end, (it->first + 1) * kPageSize);
        if (from < to)
            std::memcpy(static_cast<char*>(buf) + (from - addr), it->second.data() + (from - it->first * kPageSize),
                        static_cast<size_t>(to - from));
    }
}

herr_t jRead(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf)
{
    JournaledFile* f = self(file);
    if (addr == HADDR_UNDEF || addr + size < addr)
        return -1;
    if (f->overlay) {
        // The file before the interrupted commit: its first oldSize bytes, the journal's pages over them.
        const uint64_t limit = f->overlay->oldSize;
        const size_t inFile = addr >= limit ? 0 : static_cast<size_t>(std::min<uint64_t>(size, limit - addr));
        if (inFile && !preadAll(f->fd, buf, inFile, addr))
            return -1;
        std::memset(static_cast<char*>(buf) + inFile, 0, size - inFile);
        overlayPages(f->overlay->pages, limit, addr, size, buf);
        return 0;
    }
    if (!preadAll(f->fd, buf, size, addr))
        return -1;
    // Pages held back by this commit are newer than the file.
    overlayPages(f->state->pages, f->state->oldSize, addr, size, buf);
    return 0;
}

herr_t jWrite(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, const void* buf)
{
    JournaledFile* f = self(file);
    if (f->overlay)
        return -1;  // read-only
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
    if (f->overlay)
        return 0;  // read-only: HDF5 only truncates files opened for writing
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

H5FD_class_t driverClass(const char* name, H5FD_t* (*open)(const char*, unsigned, hid_t, haddr_t))
{
    H5FD_class_t c;
    std::memset(&c, 0, sizeof c);
#if H5_VERSION_GE(1, 13, 0)
    // Written against HDF5 1.10's interface (Debian 12); these two fields are what 1.13+ adds up front.
    c.version = H5FD_CLASS_VERSION;
    c.value = static_cast<H5FD_class_value_t>(open == jOpen ? 510 : 511);  // 256-511: unregistered drivers
#endif
    c.name = name;
    c.maxaddr = (haddr_t(1) << (8 * sizeof(off_t) - 1)) - 1;
    c.fc_degree = H5F_CLOSE_WEAK;
    c.fapl_size = sizeof(DriverInfo);
    c.open = open;
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
}

hid_t registered(hid_t& id, H5FD_class_t& cls)
{
    if (id >= 0 && H5Iis_valid(id) > 0)
        return id;
    id = H5FDregister(&cls);
    if (id < 0)
        throw Error("cannot register the journaled HDF5 file driver");
    return id;
}

hid_t commitDriver()
{
    static hid_t id = -1;
    static H5FD_class_t cls = driverClass("icl_journaled", jOpen);
    return registered(id, cls);
}

hid_t overlayDriver()
{
    static hid_t id = -1;
    static H5FD_class_t cls = driverClass("icl_journal_overlay", oOpen);
    return registered(id, cls);
}

hid_t accessWith(hid_t driver, const DriverInfo& info)
{
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl < 0)
        throw Error("H5Pcreate");
    if (H5Pset_driver(fapl, driver, &info) < 0) {
        H5Pclose(fapl);
        throw Error("cannot select the journaled HDF5 file driver");
    }
    return fapl;
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

std::string refusal(const std::string& path, const std::string& what)
{
    const std::string j = journalPath(path);
    return path + ": " + j + " " + what + "; it was left as it is and the file was not changed (remove " + j
           + " if no commit of " + path + " was interrupted)";
}

std::string newFileId()
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        const ssize_t r = ::getrandom(b + got, sizeof b - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            throw Error(std::string("cannot draw a random file id (") + reason(errno) + ")");
        got += static_cast<size_t>(r);
    }
    static const char* digits = "0123456789abcdef";
    std::string id;
    for (unsigned char c : b) {
        id.push_back(digits[c >> 4]);
        id.push_back(digits[c & 15]);
    }
    return id;
}

// ---- ReadView ----

ReadView::ReadView(const std::string& path, Policy policy)
    : m_path(path)
{
    m_fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (m_fd < 0)
        return;  // the open that follows reports why
    struct stat st {};
    if (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(m_fd);
        m_fd = -1;
        throw Error(path + ": not a regular file, not an experiment file");
    }
    lockByte(m_fd, 0, F_RDLCK);
    // A live commit holds byte 0 exclusively while its journal exists: one seen here was left by a killed process.
    std::shared_ptr<Leftover> l;
    try {
        l = std::make_shared<Leftover>(inspect(path, m_fd, policy));
    } catch (...) {
        ::close(m_fd);  // and with it the lock: the destructor does not run for a constructor that throws
        m_fd = -1;
        throw;
    }
    const std::string j = journalPath(path);
    if (l->kind == Leftover::Kind::incomplete)
        m_note = j + " of an interrupted commit is incomplete (the commit had not changed the file yet); `icl-cli "
                     "recover " + path + "` or the next commit removes it";
    else if (l->kind == Leftover::Kind::complete) {
        m_leftover = l;
        m_note = "a commit was interrupted and left " + j + "; this is the file as it was before that commit (`icl-cli "
                 "recover " + path + "` or the next `train --resume` restores it on disk)";
    }
}

ReadView::~ReadView()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

hid_t ReadView::fileAccess() const
{
    if (!overlaid()) {
        const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
        if (fapl < 0)
            throw Error("H5Pcreate");
        return fapl;
    }
    DriverInfo info;
    info.overlay = &m_leftover;
    info.fd = m_fd;
    return accessWith(overlayDriver(), info);
}

bool ReadView::overlaid() const
{
    return m_leftover != nullptr;
}

bool ReadView::bound() const
{
    return m_leftover && m_leftover->version >= 2;
}

const Binding& ReadView::binding() const
{
    static const Binding none;
    return m_leftover ? m_leftover->before : none;
}

// ---- WriterLock ----

WriterLock::WriterLock(const std::string& path, const std::function<void()>& validate)
    : m_path(path)
{
    m_fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (m_fd < 0)
        throw Error(path + ": cannot open for writing (" + reason(errno) + ")");
    try {
        struct stat st {};
        if (::fstat(m_fd, &st) != 0 || !S_ISREG(st.st_mode))
            throw Error(path + ": not a regular file, not an experiment file");
        lockByte(m_fd, 1, F_WRLCK);  // one writer at a time
        const std::string j = journalPath(path);
        const Leftover l = inspect(path, m_fd, Policy::writer);
        if (l.kind == Leftover::Kind::incomplete) {
            // Killed while writing the journal: the file was not overwritten yet.
            lockByte(m_fd, 0, F_WRLCK);
            if (::unlink(j.c_str()) != 0 && errno != ENOENT)
                throw Error(path + ": cannot remove " + j + " left by an interrupted commit (" + reason(errno) + ")");
            syncParent(path);
            lockByte(m_fd, 0, F_UNLCK);
            m_recovery = j + " of an interrupted commit was incomplete (the file had not been changed) and is removed";
        } else if (l.kind == Leftover::Kind::complete) {
            if (validate)
                validate();  // reads the file as the roll-back will leave it
            lockByte(m_fd, 0, F_WRLCK);  // readers wait from here
            // The journal checked above, still the same one, and still bound to the file as it is now.
            const Leftover again = inspect(path, m_fd, Policy::writer);
            if (again.kind != Leftover::Kind::complete || again.digest != l.digest)
                throw Error(refusal(path, "changed while it was being checked"));
            rollBack(m_fd, path, again);
            lockByte(m_fd, 0, F_UNLCK);
            m_recovery = "an interrupted commit was rolled back from " + j + " (the file holds the commit before it)";
        }
    } catch (...) {
        ::close(m_fd);
        m_fd = -1;
        throw;
    }
}

WriterLock::~WriterLock()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

uint64_t WriterLock::trimPastEndOfAllocation()
{
    lockByte(m_fd, 0, F_WRLCK);
    struct stat st {};
    const uint64_t eoa = endOfAllocation(m_path);
    uint64_t cut = 0;
    if (eoa > 0 && ::fstat(m_fd, &st) == 0 && uint64_t(st.st_size) > eoa) {
        if (::ftruncate(m_fd, static_cast<off_t>(eoa)) != 0) {
            const int err = errno;
            lockByte(m_fd, 0, F_UNLCK);
            throw Error(m_path + ": cannot trim what an interrupted commit left (" + reason(err) + ")");
        }
        cut = uint64_t(st.st_size) - eoa;
    }
    lockByte(m_fd, 0, F_UNLCK);
    return cut;
}

// ---- Commit ----

Commit::Commit(const std::string& path, std::function<void(const std::string&)> fault,
               const std::function<void()>& validate)
    : m_path(path)
    , m_lock(path, validate)
    , m_fd(m_lock.fd())
    , m_state(std::make_unique<CommitState>())
{
    m_state->path = path;
    m_state->fault = std::move(fault);
    // Bytes past the end of allocation are not part of any version (left by a killed commit): trim them.
    m_lock.trimPastEndOfAllocation();
    struct stat st {};
    if (::fstat(m_fd, &st) != 0)
        throw Error(path + ": cannot read its size (" + reason(errno) + ")");
    m_state->oldSize = static_cast<uint64_t>(st.st_size);
}

Commit::~Commit()
{
    if (!m_finished)
        abort();
}

hid_t Commit::fileAccess() const
{
    DriverInfo info;
    info.state = m_state.get();
    return accessWith(commitDriver(), info);
}

void Commit::setBinding(const Binding& before)
{
    m_binding = before;
    m_bindingSet = true;
}

std::string Commit::lastError() const
{
    return m_state->lastErrno ? reason(m_state->lastErrno) : std::string();
}

bool Commit::restoreSaved() noexcept
{
    for (const auto& [page, content] : m_saved)
        if (!pwriteAll(m_fd, content.data(), pageBytes(page * kPageSize, m_state->oldSize), page * kPageSize))
            return false;
    return ::ftruncate(m_fd, static_cast<off_t>(m_state->oldSize)) == 0 && ::fsync(m_fd) == 0;
}

void Commit::finish()
{
    CommitState& s = *m_state;
    auto fault = [&](const char* point) {
        if (s.fault)
            s.fault(point);
    };
    if (!m_bindingSet)
        throw Error(m_path + ": internal: a commit without the file's binding");
    const std::string j = journalPath(m_path);
    fault("closed");
    // What this commit added past the old size need not be on disk yet: until the journal is gone, a crash rolls
    // back to the old size, and the fsync after the overwrite below covers both.
    // 1. The original content of every page about to be overwritten and the SHA-256 of its new content.
    lockByte(m_fd, 0, F_WRLCK);  // readers wait from here until the journal is gone
    {
        struct stat st {};
        const uint64_t newSize = ::fstat(m_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : s.oldSize;
        std::string header(kMagic2, 8);
        putU64(header, kPageSize);
        putU64(header, s.oldSize);
        putU64(header, std::max(newSize, s.oldSize));
        putU64(header, s.pages.size());
        header += m_binding.file_id.empty() ? std::string(32, '\0') : m_binding.file_id;
        putU64(header, m_binding.generation);
        putU64(header, m_binding.generation + 1);
        if (header.size() != kHeader2 || (!m_binding.file_id.empty() && !isFileId(m_binding.file_id)))
            throw Error(m_path + ": internal: malformed journal header");
        const int jfd = ::open(j.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (jfd < 0)
            throw Error(m_path + ": cannot create " + j + " (" + reason(errno) + ")");
        checksums::Sha256 sha;
        bool ok = writeAll(jfd, header.data(), header.size());
        sha.bytes(header.data(), header.size());
        std::string record;
        m_saved.clear();
        for (auto it = s.pages.begin(); ok && it != s.pages.end(); ++it) {
            record.clear();
            putU64(record, it->first);
            record.resize(8 + kPageSize);
            ok = preadAll(m_fd, record.data() + 8, kPageSize, it->first * kPageSize);
            record += sha256Raw(it->second.data(), pageBytes(it->first * kPageSize, s.oldSize));
            ok = ok && writeAll(jfd, record.data(), record.size());
            sha.bytes(record.data(), record.size());
            m_saved.emplace_back(it->first, std::vector<char>(record.data() + 8, record.data() + 8 + kPageSize));
        }
        const std::string digest = sha.hex();
        ok = ok && writeAll(jfd, digest.data(), digest.size());
        if (ok)
            fault("journal written");
        ok = ok && ::fsync(jfd) == 0;
        const int err = errno;
        ::close(jfd);
        if (!ok || !syncParent(j)) {
            ::unlink(j.c_str());
            throw Error(m_path + ": cannot write " + j + " (" + reason(ok ? errno : err) + ")");
        }
        m_journalWritten = true;
    }
    fault("journal synced");
    // 2. Overwrite the pages and sync the file (new bytes included); a failure here rolls back from the journal.
    auto failed = [&](int err, const char* what) {
        if (restoreSaved() && ::unlink(j.c_str()) == 0) {
            m_journalWritten = false;
            syncParent(j);
            throw Error(m_path + ": " + what + " (" + reason(err) + ")");
        }
        m_finished = true;  // the journal stays: the next writer rolls back
        throw Error(m_path + ": " + what + " (" + reason(err) + "); " + j
                    + " is kept: `icl-cli recover` or the next commit rolls the file back");
    };
    for (const auto& [page, content] : s.pages) {
        if (!pwriteAll(m_fd, content.data(), pageBytes(page * kPageSize, s.oldSize), page * kPageSize))
            failed(errno, "cannot write");
        fault("overwrote a page");
    }
    if (::fsync(m_fd) != 0)
        failed(errno, "cannot write");
    fault("synced");
    // 3. The commit is complete once the journal is gone. Its removal is not synced: should a power loss bring
    // it back, every page holds its new content and the next writer rolls back this commit only (the next
    // commit's journal, created and synced in the same directory, makes the removal durable first).
    if (::unlink(j.c_str()) != 0)
        throw Error(m_path + ": cannot remove " + j + " (" + reason(errno) + ")");
    m_finished = true;
    fault("journal removed");
    lockByte(m_fd, 0, F_UNLCK);
}

void Commit::abort() noexcept
{
    if (m_fd < 0)
        return;
    // Whatever this commit wrote goes: pages overwritten are restored from what it journaled (if it got that
    // far), and the file is cut back to its old size. A file the commit never grew is not touched.
    if (m_journalWritten) {
        if (restoreSaved())
            ::unlink(journalPath(m_path).c_str());  // else the journal stays; the next writer rolls back
        return;
    }
    struct stat st {};
    if (::fstat(m_fd, &st) == 0 && static_cast<uint64_t>(st.st_size) != m_state->oldSize
        && ::ftruncate(m_fd, static_cast<off_t>(m_state->oldSize)) == 0)
        ::fsync(m_fd);
}

} // namespace icl::journal
