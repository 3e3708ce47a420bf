// Throughput of the training-step building blocks, each reported next to a baseline measured in the
// same run: one LSA training step (forward + backward) against one GD-1 baseline evaluation on the
// same batch, and prompt sampling against a plain randn of the same size. Compare the ratios, not
// the absolute times, across machines.
#include <benchmark/benchmark.h>

#include "core/baselines/baselines.h"
#include "core/models/lsa.h"
#include "core/tasks/linear_regression.h"

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

} // namespace

BENCHMARK_MAIN();
