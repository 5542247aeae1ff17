// Graph: a two-branch DAG whose fan-out node needs gradient accumulation, checked by finite
// differences of a float64 interpretation of the same graph; a node feeding one consumer twice;
// the gradient routing (first consumer writes, later ones share scratch buffers);
// hook order; input shape errors; no heap allocation in forward/backward; plan-time errors.
#include "nnperf/nn/graph.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <tuple>
#include <vector>

#include "nn/graph_reference.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/linear.h"
#include "test_util.h"

// Counting replacement of the global operator new (this test binary only): forward/backward
// must not allocate. Not under ThreadSanitizer, whose runtime defines operator new itself.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NNPERF_RUNTIME_OWNS_NEW 1
#endif
#endif
namespace {
std::atomic<bool> g_count_allocations{false};
std::atomic<long> g_allocations{0};
}  // namespace

#ifndef NNPERF_RUNTIME_OWNS_NEW
// GCC cannot see that this operator new is malloc-based when it inlines the pair at call sites.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t n) {
  if (g_count_allocations.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif

namespace nnperf {
namespace {

// x[mb, 4] -> h = Linear(4, 6) -> { a = Linear(6, 6)(h), b = Tanh(h) } -> s = Add(a, b)
//   -> out = Linear(6, 3). dL/dh needs the sum of both branches' gradients.
Graph two_branch_graph() {
  Graph g;
  const int h = g.add("h", std::make_unique<Linear>(4, 6), {Graph::kInput});
  const int a = g.add("a", std::make_unique<Linear>(6, 6), {h});
  const int b = g.add("b", std::make_unique<Activation>(find_activation("Tanh")), {h});
  const int s = g.add("sum", std::make_unique<Add>(), {a, b});
  g.add("out", std::make_unique<Linear>(6, 3), {s});
  return g;
}

// Float graph gradients against float64 finite differences, for L = sum(r * output).
void check_gradients(Graph& g, const Shape& input_shape, uint64_t seed) {
  g.plan(input_shape, PlanContext{});
  Rng rng(seed);
  g.init(rng);
  Tensor x = test::random_tensor(input_shape, seed + 1);
  const Tensor& y = g.forward(x);
  Tensor r = test::random_tensor(y.shape(), seed + 2);
  g.backward(r);

  test::GraphReference ref(g);
  const std::vector<double> xd(x.data(), x.data() + x.numel());
  const std::vector<double> rd(r.data(), r.data() + r.numel());
  const std::vector<double> yd = ref.forward(xd);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_NEAR(y[i], yd[i], 1e-5 * (1 + std::fabs(yd[i]))) << "output " << i;
  }
  const std::vector<Param> params = g.params();
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<double> fd(ref.params[p].size());
    double scale = 0;
    for (size_t e = 0; e < fd.size(); ++e) {
      fd[e] = ref.fd_gradient(p, e, xd, rd);
      scale = std::max(scale, std::fabs(fd[e]));
    }
    ASSERT_GT(scale, 0.0) << params[p].name << " has an all-zero gradient: check is vacuous";
    for (size_t e = 0; e < fd.size(); ++e) {
      // Float forward and backward against the exact gradient: a few eps times the depth and
      // the reduction lengths (<= 8 here), relative to the tensor's largest gradient.
      ASSERT_NEAR((*params[p].grad)[static_cast<int64_t>(e)], fd[e], 2e-5 * scale)
          << params[p].name << "[" << e << "]";
    }
  }
}

TEST(Graph, TwoBranchGradientAccumulationMatchesFiniteDifferences) {
  Graph g = two_branch_graph();
  check_gradients(g, Shape{5, 4}, 100);
}

TEST(Graph, NodeFeedingOneConsumerTwice) {
  // s = Add(h, h, t): the second and third use of h's gradient go through scratch tensors.
  Graph g;
  const int h = g.add("h", std::make_unique<Linear>(3, 5), {Graph::kInput});
  const int t = g.add("t", std::make_unique<Activation>(find_activation("GELU")), {h});
  const int s = g.add("s", std::make_unique<Add>(), {h, h, t});
  g.add("out", std::make_unique<Linear>(5, 2), {s});
  check_gradients(g, Shape{4, 3}, 200);
}

TEST(Graph, GradientRoutingFirstConsumerWritesLaterOnesShareScratch) {
  // h feeds a, s (twice) and u; a feeds s; s and u have h's shape. Backward order: out, u, s, a.
  Graph g;
  const int h = g.add("h", std::make_unique<Linear>(3, 5), {Graph::kInput});
  const int a = g.add("a", std::make_unique<Activation>(find_activation("Tanh")), {h});
  const int s = g.add("s", std::make_unique<Add>(), {h, a, h});
  const int u = g.add("u", std::make_unique<Add>(), {s, h});
  g.add("out", std::make_unique<Linear>(5, 2), {u});
  PlanContext shapes_only;
  shapes_only.node_storage = false;  // the routing needs shapes only
  g.plan(Shape{4, 3}, shapes_only);
  const GradientRouting r = g.gradient_routing();
  using R = GradientRouting;
  ASSERT_EQ(r.edge.size(), 6u);
  EXPECT_TRUE(r.edge[0].empty());
  EXPECT_EQ(r.edge[h], (std::vector<int>{R::kNone}));  // the graph input gets no gradient
  EXPECT_EQ(r.edge[5], (std::vector<int>{R::kProducer}));
  // u runs first: writes h's gradient; s feeds only u, an Add, which hands s its own gradient.
  EXPECT_EQ(r.edge[u], (std::vector<int>{R::kShared, R::kProducer}));
  // s runs after u: both its uses of h add in, through two different scratch buffers; a feeds
  // only s, which hands it its gradient (u's). a runs last and reuses scratch 0 (free again by
  // then).
  EXPECT_EQ(r.edge[s], (std::vector<int>{0, R::kShared, 1}));
  EXPECT_EQ(r.edge[a], (std::vector<int>{0}));
  EXPECT_EQ(r.scratch, (std::vector<Shape>{Shape{4, 5}, Shape{4, 5}}));
  EXPECT_EQ(r.storage, (std::vector<int>{0, h, u, u, u, 5}));
  // The same graph planned with storage backward()s along these routes: checked against finite
  // differences.
  check_gradients(g, Shape{4, 3}, 300);
}

// The two-branch graph planned for a batch of `mb`, initialised from `seed`, one forward and
// backward on random x and dL/d output (kept in x and r for more passes).
struct TwoBranchRun {
  Graph g = two_branch_graph();
  Tensor x, r;
  TwoBranchRun(int64_t mb, uint64_t seed) {
    g.plan(Shape{mb, 4}, PlanContext{});
    Rng rng(seed);
    g.init(rng);
    x = test::random_tensor({mb, 4}, seed + 1);
    r = test::random_tensor({mb, 3}, seed + 2);
    g.forward(x);
    g.backward(r);
  }
};

TEST(Graph, GradientsAreOverwrittenNotAccumulatedAcrossSteps) {
  TwoBranchRun run(5, 1);
  Graph& g = run.g;
  const Tensor& x = run.x;
  const Tensor& r = run.r;
  const Tensor first = *g.params()[0].grad;
  g.forward(x);
  g.backward(r);
  const Tensor& second = *g.params()[0].grad;
  for (int64_t i = 0; i < first.numel(); ++i) ASSERT_EQ(first[i], second[i]);
}

// grad(n) is dL/d(node n's output): an Add hands its gradient unchanged to both inputs, and
// h's is the sum of its two consumers' (checked against Linear's and Tanh's backward by hand).
TEST(Graph, NodeGradientsAreTheBackwardPassOnes) {
  TwoBranchRun run(2, 4);  // nodes: 1 h, 2 a, 3 b, 4 sum, 5 out
  Graph& g = run.g;
  for (int64_t i = 0; i < g.grad(4).numel(); ++i) {
    ASSERT_EQ(g.grad(2)[i], g.grad(4)[i]);
    ASSERT_EQ(g.grad(3)[i], g.grad(4)[i]);
  }
  const Tensor& wa = *g.layer(2).params()[0].value;  // [6 in, 6 out]
  for (int64_t row = 0; row < 2; ++row) {
    for (int64_t j = 0; j < 6; ++j) {
      const double h = g.value(1)[row * 6 + j], t = std::tanh(h);
      double want = (1 - t * t) * g.grad(4)[row * 6 + j];
      for (int64_t o = 0; o < 6; ++o) want += double{wa[j * 6 + o]} * g.grad(2)[row * 6 + o];
      ASSERT_NEAR(g.grad(1)[row * 6 + j], want, 1e-5 * (1 + std::fabs(want))) << row << "," << j;
    }
  }
  EXPECT_THROW(g.grad(5), Error);  // the output's gradient is backward()'s argument
  EXPECT_THROW(g.grad(0), Error);
}

// An Add hands its own gradient to an input it is the only consumer of (no copy; the input's
// gradient storage released), through a chain of Adds to the last one's; an input that feeds
// other nodes too keeps its own, summed one. The gradients still match finite differences, and
// gradient_routing() (what the GPU trainer follows) says the same.
TEST(Graph, AddHandsItsGradientToInputsThatFeedNothingElse) {
  // h = Linear(x); a = Linear(h); b = Tanh(a); s = Add(b, h); z = Linear(h); u = Add(s, z);
  // out = Linear(u). b feeds only s, s only u, z only u; h feeds a, s and z.
  Graph g;
  const int h = g.add("h", std::make_unique<Linear>(4, 6), {Graph::kInput});
  const int a = g.add("a", std::make_unique<Linear>(6, 6), {h});
  const int b = g.add("b", std::make_unique<Activation>(find_activation("Tanh")), {a});
  const int s = g.add("s", std::make_unique<Add>(), {b, h});
  const int z = g.add("z", std::make_unique<Linear>(6, 6), {h});
  const int u = g.add("u", std::make_unique<Add>(), {s, z});
  g.add("out", std::make_unique<Linear>(6, 3), {u});
  check_gradients(g, Shape{5, 4}, 300);
  EXPECT_EQ(&g.grad(s), &g.grad(u));
  EXPECT_EQ(&g.grad(b), &g.grad(u));
  EXPECT_EQ(&g.grad(z), &g.grad(u));
  EXPECT_NE(&g.grad(h), &g.grad(u));
  EXPECT_NE(&g.grad(a), &g.grad(u));
  // h's gradient is its three consumers' sum: a's backward through Linear, s's and z's.
  const Tensor& wa = *g.layer(a).params()[0].value;  // [6 in, 6 out]
  const Tensor& wz = *g.layer(z).params()[0].value;
  for (int64_t row = 0; row < 5; ++row) {
    for (int64_t j = 0; j < 6; ++j) {
      double want = g.grad(u)[row * 6 + j];
      for (int64_t o = 0; o < 6; ++o) {
        want += double{wa[j * 6 + o]} * g.grad(a)[row * 6 + o] +
                double{wz[j * 6 + o]} * g.grad(u)[row * 6 + o];
      }
      ASSERT_NEAR(g.grad(h)[row * 6 + j], want, 1e-5 * (1 + std::fabs(want))) << row << "," << j;
    }
  }
  const GradientRouting r = g.gradient_routing();
  using R = GradientRouting;
  EXPECT_EQ(r.edge[static_cast<std::size_t>(s)],
            (std::vector<int>{R::kShared, 0}));  // h: z wrote it
  EXPECT_EQ(r.edge[static_cast<std::size_t>(u)], (std::vector<int>{R::kShared, R::kShared}));
  EXPECT_EQ(r.storage, (std::vector<int>{0, h, a, u, u, u, u, 7}));
}

// Planned without node storage (the host side of a GPU trainer): the shapes and parameters are
// there, no node holds a tensor, and running it is refused.
TEST(Graph, AShapesOnlyPlanHoldsNoNodeStorageAndRefusesToRun) {
  Graph g = two_branch_graph();
  PlanContext ctx;
  ctx.node_storage = false;
  g.plan(Shape{5, 4}, ctx);
  EXPECT_EQ(g.output_shape(4), (Shape{5, 6}));
  EXPECT_EQ(g.params().size(), 6u);
  for (int n = 1; n < g.size(); ++n) EXPECT_EQ(g.value(n).numel(), 0) << n;
  EXPECT_EQ(g.grad(1).numel(), 0);
  Tensor x = test::random_tensor({5, 4}, 1);
  try {
    g.forward(x);
    FAIL() << "ran without storage";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "graph: forward() on a graph planned for shapes only (node_storage off)");
  }
  EXPECT_THROW(g.backward(Tensor({5, 3})), Error);
  g.plan(Shape{5, 4}, PlanContext{});  // planned again with storage, it runs
  EXPECT_EQ(g.forward(x).shape(), (Shape{5, 3}));
}

