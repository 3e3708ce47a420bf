#include "core/analysis/inspector.h"

#include <ATen/CPUGeneratorImpl.h>
#include <chrono>
#include <set>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "core/analysis/run_loader.h"
#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/prompt_file.h"
#include "core/io/kinds.h"
#include "core/models/capture.h"
#include "core/models/gpt2.h"
#include "core/models/lsa.h"
#include "core/models/names.h"
#include "core/tasks/representation.h"
#include "core/tasks/prompts.h"
#include "core/runtime/blas.h"
#include "core/training/checkpoint.h"

namespace icl {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
/// Prompts over which a mean ablation averages (see Inspector::inspect).
constexpr int64_t kMeanAblationPrompts = 256;
/// Fresh prompts on which the lens fits η of GD-k when the run did not fit it.
constexpr int64_t kLensEtaPrompts = 2000;

/// "₁₂" for 12 (Unicode subscript digits U+2080…U+2089).
std::string subscript(int64_t n)
{
    std::string out;
    for (char c : std::to_string(n)) {
        out += "\xE2\x82";
        out += char(0x80 + (c - '0'));
    }
    return out;
}

bool isLinearKind(std::optional<TaskKind> kind) { return kind && isLinearRegression(*kind); }

bool isRepresentationKind(std::optional<TaskKind> kind) { return kind && isRepresentationTask(*kind); }

torch::Tensor rowTensor(const std::vector<double>& v)
{
    return torch::tensor(v, torch::TensorOptions().dtype(torch::kFloat64));
}


} // namespace

std::string corruptionName(Corruption c)
{
    switch (c) {
    case Corruption::ChangeLabel: return "change_label";
    case Corruption::DifferentW: return "different_w";
    case Corruption::ShufflePairs: return "shuffle_pairs";
    }
    return "change_label";
}

Corruption corruptionFromName(const std::string& name)
{
    for (Corruption c : {Corruption::ChangeLabel, Corruption::DifferentW, Corruption::ShufflePairs})
        if (name == corruptionName(c))
            return c;
    throw Error("corruption \"" + name + "\": expected change_label, different_w or shuffle_pairs");
}

struct Inspector::Impl {
    std::string path;
    LoadedRun run;
    std::shared_ptr<Gpt2Impl> gpt;
    std::shared_ptr<LsaImpl> lsa;
    std::map<int64_t, double> lens_eta;            ///< η of GD-k fitted here for the lens (k → η)
    std::map<std::string, torch::Tensor> means;    ///< mean-ablation values [T, D] by (name, head, N)

    const ExperimentConfig& config() const { return run.config; }
    const TaskConfig& task() const { return run.config.task; }
    int64_t nLayers() const { return run.config.model.n_layers; }
    int64_t nHeads() const { return run.config.model.n_heads; }
    bool interleaved() const { return gpt || lsa->options().interleaved; }

    void attach(const std::string& where)
    {
        gpt = std::dynamic_pointer_cast<Gpt2Impl>(run.model.module);
        lsa = std::dynamic_pointer_cast<LsaImpl>(run.model.module);
        if (!gpt && !lsa)
            throw Error(where + ": the inspector supports lsa and gpt2 models; this run has " + config().model.kind);
        int64_t params = 0;
        for (const auto& p : run.model.module->parameters())
            params += p.numel();
        // One prompt through a small model is too little work to share between threads (docs/performance.md,
        // "The inspector's threads"). Larger models keep the configured threads.
        prompt_threads = params < 1000000 ? 1 : 0;
    }
    int prompt_threads = 0;  ///< intra-op threads of inspect()/lens() (0 = the configured count)

    /// Largest N the model accepts (gpt2: its learned positions; lsa: any).
    int64_t maxContext() const
    {
        return gpt ? (gpt->options().n_positions - 1) / 2 : std::numeric_limits<int64_t>::max() / 4;
    }
    int64_t nTokens(int64_t n) const { return interleaved() ? 2 * n + 1 : n + 1; }
    int64_t nKeys(int64_t n) const { return gpt ? nTokens(n) : lsa->contextTokens(n); }

