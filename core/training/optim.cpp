#include "core/training/optim.h"

#include <cmath>
#include <sstream>
#include <type_traits>

#include "core/training/fused_adam.h"

namespace icl {

namespace {

template <class Key>  // a template, so that only the branch of this LibTorch's key type is compiled
Key stateKeyOf(const torch::Tensor& p)
{
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream o;
        o << p.unsafeGetTensorImpl();
        return o.str();
    } else {
        return p.unsafeGetTensorImpl();
    }
}

} // namespace

OptimizerStateKey optimizerStateKey(const torch::Tensor& p)
{
    return stateKeyOf<OptimizerStateKey>(p);
}

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const TrainingConfig& t, std::vector<torch::Tensor> params)
{
    if (t.optimizer == "adamw")
        return std::make_unique<FusedAdamW>(
            params, torch::optim::AdamWOptions(t.lr).betas({t.beta1, t.beta2}).weight_decay(t.weight_decay));
    if (t.optimizer == "adam")
        return std::make_unique<FusedAdam>(
            params, torch::optim::AdamOptions(t.lr).betas({t.beta1, t.beta2}).weight_decay(t.weight_decay));
    return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(t.lr).weight_decay(t.weight_decay));
}


double learningRate(const TrainingConfig& t, int64_t step)
{
    const double warm = t.warmup_steps > 0 ? std::min(1.0, double(step + 1) / double(t.warmup_steps)) : 1.0;
    if (t.schedule == "constant")
        return t.lr;
    if (t.schedule == "warmup")
        return t.lr * warm;
    if (t.schedule == "inverse_sqrt") {
        // Chan et al.: min(lr·t/warmup, lr·√(warmup/t)) at t = step + 1.
        const double ts = double(step + 1), w = double(t.warmup_steps);
        return t.lr * std::min(ts / w, std::sqrt(w / ts));
    }
    // warmup_cosine: linear warm-up, then cosine decay to 0 at the last step
    if (step < t.warmup_steps)
        return t.lr * warm;
    const double span = std::max<int64_t>(1, t.steps - t.warmup_steps);
    const double progress = std::min(1.0, double(step - t.warmup_steps) / span);
    return t.lr * 0.5 * (1.0 + std::cos(M_PI * progress));
}

void setLearningRate(torch::optim::Optimizer& opt, double lr)
{
    for (auto& group : opt.param_groups())
        group.options().set_lr(lr);
}

} // namespace icl