struct Event {
  int node;
  Phase phase;
  bool before;
  bool operator==(const Event&) const = default;
};

class RecordingHook : public GraphHook {
 public:
  void before(int node, Phase phase) override { events.push_back({node, phase, true}); }
  void after(int node, Phase phase) override { events.push_back({node, phase, false}); }
  std::vector<Event> events;
};

TEST(Graph, HooksBracketEveryNodeInOrder) {
  Graph g = two_branch_graph();
  g.plan(Shape{2, 4}, PlanContext{});
  Rng rng(5);
  g.init(rng);
  RecordingHook hook;
  g.set_hook(&hook);
  Tensor x = test::random_tensor({2, 4}, 6);
  g.forward(x);
  g.backward(test::random_tensor({2, 3}, 7));
  std::vector<Event> expected;
  for (int i = 1; i <= 5; ++i) {
    expected.push_back({i, Phase::kForward, true});
    expected.push_back({i, Phase::kForward, false});
  }
  for (int i = 5; i >= 1; --i) {
    expected.push_back({i, Phase::kBackward, true});
    expected.push_back({i, Phase::kBackward, false});
  }
  EXPECT_EQ(hook.events, expected);
  g.set_hook(nullptr);
  hook.events.clear();
  g.forward(x);
  EXPECT_TRUE(hook.events.empty());
}

