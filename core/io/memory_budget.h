#pragma once
// Torch-free. The memory one open or import of a file may use for what the file's contents size
// (decompressed bytes, materialised tensors, pickle containers, the model a file implies), checked
// *before* each allocation, so a small hostile file is refused in one line instead of exhausting memory
// (docs/security.md; limits in docs/weights-formats.md). Thread affinity: one budget per open, one thread.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <unistd.h>

#include "core/error.h"

namespace icl {

/// Human-readable byte count for messages: "17.2 GB", "512 MB", "3 KB" (powers of 1000, 3 significant digits).
inline std::string formatBytes(uint64_t bytes)
{
    const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1000.0 && u < 6) {
        v /= 1000.0;
        ++u;
    }
    char buf[32];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/// Parses a memory size as a user writes it: "512M", "1.5G", "2GiB", "800000000" (bytes). K/M/G/T are powers
/// of 1024 (with or without "iB"/"B"). Throws icl::Error "<what>: expected a size such as 512M or 2G, got …".
inline uint64_t parseMemorySize(const std::string& text, const std::string& what)
{
    size_t used = 0;
    double v = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string unit = text.substr(used);
    for (const char* suffix : {"iB", "B"})
        if (unit.size() > 1 && unit.size() >= std::string(suffix).size()
            && unit.compare(unit.size() - std::string(suffix).size(), std::string::npos, suffix) == 0) {
            unit.resize(unit.size() - std::string(suffix).size());
            break;
        }
    double scale = 0;
    if (unit.empty())
        scale = 1;
    else if (unit == "K" || unit == "k")
        scale = 1024.0;
    else if (unit == "M" || unit == "m")
        scale = 1024.0 * 1024;
    else if (unit == "G" || unit == "g")
        scale = 1024.0 * 1024 * 1024;
    else if (unit == "T" || unit == "t")
        scale = 1024.0 * 1024 * 1024 * 1024;
    if (used == 0 || scale == 0 || !(v > 0) || v * scale > 1.8e19)
        throw Error(what + ": expected a size such as 512M or 2G, got \"" + text + "\"");
    return static_cast<uint64_t>(v * scale);
}

/// Physical memory of this machine in bytes (0 when unknown).
inline uint64_t physicalMemoryBytes()
{
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

namespace detail {
inline std::atomic<uint64_t> g_processMemoryLimit{0};
}

/// Sets the limit defaultMemoryBudget() returns while it lives (0: leaves it as it is), and restores the previous
/// one when destroyed: icl-cli's --max-memory on `analyze` and `eval`, whose analyses open the run file deep in the
/// core, and an import's ImportRequest::max_memory (so the model it builds is checked against it too). The GUI
/// never sets one (its limits are 0). Thread affinity: create and destroy on one thread; budgets on any thread
/// read it.
class ScopedMemoryLimit {
public:
    explicit ScopedMemoryLimit(uint64_t limit)
        : m_previous(detail::g_processMemoryLimit.load())
    {
        if (limit)
            detail::g_processMemoryLimit = limit;
    }
    ~ScopedMemoryLimit() { detail::g_processMemoryLimit = m_previous; }
    ScopedMemoryLimit(const ScopedMemoryLimit&) = delete;
    ScopedMemoryLimit& operator=(const ScopedMemoryLimit&) = delete;

private:
    uint64_t m_previous;
};

/// The default budget: a ScopedMemoryLimit's limit (--max-memory) while one is alive, else the environment's
/// ICL_MAX_MEMORY ("1.5G") if set, else a quarter of physical memory (at least 1 GiB; 4 GiB where the memory size
/// is unknown). Throws icl::Error for a malformed ICL_MAX_MEMORY.
inline uint64_t defaultMemoryBudget()
{
    if (const uint64_t limit = detail::g_processMemoryLimit.load())
        return limit;
    if (const char* env = std::getenv("ICL_MAX_MEMORY"); env && *env)
        return parseMemorySize(env, "ICL_MAX_MEMORY");
    const uint64_t ram = physicalMemoryBytes();
    const uint64_t gib = uint64_t(1) << 30;
    return ram == 0 ? 4 * gib : std::max(gib, ram / 4);
}

/// Bytes one open or import may still allocate on a file's say-so. charge() before each such allocation;
/// the running total only grows (freeing is not credited: the budget bounds the peak conservatively).
class MemoryBudget {
public:
    /// `source` names the file in messages; `limit` in bytes (0: defaultMemoryBudget()).
    explicit MemoryBudget(std::string source, uint64_t limit = 0)
        : m_source(std::move(source))
        , m_limit(limit ? limit : defaultMemoryBudget())
    {
    }

    /// Records `bytes` about to be allocated for `what` ("decompressed entry archive/data/0", "tensor
    /// blocks.0.attn.w_q materialised"). Throws icl::Error "<source>: refused: <what> would need 17.2 GB, over
    /// the memory budget of 6.4 GB (--max-memory or ICL_MAX_MEMORY)" when the total would exceed the limit.
    void charge(uint64_t bytes, const std::string& what)
    {
        if (bytes > m_limit || m_used > m_limit - bytes)
            throw Error(m_source + ": refused: " + what + " would need " + formatBytes(bytes)
                        + (m_used ? " (" + formatBytes(m_used) + " already used)" : std::string())
                        + ", over the memory budget of " + formatBytes(m_limit) + " (--max-memory or ICL_MAX_MEMORY)");
        m_used += bytes;
    }

    /// Throws like charge() when `bytes` alone would exceed what is left, without recording it (for a
    /// size checked before a structure is built, e.g. the model a file implies).
    void check(uint64_t bytes, const std::string& what) const
    {
        MemoryBudget copy = *this;
        copy.charge(bytes, what);
    }

    uint64_t limit() const { return m_limit; }
    uint64_t used() const { return m_used; }
    const std::string& source() const { return m_source; }

private:
    std::string m_source;
    uint64_t m_limit = 0;
    uint64_t m_used = 0;
};

} // namespace icl
