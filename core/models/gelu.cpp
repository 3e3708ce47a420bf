#include "core/models/gelu.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/runtime/cpu_kernels.h"

#ifdef ICL_HAVE_SLEEF
#include "core/models/sleef_functions.h"
#endif

namespace icl {
namespace {

#ifdef ICL_HAVE_SLEEF

typedef float Float8 __attribute__((vector_size(32)));
typedef float Float16 __attribute__((vector_size(64)));

// GELU(x) and GELU'(x) of one vector, with LibTorch 1.13's vectorised CPU kernels' expressions
// (aten/src/ATen/native/cpu/Activation.cpp, GeluKernelImpl and GeluBackwardKernelImpl, tanh branch), term for term
// and in the same order, and the same tanh. This file is compiled with -ffp-contract=fast, as LibTorch's kernels
// are, so that the compiler forms the same fused multiply-adds from the same expressions: the numbers are
// LibTorch's bit for bit (checked by tests/core/models/gelu_test.cpp on millions of values, for both widths).
template <typename V, typename Tanh>
__attribute__((always_inline)) inline void geluAndDerivativeOf(const float* x, float* y, float* dydx, Tanh tanhOf)
{
    const V kBeta = V{} + float(M_SQRT2 * M_2_SQRTPI * 0.5);
    const V kKappa = V{} + float(0.044715);
    const V kOne = V{} + 1.0f;
    const V kThree = V{} + 3.0f;
    const V kPointFive = V{} + 0.5f;
    V xv;
    std::memcpy(&xv, x, sizeof xv);
    // Forward (GeluKernelImpl): ½ x (1 + tanh(β (x + κ x³))).
    const V xCube = xv * xv * xv;
    const V inner = kBeta * (xv + kKappa * xCube);
    const V tanhInner = tanhOf(inner);
    const V yv = kPointFive * xv * (kOne + tanhInner);
    // Backward (GeluBackwardKernelImpl), without its final product with ∂L/∂y.
    const V xSq = xv * xv;
    const V left = kPointFive * xv;
    const V right = kOne + tanhInner;
    const V leftDerivative = kPointFive * right;
    const V tanhDerivative = kOne - tanhInner * tanhInner;
    const V innerDerivative = kBeta * (kOne + kThree * kKappa * xSq);
    const V rightDerivative = left * tanhDerivative * innerDerivative;
    const V dv = leftDerivative + rightDerivative;
    std::memcpy(y, &yv, sizeof yv);
    std::memcpy(dydx, &dv, sizeof dv);
}

// n elements, a multiple of 8: LibTorch's AVX2 kernels.
__attribute__((target("avx2,fma"))) void geluAndDerivativeAvx2(const float* x, float* y, float* dydx, int64_t n)
{
    const auto tanhOf = [](Float8 v) __attribute__((target("avx2,fma"))) {
        return reinterpret_cast<Float8>(Sleef_tanhf8_u10(reinterpret_cast<__m256>(v)));
    };
    for (int64_t i = 0; i < n; i += 8)
        geluAndDerivativeOf<Float8>(x + i, y + i, dydx + i, tanhOf);
}

// n elements, a multiple of 16: LibTorch's AVX-512 kernels.
__attribute__((target("avx512f,avx2,fma"))) void geluAndDerivativeAvx512(const float* x, float* y, float* dydx,
                                                                        int64_t n)
{
    const auto tanhOf = [](Float16 v) __attribute__((target("avx512f,avx2,fma"))) {
        return reinterpret_cast<Float16>(Sleef_tanhf16_u10(reinterpret_cast<__m512>(v)));
    };
    for (int64_t i = 0; i < n; i += 16)
        geluAndDerivativeOf<Float16>(x + i, y + i, dydx + i, tanhOf);
}

int64_t divUp(int64_t a, int64_t b) { return (a + b - 1) / b; }

// at::internal::GRAIN_SIZE (ATen/TensorIterator.h): the grain of TensorIterator::for_each by default.
constexpr int64_t kAtenGrain = 32768;

// The length of the first (largest) chunk into which TensorIterator::for_each(loop, grain) splits n contiguous
// elements on this thread (ATen/TensorIterator.cpp, ATen/Parallel-inl.h, ATen/ParallelOpenMP.h of LibTorch 1.13).
int64_t atenChunk(int64_t n, int64_t grain)
{
    const int64_t threads = at::get_num_threads();
    if (n <= grain || threads == 1 || at::in_parallel_region())
        return n;
    const int64_t teams = std::min(threads, divUp(n, grain));
    return divUp(n, teams);
}

// Forward and backward of the fused path; see the file comment of gelu.h.
struct GeluTanhFused : torch::autograd::Function<GeluTanhFused> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x)
    {
        torch::Tensor y = torch::empty_like(x);
        torch::Tensor dydx = torch::empty_like(x);
        const float* px = x.data_ptr<float>();
        float* py = y.data_ptr<float>();
        float* pd = dydx.data_ptr<float>();
        // Blocks of 32 elements (a whole number of vectors of either width), 1,024 blocks (32,768 elements,
        // LibTorch's grain) or more per intra-op thread.
        const bool wide = atenFloatVectorWidth() == 16;
        at::parallel_for(0, x.numel() / 32, 1024, [&](int64_t begin, int64_t end) {
            const int64_t offset = 32 * begin, n = 32 * (end - begin);
            if (wide)
                geluAndDerivativeAvx512(px + offset, py + offset, pd + offset, n);
            else
                geluAndDerivativeAvx2(px + offset, py + offset, pd + offset, n);
        });
        ctx->save_for_backward({dydx});
        return y;
    }

    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        TORCH_CHECK(!torch::GradMode::is_enabled(),
                    "geluTanh: the fused CPU GELU is differentiable once; a backward with create_graph needs "
                    "torch::gelu");
        const torch::Tensor dydx = ctx->get_saved_variables()[0];
        // LibTorch's backward ends with dy · (left + right derivative): the same product.
        return {grads[0] * dydx};
    }
};

#endif // ICL_HAVE_SLEEF

} // namespace

bool geluTanhFusedApplies(const torch::Tensor& x)
{
#ifdef ICL_HAVE_SLEEF
    if (!x.defined() || x.device().type() != torch::kCPU || x.scalar_type() != torch::kFloat32 || !x.is_contiguous()
        || atenFloatVectorWidth() == 0)
        return false;
    // LibTorch evaluates an element with its scalar code (std::tanh) where it falls in the tail of a chunk that is not
    // a whole number of vector blocks (16 floats for AVX2, 32 for AVX-512); the fused path is taken only when no
    // element does, in the forward (grain n / threads above 16,384 elements) and in the backward (grain 32,768).
    const int64_t n = x.numel();
    constexpr int64_t kBlock = 32;
    if (n == 0 || n % kBlock != 0)
        return false;
    const int64_t forwardGrain = n > 16384 ? n / at::get_num_threads() : kAtenGrain;
    return atenChunk(n, forwardGrain) % kBlock == 0 && atenChunk(n, kAtenGrain) % kBlock == 0;
#else
    (void)x;
    return false;
#endif
}

torch::Tensor geluTanh(const torch::Tensor& x)
{
#ifdef ICL_HAVE_SLEEF
    // Without a gradient to keep, the derivative is not worth computing: LibTorch's forward alone.
    if (torch::GradMode::is_enabled() && x.requires_grad() && geluTanhFusedApplies(x))
        return GeluTanhFused::apply(x);
#endif
    return torch::gelu(x, "tanh");
}

} // namespace icl