    void checkPrompt(const Prompt& p) const
    {
        const int64_t d = task().d;
        if (p.y.size() < 2 || p.x.size() != p.y.size())
            throw Error("prompt: expected N ≥ 1 in-context examples and a query with as many x rows as labels, got "
                        + std::to_string(p.x.size()) + " x rows and " + std::to_string(p.y.size()) + " labels");
        // Points and labels are named 1-based, as in prompt files (point i, y_i).
        for (size_t i = 0; i < p.x.size(); ++i) {
            if (int64_t(p.x[i].size()) != d)
                throw Error("prompt: point " + std::to_string(i + 1) + " has " + std::to_string(p.x[i].size())
                            + " components, the run's task has d = " + std::to_string(d));
            for (double v : p.x[i])
                if (!std::isfinite(v) || std::abs(v) > kMaxPromptMagnitude)
                    throw Error("prompt: point " + std::to_string(i + 1) + " holds a value that is not finite or "
                                "beyond ±1e6 (the model computes in float32)");
        }
        // The query's label may be unknown (NaN, e.g. a prompt read from a file): the model and the
        // baselines never read it, only the errors do (they become NaN).
        for (size_t i = 0; i < p.y.size(); ++i)
            if ((!std::isfinite(p.y[i]) && !(i + 1 == p.y.size() && std::isnan(p.y[i])))
                || std::abs(p.y[i]) > kMaxPromptMagnitude)
                throw Error("prompt: y_" + std::to_string(i + 1) + " is not finite or beyond ±1e6");
        if (p.nContext() > maxContext())
            throw Error("prompt: " + std::to_string(p.nContext()) + " in-context examples, the model takes at most "
                        + std::to_string(maxContext()));
        for (double v : p.w)
            if (!std::isfinite(v) || std::abs(v) > kMaxPromptMagnitude)
                throw Error("prompt: w holds a value that is not finite or beyond ±1e6");
        if (!p.w.empty())
            (void)label(p, p.x.front()); // the task instance's size and kind, as labelling checks it
    }

    /// The prompt as a batch of one (x [1, N+1, d], y [1, N+1], w [1, |w|]) in `dtype`.
    PromptBatch toBatch(const Prompt& p, torch::Dtype dtype) const
    {
        checkPrompt(p);
        const int64_t n = int64_t(p.y.size()), d = task().d;
        std::vector<double> flat;
        flat.reserve(size_t(n * d));
        for (const auto& row : p.x)
            flat.insert(flat.end(), row.begin(), row.end());
        PromptBatch b;
        b.x = rowTensor(flat).view({1, n, d}).to(dtype);
        std::vector<double> y = p.y;
        if (std::isnan(y.back()))
            y.back() = 0.0;  // unknown query label: never read, kept out of NaN arithmetic
        b.y = rowTensor(y).view({1, n}).to(dtype);
        b.w = p.w.empty() ? torch::zeros({1, 0}, torch::TensorOptions().dtype(dtype))
                          : rowTensor(p.w).view({1, -1}).to(dtype);
        return b;
    }

    /// Runs the model on `b` (float32) with `capture`; returns the query predictions [B] and sets
    /// `resid` to the final residual stream [B, T, D] when given.
    torch::Tensor forward(const PromptBatch& b, ActivationCapture* capture, torch::Tensor* out = nullptr)
    {
        if (gpt) {
            const torch::Tensor all = gpt->forward(interleavedTokens(b), capture);  // [B, T]
            if (out)
                *out = all;
            return all.select(1, all.size(1) - 1);
        }
        const torch::Tensor resid = lsa->forward(lsa->embed(b), lsa->contextTokens(b.nContext()), capture);
        if (out)
            *out = resid;
        return lsa->readout(resid);
    }

    /// Read-out at the query of a residual stream [B, T, D]. Returns [B].
    torch::Tensor readQuery(const torch::Tensor& resid)
    {
        if (gpt) {
            const torch::Tensor all = gpt->readout(resid);
            return all.select(1, all.size(1) - 1);
        }
        return lsa->readout(resid);
    }

    /// The interventions of `ablations` for a prompt with N = n. A mean ablation replaces the target
    /// by its mean, per token position, over kMeanAblationPrompts prompts of the run's task with the
    /// same N (a fixed draw, so the value does not change between calls).
    std::vector<Intervention> interventions(const std::vector<Ablation>& ablations, int64_t n)
    {
        std::vector<Intervention> out;
        for (const Ablation& a : ablations) {
            Intervention iv;
            iv.kind = a.kind == Ablation::Kind::Zero ? Intervention::Kind::Zero : Intervention::Kind::Mean;
            iv.name = a.name;
            iv.head = a.head;
            iv.position = a.position;
            out.push_back(iv);
        }
        // Validate names, layers, heads and positions before computing any mean.
        checkInterventions(out, {config().model.kind, nLayers(), nHeads(), gpt ? true : lsa->options().mlp, nTokens(n)});
        for (Intervention& iv : out) {
            if (iv.kind != Intervention::Kind::Mean)
                continue;
            torch::Tensor mean = meanActivation(iv.name, iv.head, n);  // [T, D]
            iv.value = iv.position >= 0 ? mean.select(0, iv.position) : mean;
        }
        return out;
    }

