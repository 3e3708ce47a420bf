#include "core/analysis/pasting.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/analysis/run_loader.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/experiment_file.h"
#include "core/models/gpt2.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"
#include "core/training/checkpoint.h"
#include "core/runtime/device.h"
#include "core/training/fused_adam.h"
#include "core/training/optim.h"

namespace icl {

namespace {

// Seed streams of the pasting experiment (training batch t uses mixSeed(seed, t)).
constexpr uint64_t kStreamBase = uint64_t(1) << 52;
constexpr uint64_t kInitStream = kStreamBase + 1;
constexpr uint64_t kEvalStream = kStreamBase + 2;
constexpr uint64_t kMatchStream = kStreamBase + 3;

std::map<std::string, torch::Tensor> paramMap(torch::nn::Module& m)
{
    std::map<std::string, torch::Tensor> out;
    for (const auto& p : m.named_parameters())
        out[p.key()] = p.value();
    return out;
}

/// Name of the pasted model's parameter that holds parent parameter `name` (blocks renumbered), or ""
/// for a parameter of the parent that is dropped (its embedding and blocks below ℓ).
std::string pastedName(const std::string& name, int64_t cut, int64_t offset)
{
    if (name.rfind("ln_final.", 0) == 0 || name.rfind("read_out.", 0) == 0)
        return name;
    if (name.rfind("blocks.", 0) == 0) {
        const size_t dot = name.find('.', 7);
        const int64_t l = std::stoll(name.substr(7, dot - 7));
        if (l < cut)
            return "";
        return "blocks." + std::to_string(l - cut + offset) + name.substr(dot);
    }
    return "";
}

int64_t countTrainable(torch::nn::Module& m)
{
    int64_t n = 0;
    for (const auto& p : m.parameters())
        if (p.requires_grad())
            n += p.numel();
    return n;
}

double queryLoss(Gpt2Impl& m, const PromptBatch& p)
{
    torch::NoGradGuard guard;
    return halfMse(m.predict(p).to(torch::kFloat64), p.queryY().to(torch::kFloat64)).item<double>();
}

/// 0.5·MSE of the prediction of y_{n+1} from the first n examples, n = 0..N.
std::vector<double> modelCurve(Gpt2Impl& m, const PromptBatch& p)
{
    torch::NoGradGuard guard;
    const torch::Tensor all = m.predictAll(p).to(torch::kFloat64);  // [B, N+1]
    const torch::Tensor err = 0.5 * (all - p.y.to(torch::kFloat64)).pow(2).mean(0);
    std::vector<double> out(err.size(0));
    for (int64_t i = 0; i < err.size(0); ++i)
        out[i] = err[i].item<double>();
    return out;
}

std::vector<double> ridgeCurve(const PromptBatch& p, double lambda)
{
    const int64_t N = p.nContext();
    std::vector<double> out;
    for (int64_t n = 0; n <= N; ++n) {
        const PromptBatch q{p.x.narrow(1, 0, n + 1), p.y.narrow(1, 0, n + 1), p.w};
        const torch::Tensor pred = n == 0 ? torch::zeros({p.batchSize()}, torch::kFloat64)
                                          : predictRidge(q, lambda).to(torch::kFloat64);
        out.push_back(halfMse(pred, q.queryY().to(torch::kFloat64)).item<double>());
    }
    return out;
}

/// E‖x‖² and E‖Φ*(x)‖² (a mixture's averaged over its representations) over every position of `n_prompts`
/// prompts of `task`; throws icl::Error when either is 0.
std::pair<double, double> squaredNorms(const TaskConfig& task, int64_t n_prompts, uint64_t seed)
{
    const PromptBatch p = samplePrompts(task, n_prompts, seed, torch::kFloat64);
    const torch::Tensor x = p.x.reshape({-1, p.x.size(-1)});  // [B·(N+1), d]
    const double xSq = x.pow(2).sum(-1).mean().item<double>();
    double phiSq = 0.0;
    const std::vector<Representation>& reps = taskRepresentations(task);
    for (const Representation& r : reps)
        phiSq += r(x).pow(2).sum(-1).mean().item<double>() / double(reps.size());
    if (!(xSq > 0) || !(phiSq > 0))
        throw Error("pasting: cannot match the label variance (E‖x‖² or E‖Φ*(x)‖² is 0)");
    return {xSq, phiSq};
}

bool hasRepresentation(const TaskConfig& task)
{
    return task.kind == "representation" || task.kind == "representation_mixture";
}

} // namespace

double matchedWScale(const TaskConfig& task, int64_t n_prompts, uint64_t seed)
{
    if (!hasRepresentation(task))
        return task.w_scale;
    const auto [xSq, phiSq] = squaredNorms(task, n_prompts, seed);
    return task.w_scale * std::sqrt(phiSq / xSq);
}

double matchedLabelScale(const TaskConfig& task, int64_t n_prompts, uint64_t seed)
{
    if (!hasRepresentation(task))
        return 1.0;
    const auto [xSq, phiSq] = squaredNorms(task, n_prompts, seed);
    const double tau2 = task.w_scale * task.w_scale, sigma2 = task.noise_std * task.noise_std;
    return std::sqrt((tau2 * phiSq + sigma2) / (tau2 * xSq + sigma2));
}

PastingResult computePasting(const std::string& parentPath, const PastingOptions& o,
                             const std::function<bool(int64_t, int64_t)>& progress)
{
    const auto started = std::chrono::steady_clock::now();
    if (o.embedding != "linear" && o.embedding != "transformer1")
        throw Error("pasting embedding \"" + o.embedding + "\": expected linear or transformer1");
    if (o.steps < 0)
        throw Error("pasting: steps must be >= 0, got " + std::to_string(o.steps));
    if (o.batch_size < 1 || o.n_eval < 2 || o.eval_every < 1)
        throw Error("pasting: batch size and eval period must be >= 1 and eval prompts >= 2");
    if (!(o.lr > 0) || !(o.w_scale >= 0))
        throw Error("pasting: lr must be > 0 and w_scale >= 0");
    if (o.schedule != "constant" && o.schedule != "cosine")
        throw Error("pasting schedule \"" + o.schedule + "\": expected constant or cosine");
    if (o.match_label_variance && o.w_scale > 0)
        throw Error("pasting: give either w_scale or match_label_variance, not both");
    if (o.match_label_scale && (o.w_scale > 0 || o.match_label_variance))
        throw Error("pasting: match_label_scale sets τ and σ itself; give neither w_scale nor match_label_variance");
    configureThreads(o.threads);

    LoadedRun run = loadRun(parentPath, o.checkpoint_step);
    auto parent = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module);
    if (!parent)
        throw Error(parentPath + ": pasting cuts a gpt2 model into layers; this run has model.kind "
                    + run.config.model.kind);
    const ExperimentConfig& pc = run.config;
    const int64_t L = pc.model.n_layers;
    if (o.cut_layer < 0 || o.cut_layer > L - 1)
        throw Error("pasting cut layer " + std::to_string(o.cut_layer) + ": expected 0 ≤ ℓ ≤ "
                    + std::to_string(L - 1) + " (the parent has " + std::to_string(L) + " blocks)");
    if (o.copy_parent_embedding && o.embedding == "linear" && o.cut_layer != 0)
        throw Error("pasting: copying the parent's embedding with the linear embedding needs cut layer 0");
    if (o.copy_parent_embedding && o.embedding == "transformer1" && o.cut_layer < 1)
        throw Error("pasting: copying the parent's embedding with transformer1 needs cut layer ≥ 1 (the new "
                    "block starts as the parent's block ℓ − 1)");
    if (o.zero_new_mlp && !(o.copy_parent_embedding && o.embedding == "transformer1"))
        throw Error("pasting: zeroing the new block's MLP needs the transformer1 embedding started from the parent "
                    "(--init-from-parent)");

