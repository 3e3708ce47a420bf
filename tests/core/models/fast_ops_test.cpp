// core/models/fast_ops: the CBLAS batched product and the sigmoid form of GELU (tanh) against
// independent float64 computations with LibTorch's own ops and the closed-form derivative.

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "core/models/fast_ops.h"

namespace {

double maxAbs(const torch::Tensor& a, const torch::Tensor& b)
{
    return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
}

// Loss with a fixed random weighting so every output element gets a different gradient.
torch::Tensor weighted(const torch::Tensor& out, const torch::Tensor& w)
{
    return (out * w).sum();
}

void checkProduct(bool transposeB)
{
    torch::manual_seed(3);
    const int64_t n = 6, m = 5, k = 7, p = 4;
    const torch::Tensor a = torch::randn({n, m, k});
    const torch::Tensor b = transposeB ? torch::randn({n, p, k}) : torch::randn({n, k, p});
    const torch::Tensor w = torch::randn({n, m, p});

    // Reference in float64 with LibTorch's matmul and autograd.
    const torch::Tensor a64 = a.to(torch::kFloat64).requires_grad_(), b64 = b.to(torch::kFloat64).requires_grad_();
    const torch::Tensor ref = torch::matmul(a64, transposeB ? b64.transpose(1, 2) : b64);
    weighted(ref, w.to(torch::kFloat64)).backward();

    const torch::Tensor a32 = a.clone().requires_grad_(), b32 = b.clone().requires_grad_();
    const torch::Tensor out = icl::batchedMatmul(a32, b32, transposeB);
    weighted(out, w).backward();

    ASSERT_EQ(out.sizes(), torch::IntArrayRef({n, m, p}));
    EXPECT_LT(maxAbs(out, ref), 1e-5);
    EXPECT_LT(maxAbs(a32.grad(), a64.grad()), 1e-5);
    EXPECT_LT(maxAbs(b32.grad(), b64.grad()), 1e-5);
}

TEST(FastOps, BatchedProductAndGradientsMatchMatmul)
{
    checkProduct(false);
    checkProduct(true);
}

TEST(FastOps, BatchedProductAcceptsNonContiguousInputs)
{
    torch::manual_seed(4);
    const torch::Tensor base = torch::randn({3, 2, 8, 4});       // [B, H, T, dh] viewed as [H, B, …]
    const torch::Tensor q = base.permute({1, 0, 2, 3}).reshape({6, 8, 4});
    const torch::Tensor kT = torch::randn({6, 4, 8}).transpose(1, 2);  // non-contiguous [6, 8, 4]
    EXPECT_LT(maxAbs(icl::batchedMatmul(q, kT, true), torch::matmul(q.to(torch::kFloat64),
                                                                    kT.to(torch::kFloat64).transpose(1, 2))),
              1e-5);
}

TEST(FastOps, BatchedProductRejectsMismatchedShapes)
{
    EXPECT_THROW(icl::batchedMatmul(torch::randn({2, 3, 4}), torch::randn({2, 5, 6}), false), c10::Error);
    EXPECT_THROW(icl::batchedMatmul(torch::randn({2, 3, 4}), torch::randn({3, 4, 6}), false), c10::Error);
    EXPECT_THROW(icl::batchedMatmul(torch::randn({3, 4}), torch::randn({4, 6}), false), c10::Error);
}

TEST(FastOps, BatchedProductIsTwiceDifferentiable)
{
    // f(a) = Σ w ⊙ (a·aᵀ); ∂f/∂a = (w + wᵀ)·a, so the Hessian-vector product with v is (w + wᵀ)·v.
    torch::manual_seed(5);
    const torch::Tensor a = torch::randn({2, 4, 3}, torch::requires_grad());
    const torch::Tensor w = torch::randn({2, 4, 4}), v = torch::randn({2, 4, 3});
    const torch::Tensor f = weighted(icl::batchedMatmul(a, a, true), w);
    const torch::Tensor g = torch::autograd::grad({f}, {a}, {}, true, true)[0];
    const torch::Tensor hv = torch::autograd::grad({(g * v).sum()}, {a})[0];
    const torch::Tensor sym = w + w.transpose(1, 2);
    EXPECT_LT(maxAbs(g, torch::matmul(sym, a.detach())), 1e-5);
    EXPECT_LT(maxAbs(hv, torch::matmul(sym, v)), 1e-5);
}

TEST(FastOps, GeluTanhEqualsTheClosedFormAndItsDerivative)
{
    const torch::Tensor x = torch::linspace(-6.0, 6.0, 241);
    const torch::Tensor xg = x.clone().requires_grad_();
    const torch::Tensor y = icl::geluTanh(xg);
    y.sum().backward();
    const double c = std::sqrt(2.0 / M_PI);
    double worstValue = 0.0, worstSlope = 0.0;
    for (int64_t i = 0; i < x.size(0); ++i) {
        const double v = x[i].item<double>();
        const double u = c * (v + 0.044715 * v * v * v);
        const double t = std::tanh(u);
        const double value = 0.5 * v * (1.0 + t);
        // d/dx of 0.5·x·(1 + tanh u) = 0.5·(1 + tanh u) + 0.5·x·(1 − tanh² u)·u′
        const double slope = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v);
        worstValue = std::max(worstValue, std::abs(y[i].item<double>() - value));
        worstSlope = std::max(worstSlope, std::abs(xg.grad()[i].item<double>() - slope));
    }
    EXPECT_LT(worstValue, 2e-6);
    EXPECT_LT(worstSlope, 2e-6);
}

TEST(FastOps, SwitchingOffGivesLibTorchsOps)
{
    torch::manual_seed(6);
    const torch::Tensor a = torch::randn({3, 4, 5}), b = torch::randn({3, 5, 2}), x = torch::randn({100});
    icl::setFastOps(false);
    const torch::Tensor plainProduct = icl::batchedMatmul(a, b, false), plainGelu = icl::geluTanh(x);
    icl::setFastOps(true);
    EXPECT_TRUE(icl::fastOps());
    EXPECT_TRUE(torch::equal(plainProduct, torch::matmul(a, b)));
    EXPECT_TRUE(torch::equal(plainGelu, torch::gelu(x, "tanh")));
    EXPECT_LT(maxAbs(icl::batchedMatmul(a, b, false), plainProduct), 1e-5);
    EXPECT_LT(maxAbs(icl::geluTanh(x), plainGelu), 1e-5);
}

} // namespace
