#pragma once
// Training facade (torch-free header). The loop itself lives in trainer.cpp.
//
// Intended usage (from a worker thread; the callback runs on that thread):
//   TrainOptions opt;  opt.out_path = "run.h5";
//   TrainResult r = train(resolveConfig(req), opt, [&](const TrainProgress& p) { return !stop; });

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/runtime/device_name.h"  // resolveDeviceName, for the callers of train()
#include "core/types/train_progress.h"

namespace icl {

/// How to run train(): output file, resume, threads.
struct TrainOptions {
    std::string out_path;    ///< experiment file to create (or to continue with `resume`)
    bool resume = false;     ///< continue from the last checkpoint of out_path (config taken from the file; a file
                             ///< stopped before its first checkpoint starts again from that config)
    bool force = false;      ///< overwrite an existing out_path
    /// LibTorch intra-op threads; 0 = hardware concurrency. With training.shards > 1 on the CPU: the worker
    /// threads the shards run on, one intra-op thread each (core/training/sharded_step.h).
    int threads = 0;
    int64_t steps = 0;       ///< with resume: new total number of steps (0 = keep the file's)
    /// Optimizer state is kept only at the last checkpoint (what resume needs) and, when > 0, at checkpoints whose
    /// step is a multiple of this.
    int64_t keep_optimizer_every = 0;
    /// Train LSA models whose layers are all linear with the closed-form fused step (core/models/lsa_fused.h,
    /// docs/fused-lsa.md) instead of autograd; models it does not cover always use autograd. Same losses and
    /// gradients up to float rounding.
    bool fused = true;
};

/// Return false to stop training; the run then commits a final checkpoint and returns.
using TrainCallback = std::function<bool(const TrainProgress&)>;

/// What train() ended with: final step, whether it was stopped, final eval and baseline losses.
struct TrainResult {
    int64_t final_step = 0;
    bool stopped = false;                     ///< the callback asked to stop
    double eval_loss = 0.0;                   ///< model loss on the eval prompts at final_step
    std::map<std::string, double> baselines;  ///< baseline losses on the same prompts
    std::string device;                       ///< device actually used ("cpu", "cuda:0")
};

/// Trains the model of `config` (a resolved config, see resolveConfig) and writes the experiment
/// file. Training batch s is samplePrompts(trainingTask(config, s), batch_size, seeds::train(seed, s)):
/// with training.curriculum on, its size follows curriculumStage (Garg et al. 2022) and the metrics
/// gain "curriculum/dims" and "curriculum/points" (of the latest batch); evaluation prompts and
/// baselines always use the full task. Throws icl::Error for bad config, an existing file without
/// force/resume, a damaged file on resume, or divergence (NaN/Inf loss or gradient: the last
/// checkpoint stays intact).
/// Thread affinity: call from a worker thread; the callback runs on that same thread.
TrainResult train(const nlohmann::json& config, const TrainOptions& options, const TrainCallback& callback);

/// Sets LibTorch's intra-op threads: `threads` when > 0, else the hardware concurrency (also declared in
/// core/runtime/device.h; here for torch-free callers such as the CLI's analyses).
void configureThreads(int threads);

} // namespace icl
