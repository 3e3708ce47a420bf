#include "core/training/fused_adam.h"

#include <cmath>
#include <cstring>
#include <immintrin.h>

#include "core/runtime/cpu_kernels.h"
#include "core/training/optim.h"

namespace icl {
namespace {

// This file is compiled with -ffp-contract=off: the only fused multiply-adds are the ones written below, where
// LibTorch 1.13's kernels have them (add_ with alpha: vec::fmadd in its ufunc; addcmul_: the compiler contracts
// `self + value * t1 * t2`, in its vectorised and its scalar loops alike, measured against LibTorch). Every
// other operation is rounded on its own, as in LibTorch's separate kernels.

// One element, for the tails.
inline float adamElement(float& p, float g, float& m, float& v, const AdamScalars& s)
{
    if (s.decay_factor != 1.0f)
        p = p * s.decay_factor;
    if (s.weight_decay != 0.0f)
        g = std::fma(p, s.weight_decay, g);
    m = std::fma(g, s.one_minus_beta1, m * s.beta1);
    v = std::fma(s.one_minus_beta2 * g, g, v * s.beta2);
    const float denom = std::sqrt(v) / s.sqrt_bias_correction2 + s.eps;
    p = p + (s.neg_step_size * m) / denom;
    return p;
}

typedef float Float8 __attribute__((vector_size(32)));
typedef float Float16 __attribute__((vector_size(64)));

// n elements in vectors of V (products, sums and quotients rounded one by one: this file is compiled without FMA
// contraction), the fused multiply-adds by fmaOf(a, b, c) = a·b + c rounded once, √ by sqrtOf; the last n mod W
// elements one by one.
template <typename V, typename Fma, typename Sqrt>
__attribute__((always_inline)) inline void adamRange(float* p, const float* g, float* m, float* v, int64_t n,
                                                     const AdamScalars& s, Fma fmaOf, Sqrt sqrtOf)
{
    constexpr int64_t W = sizeof(V) / sizeof(float);
    const V decay = V{} + s.decay_factor, wd = V{} + s.weight_decay;
    const V b1 = V{} + s.beta1, c1 = V{} + s.one_minus_beta1, b2 = V{} + s.beta2, c2 = V{} + s.one_minus_beta2;
    const V sq = V{} + s.sqrt_bias_correction2, eps = V{} + s.eps, step = V{} + s.neg_step_size;
    const bool decoupled = s.decay_factor != 1.0f, l2 = s.weight_decay != 0.0f;
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        V pv, gv, mv, vv;
        std::memcpy(&pv, p + i, sizeof(V));
        std::memcpy(&gv, g + i, sizeof(V));
        std::memcpy(&mv, m + i, sizeof(V));
        std::memcpy(&vv, v + i, sizeof(V));
        if (decoupled)
            pv = pv * decay;
        if (l2)
            gv = fmaOf(pv, wd, gv);
        mv = fmaOf(gv, c1, mv * b1);
        vv = fmaOf(c2 * gv, gv, vv * b2);
        const V denom = sqrtOf(vv) / sq + eps;
        pv = pv + (step * mv) / denom;
        std::memcpy(m + i, &mv, sizeof(V));
        std::memcpy(v + i, &vv, sizeof(V));
        std::memcpy(p + i, &pv, sizeof(V));
    }
    for (; i < n; ++i)
        adamElement(p[i], g[i], m[i], v[i], s);
}

// GCC 12 reports _mm512_sqrt_ps's deliberately undefined pass-through operand as maybe-uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void adamRangeAvx512(float* p, const float* g, float* m, float* v, int64_t n,
                                                         const AdamScalars& s)
{
    adamRange<Float16>(
        p, g, m, v, n, s,
        [](Float16 a, Float16 b, Float16 c) __attribute__((target("avx512f"))) {
            return reinterpret_cast<Float16>(_mm512_fmadd_ps(reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b),
                                                             reinterpret_cast<__m512>(c)));
        },
        [](Float16 x) __attribute__((target("avx512f"))) {
            return reinterpret_cast<Float16>(_mm512_sqrt_ps(reinterpret_cast<__m512>(x)));
        });
}
#pragma GCC diagnostic pop

__attribute__((target("avx2,fma"))) void adamRangeAvx2(float* p, const float* g, float* m, float* v, int64_t n,
                                                        const AdamScalars& s)
{
    adamRange<Float8>(
        p, g, m, v, n, s,
        [](Float8 a, Float8 b, Float8 c) __attribute__((target("avx2,fma"))) {
            return reinterpret_cast<Float8>(_mm256_fmadd_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b),
                                                            reinterpret_cast<__m256>(c)));
        },
        [](Float8 x) __attribute__((target("avx2,fma"))) {
            return reinterpret_cast<Float8>(_mm256_sqrt_ps(reinterpret_cast<__m256>(x)));
        });
}

