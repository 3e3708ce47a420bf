#pragma once
// Shared by the fuzz harnesses of tests/fuzz (docs/security.md, "Fuzzing"). Each harness is a libFuzzer target
// (LLVMFuzzerTestOneInput) that hands one input to one reader of core/io. The property checked on every input:
// the reader returns normally or throws icl::Error (the one-line refusal); anything else (a crash, a sanitizer
// report, an allocation past -rss_limit_mb, another exception, which the CLI would print as "internal error")
// is a finding. Readers that take a path get the input as a file in this process's folder on /dev/shm (RAM).
// Standard library and POSIX only, plus core/error.h.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>
#include <vector>

#include <unistd.h>

#include "core/error.h"

namespace icl::fuzz {

/// This process's folder for the files a harness writes: /dev/shm/icl-fuzz-<pid> (else $TMPDIR or /tmp), created
/// on first use and removed at a normal exit (a crash leaves it; scripts/fuzz.sh removes it).
inline const std::string& scratchDir()
{
    struct Dir {
        std::string path;
        Dir()
        {
            const char* tmp = std::getenv("TMPDIR");
            std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                         : tmp && *tmp                               ? tmp
                                                                                     : "/tmp";
            path = (base / ("icl-fuzz-" + std::to_string(::getpid()))).string();
            std::filesystem::create_directories(path);
        }
        ~Dir()
        {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static Dir dir;
    return dir.path;
}

/// Writes `size` bytes to scratchDir()/name, replacing the file, and returns its path.
inline std::string writeInput(const std::string& name, const void* data, size_t size)
{
    const std::string path = scratchDir() + "/" + name;
    std::error_code ec;
    std::filesystem::remove(path, ec);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    out.close();
    if (!out) {
        std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
        std::abort();
    }
    return path;
}

/// The bytes of the file at `path` (empty when it cannot be read).
inline std::vector<char> fileBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

/// Stops the process with a message: the fuzzer keeps the input as a crash. The scratch folder goes first (a forged
/// journal can leave a sparse file of exabytes in it).
[[noreturn]] inline void finding(const char* reader, const std::string& what)
{
    std::fprintf(stderr, "FINDING in %s: %s\n", reader, what.c_str());
    std::fflush(stderr);
    std::error_code ec;
    std::filesystem::remove_all(scratchDir(), ec);
    std::abort();
}

/// Runs `read()`. Returns true when it returned, false when it threw icl::Error (a refusal: expected for most
/// inputs); any other exception is a finding.
template <class F> bool readOrRefuse(const char* reader, F&& read)
{
    try {
        read();
        return true;
    } catch (const icl::Error&) {
        return false;
    } catch (const std::exception& e) {
        finding(reader, std::string("escaped as ") + typeid(e).name() + ": " + e.what());
    } catch (...) {
        finding(reader, "escaped as an exception of unknown type");
    }
}

/// Called once before the first input: a memory budget well under the fuzzer's -rss_limit_mb=2048 (ASan's
/// shadow memory and quarantine included), so that a reader that respects it is never reported for memory.
inline void initialize()
{
    ::setenv("ICL_MAX_MEMORY", "512M", 0);
    (void)scratchDir();
}

} // namespace icl::fuzz
