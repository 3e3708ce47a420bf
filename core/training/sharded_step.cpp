#include "core/training/sharded_step.h"

#include <stdexcept>
#include <string>

#include "core/runtime/blas.h"

namespace icl {

std::pair<int64_t, int64_t> shardBounds(int64_t batch, int64_t shards, int64_t shard)
{
    if (shards < 1 || shards > batch || shard < 0 || shard >= shards)
        throw std::invalid_argument("shard " + std::to_string(shard) + " of " + std::to_string(shards)
                                    + " of a batch of " + std::to_string(batch));
    const int64_t base = batch / shards, extra = batch % shards;
    const int64_t begin = shard * base + std::min(shard, extra);
    return {begin, begin + base + (shard < extra ? 1 : 0)};
}

ShardedGradient::ShardedGradient(std::vector<torch::Tensor> params, int64_t shards, int threads)
    : m_params(std::move(params))
    , m_shards(shards)
{
    if (shards < 1 || threads < 1)
        throw std::invalid_argument("ShardedGradient needs at least one shard and one thread");
    const int64_t workers = std::min<int64_t>(shards, threads);
    for (int64_t i = 0; i < workers; ++i)
        m_workers.emplace_back([this] { work(); });
}

ShardedGradient::~ShardedGradient()
{
    {
        const std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_start.notify_all();
    for (std::thread& t : m_workers)
        t.join();
}

void ShardedGradient::work()
{
    useOneIntraOpThreadOnThisThread();
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
        m_start.wait(lock, [&] { return m_stop || m_generation != seen; });
        if (m_stop)
            return;
        seen = m_generation;
        while (m_next < m_shards) {
            const int64_t s = m_next++;
            const auto& job = *m_job;
            lock.unlock();
            torch::Tensor loss;
            std::vector<torch::Tensor> grads;
            std::exception_ptr error;
            try {
                loss = job(s);
                // allow_unused: a parameter outside this loss's graph has no gradient (zero below).
                grads = torch::autograd::grad({loss}, m_params, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                              /*allow_unused=*/true);
                loss = loss.detach();
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            m_losses[size_t(s)] = loss;
            m_grads[size_t(s)] = std::move(grads);
            m_errors[size_t(s)] = error;
            if (++m_finished == m_shards)
                m_done.notify_all();
        }
    }
}

torch::Tensor ShardedGradient::lossAndGrad(const std::function<torch::Tensor(int64_t shard)>& shardLoss)
{
    {
        std::unique_lock<std::mutex> lock(m_mutex);
        m_job = &shardLoss;
        m_next = 0;
        m_finished = 0;
        m_losses.assign(size_t(m_shards), torch::Tensor());
        m_grads.assign(size_t(m_shards), {});
        m_errors.assign(size_t(m_shards), nullptr);
        ++m_generation;
        m_start.notify_all();
        m_done.wait(lock, [&] { return m_finished == m_shards; });
        m_job = nullptr;
    }
    for (const std::exception_ptr& e : m_errors)
        if (e)
            std::rethrow_exception(e);

    torch::NoGradGuard noGrad;
    torch::Tensor loss = m_losses[0].clone();
    for (int64_t s = 1; s < m_shards; ++s)
        loss.add_(m_losses[size_t(s)]);
    for (size_t i = 0; i < m_params.size(); ++i) {
        torch::Tensor& p = m_params[i];
        std::vector<const torch::Tensor*> parts;  // the defined shard gradients, in shard order
        for (int64_t s = 0; s < m_shards; ++s)
            if (m_grads[size_t(s)][i].defined())
                parts.push_back(&m_grads[size_t(s)][i]);
        torch::Tensor sum;
        if (!parts.empty()) {
            // Into the existing grad buffer where there is one (the optimiser keeps it between steps), else one
            // laid out as the parameter (autograd's layout contract), whatever the shard gradients' strides.
            if (p.grad().defined() && p.grad().sizes() == parts[0]->sizes() && !p.grad().is_inference())
                sum = p.mutable_grad();
            else
                p.mutable_grad() = sum = torch::empty_like(p);
            // The first two in one pass (g₀ + g₁ is rounded once either way), then the others in shard order.
            if (parts.size() == 1)
                sum.copy_(*parts[0]);
            else
                torch::add_out(sum, *parts[0], *parts[1]);
            for (size_t k = 2; k < parts.size(); ++k)
                sum.add_(*parts[k]);
        }
        if (!sum.defined()) {
            if (p.grad().defined())
                p.mutable_grad().zero_();
            else
                p.mutable_grad() = torch::zeros_like(p);
        }
    }
    m_losses.clear();
    m_grads.clear();
    return loss;
}

} // namespace icl