bool cpuHasAvx512()
{
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

// LibTorch 1.13's per-parameter Adam/AdamW step with its own operations (AMSGrad, parameters the fused update
// does not apply to). `decoupled`: AdamW.
void stepWithAtenOps(torch::Tensor& p, torch::Tensor grad, torch::optim::OptimizerParamState& base, double lr,
                     double beta1, double beta2, double eps, double weightDecay, bool amsgrad, bool decoupled,
                     int64_t step)
{
    torch::Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
    if (decoupled) {
        auto& st = static_cast<torch::optim::AdamWParamState&>(base);
        exp_avg = st.exp_avg();
        exp_avg_sq = st.exp_avg_sq();
        max_exp_avg_sq = st.max_exp_avg_sq();
    } else {
        auto& st = static_cast<torch::optim::AdamParamState&>(base);
        exp_avg = st.exp_avg();
        exp_avg_sq = st.exp_avg_sq();
        max_exp_avg_sq = st.max_exp_avg_sq();
    }
    const double biasCorrection1 = 1 - std::pow(beta1, double(step));
    const double biasCorrection2 = 1 - std::pow(beta2, double(step));
    if (!decoupled && weightDecay != 0)
        grad = grad.add(p, weightDecay);
    exp_avg.mul_(beta1).add_(grad, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    torch::Tensor denom;
    if (amsgrad) {
        torch::max_out(max_exp_avg_sq, exp_avg_sq, max_exp_avg_sq);
        denom = (max_exp_avg_sq.sqrt() / std::sqrt(biasCorrection2)).add_(eps);
    } else {
        denom = (exp_avg_sq.sqrt() / std::sqrt(biasCorrection2)).add_(eps);
    }
    p.addcdiv_(exp_avg, denom, -(lr / biasCorrection1));
}

// The step of Adam (decoupled = false) or AdamW over `groups`, with `state` keyed as LibTorch keys it.
template <class ParamState, class Options>
void fusedStep(std::vector<torch::optim::OptimizerParamGroup>& groups, torch::optim::Optimizer& optimizer,
               bool decoupled)
{
    torch::NoGradGuard noGrad;
    auto& state = optimizer.state();
    for (auto& group : groups) {
        const auto& o = static_cast<const Options&>(group.options());
        const double lr = o.lr(), eps = o.eps(), weightDecay = o.weight_decay();
        const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
        for (auto& p : group.params()) {
            if (!p.grad().defined())
                continue;
            const torch::Tensor& grad = p.grad();
            TORCH_CHECK(!grad.is_sparse(), decoupled ? "AdamW" : "Adam", " does not support sparse gradients");
            // AdamW decays the parameter before its state exists (LibTorch's order; it does not matter).
            const bool fused = !o.amsgrad() && fusedAdamApplies(p);
            if (decoupled && weightDecay != 0 && !fused)
                p.mul_(1 - lr * weightDecay);
            const auto key = optimizerStateKey(p);
            auto it = state.find(key);
            if (it == state.end()) {
                auto fresh = std::make_unique<ParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                if (o.amsgrad())
                    fresh->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                it = state.emplace(key, std::move(fresh)).first;
            }
            auto& st = static_cast<ParamState&>(*it->second);
            st.step(st.step() + 1);
            const int64_t step = st.step();
            torch::Tensor& m = st.exp_avg();
            torch::Tensor& v = st.exp_avg_sq();
            if (!fused || !m.is_contiguous() || !v.is_contiguous() || m.scalar_type() != torch::kFloat
                || v.scalar_type() != torch::kFloat || m.numel() != p.numel() || v.numel() != p.numel()) {
                if (fused && decoupled && weightDecay != 0)
                    p.mul_(1 - lr * weightDecay);
                stepWithAtenOps(p, grad, st, lr, beta1, beta2, eps, weightDecay, o.amsgrad(), decoupled, step);
                continue;
            }
            AdamScalars s;
            s.beta1 = float(beta1);
            s.one_minus_beta1 = float(1 - beta1);
            s.beta2 = float(beta2);
            s.one_minus_beta2 = float(1 - beta2);
            s.sqrt_bias_correction2 = float(std::sqrt(1 - std::pow(beta2, double(step))));
            s.eps = float(eps);
            s.neg_step_size = float(-(lr / (1 - std::pow(beta1, double(step)))));
            if (decoupled)
                s.decay_factor = weightDecay != 0 ? float(1 - lr * weightDecay) : 1.0f;
            else
                s.weight_decay = float(weightDecay);
            adamUpdateLikeAten(p.data_ptr<float>(), grad.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(),
                               p.numel(), s);
            // In-place writes, as LibTorch's operations count them for autograd's checks.
            p.unsafeGetTensorImpl()->bump_version();
            m.unsafeGetTensorImpl()->bump_version();
            v.unsafeGetTensorImpl()->bump_version();
        }
    }
}

} // namespace

void adamUpdateLikeAten(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s)
{
    const bool wide = cpuHasAvx512() && atenFloatVectorWidth() == 16;
    at::parallel_for(0, n, 32768, [&](int64_t begin, int64_t end) {
        if (wide)
            adamRangeAvx512(p + begin, g + begin, m + begin, v + begin, end - begin, s);
        else
            adamRangeAvx2(p + begin, g + begin, m + begin, v + begin, end - begin, s);
    });
}

bool fusedAdamApplies(const torch::Tensor& p)
{
    const torch::Tensor& g = p.grad();
    return atenFloatVectorWidth() != 0 && p.device().is_cpu() && p.scalar_type() == torch::kFloat
           && p.is_contiguous() && g.defined() && g.device().is_cpu() && g.scalar_type() == torch::kFloat
           && g.is_contiguous() && !g.is_sparse() && g.sizes() == p.sizes() && !g.is_same(p);
}

torch::Tensor FusedAdam::step(LossClosure closure)
{
    torch::Tensor loss;
    if (closure) {
        at::AutoGradMode enable(true);
        loss = closure();
    }
    fusedStep<torch::optim::AdamParamState, torch::optim::AdamOptions>(param_groups_, *this, false);
    return loss;
}

torch::Tensor FusedAdamW::step(LossClosure closure)
{
    torch::Tensor loss;
    if (closure) {
        at::AutoGradMode enable(true);
        loss = closure();
    }
    fusedStep<torch::optim::AdamWParamState, torch::optim::AdamWOptions>(param_groups_, *this, true);
    return loss;
}

} // namespace icl
