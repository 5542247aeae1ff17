// Whole models on the GPU (nn/cuda_inference.h). Everywhere: every registered CNN's layers have
// GPU kernels (so `profile --device cuda` can run each), a folded BatchNorm is refused by name,
// and without a device the executor refuses with the reason. With a device: the GPU forward
// (cuDNN convs by guess, and by a named algorithm with its fallbacks recorded) equals the CPU
// graph's on the same weights and input within float32 rounding, at odd sizes and batch sizes;
// the layers' event times add up to their pass, launched kernel by kernel or as a CUDA graph, and
// a pass as a graph equals the eager pass bit for bit.
#include "nnperf/nn/cuda_inference.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/cuda_layers.h"
#include "test_util.h"

namespace nnperf {
namespace {

PlanContext inference_ctx() {
  PlanContext ctx;
  ctx.training = false;
  ctx.conv_algorithm = "guess";
  return ctx;
}

Graph planned(const std::string& model, const Shape& input, bool fold_bn = false) {
  const ModelEntry& m = find_model(model);
  ModelOptions mo;
  mo.fold_bn = fold_bn;
  mo.classes = 10;
  Graph g = m.build(mo);
  Rng rng(7);
  g.init(rng);
  plan_model(m, g, input, inference_ctx());
  return g;
}

TEST(CudaInference, EveryRegisteredCnnHasGpuKernels) {
  for (const ModelEntry& m : model_registry()) {
    if (std::string(m.name) == "mlp") continue;
    SCOPED_TRACE(m.name);
    ModelOptions mo;
    const Graph g = m.build(mo);
    EXPECT_EQ(cuda_unsupported(g), "");
  }
}

// The pools as the GPU kernels take them (runs everywhere): GoogLeNet has max and average pools
// and the adaptive head; each window matches the output shape the graph planned.
TEST(CudaInference, PoolsArePlannedAsTheGraphShapesThem) {
  const Graph g = planned("googlenet", Shape{2, 3, 40, 40});
  int pools = 0;
  for (int n = 1; n < g.size(); ++n) {
    const auto kind = cuda_layer_kind(g.layer(n));
    if (kind != CudaLayerKind::kMaxPool && kind != CudaLayerKind::kAvgPool &&
        kind != CudaLayerKind::kAdaptivePool) {
      EXPECT_THROW(cuda_pool(g.layer(n), g.output_shape(n)), Error) << g.name(n);
      continue;
    }
    ++pools;
    const Shape& in = g.output_shape(g.inputs(n)[0]);
    const Shape& out = g.output_shape(n);
    const PoolShape s = cuda_pool(g.layer(n), in).shape;
    EXPECT_EQ(s.planes, in[0] * in[1]) << g.name(n);
    EXPECT_EQ(s.ih * s.iw, in[2] * in[3]) << g.name(n);
    EXPECT_EQ(s.oh * s.ow, out[2] * out[3]) << g.name(n);
  }
  EXPECT_GT(pools, 5);
}

TEST(CudaInference, AFoldedBatchNormIsRefusedByName) {
  const Graph g = planned("resnet18", Shape{1, 3, 32, 32}, /*fold_bn=*/true);
  EXPECT_EQ(cuda_unsupported(g), "layer conv1: folded BatchNorm (--fold-bn) runs on the CPU only");
}

TEST(CudaInference, WithoutADeviceItRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  const Graph g = planned("resnet18", Shape{1, 3, 32, 32});
  try {
    CudaInference run(g, "guess", false);
    FAIL() << "planned without a device";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: " + cuda::unavailable_reason());
  }
}

// The GPU's output against the CPU graph's: max |gpu - cpu| <= tol * max |cpu|.
void expect_same_output(const std::string& model, const Shape& input, const std::string& algorithm,
                        double tol, bool cuda_graph = false, bool find_engines = false) {
  SCOPED_TRACE(fmt::format("{} {} {}{}{}", model, input.str(), algorithm,
                           cuda_graph ? " graph" : "", find_engines ? " engines" : ""));
  Graph g = planned(model, input);
  Tensor x(input);
  Rng rng(3);
  rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  const Tensor& cpu = g.forward(x);
  CudaInference gpu(g, algorithm, false, cuda_graph, find_engines);
  gpu.set_input({x.data(), static_cast<std::size_t>(x.numel())});
  gpu.run();
  gpu.run();  // twice: the second pass must not depend on the first's leftovers
  const std::vector<float> out = gpu.output();
  ASSERT_EQ(static_cast<int64_t>(out.size()), cpu.numel());
  double max_ref = 0, max_err = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(cpu.data()[i])));
    max_err = std::max(
        max_err, std::fabs(static_cast<double>(out[static_cast<std::size_t>(i)]) - cpu.data()[i]));
  }
  EXPECT_LE(max_err, tol * max_ref) << "max |cpu| " << max_ref;
  for (int n = 1; n < g.size(); ++n) {
    if (g.layer(n).kind() == "Conv2d") {
      EXPECT_NE(gpu.node(n).algorithm, "") << g.name(n);
    }
  }
}

