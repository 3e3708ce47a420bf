// Speed of the experiment file: commit time against the size of the file it commits into, the cost of
// checking checksums on read, and opening a file. Run: ./build/tests/benchmarks/experiment_file_benchmarks
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "core/io/checksums.h"
#include "core/io/experiment_file.h"

namespace fs = std::filesystem;

namespace {

constexpr int64_t kFloats = 256 * 1024;  // 1 MiB of float32 per checkpoint (params + optimizer moment)

std::string benchPath(const std::string& name)
{
    return (fs::temp_directory_path() / ("icl_bench_" + std::to_string(::getpid()) + "_" + name)).string();
}

icl::CheckpointData checkpoint(int64_t step)
{
    icl::CheckpointData c;
    c.step = step;
    c.train_loss = 1.0 / (step + 1);
    icl::NamedArray w{"blocks.0.attn.w_q", {kFloats / 2}, std::vector<float>(size_t(kFloats / 2))};
    for (size_t i = 0; i < w.data.size(); ++i)
        w.data[i] = std::sin(float(i) + float(step));
    c.params.push_back(w);
    w.name = "blocks.0.attn.w_q/exp_avg";
    c.optimizer.push_back(w);
    return c;
}

// A fresh copy of `from` at `to`, on disk (fsynced), so a commit's fsync does not also pay for writing the copy.
void syncedCopy(const std::string& from, const std::string& to)
{
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    const int fd = ::open(to.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// A run file with `n` checkpoints of 1 MiB each.
std::string runWith(int64_t n)
{
    const std::string path = benchPath("run_" + std::to_string(n) + ".h5");
    if (fs::exists(path))
        return path;
    icl::createExperimentFile(path, "{}", true);
    for (int64_t s = 0; s < n; ++s) {
        const icl::CheckpointData c = checkpoint(s);
        icl::commitToExperimentFile(path, {{{"step", double(s)}, {"eval_loss", 1.0}}}, &c);
    }
    return path;
}

// One commit (metrics row + 1 MiB checkpoint) into a file that already holds N checkpoints. Flat in N
// means a commit costs what it writes; linear in N means it copies the file.
void BM_CommitIntoFileWithCheckpoints(benchmark::State& state)
{
    const int64_t n = state.range(0);
    const std::string base = runWith(n);
    const std::string path = benchPath("commit.h5");
    const icl::CheckpointData c = checkpoint(n);
    for (auto _ : state) {
        state.PauseTiming();
        syncedCopy(base, path);
        state.ResumeTiming();
        icl::commitToExperimentFile(path, {{{"step", double(n)}, {"eval_loss", 1.0}}}, &c);
    }
    state.counters["file_MiB"] = double(fs::file_size(base)) / (1 << 20);
    fs::remove(path);
}
BENCHMARK(BM_CommitIntoFileWithCheckpoints)->Arg(0)->Arg(8)->Arg(32)->Arg(128)->Unit(benchmark::kMillisecond);

// The same commit into files with 0, 1, 32 and 128 earlier checkpoints, in turn in one loop, so all see the
// same machine state. Counters: ms_<n> (medians, wall time including fsync) and the ratios ratio_32_vs_empty,
// ratio_32_vs_1 and ratio_128_vs_1 (1 when commit time does not grow with the file; the whole-file copy of
// earlier builds gave ~4 for 32 vs empty). From one earlier checkpoint on, a commit also drops that
// checkpoint's optimizer state and HDF5 reuses its space in place, which the empty file has not to do:
// ratio_32_vs_1 isolates the growth with the file.
void BM_CommitTimeRatio32VsEmpty(benchmark::State& state)
{
    const std::vector<int64_t> sizes = {0, 1, 32, 128};
    std::vector<std::string> bases;
    for (int64_t n : sizes)
        bases.push_back(runWith(n));
    const std::string path = benchPath("commit_ratio.h5");
    std::vector<std::vector<double>> ms(sizes.size());
    for (auto _ : state) {
        for (size_t k = 0; k < sizes.size(); ++k) {
            const icl::CheckpointData c = checkpoint(sizes[k]);
            syncedCopy(bases[k], path);
            const auto start = std::chrono::steady_clock::now();
            icl::commitToExperimentFile(path, {{{"step", double(sizes[k])}, {"eval_loss", 1.0}}}, &c);
            ms[k].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    const double m0 = median(ms[0]), m1 = median(ms[1]), m32 = median(ms[2]), m128 = median(ms[3]);
    state.counters["ms_0"] = m0;
    state.counters["ms_1"] = m1;
    state.counters["ms_32"] = m32;
    state.counters["ms_128"] = m128;
    state.counters["ratio_32_vs_empty"] = m0 > 0 ? m32 / m0 : 0.0;
    state.counters["ratio_32_vs_1"] = m1 > 0 ? m32 / m1 : 0.0;
    state.counters["ratio_128_vs_1"] = m1 > 0 ? m128 / m1 : 0.0;
    fs::remove(path);
}
BENCHMARK(BM_CommitTimeRatio32VsEmpty)->Iterations(30)->Unit(benchmark::kMillisecond);

// Reading one 1 MiB checkpoint, every array checked against its SHA-256.
void BM_ReadCheckpointVerified(benchmark::State& state)
{
    const std::string path = runWith(1);
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::readCheckpoint(path, 0));
    state.SetBytesProcessed(int64_t(state.iterations()) * kFloats * 4);
}
BENCHMARK(BM_ReadCheckpointVerified)->Unit(benchmark::kMillisecond);

// The checksum's share of that read: SHA-256 of the same 1 MiB.
void BM_Sha256OfCheckpointArrays(benchmark::State& state)
{
    const icl::CheckpointData c = checkpoint(0);
    for (auto _ : state) {
        benchmark::DoNotOptimize(icl::checksums::arrayDigest("params/w", c.params[0].shape, c.params[0].data.data(),
                                                             c.params[0].data.size()));
        benchmark::DoNotOptimize(icl::checksums::arrayDigest("optimizer/w", c.optimizer[0].shape,
                                                             c.optimizer[0].data.data(), c.optimizer[0].data.size()));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * kFloats * 4);
}
BENCHMARK(BM_Sha256OfCheckpointArrays)->Unit(benchmark::kMillisecond);

// Opening a file (format, seals of every checkpoint, metrics, config validation) against its checkpoints.
void BM_OpenFileWithCheckpoints(benchmark::State& state)
{
    const std::string path = runWith(state.range(0));
    for (auto _ : state)
        benchmark::DoNotOptimize(icl::readRunSummary(path));
}
BENCHMARK(BM_OpenFileWithCheckpoints)->Arg(1)->Arg(8)->Arg(32)->Unit(benchmark::kMillisecond);

} // namespace

int main(int argc, char** argv)
{
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    for (int64_t n : {0, 1, 8, 32, 128})  // the fixture files
        fs::remove(benchPath("run_" + std::to_string(n) + ".h5"));
    return 0;
}
