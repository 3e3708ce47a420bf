#include "core/analysis/fewshot_sequence.h"

#include <algorithm>

#include "core/analysis/classification_run.h"
#include "core/error.h"

namespace icl {

FewShotSequence sampleFewShotSequence(const std::string& path, int64_t step, FewShotSequenceKind kind, uint64_t seed)
{
    LoadedClassificationRun run = loadClassificationRun(path, step, "the sequence viewer");
    const FewShotClassification& task = *run.task;
    FewShotBatch batch;
    switch (kind) {
    case FewShotSequenceKind::Training:
        batch = task.sampleTraining(1, seed);
        break;
    case FewShotSequenceKind::TrainingBursty:
    case FewShotSequenceKind::TrainingIid: {
        FewShotOptions forced = task.options();
        forced.p_bursty = kind == FewShotSequenceKind::TrainingBursty ? 1.0 : 0.0;
        batch = FewShotClassification(forced, run.source).sampleTraining(1, seed);
        break;
    }
    case FewShotSequenceKind::Icl:
        batch = task.sampleIclEval(1, seed);
        break;
    case FewShotSequenceKind::Iwl:
        batch = task.sampleIwlEval(1, seed);
        break;
    }

    torch::Tensor logits;
    {
        torch::NoGradGuard guard;
        logits = run.model->forward(batch).select(0, 0).to(torch::kFloat64).contiguous(); // [n_labels]
    }
    FewShotSequence s;
    s.checkpoint_step = run.step;
    s.kind = kind;
    s.seed = seed;
    s.exemplar_shape = task.exemplarShape();
    s.bursty = batch.bursty[0].item<bool>();
    const int64_t n = batch.nContext() + 1, d = batch.dim();
    const torch::Tensor x = batch.exemplars.select(0, 0).to(torch::kFloat32).contiguous(); // [L+1, D]
    const torch::Tensor classes = batch.classes.select(0, 0).contiguous(), labels = batch.labels.select(0, 0).contiguous();
    const std::vector<int64_t>& holdout = task.holdoutClasses();
    const std::vector<int64_t> rare = task.rareClasses(); // empty without a common / rare split
    for (int64_t i = 0; i < n; ++i) {
        FewShotItem item;
        const float* row = x.data_ptr<float>() + i * d;
        item.exemplar.assign(row, row + d);
        item.class_id = classes[i].item<int64_t>();
        item.label = labels[i].item<int64_t>();
        item.holdout = std::find(holdout.begin(), holdout.end(), item.class_id) != holdout.end();
        item.rare = std::find(rare.begin(), rare.end(), item.class_id) != rare.end();
        s.items.push_back(std::move(item));
    }
    s.true_label = s.items.back().label;
    const torch::Tensor p = torch::softmax(logits, 0);
    s.probabilities.assign(p.data_ptr<double>(), p.data_ptr<double>() + p.numel());
    s.predicted_label = logits.argmax().item<int64_t>();
    s.predicted_label_01 = logits.narrow(0, 0, 2).argmax().item<int64_t>();
    s.prediction_in_context = std::any_of(s.items.begin(), s.items.end() - 1,
                                          [&](const FewShotItem& item) { return item.label == s.predicted_label; });
    return s;
}

} // namespace icl