TEST(Graph, WrongInputShapeThrowsNamingTheExpectedShape) {
  Graph g = two_branch_graph();
  g.plan(Shape{8, 4}, PlanContext{});
  Tensor x({8, 5});
  try {
    g.forward(x);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[8, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8, 5]"), std::string::npos) << msg;
  }
  Tensor ok({8, 4});
  ok.fill(0.5f);
  g.forward(ok);
  EXPECT_THROW(g.backward(Tensor({8, 2})), Error);  // output gradient of the wrong shape
}

TEST(Graph, PlanErrorsNameTheNode) {
  Graph g = two_branch_graph();
  try {
    g.plan(Shape{8, 7}, PlanContext{});  // h expects 4 features
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'h'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Linear(4->6)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[8, 7]"), std::string::npos) << msg;
  }
  EXPECT_FALSE(g.planned());
  EXPECT_THROW(g.forward(Tensor({8, 4})), Error);  // not planned

  Graph dangling;
  dangling.add("a", std::make_unique<Linear>(4, 4), {Graph::kInput});
  dangling.add("b", std::make_unique<Linear>(4, 4), {Graph::kInput});  // "a" feeds nothing
  EXPECT_THROW(dangling.plan(Shape{2, 4}, PlanContext{}), Error);

  Graph bad;
  EXPECT_THROW(bad.add("x", std::make_unique<Flatten>(), {1}), Error);  // not an earlier node
  bad.add("x", std::make_unique<Flatten>(), {0});
  EXPECT_THROW(bad.add("x", std::make_unique<Flatten>()), Error);  // duplicate name
  EXPECT_THROW(Graph().plan(Shape{1, 2}, PlanContext{}), Error);   // no layers
}

