// A ReLU fused into the BatchNorm2d before it (PlanContext::fuse_relu, Graph::plan): which nodes
// fuse (a ReLU that is a BatchNorm's only consumer, in training plans with node storage; not the
// output node, not after an Add, not when the BatchNorm feeds something else too, never in
// inference), what the plan reports (the ReLU's and the BatchNorm's dispatch, the shared output
// and gradient), and that a training step gives the same bits either way: every node's output,
// the input-side gradients and every parameter's gradient, on a small graph with each case and on
// ResNet-18.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/global_pool.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/linear.h"
#include "test_util.h"

namespace nnperf {
namespace {

PlanContext training(bool fuse) {
  PlanContext ctx;
  ctx.training = true;
  ctx.fuse_relu = fuse;
  return ctx;
}

std::unique_ptr<Layer> relu() { return std::make_unique<Activation>(find_activation("ReLU")); }

// conv1 -> bn1 -> relu1 (fuses) -> conv2 -> bn2 -> add1(bn2, relu1) -> relu2 (after an Add: stays)
//   -> conv3 -> bn3 -> { relu3, add2 } (bn3 feeds two nodes: stays) -> add2(relu3, bn3) -> pool
//   -> flatten -> fc.
struct Small {
  Graph g;
  int bn1, relu1, relu2, bn3, relu3, conv1;
};

Small small_graph() {
  Small s;
  Graph& g = s.g;
  s.conv1 = g.add("conv1", std::make_unique<Conv2d>(3, 4, 3, 3, 1, 1), {Graph::kInput});
  s.bn1 = g.add("bn1", std::make_unique<BatchNorm2d>(4));
  s.relu1 = g.add("relu1", relu());
  g.add("conv2", std::make_unique<Conv2d>(4, 4, 3, 3, 1, 1));
  const int bn2 = g.add("bn2", std::make_unique<BatchNorm2d>(4));
  g.add("add1", std::make_unique<Add>(), {bn2, s.relu1});
  s.relu2 = g.add("relu2", relu());
  g.add("conv3", std::make_unique<Conv2d>(4, 4, 1, 1));
  s.bn3 = g.add("bn3", std::make_unique<BatchNorm2d>(4));
  s.relu3 = g.add("relu3", relu());
  g.add("add2", std::make_unique<Add>(), {s.relu3, s.bn3});
  g.add("pool", std::make_unique<GlobalAvgPool>());
  g.add("flatten", std::make_unique<Flatten>());
  g.add("fc", std::make_unique<Linear>(4, 3));
  Rng rng(5);
  g.init(rng);
  // Non-trivial BatchNorm parameters, so the ReLU cuts where the shift puts it.
  for (const Param& p : g.params()) {
    if (p.name.find("bn") != 0) continue;
    const std::vector<float> v =
        test::random_vector(p.value->numel(), 6 + static_cast<uint64_t>(p.node), 0.5f, 1.5f);
    std::memcpy(p.value->data(), v.data(), v.size() * sizeof(float));
  }
  return s;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(float)) == 0;
}

// One forward and backward of `fused` and `plain` (the same graph, the same weights) on the same
// batch: the same bits everywhere a fused plan still has them.
void expect_same_step(Graph& fused, Graph& plain, const Shape& input) {
  const Tensor x = test::random_tensor(input, 11);
  const Tensor& out_f = fused.forward(x);
  const Tensor& out_p = plain.forward(x);
  ASSERT_TRUE(same_bits(out_f, out_p));
  int fused_nodes = 0;
  for (int n = 1; n < fused.size(); ++n) {
    SCOPED_TRACE(fused.name(n));
    const auto* act = dynamic_cast<const Activation*>(&fused.layer(n));
    const bool is_fused = act != nullptr && !act->fused_into().empty();
    fused_nodes += is_fused;
    // A fused BatchNorm's output is its ReLU's; every other output is the plain plan's.
    const auto* bn = dynamic_cast<const BatchNorm2d*>(&fused.layer(n));
    const int twin = bn != nullptr && bn->fused_relu() ? n + 1 : n;
    EXPECT_TRUE(same_bits(fused.value(n), plain.value(twin)));
    if (is_fused) {
      EXPECT_EQ(&fused.value(n), &fused.value(n - 1));
    }
  }
  EXPECT_GT(fused_nodes, 0);
  const Tensor dy = test::random_tensor(out_f.shape(), 12);
  fused.backward(dy);
  plain.backward(dy);
  const std::vector<Param> pf = fused.params(), pp = plain.params();
  ASSERT_EQ(pf.size(), pp.size());
  for (std::size_t i = 0; i < pf.size(); ++i) {
    EXPECT_TRUE(same_bits(*pf[i].grad, *pp[i].grad)) << pf[i].name;
  }
  // The gradients at the convolutions' outputs (the fused BatchNorms' dx included).
  for (int n = 1; n + 1 < fused.size(); ++n) {
    if (fused.layer(n).kind() != "Conv2d") continue;
    EXPECT_TRUE(same_bits(fused.grad(n), plain.grad(n))) << fused.name(n);
  }
}

TEST(FusedRelu, OnlyABatchNormsOnlyConsumerFusesAndTheStepKeepsItsBits) {
  Small f = small_graph(), p = small_graph();
  const Shape input{3, 3, 6, 5};
  f.g.plan(input, training(true));
  p.g.plan(input, training(false));
  const auto& relu1 = dynamic_cast<const Activation&>(f.g.layer(f.relu1));
  EXPECT_EQ(relu1.fused_into(), "bn1");
  EXPECT_EQ(relu1.dispatch(), "fused into bn1 (its layer applies the ReLU both ways)");
  EXPECT_NE(f.g.layer(f.bn1).dispatch().find(" + ReLU fused"), std::string::npos);
  EXPECT_EQ(f.g.layer(f.relu2).dispatch(), "");  // after an Add
  EXPECT_EQ(f.g.layer(f.relu3).dispatch(), "");  // bn3 also feeds add2
  EXPECT_EQ(f.g.layer(f.bn3).dispatch().find("ReLU"), std::string::npos);
  EXPECT_EQ(p.g.layer(p.relu1).dispatch(), "");
  EXPECT_EQ(p.g.layer(p.bn1).dispatch().find("ReLU"), std::string::npos);
  // The routing: the fused ReLU hands its gradient to bn1, which keeps none of its own.
  const GradientRouting r = f.g.gradient_routing();
  EXPECT_EQ(r.edge[static_cast<std::size_t>(f.relu1)][0], GradientRouting::kShared);
  EXPECT_EQ(r.storage[static_cast<std::size_t>(f.bn1)], f.relu1);
  EXPECT_EQ(p.g.gradient_routing().edge[static_cast<std::size_t>(p.relu1)][0],
            GradientRouting::kProducer);
  expect_same_step(f.g, p.g, input);
  // A second step on the same plans (the saved statistics and the running ones move on).
  expect_same_step(f.g, p.g, input);
}

TEST(FusedRelu, InferenceShapesOnlyAndOutputReluPlansKeepTheNodes) {
  Small f = small_graph();
  const Shape input{2, 3, 4, 4};
  const auto fused = [&] {
    return dynamic_cast<const Activation&>(f.g.layer(f.relu1)).fused_into();
  };
  PlanContext inference = training(true);
  inference.training = false;
  f.g.plan(input, inference);
  EXPECT_EQ(fused(), "");
  f.g.plan(input, training(true));
  EXPECT_EQ(fused(), "bn1");
  PlanContext shapes = training(true);
  shapes.node_storage = false;  // a device trainer's host graph: it runs the ReLU nodes itself
  f.g.plan(input, shapes);
  EXPECT_EQ(fused(), "");
  EXPECT_EQ(f.g.gradient_routing().edge[static_cast<std::size_t>(f.relu1)][0],
            GradientRouting::kProducer);
  f.g.plan(input, training(false));
  EXPECT_EQ(fused(), "");
  EXPECT_EQ(f.g.layer(f.bn1).dispatch().find("ReLU"), std::string::npos);

  // A ReLU that is the graph's output: its gradient is backward()'s argument, so it runs itself.
  Graph g;
  g.add("conv", std::make_unique<Conv2d>(2, 3, 1, 1), {Graph::kInput});
  const int bn = g.add("bn", std::make_unique<BatchNorm2d>(3));
  const int out = g.add("relu", relu());
  Rng rng(3);
  g.init(rng);
  g.plan(Shape{2, 2, 3, 3}, training(true));
  EXPECT_EQ(g.layer(out).dispatch(), "");
  EXPECT_EQ(g.layer(bn).dispatch().find("ReLU"), std::string::npos);
  const Tensor x = test::random_tensor(Shape{2, 2, 3, 3}, 4);
  const Tensor& y = g.forward(x);
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_GE(y[i], 0.0f);
}

TEST(FusedRelu, ResNet18StepGivesTheSameBits) {
  const auto built = [] {
    ModelOptions mo;
    mo.classes = 10;
    Graph g = find_model("resnet18").build(mo);
    Rng rng(7);
    g.init(rng);
    return g;
  };
  Graph fused = built(), plain = built();
  const Shape input{2, 3, 32, 32};
  plan_model(find_model("resnet18"), fused, input, training(true));
  plan_model(find_model("resnet18"), plain, input, training(false));
  int count = 0;
  for (int n = 1; n < fused.size(); ++n) {
    const auto* act = dynamic_cast<const Activation*>(&fused.layer(n));
    count += act != nullptr && !act->fused_into().empty();
  }
  EXPECT_EQ(count, 9);  // the stem's and each basic block's first ReLU
  expect_same_step(fused, plain, input);
}

}  // namespace
}  // namespace nnperf
