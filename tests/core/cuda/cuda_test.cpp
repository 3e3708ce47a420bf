// The CUDA path, checked against the CPU. Built everywhere, run only where a CUDA device is present:
// `scripts/check-cuda.sh` (see README, "Train on a GPU"). It is not part of ctest, because CI has no GPU;
// on a machine without CUDA its main() fails at once instead of passing vacuously.
//
// Every expected value is a CPU computation of the same thing: the same weights and prompts through the
// CPU forward pass, the same config trained on the CPU, or a CPU re-evaluation of what the GPU stored.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/analysis/icl_iwl.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/model.h"
#include "core/models/sequence_classifier.h"
#include "core/tasks/fewshot_classification.h"
#include "core/tasks/linear_regression.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "core/runtime/device.h"
#include "core/tasks/seeds.h"
#include "core/training/trainer.h"
#include "tests/support/scratch.h"
#include "tests/support/core_checks.h"

namespace fs = std::filesystem;

namespace {
using icl::test::maxAbsDiff;

const torch::Device kCuda(torch::kCUDA, 0);

nlohmann::json presetConfig(const std::string& preset, std::vector<std::string> sets)
{
    icl::ConfigRequest r;
    r.preset = preset;
    r.sets = std::move(sets);
    return icl::resolveConfig(r);
}

double maxAbs(const torch::Tensor& a) { return a.to(torch::kCPU, torch::kFloat64).abs().max().item<double>(); }

/// Half mean squared error of the model's query predictions, in float64, on the CPU (independent of the
/// trainer's own evaluation code).
double cpuEvalLoss(const icl::ModelHandle& model, const icl::PromptBatch& eval)
{
    torch::NoGradGuard guard;
    model.module->eval();
    const torch::Tensor err = (model.predict(eval) - eval.queryY()).to(torch::kFloat64);
    return 0.5 * err.pow(2).mean().item<double>();
}

} // namespace

TEST(CudaDevice, AutoAndCudaResolveToTheGpuAndAMissingIndexIsAnError)
{
    EXPECT_EQ(icl::resolveDeviceName("auto"), "cuda:0");
    EXPECT_EQ(icl::resolveDeviceName("cuda"), "cuda:0");
    EXPECT_EQ(icl::resolveDeviceName("cpu"), "cpu");
    const std::string missing = "cuda:" + std::to_string(torch::cuda::device_count());
    icl::test::expectError([&] { icl::resolveDeviceName(missing); }, "CUDA device(s) present");
}

// Every regression model kind: the same weights and prompts give the same query predictions on the GPU as
// on the CPU (float32; TF32 matrix products are off by default in LibTorch, so the tolerance is float32's).
TEST(CudaModels, RegressionForwardMatchesTheCpu)
{
    for (const char* preset : {"vonoswald-lsa-1layer", "vonoswald-lsa-multilayer", "vonoswald-gdpp",
                               "vonoswald-interleaved-copy", "vonoswald-sine", "garg-linear-regression",
                               "guo-representation", "renliu-kernel", "renliu-augmented", "renliu-negative-samples",
                               "renliu-regularized"}) {
        SCOPED_TRACE(preset);
        const icl::ExperimentConfig cfg = icl::parseConfig(presetConfig(preset, {}));
        icl::ModelHandle model = icl::makeModel(cfg, icl::seeds::init(cfg.seed));
        model.module->eval();
        const icl::PromptBatch prompts = icl::samplePrompts(cfg.task, 64, 7);
        torch::NoGradGuard guard;
        const torch::Tensor cpu = model.predict(prompts);
        model.module->to(kCuda);
        const torch::Tensor gpu = model.predict(prompts.to(kCuda));
        EXPECT_TRUE(gpu.is_cuda());
        EXPECT_LE(maxAbsDiff(gpu, cpu), 1e-4 * (1.0 + maxAbs(cpu)));
    }
}

// The few-shot classifiers: GPT-2 with the linear encoder, LSTM and RNN (cuDNN kernels on the GPU).
TEST(CudaModels, ClassifierLogitsMatchTheCpu)
{
    for (const char* kind : {"gpt2", "lstm", "rnn"}) {
        SCOPED_TRACE(kind);
        const icl::ExperimentConfig cfg = icl::parseConfig(
            presetConfig("chan-bursty", {"task.n_classes=200", "model.n_layers=2", "model.kind=" + std::string(kind)}));
        const icl::FewShotClassification task(icl::fewShotOptions(cfg.task, cfg.seed));
        icl::SequenceClassifier model = icl::makeSequenceClassifier(cfg, task.exemplarShape(), 3);
        model->eval();
        const icl::FewShotBatch batch = task.sampleTraining(32, 11, torch::kFloat32, torch::kCPU);
        torch::NoGradGuard guard;
        const torch::Tensor cpu = model->forward(batch);
        model->to(kCuda);
        const icl::FewShotBatch gpuBatch = task.sampleTraining(32, 11, torch::kFloat32, kCuda);
        EXPECT_EQ(maxAbsDiff(gpuBatch.exemplars, batch.exemplars), 0.0);  // sampled on the CPU, then moved
        const torch::Tensor gpu = model->forward(gpuBatch);
        EXPECT_TRUE(gpu.is_cuda());
        EXPECT_LE(maxAbsDiff(gpu, cpu), 1e-4 * (1.0 + maxAbs(cpu)));
    }
}

