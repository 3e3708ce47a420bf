#include "core/tasks/representation.h"

#include <ATen/CPUGeneratorImpl.h>
#include <map>
#include <mutex>
#include <tuple>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "core/error.h"
#include "core/tasks/uniform_draws.h"

namespace icl {

namespace {

/// Haar-distributed orthogonal-column matrix [rows, cols] (rows ≥ cols): QR of a Gaussian matrix with
/// the columns' signs fixed by the diagonal of R (Mezzadri 2007).
torch::Tensor orthogonalColumns(int64_t rows, int64_t cols, at::Generator& gen)
{
    const torch::Tensor g = torch::randn({rows, cols}, gen, torch::TensorOptions().dtype(torch::kFloat64));
    auto [q, r] = torch::linalg_qr(g, "reduced");
    return q * torch::sign(torch::diagonal(r)).unsqueeze(0);
}

torch::Tensor leakyRelu(const torch::Tensor& t) { return torch::maximum(t, 0.01 * t); }

} // namespace

torch::Tensor Representation::operator()(const torch::Tensor& x) const
{
    torch::Tensor h = x;
    for (const torch::Tensor& B : layers)
        h = leakyRelu(torch::matmul(h, B.to(x.options()).t()));
    return h;
}

Representation drawRepresentation(int64_t d, int64_t D, int64_t L, uint64_t seed)
{
    TORCH_CHECK(d >= 1 && D >= 1 && L >= 1, "invalid representation sizes");
    auto gen = at::detail::createCPUGenerator(seed);
    Representation r;
    // First layer D × d: orthonormal columns when D ≥ d, orthonormal rows otherwise.
    torch::Tensor B1 = D >= d ? orthogonalColumns(D, d, gen) : orthogonalColumns(d, D, gen).t().contiguous();
    r.layers.push_back(B1);
    for (int64_t l = 1; l < L; ++l)
        r.layers.push_back(orthogonalColumns(D, D, gen));
    // The values are float32 numbers, so the copy stored in the experiment file is exact.
    for (auto& B : r.layers)
        B = B.to(torch::kFloat32).to(torch::kFloat64);
    return r;
}

const std::vector<Representation>& taskRepresentations(const TaskConfig& task)
{
    static std::mutex mutex;
    static std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, uint64_t>, std::vector<Representation>> cache;
    const int64_t D = representationDim(task);
    const auto key = std::make_tuple(task.d, D, task.rep_layers, task.n_representations, task.experiment_seed);
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
        std::vector<Representation> reps;
        for (int64_t k = 0; k < task.n_representations; ++k)
            reps.push_back(drawRepresentation(task.d, D, task.rep_layers, mixSeed(task.experiment_seed, 0x9E90 + uint64_t(k))));
        it = cache.emplace(key, std::move(reps)).first;
    }
    return it->second;
}

torch::Tensor representationChoice(const TaskConfig& task, int64_t batch, uint64_t seed)
{
    if (task.n_representations <= 1)
        return torch::zeros({batch}, torch::kLong);
    auto gen = at::detail::createCPUGenerator(mixSeed(seed, 0xC401CE));
    return torch::randint(task.n_representations, {batch}, gen, torch::TensorOptions().dtype(torch::kLong));
}

PromptBatch sampleRepresentation(const TaskConfig& task, int64_t batch, uint64_t seed, torch::Dtype dtype,
                                 const torch::Device& device)
{
    const auto& reps = taskRepresentations(task);
    auto gen = at::detail::createCPUGenerator(seed);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    const int64_t n = task.n_context + 1, D = representationDim(task);
    torch::Tensor x = task.x_distribution == "uniform"
        ? drawSymmetricUniform(gen, {batch, n, task.d}, task.x_range)
        : torch::randn({batch, n, task.d}, gen, opts);
    torch::Tensor w = torch::randn({batch, D}, gen, opts) * task.w_scale;
    torch::Tensor features;
    if (reps.size() == 1) {
        features = reps[0](x);
    } else {
        const torch::Tensor choice = representationChoice(task, batch, seed);
        std::vector<torch::Tensor> all;
        for (const auto& r : reps)
            all.push_back(r(x));
        const torch::Tensor stacked = torch::stack(all, 0);  // [K, B, n, D]
        features = stacked.gather(0, choice.view({1, batch, 1, 1}).expand({1, batch, n, D})).squeeze(0);
    }
    torch::Tensor y = torch::einsum("bnd,bd->bn", {features, w});
    if (task.noise_std > 0)
        y = y + task.noise_std * torch::randn({batch, n}, gen, opts);
    PromptBatch b{x.to(dtype), y.to(dtype), w.to(dtype)};
    return device.is_cpu() ? b : b.to(device);
}

} // namespace icl
