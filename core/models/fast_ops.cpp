#include "core/models/fast_ops.h"

#include <atomic>
#include <cmath>

#include <ATen/Parallel.h>
#include <cblas.h>

namespace icl {

namespace {

std::atomic<bool> g_fastOps{true};

bool useBlas(const torch::Tensor& a, const torch::Tensor& b)
{
    return g_fastOps.load() && a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == torch::kFloat32
           && b.scalar_type() == torch::kFloat32;
}

/// c[i] = op(a[i]) · op(b[i]) for every i, with op = transpose where asked; a, b contiguous float32.
/// Shapes: op(a[i]) [m, k], op(b[i]) [k, p].
torch::Tensor blasBatched(const torch::Tensor& aIn, const torch::Tensor& bIn, bool ta, bool tb)
{
    const torch::Tensor a = aIn.contiguous(), b = bIn.contiguous();
    const int64_t n = a.size(0);
    const int64_t m = ta ? a.size(2) : a.size(1), k = ta ? a.size(1) : a.size(2);
    const int64_t kb = tb ? b.size(2) : b.size(1), p = tb ? b.size(1) : b.size(2);
    TORCH_CHECK(b.size(0) == n && kb == k, "batchedMatmul: shapes ", aIn.sizes(), " and ", bIn.sizes(),
                " do not multiply");
    torch::Tensor c = torch::empty({n, m, p}, a.options());
    if (n == 0 || m == 0 || p == 0)
        return c;
    if (k == 0)
        return c.zero_();
    const float* A = a.data_ptr<float>();
    const float* B = b.data_ptr<float>();
    float* C = c.data_ptr<float>();
    const int64_t strideA = a.size(1) * a.size(2), strideB = b.size(1) * b.size(2), strideC = m * p;
    const int lda = int(a.size(2)), ldb = int(b.size(2)), ldc = int(p);
    at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m), int(p),
                        int(k), 1.0f, A + i * strideA, lda, B + i * strideB, ldb, 0.0f, C + i * strideC, ldc);
    });
    return c;
}

torch::Tensor plainBatched(const torch::Tensor& a, const torch::Tensor& b, bool ta, bool tb)
{
    return torch::matmul(ta ? a.transpose(1, 2) : a, tb ? b.transpose(1, 2) : b);
}

/// c = a · op(b) with a CBLAS forward and backward:
///   c = a·b   → ∂a = ∂c·bᵀ, ∂b = aᵀ·∂c;
///   c = a·bᵀ  → ∂a = ∂c·b,  ∂b = ∂cᵀ·a.
struct BatchedMatmulFunction : public torch::autograd::Function<BatchedMatmulFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                                 bool transposeB)
    {
        ctx->save_for_backward({a, b});
        ctx->saved_data["tb"] = transposeB;
        return blasBatched(a, b, false, transposeB);
    }

    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor &a = saved[0], &b = saved[1], &g = grads[0];
        const bool tb = ctx->saved_data["tb"].toBool();
        // With create_graph the gradients must themselves be differentiable: use LibTorch's ops.
        auto mm = torch::GradMode::is_enabled() ? plainBatched : blasBatched;
        torch::Tensor ga, gb;
        if (tb) {
            ga = mm(g, b, false, false);
            gb = mm(g, a, true, false);
        } else {
            ga = mm(g, b, false, true);
            gb = mm(a, g, true, false);
        }
        return {ga, gb, torch::Tensor()};
    }
};

constexpr double kGeluC = 0.7978845608028654;  // √(2/π)
constexpr double kGeluA = 0.044715;

/// y = x·s with s = σ(2u), u = √(2/π)(x + 0.044715x³);  dy/dx = s + x·s(1 − s)·2√(2/π)(1 + 3·0.044715x²).
struct GeluTanhFunction : public torch::autograd::Function<GeluTanhFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x)
    {
        const torch::Tensor s = torch::sigmoid(x * (1.0 + kGeluA * x * x) * (2.0 * kGeluC));
        ctx->save_for_backward({x, s});
        return x * s;
    }

    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        const torch::Tensor &x = saved[0], &s = saved[1];
        const torch::Tensor slope = s * (1.0 + x * (1.0 - s) * (2.0 * kGeluC) * (1.0 + 3.0 * kGeluA * x * x));
        return {grads[0] * slope};
    }
};

} // namespace

torch::Tensor batchedMatmul(const torch::Tensor& a, const torch::Tensor& b, bool transposeB)
{
    TORCH_CHECK(a.dim() == 3 && b.dim() == 3, "batchedMatmul expects 3-d tensors, got ", a.sizes(), " and ",
                b.sizes());
    if (!useBlas(a, b))
        return plainBatched(a, b, false, transposeB);
    return BatchedMatmulFunction::apply(a, b, transposeB);
}

torch::Tensor geluTanh(const torch::Tensor& x)
{
    if (!g_fastOps.load() || !x.device().is_cpu())
        return torch::gelu(x, "tanh");
    return GeluTanhFunction::apply(x);
}

void setFastOps(bool enabled)
{
    g_fastOps.store(enabled);
}

bool fastOps()
{
    return g_fastOps.load();
}

} // namespace icl
