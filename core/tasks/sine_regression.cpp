#include "core/tasks/sine_regression.h"

#include <ATen/CPUGeneratorImpl.h>

#include "core/error.h"
#include "core/tasks/uniform_draws.h"

namespace icl {

PromptBatch sampleSineRegression(const TaskConfig& task, int64_t batch, uint64_t seed, torch::Dtype dtype,
                                 const torch::Device& device)
{
    if (task.d != 1)
        throw Error("task.d: sine_regression has scalar inputs, expected 1, got " + std::to_string(task.d));
    auto gen = at::detail::createCPUGenerator(seed);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    const int64_t n = task.n_context + 1;
    torch::Tensor x;
    if (task.x_distribution == "uniform")
        x = drawSymmetricUniform(gen, {batch, n, 1}, task.x_range);
    else
        x = torch::randn({batch, n, 1}, gen, opts);
    torch::Tensor a = task.amplitude_min + (task.amplitude_max - task.amplitude_min) * torch::rand({batch}, gen, opts);
    torch::Tensor phi = task.phase_min + (task.phase_max - task.phase_min) * torch::rand({batch}, gen, opts);
    torch::Tensor y = a.unsqueeze(1) * torch::sin(x.squeeze(-1) + phi.unsqueeze(1));
    if (task.noise_std > 0)
        y = y + task.noise_std * torch::randn({batch, n}, gen, opts);
    PromptBatch b{x.to(dtype), y.to(dtype), torch::stack({a, phi}, 1).to(dtype)};
    return device.is_cpu() ? b : b.to(device);
}

} // namespace icl