    torch::Tensor meanActivation(const std::string& name, int64_t head, int64_t n)
    {
        const std::string key = name + "|" + std::to_string(head) + "|" + std::to_string(n);
        auto it = means.find(key);
        if (it != means.end())
            return it->second;
        TaskConfig t = task();
        t.n_context = n;
        const PromptBatch ref = samplePrompts(t, kMeanAblationPrompts, mixSeed(config().seed, 0x3EA7AB1A));
        ActivationCapture capture;
        const auto [base, layer] = splitActivationName(name);
        const std::string captured = head >= 0 ? actName(Act::AttnResult, layer) : name;
        capture.names.insert(captured);
        forward(ref, &capture);
        torch::Tensor v = capture.values.at(captured);
        if (head >= 0)
            v = v.select(1, head);  // [B, T, D]
        torch::Tensor mean = v.mean(0);
        means[key] = mean;
        return mean;
    }

    double oracle(const Prompt& p, const PromptBatch& b64, bool* has) const
    {
        *has = true;
        const std::optional<TaskKind> kind = kindFromName<TaskKind>(task().kind);
        if (isRepresentationKind(kind)) {
            const auto& reps = taskRepresentations(task());
            const double tau = task().w_scale, sigma = task().noise_std;
            if (reps.size() == 1 || p.component >= 0) {
                const Representation& r = reps[size_t(std::max<int64_t>(p.component, 0))];
                return predictOracleRidgePhi(b64, r, sigma * sigma / (tau * tau)).item<double>();
            }
            std::vector<std::function<torch::Tensor(const torch::Tensor&)>> phis(reps.begin(), reps.end());
            return predictMixturePosterior(b64, phis, tau, sigma).item<double>();
        }
        if ((isLinearKind(kind) || kind == TaskKind::SineRegression) && !p.w.empty())
            return label(p, p.x.back());
        *has = false;
        return 0.0;
    }

    /// f_w(x) of the prompt's task instance.
    double label(const Prompt& p, const std::vector<double>& x) const
    {
        if (p.w.empty())
            throw Error("prompt: no task instance w (e.g. a prompt read from a file), so labels cannot be computed");
        const std::optional<TaskKind> kind = kindFromName<TaskKind>(task().kind);
        if (int64_t(x.size()) != task().d)
            throw Error("x has " + std::to_string(x.size()) + " components, the run's task has d = "
                        + std::to_string(task().d));
        if (isLinearKind(kind)) {
            if (p.w.size() != x.size())
                throw Error("prompt: w has " + std::to_string(p.w.size()) + " components, expected d = "
                            + std::to_string(x.size()));
            return std::inner_product(x.begin(), x.end(), p.w.begin(), 0.0);
        }
        if (kind == TaskKind::SineRegression) {
            if (p.w.size() != 2)
                throw Error("prompt: a sine_regression task instance is w = (amplitude a, phase φ)");
            return p.w[0] * std::sin(x[0] + p.w[1]);
        }
        if (isRepresentationKind(kind)) {
            const auto& reps = taskRepresentations(task());
            const int64_t c = p.component >= 0 ? p.component : 0;
            if (c >= int64_t(reps.size()))
                throw Error("prompt: component " + std::to_string(c) + " out of range (the task has "
                            + std::to_string(reps.size()) + " representations)");
            if (reps.size() > 1 && p.component < 0)
                throw Error("prompt: a representation_mixture prompt needs the component index of its Φ*");
            const torch::Tensor phi = reps[size_t(c)](rowTensor(x));
            if (int64_t(p.w.size()) != phi.size(0))
                throw Error("prompt: w has " + std::to_string(p.w.size()) + " components, expected rep_dim = "
                            + std::to_string(phi.size(0)));
            return torch::dot(phi, rowTensor(p.w)).item<double>();
        }
        throw Error("task.kind \"" + task().kind + "\": the inspector has no label function for it");
    }

    /// One x drawn from the task's input distribution.
    std::vector<double> drawX(at::Generator& gen) const
    {
        const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
        const int64_t d = task().d;
        torch::Tensor x = task().x_distribution == "uniform"
            ? (torch::rand({d}, gen, opts) * 2.0 - 1.0) * task().x_range
            : torch::randn({d}, gen, opts);
        if (task().x_condition_number != 1.0)  // ill-conditioned inputs: N(0, Σ) as the task draws them
            x.narrow(0, 0, activeDims(task())).mul_(inputCovarianceEigenvalues(task(), activeDims(task())).sqrt());
        return std::vector<double>(x.data_ptr<double>(), x.data_ptr<double>() + d);
    }

    /// Largest k of GD-k the inspector and the lens show: the number of layers, or more when the run
    /// evaluates more GD steps.
    int64_t gdStepsShown() const
    {
        int64_t kMax = nLayers();
        for (int64_t k : config().eval.gd_steps)
            kMax = std::max(kMax, k);
        return kMax;
    }

