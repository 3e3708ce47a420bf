// The causal attention kernels (core/models/causal_attention.h) against the definition written with LibTorch
// operations — per-head views, q·kᵀ/√d_head, the future masked to −∞, softmax, P·v — and LibTorch's autograd
// through it for the gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "core/models/causal_attention.h"
#include "core/runtime/blas.h"

namespace {

/// The definition: qkv [B, T, 3·D] → {z [B, T, D], pattern [B, H, T, T]}.
std::pair<torch::Tensor, torch::Tensor> definition(const torch::Tensor& qkv, int64_t H)
{
    const int64_t B = qkv.size(0), T = qkv.size(1), D = qkv.size(2) / 3, dh = D / H;
    const auto parts = qkv.view({B, T, 3, H, dh}).permute({2, 0, 3, 1, 4});  // [3, B, H, T, dh]
    const torch::Tensor q = parts[0], k = parts[1], v = parts[2];
    const torch::Tensor future = torch::ones({T, T}, torch::kBool).triu(1);
    const torch::Tensor scores
        = (torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(double(dh))).masked_fill(future, -INFINITY);
    const torch::Tensor pattern = torch::softmax(scores, -1);
    const torch::Tensor z = torch::matmul(pattern, v).transpose(1, 2).reshape({B, T, D});
    return {z, pattern};
}

/// max |a − b| / max |b|.
double relErr(const torch::Tensor& a, const torch::Tensor& b)
{
    const double scale = b.abs().max().item<double>();
    const double diff = (a - b).abs().max().item<double>();
    return scale > 0 ? diff / scale : diff;
}

torch::Tensor randomQkv(int64_t B, int64_t T, int64_t D, torch::Dtype dtype, uint64_t seed)
{
    torch::manual_seed(seed);
    return torch::randn({B, T, 3 * D}, torch::TensorOptions().dtype(dtype)) * 1.5;
}

// Head widths with compile-time kernels (8, 16, 32, 64) and one without (12); lengths shorter than a block of
// rows (1, 3), not a multiple of the tile (41), longer than a tile (81).
class CausalAttentionShapes : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(CausalAttentionShapes, ForwardMatchesTheDefinition)
{
    const auto [dh, T] = GetParam();
    const int64_t B = 3, H = 2, D = H * dh;
    const torch::Tensor qkv = randomQkv(B, T, D, torch::kFloat64, 11 + uint64_t(dh * T));
    const auto [zRef, pRef] = definition(qkv, H);
    const auto [z, pattern] = icl::causalAttention(qkv, H);
    ASSERT_EQ(z.sizes(), (std::vector<int64_t>{B, T, D}));
    ASSERT_EQ(pattern.sizes(), (std::vector<int64_t>{B, H, T, T}));
    EXPECT_LT(relErr(z, zRef), 1e-13);
    EXPECT_LT(relErr(pattern, pRef), 1e-13);
    // Nothing attends to the future, exactly; rows are distributions.
    EXPECT_TRUE(torch::equal(pattern.triu(1), torch::zeros_like(pattern)));
    EXPECT_LT((pattern.sum(-1) - 1).abs().max().item<double>(), 1e-14);
}

TEST_P(CausalAttentionShapes, GradientsMatchAutogradThroughTheDefinition)
{
    const auto [dh, T] = GetParam();
    const int64_t B = 2, H = 3, D = H * dh;
    const torch::Tensor base = randomQkv(B, T, D, torch::kFloat64, 5 + uint64_t(dh + T));
    torch::manual_seed(99);
    const torch::Tensor wz = torch::randn({B, T, D}, torch::kFloat64);
    const torch::Tensor wp = torch::randn({B, H, T, T}, torch::kFloat64);
    // A loss through z alone, through the pattern alone, and through both.
    for (int uses = 1; uses <= 3; ++uses) {
        auto loss = [&](const std::pair<torch::Tensor, torch::Tensor>& out) {
            torch::Tensor l = torch::zeros({}, torch::kFloat64);
            if (uses & 1)
                l = l + (out.first * wz).sum();
            if (uses & 2)
                l = l + (out.second * wp).sum();
            return l;
        };
        const torch::Tensor a = base.clone().requires_grad_(true), b = base.clone().requires_grad_(true);
        loss(definition(a, H)).backward();
        loss(icl::causalAttention(b, H)).backward();
        EXPECT_LT(relErr(b.grad(), a.grad()), 1e-12) << "uses " << uses;
    }
}

INSTANTIATE_TEST_SUITE_P(HeadWidthsAndLengths, CausalAttentionShapes,
                         ::testing::Combine(::testing::Values<int64_t>(8, 12, 16, 32, 64),
                                            ::testing::Values<int64_t>(1, 3, 41, 81)));

TEST(CausalAttention, Float32AgreesWithTheFloat64Definition)
{
    // GPT-2 3 / 2 / 64 and 4 / 4 / 64 heads (d_head 32, 16) on 81 and 41 tokens.
    for (const auto& [H, D, T] : {std::tuple<int64_t, int64_t, int64_t>{2, 64, 81}, {4, 64, 41}}) {
        const torch::Tensor qkv = randomQkv(4, T, D, torch::kFloat64, 3);
        const torch::Tensor x = qkv.to(torch::kFloat32).requires_grad_(true);
        const torch::Tensor ref = qkv.clone().requires_grad_(true);
        const auto out = icl::causalAttention(x, H);
        const auto outRef = definition(ref, H);
        EXPECT_EQ(out.first.scalar_type(), torch::kFloat32);
        EXPECT_LT(relErr(out.first.to(torch::kFloat64), outRef.first.detach()), 1e-5);
        EXPECT_LT(relErr(out.second.to(torch::kFloat64), outRef.second.detach()), 1e-5);
        out.first.pow(2).sum().backward();
        outRef.first.pow(2).sum().backward();
        EXPECT_LT(relErr(x.grad().to(torch::kFloat64), ref.grad()), 1e-5);
    }
}

TEST(CausalAttention, SameNumbersOnOneAndOnTwoThreads)
{
    // Each (prompt, head) is summed by one thread in a fixed order: the thread count cannot change a bit.
    const torch::Tensor qkv = randomQkv(8, 41, 64, torch::kFloat32, 21);
    auto run = [&](int threads) {
        const icl::ScopedThreads scope(threads);
        const torch::Tensor x = qkv.clone().requires_grad_(true);
        const auto [z, pattern] = icl::causalAttention(x, 4);
        (z.pow(2).sum() + pattern.sum()).backward();
        return std::make_tuple(z.detach(), pattern.detach(), x.grad());
    };
    const auto [z1, p1, g1] = run(1);
    const auto [z2, p2, g2] = run(2);
    EXPECT_TRUE(torch::equal(z1, z2));
    EXPECT_TRUE(torch::equal(p1, p2));
    EXPECT_TRUE(torch::equal(g1, g2));
}

TEST(CausalAttention, InferenceModeAndNonContiguousInput)
{
    const torch::Tensor qkv = randomQkv(2, 9, 32, torch::kFloat64, 8);
    const auto [zRef, pRef] = definition(qkv, 2);
    {
        c10::InferenceMode guard;
        const auto [z, pattern] = icl::causalAttention(qkv, 2);
        EXPECT_LT(relErr(z, zRef), 1e-13);
    }
    // A transposed copy viewed back: same values, other strides.
    const torch::Tensor strided = qkv.transpose(0, 1).contiguous().transpose(0, 1);
    ASSERT_FALSE(strided.is_contiguous());
    EXPECT_LT(relErr(icl::causalAttention(strided, 2).first, zRef), 1e-13);
}

TEST(CausalAttention, RefusesWhatTheKernelsCannotTake)
{
    EXPECT_FALSE(icl::causalAttentionKernelApplies(torch::zeros({2, 3, 12}, torch::kInt32)));
    EXPECT_FALSE(icl::causalAttentionKernelApplies(torch::zeros({3, 12})));
    EXPECT_FALSE(icl::causalAttentionKernelApplies(torch::zeros({2, 3, 13})));
    EXPECT_FALSE(icl::causalAttentionKernelApplies(torch::Tensor()));
    EXPECT_TRUE(icl::causalAttentionKernelApplies(torch::zeros({2, 3, 12})));
    EXPECT_THROW(icl::causalAttention(torch::zeros({2, 3, 12}, torch::kInt32), 2), c10::Error);
    EXPECT_THROW(icl::causalAttention(torch::zeros({2, 3, 12}), 3), c10::Error);  // D = 4 over 3 heads
}

} // namespace

