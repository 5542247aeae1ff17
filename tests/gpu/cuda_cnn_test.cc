// CNN training on the GPU (train/cuda_cnn.h). Everywhere: which registered models the GPU
// trainer covers (the ResNets, DenseNet) and that the others are refused by layer (VGG-16's
// Dropout, MobileNetV2's ReLU6), and the refusal without a device. With a device: three SGD
// (Nesterov, weight decay) steps of ResNet-18 and DenseNet-121 on the GPU against the CPU Trainer
// from the same weights and batch: the first loss within 1e-4 relative (the forward before any
// update; cuDNN's and nnperf's algorithms sum in other orders), the later ones within 1e-3, and
// every parameter within 1e-2 of the CPU's change of it.
#include "nnperf/train/cuda_cnn.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/models/registry.h"
#include "nnperf/train/trainer.h"
#include "test_util.h"

namespace nnperf {
namespace {

Graph built(const std::string& model, uint64_t seed) {
  ModelOptions mo;
  mo.classes = 10;
  Graph g = find_model(model).build(mo);
  Rng rng(seed);
  g.init(rng);
  return g;
}

PlanContext training_ctx() {
  PlanContext ctx;
  ctx.training = true;
  ctx.conv_algorithm = "guess";
  return ctx;
}

TEST(CudaCnnTrainer, CoversTheResNetsAndDenseNetAndRefusesTheRestByLayer) {
  for (const char* ok : {"resnet18", "resnet34", "resnet50", "resnet152", "densenet121"}) {
    SCOPED_TRACE(ok);
    Graph g = built(ok, 1);
    plan_model(find_model(ok), g, Shape{1, 3, 64, 64}, training_ctx());
    EXPECT_EQ(cuda_training_unsupported(g), "");
  }
  for (const char* refused : {"vgg16", "mobilenet_v2"}) {
    SCOPED_TRACE(refused);
    Graph g = built(refused, 1);
    plan_model(find_model(refused), g, Shape{1, 3, 64, 64}, training_ctx());
    EXPECT_NE(cuda_training_unsupported(g).find("no GPU training kernel for"), std::string::npos)
        << cuda_training_unsupported(g);
  }
}

TEST(CudaCnnTrainer, WithoutADeviceItRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  Graph g = built("resnet18", 1);
  plan_model(find_model("resnet18"), g, Shape{2, 3, 32, 32}, training_ctx());
  OptimizerOptions sgd;
  sgd.name = "sgd";
  try {
    CudaCnnTrainer t(g, sgd, "guess");
    FAIL() << "planned without a device";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: " + cuda::unavailable_reason());
  }
}

void expect_same_training(const std::string& model, const Shape& input) {
  SCOPED_TRACE(model);
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.lr = 0.01;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weight_decay = 5e-4;
  Graph cpu_graph = built(model, 5), gpu_graph = built(model, 5);
  const std::vector<Param> initial = cpu_graph.params();
  std::vector<std::vector<float>> w0;
  for (const Param& p : initial)
    w0.emplace_back(p.value->data(), p.value->data() + p.value->numel());
  Trainer cpu(cpu_graph, make_optimizer(sgd), training_ctx());
  plan_model(find_model(model), gpu_graph, input, training_ctx());
  CudaCnnTrainer gpu(gpu_graph, sgd, "guess");
  Tensor x(input);
  Rng rng(9);
  rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  std::vector<int32_t> labels(static_cast<std::size_t>(input[0]));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>((3 * i + 1) % 10);
  for (int step = 0; step < 3; ++step) {
    const double want = cpu.step(x, labels).mean_loss();
    const double got =
        gpu.step({x.data(), static_cast<std::size_t>(x.numel())}, labels).mean_loss();
    EXPECT_NEAR(got, want, (step == 0 ? 1e-4 : 1e-3) * std::abs(want)) << "step " << step + 1;
  }
  gpu.download_params();
  const std::vector<Param> a = cpu_graph.params(), b = gpu_graph.params();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    double change = 0, diff = 0;
    for (int64_t j = 0; j < a[i].value->numel(); ++j) {
      change = std::max(
          change, std::abs(double{a[i].value->data()[j]} - w0[i][static_cast<std::size_t>(j)]));
      diff = std::max(diff, std::abs(double{a[i].value->data()[j]} - b[i].value->data()[j]));
    }
    EXPECT_LE(diff, 1e-2 * change + 1e-7) << a[i].name;
  }
}

TEST(CudaCnnTrainer, ThreeStepsMatchTheCpuTrainer) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  expect_same_training("resnet18", Shape{4, 3, 32, 32});
  expect_same_training("densenet121", Shape{2, 3, 33, 33});
}

}  // namespace
}  // namespace nnperf