    /// η of GD-k for the lens: the run's fitted value, else fitted here on fresh prompts of the task
    /// (closed form for k = 1, line search otherwise). The first call fits every k up to
    /// gdStepsShown() that the run did not fit, in one search (lineSearchEtas shares its grid).
    double gdEta(int64_t k)
    {
        auto f = run.fitted.eta.find("gd_" + std::to_string(k));
        if (f != run.fitted.eta.end())
            return f->second;
        auto it = lens_eta.find(k);
        if (it != lens_eta.end())
            return it->second;
        const PromptBatch tuning
            = samplePrompts(task(), kLensEtaPrompts, mixSeed(config().seed, 0x1E45E7A), torch::kFloat64);
        std::vector<int64_t> missing;
        for (int64_t j = 2; j <= std::max(k, gdStepsShown()); ++j)
            if (!run.fitted.eta.count("gd_" + std::to_string(j)) && !lens_eta.count(j))
                missing.push_back(j);
        for (const auto& [j, eta] : lineSearchEtas(tuning, missing))
            lens_eta[j] = eta;
        if (k == 1)
            lens_eta[1] = closedFormEtaOneStep(tuning);
        return lens_eta.at(k);
    }

    std::vector<std::string> tokenLabels(int64_t n) const
    {
        std::vector<std::string> labels;
        for (int64_t i = 1; i <= n; ++i) {
            if (interleaved()) {
                labels.push_back("x" + subscript(i));
                labels.push_back("y" + subscript(i));
            } else {
                labels.push_back("e" + subscript(i));
            }
        }
        labels.push_back("query");
        return labels;
    }
};

Inspector::Inspector(const std::string& path, int64_t step)
    : m_impl(std::make_unique<Impl>())
{
    m_impl->path = path;
    m_impl->run = loadRun(path, step);
    m_impl->attach(path);
}

Inspector::~Inspector() = default;

const RunSummary& Inspector::summary() const { return m_impl->run.summary; }
int64_t Inspector::checkpointStep() const { return m_impl->run.step; }
int64_t Inspector::nLayers() const { return m_impl->nLayers(); }
int64_t Inspector::nHeads() const { return m_impl->nHeads(); }
int64_t Inspector::nContext() const { return m_impl->task().n_context; }
int64_t Inspector::inputDim() const { return m_impl->task().d; }
void Inspector::checkPrompt(const Prompt& prompt) const
{
    torch::NoGradGuard guard;
    m_impl->checkPrompt(prompt);
}

int64_t Inspector::maxContext() const { return m_impl->gpt ? m_impl->maxContext() : 0; }

void Inspector::setCheckpoint(int64_t step)
{
    Impl& m = *m_impl;
    step = checkpointToRead(m.run.summary, step);
    if (step == m.run.step)
        return;
    const CheckpointData cp = readCheckpoint(m.path, step, CheckpointParts::ParamsOnly);
    torch::NoGradGuard guard;
    loadParams(*m.run.model.module, cp.params, m.path + " (checkpoint " + std::to_string(step) + ")");
    m.run.step = step;
    m.means.clear();
}

Prompt Inspector::samplePrompt(uint64_t seed) const
{
    const Impl& m = *m_impl;
    torch::NoGradGuard guard;
    const PromptBatch b = samplePrompts(m.task(), 1, seed, torch::kFloat64);
    Prompt p;
    const int64_t n = b.x.size(1), d = b.x.size(2);
    const torch::Tensor x = b.x.contiguous(), y = b.y.contiguous(), w = b.w.contiguous();
    for (int64_t i = 0; i < n; ++i)
        p.x.emplace_back(x.data_ptr<double>() + i * d, x.data_ptr<double>() + (i + 1) * d);
    p.y.assign(y.data_ptr<double>(), y.data_ptr<double>() + n);
    p.w.assign(w.data_ptr<double>(), w.data_ptr<double>() + w.numel());
    if (kindOf(m.task()) == TaskKind::RepresentationMixture)
        p.component = representationChoice(m.task(), 1, seed)[0].item<int64_t>();
    else if (kindOf(m.task()) == TaskKind::Representation)
        p.component = 0;
    p.noise_std = m.task().noise_std;
    p.seed = seed;
    return p;
}

void Inspector::resampleExample(Prompt& prompt, int64_t index, uint64_t seed) const
{
    if (index < 0 || index > prompt.nContext())
        throw Error("resample: example " + std::to_string(index) + " out of range (0 to " + std::to_string(prompt.nContext())
                    + ", " + std::to_string(prompt.nContext()) + " = the query)");
    if (prompt.w.empty())
        throw Error("resample: the prompt has no task instance w, so a new label cannot be drawn");
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(seed);
    std::vector<double> x = m_impl->drawX(gen);
    const double z = torch::randn({1}, gen, torch::TensorOptions().dtype(torch::kFloat64)).item<double>();
    const double y = m_impl->label(prompt, x) + prompt.noise_std * z;
    prompt.x[size_t(index)] = std::move(x);
    prompt.y[size_t(index)] = y;
}