TEST(Graph, ForwardAndBackwardAllocateNothingAndKeepTheirBuffers) {
#ifdef NNPERF_RUNTIME_OWNS_NEW
  GTEST_SKIP() << "ThreadSanitizer's runtime defines operator new: allocations are not counted";
#endif
  Graph g = two_branch_graph();
  g.plan(Shape{16, 4}, PlanContext{});
  Rng rng(8);
  g.init(rng);
  Tensor x = test::random_tensor({16, 4}, 9);
  Tensor r = test::random_tensor({16, 3}, 10);
  g.forward(x);  // warm up (BLAS and OpenMP initialise on first use)
  g.backward(r);
  std::vector<const float*> buffers;
  for (int i = 1; i < g.size(); ++i) buffers.push_back(g.value(i).data());
  g_allocations = 0;
  g_count_allocations = true;
  for (int step = 0; step < 3; ++step) {
    g.forward(x);
    g.backward(r);
  }
  g_count_allocations = false;
  EXPECT_EQ(g_allocations.load(), 0);
  for (int i = 1; i < g.size(); ++i) EXPECT_EQ(g.value(i).data(), buffers[i - 1]);
}

TEST(Graph, InferencePlanRunsForwardOnly) {
  Graph g = two_branch_graph();
  g.plan(Shape{3, 4}, PlanContext{nullptr, 1, false});
  Rng rng(11);
  g.init(rng);
  Tensor x = test::random_tensor({3, 4}, 12);
  EXPECT_EQ(g.forward(x).shape(), (Shape{3, 3}));
  EXPECT_THROW(g.backward(Tensor({3, 3})), Error);
}