namespace {

/// Same shape and the same bytes.
bool sameFloatBits(const torch::Tensor& a, const torch::Tensor& b)
{
    if (a.sizes() != b.sizes())
        return false;
    const torch::Tensor ca = a.contiguous(), cb = b.contiguous();
    return std::memcmp(ca.data_ptr<float>(), cb.data_ptr<float>(), size_t(a.numel()) * sizeof(float)) == 0;
}

/// Rows of n scores as attention makes them: random values at three scales, the future masked to −∞ (row r keeps
/// its first r mod n + 1 entries), and a few rows of edge values.
torch::Tensor scoreRows(int64_t rows, int64_t n, uint64_t seed)
{
    torch::manual_seed(seed);
    torch::Tensor x = torch::randn({rows, n}) * torch::tensor({0.1f, 1.0f, 8.0f}).repeat(rows / 3 + 1).narrow(0, 0, rows).unsqueeze(1);
    for (int64_t r = 0; r < rows; ++r)
        x[r].narrow(0, r % n + 1, n - (r % n + 1)).fill_(-INFINITY);
    x[0].fill_(0.0f);
    if (rows > 1)
        x[1].fill_(-0.0f);
    if (rows > 2)
        x[2].copy_(torch::linspace(-80.0, 80.0, n));
    return x;
}

} // namespace