void Inspector::relabel(Prompt& prompt, double noise_std, uint64_t seed) const
{
    if (!(noise_std >= 0.0) || !std::isfinite(noise_std))
        throw Error("relabel: noise σ must be a finite number ≥ 0");
    if (prompt.w.empty())
        throw Error("relabel: the prompt has no task instance w, so labels cannot be recomputed");
    torch::NoGradGuard guard;
    auto gen = at::detail::createCPUGenerator(seed);
    const torch::Tensor z = torch::randn({int64_t(prompt.y.size())}, gen, torch::TensorOptions().dtype(torch::kFloat64));
    std::vector<double> y(prompt.y.size());
    for (size_t i = 0; i < y.size(); ++i)
        y[i] = m_impl->label(prompt, prompt.x[i]) + noise_std * z[int64_t(i)].item<double>();
    prompt.y = std::move(y);
    prompt.noise_std = noise_std;
}

double Inspector::trueLabel(const Prompt& prompt, const std::vector<double>& x) const
{
    torch::NoGradGuard guard;
    return m_impl->label(prompt, x);
}

Inspection Inspector::inspect(const Prompt& prompt, const std::vector<Ablation>& ablations)
{
    Impl& m = *m_impl;
    const auto start = std::chrono::steady_clock::now();
    ScopedThreads threads(m.prompt_threads);
    c10::InferenceMode inference;
    const PromptBatch b32 = m.toBatch(prompt, torch::kFloat32);
    const PromptBatch b64 = m.toBatch(prompt, torch::kFloat64);
    const int64_t n = prompt.nContext(), L = m.nLayers(), H = m.nHeads();
    const int64_t T = m.nTokens(n), K = m.nKeys(n);

    ActivationCapture capture;
    capture.interventions = m.interventions(ablations, n);
    for (int64_t l = 0; l < L; ++l)
        capture.names.insert(actName(Act::AttnPattern, l));
    const double yModel = m.forward(b32, &capture).item<double>();

    Inspection r;
    r.checkpoint_step = m.run.step;
    r.n_layers = L;
    r.n_heads = H;
    r.token_labels = m.tokenLabels(n);
    r.key_labels.assign(r.token_labels.begin(), r.token_labels.begin() + K);
    r.target = prompt.y.back();
    const bool interleaved = m.interleaved();
    // Every layer's patterns at once [L, H, T, K] (a few batched ops instead of a few per head: on the
    // 12 × 8 model the per-head version cost a third of a prompt edit).
    std::vector<torch::Tensor> perLayer;
    std::vector<uint8_t> softmaxLayer;
    for (int64_t l = 0; l < L; ++l) {
        perLayer.push_back(capture.values.at(actName(Act::AttnPattern, l))[0]);
        softmaxLayer.push_back(m.gpt || l < m.lsa->options().softmax_layers ? 1 : 0);
    }
    const torch::Tensor pat = torch::stack(perLayer).to(torch::kFloat64).contiguous();  // [L, H, T, K]
    const torch::Tensor isSoftmax = torch::tensor(std::vector<int64_t>(softmaxLayer.begin(), softmaxLayer.end()))
                                        .to(torch::kBool)
                                        .view({L, 1, 1, 1});
    // Summaries on row-normalised weights p (softmax rows as they are, linear heads |score| / Σ|score|;
    // an all-zero row stays 0): entropy −Σ p log p averaged over rows, copying p[y_i → x_i] averaged
    // over i, the query row summed per example.
    const torch::Tensor weights = torch::where(isSoftmax, pat, pat.abs());  // [L, H, T, K]
    const torch::Tensor rowSum = weights.sum(-1, true);
    const torch::Tensor p = torch::where(rowSum > 0, weights / rowSum, torch::zeros_like(weights));
    const torch::Tensor entropy = (-torch::special_xlogy(p, p).sum(-1).mean(-1)).contiguous();  // [L, H]
    const torch::Tensor queryRow = p.select(2, T - 1);                                            // [L, H, K]
    torch::Tensor copy, toExample;
    if (interleaved) {
        const torch::Tensor yRows = torch::arange(1, 2 * n, 2, torch::kLong), xKeys = torch::arange(0, 2 * n, 2, torch::kLong);
        copy = p.index_select(2, yRows).gather(3, xKeys.view({1, 1, n, 1}).expand({L, H, n, 1})).squeeze(3)
                   .mean(-1)
                   .contiguous();  // [L, H]
        toExample = queryRow.narrow(2, 0, 2 * n).reshape({L, H, n, 2}).sum(-1).contiguous();  // [L, H, n]
    } else {
        toExample = queryRow.narrow(2, 0, n).contiguous();
    }
    const double* patData = pat.data_ptr<double>();
    const double* entropyData = entropy.data_ptr<double>();
    const double* copyData = interleaved ? copy.data_ptr<double>() : nullptr;
    const double* toExampleData = toExample.data_ptr<double>();
    for (int64_t l = 0; l < L; ++l) {
        for (int64_t h = 0; h < H; ++h) {
            const int64_t lh = l * H + h;
            Matrix mat;
            mat.name = "layer " + std::to_string(l) + " head " + std::to_string(h);
            mat.rows = T;
            mat.cols = K;
            mat.data.assign(patData + lh * T * K, patData + (lh + 1) * T * K);
            mat.row_labels = r.token_labels;
            mat.col_labels = r.key_labels;
            r.patterns.push_back(std::move(mat));
            r.softmax_head.push_back(softmaxLayer[size_t(l)] != 0);

            HeadSummary s;
            s.layer = l;
            s.head = h;
            s.entropy = entropyData[lh];
            s.copy_mass = interleaved ? copyData[lh] : kNaN;
            s.query_to_example.assign(toExampleData + lh * n, toExampleData + (lh + 1) * n);
            r.heads.push_back(std::move(s));
        }
    }

    auto add = [&](const std::string& name, double pred) {
        r.predictions.push_back({name, pred, 0.5 * (pred - r.target) * (pred - r.target)});
    };
    add("model", yModel);
    // The run's baselines, then whatever of zero, least squares, ridge, GD-1…k (k up to the number of
    // layers, as in the lens) and Newton-k (k of eval.newton_steps) the run does not list, and one oracle.
    std::set<std::string> listed;
    for (const std::string& name : baselineNames(m.config().eval)) {
        add(name, predictBaseline(name, b64, m.config(), m.run.fitted).item<double>());
        listed.insert(name);
    }
    if (!listed.count("zero"))
        add("zero", 0.0);
    if (!listed.count("least_squares"))
        add("least_squares", predictLeastSquares(b64).item<double>());
    if (!listed.count("ridge"))
        add("ridge", predictBaseline("ridge", b64, m.config(), m.run.fitted).item<double>());
    const int64_t kMax = m.gdStepsShown();
    for (int64_t k = 1; k <= kMax; ++k)
        if (!listed.count("gd_" + std::to_string(k)))
            add("gd_" + std::to_string(k), predictGd(b64, k, m.gdEta(k)).item<double>());
    // Iterative Newton (Fu et al. 2023) at the steps of eval.newton_steps, with the run's α.
    for (int64_t k : m.config().eval.newton_steps)
        if (!listed.count("newton_" + std::to_string(k)))
            add("newton_" + std::to_string(k),
                predictNewton(b64, k, newtonAlphaFromName(m.config().eval.newton_alpha)).item<double>());
    bool hasOracle = false;
    const double yOracle = m.oracle(prompt, b64, &hasOracle);
    if (hasOracle && !listed.count("oracle_ridge_phi") && !listed.count("mixture_posterior"))
        add("oracle", yOracle);
    r.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return r;
}

