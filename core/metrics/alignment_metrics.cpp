#include "core/metrics/alignment_metrics.h"

#include "core/error.h"
#include "core/models/lsa.h"

namespace icl {

std::pair<torch::Tensor, torch::Tensor> predictionsAndSensitivities(const Predictor& predict, const PromptBatch& batch)
{
    torch::AutoGradMode enable(true);
    torch::Tensor xq = batch.queryX().detach().clone().requires_grad_(true);
    torch::Tensor x = torch::cat({batch.contextX().detach(), xq.unsqueeze(1)}, 1);
    const PromptBatch b{x, batch.y, batch.w};
    torch::Tensor pred = predict(b);
    // Prompts are independent, so the gradient of the sum gives each prompt's own ∂ŷ/∂x_q.
    torch::Tensor grad = torch::autograd::grad({pred.sum()}, {xq}, {}, false, false, true)[0];
    if (!grad.defined())
        grad = torch::zeros_like(xq);
    return {pred.detach(), grad.detach()};
}

std::vector<AlignmentMetrics> alignmentMetricsAgainst(const Predictor& model, const std::vector<Predictor>& references,
                                                     const PromptBatch& batch, int64_t chunk, torch::Tensor* model_pred,
                                                     torch::Tensor* ref_pred)
{
    const int64_t n = batch.batchSize();
    const size_t R = references.size();
    struct Sums {
        double predDiff = 0, cosine = 0, modelDiff = 0, refNorm = 0, modelLoss = 0, refLoss = 0;
    };
    std::vector<Sums> sums(R);
    std::vector<torch::Tensor> mp, rp;
    for (int64_t b = 0; b < n; b += chunk) {
        const PromptBatch part = batch.slice(b, std::min(n, b + chunk));
        auto [ym, sm] = predictionsAndSensitivities(model, part);  // once for every reference
        ym = ym.to(torch::kCPU, torch::kFloat64);
        sm = sm.to(torch::kCPU, torch::kFloat64);
        const torch::Tensor y = part.queryY().to(torch::kCPU, torch::kFloat64);
        const torch::Tensor nm = sm.norm(2, -1);
        for (size_t r = 0; r < R; ++r) {
            auto [yr, sr] = predictionsAndSensitivities(references[r], part);
            yr = yr.to(torch::kCPU, torch::kFloat64);
            sr = sr.to(torch::kCPU, torch::kFloat64);
            Sums& s = sums[r];
            s.predDiff += (ym - yr).abs().sum().item<double>();
            const torch::Tensor nr = sr.norm(2, -1);
            s.cosine += ((sm * sr).sum(-1) / ((nm + 1e-8) * (nr + 1e-8))).sum().item<double>();
            s.modelDiff += (sm - sr).norm(2, -1).sum().item<double>();
            s.refNorm += nr.sum().item<double>();
            s.modelLoss += 0.5 * (ym - y).pow(2).sum().item<double>();
            s.refLoss += 0.5 * (yr - y).pow(2).sum().item<double>();
            if (r == 0)
                rp.push_back(yr);
        }
        mp.push_back(ym);
    }
    std::vector<AlignmentMetrics> out;
    for (const Sums& s : sums) {
        AlignmentMetrics m;
        m.prediction_difference = s.predDiff / double(n);
        m.model_cosine = s.cosine / double(n);
        m.model_difference = s.modelDiff / double(n);
        m.relative_model_difference = s.refNorm > 0 ? s.modelDiff / s.refNorm : 0.0;
        m.model_loss = s.modelLoss / double(n);
        m.reference_loss = s.refLoss / double(n);
        out.push_back(m);
    }
    if (model_pred)
        *model_pred = torch::cat(mp);
    if (ref_pred && !rp.empty())
        *ref_pred = torch::cat(rp);
    return out;
}

AlignmentMetrics alignmentMetrics(const Predictor& model, const Predictor& reference, const PromptBatch& batch,
                                  int64_t chunk, torch::Tensor* model_pred, torch::Tensor* ref_pred)
{
    return alignmentMetricsAgainst(model, {reference}, batch, chunk, model_pred, ref_pred).at(0);
}

torch::Tensor copyGradientNorms(LsaImpl& lsa, const PromptBatch& batch)
{
    if (!lsa.options().interleaved)
        throw Error("copy analysis: needs the interleaved layout (separate x and y tokens)");
    torch::AutoGradMode enable(true);
    const torch::Tensor tokens = lsa.embed(batch).detach().requires_grad_(true);  // [B, T, d+1]
    LsaCapture capture;
    lsa.forward(tokens, lsa.contextTokens(batch.nContext()), &capture);
    const torch::Tensor out = capture.resid_post.front();                         // [B, T, D]
    const int64_t B = out.size(0), T = out.size(1), D = out.size(2);
    torch::Tensor G = torch::zeros({T, T}, torch::kFloat64);
    for (int64_t k = 0; k < T; ++k) {
        torch::Tensor sq = torch::zeros({B, T}, torch::kFloat64);
        for (int64_t c = 0; c < D; ++c) {
            const torch::Tensor g = torch::autograd::grad({out.select(1, k).select(1, c).sum()}, {tokens},
                                                          {}, /*retain_graph=*/true, false, true)[0];
            if (g.defined())
                sq += g.to(torch::kCPU, torch::kFloat64).pow(2).sum(-1);  // [B, T]
        }
        G[k].copy_(sq.sqrt().mean(0));
    }
    return G;
}

CopyAnalysis summariseCopy(const torch::Tensor& G, int64_t n_examples)
{
    CopyAnalysis a;
    const int64_t T = G.size(0);
    a.tokens = T;
    const torch::Tensor c = G.to(torch::kFloat64).contiguous();
    a.gradient_norm.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    for (int64_t i = 0; i < n_examples; ++i) {
        a.token_labels.push_back("x" + std::to_string(i + 1));
        a.token_labels.push_back("y" + std::to_string(i + 1));
    }
    a.token_labels.push_back("query");
    double own = 0, next = 0, other = 0;
    int64_t otherCount = 0;
    for (int64_t i = 0; i < n_examples; ++i) {
        const int64_t k = 2 * i;
        own += c[k][k].item<double>();
        next += c[k][k + 1].item<double>();
        for (int64_t j = 0; j < T; ++j)
            if (j != k && j != k + 1) {
                other += c[k][j].item<double>();
                ++otherCount;
            }
    }
    a.own = own / double(n_examples);
    a.next = next / double(n_examples);
    a.other = otherCount ? other / double(otherCount) : 0.0;
    return a;
}

} // namespace icl