// Chan et al.'s ResNet exemplar encoder in eval mode (running batch-norm statistics). cuDNN may run the
// convolutions in TF32 (LibTorch's default for convolutions), hence a tolerance of TF32's 10-bit mantissa.
TEST(CudaModels, ResNetEncoderMatchesTheCpu)
{
    torch::manual_seed(5);
    icl::ResNetEncoder encoder(64);
    encoder->eval();
    const torch::Tensor images = torch::rand({16, 1, 28, 28});
    torch::NoGradGuard guard;
    const torch::Tensor cpu = encoder->forward(images);
    encoder->to(kCuda);
    const torch::Tensor gpu = encoder->forward(images.to(kCuda));
    EXPECT_LE(maxAbsDiff(gpu, cpu), 1e-2 * (1.0 + maxAbs(cpu)));
}

// Training on the GPU: the run says where it ran, starts from exactly the CPU run's state (same step-0 eval
// loss), learns as much as the CPU run, and what it stores is what a CPU re-evaluation of its checkpoint gives.
TEST(CudaTraining, LinearRegressionOnTheGpuMatchesTheCpuRun)
{
    const std::vector<std::string> sets = {"task.d=5",
                                           "task.n_context=5",
                                           "training.batch_size=256",
                                           "training.steps=300",
                                           "training.lr=0.003",
                                           "training.eval_every=50",
                                           "training.checkpoint_every=100",
                                           "eval.n_prompts=1000"};
    auto withDevice = [&](const std::string& device) {
        std::vector<std::string> s = sets;
        s.push_back("device=" + device);
        return presetConfig(icl::kDefaultPreset, s);
    };
    const std::string gpuPath = icl::test::freshScratchFile("cuda_lr_gpu.h5"), cpuPath = icl::test::freshScratchFile("cuda_lr_cpu.h5");
    const icl::TrainResult gpu = icl::train(withDevice("cuda"), icl::test::cpuTrainOptions(gpuPath), {});
    const icl::TrainResult cpu = icl::train(withDevice("cpu"), icl::test::cpuTrainOptions(cpuPath), {});
    EXPECT_EQ(gpu.device, "cuda:0");
    EXPECT_EQ(cpu.device, "cpu");

    const auto g = icl::readRunSummary(gpuPath), c = icl::readRunSummary(cpuPath);
    const auto& ge = g.metrics.at("eval_loss");
    const auto& ce = c.metrics.at("eval_loss");
    ASSERT_EQ(ge.size(), ce.size());
    EXPECT_NEAR(ge.front(), ce.front(), 1e-5 * ce.front());  // same initial weights and eval prompts
    EXPECT_LT(ge.back(), 0.75 * ge.front());
    EXPECT_NEAR(ge.back(), ce.back(), 0.05 * ce.back());      // float32 rounding differs, the learning does not
    EXPECT_EQ(g.lastMetric("baseline/gd_1"), c.lastMetric("baseline/gd_1"));  // baselines run on the CPU

    // The GPU's stored loss, recomputed on the CPU from the stored checkpoint.
    const icl::ExperimentConfig cfg = icl::parseConfig(withDevice("cuda"));
    icl::ModelHandle model = icl::makeModel(cfg, icl::seeds::init(cfg.seed));
    icl::loadParams(*model.module, icl::readCheckpoint(gpuPath, 300).params, gpuPath);
    const icl::PromptBatch eval = icl::samplePrompts(cfg.task, cfg.eval.n_prompts, icl::seeds::eval(cfg.seed));
    EXPECT_NEAR(cpuEvalLoss(model, eval), ge.back(), 1e-4 * ge.back());
}