RegressionLens Inspector::lens(const Prompt& prompt, const std::vector<Ablation>& ablations)
{
    Impl& m = *m_impl;
    ScopedThreads threads(m.prompt_threads);
    c10::InferenceMode inference;
    const PromptBatch b32 = m.toBatch(prompt, torch::kFloat32);
    const PromptBatch b64 = m.toBatch(prompt, torch::kFloat64);
    const int64_t n = prompt.nContext(), L = m.nLayers();
    ActivationCapture capture;
    capture.interventions = m.interventions(ablations, n);
    capture.names.insert(actName(Act::Embed));
    for (int64_t l = 0; l < L; ++l)
        capture.names.insert(actName(Act::ResidPost, l));
    torch::Tensor last;
    m.forward(b32, &capture, &last);

    RegressionLens r;
    r.checkpoint_step = m.run.step;
    r.target = prompt.y.back();
    r.layer_labels.push_back("embed");
    r.prediction.push_back(m.readQuery(capture.values.at(actName(Act::Embed))).item<double>());
    for (int64_t l = 0; l < L; ++l) {
        r.layer_labels.push_back("layer " + std::to_string(l));
        // The final residual stream's read-out is the model's forward output itself (bit-identical).
        const torch::Tensor q = l + 1 == L ? (m.gpt ? last.select(1, last.size(1) - 1) : m.lsa->readout(last))
                                           : m.readQuery(capture.values.at(actName(Act::ResidPost, l)));
        r.prediction.push_back(q.item<double>());
    }
    auto add = [&](const std::string& name, double pred) {
        r.references.push_back({name, pred, 0.5 * (pred - r.target) * (pred - r.target)});
    };
    const int64_t kMax = m.gdStepsShown();
    for (int64_t k = 1; k <= kMax; ++k)
        add("gd_" + std::to_string(k), predictGd(b64, k, m.gdEta(k)).item<double>());
    add("ridge", predictBaseline("ridge", b64, m.config(), m.run.fitted).item<double>());
    add("least_squares", predictLeastSquares(b64).item<double>());
    add("zero", 0.0);
    bool hasOracle = false;
    const double yOracle = m.oracle(prompt, b64, &hasOracle);
    if (hasOracle)
        add("oracle", yOracle);
    return r;
}