    // Training task: plain linear regression with the parent's d, N, x distribution and σ.
    ExperimentConfig cfg = pc;
    const uint64_t seed = o.seed == 0 ? pc.seed : o.seed;
    cfg.seed = seed;
    cfg.task.kind = "linear_regression";
    cfg.task.rep_dim = 0;
    cfg.task.n_representations = 1;
    cfg.task.w_scale = o.w_scale > 0              ? o.w_scale
                       : o.match_label_variance ? matchedWScale(pc.task, o.n_eval, mixSeed(seed, kMatchStream))
                                                : pc.task.w_scale;
    if (o.match_label_scale) {
        const double c = matchedLabelScale(pc.task, o.n_eval, mixSeed(seed, kMatchStream));
        cfg.task.w_scale = c * pc.task.w_scale;
        cfg.task.noise_std = c * pc.task.noise_std;
    }
    const int64_t offset = o.embedding == "transformer1" ? 1 : 0;
    cfg.model.n_layers = L - o.cut_layer + offset;
    cfg.training.optimizer = "adam";
    cfg.training.lr = o.lr;
    cfg.training.beta1 = 0.9;
    cfg.training.beta2 = 0.999;
    cfg.training.weight_decay = 0.0;
    cfg.training.batch_size = o.batch_size;
    cfg.training.steps = o.steps;
    cfg.training.grad_clip = 0.0;
    cfg.training.schedule = o.schedule == "cosine" ? "warmup_cosine" : "constant";
    cfg.training.warmup_steps = 0;
    cfg.training.eval_every = o.eval_every;
    cfg.training.checkpoint_every = std::max<int64_t>(1, o.steps);
    cfg.training.curriculum = CurriculumConfig{};  // the pasted module trains at full size
    cfg.eval.n_prompts = o.n_eval;
    cfg.eval.baselines = {"zero", "ridge"};
    cfg.eval.ridge_lambda = -1.0;
    cfg.eval.alignment.clear();
    cfg.preset.clear();
    cfg.description = "pasted: " + o.embedding + " embedding + blocks " + std::to_string(o.cut_layer) + ".."
                      + std::to_string(L - 1) + " (frozen) of " + parentPath + " (checkpoint "
                      + std::to_string(run.step) + ")";

