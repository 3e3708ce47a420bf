#pragma once
// Model factory: builds the model a config asks for. Core-internal (LibTorch).

#include <functional>
#include <memory>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/tasks/linear_regression.h"

namespace icl {

/// A model of any kind behind one interface: its module (parameters, train()/eval(), to(device)),
/// its query prediction ŷ_q [B] for a batch of prompts, and — for models with a learned input
/// representation — φ(x) [..., F] of inputs x [..., d] (empty function otherwise).
struct ModelHandle {
    std::shared_ptr<torch::nn::Module> module;
    std::function<torch::Tensor(const PromptBatch&)> predict;
    std::function<torch::Tensor(const torch::Tensor&)> features;
    /// Models that predict at every prefix (gpt2: ŷ for y_1 … y_N, y_q at the x-tokens) give
    /// [B, N+1] here; the trainer then averages the loss over all positions (Garg et al.). Empty otherwise.
    std::function<torch::Tensor(const PromptBatch&)> predict_all;
};

struct LsaOptions;
/// The LSA architecture a config asks for.
LsaOptions lsaOptions(const ExperimentConfig& config);

/// Builds and initialises (seeded by `seed`) the model of `config`, on the CPU in float32.
/// Throws icl::Error when the model does not fit the task (e.g. lsa with the interleaved layout), and "the config:
/// refused: its model (…) would need …" when its parameters exceed the default memory budget (checkModelMemory).
ModelHandle makeModel(const ExperimentConfig& config, uint64_t seed);

} // namespace icl