Prompt Inspector::corrupt(const Prompt& clean, const PatchingOptions& o) const
{
    const Impl& m = *m_impl;
    m.checkPrompt(clean);
    torch::NoGradGuard guard;
    const int64_t n = clean.nContext();
    Prompt p = clean;
    // An independent task instance w' (and, for a mixture, component) from the task's prior.
    auto freshInstance = [&](uint64_t s) {
        Prompt fresh = samplePrompt(s);
        Prompt q = clean;
        q.w = fresh.w;
        q.component = fresh.component;
        return q;
    };
    auto gen = at::detail::createCPUGenerator(mixSeed(o.seed, 0xC022));
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    switch (o.corruption) {
    case Corruption::ChangeLabel: {
        if (o.example < 0 || o.example >= n)
            throw Error("patching: label y_" + std::to_string(o.example + 1) + " out of range (the prompt has y_1 … y_"
                        + std::to_string(n) + ")");
        // y_i from an independent task instance at the same x_i, with the prompt's label noise.
        const Prompt other = freshInstance(mixSeed(o.seed, 1));
        p.y[size_t(o.example)]
            = m.label(other, clean.x[size_t(o.example)]) + clean.noise_std * torch::randn({1}, gen, f64).item<double>();
        break;
    }
    case Corruption::DifferentW: {
        const Prompt other = freshInstance(mixSeed(o.seed, 2));
        const torch::Tensor z = torch::randn({n + 1}, gen, f64);
        for (int64_t i = 0; i <= n; ++i)
            p.y[size_t(i)] = m.label(other, clean.x[size_t(i)]) + clean.noise_std * z[i].item<double>();
        p.w = other.w;
        p.component = other.component;
        break;
    }
    case Corruption::ShufflePairs: {
        if (n < 2)
            throw Error("patching: shuffle_pairs needs at least 2 in-context examples");
        // A uniformly random permutation other than the identity.
        torch::Tensor perm;
        do {
            perm = torch::randperm(n, gen, torch::TensorOptions().dtype(torch::kLong));
        } while (torch::equal(perm, torch::arange(n, torch::kLong)));
        for (int64_t i = 0; i < n; ++i)
            p.y[size_t(i)] = clean.y[size_t(perm[i].item<int64_t>())];
        break;
    }
    }
    return p;
}

PatchingResult Inspector::patching(const Prompt& clean, const PatchingOptions& options,
                                   const std::function<bool(int64_t, int64_t)>& progress,
                                   const std::function<void(const PatchingResult&)>& rows)
{
    std::function<void(const PatchingResult&)> named;
    if (rows)
        named = [&](const PatchingResult& partial) {
            PatchingResult p = partial;
            p.corruption = corruptionName(options.corruption);
            rows(p);
        };
    PatchingResult r = patchPrompts(clean, corrupt(clean, options), progress, named);
    r.corruption = corruptionName(options.corruption);
    return r;
}

PatchingResult Inspector::patchingOverPrompts(uint64_t seed, int64_t n_prompts, const PatchingOptions& options,
                                              const std::function<bool(int64_t, int64_t)>& progress)
{
    if (n_prompts < 1)
        throw Error("patching: n_prompts must be >= 1, got " + std::to_string(n_prompts));
    const int64_t rows = nLayers() + 1;
    PatchingResult total;
    std::vector<double> effectSum, count;
    for (int64_t i = 0; i < n_prompts; ++i) {
        const Prompt clean = samplePrompt(mixSeed(seed, uint64_t(i)));
        PatchingOptions o = options;
        o.seed = mixSeed(options.seed, uint64_t(i));
        std::function<bool(int64_t, int64_t)> inner;
        if (progress)
            inner = [&](int64_t done, int64_t) { return progress(i * rows + done, n_prompts * rows); };
        const PatchingResult r = patchPrompts(clean, corrupt(clean, o), inner);
        if (i == 0) {
            total = r;
            effectSum.assign(r.effect.data.size(), 0.0);
            count.assign(r.effect.data.size(), 0.0);
            total.n_skipped = 0;
            total.clean_prediction = total.corrupted_prediction = 0.0;
            std::fill(total.patched_prediction.data.begin(), total.patched_prediction.data.end(), 0.0);
        }
        total.clean_prediction += r.clean_prediction / double(n_prompts);
        total.corrupted_prediction += r.corrupted_prediction / double(n_prompts);
        total.n_skipped += r.n_skipped;
        for (size_t k = 0; k < r.effect.data.size(); ++k) {
            total.patched_prediction.data[k] += r.patched_prediction.data[k] / double(n_prompts);
            if (r.n_skipped == 0) {
                effectSum[k] += r.effect.data[k];
                count[k] += 1.0;
            }
        }
    }
    if (total.n_skipped == n_prompts)
        throw Error("patching: the corruption left the prediction unchanged (within 1e-6) on every prompt, so the "
                    "effect is undefined");
    for (size_t k = 0; k < effectSum.size(); ++k)
        total.effect.data[k] = effectSum[k] / count[k];
    total.n_prompts = n_prompts;
    total.corruption = corruptionName(options.corruption);
    return total;
}

