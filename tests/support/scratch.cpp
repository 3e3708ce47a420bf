#include "tests/support/scratch.h"

#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

namespace icl::test {

namespace fs = std::filesystem;

namespace {

std::mutex& scratchMutex()
{
    static std::mutex m;
    return m;
}

/// Removes the process's scratch folder at exit.
struct ScratchRoot {
    std::string path;
    ~ScratchRoot()
    {
        std::error_code ec;
        if (!path.empty())
            fs::remove_all(path, ec);
    }
};

std::string uniqueName(const std::string& prefix)
{
    static std::mt19937_64 rng(std::random_device {}());
    return prefix + "-" + std::to_string(rng() % 1000000000);
}

} // namespace

const std::string& processScratchDir()
{
    static ScratchRoot root;
    const std::lock_guard<std::mutex> lock(scratchMutex());
    if (root.path.empty()) {
        std::error_code ec;
        const fs::path base = fs::temp_directory_path(ec);
        if (ec)
            throw std::runtime_error("test scratch folder: no temporary directory (" + ec.message() + ")");
        for (int attempt = 0; attempt < 16 && root.path.empty(); ++attempt) {
            const fs::path p = base / uniqueName("icl-test-" + std::to_string(::getpid()));
            if (fs::create_directory(p, ec))
                root.path = p.string();
        }
        if (root.path.empty())
            throw std::runtime_error("test scratch folder: cannot create one under " + base.string());
    }
    return root.path;
}

std::string scratchPrefix()
{
    return processScratchDir() + "/";
}

std::string scratchSubdir(const std::string& prefix)
{
    const fs::path root = processScratchDir();
    const std::lock_guard<std::mutex> lock(scratchMutex());
    std::error_code ec;
    for (int attempt = 0; attempt < 16; ++attempt) {
        const fs::path p = root / uniqueName(prefix);
        if (fs::create_directory(p, ec))
            return p.string();
    }
    throw std::runtime_error("test scratch folder: cannot create " + prefix + " under " + root.string());
}

} // namespace icl::test
