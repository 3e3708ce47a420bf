#pragma once
// Seed streams of an experiment. Training batch t uses mixSeed(seed, t) (t < 2^40); the fixed
// evaluation prompts, the prompts on which baseline step sizes are fitted and the model
// initialisation use streams far above, so they never coincide with a training batch.

#include <cstdint>

#include "core/tasks/linear_regression.h"

namespace icl::seeds {

inline constexpr uint64_t kInitStream = uint64_t(1) << 50;

inline uint64_t train(uint64_t seed, int64_t step) { return mixSeed(seed, static_cast<uint64_t>(step)); }
inline uint64_t init(uint64_t seed) { return mixSeed(seed, kInitStream); }
inline uint64_t eval(uint64_t seed) { return mixSeed(seed, kInitStream + 1); }
inline uint64_t tuning(uint64_t seed) { return mixSeed(seed, kInitStream + 2); }

} // namespace icl::seeds