TEST(CudaInference, EachModelMatchesTheCpuGraph) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  // Odd sizes and batches; VGG and AlexNet at their smallest inputs (Linear heads), DenseNet for
  // Concat, GoogLeNet for its pools, MobileNetV2 for depthwise convs.
  expect_same_output("resnet18", Shape{3, 3, 37, 37}, "guess", 1e-4);
  expect_same_output("resnet50", Shape{2, 3, 64, 64}, "guess", 1e-4);
  expect_same_output("vgg16", Shape{2, 3, 32, 32}, "guess", 1e-4);
  expect_same_output("alexnet", Shape{1, 3, 63, 63}, "guess", 1e-4);
  expect_same_output("densenet121", Shape{1, 3, 33, 33}, "guess", 1e-4);
  expect_same_output("googlenet", Shape{2, 3, 40, 40}, "guess", 1e-4);
  expect_same_output("mobilenet_v2", Shape{2, 3, 35, 35}, "guess", 1e-4);
}

TEST(CudaInference, ANamedAlgorithmRunsWhereServedAndFallsBackWithTheStatus) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  expect_same_output("resnet18", Shape{2, 3, 32, 32}, "implicit_gemm", 1e-4);
  expect_same_output("resnet18", Shape{2, 3, 32, 32}, "find", 1e-4);
  // find with cuDNN's graph-API engines among the candidates, ranked eagerly and as graphs;
  // MobileNetV2 for grouped (depthwise) convolutions.
  for (const bool cuda_graph : {false, true}) {
    expect_same_output("resnet18", Shape{2, 3, 32, 32}, "find", 1e-4, cuda_graph, true);
    expect_same_output("mobilenet_v2", Shape{2, 3, 35, 35}, "find", 1e-4, cuda_graph, true);
  }
  // Winograd serves at most the 3x3 stride-1 layers (cuDNN 9 on Hopper serves its fused form
  // for none in FP32): each layer runs the named algorithm exactly where cuDNN's workspace query
  // accepts it for that layer, and falls back with cuDNN's status elsewhere.
  Graph g = planned("resnet18", Shape{2, 3, 32, 32});
  int fell_back = 0, ran = 0;
  for (const char* algorithm : {"winograd", "winograd_nonfused"}) {
    SCOPED_TRACE(algorithm);
    CudaInference gpu(g, algorithm, false);
    for (int n = 1; n < g.size(); ++n) {
      if (g.layer(n).kind() != "Conv2d") continue;
      const auto& conv = dynamic_cast<const Conv2d&>(g.layer(n));
      const ConvProblem p = conv.problem();
      std::vector<float> w(static_cast<std::size_t>(p.wei_numel()), 0.0f);
      cudnn::ConvForward probe(p, w);
      const std::string why = probe.why_not(algorithm);
      if (why.empty()) {
        ++ran;
        EXPECT_EQ(gpu.node(n).algorithm, algorithm) << g.name(n);
        EXPECT_EQ(gpu.node(n).fallback_reason, "") << g.name(n);
      } else {
        ++fell_back;
        EXPECT_NE(gpu.node(n).algorithm, algorithm) << g.name(n);
        EXPECT_NE(gpu.node(n).fallback_reason.find("cuDNN: CUDNN_STATUS"), std::string::npos)
            << g.name(n) << ": " << gpu.node(n).fallback_reason;
      }
    }
  }
  // The 7x7 stride-2 stem at least is beyond Winograd, so the fallback path above ran.
  EXPECT_GT(fell_back, 0);
  RecordProperty("winograd_layers_run", ran);
  EXPECT_THROW(CudaInference(g, "winograd", true), Error);
}

