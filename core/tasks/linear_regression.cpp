#include "core/tasks/linear_regression.h"

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "core/io/kinds.h"
#include "core/tasks/uniform_draws.h"

namespace icl {

PromptBatch PromptBatch::prefix(int64_t n) const
{
    TORCH_CHECK(n >= 0 && n <= nContext(), "prefix length out of range");
    using torch::indexing::Slice;
    auto keep = [&](const torch::Tensor& t) {
        return torch::cat({t.narrow(1, 0, n), t.narrow(1, nContext(), 1)}, 1);
    };
    return {keep(x), keep(y), w};
}

PromptBatch PromptBatch::firstPoints(int64_t n) const
{
    TORCH_CHECK(n >= 0 && n <= nContext(), "prefix length out of range");
    return {x.narrow(1, 0, n + 1), y.narrow(1, 0, n + 1), w};
}

PromptBatch PromptBatch::to(const torch::Device& device) const
{
    return {x.to(device), y.to(device), w.to(device)};
}

PromptBatch PromptBatch::slice(int64_t begin, int64_t end) const
{
    return {x.slice(0, begin, end), y.slice(0, begin, end), w.slice(0, begin, end)};
}

uint64_t mixSeed(uint64_t seed, uint64_t stream)
{
    // splitmix64 over the pair, so neighbouring streams are unrelated.
    uint64_t z = seed * 0x9E3779B97F4A7C15ULL + stream + 0x632BE59BD9B4E019ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int64_t activeDims(const TaskConfig& task)
{
    return task.active_dims > 0 && task.active_dims < task.d ? task.active_dims : task.d;
}

torch::Tensor inputCovarianceEigenvalues(const TaskConfig& task, int64_t active)
{
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    if (task.x_condition_number == 1.0 || active <= 1)
        return torch::ones({active}, opts);
    // log λ_j evenly spaced over a factor κ, then scaled to mean 1.
    const torch::Tensor e = torch::pow(task.x_condition_number, -torch::arange(active, opts) / double(active - 1));
    return e * (double(active) / e.sum().item<double>());
}

torch::Tensor sparseSupportMask(int64_t batch, int64_t d, int64_t active, int64_t k, at::Generator& gen)
{
    TORCH_CHECK(k >= 1 && k <= active && active <= d, "sparse support: need 1 <= k <= active <= d");
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    // The ranks of i.i.d. uniforms are a uniformly random permutation; its first k entries are a
    // uniformly random k-subset of the active coordinates.
    const torch::Tensor u = torch::rand({batch, active}, gen, opts);              // [B, active]
    const torch::Tensor support = u.argsort(/*dim=*/int64_t(1)).narrow(1, 0, k);  // [B, k]
    return torch::zeros({batch, d}, opts).scatter_(1, support, 1.0);
}

PromptBatch sampleLinearRegression(const TaskConfig& task, int64_t batch, uint64_t seed, torch::Dtype dtype,
                                   const torch::Device& device)
{
    auto gen = at::detail::createCPUGenerator(seed);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    const int64_t n = task.n_context + 1, active = activeDims(task);
    torch::Tensor x;
    if (task.x_distribution == "uniform")
        x = drawSymmetricUniform(gen, {batch, n, task.d}, task.x_range);  // (rand · 2 − 1) · r, bitwise
    else
        x = torch::randn({batch, n, task.d}, gen, opts);
    if (active < task.d)
        x.narrow(2, active, task.d - active).zero_();  // curriculum: inactive coordinates are exactly 0
    if (task.x_condition_number != 1.0)
        x.narrow(2, 0, active).mul_(inputCovarianceEigenvalues(task, active).sqrt().view({1, 1, active}));
    torch::Tensor w = torch::randn({batch, task.d}, gen, opts) * task.w_scale;
    if (kindOf(task) == TaskKind::SparseLinearRegression) {
        if (task.sparsity < 1 || task.sparsity > active)
            throw Error("task.sparsity: expected an integer in [1, " + std::to_string(active)
                        + "] (the active input coordinates), got " + std::to_string(task.sparsity));
        w = w * sparseSupportMask(batch, task.d, active, task.sparsity, gen);
    }
    torch::Tensor y = torch::einsum("bnd,bd->bn", {x, w});
    if (task.noise_std > 0)
        y = y + task.noise_std * torch::randn({batch, n}, gen, opts);
    PromptBatch b{x.to(dtype), y.to(dtype), w.to(dtype)};
    return device.is_cpu() ? b : b.to(device);
}

torch::Tensor pairTokens(const PromptBatch& batch)
{
    torch::Tensor y = batch.y.clone();
    y.select(1, batch.nContext()).zero_();
    return torch::cat({batch.x, y.unsqueeze(-1)}, -1);
}

torch::Tensor interleavedTokens(const PromptBatch& batch)
{
    const int64_t B = batch.batchSize(), N = batch.nContext(), d = batch.dim();
    torch::Tensor yTok = torch::zeros({B, N, d}, batch.x.options());
    yTok.select(2, 0).copy_(batch.contextY());
    // stack (x_i, y_i) pairs then flatten: [B, N, 2, d] -> [B, 2N, d], then append x_q
    torch::Tensor pairs = torch::stack({batch.contextX(), yTok}, 2).reshape({B, 2 * N, d});
    return torch::cat({pairs, batch.queryX().unsqueeze(1)}, 1);
}

} // namespace icl
