#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

#include "core/baselines/baselines.h"
#include "core/error.h"
#include "core/io/config.h"
#include "core/io/experiment_file.h"
#include "core/models/gpt2.h"
#include "core/tasks/linear_regression.h"
#include "core/training/sharded_step.h"
#include "core/training/trainer.h"
#include "tests/support/scratch.h"
#include "tests/support/tiny_models.h"

namespace {

// Every prompt in exactly one shard, in order; sizes differ by at most one, the larger ones first.
TEST(ShardBounds, PartitionTheBatchInOrder)
{
    for (int64_t batch : {1, 2, 7, 64, 65})
        for (int64_t shards = 1; shards <= std::min<int64_t>(batch, 9); ++shards) {
            int64_t next = 0;
            for (int64_t s = 0; s < shards; ++s) {
                const auto [begin, end] = icl::shardBounds(batch, shards, s);
                EXPECT_EQ(begin, next) << batch << " / " << shards << " shard " << s;
                const int64_t expected = batch / shards + (s < batch % shards ? 1 : 0);
                EXPECT_EQ(end - begin, expected) << batch << " / " << shards << " shard " << s;
                next = end;
            }
            EXPECT_EQ(next, batch);
        }
    EXPECT_THROW(icl::shardBounds(3, 4, 0), std::invalid_argument);  // an empty shard
    EXPECT_THROW(icl::shardBounds(8, 0, 0), std::invalid_argument);
    EXPECT_THROW(icl::shardBounds(8, 2, 2), std::invalid_argument);
}

struct Gpt2Case {
    icl::Gpt2 model;
    icl::PromptBatch batch;
};

/// A 2-block GPT-2 (2 heads, width 16) on d = 5, N = 6 prompts, its weights moved away from the initialisation.
Gpt2Case gpt2Case(int64_t batchSize, torch::Dtype dtype)
{
    const icl::Gpt2Options o = icl::test::gpt2Options(5, 2, 2, 16, 13);
    Gpt2Case c{icl::Gpt2(o, 11), {}};
    {
        torch::NoGradGuard guard;
        torch::manual_seed(5);
        for (auto& p : c.model->parameters())
            p.add_(torch::randn(p.sizes()) * 0.2);
    }
    c.model->to(dtype);
    icl::TaskConfig t;
    t.d = 5;
    t.n_context = 6;
    t.x_distribution = "normal";
    c.batch = icl::sampleLinearRegression(t, batchSize, 3, dtype);
    return c;
}

/// The sharded step's shard loss for Garg et al.'s objective (halfMse over every position).
std::function<torch::Tensor(int64_t)> shardLoss(Gpt2Case& c, int64_t shards)
{
    return [&c, shards](int64_t s) {
        const auto [begin, end] = icl::shardBounds(c.batch.batchSize(), shards, s);
        const icl::PromptBatch part = c.batch.slice(begin, end);
        const torch::Tensor e = c.model->predictAll(part).flatten() - part.y.flatten();
        return 0.5 * e.square().sum() / double(c.batch.y.numel());
    };
}

double maxAbs(const torch::Tensor& t)
{
    return t.abs().max().item<double>();
}

/// The largest gradient entry over all parameters: the scale differences are measured against (some
/// gradients are zero in exact arithmetic, e.g. the key bias b_K's: softmax ignores a shift of a row).
double gradScale(const std::vector<torch::Tensor>& grads)
{
    double m = 0.0;
    for (const auto& g : grads)
        m = std::max(m, maxAbs(g));
    return m;
}

// The sum of the shard gradients is the gradient of the whole batch's loss (independently: autograd's
// backward of halfMse over the whole batch). In float64 the two differ only by rounding.
TEST(ShardedGradient, EqualsTheWholeBatchGradient)
{
    for (const int64_t shards : {2, 3, 4}) {
        Gpt2Case c = gpt2Case(11, torch::kFloat64);  // 11 prompts: uneven shards
        const auto params = c.model->parameters();
        const torch::Tensor whole = icl::halfMse(c.model->predictAll(c.batch).flatten(), c.batch.y.flatten());
        whole.backward();
        std::vector<torch::Tensor> expected;
        for (const auto& p : params)
            expected.push_back(p.grad().clone());
        for (auto& p : params)
            p.mutable_grad().fill_(123.0);  // stale values must be overwritten, not added to

        icl::ShardedGradient sharded(params, shards, 2);
        const torch::Tensor loss = sharded.lossAndGrad(shardLoss(c, shards));
        EXPECT_NEAR(loss.item<double>(), whole.item<double>(), 1e-12 * whole.item<double>()) << shards;
        EXPECT_FALSE(loss.requires_grad());
        const double scale = gradScale(expected);
        ASSERT_GT(scale, 1e-3);
        for (size_t i = 0; i < params.size(); ++i) {
            EXPECT_LE(maxAbs(params[i].grad() - expected[i]), 1e-12 * scale) << "shards " << shards << ", parameter " << i;
            EXPECT_TRUE(params[i].grad().is_contiguous()) << i;
        }
    }
}

// What a shard computes depends on the shard, not on the thread that runs it or on how many threads
// there are: bitwise the same loss and gradients on 1, 2 and 4 threads (float32, as training runs).
TEST(ShardedGradient, NumbersDoNotDependOnTheThreadCount)
{
    Gpt2Case c = gpt2Case(16, torch::kFloat32);
    const auto params = c.model->parameters();
    std::vector<std::vector<torch::Tensor>> grads;
    std::vector<float> losses;
    for (const int threads : {1, 2, 4}) {
        icl::ShardedGradient sharded(params, 4, threads);
        EXPECT_EQ(sharded.threads(), threads);
        losses.push_back(sharded.lossAndGrad(shardLoss(c, 4)).item<float>());
        grads.emplace_back();
        for (const auto& p : params)
            grads.back().push_back(p.grad().clone());
    }
    for (size_t t = 1; t < grads.size(); ++t) {
        EXPECT_EQ(losses[t], losses[0]);
        for (size_t i = 0; i < params.size(); ++i)
            EXPECT_TRUE(torch::equal(grads[t][i], grads[0][i])) << "run " << t << ", parameter " << i;
    }
    // And close to the whole batch's float32 gradient (only the order of the sums differs).
    for (auto& p : params)
        p.mutable_grad().zero_();
    icl::halfMse(c.model->predictAll(c.batch).flatten(), c.batch.y.flatten()).backward();
    const double scale = gradScale(grads[0]);
    for (size_t i = 0; i < params.size(); ++i)
        EXPECT_LE(maxAbs(params[i].grad() - grads[0][i]), 1e-5 * scale) << i;
}

// A parameter outside every shard's graph gets a zero gradient; a shard that throws is reported
// (the lowest-numbered one) after all shards ran, and the object still works afterwards.
TEST(ShardedGradient, UnusedParametersAndErrors)
{
    torch::Tensor a = torch::tensor({1.0, 2.0}, torch::requires_grad());
    torch::Tensor unused = torch::tensor({5.0}, torch::requires_grad());
    icl::ShardedGradient sharded({a, unused}, 3, 2);
    // Loss Σ_s (s + 1)·Σ a²: gradient 2·a·(1 + 2 + 3) = 12·a.
    const torch::Tensor loss = sharded.lossAndGrad([&](int64_t s) { return double(s + 1) * a.square().sum(); });
    EXPECT_DOUBLE_EQ(loss.item<double>(), 6.0 * 5.0);
    EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({12.0, 24.0})));
    EXPECT_TRUE(torch::equal(unused.grad(), torch::zeros({1}, torch::kFloat64)));

    try {
        sharded.lossAndGrad([&](int64_t s) -> torch::Tensor {
            if (s >= 1)
                throw icl::Error("shard " + std::to_string(s) + " failed");
            return a.sum();
        });
        ADD_FAILURE() << "no exception";
    } catch (const icl::Error& e) {
        EXPECT_STREQ(e.what(), "shard 1 failed");
    }
    EXPECT_DOUBLE_EQ(sharded.lossAndGrad([&](int64_t) { return a.sum(); }).item<double>(), 9.0);
    EXPECT_TRUE(torch::equal(a.grad(), torch::tensor({3.0, 3.0}, torch::kFloat64)));
    EXPECT_THROW(icl::ShardedGradient({a}, 0, 1), std::invalid_argument);
    EXPECT_THROW(icl::ShardedGradient({a}, 2, 0), std::invalid_argument);
}

