// Throughput of the training-step building blocks, each reported next to a baseline measured in the
// same run: one LSA training step (forward + backward) against one GD-1 baseline evaluation on the
// same batch, and prompt sampling against a plain randn of the same size. Compare the ratios, not
// the absolute times, across machines.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <filesystem>
#include <torch/linalg.h>  // not part of <torch/torch.h> in LibTorch 2.x

#include "app/runtime_env.h"
#include "core/analysis/icl_curve.h"
#include "core/analysis/inspector.h"
#include "core/analysis/probe.h"
#include "core/analysis/probe_analysis.h"
#include "core/io/config.h"
#include "core/baselines/baselines.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/models/lsa_fused.h"
#include "core/tasks/linear_regression.h"
#include "core/tasks/uniform_draws.h"
#include "core/runtime/blas.h"
#include "core/runtime/device.h"
#include "core/training/fused_adam.h"
#include "core/training/sharded_step.h"
#include "core/training/trainer.h"
#include "tests/support/tiny_models.h"

namespace {

icl::TaskConfig task()
{
    icl::TaskConfig t;
    t.d = 10;
    t.n_context = 10;
    return t;
}

void BM_SampleLinearRegression(benchmark::State& state)
{
    const auto t = task();
    uint64_t seed = 0;
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::sampleLinearRegression(t, state.range(0), ++seed).x);
}
BENCHMARK(BM_SampleLinearRegression)->Arg(2048);

void BM_BaselineRandn(benchmark::State& state)
{
    for (auto _ : state)
        benchmark::DoNotOptimize(torch::randn({state.range(0), 11, 10}));
}
BENCHMARK(BM_BaselineRandn)->Arg(2048);

// The x draw of a prompt batch (batch × 11 × 10, U(−1, 1)): icl::drawSymmetricUniform against the LibTorch
// expression it reproduces bit for bit, (torch::rand · 2 − 1) · 1, alternately on generators of the same seed.
// Counters: ratio (LibTorch time / drawSymmetricUniform time).
void BM_UniformDrawsVsTorchRand(benchmark::State& state)
{
    using Clock = std::chrono::steady_clock;
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    const int64_t B = state.range(0);
    at::Generator ours = at::detail::createCPUGenerator(1), theirs = at::detail::createCPUGenerator(1);
    double oursS = 0.0, theirsS = 0.0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        benchmark::DoNotOptimize(icl::drawSymmetricUniform(ours, {B, 11, 10}, 1.0));
        const auto t1 = Clock::now();
        benchmark::DoNotOptimize((torch::rand({B, 11, 10}, theirs, opts) * 2.0 - 1.0) * 1.0);
        const auto t2 = Clock::now();
        const double f = std::chrono::duration<double>(t1 - t0).count();
        oursS += f;
        theirsS += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(f);
    }
    state.counters["ratio"] = theirsS / oursS;
}
BENCHMARK(BM_UniformDrawsVsTorchRand)->Arg(2048)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_LsaTrainStep(benchmark::State& state)
{
    icl::Lsa model(11, state.range(1), 1, false);
    model->initVarianceScaling(0.002, 0);
    const auto batch = icl::sampleLinearRegression(task(), state.range(0), 1);
    for (auto _ : state) {
        model->zero_grad();
        auto loss = icl::halfMse(model->predict(batch), batch.queryY());
        loss.backward();
        benchmark::DoNotOptimize(loss.item<float>());
    }
}
BENCHMARK(BM_LsaTrainStep)->Args({2048, 1})->Args({2048, 4});

