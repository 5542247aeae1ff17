// The GPU MLP trainer (train/cuda_mlp) against the CPU Trainer with the `blas` GEMM: the same
// initial weights and batches, SGD (momentum, Nesterov, weight decay) and Adam, label smoothing,
// an odd width and a partial batch, over both device GEMM rows. Tolerances: the first step's loss
// within 1e-5 relative (only summation order differs: float32 over at most 784 terms), later
// losses within 1e-3 absolute after 30 steps (mlp-bench's consistency bound), the final weights
// within 1e-3 of the largest weight change. On a machine without a usable CUDA device the
// device cases report skipped with the reason, and the refusals are checked instead.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/models/mlp.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/train/cuda_mlp.h"
#include "nnperf/train/trainer.h"
#include "test_util.h"

namespace nnperf {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason()

Graph make_mlp(const std::string& act, uint64_t seed) {
  Graph g = build_mlp(37, {29, 16}, 7, find_activation(act), /*flatten=*/false);
  Rng rng(seed);
  g.init(rng);
  return g;
}

TEST(CudaMlp, RefusesWithoutADeviceOrWithACpuRow) {
  Graph g = make_mlp("ReLU", 1);
  OptimizerOptions o;
  try {
    CudaMlpTrainer t(g, find_gemm("blas"), o);
    FAIL() << "a CPU GEMM row was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--impl blas: runs on the CPU"), std::string::npos)
        << e.what();
  }
  if (cuda::available()) return;
  try {
    CudaMlpTrainer t(g, find_gemm("cublas"), o);
    FAIL() << "built without a device";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: " + cuda::unavailable_reason());
  }
}

TEST(CudaMlp, RefusesLayersItCannotRun) {
  SKIP_WITHOUT_DEVICE();
  Graph g;
  g.add("conv", std::make_unique<Conv2d>(1, 4, 3, 3));
  OptimizerOptions o;
  EXPECT_THROW(CudaMlpTrainer(g, find_gemm("cublas"), o), UsageError);
}

struct Case {
  std::string gemm, act, optimizer;
  bool nesterov;
  float label_smoothing;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.gemm << " " << c.act << " " << c.optimizer << (c.nesterov ? " nesterov" : "")
      << " smoothing " << c.label_smoothing;
}

class CudaMlpMatchesCpu : public ::testing::TestWithParam<Case> {};

