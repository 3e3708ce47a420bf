#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/models/gelu.h"
#include "core/runtime/cpu_kernels.h"

namespace {

// LibTorch's own GELU and its autograd gradient for ∂L/∂y = g: the reference the fused path must equal bitwise.
std::pair<torch::Tensor, torch::Tensor> libtorchGelu(const torch::Tensor& x, const torch::Tensor& g)
{
    const torch::Tensor leaf = x.detach().clone().requires_grad_(true);
    const torch::Tensor y = torch::gelu(leaf, "tanh");
    y.backward(g);
    return {y.detach(), leaf.grad()};
}

std::pair<torch::Tensor, torch::Tensor> workbenchGelu(const torch::Tensor& x, const torch::Tensor& g)
{
    const torch::Tensor leaf = x.detach().clone().requires_grad_(true);
    const torch::Tensor y = icl::geluTanh(leaf);
    y.backward(g);
    return {y.detach(), leaf.grad()};
}

// Inputs across GELU's range: Gaussian at several scales, and the edges (0, ±tiny, ±large, where tanh saturates).
torch::Tensor inputs(std::vector<int64_t> shape, double scale, uint64_t seed)
{
    torch::manual_seed(seed);
    torch::Tensor x = torch::randn(shape) * scale;
    const std::vector<float> edges{0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -1e-3f, 9.0f, -9.0f, 40.0f, -40.0f, 1e4f, -1e4f};
    auto flat = x.view({-1});
    for (size_t i = 0; i < edges.size() && int64_t(i) < flat.numel(); ++i)
        flat[int64_t(i)] = edges[i];
    return x;
}

// Restores LibTorch's intra-op thread count of this thread when it goes out of scope.
struct ThreadCount {
    int saved = at::get_num_threads();
    explicit ThreadCount(int n) { at::set_num_threads(n); }
    ~ThreadCount() { at::set_num_threads(saved); }
};

} // namespace

// The fused path is LibTorch's GELU bit for bit, forward and gradient, on the GPT-2 shapes it serves (a shard of 32
// prompts × 81 tokens × 4·256, a whole batch of 64, Garg's 4·64 width) on 1 to 4 intra-op threads (LibTorch splits
// its work into that many chunks).
TEST(GeluTanh, FusedPathIsLibTorchsGeluBitForBit)
{
    const std::vector<std::vector<int64_t>> shapes{{2592, 1024}, {5184, 1024}, {64, 81, 256}, {3, 1024}};
    for (const int threads : {1, 2, 3, 4}) {
        const ThreadCount scoped(threads);
        for (const auto& shape : shapes)
            for (const double scale : {0.3, 1.0, 4.0}) {
                const torch::Tensor x = inputs(shape, scale, uint64_t(7 + 3 * threads + shape[0]));
                const torch::Tensor g = torch::randn(shape);
                const std::string label = "shape " + std::to_string(x.numel()) + " scale " + std::to_string(scale)
                                          + " threads " + std::to_string(threads) + ", LibTorch's kernels "
                                          + icl::atenCpuInfo().summary();
#ifdef ICL_HAVE_SLEEF
                if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
                    EXPECT_TRUE(icl::geluTanhFusedApplies(x)) << label;
#endif
                const auto [yRef, gradRef] = libtorchGelu(x, g);
                const auto [y, grad] = workbenchGelu(x, g);
                EXPECT_TRUE(torch::equal(y, yRef)) << label << ": max |Δy| " << (y - yRef).abs().max().item<float>();
                EXPECT_TRUE(torch::equal(grad, gradRef))
                    << label << ": max |Δ∂x| " << (grad - gradRef).abs().max().item<float>();
            }
    }
}

// Against the closed form in float64 (independent of both kernels): GELU and GELU' of the tanh approximation.
TEST(GeluTanh, ValuesAndGradientFollowTheClosedForm)
{
    const torch::Tensor x = inputs({4096, 64}, 2.0, 3);
    const torch::Tensor g = torch::ones_like(x);
    const auto [y, grad] = workbenchGelu(x, g);
    const torch::Tensor xd = x.to(torch::kFloat64);
    const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
    const torch::Tensor t = torch::tanh(beta * (xd + kappa * xd.pow(3)));
    const torch::Tensor yWant = 0.5 * xd * (1 + t);
    const torch::Tensor dWant = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * beta * (1 + 3 * kappa * xd.square());
    // Relative to max(1, |value|): for x ≪ 0, 1 + tanh u cancels in float32 (LibTorch's kernel alike), so small
    // values carry an absolute error of a few float32 ulps of 1, not a relative one.
    const auto err = [](const torch::Tensor& got, const torch::Tensor& want) {
        return ((got.to(torch::kFloat64) - want).abs() / want.abs().clamp_min(1.0)).max().item<double>();
    };
    EXPECT_LT(err(y, yWant), 2e-6);
    EXPECT_LT(err(grad, dWant), 2e-6);
}

// Where LibTorch would evaluate some elements with its scalar code, or the tensor is not a float32 contiguous CPU
// tensor, geluTanh is LibTorch's GELU itself: same numbers there too.
TEST(GeluTanh, OtherShapesAndTypesAreLibTorchsGelu)
{
    const torch::Tensor odd = inputs({7, 13}, 1.0, 5);
    EXPECT_FALSE(icl::geluTanhFusedApplies(odd));
    const torch::Tensor f64 = inputs({64, 64}, 1.0, 6).to(torch::kFloat64);
    EXPECT_FALSE(icl::geluTanhFusedApplies(f64));
    const torch::Tensor strided = inputs({64, 128}, 1.0, 8).t();
    EXPECT_FALSE(icl::geluTanhFusedApplies(strided));
    for (const torch::Tensor& x : {odd, f64, strided}) {
        const torch::Tensor g = torch::randn_like(x);
        const auto [yRef, gradRef] = libtorchGelu(x, g);
        const auto [y, grad] = workbenchGelu(x, g);
        EXPECT_TRUE(torch::equal(y, yRef));
        EXPECT_TRUE(torch::equal(grad, gradRef));
    }
}

// The fused backward is a product with the stored derivative: it has no graph of its own, so a second derivative
// through it is refused rather than silently wrong. Where the fused path does not apply (no AVX2/FMA or SLEEF),
// geluTanh is LibTorch's gelu and the second derivative is LibTorch's.
TEST(GeluTanh, DoubleBackwardThroughTheFusedPathIsRefused)
{
    const torch::Tensor x = inputs({64, 1024}, 1.0, 9).requires_grad_(true);
    const torch::Tensor y = icl::geluTanh(x).sum();
    if (icl::geluTanhFusedApplies(x)) {
        EXPECT_THROW(torch::autograd::grad({y}, {x}, {}, /*retain_graph=*/true, /*create_graph=*/true), c10::Error);
    } else {
        const torch::Tensor g = torch::autograd::grad({y}, {x}, {}, true, true)[0];
        EXPECT_TRUE(g.requires_grad());
    }
}
