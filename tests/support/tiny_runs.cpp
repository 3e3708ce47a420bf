#include "tests/support/tiny_runs.h"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <system_error>

#include <unistd.h>

#include "core/error.h"
#include "core/io/config.h"
#include "core/training/trainer.h"

namespace icl::test {

namespace fs = std::filesystem;

namespace {

std::mutex& fixtureMutex()
{
    static std::mutex m;
    return m;
}

/// Removes the process's scratch folder at exit.
struct ScratchRoot {
    std::string path;
    ~ScratchRoot()
    {
        std::error_code ec;
        if (!path.empty())
            fs::remove_all(path, ec);
    }
};

std::string uniqueName(const std::string& prefix)
{
    static std::mt19937_64 rng(std::random_device {}());
    return prefix + "-" + std::to_string(rng() % 1000000000);
}

std::vector<std::string> withEvaluation(std::vector<std::string> sets)
{
    for (const char* s : { "training.eval_every=10", "training.checkpoint_every=10", "eval.n_prompts=64",
             "eval.bootstrap=50" })
        sets.emplace_back(s);
    return sets;
}

} // namespace

const std::string& processScratchDir()
{
    static ScratchRoot root;
    const std::lock_guard<std::mutex> lock(fixtureMutex());
    if (root.path.empty()) {
        std::error_code ec;
        const fs::path base = fs::temp_directory_path(ec);
        if (ec)
            throw icl::Error("test scratch folder: no temporary directory (" + ec.message() + ")");
        for (int attempt = 0; attempt < 16 && root.path.empty(); ++attempt) {
            const fs::path p = base / uniqueName("icl-test-" + std::to_string(::getpid()));
            if (fs::create_directory(p, ec))
                root.path = p.string();
        }
        if (root.path.empty())
            throw icl::Error("test scratch folder: cannot create one under " + base.string());
    }
    return root.path;
}

std::string scratchPrefix()
{
    return processScratchDir() + "/";
}

std::string scratchSubdir(const std::string& prefix)
{
    const fs::path root = processScratchDir();
    const std::lock_guard<std::mutex> lock(fixtureMutex());
    std::error_code ec;
    for (int attempt = 0; attempt < 16; ++attempt) {
        const fs::path p = root / uniqueName(prefix);
        if (fs::create_directory(p, ec))
            return p.string();
    }
    throw icl::Error("test scratch folder: cannot create " + prefix + " under " + root.string());
}

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
