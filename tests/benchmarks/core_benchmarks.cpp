// Throughput of the training-step building blocks, each reported next to a baseline measured in the
// same run: one LSA training step (forward + backward) against one GD-1 baseline evaluation on the
// same batch, and prompt sampling against a plain randn of the same size. Compare the ratios, not
// the absolute times, across machines.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
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
#include "core/tasks/linear_regression.h"
#include "core/training/device.h"
#include "core/training/trainer.h"

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

void BM_BaselineGdOneStep(benchmark::State& state)
{
    const auto batch = icl::sampleLinearRegression(task(), state.range(0), 1);
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::predictGd(batch, 1, 1.5));
}
BENCHMARK(BM_BaselineGdOneStep)->Arg(2048);

// GPT-2 training step of Garg et al. (PAPERS.md §0): batch B (64 unless given), d = 20, N = 40 (81 tokens),
// loss over all positions, Adam step included, on `device`. Counters: steps_per_s, gflops (≈ 6·params·tokens +
// attention) and, where `reference` > 0, vs_pytorch (steps_per_s / reference).
void gpt2TrainStep(benchmark::State& state, const torch::Device& device, int64_t batchSize, double reference)
{
    icl::Gpt2Options o;
    o.input_dim = 20;
    o.n_layers = state.range(0);
    o.n_heads = state.range(1);
    o.d_model = state.range(2);
    o.n_positions = 81;
    icl::Gpt2 model(o, 0);
    model->to(device);
    icl::TaskConfig t;
    t.d = 20;
    t.n_context = 40;
    t.x_distribution = "normal";
    const auto batch = icl::sampleLinearRegression(t, batchSize, 1, torch::kFloat32, device);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-4));
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
BENCHMARK(BM_InspectPromptEdit)
    ->Args({0, 4, 4, 64, 0})
    ->Args({0, 12, 8, 256, 0})
    ->Args({0, 12, 8, 256, 1})
    ->Args({1, 1, 1, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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
BENCHMARK(BM_InspectPatching)
    ->Args({0, 4, 4, 64, 0})
    ->Args({0, 12, 8, 256, 0})
    ->Args({1, 1, 1, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

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
BENCHMARK(BM_Probes)
    ->Args({0, 4, 4, 64, 0})
    ->Args({0, 12, 8, 256, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

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
BENCHMARK(BM_InspectFirstOpen)
    ->Args({0, 4, 4, 64, 0})
    ->Args({0, 12, 8, 256, 0})
    ->Args({1, 1, 1, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

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
BENCHMARK(BM_IclCurve)
    ->Args({0, 4, 4, 64, 0})
    ->Args({0, 4, 4, 64, 1})
    ->Args({0, 12, 8, 256, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

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
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
