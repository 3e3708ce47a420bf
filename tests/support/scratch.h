#pragma once
// Per-process scratch folders for tests. ctest runs every test as its own process, in parallel: a test writes only
// below the folder of its own process, never to a path another process could use (::testing::TempDir() is shared).
// Depends on the standard library only.

#include <string>

namespace icl::test {

/// This process's scratch folder ("<temp>/icl-test-<pid>-<random>"), created on first use, removed at exit.
/// Throws std::runtime_error when it cannot be created. Thread-safe.
const std::string& processScratchDir();

/// processScratchDir() with a trailing '/', to prefix file names (the per-process replacement of
/// ::testing::TempDir()).
std::string scratchPrefix();

/// A new, empty folder below processScratchDir() whose name starts with `prefix`. Thread-safe.
std::string scratchSubdir(const std::string& prefix);

} // namespace icl::test
