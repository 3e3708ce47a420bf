#include "core/models/sequence_classifier.h"

#include <cmath>

#include "core/error.h"
#include "core/io/kinds.h"

namespace icl {

torch::Tensor sinusoidalPositions(int64_t length, int64_t d, double max_timescale)
{
    if (d <= 0 || d % 2)
        throw Error("sinusoidal positions: the width must be even and > 0, got " + std::to_string(d));
    const torch::Tensor p = torch::arange(length, torch::kFloat64).unsqueeze(1);                 // [T, 1]
    const torch::Tensor i = torch::arange(d / 2, torch::kFloat64).unsqueeze(0);                  // [1, d/2]
    const torch::Tensor omega = torch::pow(torch::tensor(max_timescale, torch::kFloat64), -2.0 * i / double(d));
    const torch::Tensor angle = p * omega;                                                        // [T, d/2]
    return torch::cat({torch::sin(angle), torch::cos(angle)}, 1).to(torch::kFloat32);
}

ResNetEncoderImpl::ResNetEncoderImpl(int64_t d_model)
{
    using namespace torch::nn;
    auto conv = [](int64_t in, int64_t out, int64_t k, int64_t stride) {
        return Conv2d(Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
    };
    m_stem = register_module("stem", conv(1, 16, 3, 1));
    m_stemBn = register_module("stem_bn", BatchNorm2d(16));
    const int64_t channels[4] = {16, 32, 32, 64}, strides[4] = {1, 2, 2, 2};
    int64_t in = 16;
    for (int g = 0; g < 4; ++g)
        for (int b = 0; b < 2; ++b) {
            const int64_t c = channels[g], mid = std::max<int64_t>(1, c / 4), stride = b == 0 ? strides[g] : 1;
            const std::string name = "group" + std::to_string(g) + "_block" + std::to_string(b) + "_";
            Block k;
            k.conv1 = register_module(name + "conv1", conv(in, mid, 1, 1));
            k.bn1 = register_module(name + "bn1", BatchNorm2d(mid));
            k.conv2 = register_module(name + "conv2", conv(mid, mid, 3, stride));
            k.bn2 = register_module(name + "bn2", BatchNorm2d(mid));
            k.conv3 = register_module(name + "conv3", conv(mid, c, 1, 1));
            k.bn3 = register_module(name + "bn3", BatchNorm2d(c));
            if (in != c || stride != 1) {
                k.projection = register_module(name + "projection", conv(in, c, 1, stride));
                k.bnProjection = register_module(name + "projection_bn", BatchNorm2d(c));
            }
            m_blocks.push_back(k);
            in = c;
        }
    m_out = register_module("out", Linear(64, d_model));
}

torch::Tensor ResNetEncoderImpl::forward(const torch::Tensor& images)
{
    torch::Tensor x = torch::relu(m_stemBn->forward(m_stem->forward(images)));
    for (Block& k : m_blocks) {
        torch::Tensor h = torch::relu(k.bn1->forward(k.conv1->forward(x)));
        h = torch::relu(k.bn2->forward(k.conv2->forward(h)));
        h = k.bn3->forward(k.conv3->forward(h));
        const torch::Tensor shortcut = k.projection.is_empty() ? x : k.bnProjection->forward(k.projection->forward(x));
        x = torch::relu(h + shortcut);
    }
    return m_out->forward(x.mean({2, 3}));  // global average pooling → [N, 64] → [N, d_model]
}

SequenceClassifierImpl::SequenceClassifierImpl(const SequenceClassifierOptions& o, uint64_t seed)
    : m_options(o)
{
    if (o.backbone != "gpt2" && o.backbone != "lstm" && o.backbone != "rnn")
        throw Error("model.kind: unknown sequence classifier \"" + o.backbone + "\" (expected gpt2, lstm or rnn)");
    if (o.n_labels < 2 || o.exemplar_dim < 1 || o.d_model < 2 || o.d_model % 2 || o.n_layers < 1 || o.n_context < 1)
        throw Error("sequence classifier: inconsistent sizes (n_labels " + std::to_string(o.n_labels) + ", d_model "
                    + std::to_string(o.d_model) + " (even), n_layers " + std::to_string(o.n_layers) + ")");
    const int64_t D = o.d_model, T = 2 * o.n_context + 1;
    if (o.encoder == "resnet") {
        if (o.image_height < 1 || o.image_width < 1 || o.image_height * o.image_width != o.exemplar_dim)
            throw Error("model.encoder: \"resnet\" needs image exemplars (height × width = exemplar width), got "
                        + std::to_string(o.image_height) + " × " + std::to_string(o.image_width) + " for "
                        + std::to_string(o.exemplar_dim) + " values");
        m_resnet = register_module("encoder", ResNetEncoder(D));
    } else if (o.encoder == "linear") {
        m_encoder = register_module("encoder", torch::nn::Linear(o.exemplar_dim, D));
    } else {
        throw Error("model.encoder: unknown exemplar encoder \"" + o.encoder + "\" (expected linear or resnet)");
    }
    m_labelEmbedding = register_module("label_embed", torch::nn::Embedding(o.n_labels, D));
    if (o.backbone == "gpt2") {
        Gpt2Options g;
        g.input_dim = D;
        g.n_layers = o.n_layers;
        g.n_heads = o.n_heads;
        g.d_model = D;
        g.n_positions = T;
        g.token_embedding = false;  // tokens arrive embedded (encoder, label embedding, sinusoidal positions)
        m_transformer = register_module("transformer", Gpt2(g, seed));
    } else if (o.backbone == "lstm") {
        m_lstm = register_module("lstm", torch::nn::LSTM(torch::nn::LSTMOptions(D, D).num_layers(o.n_layers).batch_first(true)));
    } else {
        m_rnn = register_module(
            "rnn", torch::nn::RNN(torch::nn::RNNOptions(D, D).num_layers(o.n_layers).nonlinearity(torch::kTanh).batch_first(true)));
    }
    m_readOut = register_module("read_out", torch::nn::Linear(D, o.n_labels));
    m_positions = register_buffer("positions", sinusoidalPositions(T, D, o.max_timescale));
    torch::NoGradGuard guard;
    torch::Generator gen = at::detail::createCPUGenerator(seed);
    auto normal = [&](torch::Tensor& t) { t.copy_(at::normal(0.0, 0.02, t.sizes(), gen)); };
    if (!m_encoder.is_empty()) {
        normal(m_encoder->weight);
        m_encoder->bias.zero_();
    } else {
        // Convolutions: He-normal (fan-in) for the ReLU network; batch-norm gains 1, biases 0; the output
        // map N(0, 0.02) like the other read-ins.
        for (auto& item : m_resnet->named_parameters()) {
            const std::string& name = item.key();
            torch::Tensor& p = item.value();
            if (p.dim() == 4) {
                const double fanIn = double(p.size(1) * p.size(2) * p.size(3));
                p.copy_(at::normal(0.0, std::sqrt(2.0 / fanIn), p.sizes(), gen));
            } else if (name.rfind("out.weight", 0) == 0) {
                normal(p);
            } else if (name.find("bias") != std::string::npos) {
                p.zero_();
            } else {
                p.fill_(1.0);
            }
        }
    }
    normal(m_labelEmbedding->weight);
    normal(m_readOut->weight);
    m_readOut->bias.zero_();
    // Recurrent cells: PyTorch's default U(−1/√H, 1/√H) for every weight and bias, drawn from the seed.
    const double k = 1.0 / std::sqrt(double(D));
    std::vector<torch::Tensor> recurrent;
    if (!m_lstm.is_empty())
        recurrent = m_lstm->parameters();
    if (!m_rnn.is_empty())
        recurrent = m_rnn->parameters();
    for (auto& p : recurrent)
        p.copy_(at::empty(p.sizes(), p.options()).uniform_(-k, k, gen));
}

torch::Tensor SequenceClassifierImpl::embed(const FewShotBatch& batch)
{
    const int64_t B = batch.batchSize(), L = batch.nContext(), D = m_options.d_model;
    if (L != m_options.n_context)
        throw Error("sequence classifier: built for " + std::to_string(m_options.n_context) + " context pairs, got "
                    + std::to_string(L));
    torch::Tensor x;  // [B, L+1, d_model]
    if (!m_encoder.is_empty()) {
        x = m_encoder->forward(batch.exemplars.to(m_encoder->weight.dtype()));
    } else {
        const torch::Tensor images
            = batch.exemplars.to(torch::kFloat32).reshape({B * (L + 1), 1, m_options.image_height, m_options.image_width});
        x = m_resnet->forward(images).view({B, L + 1, D});
    }
    const torch::Tensor y = m_labelEmbedding->forward(batch.contextLabels());                // [B, L, D]
    // Interleave: x_1, y_1, …, x_L, y_L, then x_q.
    const torch::Tensor pairs = torch::stack({x.narrow(1, 0, L), y}, 2).reshape({B, 2 * L, D});
    const torch::Tensor tokens = torch::cat({pairs, x.narrow(1, L, 1)}, 1);                   // [B, 2L+1, D]
    return tokens + m_positions.unsqueeze(0);
}

torch::Tensor SequenceClassifierImpl::forward(const FewShotBatch& batch, ActivationCapture* capture)
{
    const torch::Tensor tokens = embed(batch);
    torch::Tensor h;
    if (!m_transformer.is_empty())
        h = m_transformer->forwardResidual(tokens, capture);  // final LayerNorm applied, [B, T, D]
    else if (!m_lstm.is_empty())
        h = std::get<0>(m_lstm->forward(tokens));
    else
        h = std::get<0>(m_rnn->forward(tokens));
    return m_readOut->forward(h.select(1, h.size(1) - 1));  // logits at the query, [B, n_labels]
}

FewShotOptions fewShotOptions(const TaskConfig& task, uint64_t seed)
{
    FewShotOptions o;
    o.n_classes = task.n_classes;
    o.n_holdout = task.n_holdout;
    o.zipf_alpha = task.zipf_alpha;
    o.p_bursty = task.p_bursty;
    o.labels_per_class = task.labels_per_class;
    o.n_labels = task.n_labels;
    o.context_len = task.n_context;
    o.exemplar_dim = task.exemplar_dim;
    o.within_class_noise = task.within_class_noise;
    o.exemplar_source = task.exemplar_source;
    o.exemplar_path = task.exemplar_path;
    o.exemplar_labels_path = task.exemplar_labels_path;
    o.image_size = task.image_size;
    o.exemplars_per_class = task.exemplars_per_class;
    o.n_common_classes = task.n_common_classes;
    o.p_bursty_common = task.p_bursty_common;
    o.p_bursty_zipfian = task.p_bursty_zipfian;
    o.non_bursty_type = task.non_bursty_type;
    o.zipf_within_common_rare = task.zipf_within_common_rare;
    o.seed = seed;
    return o;
}

SequenceClassifier makeSequenceClassifier(const ExperimentConfig& config, const std::vector<int64_t>& exemplar_shape,
                                          uint64_t seed)
{
    if (kindOf(config.task) != TaskKind::FewshotClassification)
        throw Error("model.kind: a sequence classifier needs task.kind \"fewshot_classification\"");
    checkModelMemory(config, MemoryBudget("the config"), exemplar_shape);  // before a tensor is allocated
    SequenceClassifierOptions o;
    o.backbone = config.model.kind;
    o.exemplar_dim = 1;
    for (int64_t n : exemplar_shape)
        o.exemplar_dim *= n;
    o.encoder = config.model.encoder;
    if (exemplar_shape.size() == 2) {
        o.image_height = exemplar_shape[0];
        o.image_width = exemplar_shape[1];
    }
    o.n_labels = config.task.n_labels > 0 ? config.task.n_labels : config.task.n_classes * config.task.labels_per_class;
    o.d_model = config.model.d_model;
    o.n_layers = config.model.n_layers;
    o.n_heads = config.model.n_heads;
    o.n_context = config.task.n_context;
    return SequenceClassifier(o, seed);
}

} // namespace icl
