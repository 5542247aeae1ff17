// What a plan holds and what counting does: an inference plan of VGG16 holds no gradient storage
// (its classifier's would be 124 M floats), a plan for training after it sizes the gradients and
// trains exactly as a graph planned for training from the start, and Graph::num_params() leaves
// Conv2d's packed weights alone (params(), which hands out writable pointers, marks them stale).
#include <gtest/gtest.h>

#include <vector>

#include "model_test_util.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/models/mlp.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/linear.h"
#include "test_util.h"

namespace nnperf {
namespace {

PlanContext context(bool training, const std::string& conv = "gemm") {
  PlanContext ctx;
  ctx.training = training;
  ctx.threads = 1;
  ctx.conv_algorithm = conv;
  return ctx;
}

// Floats of gradient storage the graph's parameters hold.
int64_t grad_floats(Graph& g) {
  int64_t n = 0;
  for (const Param& p : g.params()) n += p.grad->numel();
  return n;
}

std::vector<const Linear*> linears(const Graph& g) {
  std::vector<const Linear*> out;
  for (int i = 1; i < g.size(); ++i) {
    if (const auto* l = dynamic_cast<const Linear*>(&g.layer(i))) out.push_back(l);
  }
  return out;
}

TEST(PlanMemory, InferencePlanOfVgg16HoldsNoGradients) {
  const ModelEntry& m = find_model("vgg16");
  Graph g = m.build(ModelOptions{});
  const Shape in{1, 3, 32, 32};
  plan_model(m, g, in, context(false));
  ASSERT_EQ(linears(g).size(), 3u);
  for (const Linear* l : linears(g)) {
    EXPECT_TRUE(l->weight_grad().empty()) << l->describe();
    EXPECT_TRUE(l->bias_grad().empty()) << l->describe();
  }
  EXPECT_EQ(grad_floats(g), 0);

  // Planned for training, every parameter gets a gradient of its shape (zeroed) ...
  plan_model(m, g, in, context(true));
  EXPECT_EQ(grad_floats(g), g.num_params());
  for (const Param& p : g.params()) ASSERT_EQ(p.grad->shape(), p.value->shape()) << p.name;
  const Linear& fc1 = *linears(g).front();
  EXPECT_EQ(fc1.weight_grad().numel(), 25088 * 4096);
  EXPECT_EQ(fc1.weight_grad()[0], 0.0f);
  // ... and planned for inference again, the Linear layers (124 M of the 138 M) let theirs go.
  plan_model(m, g, in, context(false));
  for (const Linear* l : linears(g)) EXPECT_TRUE(l->weight_grad().empty()) << l->describe();
}

TEST(PlanMemory, TrainingAfterAnInferencePlanMatchesTrainingFromTheStart) {
  // Two identical MLPs; one planned for inference (and run) first.
  auto build = [] {
    Graph g = build_mlp(20, {16, 12}, 5, find_activation("ReLU"), /*flatten=*/false);
    Rng rng(5);
    g.init(rng);
    return g;
  };
  Graph a = build(), b = build();
  const Shape in{4, 20};
  const Tensor x = test::random_tensor(in, 6);
  const Tensor dy = test::random_tensor(Shape{4, 5}, 7);
  a.plan(in, context(false));
  a.forward(x);
  EXPECT_EQ(grad_floats(a), 0);
  a.plan(in, context(true));
  b.plan(in, context(true));
  ASSERT_EQ(grad_floats(a), a.num_params());
  a.forward(x);
  b.forward(x);
  a.backward(dy);
  b.backward(dy);
  const std::vector<Param> pa = a.params(), pb = b.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].grad->numel(), pb[i].grad->numel()) << pa[i].name;
    for (int64_t e = 0; e < pa[i].grad->numel(); ++e) {
      ASSERT_EQ((*pa[i].grad)[e], (*pb[i].grad)[e]) << pa[i].name << "[" << e << "]";
    }
  }
}

std::vector<int64_t> preparations(const Graph& g) {
  std::vector<int64_t> out;
  for (int i = 1; i < g.size(); ++i) {
    if (const auto* c = dynamic_cast<const Conv2d*>(&g.layer(i))) {
      out.push_back(c->weight_preparations());
    }
  }
  return out;
}

TEST(PlanMemory, CountingParametersDoesNotRepackConvWeights) {
  const ModelEntry& m = find_model("resnet18");
  Graph g = m.build(ModelOptions{});
  test::fast_init(g, 3);
  const Shape in{1, 3, 32, 32};
  // winograd packs its weights (transformed filters) where it serves a layer.
  plan_model(m, g, in, context(false, "winograd"));
  const Tensor x = test::random_tensor(in, 4);
  const Tensor first = g.forward(x);
  const std::vector<int64_t> after_first = preparations(g);
  ASSERT_EQ(after_first.size(), 20u);

  EXPECT_EQ(g.num_params(), m.params);
  const Tensor& second = g.forward(x);
  EXPECT_EQ(preparations(g), after_first) << "num_params() made the next forward repack";
  for (int64_t i = 0; i < first.numel(); ++i) ASSERT_EQ(first[i], second[i]);

  // params() hands out writable weights, so the next forward repacks every conv once (this is
  // what num_params() used to trigger).
  (void)g.params();
  g.forward(x);
  const std::vector<int64_t> after_params = preparations(g);
  for (std::size_t i = 0; i < after_params.size(); ++i) {
    EXPECT_EQ(after_params[i], after_first[i] + 1) << "conv " << i;
  }
}

}  // namespace
}  // namespace nnperf