    Gpt2Options go = parent->options();
    go.n_layers = cfg.model.n_layers;
    const uint64_t initSeed = mixSeed(seed, kInitStream);
    Gpt2 pasted(go, initSeed);
    Gpt2 scratch(go, initSeed);  // same initialisation; every parameter trainable

    // Paste: copy the parent's upper blocks, ln_final and read_out, and freeze them.
    auto parentParams = paramMap(*parent);
    auto pastedParams = paramMap(*pasted);
    std::map<std::string, std::string> frozen;  // pasted name -> parent name
    {
        torch::NoGradGuard guard;
        for (const auto& [name, t] : parentParams) {
            std::string target = pastedName(name, o.cut_layer, offset);
            if (o.copy_parent_embedding && (name.rfind("read_in.", 0) == 0 || name == "pos_embed")) {
                pastedParams.at(name).copy_(t);  // copied but trainable
                continue;
            }
            const std::string newBlock = "blocks." + std::to_string(o.cut_layer - 1) + ".";
            if (o.copy_parent_embedding && offset == 1 && name.rfind(newBlock, 0) == 0) {
                pastedParams.at("blocks.0." + name.substr(newBlock.size())).copy_(t);  // copied but trainable
                continue;
            }
            if (target.empty())
                continue;
            torch::Tensor& dst = pastedParams.at(target);
            if (dst.sizes() != t.sizes())
                throw Error("pasting: parameter " + name + " does not fit " + target);
            dst.copy_(t);
            dst.set_requires_grad(false);
            frozen[target] = name;
        }
        if (o.zero_new_mlp) {
            pastedParams.at("blocks.0.mlp.W_out").zero_();
            pastedParams.at("blocks.0.mlp.b_out").zero_();
        }
    }
    std::vector<torch::Tensor> trainable;
    for (auto& p : pasted->parameters())
        if (p.requires_grad())
            trainable.push_back(p);

    PastingResult r;
    r.parent_step = run.step;
    r.parent_layers = L;
    r.cut_layer = o.cut_layer;
    r.embedding = o.embedding;
    r.pasted_layers = cfg.model.n_layers;
    r.trainable_pasted = countTrainable(*pasted);
    r.trainable_scratch = countTrainable(*scratch);
    r.steps = o.steps;
    r.w_scale = cfg.task.w_scale;
    r.noise_std = cfg.task.noise_std;
    r.ridge_lambda = ridgeLambda(cfg);

    const PromptBatch evalSet = sampleLinearRegression(cfg.task, o.n_eval, mixSeed(seed, kEvalStream));
    r.ridge_loss = halfMse(predictRidge(evalSet, r.ridge_lambda).to(torch::kFloat64),
                           evalSet.queryY().to(torch::kFloat64))
                       .item<double>();
    r.zero_loss = halfMse(predictZero(evalSet).to(torch::kFloat64), evalSet.queryY().to(torch::kFloat64))
                      .item<double>();

    auto writeCheckpoint = [&](int64_t step, double trainLoss, const std::vector<MetricsRow>& rows) {
        if (o.out_path.empty())
            return;
        CheckpointData cp;
        cp.step = step;
        cp.train_loss = trainLoss;
        cp.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        cp.params = paramsToArrays(*pasted);
        commitToExperimentFile(o.out_path, rows, &cp);
    };
    if (!o.out_path.empty()) {
        namespace fs = std::filesystem;
        if (fs::exists(o.out_path) && fs::equivalent(o.out_path, parentPath))
            throw Error("pasting: the output file must differ from the parent");
        createExperimentFile(o.out_path, toJson(cfg).dump(2), o.overwrite);
    }

