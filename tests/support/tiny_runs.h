#pragma once
// Tiny training runs written by the real trainer, shared by the test binaries (each built once per test process
// in its own scratch folder, tests/support/scratch.h). Torch-free (usable from Qt test files).

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/scratch.h"

namespace icl::test {

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
