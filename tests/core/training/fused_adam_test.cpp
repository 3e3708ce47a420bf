// The one-pass Adam and AdamW steps (core/training/fused_adam.h) against LibTorch's torch::optim::Adam and AdamW,
// which are the reference: the same parameters, moments and step counts, bit for bit, after many steps.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "core/runtime/cpu_kernels.h"
#include "core/training/fused_adam.h"
#include "core/training/optim.h"

namespace {

// Parameters of the sizes a model has (vectors, matrices) and of sizes that end in a partial vector (1, 7, 37),
// beside one above LibTorch's parallel grain (32,768) with an odd length, so that on 2 threads its chunks end in
// partial vectors too.
std::vector<torch::Tensor> makeParams(torch::Dtype dtype = torch::kFloat)
{
    torch::manual_seed(11);
    std::vector<torch::Tensor> ps;
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{1}, {7}, {37}, {256}, {64, 48}, {3, 5, 7}, {70001}})
        ps.push_back((torch::randn(shape, torch::TensorOptions().dtype(dtype)) * 0.1).requires_grad_());
    return ps;
}

std::vector<torch::Tensor> copyOf(const std::vector<torch::Tensor>& ps)
{
    std::vector<torch::Tensor> out;
    for (const auto& p : ps)
        out.push_back(p.detach().clone().requires_grad_());
    return out;
}

// Gradients of step k, the same for both parameter sets: a spread of magnitudes, some exact zeros, a sign
// change pattern, so that moments grow and shrink.
void setGrads(std::vector<torch::Tensor>& a, std::vector<torch::Tensor>& b, int k)
{
    for (size_t i = 0; i < a.size(); ++i) {
        torch::Tensor g = torch::randn(a[i].sizes(), a[i].options().requires_grad(false))
                          * std::pow(10.0, double(k % 5) - 4.0);
        g.masked_fill_(torch::rand(a[i].sizes()) < 0.05, 0.0);
        a[i].mutable_grad() = g.clone();
        b[i].mutable_grad() = g.clone();
    }
}

// The differences between two optimisers' parameters, step counts and moments ("" when every one is bitwise equal).
template <class State>
std::string differences(torch::optim::Optimizer& ours, const std::vector<torch::Tensor>& pOurs,
                        torch::optim::Optimizer& ref, const std::vector<torch::Tensor>& pRef)
{
    std::string out;
    for (size_t i = 0; i < pOurs.size(); ++i) {
        const std::string at = " of parameter " + std::to_string(i) + "; ";
        if (!torch::equal(pOurs[i], pRef[i]))
            out += "value" + at;
        auto& so = static_cast<State&>(*ours.state().at(icl::optimizerStateKey(pOurs[i])));
        auto& sr = static_cast<State&>(*ref.state().at(icl::optimizerStateKey(pRef[i])));
        if (so.step() != sr.step())
            out += "step" + at;
        if (!torch::equal(so.exp_avg(), sr.exp_avg()))
            out += "exp_avg" + at;
        if (!torch::equal(so.exp_avg_sq(), sr.exp_avg_sq()))
            out += "exp_avg_sq" + at;
    }
    return out;
}

struct ThreadsGuard {
    int saved = torch::get_num_threads();
    ~ThreadsGuard() { torch::set_num_threads(saved); }
};

// `steps` steps of our optimiser (Ours) and LibTorch's (Ref), both built with options(weight decay), on the same
// parameters and gradients, on 1 and 2 threads and for each weight decay of `decays`: every parameter, step count
// and moment must end bitwise equal. Every step must take the one-pass update wherever ATen's float kernels are
// vectorised (every x86-64 CPU with AVX2), which is what these tests are for. At step `lrChange` (none when < 0)
// both switch to learning rate 1e-4, as a schedule does between steps. `what` starts the failure message.
template <class Ours, class Ref, class State, class MakeOptions>
void expectSameBitsAsLibTorch(const std::string& what, std::initializer_list<double> decays, MakeOptions options,
                              int steps, int lrChange)
{
    ThreadsGuard guard;
    for (int threads : {1, 2})
        for (double weightDecay : decays) {
            torch::set_num_threads(threads);
            auto pOurs = makeParams(), pRef = copyOf(pOurs);
            Ours ours(pOurs, options(weightDecay));
            Ref ref(pRef, options(weightDecay));
            for (int k = 0; k < steps; ++k) {
                setGrads(pOurs, pRef, k);
                for (const auto& p : pOurs)
                    ASSERT_EQ(icl::fusedAdamApplies(p), icl::atenFloatVectorWidth() != 0);
                if (k == lrChange) {
                    icl::setLearningRate(ours, 1e-4);
                    icl::setLearningRate(ref, 1e-4);
                }
                ours.step();
                ref.step();
            }
            EXPECT_EQ((differences<State>(ours, pOurs, ref, pRef)), "")
                << what << threads << " threads, weight decay " << weightDecay;
        }
}