    auto evalRow = [&](int64_t step, double pTrain, double pe, double sTrain, double se) {
        r.curve_steps.push_back(step);
        r.pasted_train.push_back(pTrain);
        r.pasted_eval.push_back(pe);
        r.scratch_train.push_back(sTrain);
        r.scratch_eval.push_back(se);
        MetricsRow row{{"step", double(step)},        {"train_loss", pTrain},         {"eval_loss", pe},
                       {"scratch/train_loss", sTrain}, {"scratch/eval_loss", se},      {"baseline/ridge", r.ridge_loss},
                       {"baseline/zero", r.zero_loss}};
        return row;
    };

    // Same batches, same budget for both models; Adam in one pass per parameter, as the trainer's (fused_adam.h).
    FusedAdam optPasted(trainable, torch::optim::AdamOptions(o.lr).betas({0.9, 0.999}));
    FusedAdam optScratch(scratch->parameters(), torch::optim::AdamOptions(o.lr).betas({0.9, 0.999}));
    auto step = [&](Gpt2Impl& m, torch::optim::Adam& opt, const PromptBatch& b) {
        torch::Tensor loss = halfMse(m.predictAll(b).flatten(), b.y.flatten());
        opt.zero_grad();
        loss.backward();
        opt.step();
        const double v = loss.item<double>();
        if (!std::isfinite(v))
            throw Error("pasting: training diverged (loss " + std::to_string(v) + ")");
        return v;
    };
    const double nanv = std::nan("");
    {
        pasted->eval();
        scratch->eval();
        std::vector<MetricsRow> rows{evalRow(0, nanv, queryLoss(*pasted, evalSet), nanv,
                                             o.train_scratch ? queryLoss(*scratch, evalSet) : nanv)};
        writeCheckpoint(0, nanv, rows);
    }

