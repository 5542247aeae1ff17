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

#include <algorithm>
#include <cmath>
#include <span>
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

TEST(CudaCnnTrainer, AlgorithmsAreChosenPerPassAsAlgorithmsReportsThem) {
  const CudaConvChoice g = parse_cuda_conv_choice("guess");
  EXPECT_EQ(g.forward + g.backward_data + g.backward_weights, "guessguessguess");
  const CudaConvChoice f = parse_cuda_conv_choice("find");
  EXPECT_EQ(f.forward + f.backward_data + f.backward_weights, "findfindfind");
  const CudaConvChoice n = parse_cuda_conv_choice("winograd_nonfused");
  EXPECT_EQ(n.forward + "," + n.backward_data + "," + n.backward_weights,
            "winograd_nonfused,guess,guess");
  const CudaConvChoice p = parse_cuda_conv_choice("bwd_weights=algo_3,fwd=implicit_gemm");
  EXPECT_EQ(p.forward + "," + p.backward_data + "," + p.backward_weights,
            "implicit_gemm,guess,algo_3");
  for (const char* bad : {"winograd_x", "fwd=algo_1", "bwd_data=implicit_gemm", "bwd=algo_1",
                          "fwd=implicit_gemm,", "fwd"}) {
    try {
      (void)parse_cuda_conv_choice(bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string("--algorithm ") + bad + ": ", 0), 0u)
          << e.what();
    }
  }
}

// Largest |a - b| over the largest |b|, the scale of the values compared.
double relative_diff(std::span<const float> a, std::span<const float> b) {
  double diff = 0, scale = 0;
  for (std::size_t j = 0; j < b.size(); ++j) {
    diff = std::max(diff, std::abs(double{a[j]} - double{b[j]}));
    scale = std::max(scale, std::abs(double{b[j]}));
  }
  return scale > 0 ? diff / scale : diff;
}

std::span<const float> span_of(const Tensor& t) {
  return {t.data(), static_cast<std::size_t>(t.numel())};
}

struct TrainingCheck {
  double forward = 1e-4;    // every node's output after step 1, of its largest value
  double grad = 1e-3;       // every parameter's gradient after step 1, of its largest value
  bool later_steps = true;  // steps 2 and 3's losses and the weights after them
};

// SGD steps (momentum, Nesterov, weight decay) on the CPU Trainer and the GPU trainer from the
// same weights and batch, cuDNN's GEMM-based algorithms in every pass (the fast ones, Winograd
// and FFT, are less exact: measured 10x the GEMM's error on an H200, and the gradients of the
// first layers amplify the forward's rounding about 100-fold in ResNet-18, measured on the CPU
// between its own conv algorithms). After the first step, every node's output and every
// parameter's gradient (all that differ reported in one table); then each step's loss and the
// final weights.
void expect_same_training(const std::string& model, const Shape& input, const TrainingCheck& tol) {
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
  CudaCnnTrainer gpu(gpu_graph, sgd, "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1", 0.0f,
                     /*deterministic=*/true);
  Tensor x(input);
  Rng rng(9);
  rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  std::vector<int32_t> labels(static_cast<std::size_t>(input[0]));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>((3 * i + 1) % 10);
  const int steps = tol.later_steps ? 3 : 1;
  for (int step = 0; step < steps; ++step) {
    const double want = cpu.step(x, labels).mean_loss();
    const double got = gpu.step(span_of(x), labels).mean_loss();
    EXPECT_NEAR(got, want, (step == 0 ? 1e-4 : 1e-3) * std::abs(want)) << "step " << step + 1;
    if (step > 0) continue;
    double worst = 0;
    std::string worst_node, table;
    for (int n = 1; n < cpu_graph.size(); ++n) {
      const double d = relative_diff(gpu.node_output(n), span_of(cpu_graph.value(n)));
      if (d > worst) worst = d, worst_node = cpu_graph.name(n);
      if (d > tol.forward) {
        table +=
            fmt::format("  {} ({}): {:.3g}\n", cpu_graph.name(n), cpu_graph.layer(n).kind(), d);
      }
    }
    ::testing::Test::RecordProperty("worst_forward_" + model,
                                    fmt::format("{:.3g} at {}", worst, worst_node));
    EXPECT_EQ(table, "") << "step 1 outputs differing by more than " << tol.forward
                         << " of their largest value:\n"
                         << table;
    const std::vector<Param> ps = cpu_graph.params();
    table.clear();
    worst = 0;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const double d = relative_diff(gpu.param_grad(i), span_of(*ps[i].grad));
      if (d > worst) worst = d, worst_node = ps[i].name;
      if (d > tol.grad) table += fmt::format("  {}: {:.3g}\n", ps[i].name, d);
    }
    ::testing::Test::RecordProperty("worst_gradient_" + model,
                                    fmt::format("{:.3g} at {}", worst, worst_node));
    EXPECT_EQ(table, "") << "step 1 gradients differing by more than " << tol.grad
                         << " of their largest value:\n"
                         << table;
  }
  if (!tol.later_steps) return;
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

TEST(CudaCnnTrainer, TrainingStepsMatchTheCpuTrainer) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  // ResNet-18 with its last stage 2x2 at batch 4 (every BatchNorm averages 16 values or more).
  expect_same_training("resnet18", Shape{4, 3, 64, 64}, {});
  // DenseNet-121 through 65 -> 33 -> 17 -> 8 -> 4 -> 2 (odd maps into the stem's pool and the
  // first transition's average pool), batch 4. Its first layers' gradients are ill-conditioned
  // here: two exact CPU algorithms (gemm, direct) already part by up to 3.8% of the largest
  // value, so the gradients are held to 10% (a wrong gradient kernel is off by its whole size)
  // and only the first step is compared.
  expect_same_training("densenet121", Shape{4, 3, 65, 65}, {1e-4, 0.1, false});
}

// --deterministic keeps cuDNN's non-deterministic backward algorithms out, whatever guess ranks
// first.
TEST(CudaCnnTrainer, DeterministicTrainingUsesOnlyDeterministicAlgorithms) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  OptimizerOptions sgd;
  sgd.name = "sgd";
  Graph g = built("resnet18", 1);
  plan_model(find_model("resnet18"), g, Shape{8, 3, 64, 64}, training_ctx());
  CudaCnnTrainer t(g, sgd, "guess", 0.0f, /*deterministic=*/true);
  int convs = 0;
  for (int n = 1; n < g.size(); ++n) {
    const std::string a = t.algorithms(n);
    if (a.empty()) continue;
    ++convs;
    EXPECT_EQ(a.find("bwd_data=algo_0"), std::string::npos) << g.name(n) << ": " << a;
    EXPECT_EQ(a.find("bwd_weights=algo_0"), std::string::npos) << g.name(n) << ": " << a;
    EXPECT_EQ(a.find("bwd_weights=algo_3"), std::string::npos) << g.name(n) << ": " << a;
  }
  EXPECT_EQ(convs, 20);
  EXPECT_THROW(CudaCnnTrainer(g, sgd, "find", 0.0f, true), UsageError);
}

}  // namespace
}  // namespace nnperf