// The layers' times split their pass: one event after each node that queues work, so every node
// gets a time >= 0, Flatten and Dropout get 0, and the times add up to the pass as a separate
// pair of events around the same run() sees it (the pair's two records sit outside the split).
// Launched kernel by kernel, then as a CUDA graph (the marks then are nodes of the graph,
// captured again at each timed run, so the outer pair also holds the capture's host time: the
// lower bound is then half an untimed graph pass). One mark's cost is positive and a few us.
void expect_node_times_split_their_pass(bool cuda_graph) {
  Graph g = planned("vgg16", Shape{1, 3, 32, 32});  // Flatten and Dropout in its head
  Tensor x(Shape{1, 3, 32, 32});
  Rng rng(5);
  rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  CudaInference gpu(g, "guess", false, cuda_graph);
  gpu.set_input({x.data(), static_cast<std::size_t>(x.numel())});
  EXPECT_THROW(gpu.node_ms(), Error);  // no timed run yet
  const std::unique_ptr<Timeline> timeline = cuda::make_event_timeline();
  const std::unique_ptr<IntervalTimer> outer = cuda::make_event_timer(1);
  std::vector<double> untimed(1, 0.0);
  std::vector<int64_t> untimed_count(1, 0);
  gpu.run();  // an untimed pass (as a graph: captured here)
  outer->begin(0);
  gpu.run();
  outer->end(0);
  outer->resolve(untimed, untimed_count);
  gpu.set_timeline(timeline.get());
  for (int round = 0; round < 3; ++round) {  // the timeline's events are reused
    SCOPED_TRACE(round);
    outer->begin(0);
    gpu.run();
    outer->end(0);
    const std::vector<double> ms = gpu.node_ms();
    std::vector<double> whole;
    std::vector<int64_t> counts;
    outer->resolve(whole, counts);
    ASSERT_EQ(static_cast<int>(ms.size()), g.size());
    double sum = 0;
    int aliases = 0;
    for (int n = 1; n < g.size(); ++n) {
      const double t = ms[static_cast<std::size_t>(n)];
      const std::string kind = g.layer(n).kind();
      if (kind == "Flatten" || kind == "Dropout") {
        EXPECT_EQ(t, 0.0) << g.name(n);
        ++aliases;
      } else {
        EXPECT_GE(t, 0.0) << g.name(n);
      }
      sum += t;
    }
    EXPECT_GE(aliases, 1);
    EXPECT_GT(sum, 0.0);
    EXPECT_LE(sum, whole[0] * (1 + 1e-6) + 1e-6) << "the pair around the pass: " << whole[0];
    const double lower = 0.5 * (cuda_graph ? untimed[0] : whole[0]);
    EXPECT_GE(sum, lower) << "the pair around the pass: " << whole[0] << ", untimed " << untimed[0];
  }
  for (int n = 1; n < g.size(); ++n) {
    const std::string kind = g.layer(n).kind();
    EXPECT_EQ(gpu.marked(n), kind != "Flatten" && kind != "Dropout") << g.name(n);
  }
  EXPECT_FALSE(gpu.marked(0));
  const double cost = cuda_mark_cost_ms(cuda_graph);
  EXPECT_GT(cost, 0.0);
  EXPECT_LT(cost, 0.05);  // ms: a few us, not tens
  ::testing::Test::RecordProperty(cuda_graph ? "mark_cost_us_graph" : "mark_cost_us_eager",
                                  fmt::format("{:.3f}", cost * 1e3));
  gpu.set_timeline(nullptr);
  gpu.run();
  EXPECT_THROW(gpu.node_ms(), Error);  // that run was not timed
  EXPECT_EQ(gpu.graph_nodes() > 0, cuda_graph);
}

TEST(CudaInference, NodeTimesSplitTheirPass) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  expect_node_times_split_their_pass(false);
}

TEST(CudaInference, NodeTimesSplitTheirPassAsACudaGraph) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  expect_node_times_split_their_pass(true);
}

// A pass launched as a CUDA graph computes what the same plan computes kernel by kernel, bit for
// bit (the same kernels and cuDNN algorithms on the same buffers), on a new input too (the graph
// reads the input buffer, uploaded in place), for a model with Add (ResNet-18) and one with
// Concat (DenseNet-121), at batch 2; its capture holds at least one node per layer that queues
// work.
TEST(CudaInference, CudaGraphPassEqualsTheEagerPass) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  for (const char* model : {"resnet18", "densenet121"}) {
    SCOPED_TRACE(model);
    const Shape in{2, 3, 35, 35};
    Graph g = planned(model, in);
    CudaInference eager(g, "guess", false);
    CudaInference graph(g, "guess", false, true);
    EXPECT_EQ(graph.graph_nodes(), 0u);  // nothing captured before the first run
    Rng rng(11);
    for (int input = 0; input < 2; ++input) {
      SCOPED_TRACE(input);
      Tensor x(in);
      rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
      const std::span<const float> host(x.data(), static_cast<std::size_t>(x.numel()));
      eager.set_input(host);
      graph.set_input(host);
      eager.run();
      graph.run();
      const std::vector<float> want = eager.output(), got = graph.output();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "output " << i;
    }
    int queuing = 0;
    for (int n = 1; n < g.size(); ++n) {
      const std::string kind = g.layer(n).kind();
      queuing += kind != "Flatten" && kind != "Dropout";
    }
    EXPECT_GE(graph.graph_nodes(), static_cast<std::size_t>(queuing));
  }
}

}  // namespace
}  // namespace nnperf
