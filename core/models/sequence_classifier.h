#pragma once
// Sequence classifiers of Chan et al. 2022 (docs/science.md §4) for few-shot classification sequences
// (x_1, y_1, …, x_L, y_L, x_q): a causal GPT-2 transformer, or the recurrent baselines LSTM and vanilla
// RNN, over the same tokens. Core-internal (LibTorch).
//
// Tokens (2L + 1 of them, the paper's 17 for L = 8): exemplar tokens enc(x_i) (linear exemplar encoder
// R^D → R^{d_model}), label tokens E[y_i] (a learned label embedding, n_labels × d_model), then sinusoidal
// position codes (max timescale 30) added to every token. The classifier reads the logits over the label
// vocabulary at the query token (the last one).

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "core/io/config.h"
#include "core/models/capture.h"
#include "core/models/gpt2.h"
#include "core/tasks/fewshot_classification.h"

namespace icl {

/// Sizes of a sequence classifier.
struct SequenceClassifierOptions {
    std::string backbone = "gpt2";  ///< "gpt2" (causal pre-LN transformer), "lstm" or "rnn" (tanh)
    int64_t exemplar_dim = 64;      ///< D, width of an exemplar vector (images: height × width, row-major)
    std::string encoder = "linear"; ///< "linear" (R^D → R^{d_model}) or "resnet" (images, ResNetEncoder)
    int64_t image_height = 0;       ///< resnet: exemplars are [image_height, image_width] grayscale images
    int64_t image_width = 0;
    int64_t n_labels = 1600;        ///< label vocabulary (logits per query)
    int64_t d_model = 64;           ///< token width (and hidden size of the recurrent backbones)
    int64_t n_layers = 2;
    int64_t n_heads = 8;            ///< gpt2 only; d_model must be divisible by it
    int64_t n_context = 8;          ///< L, context pairs (sequence length 2L + 1)
    double max_timescale = 30.0;    ///< of the sinusoidal position code (Chan et al.)
};

/// Sinusoidal position code of Chan et al. (Haiku's convention): for positions p = 0 … T−1 and
/// i = 0 … d/2 − 1 with ω_i = max_timescale^(−2i/d), PE[p] = [sin(p·ω_0), …, sin(p·ω_{d/2−1}),
/// cos(p·ω_0), …, cos(p·ω_{d/2−1})]. Returns [T, d] float32; `d` must be even (throws icl::Error).
torch::Tensor sinusoidalPositions(int64_t length, int64_t d, double max_timescale);

/// Chan et al.'s exemplar encoder for images: a small ResNet of 4 groups × 2 bottleneck blocks with
/// 16/32/32/64 output channels (the first group at stride 1, the others at stride 2), each block
/// 1×1 → 3×3 → 1×1 convolutions with bottleneck width channels/4, batch normalisation and ReLU, and a
/// projection shortcut where the shape changes; a 3×3 stem convolution to 16 channels (this small-image
/// stem replaces Haiku's 7×7/stride-2 stem and max-pool), global average pooling to 64, then a linear map to
/// d_model. Input [N, 1, H, W] pixel values in [0, 1]; output [N, d_model].
class ResNetEncoderImpl : public torch::nn::Module {
public:
    explicit ResNetEncoderImpl(int64_t d_model);
    torch::Tensor forward(const torch::Tensor& images);

private:
    struct Block {
        torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr}, projection{nullptr};
        torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr}, bnProjection{nullptr};
    };
    torch::nn::Conv2d m_stem{nullptr};
    torch::nn::BatchNorm2d m_stemBn{nullptr};
    std::vector<Block> m_blocks;
    torch::nn::Linear m_out{nullptr};
};
TORCH_MODULE(ResNetEncoder);

class SequenceClassifierImpl : public torch::nn::Module {
public:
    /// Builds the model with GPT-2-style initialisation (N(0, 0.02) for the encoder, label embedding and
    /// read-out; the transformer as Gpt2Impl; U(−1/√d_model, 1/√d_model) for the recurrent cells, PyTorch's
    /// default),
    /// drawn from `seed`. Throws icl::Error for inconsistent sizes or an unknown backbone.
    SequenceClassifierImpl(const SequenceClassifierOptions& options, uint64_t seed);

    /// The token sequence of a batch: [B, 2L+1, d_model] (x_1, y_1, …, x_L, y_L, x_q, positions added).
    /// The query's label is never read.
    torch::Tensor embed(const FewShotBatch& batch);

    /// Logits over the label vocabulary at the query token: [B, n_labels]. `capture` (gpt2 only) receives
    /// the transformer's activations (embed, resid_pre.{l}, attn.pattern.{l}, …) over the 2L+1 tokens.
    torch::Tensor forward(const FewShotBatch& batch, ActivationCapture* capture = nullptr);

    const SequenceClassifierOptions& options() const { return m_options; }

private:
    SequenceClassifierOptions m_options;
    torch::nn::Linear m_encoder{nullptr};  ///< linear encoder
    ResNetEncoder m_resnet{nullptr};       ///< resnet encoder
    torch::nn::Embedding m_labelEmbedding{nullptr};
    torch::nn::Linear m_readOut{nullptr};
    Gpt2 m_transformer{nullptr};
    torch::nn::LSTM m_lstm{nullptr};
    torch::nn::RNN m_rnn{nullptr};
    torch::Tensor m_positions;  ///< [2L+1, d_model] buffer
};
TORCH_MODULE(SequenceClassifier);

/// FewShotOptions of a fewshot_classification task config; `seed` fixes the class split, labels and
/// prototypes (the trainer passes the experiment seed).
FewShotOptions fewShotOptions(const TaskConfig& task, uint64_t seed);

/// The classifier of a fewshot_classification config (model.kind gpt2 → transformer, lstm, rnn; sizes from
/// model.d_model, n_layers, n_heads; encoder model.encoder; label vocabulary from the task) for exemplars of
/// shape `exemplar_shape` (FewShotClassification::exemplarShape(): [D] vectors or [H, W] images), initialised
/// from `seed`. Throws icl::Error for a config of another task or a resnet encoder on vector exemplars, and for a
/// model over the default memory budget (checkModelMemory).
SequenceClassifier makeSequenceClassifier(const ExperimentConfig& config, const std::vector<int64_t>& exemplar_shape,
                                          uint64_t seed);

} // namespace icl
