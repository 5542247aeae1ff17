// Tests for train/trainer beyond the single step: gradient accumulation (two micro-batches of 4,
// applied, equal one SGD step on the batch of 8 they make, within float rounding of the summed
// gradients) and evaluation planned for inference (BatchNorm running statistics used and left
// unchanged; the next step plans for training again and updates them), a gradient that is not
// finite stopping the step before its update, and accumulation on any number of threads.
#include "nnperf/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/mlp.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/batchnorm.h"
#include "test_util.h"

namespace nnperf {
namespace {

constexpr int64_t kFeatures = 10, kClasses = 3;

OptimizerOptions sgd() {
  OptimizerOptions o;
  o.name = "sgd";
  o.lr = 0.1;
  o.momentum = 0.9;
  o.weight_decay = 5e-4;
  o.nesterov = true;
  return o;
}

std::vector<float> weights(Graph& g) {
  std::vector<float> out;
  for (const Param& p : g.params())
    out.insert(out.end(), p.value->data(), p.value->data() + p.value->numel());
  return out;
}

// Samples [first, first + n) of a batch of any rank.
Tensor rows(const Tensor& x, int64_t first, int64_t n) {
  Shape s = x.shape();
  const int64_t sample = x.numel() / s[0];
  s[0] = n;
  Tensor out(s);
  std::memcpy(out.data(), x.data() + first * sample,
              static_cast<std::size_t>(n * sample) * sizeof(float));
  return out;
}

TEST(Trainer, AccumulatedMicroBatchesEqualOneBigStep) {
  const Tensor x = test::random_tensor({8, kFeatures}, 3);
  const std::vector<int32_t> y{0, 1, 2, 0, 1, 2, 2, 1};
  const auto run = [&](bool accumulate) {
    Graph g = build_mlp(kFeatures, {7}, kClasses, find_activation("Tanh"), false);
    Rng rng(9);
    g.init(rng);
    Trainer t(g, make_optimizer(sgd()), PlanContext{});
    if (!accumulate) {
      t.step(x, y);
    } else {
      t.accumulate(rows(x, 0, 4), std::span<const int32_t>(y.data(), 4));
      EXPECT_EQ(t.accumulated(), 1);
      t.accumulate(rows(x, 4, 4), std::span<const int32_t>(y.data() + 4, 4));
      t.apply_accumulated();
      EXPECT_EQ(t.accumulated(), 0);
    }
    EXPECT_EQ(t.optimizer().steps(), 1);
    return weights(g);
  };
  const std::vector<float> big = run(false), acc = run(true);
  ASSERT_EQ(big.size(), acc.size());
  for (std::size_t i = 0; i < big.size(); ++i) {
    // lr 0.1 x a gradient summed in another order: a few float ulps of the gradient.
    EXPECT_NEAR(acc[i], big[i], 1e-6 * (1 + std::abs(big[i]))) << i;
  }
}

// The sums of micro-batches' gradients and their mean are element-wise: the same floats on any
// number of threads. A first layer of 300 x 300 weights is long enough to be split (32768 values
// a thread at least); the naive GEMM runs on one thread whatever the plan says.
TEST(Trainer, AccumulationGivesTheSameFloatsOnAnyThreads) {
  constexpr int64_t kWide = 300;
  const Tensor x = test::random_tensor({8, kWide}, 4);
  const std::vector<int32_t> y{0, 1, 2, 0, 1, 2, 2, 1};
  const auto run = [&](int threads) {
    Graph g = build_mlp(kWide, {kWide}, kClasses, find_activation("Tanh"), false);
    Rng rng(9);
    g.init(rng);
    PlanContext ctx;
    ctx.threads = threads;
    ctx.gemm = &find_gemm("naive");
    Trainer t(g, make_optimizer(sgd()), ctx);
    for (int step = 0; step < 2; ++step) {
      for (int64_t part = 0; part < 4; ++part) {
        t.accumulate(rows(x, 2 * part, 2), std::span<const int32_t>(y.data() + 2 * part, 2));
      }
      t.apply_accumulated();
    }
    return weights(g);
  };
  const std::vector<float> one = run(1), three = run(3);
  ASSERT_EQ(one.size(), three.size());
  for (std::size_t i = 0; i < one.size(); ++i) ASSERT_EQ(one[i], three[i]) << i;
}

TEST(Trainer, EvaluationUsesRunningStatisticsAndLeavesThem) {
  const ModelEntry& m = find_model("resnet18");
  ModelOptions mo;
  mo.input_shape = Shape{3, 8, 8};
  mo.classes = 4;
  Graph g = m.build(mo);
  Rng rng(2);
  g.init(rng);
  Trainer t(g, make_optimizer(sgd()), PlanContext{});
  const Tensor x = test::random_tensor({4, 3, 8, 8}, 5);
  const std::vector<int32_t> y{0, 1, 2, 3};
  t.step(x, y);
  BatchNorm2d* bn = nullptr;
  for (int i = 1; i < g.size() && bn == nullptr; ++i) bn = dynamic_cast<BatchNorm2d*>(&g.layer(i));
  ASSERT_NE(bn, nullptr);
  const std::vector<float> mean(bn->running_mean().data(),
                                bn->running_mean().data() + bn->running_mean().numel());
  const BatchResult a = t.evaluate(x, y), b = t.evaluate(x, y);
  EXPECT_EQ(a.loss_sum, b.loss_sum);
  EXPECT_TRUE(std::equal(mean.begin(), mean.end(), bn->running_mean().data()));
  // Running statistics make an image's loss independent of its batch: the four evaluated one at
  // a time sum to the batch's loss. Batch statistics would not (layer4's 1x1 maps of a single
  // image have no variance at all).
  double one_at_a_time = 0;
  for (int64_t i = 0; i < 4; ++i) {
    one_at_a_time += t.evaluate(rows(x, i, 1), std::span<const int32_t>(y.data() + i, 1)).loss_sum;
  }
  EXPECT_NEAR(one_at_a_time, a.loss_sum, 1e-5 * (1 + std::abs(a.loss_sum)));
  t.step(x, y);  // planned for training again: the running mean moves
  EXPECT_FALSE(std::equal(mean.begin(), mean.end(), bn->running_mean().data()));
  EXPECT_THROW(t.apply_accumulated(), Error);
}

// A gradient that overflows while the logits and the loss stay finite: inputs at 3e38, the
// first layer's weights 0 (its output, and the logits, 0), the second's +-100, so each sample's
// first-layer delta is about 17 and delta x input overflows. The step stops in the backward that
// wrote it, names that gradient and the step, and leaves every weight as it was.
TEST(Trainer, ANonFiniteGradientStopsTheStepBeforeTheUpdate) {
  Graph g = build_mlp(kFeatures, {7}, kClasses, find_activation("Tanh"), false);
  Rng rng(9);
  g.init(rng);
  for (const Param& p : g.params()) {
    float* v = p.value->data();
    // Linear weights are [in, out]: the second layer's is 7 x kClasses, class c in column c.
    const bool last = p.value->shape().rank() == 2 && p.value->size(1) == kClasses;
    for (int64_t i = 0; i < p.value->numel(); ++i) {
      v[i] = last ? (i % kClasses == 0 ? 100.0f : -100.0f) : 0.0f;
    }
  }
  const std::vector<float> before = weights(g);
  Trainer t(g, make_optimizer(sgd()), PlanContext{});
  Tensor x({8, kFeatures});
  std::fill(x.data(), x.data() + x.numel(), 3e38f);
  const std::vector<int32_t> y{0, 1, 2, 0, 1, 2, 2, 1};
  try {
    t.step(x, y);
    FAIL() << "a step with an overflowing gradient did not throw";
  } catch (const DivergenceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("training diverged at step 1: gradient of "), std::string::npos) << what;
    EXPECT_NE(what.find(".weight is not finite"), std::string::npos) << what;
    EXPECT_EQ(what.find("bias"), std::string::npos) << what;  // the first layer's bias is finite
  }
  EXPECT_EQ(t.optimizer().steps(), 0);
  EXPECT_EQ(weights(g), before);
}

}  // namespace
}  // namespace nnperf