// The LSA training loop of von Oswald et al. as train() runs it, per step: draw training batch s
// (d = 10, N = 10, batch 2,048), loss and gradients, gradient-norm clipping, Adam step, loss to the host.
// Each iteration runs one step of the workbench's fused path (core/models/lsa_fused.h, train()'s default)
// and one step of the in-process LibTorch autograd reference (LsaImpl::forward, halfMse, backward) on a
// twin model, alternately, so both see the same machine state. Args: layers K, intra-op threads (0 = all
// cores). Counters: steps_per_s (fused), autograd_steps_per_s, ratio (fused / autograd).
void BM_LsaTrainLoop(benchmark::State& state)
{
    using Clock = std::chrono::steady_clock;
    icl::configureThreads(int(state.range(1)));
    const int64_t K = state.range(0), batchSize = 2048;
    const icl::TaskConfig t = task();
    icl::Lsa fusedModel(11, K, 1, false), refModel(11, K, 1, false);
    fusedModel->initVarianceScaling(1.0 / double(K), 0);
    refModel->initVarianceScaling(1.0 / double(K), 0);
    icl::FusedLsa fused(*fusedModel);
    icl::FusedAdam fusedOpt(fusedModel->parameters(), torch::optim::AdamOptions(1e-3));  // train()'s Adam
    torch::optim::Adam refOpt(refModel->parameters(), torch::optim::AdamOptions(1e-3));
    const auto fusedParams = fusedModel->parameters(), refParams = refModel->parameters();
    const double noClip = std::numeric_limits<double>::infinity();  // train() always measures the norm
    uint64_t step = 0;
    double fusedS = 0.0, refS = 0.0;
    for (auto _ : state) {
        ++step;
        const auto t0 = Clock::now();
        {
            const auto batch = icl::sampleLinearRegression(t, batchSize, step);
            const torch::Tensor loss = fused.lossAndGrad(batch);
            torch::nn::utils::clip_grad_norm_(fusedParams, noClip);
            fusedOpt.step();
            benchmark::DoNotOptimize(loss.item<double>());
        }
        const auto t1 = Clock::now();
        {
            const auto batch = icl::sampleLinearRegression(t, batchSize, step);
            refOpt.zero_grad();
            const torch::Tensor loss = icl::halfMse(refModel->predict(batch), batch.queryY());
            loss.backward();
            torch::nn::utils::clip_grad_norm_(refParams, noClip);
            refOpt.step();
            benchmark::DoNotOptimize(loss.item<double>());
        }
        const auto t2 = Clock::now();
        const double f = std::chrono::duration<double>(t1 - t0).count();
        fusedS += f;
        refS += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(f);
    }
    const double n = double(state.iterations());
    state.counters["steps_per_s"] = n / fusedS;
    state.counters["autograd_steps_per_s"] = n / refS;
    state.counters["ratio"] = refS / fusedS;
}
BENCHMARK(BM_LsaTrainLoop)
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({4, 0})
    ->Args({4, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinWarmUpTime(0.5);

void BM_BaselineGdOneStep(benchmark::State& state)
{
    const auto batch = icl::sampleLinearRegression(task(), state.range(0), 1);
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::predictGd(batch, 1, 1.5));
}
BENCHMARK(BM_BaselineGdOneStep)->Arg(2048);

// GPT-2 training step of Garg et al. (docs/science.md §0): batch B (64 unless given), d = 20, N = 40 (81 tokens),
// loss over all positions, Adam step included, on `device`. Counters: steps_per_s, gflops (≈ 6·params·tokens +
// attention) and, where `reference` > 0, vs_pytorch (steps_per_s / reference).
void gpt2TrainStep(benchmark::State& state, const torch::Device& device, int64_t batchSize, double reference)
{
    const icl::Gpt2Options o = icl::test::gpt2Options(20, state.range(0), state.range(1), state.range(2), 81);
    icl::Gpt2 model(o, 0);
    model->to(device);
    icl::TaskConfig t;
    t.d = 20;
    t.n_context = 40;
    t.x_distribution = "normal";
    const auto batch = icl::sampleLinearRegression(t, batchSize, 1, torch::kFloat32, device);
    icl::FusedAdam opt(model->parameters(), torch::optim::AdamOptions(1e-4));  // train()'s Adam
    for (auto _ : state) {
        opt.zero_grad();
        auto loss = icl::halfMse(model->predictAll(batch).flatten(), batch.y.flatten());
        loss.backward();
        opt.step();
        benchmark::DoNotOptimize(loss.item<float>());  // copies to the host: waits for the device
    }
    int64_t params = 0;
    for (const auto& p : model->parameters())
        params += p.numel();
    const double B = double(batchSize), tokens = B * 81.0, D = double(o.d_model), L = double(o.n_layers);
    const double flops = 6.0 * double(params) * tokens + 3.0 * 2.0 * 2.0 * L * B * 81.0 * 81.0 * D;
    state.counters["steps_per_s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["gflops"] = benchmark::Counter(flops * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    if (reference > 0)
        state.counters["vs_pytorch"]
            = benchmark::Counter(double(state.iterations()) / reference, benchmark::Counter::kIsRate);
}

// On the CPU. Args: layers, heads, d_model (tiny 3/2/64, standard 12/8/256).
// Reference (issue 4, PyTorch eager on this 2-core machine): tiny ≈ 10.7 steps/s, standard ≈ 0.27.
void BM_Gpt2TrainStep(benchmark::State& state)
{
    icl::configureThreads(0);  // all cores, as training with the default --threads does
    gpt2TrainStep(state, torch::kCPU, 64, state.range(0) == 3 ? 10.7 : state.range(0) == 12 ? 0.27 : 0.0);
}
// Arguments: layers, heads, d_model. Each size warms up for at least a second first (the first steps
// also pay for growing the heap).
BENCHMARK(BM_Gpt2TrainStep)
    ->Args({3, 2, 64})
    ->Args({12, 8, 256})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinWarmUpTime(1.0);

// The in-process LibTorch autograd reference of the GPT-2 step: the model of
// tests/benchmarks/reference/pytorch_gpt2_step.py (PyTorch eager) written op for op with torch::nn modules —
// fused QKV Linear, [B, H, T, dh] attention with the causal mask passed in, an MLP with GPT-2's tanh-form
// GELU (as the workbench's model and Garg et al.'s Hugging Face GPT-2: gelu_new), Adam.
struct RefBlockImpl : torch::nn::Module {
    RefBlockImpl(int64_t D, int64_t heads)
        : H(heads)
        , ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D}))))
        , qkv(register_module("qkv", torch::nn::Linear(D, 3 * D)))
        , o(register_module("o", torch::nn::Linear(D, D)))
        , ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D}))))
        , w1(register_module("w1", torch::nn::Linear(D, 4 * D)))
        , w2(register_module("w2", torch::nn::Linear(4 * D, D)))
    {
    }
    torch::Tensor forward(torch::Tensor x, const torch::Tensor& mask)
    {
        const int64_t B = x.size(0), T = x.size(1), D = x.size(2);
        const auto parts = qkv->forward(ln1->forward(x)).view({B, T, 3, H, D / H}).permute({2, 0, 3, 1, 4});
        torch::Tensor a = torch::matmul(parts[0], parts[1].transpose(-1, -2)) / std::sqrt(double(D / H));
        a = a.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity()).softmax(-1);
        x = x + o->forward(torch::matmul(a, parts[2]).transpose(1, 2).reshape({B, T, D}));
        return x + w2->forward(torch::gelu(w1->forward(ln2->forward(x)), "tanh"));
    }
    int64_t H;
    torch::nn::LayerNorm ln1;
    torch::nn::Linear qkv, o;
    torch::nn::LayerNorm ln2;
    torch::nn::Linear w1, w2;
};
TORCH_MODULE(RefBlock);