// The softmax inside the attention loops repeats LibTorch's kernel of the process's width (ctest runs this file's
// tests a second time with AVX-512 kernels, SoftmaxLikeAten.WithTheExecutablesCpuCapability): forward and backward
// bit for bit, for row lengths below, at and around the vector widths and the attention lengths of the presets.
TEST(SoftmaxLikeAten, ForwardAndBackwardAreLibTorchsBitForBit)
{
    if (!icl::softmaxLikeAtenApplies()) {
        // No SLEEF or baseline kernels: attention calls LibTorch's softmax, and the repeated kernels refuse to run.
        EXPECT_THROW(icl::softmaxLastDimLikeAten(torch::zeros({2, 3})), c10::Error);
        return;
    }
    int checked = 0;
    for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 21, 31, 32, 33, 41, 64, 81, 100})
        for (uint64_t seed : {1u, 2u}) {
            SCOPED_TRACE("n = " + std::to_string(n) + ", seed " + std::to_string(seed));
            const torch::Tensor x = scoreRows(40, n, seed);
            const torch::Tensor y = at::_softmax(x, -1, false);
            EXPECT_TRUE(sameFloatBits(icl::softmaxLastDimLikeAten(x), y));
            torch::manual_seed(seed + 100);
            const torch::Tensor grad = torch::randn({40, n}) * 0.3;
            EXPECT_TRUE(sameFloatBits(icl::softmaxBackwardLastDimLikeAten(grad, y),
                                      at::_softmax_backward_data(grad, y, -1, torch::kFloat32)));
            ++checked;
        }
    EXPECT_EQ(checked, 34);
    // A NaN score makes its row NaN, as in LibTorch.
    torch::Tensor withNan = scoreRows(3, 17, 3);
    withNan[1][4] = NAN;
    const torch::Tensor y = icl::softmaxLastDimLikeAten(withNan);
    EXPECT_TRUE(torch::isnan(y[1]).all().item<bool>());
    EXPECT_TRUE(torch::isnan(at::_softmax(withNan, -1, false)[1]).all().item<bool>());
    EXPECT_FALSE(torch::isnan(y[0]).any().item<bool>());
    EXPECT_THROW(icl::softmaxLastDimLikeAten(torch::zeros({2, 3}, torch::kFloat64)), c10::Error);
    EXPECT_THROW(icl::softmaxBackwardLastDimLikeAten(torch::zeros({2, 3}), torch::zeros({2, 4})), c10::Error);
}
