// ExecLog (NNPERF_VERBOSE=exec): one line per node execution, forward and backward, with the
// hook it wraps still called around the same node.
#include "nnperf/profile/exec_log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nnperf/kernels/activations.h"
#include "nnperf/models/mlp.h"
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

}  // namespace
}  // namespace nnperf