struct RefGpt2Impl : torch::nn::Module {
    RefGpt2Impl(int64_t L, int64_t H, int64_t D, int64_t d, int64_t T)
        : read_in(register_module("read_in", torch::nn::Linear(d, D)))
        , pos(register_parameter("pos", torch::randn({T, D}) * 0.02))
        , ln(register_module("ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({D}))))
        , read_out(register_module("read_out", torch::nn::Linear(D, 1)))
    {
        for (int64_t l = 0; l < L; ++l)
            blocks.push_back(register_module("block" + std::to_string(l), RefBlock(D, H)));
    }
    torch::Tensor forward(const torch::Tensor& tok, const torch::Tensor& mask)
    {
        torch::Tensor x = read_in->forward(tok) + pos;
        for (auto& b : blocks)
            x = b->forward(x, mask);
        return read_out->forward(ln->forward(x)).squeeze(-1);
    }
    torch::nn::Linear read_in;
    torch::Tensor pos;
    std::vector<RefBlock> blocks;
    torch::nn::LayerNorm ln;
    torch::nn::Linear read_out;
};
TORCH_MODULE(RefGpt2);

// One Adam step over the parameters of a GPT-2 12 / 8 / 256 (9.5 M float32 values, the model's own shapes): the
// workbench's one-pass step (icl::FusedAdam, what train() uses) and torch::optim::Adam on a copy, alternately,
// with the same gradients; all cores. Counters: ratio (torch::optim::Adam time / FusedAdam time), fused_ms, torch_ms.
void BM_AdamStepVsTorchAdam(benchmark::State& state)
{
    using Clock = std::chrono::steady_clock;
    icl::configureThreads(0);
    const icl::Gpt2Options o = icl::test::gpt2Options(20, 12, 8, 256, 81);
    icl::Gpt2 model(o, 0), twin(o, 0);
    const auto ours = model->parameters(), theirs = twin->parameters();
    for (size_t i = 0; i < ours.size(); ++i) {
        const torch::Tensor g = torch::randn(ours[i].sizes()) * 1e-3;
        ours[i].mutable_grad() = g.clone();
        theirs[i].mutable_grad() = g.clone();
    }
    icl::FusedAdam fused(ours, torch::optim::AdamOptions(1e-4));
    torch::optim::Adam reference(theirs, torch::optim::AdamOptions(1e-4));
    double fusedS = 0.0, refS = 0.0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        fused.step();
        const auto t1 = Clock::now();
        reference.step();
        const auto t2 = Clock::now();
        fusedS += std::chrono::duration<double>(t1 - t0).count();
        refS += std::chrono::duration<double>(t2 - t1).count();
    }
    const double n = double(state.iterations());
    state.counters["fused_ms"] = fusedS / n * 1e3;
    state.counters["torch_ms"] = refS / n * 1e3;
    state.counters["ratio"] = refS / fusedS;
}
BENCHMARK(BM_AdamStepVsTorchAdam)->Unit(benchmark::kMillisecond)->MinTime(2.0);

/// The machine's SGEMM peak in this process: GFLOP/s of a float32 2048 × 2048 torch::mm (best of 8, after
/// 2 warm-up products) with the current intra-op threads.
double measuredSgemmPeak()
{
    const torch::Tensor a = torch::randn({2048, 2048}), b = torch::randn({2048, 2048});
    double best = 1e30;
    for (int i = 0; i < 10; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(torch::mm(a, b).data_ptr());
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (i >= 2)
            best = std::min(best, s);
    }
    return 2.0 * 2048.0 * 2048.0 * 2048.0 / best / 1e9;
}

// The GPT-2 training step (as gpt2TrainStep: d = 20, N = 40, 81 tokens, batch 64, loss over all positions,
// Adam) of the workbench's model and of the in-process eager reference above, alternately each iteration.
// Args: layers, heads, d_model, training.shards. Counters: steps_per_s (workbench), eager_steps_per_s, ratio, gflops
// (≈ 6·params·tokens + attention, of the workbench step), peak_gflops (a 2048² SGEMM measured in the same
// run) and peak_share = gflops / peak_gflops.
void BM_Gpt2TrainStepVsEager(benchmark::State& state)
{
    using Clock = std::chrono::steady_clock;
    icl::configureThreads(0);
    const double peak = measuredSgemmPeak();
    const icl::Gpt2Options o = icl::test::gpt2Options(20, state.range(0), state.range(1), state.range(2), 81);
    icl::Gpt2 model(o, 0);
    torch::manual_seed(0);
    RefGpt2 ref(o.n_layers, o.n_heads, o.d_model, 20, 81);
    icl::TaskConfig t;
    t.d = 20;
    t.n_context = 40;
    t.x_distribution = "normal";
    const int64_t batchSize = 64;
    const auto batch = icl::sampleLinearRegression(t, batchSize, 1);
    const torch::Tensor tokens = icl::interleavedTokens(batch);
    const torch::Tensor mask = torch::ones({81, 81}, torch::kBool).tril();
    icl::FusedAdam opt(model->parameters(), torch::optim::AdamOptions(1e-4));  // train()'s Adam
    torch::optim::Adam refOpt(ref->parameters(), torch::optim::AdamOptions(1e-4));
    // training.shards = state.range(3): the trainer's sharded step (core/training/sharded_step.h) on as
    // many worker threads as intra-op threads; 1 = loss.backward() on the whole batch, as the trainer does.
    const int64_t shards = state.range(3);
    std::unique_ptr<icl::ShardedGradient> sharded;
    if (shards > 1)
        sharded = std::make_unique<icl::ShardedGradient>(model->parameters(), shards, icl::defaultThreads());
    const double count = double(batch.y.numel());
    double ourS = 0.0, refS = 0.0;
    for (auto _ : state) {
        const auto t0 = Clock::now();
        if (sharded) {
            const torch::Tensor loss = sharded->lossAndGrad([&](int64_t s) {
                const auto [begin, end] = icl::shardBounds(batchSize, shards, s);
                const icl::PromptBatch part = batch.slice(begin, end);
                return 0.5 * (model->predictAll(part).flatten() - part.y.flatten()).square().sum() / count;
            });
            opt.step();
            benchmark::DoNotOptimize(loss.item<float>());
        } else {
            opt.zero_grad();
            auto loss = icl::halfMse(model->predictAll(batch).flatten(), batch.y.flatten());
            loss.backward();
            opt.step();
            benchmark::DoNotOptimize(loss.item<float>());
        }
        const auto t1 = Clock::now();
        {
            refOpt.zero_grad();
            const torch::Tensor pred = ref->forward(tokens, mask).slice(1, 0, 81, 2);
            auto loss = icl::halfMse(pred.flatten(), batch.y.flatten());
            loss.backward();
            refOpt.step();
            benchmark::DoNotOptimize(loss.item<float>());
        }
        const auto t2 = Clock::now();
        const double s = std::chrono::duration<double>(t1 - t0).count();
        ourS += s;
        refS += std::chrono::duration<double>(t2 - t1).count();
        state.SetIterationTime(s);
    }
    int64_t params = 0;
    for (const auto& p : model->parameters())
        params += p.numel();
    const double B = double(batchSize), D = double(o.d_model), L = double(o.n_layers);
    const double flops = 6.0 * double(params) * B * 81.0 + 3.0 * 2.0 * 2.0 * L * B * 81.0 * 81.0 * D;
    const double n = double(state.iterations());
    state.counters["steps_per_s"] = n / ourS;
    state.counters["eager_steps_per_s"] = n / refS;
    state.counters["ratio"] = refS / ourS;
    state.counters["gflops"] = flops * n / ourS / 1e9;
    state.counters["eager_gflops"] = flops * n / refS / 1e9;
    state.counters["peak_gflops"] = peak;
    state.counters["peak_share"] = flops * n / ourS / 1e9 / peak;
}
BENCHMARK(BM_Gpt2TrainStepVsEager)
    ->Args({3, 2, 64, 1})
    ->Args({3, 2, 64, 2})
    ->Args({12, 8, 256, 1})
    ->Args({12, 8, 256, 2})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinWarmUpTime(3.0)
    ->MinTime(6.0);  // 12 / 8 / 256: 3–4 steps of each side after the warm-up, not one

// On CUDA device 0 (an error instead of a time where there is none). Args: layers, heads, d_model, batch.
// Its same-run baseline is BM_BaselineGemmCuda; scripts/check-cuda.sh also times PyTorch eager on the same step.
void BM_Gpt2TrainStepCuda(benchmark::State& state)
{
    if (!torch::cuda::is_available()) {
        state.SkipWithError("no CUDA device");
        return;
    }
    gpt2TrainStep(state, torch::Device(torch::kCUDA, 0), state.range(3), 0.0);
}
BENCHMARK(BM_Gpt2TrainStepCuda)
    ->Args({3, 2, 64, 64})
    ->Args({12, 8, 256, 64})
    ->Args({12, 8, 256, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinWarmUpTime(1.0);

// Same-run baseline on the GPU: the float32 GEMM [B·81, 256] × [256, 1024] of the MLP's W_in at batch B.
void BM_BaselineGemmCuda(benchmark::State& state)
{
    if (!torch::cuda::is_available()) {
        state.SkipWithError("no CUDA device");
        return;
    }
    const torch::Device cuda(torch::kCUDA, 0);
    const torch::Tensor a = torch::randn({state.range(0) * 81, 256}, torch::TensorOptions().device(cuda));
    const torch::Tensor b = torch::randn({256, 1024}, torch::TensorOptions().device(cuda));
    for (auto _ : state) {
        const torch::Tensor c = torch::matmul(a, b);
        torch::cuda::synchronize();
        benchmark::DoNotOptimize(c.data_ptr());
    }
    state.counters["gflops"] = benchmark::Counter(2.0 * double(state.range(0)) * 81 * 256 * 1024
                                                      * double(state.iterations()) / 1e9,
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BaselineGemmCuda)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

// Same-run baseline for the GPT-2 step: a float32 GEMM [5184, 256] × [256, 1024] (the MLP's W_in on a
// batch of 64 × 81 tokens at d_model = 256); its gflops counter is the machine's practical peak.
void BM_BaselineGemm(benchmark::State& state)
{
    icl::configureThreads(0);
    const torch::Tensor a = torch::randn({64 * 81, 256}), b = torch::randn({256, 1024});
    for (auto _ : state)
        benchmark::DoNotOptimize(torch::matmul(a, b));
    state.counters["gflops"] = benchmark::Counter(2.0 * 64 * 81 * 256 * 1024 * double(state.iterations()) / 1e9,
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BaselineGemm)->Unit(benchmark::kMillisecond)->UseRealTime();

// Probe fitting over all layers (Guo et al.): 13 residual streams (embedding + 12 blocks) of width 256
// at the query of 4,096 prompts, one target, λ by 5-fold cross-validation over the default grid; fit
// and test sets of 4,096 rows each.
void BM_ProbeAllLayers(benchmark::State& state)
{
    std::vector<torch::Tensor> fit, test;
    for (int l = 0; l < 13; ++l) {
        fit.push_back(torch::randn({4096, 256}, torch::kFloat64));
        test.push_back(torch::randn({4096, 256}, torch::kFloat64));
    }
    const torch::Tensor w = torch::randn({256, 1}, torch::kFloat64);
    const torch::Tensor yFit = torch::matmul(fit[6], w) + torch::randn({4096, 1}, torch::kFloat64);
    const torch::Tensor yTest = torch::matmul(test[6], w) + torch::randn({4096, 1}, torch::kFloat64);
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::probeLayers(fit, yFit, test, yTest));
}
BENCHMARK(BM_ProbeAllLayers)->Unit(benchmark::kMillisecond)->UseRealTime();

// Same-run baseline for the probes: one ridge solve (XᵀX + λI)⁻¹Xᵀy of the same size.
void BM_BaselineRidgeSolve(benchmark::State& state)
{
    const torch::Tensor X = torch::randn({4096, 256}, torch::kFloat64), y = torch::randn({4096, 1}, torch::kFloat64);
    for (auto _ : state) {
        const torch::Tensor g = torch::matmul(X.t(), X) + torch::eye(256, torch::kFloat64);
        benchmark::DoNotOptimize(torch::linalg_solve(g, torch::matmul(X.t(), y), true));
    }
}
BENCHMARK(BM_BaselineRidgeSolve)->Unit(benchmark::kMillisecond)->UseRealTime();

/// An experiment file for the inspector benchmarks, trained for 2 steps. Args of the benchmark: model
/// (0 = gpt2, 1 = lsa), layers, heads, width (gpt2 d_model), intra-op threads (0 = all cores);
/// N = 40 (81 tokens), d = 20 (gpt2) or d = 10 (LSA).
std::string inspectorRun(const benchmark::State& state)
{
    icl::configureThreads(int(state.range(4)));
    const bool lsa = state.range(0) == 1;
    const std::string path = std::filesystem::temp_directory_path().string() + "/icl_bench_inspect_"
        + std::to_string(state.range(0)) + "_" + std::to_string(state.range(1)) + "_" + std::to_string(state.range(3))
        + ".h5";
    std::filesystem::remove(path);
    icl::ConfigRequest req;
    req.preset = lsa ? "vonoswald-lsa-1layer" : "garg-linear-regression";
    req.sets = {"task.n_context=40", "training.batch_size=16", "training.eval_every=2", "training.checkpoint_every=2",
                "eval.n_prompts=64", "model.n_layers=" + std::to_string(state.range(1)),
                "model.n_heads=" + std::to_string(state.range(2))};
    if (lsa) {
        req.sets.push_back("eval.alignment=[]");
    } else {
        req.sets.push_back("model.d_model=" + std::to_string(state.range(3)));
        req.sets.push_back("task.d=20");
        req.sets.push_back("training.curriculum.enabled=false");
        req.sets.push_back("eval.baselines=[\"zero\",\"least_squares\",\"ridge\",\"gd\",\"knn\",\"averaging\"]");
    }
    req.steps = 2;
    icl::TrainOptions to;
    to.out_path = path;
    icl::train(icl::resolveConfig(req), to, [](const icl::TrainProgress&) { return true; });
    return path;
}

/// The inspector benchmarks' GPT-2 runs (inspectorRun's Args): 4 layers × 4 heads × 64 and Garg et al.'s standard
/// 12 × 8 × 256, all cores; times in ms of real time.
void inspectorGpt2Runs(benchmark::internal::Benchmark* b)
{
    b->Args({0, 4, 4, 64, 0})->Args({0, 12, 8, 256, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
}

/// inspectorGpt2Runs and the one-layer LSA.
void inspectorRuns(benchmark::internal::Benchmark* b)
{
    inspectorGpt2Runs(b);
    b->Args({1, 1, 1, 0, 0});
}

/// Median and fastest of per-call times: on a shared 2-core machine the mean is dominated by the
/// moments another process holds a core.
void reportTimes(benchmark::State& state, std::vector<double> ms)
{
    std::sort(ms.begin(), ms.end());
    state.counters["ms_median"] = ms[ms.size() / 2];
    state.counters["ms_min"] = ms.front();
}

// Prompt edit in the Attention page (issue 5): one Inspector::inspect after changing one in-context
// label: the model's forward pass with every attention pattern, the head summaries and every
// baseline of the run on the prompt (Inspection::elapsed_ms). Targets: ≤ 16 ms up to 4 × 64,
// ≤ 33 ms at 12 × 256 (82 tokens). Counters ms_median, ms_min.
void BM_InspectPromptEdit(benchmark::State& state)
{
    const std::string path = inspectorRun(state);
    icl::Inspector insp(path);
    icl::Prompt p = insp.samplePrompt(1);
    insp.inspect(p);  // warm-up
    std::vector<double> ms;
    for (auto _ : state) {
        p.y[3] += 0.01;
        const icl::Inspection v = insp.inspect(p);
        ms.push_back(v.elapsed_ms);
        benchmark::DoNotOptimize(v.predictions.front().prediction);
    }
    reportTimes(state, ms);
    std::filesystem::remove(path);
}
BENCHMARK(BM_InspectPromptEdit)->Apply(inspectorRuns)->Args({0, 12, 8, 256, 1});

// Activation patching of one prompt (change_label): (L + 1) forward passes of a batch of T = 81
// patched copies, each starting after the patched activation, the final row first (no block to run).
// Counters ms_median, ms_min (whole result) and ms_first_row (median time to the first row the
// Patching page shows).
void BM_InspectPatching(benchmark::State& state)
{
    const std::string path = inspectorRun(state);
    icl::Inspector insp(path);
    const icl::Prompt p = insp.samplePrompt(1);
    icl::PatchingOptions o;
    o.example = 5;
    std::vector<double> ms, first;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        bool seen = false;
        benchmark::DoNotOptimize(insp.patching(p, o, {}, [&](const icl::PatchingResult&) {
                                         if (!seen)
                                             first.push_back(std::chrono::duration<double, std::milli>(
                                                 std::chrono::steady_clock::now() - start).count());
                                         seen = true;
                                     })
                                     .effect.data.front());
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    reportTimes(state, ms);
    std::sort(first.begin(), first.end());
    state.counters["ms_first_row"] = first.empty() ? 0.0 : first[first.size() / 2];
    std::filesystem::remove(path);
}
BENCHMARK(BM_InspectPatching)->Apply(inspectorRuns);

// The Probes page's first result (Guo et al. probes, every layer): icl::computeProbes for the targets
// x and y at the x tokens, 512 fit and 512 test prompts through one shared forward pass. Counters:
// ms_first_look (the first look on the first icl::kProbeFirstLookPrompts fit and test prompts, what
// the page shows first) and, as the same-run baseline, ms_one_target (computeProbe for x alone); the
// benchmark's time is both targets.
void BM_Probes(benchmark::State& state)
{
    const std::string path = inspectorRun(state);
    icl::ProbeOptions o;
    o.store = false;
    o.threads = int(state.range(4));
    std::vector<double> firstLook, one;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const auto curves = icl::computeProbes(path, o, {"x", "y"}, nullptr, {}, [&](const std::vector<icl::ProbeCurve>&) {
            firstLook.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        });
        benchmark::DoNotOptimize(curves.front().normalised_mse.back());
        state.PauseTiming();
        const auto t0 = std::chrono::steady_clock::now();
        o.target = "x";
        benchmark::DoNotOptimize(icl::computeProbe(path, o).normalised_mse.back());
        one.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        state.ResumeTiming();
    }
    std::sort(firstLook.begin(), firstLook.end());
    std::sort(one.begin(), one.end());
    state.counters["ms_first_look"] = firstLook.empty() ? 0.0 : firstLook[firstLook.size() / 2];
    state.counters["ms_one_target"] = one.empty() ? 0.0 : one[one.size() / 2];
    std::filesystem::remove(path);
}
BENCHMARK(BM_Probes)->Apply(inspectorGpt2Runs)->Iterations(1);

// First inspect of a run, as the Attention page and `icl-cli analyze attention` do it: open the file
// (config, checkpoint, fitted baselines), sample a prompt, and inspect it with every baseline — the
// GD-k step sizes the run did not fit included (GD-1 … GD-L for an L-layer model). Target ≤ 1 s.
// Counters ms_median, ms_min.
void BM_InspectFirstOpen(benchmark::State& state)
{
    const std::string path = inspectorRun(state);
    std::vector<double> ms;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        icl::Inspector insp(path);
        const icl::Inspection v = insp.inspect(insp.samplePrompt(1));
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        benchmark::DoNotOptimize(v.predictions.front().prediction);
    }
    reportTimes(state, ms);
    std::filesystem::remove(path);
}
BENCHMARK(BM_InspectFirstOpen)->Apply(inspectorRuns)->Iterations(3);

// The ICL-curve page's first result on the run's 1,280 evaluation prompts (inspectorRun sets eval.n_prompts
// to 64, so this sets 1,280 explicitly): the preview on the first 64 prompts (ms_first_look), and the
// whole curve (the benchmark's time).
void BM_IclCurve(benchmark::State& state)
{
    const std::string path = inspectorRun(state);
    icl::IclCurveOptions o;
    o.n_prompts = 1280;
    o.threads = int(state.range(4));
    std::vector<double> firstLook;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        const icl::IclCurve curve = icl::computeIclCurve(path, o, {}, [&](const icl::IclCurve&) {
            firstLook.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        });
        benchmark::DoNotOptimize(curve.series.front().error.back());
    }
    std::sort(firstLook.begin(), firstLook.end());
    state.counters["ms_first_look"] = firstLook.empty() ? 0.0 : firstLook[firstLook.size() / 2];
    std::filesystem::remove(path);
}
BENCHMARK(BM_IclCurve)->Apply(inspectorGpt2Runs)->Args({0, 4, 4, 64, 1})->Iterations(1);

/// The line search over η as it was before the spectral form: a 250-cell grid refined by golden
/// section, every loss evaluated by iterating predictGd (k GD steps on the whole batch).
double iteratedLineSearchEta(const icl::PromptBatch& batch, int64_t k)
{
    const torch::Tensor y = batch.queryY().to(torch::kFloat64);
    auto loss = [&](double eta) { return icl::halfMse(icl::predictGd(batch, k, eta), y).item<double>(); };
    const double lo = 0.0, hi = 25.0, h = (hi - lo) / 250;
    double bestEta = lo, bestLoss = loss(lo);
    for (int i = 1; i <= 250; ++i)
        if (const double l = loss(lo + i * h); l < bestLoss) {
            bestLoss = l;
            bestEta = lo + i * h;
        }
    return icl::goldenSectionMinimum(loss, std::max(lo, bestEta - h), std::min(hi, bestEta + h));
}

/// 2,000 prompts of Garg et al.'s task (d = 20, N = 40), the inspector's tuning set for GD-k's η.
icl::PromptBatch gargTuningPrompts()
{
    icl::TaskConfig t;
    t.d = 20;
    t.n_context = 40;
    t.x_distribution = "normal";
    return icl::sampleLinearRegression(t, 2000, 7, torch::kFloat64);
}

// Same-run baseline for BM_LineSearchEta: the iterated search for GD-2 on the same prompts.
void BM_BaselineIteratedLineSearchEta(benchmark::State& state)
{
    icl::configureThreads(0);
    const icl::PromptBatch b = gargTuningPrompts();
    for (auto _ : state)
        benchmark::DoNotOptimize(iteratedLineSearchEta(b, 2));
}
BENCHMARK(BM_BaselineIteratedLineSearchEta)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// η of GD-k by the spectral line search (lineSearchEtas) on 2,000 prompts, d = 20, N = 40. Arg: the
// largest k; all of GD-2 … GD-k are searched at once (12 = every GD-k a 12-layer model's inspector shows).
void BM_LineSearchEta(benchmark::State& state)
{
    icl::configureThreads(0);
    const icl::PromptBatch b = gargTuningPrompts();
    std::vector<int64_t> ks;
    for (int64_t k = 2; k <= state.range(0); ++k)
        ks.push_back(k);
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::lineSearchEtas(b, ks));
}
BENCHMARK(BM_LineSearchEta)->Arg(2)->Arg(12)->Unit(benchmark::kMillisecond)->UseRealTime();

// The part of BM_LineSearchEta that does not depend on η: one eigendecomposition per prompt.
void BM_GdSpectrum(benchmark::State& state)
{
    icl::configureThreads(int(state.range(0)));
    const icl::PromptBatch b = gargTuningPrompts();
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::GdSpectrum(b).batchSize());
}
BENCHMARK(BM_GdSpectrum)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

// The same environment as icl-cli and the GUI (passive OpenMP wait, OpenBLAS on the CPU's own kernels),
// and the BLAS it ran on in the output's context.
int main(int argc, char** argv)
{
    icl::app::ensureRuntimeEnvironment(argv);
    benchmark::AddCustomContext("blas", icl::blasInfo().summary());
    benchmark::AddCustomContext("cpu_kernels", icl::atenCpuInfo().summary());
    benchmark::AddCustomContext("allocator", icl::cpuAllocatorInfo().summary());
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