TEST_P(CudaMlpMatchesCpu, LossesAndWeights) {
  SKIP_WITHOUT_DEVICE();
  const Case c = GetParam();
  OptimizerOptions o;
  o.name = c.optimizer;
  o.lr = c.optimizer == "sgd" ? 0.05 : 2e-3;
  o.momentum = 0.9;
  o.nesterov = c.nesterov;
  o.weight_decay = 1e-3;
  Graph cpu = make_mlp(c.act, 5), gpu = make_mlp(c.act, 5);
  Graph initial = make_mlp(c.act, 5);
  Trainer ref(cpu, make_optimizer(o), PlanContext{&find_gemm("blas"), 1, true}, c.label_smoothing);
  CudaMlpTrainer t(gpu, find_gemm(c.gemm), o, c.label_smoothing);
  Rng rng(9);
  for (int step = 0; step < 30; ++step) {
    const int64_t mb = step % 7 == 6 ? 13 : 50;  // a partial batch now and then
    Tensor x(Shape{mb, 37});
    rng.fill_uniform(std::span<float>(x.data(), static_cast<std::size_t>(x.numel())), -1.0f, 1.0f);
    std::vector<int32_t> y(static_cast<std::size_t>(mb));
    for (auto& l : y) l = static_cast<int32_t>(rng.below(7));
    const BatchResult want = ref.step(x, y), got = t.step(x, y);
    SCOPED_TRACE(fmt::format("step {}", step + 1));
    if (step == 0) {
      ASSERT_NEAR(got.mean_loss(), want.mean_loss(), 1e-5 * want.mean_loss());
    } else {
      ASSERT_NEAR(got.mean_loss(), want.mean_loss(), 1e-3);
    }
    EXPECT_EQ(got.count, want.count);
  }
  t.download_params();
  const auto pc = cpu.params(), pg = gpu.params();
  const auto p0 = initial.params();
  ASSERT_EQ(pc.size(), pg.size());
  for (std::size_t i = 0; i < pc.size(); ++i) {
    double change = 0, diff = 0;
    for (int64_t k = 0; k < pc[i].value->numel(); ++k) {
      const double a = pc[i].value->data()[k], b = pg[i].value->data()[k];
      change = std::max(change, std::abs(a - static_cast<double>(p0[i].value->data()[k])));
      diff = std::max(diff, std::abs(a - b));
    }
    EXPECT_GT(change, 0.0) << pc[i].name;
    EXPECT_LE(diff, 1e-3 * change) << pc[i].name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, CudaMlpMatchesCpu,
    ::testing::Values(Case{"cublas", "ReLU", "sgd", true, 0.0f},
                      Case{"cuda", "ReLU", "sgd", true, 0.0f},
                      Case{"cuda", "GELU", "adam", false, 0.1f},
                      Case{"cublas", "Mish", "sgd", false, 0.0f},
                      Case{"cublas", "Tanh", "adam", false, 0.0f}),
    [](const ::testing::TestParamInfo<Case>& p) {
      return fmt::format("{}_{}_{}{}{}", p.param.gemm, p.param.act, p.param.optimizer,
                         p.param.nesterov ? "_nesterov" : "",
                         p.param.label_smoothing > 0 ? "_smoothing" : "");
    });

TEST(CudaMlp, EvaluateMatchesTheCpuOnADataset) {
  SKIP_WITHOUT_DEVICE();
  Graph cpu = make_mlp("ReLU", 3), gpu = make_mlp("ReLU", 3);
  Dataset d;
  d.name = "t";
  d.images = test::random_tensor(Shape{103, 37}, 4, -1.0f, 1.0f);
  d.labels.resize(103);
  for (std::size_t i = 0; i < d.labels.size(); ++i) d.labels[i] = static_cast<int32_t>(i % 7);
  Trainer ref(cpu, make_optimizer(OptimizerOptions{}), PlanContext{&find_gemm("blas"), 1, true});
  CudaMlpTrainer t(gpu, find_gemm("cublas"), OptimizerOptions{});
  const BatchResult want = ref.evaluate(d, 32), got = t.evaluate(d, 32);
  EXPECT_EQ(got.count, 103);
  EXPECT_EQ(got.correct, want.correct);
  EXPECT_NEAR(got.mean_loss(), want.mean_loss(), 1e-5 * want.mean_loss());
}

// The loss is read once, at the end of a step (after its update): a step whose loss is not finite
// still throws DivergenceError naming itself and the updates before it. Logits of 1e38 overflow
// float32's softmax on the first step; a rate of 1e30 drives a finite start to it later.
TEST(CudaMlp, ANonFiniteLossEndsTheStepWithItsNumber) {
  SKIP_WITHOUT_DEVICE();
  const Tensor x = test::random_tensor(Shape{16, 37}, 5, -1.0f, 1.0f);
  std::vector<int32_t> labels(16);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 7);
  {
    Graph g = make_mlp("ReLU", 4);
    for (const Param& p : g.params()) p.value->fill(1e30f);
    CudaMlpTrainer t(g, find_gemm("cublas"), OptimizerOptions{});
    try {
      (void)t.step(x, labels);
      ADD_FAILURE() << "a non-finite loss was returned";
    } catch (const DivergenceError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("training diverged at step 1: loss is ", 0), 0u)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("before any update"), std::string::npos) << e.what();
    }
  }
  Graph g = make_mlp("ReLU", 4);
  OptimizerOptions wild;
  wild.lr = 1e30;
  CudaMlpTrainer t(g, find_gemm("cublas"), wild);
  int64_t failed_at = 0;
  for (int i = 0; i < 20 && failed_at == 0; ++i) {
    try {
      (void)t.step(x, labels);
    } catch (const DivergenceError& e) {
      failed_at = t.steps();
      EXPECT_NE(
          std::string(e.what()).find(fmt::format("training diverged at step {}: ", failed_at)),
          std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(fmt::format("after {} updates", failed_at - 1)),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_GT(failed_at, 1);
}

}  // namespace
}  // namespace nnperf