    // Each model trains on batches 0..steps−1 (each thread samples its own copy of the same batches) and is
    // evaluated every eval_every steps and at the last one. The models are independent, so training them one
    // after the other or side by side gives the same numbers for the same intra-op thread count.
    struct Trace {
        std::vector<double> train, eval;  ///< mean training loss since the previous evaluation, eval loss
    };
    const int64_t total = o.steps * (o.train_scratch ? 2 : 1);
    std::atomic<int64_t> done{0};
    std::atomic<bool> stop{false};  // cancelled, or the other model's thread failed
    auto reportProgress = [&] {
        if (progress && !progress(done.load(), total)) {
            stop = true;
            throw Error("cancelled");
        }
    };
    auto train = [&](Gpt2Impl& m, torch::optim::Adam& opt, bool reports) {
        Trace tr;
        double sum = 0;
        int64_t count = 0;
        m.train();
        for (int64_t t = 0; t < o.steps && !stop.load(); ++t) {
            const PromptBatch b = sampleLinearRegression(cfg.task, o.batch_size, mixSeed(seed, uint64_t(t)));
            setLearningRate(opt, learningRate(cfg.training, t));
            sum += step(m, opt, b);
            ++count;
            ++done;
            if (reports)
                reportProgress();
            if ((t + 1) % o.eval_every == 0 || t + 1 == o.steps) {
                m.eval();
                tr.train.push_back(sum / count);
                tr.eval.push_back(queryLoss(m, evalSet));
                m.train();
                sum = 0;
                count = 0;
            }
        }
        m.eval();
        return tr;
    };
    Trace pastedTrace, scratchTrace;
    if (o.train_scratch && o.concurrent && defaultThreads() >= 2) {
        const ScopedThreads oneThread(1);
        std::exception_ptr scratchError;
        std::atomic<bool> scratchDone{false};
        std::thread worker([&] {
            try {
                useOneIntraOpThreadOnThisThread();  // this thread's own OpenMP count (LibTorch's and OpenBLAS's)
                scratchTrace = train(*scratch, optScratch, false);
            } catch (...) {
                scratchError = std::current_exception();
                stop = true;
            }
            scratchDone = true;
        });
        // Joined on every path: an exception here (cancel, divergence) stops the worker first.
        struct Join {
            std::thread& t;
            std::atomic<bool>& stop;
            ~Join()
            {
                stop = true;
                t.join();
            }
        } join{worker, stop};
        pastedTrace = train(*pasted, optPasted, true);
        while (!scratchDone.load() && !stop.load()) {  // the scratch model is the slower one: keep reporting
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            reportProgress();
        }
        while (!scratchDone.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (scratchError)
            std::rethrow_exception(scratchError);
        if (!stop.load())
            reportProgress();
    } else {
        pastedTrace = train(*pasted, optPasted, true);
        if (o.train_scratch)
            scratchTrace = train(*scratch, optScratch, true);
    }
    std::vector<MetricsRow> pending;
    for (size_t i = 0; i < pastedTrace.eval.size(); ++i) {
        const int64_t t = std::min<int64_t>(o.steps, int64_t(i + 1) * o.eval_every);
        pending.push_back(evalRow(t, pastedTrace.train[i], pastedTrace.eval[i],
                                  o.train_scratch ? scratchTrace.train.at(i) : nanv,
                                  o.train_scratch ? scratchTrace.eval.at(i) : nanv));
    }
    pasted->eval();
    scratch->eval();
    if (o.steps > 0)
        writeCheckpoint(o.steps, r.pasted_train.back(), pending);

    // The frozen parameters must be exactly the parent's.
    for (const auto& [target, name] : frozen)
        if (!torch::equal(pastedParams.at(target), parentParams.at(name)))
            r.frozen_unchanged = false;
    if (!r.frozen_unchanged)
        throw Error("pasting: a frozen parameter of the parent changed during training");

    r.pasted_loss = r.pasted_eval.back();
    r.scratch_loss = r.scratch_eval.back();
    for (int64_t n = 0; n <= cfg.task.n_context; ++n)
        r.n_examples.push_back(n);
    r.pasted_curve = modelCurve(*pasted, evalSet);
    r.scratch_curve = o.train_scratch ? modelCurve(*scratch, evalSet) : std::vector<double>{};
    r.ridge_curve = ridgeCurve(evalSet, r.ridge_lambda);
    r.out_path = o.out_path;
    r.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    auto jnum = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    auto jvec = [&](const std::vector<double>& v) {
        nlohmann::json a = nlohmann::json::array();
        for (double x : v)
            a.push_back(jnum(x));
        return a;
    };
    const nlohmann::json opts = {{"checkpoint_step", run.step}, {"cut_layer", o.cut_layer},
                                 {"embedding", o.embedding},    {"steps", o.steps},
                                 {"lr", o.lr},                  {"schedule", o.schedule},
                                 {"concurrent", o.concurrent},
                                 {"batch_size", o.batch_size},  {"n_eval", o.n_eval},          {"w_scale", r.w_scale},
                                 {"noise_std", r.noise_std},    {"match_label_scale", o.match_label_scale},
                                 {"seed", seed},                {"copy_parent_embedding", o.copy_parent_embedding},
                                 {"zero_new_mlp", o.zero_new_mlp},
                                 {"out_path", o.out_path}};
    if (!o.out_path.empty()) {
        const nlohmann::json link = {{"parent", std::filesystem::absolute(parentPath).string()},
                                     {"parent_checkpoint_step", run.step},
                                     {"parent_layers", L},
                                     {"cut_layer", o.cut_layer},
                                     {"embedding", o.embedding},
                                     {"frozen", nlohmann::json(frozen)}};
        storeAnalysis(o.out_path, "pasting_parent", o.steps, seed, opts.dump(), link.dump());
    }
    if (o.store) {
        const nlohmann::json result = {
            {"out_path", o.out_path.empty() ? "" : std::filesystem::absolute(o.out_path).string()},
            {"parent_layers", L},
            {"cut_layer", o.cut_layer},
            {"embedding", o.embedding},
            {"pasted_layers", r.pasted_layers},
            {"trainable_pasted", r.trainable_pasted},
            {"trainable_scratch", r.trainable_scratch},
            {"ridge_lambda", r.ridge_lambda},
            {"pasted_loss", jnum(r.pasted_loss)},
            {"scratch_loss", jnum(r.scratch_loss)},
            {"ridge_loss", r.ridge_loss},
            {"zero_loss", r.zero_loss},
            {"n_examples", r.n_examples},
            {"pasted_curve", jvec(r.pasted_curve)},
            {"scratch_curve", jvec(r.scratch_curve)},
            {"ridge_curve", jvec(r.ridge_curve)},
            {"curve_steps", r.curve_steps},
            {"pasted_train", jvec(r.pasted_train)},
            {"pasted_eval", jvec(r.pasted_eval)},
            {"scratch_train", jvec(r.scratch_train)},
            {"scratch_eval", jvec(r.scratch_eval)},
            {"wall_time_s", r.wall_time_s}};
        r.analysis_id = storeAnalysis(parentPath, "pasting", run.step, seed, opts.dump(), result.dump());
    }
    return r;
}

} // namespace icl