PatchingResult Inspector::patchPrompts(const Prompt& clean, const Prompt& corrupted,
                                       const std::function<bool(int64_t, int64_t)>& progress,
                                       const std::function<void(const PatchingResult&)>& rows)
{
    Impl& m = *m_impl;
    c10::InferenceMode inference;
    const PromptBatch cb = m.toBatch(clean, torch::kFloat32);
    const PromptBatch xb = m.toBatch(corrupted, torch::kFloat32);
    if (clean.nContext() != corrupted.nContext())
        throw Error("patching: the clean and corrupted prompts must have the same number of examples");
    const int64_t n = clean.nContext(), L = m.nLayers(), T = m.nTokens(n);
    auto names = [&] {
        std::vector<std::string> v;
        for (int64_t l = 0; l < L; ++l)
            v.push_back(actName(Act::ResidPre, l));
        v.push_back(actName(Act::ResidPost, L - 1));
        return v;
    }();
    ActivationCapture cleanCap, corruptCap;
    cleanCap.names.insert(names.begin(), names.end());
    corruptCap.names.insert(names.begin(), names.end());
    const double yClean = m.forward(cb, &cleanCap).item<double>();
    const double yCorrupt = m.forward(xb, &corruptCap).item<double>();

    PatchingResult r;
    r.checkpoint_step = m.run.step;
    r.clean_prediction = yClean;
    r.corrupted_prediction = yCorrupt;
    r.n_prompts = 1;
    const double diff = yClean - yCorrupt;
    const bool skipped = std::abs(diff) < 1e-6;
    r.n_skipped = skipped ? 1 : 0;
    const std::vector<std::string> tokens = m.tokenLabels(n);
    for (Matrix* mat : {&r.effect, &r.patched_prediction}) {
        mat->rows = L + 1;
        mat->cols = T;
        mat->data.assign(size_t((L + 1) * T), kNaN);
        mat->col_labels = tokens;
        for (int64_t l = 0; l < L; ++l)
            mat->row_labels.push_back("layer " + std::to_string(l) + " (resid_pre)");
        mat->row_labels.push_back("final (resid_post)");
    }
    r.effect.name = "activation patching effect";
    r.patched_prediction.name = "patched prediction";

    // One forward pass per row: batch row t patches position t (the rest of the stream is the corrupted run's).
    // The model skips the blocks before the patched layer (a whole-stream resid_pre replacement makes them
    // irrelevant), so the rows go from the final one (no block to run) up to layer 0 (every block): the
    // cheapest first, each handed to `rows` as soon as it is done.
    const PromptBatch batch{xb.x.expand({T, -1, -1}), xb.y.expand({T, -1}), xb.w.expand({T, -1})};
    const torch::Tensor idx = torch::arange(T, torch::kLong);
    for (int64_t row = L; row >= 0; --row) {
        if (progress && !progress(L - row, L + 1))
            throw Error("cancelled");
        const std::string& name = names[size_t(row)];
        const torch::Tensor cleanAct = cleanCap.values.at(name)[0];  // [T, D]
        torch::Tensor value = corruptCap.values.at(name).expand({T, -1, -1}).clone();  // [T(batch), T, D]
        value.index_put_({idx, idx}, cleanAct);
        ActivationCapture cap;
        cap.interventions.push_back({Intervention::Kind::Replace, name, -1, -1, value});
        const torch::Tensor pred = m.forward(batch, &cap).to(torch::kFloat64).contiguous();  // [T]
        for (int64_t t = 0; t < T; ++t) {
            const double y = pred[t].item<double>();
            r.patched_prediction.data[size_t(row * T + t)] = y;
            r.effect.data[size_t(row * T + t)] = skipped ? kNaN : (y - yCorrupt) / diff;
        }
        if (rows)
            rows(r);
    }
    if (progress)
        progress(L + 1, L + 1);
    return r;
}

} // namespace icl
