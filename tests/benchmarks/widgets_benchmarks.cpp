// Redraw speed of the attention widgets (issue "Interactive inspector": the full 12 × 8 thumbnail grid
// ≤ 50 ms, one 1,024-token heatmap ≤ 50 ms). Offscreen Qt platform.
// Run: ./build/tests/benchmarks/widgets_benchmarks

#include <cmath>
#include <random>
#include <vector>

#include <QApplication>
#include <QImage>
#include <QPainter>

#include <benchmark/benchmark.h>
#include <qcustomplot.h>

#include "core/runtime/blas.h"
#include "core/types/matrix.h"
#include "widgets/attention_grid.h"
#include "widgets/attention_pattern_view.h"

namespace {

/// A causal softmax pattern [T, T] with random logits (rows sum to 1, zeros above the diagonal).
icl::Matrix causalSoftmax(int T, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<double> z(0.0, 2.0);
    icl::Matrix m{"pattern", T, T, std::vector<double>(size_t(T) * T, 0.0), {}, {}};
    for (int r = 0; r < T; ++r) {
        double sum = 0.0;
        for (int c = 0; c <= r; ++c)
            sum += (m.data[size_t(r * T + c)] = std::exp(z(rng)));
        for (int c = 0; c <= r; ++c)
            m.data[size_t(r * T + c)] /= sum;
    }
    for (int t = 0; t < T; ++t) {
        const std::string label = (t % 2 ? "y" : "x") + std::to_string(t / 2 + 1);
        m.row_labels.push_back(label);
        m.col_labels.push_back(label);
    }
    return m;
}

/// causalSoftmax patterns of T tokens for the 12 × 8 heads of the grid benchmarks (seeds 0 … 95).
std::vector<icl::Matrix> gridPatterns(int T)
{
    std::vector<icl::Matrix> patterns;
    for (int i = 0; i < 96; ++i)
        patterns.push_back(causalSoftmax(T, uint32_t(i)));
    return patterns;
}

/// New patterns for all 12 × 8 heads and a full repaint of the grid (thumbnails rebuilt and drawn). At
/// 1,024 tokens the 96 patterns are 805 MB of doubles, so this one is bound by memory bandwidth.
void BM_AttentionGridRedraw12x8(benchmark::State& state)
{
    const int T = int(state.range(0));
    const std::vector<icl::Matrix> patterns = gridPatterns(T);
    const std::vector<bool> softmax(96, true);
    icl::widgets::AttentionGrid grid;
    grid.resize(600, 700);
    QImage target(grid.size(), QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        grid.setPatterns(12, 8, patterns, softmax);
        QPainter painter(&target);
        grid.render(&painter);
    }
    state.SetLabel("tokens=" + std::to_string(T));
}
BENCHMARK(BM_AttentionGridRedraw12x8)->Arg(82)->Arg(1024)->Unit(benchmark::kMillisecond);

/// Repaint of the 12 × 8 grid from its cached thumbnails (resizing, scrolling, selecting a head).
void BM_AttentionGridRepaint12x8(benchmark::State& state)
{
    const int T = int(state.range(0));
    const std::vector<icl::Matrix> patterns = gridPatterns(T);
    icl::widgets::AttentionGrid grid;
    grid.resize(600, 700);
    grid.setPatterns(12, 8, patterns, std::vector<bool>(96, true));
    QImage target(grid.size(), QImage::Format_ARGB32_Premultiplied);
    for (auto _ : state) {
        QPainter painter(&target);
        grid.render(&painter);
    }
    state.SetLabel("tokens=" + std::to_string(T));
}
BENCHMARK(BM_AttentionGridRepaint12x8)->Arg(82)->Arg(1024)->Unit(benchmark::kMillisecond);

/// A new pattern in the large view and a full replot (colour map image, labelled axes, legend).
void BM_AttentionPatternRedraw(benchmark::State& state)
{
    const int T = int(state.range(0));
    const icl::Matrix a = causalSoftmax(T, 1), b = causalSoftmax(T, 2);
    icl::widgets::AttentionPatternView view;
    view.resize(700, 600);
    view.plot()->resize(700, 570);
    bool flip = false;
    for (auto _ : state) {
        view.setPattern(flip ? a : b, true);
        flip = !flip;
        view.plot()->replot(QCustomPlot::rpImmediateRefresh);
    }
    state.SetLabel("tokens=" + std::to_string(T));
}
BENCHMARK(BM_AttentionPatternRedraw)->Arg(82)->Arg(1024)->Unit(benchmark::kMillisecond);

} // namespace

// The BLAS of the process in the output's context, as in core_benchmarks (the redraws do not use it).
int main(int argc, char** argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    benchmark::AddCustomContext("blas", icl::blasInfo().summary());
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