// A run interrupted on the GPU and resumed there ends where the uninterrupted GPU run ends.
TEST(CudaTraining, ResumeOnTheGpuContinuesTheRun)
{
    const std::vector<std::string> sets = {"task.d=5",       "task.n_context=5",       "training.batch_size=128",
                                           "training.steps=200", "training.eval_every=50", "training.checkpoint_every=100",
                                           "eval.n_prompts=500",  "device=cuda"};
    const std::string whole = icl::test::freshScratchFile("cuda_resume_whole.h5"), parts = icl::test::freshScratchFile("cuda_resume_parts.h5");
    icl::train(presetConfig(icl::kDefaultPreset, sets), icl::test::cpuTrainOptions(whole), {});
    icl::train(presetConfig(icl::kDefaultPreset, sets), icl::test::cpuTrainOptions(parts),
               [](const icl::TrainProgress& p) { return p.step < 100; });
    icl::TrainOptions resume = icl::test::cpuTrainOptions(parts);
    resume.resume = true;
    const icl::TrainResult r = icl::train(nlohmann::json(), resume, {});
    EXPECT_EQ(r.final_step, 200);
    EXPECT_EQ(r.device, "cuda:0");
    const auto a = icl::readRunSummary(whole).metrics.at("eval_loss");
    const auto b = icl::readRunSummary(parts).metrics.at("eval_loss");
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], 1e-6 * a[i]) << "eval " << i;
    std::cout << "[ cuda     ] resume " << (a == b ? "is" : "is not") << " bitwise identical on this GPU\n";
}

// NaN/Inf on the GPU stops training with a message and leaves the last checkpoint readable.
TEST(CudaTraining, DivergenceStopsWithAMessage)
{
    const std::string path = icl::test::freshScratchFile("cuda_diverge.h5");
    const auto config = presetConfig(icl::kDefaultPreset, {"task.d=5", "task.n_context=5", "training.lr=1e12",
                                                            "training.steps=200", "training.grad_clip=0",
                                                            "training.checkpoint_every=1000", "device=cuda"});
    try {
        icl::train(config, icl::test::cpuTrainOptions(path), {});
        FAIL() << "a learning rate of 1e12 trained without diverging";
    } catch (const icl::Error& e) {
        const std::string what = e.what();
        EXPECT_TRUE(what.find("NaN") != std::string::npos || what.find("Inf") != std::string::npos
                    || what.find("diverg") != std::string::npos)
            << what;
    }
    const auto s = icl::readRunSummary(path);
    ASSERT_FALSE(s.checkpoints.empty());
    EXPECT_NO_THROW(icl::readCheckpoint(path, s.checkpoints.back().step));
}

// Few-shot classification on the GPU: step-0 evaluation equals the CPU run's (same weights, same
// sequences), and the ICL/IWL analysis, which runs on the CPU, reproduces the metrics the GPU stored.
TEST(CudaTraining, FewShotClassificationOnTheGpu)
{
    for (const char* kind : {"gpt2", "lstm"}) {
        SCOPED_TRACE(kind);
        auto config = [&](const std::string& device) {
            return presetConfig("chan-bursty", {"task.n_classes=200", "model.n_layers=1", "model.kind=" + std::string(kind),
                                                "training.steps=60", "training.eval_every=30",
                                                "training.checkpoint_every=30", "eval.n_prompts=256",
                                                "device=" + device});
        };
        const std::string gpuPath = icl::test::freshScratchFile(std::string("cuda_fewshot_gpu_") + kind + ".h5");
        const std::string cpuPath = icl::test::freshScratchFile(std::string("cuda_fewshot_cpu_") + kind + ".h5");
        EXPECT_EQ(icl::train(config("cuda"), icl::test::cpuTrainOptions(gpuPath), {}).device, "cuda:0");
        icl::train(config("cpu"), icl::test::cpuTrainOptions(cpuPath), {});
        const auto g = icl::readRunSummary(gpuPath), c = icl::readRunSummary(cpuPath);
        const double g0 = g.metrics.at("eval_loss").front(), c0 = c.metrics.at("eval_loss").front();
        EXPECT_NEAR(g0, c0, 1e-4 * c0);
        for (const char* m : {"icl_accuracy", "iwl_accuracy", "eval_loss"})
            for (double v : g.metrics.at(m))
                EXPECT_TRUE(std::isfinite(v)) << m;

        icl::IclIwlOptions o;  // seed 0: the run's own evaluation sequences
        const icl::IclIwlResult r = icl::computeIclIwl(gpuPath, o);
        EXPECT_EQ(r.checkpoint_step, 60);
        // Accuracies are counts over 256 sequences; float32 rounding on two devices may flip a near tie.
        EXPECT_NEAR(r.icl_accuracy, g.lastMetric("icl_accuracy"), 2.0 / 256);
        EXPECT_NEAR(r.iwl_accuracy, g.lastMetric("iwl_accuracy"), 2.0 / 256);
    }
}

int main(int argc, char** argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    if (!torch::cuda::is_available()) {
        std::cerr << "cuda_tests: no CUDA device here (torch::cuda::is_available() is false). This suite checks the "
                     "CUDA path; run it on a machine with a GPU and a CUDA LibTorch (scripts/check-cuda.sh).\n";
        return 2;
    }
    torch::set_num_threads(4);
    return RUN_ALL_TESTS();
}
