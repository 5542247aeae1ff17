// MLP builder and model registry: usra-survey's MLP.py structure (names, shapes, parameter
// count), the whole network's gradient against float64 finite differences for every activation,
// registry lookup and options, and a seeded training sanity run (Adam on a separable problem).
#include "nnperf/models/mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nn/graph_reference.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/softmax.h"
#include "nnperf/models/registry.h"
#include "nnperf/train/optimizer.h"
#include "test_util.h"

namespace nnperf {
namespace {

TEST(Mlp, ActivationStudyStructure) {
  Graph g = build_mlp(784, {512, 256, 128, 64}, 10, find_activation("GELU"));
  g.plan(Shape{64, 1, 28, 28}, PlanContext{});
  const std::vector<std::string> names = {"input", "flatten", "fc1", "act1", "fc2", "act2",
                                          "fc3",   "act3",    "fc4", "act4", "fc5"};
  ASSERT_EQ(g.size(), static_cast<int>(names.size()));
  for (int i = 0; i < g.size(); ++i) EXPECT_EQ(g.name(i), names[i]);
  EXPECT_EQ(g.layer(1).kind(), "Flatten");
  EXPECT_EQ(g.layer(2).describe(), "Linear(784->512)");
  EXPECT_EQ(g.layer(3).describe(), "GELU");
  EXPECT_EQ(g.layer(10).describe(), "Linear(64->10)");
  EXPECT_EQ(g.output_shape(1), (Shape{64, 784}));
  EXPECT_EQ(g.output_shape(10), (Shape{64, 10}));
  // 784*512+512 + 512*256+256 + 256*128+128 + 128*64+64 + 64*10+10 (torchinfo's count too)
  EXPECT_EQ(g.num_params(), 575050);
  int activations = 0;
  for (int i = 1; i < g.size(); ++i) activations += g.layer(i).is_activation();
  EXPECT_EQ(activations, 4);
  EXPECT_DOUBLE_EQ(g.forward_flops(),
                   2.0 * 64 * 575050 - 64 * (512 + 256 + 128 + 64 + 10)  // 2*MACs + bias adds
                       + 64.0 * (512 + 256 + 128 + 64) * 5.0);           // GELU, 5 per element
}

TEST(Mlp, WithoutFlattenTakesFeatureRows) {
  Graph g = build_mlp(20, {8}, 3, find_activation("ReLU"), false);
  g.plan(Shape{4, 20}, PlanContext{});
  EXPECT_EQ(g.name(1), "fc1");
  EXPECT_EQ(g.size(), 4);
  EXPECT_THROW(g.plan(Shape{4, 2, 10}, PlanContext{}), Error);
  EXPECT_THROW(build_mlp(0, {8}, 3, find_activation("ReLU")), UsageError);
  EXPECT_THROW(build_mlp(4, {8, 0}, 3, find_activation("ReLU")), UsageError);
}

class MlpGradient : public ::testing::TestWithParam<const ActivationKernel*> {};

TEST_P(MlpGradient, WholeNetworkMatchesFiniteDifferences) {
  const ActivationKernel& act = *GetParam();
  Graph g = build_mlp(6, {5, 4}, 3, act);
  const Shape in{3, 2, 3};  // images of 2 x 3, flattened to 6
  g.plan(in, PlanContext{});
  Rng rng(31);
  g.init(rng);
  Tensor x = test::random_tensor(in, 32, -2.0f, 2.0f);
  const Tensor& y = g.forward(x);
  Tensor r = test::random_tensor(y.shape(), 33);
  g.backward(r);

  test::GraphReference ref(g);
  const std::vector<double> xd(x.data(), x.data() + x.numel());
  const std::vector<double> rd(r.data(), r.data() + r.numel());
  const std::vector<Param> params = g.params();
  ASSERT_EQ(params.size(), 6u);
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<double> fd(ref.params[p].size());
    double scale = 0;
    for (size_t e = 0; e < fd.size(); ++e) {
      fd[e] = ref.fd_gradient(p, e, xd, rd);
      scale = std::max(scale, std::fabs(fd[e]));
    }
    ASSERT_GT(scale, 1e-3) << params[p].name << ": gradient too small for a meaningful check";
    for (size_t e = 0; e < fd.size(); ++e) {
      // Float forward/backward through 3 layers vs the exact gradient. FD of the kinked
      // activations (ReLU, LeakyReLU, ELU'') is exact away from 0; seeded inputs avoid the kink.
      ASSERT_NEAR((*params[p].grad)[static_cast<int64_t>(e)], fd[e], 2e-5 * scale + 1e-6)
          << act.name << " " << params[p].name << "[" << e << "]";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Activations, MlpGradient, ::testing::ValuesIn([] {
                           std::vector<const ActivationKernel*> all;
                           for (const ActivationKernel& k : activation_kernels()) all.push_back(&k);
                           return all;
                         }()),
                         [](const auto& p) { return std::string(p.param->name); });

TEST(ModelRegistry, FindsMlpAndBuildsFromOptions) {
  EXPECT_EQ(model_names().rfind("mlp", 0), 0u);  // the first row; the CNNs follow
  const ModelEntry& m = find_model("MLP");
  EXPECT_STREQ(m.name, "mlp");
  ModelOptions o;  // defaults: 1 x 28 x 28 images, usra-survey's widths, ReLU
  Graph g = m.build(o);
  g.plan(Shape{2, 1, 28, 28}, PlanContext{});
  EXPECT_EQ(g.name(1), "flatten");
  EXPECT_EQ(g.num_params(), 575050);
  EXPECT_EQ(g.layer(3).describe(), "ReLU");

  o.input_shape = Shape{10};
  o.hidden = {7};
  o.classes = 4;
  o.activation = "swish";
  Graph flat = m.build(o);
  flat.plan(Shape{3, 10}, PlanContext{});
  EXPECT_EQ(flat.name(1), "fc1");  // a feature vector needs no Flatten
  EXPECT_EQ(flat.layer(2).describe(), "SiLU");
  EXPECT_EQ(flat.output_shape(3), (Shape{3, 4}));

  o.activation = "nope";
  EXPECT_THROW(m.build(o), UsageError);
}

TEST(ModelRegistry, UnknownModelListsTheValidNames) {
  try {
    find_model("resnet9000");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("resnet9000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mlp"), std::string::npos) << msg;
  }
}

// Labels = argmax(x . T) for a fixed random T, keeping only points whose best score beats the
// second by a margin of 0.5: linearly separable with room to spare, so an MLP must fit it and
// generalise; a broken forward, backward or optimizer would not.
void make_problem(int64_t n, int64_t features, int64_t classes, uint64_t seed, Tensor& x,
                  std::vector<int32_t>& labels) {
  Tensor t({features, classes});
  Rng trng(777);  // the same rule for the training and the test set
  trng.fill_normal(std::span<float>(t.data(), static_cast<size_t>(t.numel())), 0.0f, 1.0f);
  Rng rng(seed);
  x = Tensor({n, features});
  labels.assign(static_cast<size_t>(n), 0);
  std::vector<float> point(static_cast<size_t>(features));
  for (int64_t i = 0; i < n;) {
    rng.fill_normal(point, 0.0f, 1.0f);
    double best = -1e30, second = -1e30;
    int32_t label = 0;
    for (int64_t c = 0; c < classes; ++c) {
      double s = 0;
      for (int64_t f = 0; f < features; ++f) s += point[f] * t[f * classes + c];
      if (s > best) {
        second = best;
        best = s;
        label = static_cast<int32_t>(c);
      } else if (s > second) {
        second = s;
      }
    }
    if (best - second < 0.5) continue;
    std::copy(point.begin(), point.end(), x.data() + i * features);
    labels[i++] = label;
  }
}

class MlpTraining : public ::testing::TestWithParam<const char*> {};

TEST_P(MlpTraining, LearnsASeparableProblem) {
  const int64_t features = 8, classes = 3, mb = 32, steps = 400;
  Tensor train_x, test_x;
  std::vector<int32_t> train_y, test_y;
  make_problem(2048, features, classes, 1, train_x, train_y);
  make_problem(512, features, classes, 2, test_x, test_y);

  Graph g = build_mlp(features, {32, 32}, classes, find_activation(GetParam()), false);
  g.plan(Shape{mb, features}, PlanContext{});
  Rng rng(5);
  g.init(rng);
  OptimizerOptions oo;  // Adam
  oo.lr = 1e-2f;
  auto opt = make_optimizer(oo);
  Tensor batch({mb, features}), d_logits({mb, classes});
  std::vector<int32_t> batch_y(mb);
  std::vector<Param> params = g.params();
  double first_loss = 0, last_loss = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t start = (step * mb) % 2048;
    std::copy_n(train_x.data() + start * features, mb * features, batch.data());
    std::copy_n(train_y.data() + start, mb, batch_y.data());
    const Tensor& logits = g.forward(batch);
    const LossResult lr = softmax_cross_entropy(logits.data(), batch_y.data(), mb, classes,
                                                d_logits.data(), 1.0f / mb);
    if (step == 0) first_loss = lr.loss_sum / mb;
    last_loss = lr.loss_sum / mb;
    g.backward(d_logits);
    opt->step(params);
  }
  // Evaluate on the held-out set, one batch at a time.
  int64_t correct = 0;
  for (int64_t start = 0; start < 512; start += mb) {
    std::copy_n(test_x.data() + start * features, mb * features, batch.data());
    const Tensor& logits = g.forward(batch);
    correct +=
        softmax_cross_entropy(logits.data(), test_y.data() + start, mb, classes, nullptr, 1.0f)
            .correct;
  }
  const double accuracy = static_cast<double>(correct) / 512;
  EXPECT_GT(accuracy, 0.95) << GetParam() << ": loss " << first_loss << " -> " << last_loss;
  EXPECT_LT(last_loss, 0.5 * first_loss);
}

INSTANTIATE_TEST_SUITE_P(Activations, MlpTraining,
                         ::testing::Values("ReLU", "GELU", "Sigmoid", "Tanh", "ELU", "LeakyReLU",
                                           "SiLU", "Mish"));

}  // namespace
}  // namespace nnperf
