#include "tests/support/tiny_runs.h"

#include <map>
#include <mutex>

#include "core/error.h"
#include "core/io/config.h"
#include "core/training/trainer.h"

namespace icl::test {

namespace {

std::vector<std::string> withEvaluation(std::vector<std::string> sets)
{
    for (const char* s : { "training.eval_every=10", "training.checkpoint_every=10", "eval.n_prompts=64",
             "eval.bootstrap=50" })
        sets.emplace_back(s);
    return sets;
}

} // namespace

void trainTinyRun(const std::string& path, const std::string& preset, const std::vector<std::string>& sets,
    int64_t steps)
{
    icl::ConfigRequest request;
    request.preset = preset;
    request.scale = "quick";
    request.sets = sets;
    request.steps = steps;
    request.device = "cpu";
    icl::TrainOptions options;
    options.out_path = path;
    options.threads = 1; // tiny models: one thread is fastest, and the run is the same on every machine
    icl::train(icl::resolveConfig(request), options, [](const icl::TrainProgress&) { return true; });
}

const std::string& tinyRun(TinyRun kind)
{
    static std::map<TinyRun, std::string> built;
    static std::mutex buildMutex; // one build at a time; fixtureMutex stays free for the scratch folder
    const std::lock_guard<std::mutex> lock(buildMutex);
    const auto it = built.find(kind);
    if (it != built.end())
        return it->second;
    const std::string dir = scratchSubdir("tiny-runs");
    std::string path;
    switch (kind) {
    case TinyRun::Lsa:
        path = dir + "/lsa.h5";
        trainTinyRun(path, "vonoswald-lsa-1layer",
            withEvaluation({ "task.d=3", "task.n_context=6", "training.batch_size=16" }));
        break;
    case TinyRun::Gpt2:
        path = dir + "/gpt2.h5";
        trainTinyRun(path, "guo-representation",
            withEvaluation({ "task.d=4", "task.rep_dim=4", "task.n_context=6", "model.n_layers=2", "model.n_heads=2",
                "model.d_model=16", "training.batch_size=16" }));
        break;
    case TinyRun::SoftmaxAttention:
        path = dir + "/softmax.h5";
        trainTinyRun(path, "renliu-kernel", withEvaluation({ "training.batch_size=64" }));
        break;
    }
    return built.emplace(kind, path).first->second;
}

} // namespace icl::test
