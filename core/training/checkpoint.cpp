#include "core/training/checkpoint.h"

#include <sstream>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/training/optim.h"

namespace icl {

namespace {

NamedArray toArray(const std::string& name, const torch::Tensor& t)
{
    torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    NamedArray a;
    a.name = name;
    a.shape.assign(c.sizes().begin(), c.sizes().end());
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return a;
}

std::string shapeString(c10::IntArrayRef s)
{
    std::ostringstream o;
    o << s;
    return o.str();
}


} // namespace

torch::Tensor arrayToTensor(const NamedArray& a)
{
    return torch::from_blob(const_cast<float*>(a.data.data()), a.shape, torch::kFloat32).clone();
}

std::vector<NamedArray> paramsToArrays(const torch::nn::Module& module)
{
    std::vector<NamedArray> out;
    for (const auto& item : module.named_parameters())
        out.push_back(toArray(item.key(), item.value()));
    // Buffers (batch-norm running statistics, fixed position codes) are part of the model's state too.
    for (const auto& item : module.named_buffers())
        out.push_back(toArray(item.key(), item.value()));
    return out;
}

void loadParams(torch::nn::Module& module, const std::vector<NamedArray>& params, const std::string& where)
{
    torch::NoGradGuard guard;
    std::map<std::string, const NamedArray*> byName;
    for (const auto& a : params)
        byName[a.name] = &a;
    auto named = module.named_parameters();
    for (auto& item : named) {
        auto it = byName.find(item.key());
        if (it == byName.end())
            throw Error(where + ": parameter " + item.key() + " is missing");
        torch::Tensor t = arrayToTensor(*it->second);
        if (t.sizes() != item.value().sizes())
            throw Error(where + ": parameter " + item.key() + " has shape " + shapeString(t.sizes())
                        + ", the model expects " + shapeString(item.value().sizes()));
        item.value().copy_(t);
        byName.erase(it);
    }
    for (auto& item : module.named_buffers()) {
        auto it = byName.find(item.key());
        if (it == byName.end())
            throw Error(where + ": buffer " + item.key() + " is missing");
        torch::Tensor t = arrayToTensor(*it->second);
        if (t.sizes() != item.value().sizes())
            throw Error(where + ": buffer " + item.key() + " has shape " + shapeString(t.sizes())
                        + ", the model expects " + shapeString(item.value().sizes()));
        item.value().copy_(t.to(item.value().dtype()));
        byName.erase(it);
    }
    if (!byName.empty())
        throw Error(where + ": unexpected parameter " + byName.begin()->first + " (file made by another model?)");
}

void saveOptimizerState(torch::optim::Optimizer& optimizer, const torch::nn::Module& module, CheckpointData& out)
{
    auto& state = optimizer.state();
    for (const auto& item : module.named_parameters()) {
        auto it = state.find(optimizerStateKey(item.value()));
        if (it == state.end())
            continue;
        const std::string& name = item.key();
        if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(it->second.get())) {
            out.optimizer.push_back(toArray(name + "/exp_avg", s->exp_avg()));
            out.optimizer.push_back(toArray(name + "/exp_avg_sq", s->exp_avg_sq()));
            out.optimizer_scalars[name + "/step"] = static_cast<double>(s->step());
        } else if (auto* s = dynamic_cast<torch::optim::AdamParamState*>(it->second.get())) {
            out.optimizer.push_back(toArray(name + "/exp_avg", s->exp_avg()));
            out.optimizer.push_back(toArray(name + "/exp_avg_sq", s->exp_avg_sq()));
            out.optimizer_scalars[name + "/step"] = static_cast<double>(s->step());
        } else if (auto* s = dynamic_cast<torch::optim::SGDParamState*>(it->second.get())) {
            out.optimizer.push_back(toArray(name + "/momentum_buffer", s->momentum_buffer()));
        }
    }
}

void loadOptimizerState(torch::optim::Optimizer& optimizer, const torch::nn::Module& module,
                        const CheckpointData& checkpoint, const std::string& where)
{
    std::map<std::string, const NamedArray*> arrays;
    for (const auto& a : checkpoint.optimizer)
        arrays[a.name] = &a;
    auto& state = optimizer.state();
    const bool isAdamW = dynamic_cast<torch::optim::AdamW*>(&optimizer) != nullptr;
    const bool isAdam = dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr;
    for (const auto& item : module.named_parameters()) {
        const std::string& name = item.key();
        const torch::Tensor& p = item.value();
        auto tensorOf = [&](const std::string& key) {
            auto it = arrays.find(name + "/" + key);
            if (it == arrays.end())
                throw Error(where + ": optimizer state " + name + "/" + key + " is missing");
            torch::Tensor t = arrayToTensor(*it->second).to(p.device(), p.scalar_type());
            if (t.sizes() != p.sizes())
                throw Error(where + ": optimizer state " + name + "/" + key + " has the wrong shape");
            return t;
        };
        if (isAdam || isAdamW) {
            if (!arrays.count(name + "/exp_avg"))
                continue;
            auto stepIt = checkpoint.optimizer_scalars.find(name + "/step");
            const int64_t step = stepIt == checkpoint.optimizer_scalars.end() ? 0 : int64_t(stepIt->second);
            if (isAdamW) {
                auto s = std::make_unique<torch::optim::AdamWParamState>();
                s->step(step);
                s->exp_avg(tensorOf("exp_avg"));
                s->exp_avg_sq(tensorOf("exp_avg_sq"));
                state[optimizerStateKey(p)] = std::move(s);
            } else {
                auto s = std::make_unique<torch::optim::AdamParamState>();
                s->step(step);
                s->exp_avg(tensorOf("exp_avg"));
                s->exp_avg_sq(tensorOf("exp_avg_sq"));
                state[optimizerStateKey(p)] = std::move(s);
            }
        } else if (arrays.count(name + "/momentum_buffer")) {
            auto s = std::make_unique<torch::optim::SGDParamState>();
            s->momentum_buffer(tensorOf("momentum_buffer"));
            state[optimizerStateKey(p)] = std::move(s);
        }
    }
}

} // namespace icl
