// ExecLog (NNPERF_VERBOSE=exec): one line per node execution, forward and backward, with the
// hook it wraps still called around the same node.
#include "nnperf/profile/exec_log.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nnperf/kernels/activations.h"
#include "nnperf/models/mlp.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/conv2d.h"
#include "test_util.h"

namespace nnperf {
namespace {

struct Recorder final : GraphHook {
  std::vector<std::string> events;
  void before(int node, Phase phase) override {
    events.push_back((phase == Phase::kForward ? "F" : "B") + std::to_string(node));
  }
  void after(int node, Phase phase) override {
    events.push_back((phase == Phase::kForward ? "f" : "b") + std::to_string(node));
  }
};

TEST(ExecLog, OneLinePerNodeExecutionAroundTheInnerHook) {
  Graph g = build_mlp(12, {8}, 3, find_activation("ReLU"), /*flatten=*/false);
  Rng rng(1);
  g.init(rng);
  PlanContext ctx;
  ctx.training = true;
  g.plan(Shape{4, 12}, ctx);
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ExecLog log(g, "mlp", "blas", out);
  Recorder inner;
  g.set_hook(with_exec_log(&log, &inner));
  EXPECT_EQ(with_exec_log(nullptr, &inner), &inner);
  const Tensor x = test::random_tensor(Shape{4, 12}, 2);
  g.forward(x);
  g.backward(test::random_tensor(Shape{4, 3}, 3));
  g.set_hook(nullptr);

  const int nodes = g.size() - 1;  // fc1, act1, fc2
  EXPECT_EQ(log.lines(), 2 * nodes);
  EXPECT_EQ(inner.events.size(), static_cast<std::size_t>(4 * nodes));
  EXPECT_EQ(inner.events.front(), "F1");
  EXPECT_EQ(inner.events.back(), "b1");

  std::rewind(out);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, out) != nullptr) text += buf;
  std::fclose(out);
  EXPECT_NE(text.find("nnperf_verbose,exec,mlp,blas,12,forward,fc1,Linear,12,8,,,,blas,m4n8k12,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nnperf_verbose,exec,mlp,blas,12,forward,act1,Activation,8,8,,,,,4x8->4x8,"),
            std::string::npos)
      << text;
  // Backward: dW = X^T dY and dX = dY W^T of fc2.
  EXPECT_NE(text.find(",backward,fc2,Linear,8,3,,,,blas,m8n3k4_ta+m4n8k3_tb,"), std::string::npos)
      << text;
}

// A convolution's backward line names the two backward rows that ran (data + weights), not the
// forward's algorithm.
TEST(ExecLog, ConvBackwardNamesItsBackwardAlgorithms) {
  ModelOptions mo;
  mo.input_shape = Shape{3, 8, 8};
  mo.classes = 4;
  Graph g = find_model("resnet18").build(mo);
  Rng rng(1);
  g.init(rng);
  PlanContext ctx;
  ctx.training = true;
  g.plan(Shape{2, 3, 8, 8}, ctx);
  int node = 1;
  while (node < g.size() && g.layer(node).kind() != "Conv2d") ++node;
  ASSERT_LT(node, g.size());
  const auto& conv = dynamic_cast<const Conv2d&>(g.layer(node));
  ASSERT_NE(conv.backward_data_algorithm(), nullptr);
  const std::string rows = fmt::format("{}+{}", conv.backward_data_algorithm()->name,
                                       conv.backward_weights_algorithm()->name);
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ExecLog log(g, "resnet18", "guess", out);
  g.set_hook(with_exec_log(&log, nullptr));
  const Tensor x = test::random_tensor(Shape{2, 3, 8, 8}, 2);  // backward reads it again
  g.forward(x);
  g.backward(test::random_tensor(Shape{2, 4}, 3));
  g.set_hook(nullptr);
  std::rewind(out);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, out) != nullptr) text += buf;
  std::fclose(out);
  const std::string prefix = fmt::format(",backward,{},Conv2d,", g.name(node));
  const std::size_t at = text.find(prefix);
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_NE(line.find("," + rows + ","), std::string::npos) << line;
}

}  // namespace
}  // namespace nnperf