nlohmann::json gpt2Config(std::vector<std::string> extra)
{
    icl::ConfigRequest r;
    r.preset = "garg-linear-regression";
    r.sets = {"task.d=3",           "task.n_context=4",      "model.n_layers=2",      "model.n_heads=2",
              "model.d_model=16",   "training.batch_size=10", "training.steps=6",      "training.eval_every=3",
              "training.checkpoint_every=3", "training.curriculum.enabled=false", "eval.n_prompts=50",
              "device=cpu"};
    r.sets.insert(r.sets.end(), extra.begin(), extra.end());
    return icl::resolveConfig(r);
}

std::vector<icl::NamedArray> trainedParams(const nlohmann::json& config, const std::string& name, int threads)
{
    const std::string path = icl::test::scratchPrefix() + name;
    std::filesystem::remove(path);
    icl::TrainOptions o;
    o.out_path = path;
    o.threads = threads;
    icl::train(config, o, {});
    return icl::readCheckpoint(path, 6).params;
}

// Through the trainer: a sharded run on 1 and on 2 threads gives bitwise the same weights; the
// unsharded run is the same training up to rounding (close after 6 Adam steps).
TEST(ShardedGradient, TrainingWithShardsIsTheSameOnAnyThreadCount)
{
    const auto one = trainedParams(gpt2Config({"training.shards=3"}), "shards_t1.h5", 1);
    const auto two = trainedParams(gpt2Config({"training.shards=3"}), "shards_t2.h5", 2);
    const auto whole = trainedParams(gpt2Config({}), "shards_whole.h5", 1);
    ASSERT_EQ(one.size(), two.size());
    ASSERT_EQ(one.size(), whole.size());
    for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(one[i].data, two[i].data) << one[i].name;
        ASSERT_EQ(one[i].data.size(), whole[i].data.size());
        for (size_t j = 0; j < one[i].data.size(); ++j)
            ASSERT_NEAR(one[i].data[j], whole[i].data[j], 1e-4) << one[i].name << "[" << j << "]";
    }
    EXPECT_EQ(icl::parseConfig(gpt2Config({"training.shards=3"})).training.shards, 3);
}

