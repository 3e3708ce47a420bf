#pragma once
// Test fixtures shared by every test binary: a scratch folder of the test process's own and tiny training runs
// written by the real trainer. Torch-free (usable from Qt test files). Tests never write to a shared path: each
// process gets its own folder under the system temp directory, removed when the process exits.

#include <cstdint>
#include <string>
#include <vector>

namespace icl::test {

/// This process's scratch folder ("<temp>/icl-test-<pid>-<random>"), created on first use, removed at exit.
/// Throws icl::Error when it cannot be created. Thread-safe.
const std::string& processScratchDir();

/// processScratchDir() with a trailing '/', to prefix file names (the per-process replacement of
/// ::testing::TempDir(), which is shared by every test process).
std::string scratchPrefix();

/// A new, empty folder below processScratchDir() whose name starts with `prefix`. Thread-safe.
std::string scratchSubdir(const std::string& prefix);

/// Trains preset `preset` at the quick scale on the CPU (one thread) for `steps` steps with the `--set` overrides `sets` into
/// the new file `path` (icl::resolveConfig + icl::train, as `icl-cli train` does). Throws icl::Error on any error
/// (a test whose fixture cannot be built fails; it never skips).
void trainTinyRun(const std::string& path, const std::string& preset, const std::vector<std::string>& sets,
    int64_t steps = 20);

/// Tiny runs of each model kind, each trained once per process on first use into processScratchDir().
enum class TinyRun {
    Lsa,              ///< vonoswald-lsa-1layer, d = 3, N = 6, 20 steps, checkpoints at 0, 10, 20
    Gpt2,             ///< guo-representation, d = D = 4, N = 6, 2 layers × 2 heads × 16, 20 steps, checkpoints 0, 10, 20
    SoftmaxAttention, ///< renliu-kernel, batch 64, 20 steps, checkpoints 0, 10, 20
};
/// The path of the tiny run `kind` (trained on first call; later calls return the same file). Thread-safe.
const std::string& tinyRun(TinyRun kind);

} // namespace icl::test