TEST(Graph, Accessors) {
  Graph g = two_branch_graph();
  g.plan(Shape{5, 4}, PlanContext{});
  EXPECT_EQ(g.size(), 6);
  EXPECT_EQ(g.name(0), "input");
  EXPECT_EQ(g.name(4), "sum");
  EXPECT_EQ(g.inputs(4), (std::vector<int>{2, 3}));
  EXPECT_EQ(g.output_shape(5), (Shape{5, 3}));
  EXPECT_EQ(g.input_shape(), (Shape{5, 4}));
  EXPECT_EQ(g.layer(3).describe(), "Tanh");
  EXPECT_TRUE(g.layer(3).is_activation());
  EXPECT_FALSE(g.layer(1).is_activation());
  EXPECT_THROW(g.layer(0), Error);
  EXPECT_THROW(g.value(0), Error);  // no forward yet
  const auto params = g.params();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[0].name, "h.weight");
  EXPECT_EQ(params[5].name, "out.bias");
  EXPECT_EQ(g.num_params(), 4 * 6 + 6 + 6 * 6 + 6 + 6 * 3 + 3);
  const double flops = 2.0 * 5 * (4 * 6 + 6 * 6 + 6 * 3) + 5 * (6 + 6 + 3)  // Linear + bias
                       + 5 * 6 * find_activation("Tanh").flops_per_element  // Tanh
                       + 5 * 6;                                             // Add
  EXPECT_DOUBLE_EQ(g.forward_flops(), flops);
  Tensor x = test::random_tensor({5, 4}, 13);
  g.forward(x);
  EXPECT_EQ(&g.value(0), &x);
  EXPECT_EQ(&g.output(), &g.value(5));
  Graph moved = std::move(g);
  EXPECT_EQ(moved.size(), 6);
  EXPECT_EQ(&moved.value(0), &x);
}

}  // namespace
}  // namespace nnperf