// A sharded run stopped at its step-3 checkpoint and resumed (the shard count comes from the stored
// config) ends with bitwise the weights of the uninterrupted run.
TEST(ShardedGradient, ResumedShardedRunMatchesAnUninterruptedOne)
{
    const auto straight = trainedParams(gpt2Config({"training.shards=2"}), "shards_straight.h5", 2);
    const std::string path = icl::test::scratchPrefix() + "shards_split.h5";
    std::filesystem::remove(path);
    icl::TrainOptions o;
    o.out_path = path;
    o.threads = 2;
    const auto first = icl::train(gpt2Config({"training.shards=2"}), o, [](const icl::TrainProgress& p) { return p.step < 3; });
    ASSERT_EQ(first.final_step, 3);
    o.resume = true;
    EXPECT_EQ(icl::train({}, o, {}).final_step, 6);
    const auto resumed = icl::readCheckpoint(path, 6).params;
    ASSERT_EQ(resumed.size(), straight.size());
    for (size_t i = 0; i < resumed.size(); ++i)
        EXPECT_EQ(resumed[i].data, straight[i].data) << resumed[i].name;
}

TEST(ShardedGradient, ConfigNamesTheKeyOfABadShardCount)
{
    auto expectError = [](const std::vector<std::string>& sets, const std::string& fragment) {
        try {
            icl::parseConfig(gpt2Config(sets));
            ADD_FAILURE() << "accepted " << sets.back();
        } catch (const icl::Error& e) {
            EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
        }
    };
    expectError({"training.shards=11"}, "training.shards: 11 shards of a batch of 10");
    expectError({"training.shards=0"}, "training.shards");
    icl::ConfigRequest r;
    r.preset = "chan-bursty";
    r.sets = {"training.shards=2"};
    try {
        icl::parseConfig(icl::resolveConfig(r));
        ADD_FAILURE() << "few-shot classification accepted shards";
    } catch (const icl::Error& e) {
        EXPECT_NE(std::string(e.what()).find("training.shards: must be 1 for task.kind \"fewshot_classification\""), std::string::npos)
            << e.what();
    }
}

} // namespace
