#include "core/tasks/uniform_draws.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/MT19937RNGEngine.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>

namespace icl {

namespace {

constexpr int kN = at::MERSENNE_STATE_N;  // 624 words of state
constexpr int kM = at::MERSENNE_STATE_M;  // 397

// The loops below are plain integer code (and, in convert, exact conversions and the rounded operations of the
// expressions they reproduce; this file is compiled with -ffp-contract=off); each clone gives the same bits.
#define ICL_RNG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

inline uint32_t twist(uint32_t u, uint32_t v)
{
    return (((u & at::UMASK) | (v & at::LMASK)) >> 1) ^ ((v & 1u) ? at::MATRIX_A : 0u);
}

/// MT19937's state transition (at::mt19937_engine::next_state, index for index): word i becomes
/// s[i + M] ^ twist(s[i], s[i + 1]), indices mod N, in ascending i. Words i < N − M read words not yet
/// replaced; words i ≥ N − M read words replaced N − M = 227 steps earlier, so each loop vectorises.
ICL_RNG_CLONES void nextState(uint32_t* __restrict s)
{
    for (int i = 0; i < kN - kM; ++i)
        s[i] = s[i + kM] ^ twist(s[i], s[i + 1]);
    for (int i = kN - kM; i < kN - 1; ++i)
        s[i] = s[i + kM - kN] ^ twist(s[i], s[i + 1]);
    s[kN - 1] = s[kM - 1] ^ twist(s[kN - 1], s[0]);
}

/// MT19937's tempering of `count` state words.
ICL_RNG_CLONES void temper(const uint32_t* __restrict s, int64_t count, uint32_t* __restrict out)
{
    for (int64_t i = 0; i < count; ++i) {
        uint32_t y = s[i];
        y ^= (y >> 11);
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        y ^= (y >> 18);
        out[i] = y;
    }
}

/// u_i = (((w_2i << 32) | w_2i+1) mod 2^53) · 2^−53 (at::transformation::uniform_real for float64 on [0, 1), whose
/// x·(1 − 0) + 0 is x exactly), then, with `symmetric`, (u_i · 2 − 1) · range. The 53-bit integer is formed as
/// (w_2i mod 2^21) · 2^32 + w_2i+1 in float64, where every step is exact, so that 32-bit words convert in vector
/// registers.
ICL_RNG_CLONES void convert(const uint32_t* __restrict words, int64_t n, bool symmetric, double range,
                            double* __restrict out)
{
    constexpr double kTwo32 = 4294967296.0, kTwoMinus53 = 1.0 / 9007199254740992.0;
    if (symmetric) {
        for (int64_t i = 0; i < n; ++i) {
            const double u = (double(words[2 * i] & 0x1fffffu) * kTwo32 + double(words[2 * i + 1])) * kTwoMinus53;
            out[i] = (u * 2.0 - 1.0) * range;
        }
    } else {
        for (int64_t i = 0; i < n; ++i)
            out[i] = (double(words[2 * i] & 0x1fffffu) * kTwo32 + double(words[2 * i + 1])) * kTwoMinus53;
    }
}

/// The next `count` outputs of the engine whose state is `d`, as `count` calls of at::mt19937_engine::operator()
/// return them, with `d` advanced as those calls advance it. The engine reads state word next_ on each call
/// and first replaces the whole state when --left_ reaches 0; so left_ − 1 words remain before that.
void drawWords(at::mt19937_data_pod& d, uint32_t* out, int64_t count)
{
    int64_t take = std::min<int64_t>(d.left_ - 1, count);
    temper(d.state_.data() + d.next_, take, out);
    d.next_ += uint32_t(take);
    d.left_ -= int(take);
    out += take;
    count -= take;
    while (count > 0) {
        nextState(d.state_.data());
        // The call that replaced the state read word 0 with left_ = N; each further call decrements left_.
        take = std::min<int64_t>(kN, count);
        temper(d.state_.data(), take, out);
        d.next_ = uint32_t(take);
        d.left_ = int(kN + 1 - take);
        out += take;
        count -= take;
    }
}

torch::Tensor draw(at::Generator& gen, at::IntArrayRef sizes, bool symmetric, double range)
{
    torch::Tensor out = torch::empty(sizes, torch::TensorOptions().dtype(torch::kFloat64));
    const int64_t n = out.numel();
    auto* cpu = at::check_generator<at::CPUGeneratorImpl>(gen);
    std::lock_guard<std::mutex> lock(gen.mutex());
    at::mt19937 engine = cpu->engine();
    at::mt19937_data_pod state = engine.data();
    const std::unique_ptr<uint32_t[]> words(new uint32_t[size_t(2 * n)]);  // not zeroed: every word is drawn
    drawWords(state, words.get(), 2 * n);
    convert(words.get(), n, symmetric, range, out.data_ptr<double>());
    engine.set_data(state);
    cpu->set_engine(engine);
    return out;
}

} // namespace

torch::Tensor drawUniform(at::Generator& gen, at::IntArrayRef sizes)
{
    return draw(gen, sizes, false, 1.0);
}

torch::Tensor drawSymmetricUniform(at::Generator& gen, at::IntArrayRef sizes, double range)
{
    return draw(gen, sizes, true, range);
}

} // namespace icl
