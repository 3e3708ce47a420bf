#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/tasks/uniform_draws.h"

namespace {

/// Same shape and the same bytes (so −0 ≠ +0 and NaN payloads count).
bool sameTensorBits(const torch::Tensor& a, const torch::Tensor& b)
{
    if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type())
        return false;
    const torch::Tensor ca = a.contiguous(), cb = b.contiguous();
    return a.numel() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), size_t(a.numel()) * a.element_size()) == 0;
}

/// Generators in the same state draw the same numbers afterwards: checked on a float64 randn (which also draws
/// through the engine) and on the engines' state words and counters.
void expectSameState(at::Generator& a, at::Generator& b)
{
    const auto* ca = at::check_generator<at::CPUGeneratorImpl>(a);
    const auto* cb = at::check_generator<at::CPUGeneratorImpl>(b);
    const at::mt19937_data_pod da = const_cast<at::CPUGeneratorImpl*>(ca)->engine().data();
    const at::mt19937_data_pod db = const_cast<at::CPUGeneratorImpl*>(cb)->engine().data();
    EXPECT_EQ(da.left_, db.left_);
    EXPECT_EQ(da.next_, db.next_);
    EXPECT_EQ(da.state_, db.state_);
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    EXPECT_TRUE(sameTensorBits(torch::randn({37}, a, opts), torch::randn({37}, b, opts)));
}

// Sizes around the engine's 624-word block (312 float64 numbers per block) and von Oswald et al.'s batch, each
// drawn from generators that had already given 0, 1, 5, 311 or 624 numbers (so draws start at every phase).
const std::vector<std::vector<int64_t>> kSizes = {{0}, {1}, {2}, {311}, {312}, {313}, {625}, {1000}, {2048, 11, 10}};
const std::vector<int64_t> kAlreadyDrawn = {0, 1, 5, 311, 624};

TEST(UniformDraws, EqualTorchRandBitwiseAndLeaveTheSameGeneratorState)
{
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    for (uint64_t seed : {0ull, 7ull, 0x123456789abcdefull})
        for (int64_t before : kAlreadyDrawn)
            for (const auto& sizes : kSizes) {
                SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(before) + " drawn before, "
                             + std::to_string(sizes.size()) + "-d of " + std::to_string(sizes.back()));
                at::Generator ours = at::detail::createCPUGenerator(seed), theirs = at::detail::createCPUGenerator(seed);
                torch::rand({before}, ours, opts);
                torch::rand({before}, theirs, opts);
                const torch::Tensor want = torch::rand(sizes, theirs, opts);
                const torch::Tensor got = icl::drawUniform(ours, sizes);
                EXPECT_TRUE(got.is_contiguous());
                EXPECT_TRUE(sameTensorBits(got, want));
                expectSameState(ours, theirs);
            }
}

TEST(UniformDraws, SymmetricEqualsTheTensorExpressionBitwise)
{
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    for (double range : {1.0, 0.5, 2.5, 0.3, 1e-3})
        for (int64_t before : kAlreadyDrawn) {
            SCOPED_TRACE("range " + std::to_string(range) + ", " + std::to_string(before) + " drawn before");
            at::Generator ours = at::detail::createCPUGenerator(11), theirs = at::detail::createCPUGenerator(11);
            torch::rand({before}, ours, opts);
            torch::rand({before}, theirs, opts);
            const torch::Tensor want = (torch::rand({2048, 11, 10}, theirs, opts) * 2.0 - 1.0) * range;
            const torch::Tensor got = icl::drawSymmetricUniform(ours, {2048, 11, 10}, range);
            EXPECT_TRUE(sameTensorBits(got, want));
            EXPECT_LE(got.abs().max().item<double>(), range);
            expectSameState(ours, theirs);
        }
}

// Independent of LibTorch's kernels: LibTorch seeds its engine as the reference MT19937 does (std::mt19937 with
// the seed's low 32 bits), and a float64 uniform takes two consecutive outputs, the first as the high word, and
// keeps 53 bits of them.
TEST(UniformDraws, FollowTheReferenceMersenneTwister)
{
    const uint32_t seed = 5489u;
    std::mt19937 reference(seed);
    at::Generator gen = at::detail::createCPUGenerator(seed);
    const torch::Tensor u = icl::drawUniform(gen, {1500});
    const double* got = u.data_ptr<double>();
    for (int64_t i = 0; i < u.numel(); ++i) {
        const uint64_t hi = reference(), lo = reference();
        const uint64_t r = ((hi << 32) | lo) & ((uint64_t(1) << 53) - 1);
        ASSERT_EQ(got[i], double(r) / 9007199254740992.0) << "element " << i;  // 2^53
    }
    EXPECT_GE(u.min().item<double>(), 0.0);
    EXPECT_LT(u.max().item<double>(), 1.0);
}

} // namespace