TEST(FusedAdam, SameBitsAsTorchAdamOnOneAndTwoThreads)
{
    // The learning rate changes after 20 of the 40 steps.
    expectSameBitsAsLibTorch<icl::FusedAdam, torch::optim::Adam, torch::optim::AdamParamState>(
        "", {0.0, 0.01},
        [](double weightDecay) {
            return torch::optim::AdamOptions(3e-3).betas({0.9, 0.999}).weight_decay(weightDecay);
        },
        40, 20);
}

TEST(FusedAdam, AppliesToContiguousFloatCpuParametersWithVectorisedAten)
{
    torch::Tensor p = torch::zeros({4, 3}).requires_grad_();
    EXPECT_FALSE(icl::fusedAdamApplies(p));  // no gradient yet
    p.mutable_grad() = torch::ones({4, 3});
    EXPECT_EQ(icl::fusedAdamApplies(p), icl::atenFloatVectorWidth() != 0);
    p.mutable_grad() = torch::ones({3, 4}).t();  // a non-contiguous gradient
    EXPECT_FALSE(icl::fusedAdamApplies(p));
    torch::Tensor d = torch::zeros({4}, torch::kDouble).requires_grad_();
    d.mutable_grad() = torch::ones({4}, torch::kDouble);
    EXPECT_FALSE(icl::fusedAdamApplies(d));
}

TEST(FusedAdamW, SameBitsAsTorchAdamW)
{
    expectSameBitsAsLibTorch<icl::FusedAdamW, torch::optim::AdamW, torch::optim::AdamWParamState>(
        "AdamW, ", {0.0, 0.05},
        [](double weightDecay) {
            return torch::optim::AdamWOptions(1e-3).betas({0.9, 0.98}).weight_decay(weightDecay);
        },
        30, -1);
}

// What the one-pass update does not cover runs LibTorch's operations: AMSGrad, float64, non-contiguous gradients,
// and parameters without a gradient (skipped, no state), all with torch::optim::Adam's numbers.
TEST(FusedAdam, FallsBackToLibTorchOperationsWithTheSameNumbers)
{
    for (bool amsgrad : {false, true})
        for (torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
            auto pOurs = makeParams(dtype), pRef = copyOf(pOurs);
            const auto opts = torch::optim::AdamOptions(1e-3).amsgrad(amsgrad);
            icl::FusedAdam ours(pOurs, opts);
            torch::optim::Adam ref(pRef, opts);
            for (int k = 0; k < 12; ++k) {
                setGrads(pOurs, pRef, k);
                // Parameter 4's gradient as a transposed (non-contiguous) view of the same values.
                pOurs[4].mutable_grad() = pOurs[4].grad().t().contiguous().t();
                ours.step();
                ref.step();
            }
            EXPECT_EQ((differences<torch::optim::AdamParamState>(ours, pOurs, ref, pRef)), "")
                << (amsgrad ? "AMSGrad " : "") << (dtype == torch::kFloat ? "float" : "double");
        }
    torch::Tensor unused = torch::ones({3}).requires_grad_();
    icl::FusedAdam opt(std::vector<torch::Tensor>{unused}, torch::optim::AdamOptions(1e-3));
    opt.step();
    EXPECT_TRUE(torch::equal(unused, torch::ones({3})));
    EXPECT_TRUE(opt.state().empty());
}

// The optimiser the trainer makes for "adam" / "adamw" is the one-pass one, and a torch::optim::Adam to the
// checkpoint code (which reads its state through that type).
TEST(FusedAdam, IsWhatTheTrainerUses)
{
    icl::TrainingConfig t;
    t.optimizer = "adam";
    auto adam = icl::makeOptimizer(t, {torch::zeros({2}).requires_grad_()});
    EXPECT_NE(dynamic_cast<icl::FusedAdam*>(adam.get()), nullptr);
    EXPECT_NE(dynamic_cast<torch::optim::Adam*>(adam.get()), nullptr);
    t.optimizer = "adamw";
    auto adamw = icl::makeOptimizer(t, {torch::zeros({2}).requires_grad_()});
    EXPECT_NE(dynamic_cast<icl::FusedAdamW*>(adamw.get()), nullptr);
}

} // namespace
