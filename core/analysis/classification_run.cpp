#include "core/analysis/classification_run.h"

#include <filesystem>
#include <mutex>

#include "core/error.h"
#include "core/io/bounded_json.h"
#include "core/io/kinds.h"
#include "core/training/checkpoint.h"

namespace icl {

namespace {

namespace fs = std::filesystem;

/// What an image source was loaded from: the options makeExemplarSource reads, then (path, size, modification
/// time) of every file under exemplar_path (a folder) or of the IDX files, so an edited file is read again.
std::string sourceFingerprint(const FewShotOptions& o)
{
    std::string key = o.exemplar_source + '\n' + o.exemplar_path + '\n' + o.exemplar_labels_path + '\n'
        + std::to_string(o.image_size) + '\n';
    auto add = [&key](const fs::path& file) {
        std::error_code sizeError, timeError;
        const auto size = fs::file_size(file, sizeError);
        const auto time = fs::last_write_time(file, timeError).time_since_epoch().count();
        key += file.string() + ' ' + std::to_string(sizeError ? 0 : size) + ' ' + std::to_string(timeError ? 0 : time)
            + '\n';
    };
    std::error_code ec;
    if (fs::is_directory(o.exemplar_path, ec)) {
        for (fs::recursive_directory_iterator it(o.exemplar_path, ec), end; !ec && it != end; it.increment(ec))
            if (it->is_regular_file(ec))
                add(it->path());
    } else {
        add(o.exemplar_path);
        if (!o.exemplar_labels_path.empty())
            add(o.exemplar_labels_path);
    }
    return key;
}

/// The exemplar source of `o`: image sources are kept (the last one loaded) so that drawing sequence after
/// sequence from one run (the sequence viewer's Resample) reads its image files once; synthetic sources cost
/// nothing to make. Thread-safe.
std::shared_ptr<const ExemplarSource> exemplarSourceOf(const FewShotOptions& o)
{
    if (o.exemplar_source == "synthetic")
        return makeExemplarSource(o);
    static std::mutex mutex;
    static std::string lastKey;
    static std::shared_ptr<const ExemplarSource> last;
    const std::string key = sourceFingerprint(o);
    {
        const std::lock_guard<std::mutex> lock(mutex);
        if (last && key == lastKey)
            return last;
    }
    std::shared_ptr<const ExemplarSource> source = makeExemplarSource(o); // throws for missing or damaged files
    const std::lock_guard<std::mutex> lock(mutex);
    lastKey = key;
    last = source;
    return source;
}

} // namespace

LoadedClassificationRun loadClassificationRun(const std::string& path, int64_t step, const std::string& analysis)
{
    LoadedClassificationRun r;
    r.summary = readRunSummary(path);
    r.config = parseConfig(parseBoundedJson(r.summary.config_json, path + ": /config"));
    if (kindOf(r.config.task) != TaskKind::FewshotClassification)
        throw Error(path + ": " + analysis + " needs a few-shot classification run (task.kind "
                    "\"fewshot_classification\"), this one is \"" + r.config.task.kind + "\"");
    if (r.summary.checkpoints.empty())
        throw Error(path + ": the file holds no checkpoint");
    r.step = checkpointToRead(r.summary, step);
    const FewShotOptions options = fewShotOptions(r.config.task, r.config.seed);
    r.source = exemplarSourceOf(options);
    r.task = std::make_shared<const FewShotClassification>(options, r.source);
    // The run file's config sizes the model: refused in one line, naming the file, before anything is allocated.
    checkModelMemory(r.config, MemoryBudget(path), r.task->exemplarShape());
    const CheckpointData cp = readCheckpoint(path, r.step, CheckpointParts::ParamsOnly);
    r.model = makeSequenceClassifier(r.config, r.task->exemplarShape(), 0);
    loadParams(*r.model, cp.params, path + " (checkpoint " + std::to_string(r.step) + ")");
    r.model->eval();
    return r;
}

} // namespace icl
