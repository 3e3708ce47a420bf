#pragma once
// Data-parallel gradient of one training batch over shards of its prompts (training.shards). Core-internal
// (LibTorch).
//
// The batch loss is a mean over prompts, so it and its gradient are the sum over shards of each shard's sum
// divided by the whole batch's count. Each shard runs on a worker thread with one intra-op thread and the
// shard gradients are added in shard order, so the numbers depend on the number of shards only. Why shards:
// docs/performance.md, "Batch shards".

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <torch/torch.h>

namespace icl {

/// Bounds [begin, end) of shard `shard` of `shards` contiguous, near-equal slices of `batch` prompts:
/// the first batch % shards shards hold one prompt more. Requires 1 ≤ shards ≤ batch.
std::pair<int64_t, int64_t> shardBounds(int64_t batch, int64_t shards, int64_t shard);

/// Computes the gradient of a batch loss that is a sum over shards, each shard's part on a worker thread.
///
/// Thread affinity: one caller at a time (a training loop); the workers are owned by this object and
/// joined by its destructor. The shard losses run concurrently on the workers, so they must not write
/// shared state (the models' forward passes do not).
class ShardedGradient {
public:
    /// `params`: the parameters whose grad() lossAndGrad sets (a module's parameters()). `shards` ≥ 1: the
    /// number of parts lossAndGrad sums. `threads` ≥ 1: worker threads (at most `shards` are started),
    /// each running its shards with one intra-op thread. Throws std::invalid_argument on shards or
    /// threads < 1.
    ShardedGradient(std::vector<torch::Tensor> params, int64_t shards, int threads);
    ~ShardedGradient();
    ShardedGradient(const ShardedGradient&) = delete;
    ShardedGradient& operator=(const ShardedGradient&) = delete;

    /// Runs shardLoss(s) for every shard s = 0 … shards − 1 on the workers; shardLoss(s) returns shard s's
    /// part of the batch loss (a scalar; the parts sum to the batch loss), computed with autograd from the
    /// parameters. Sets every parameter's grad() to the sum of the shard gradients, added in shard order
    /// (zero for a parameter no shard uses), and returns the batch loss (the parts added in shard order, a
    /// detached scalar). Rethrows the exception of the lowest-numbered shard that threw, after every shard
    /// has finished; the grads are then unspecified.
    torch::Tensor lossAndGrad(const std::function<torch::Tensor(int64_t shard)>& shardLoss);

    int64_t shards() const { return m_shards; }
    int threads() const { return int(m_workers.size()); }

private:
    void work();

    std::vector<torch::Tensor> m_params;
    int64_t m_shards;
    std::vector<std::thread> m_workers;

    std::mutex m_mutex;
    std::condition_variable m_start, m_done;
    uint64_t m_generation = 0;  // incremented for every lossAndGrad call
    bool m_stop = false;
    const std::function<torch::Tensor(int64_t)>* m_job = nullptr;
    int64_t m_next = 0;      // next shard to hand out
    int64_t m_finished = 0;  // shards finished in this generation
    std::vector<torch::Tensor> m_losses;               // [shard]
    std::vector<std::vector<torch::Tensor>> m_grads;   // [shard][parameter]
    std::vector<std::exception_ptr> m_errors;          // [shard]
};

} // namespace icl
