// Sequence classifiers of Chan et al. 2022 (docs/science.md §4). Expected values are closed forms (the
// sinusoidal code) or recomputed here from the module's own weights (the interleaved token layout).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/models/sequence_classifier.h"
#include "tests/support/tiny_models.h"

namespace {

icl::FewShotClassification smallTask()
{
    return icl::FewShotClassification(icl::test::fewShotOptions(20, 4, 6, 3));
}

icl::SequenceClassifierOptions smallModel(const std::string& backbone)
{
    icl::SequenceClassifierOptions o;
    o.backbone = backbone;
    o.exemplar_dim = 6;
    o.n_labels = 20;
    o.d_model = 16;
    o.n_layers = 2;
    o.n_heads = 2;
    o.n_context = 8;
    return o;
}

} // namespace

TEST(SequenceClassifier, SinusoidalPositionsAreChanEtAlsCode)
{
    const torch::Tensor pe = icl::sinusoidalPositions(17, 8, 30.0);
    ASSERT_EQ(pe.sizes(), (std::vector<int64_t>{17, 8}));
    for (int64_t p : {0, 1, 5, 16})
        for (int64_t i = 0; i < 4; ++i) {
            const double omega = std::pow(30.0, -2.0 * double(i) / 8.0);
            EXPECT_NEAR(pe[p][i].item<double>(), std::sin(double(p) * omega), 1e-6) << p << "," << i;
            EXPECT_NEAR(pe[p][4 + i].item<double>(), std::cos(double(p) * omega), 1e-6) << p << "," << i;
        }
    EXPECT_THROW(icl::sinusoidalPositions(17, 7, 30.0), icl::Error);
}

TEST(SequenceClassifier, TokensInterleaveEncodedExemplarsAndLabelEmbeddings)
{
    const auto task = smallTask();
    const icl::FewShotBatch b = task.sampleTraining(3, 0);
    icl::SequenceClassifier model(smallModel("gpt2"), 11);
    torch::NoGradGuard guard;
    const torch::Tensor tokens = model->embed(b);
    ASSERT_EQ(tokens.sizes(), (std::vector<int64_t>{3, 17, 16}));
    // Independent recomputation from the registered weights: enc(x) = W x + b, E[y], PE added.
    const auto params = model->named_parameters();
    const torch::Tensor W = params["encoder.weight"], bias = params["encoder.bias"], E = params["label_embed.weight"];
    const torch::Tensor pe = icl::sinusoidalPositions(17, 16, 30.0);
    for (int64_t i = 0; i < 8; ++i) {
        const torch::Tensor x = torch::matmul(b.exemplars.index({torch::indexing::Slice(), i}), W.t()) + bias;
        EXPECT_TRUE(torch::allclose(tokens.select(1, 2 * i), x + pe[2 * i], 1e-5, 1e-6)) << "x token " << i;
        const torch::Tensor y = E.index_select(0, b.labels.select(1, i));
        EXPECT_TRUE(torch::allclose(tokens.select(1, 2 * i + 1), y + pe[2 * i + 1], 1e-5, 1e-6)) << "label token " << i;
    }
    const torch::Tensor xq = torch::matmul(b.exemplars.select(1, 8), W.t()) + bias;
    EXPECT_TRUE(torch::allclose(tokens.select(1, 16), xq + pe[16], 1e-5, 1e-6));
}

TEST(SequenceClassifier, LogitsAtTheQueryIgnoreTheQueryLabelForEveryBackbone)
{
    const auto task = smallTask();
    icl::FewShotBatch b = task.sampleTraining(4, 1);
    for (const char* backbone : {"gpt2", "lstm", "rnn"}) {
        icl::SequenceClassifier model(smallModel(backbone), 5);
        torch::NoGradGuard guard;
        const torch::Tensor logits = model->forward(b);
        ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{4, 20})) << backbone;
        icl::FewShotBatch hidden = b;
        hidden.labels = b.labels.clone();
        hidden.labels.select(1, 8).fill_(0);  // the answer must not leak into the input
        EXPECT_TRUE(torch::equal(model->forward(hidden), logits)) << backbone;
        icl::FewShotBatch changed = b;
        changed.exemplars = b.exemplars.clone();
        changed.exemplars.select(1, 0).add_(1.0);  // the first context exemplar matters
        EXPECT_FALSE(torch::allclose(model->forward(changed), logits)) << backbone;
        // Same seed, same weights.
        icl::SequenceClassifier again(smallModel(backbone), 5);
        EXPECT_TRUE(torch::equal(again->forward(b), logits)) << backbone;
    }
    EXPECT_THROW(icl::SequenceClassifier(smallModel("transformer"), 0), icl::Error);
}
