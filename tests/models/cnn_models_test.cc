// The torchvision CNN builders and their registry rows: parameter counts equal to torchvision's
// exactly, module-path node names, a forward pass at a reduced input ("guess", 1 thread) giving
// finite [mb, 1000] logits, the minimum input size (plans at the minimum, a UsageError naming the
// model, the layer and the minimum below it), conv+linear MACs at 224x224 against
// cloudml-project1's reference figures (within 0.5%) and torchvision's published GFLOPS column, BN folding giving
// the unfolded output, options (classes, channels, fold_bn) and the unknown-model message.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "nnperf/core/error.h"
#include "nnperf/models/cnn.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/linear.h"
#include "test_util.h"

namespace nnperf {
namespace {

struct Expected {
  const char* name;
  int64_t params;          // torchvision, 1000 classes (BN running statistics excluded)
  int64_t test_size;       // H = W of the forward test
  double published_gmacs;  // torchvision's model table ("GFLOPS", really GMACs), 2-3 digits
  std::vector<const char*> nodes;
};

const std::vector<Expected>& expected() {
  static const std::vector<Expected> e = {
      {"alexnet", 61100840, 63, 0.71, {"features.0", "features.12", "avgpool", "classifier.6"}},
      {"vgg16", 138357544, 32, 15.47, {"features.28", "features.30", "classifier.6"}},
      {"resnet18",
       11689512,
       32,
       1.81,
       {"conv1", "bn1", "maxpool", "layer2.0.downsample.0", "layer4.1.relu_1", "fc"}},
      {"resnet34", 21797672, 32, 3.66, {"layer3.5.conv2", "layer4.2.add"}},
      {"resnet50",
       25557032,
       32,
       4.09,
       {"layer1.0.downsample.0", "layer3.5.conv3", "layer4.2.relu_2", "fc"}},
      {"resnet152", 60192808, 32, 11.51, {"layer3.35.conv3", "layer4.2.bn3"}},
      {"googlenet",
       6624904,
       32,
       1.50,
       {"conv1.conv", "inception3a.branch2.1.conv", "inception5b.cat", "maxpool4", "fc"}},
      {"densenet121",
       7978856,
       32,
       2.83,
       {"features.denseblock4.denselayer16.conv2", "features.transition3.pool", "features.norm5",
        "classifier"}},
      {"mobilenet_v2",
       3504872,
       32,
       0.30,
       {"features.1.conv.0.0", "features.1.conv.1", "features.2.conv.1.0", "features.17.conv.2",
        "features.18.0", "classifier.1"}},
  };
  return e;
}

int find_node(const Graph& g, const std::string& name) {
  for (int i = 0; i < g.size(); ++i) {
    if (g.name(i) == name) return i;
  }
  return -1;
}

PlanContext inference_ctx(const std::string& algo = "guess") {
  PlanContext ctx;
  ctx.training = false;
  ctx.threads = 1;
  ctx.conv_algorithm = algo;
  return ctx;
}

using test::fast_init;

class CnnModel : public ::testing::TestWithParam<Expected> {};

TEST_P(CnnModel, ParamsNamesMacsForwardAndMinimumInput) {
  const Expected& e = GetParam();
  const ModelEntry& m = find_model(e.name);
  EXPECT_EQ(m.params, e.params);
  EXPECT_EQ(m.default_input, (std::array<int64_t, 3>{3, 224, 224}));
  Graph g = m.build(ModelOptions{});
  EXPECT_EQ(g.num_params(), e.params) << e.name;
  for (const char* node : e.nodes) EXPECT_GE(find_node(g, node), 1) << e.name << ": " << node;

  // MACs at 224 x 224 (planned with gemm: no weight packing needed to count).
  g.plan(Shape{1, 3, 224, 224}, inference_ctx("gemm"));
  const double macs = conv_linear_macs(g);
  std::cout << fmt::format("{:<13} params {:>11}  conv+linear MACs at 224: {:.4f} G\n", e.name,
                           g.num_params(), macs / 1e9);
  // torchvision's table rounds to 2 decimals (3 significant digits for VGG / ResNet-152).
  EXPECT_NEAR(macs / 1e9, e.published_gmacs, 0.006) << e.name;
  // cloudml-project1's reference values (conv + linear multiply-adds, fvcore-style), within 0.5%.
  const std::map<std::string, double> reference = {
      {"resnet50", 4.089e9}, {"vgg16", 15.484e9}, {"mobilenet_v2", 0.301e9}};
  if (auto it = reference.find(e.name); it != reference.end()) {
    EXPECT_NEAR(macs, it->second, 0.005 * it->second) << e.name;
  }

  // Forward at a reduced size with "guess" on one thread.
  fast_init(g, 7);
  const Shape in{1, 3, e.test_size, e.test_size};
  plan_model(m, g, in, inference_ctx());
  const Tensor x = test::random_tensor(in, 8);
  const Tensor& y = g.forward(x);
  ASSERT_EQ(y.shape(), (Shape{1, 1000}));
  double lo = y[0], hi = y[0];
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << e.name << " logit " << i;
    lo = std::min<double>(lo, y[i]);
    hi = std::max<double>(hi, y[i]);
  }
  EXPECT_GT(hi - lo, 1e-3 * std::max(std::fabs(lo), std::fabs(hi))) << e.name << ": flat logits";
  for (int i = 1; i < g.size(); ++i) {
    if (const auto* c = dynamic_cast<const Conv2d*>(&g.layer(i))) {
      ASSERT_NE(c->algorithm(), nullptr);
      EXPECT_TRUE(c->algorithm()->why_not(c->problem()).empty()) << g.name(i);
    }
  }

  // The minimum input plans; one pixel less fails naming the model, a layer and the minimum.
  const int64_t min = m.min_input_size;
  plan_model(m, g, Shape{1, 3, min, min}, inference_ctx("gemm"));
  if (min > 1) {
    try {
      plan_model(m, g, Shape{1, 3, min - 1, min - 1}, inference_ctx("gemm"));
      FAIL() << e.name << ": expected a UsageError below the minimum input";
    } catch (const UsageError& err) {
      const std::string msg = err.what();
      std::cout << "  " << msg << "\n";
      EXPECT_EQ(msg.rfind(std::string(e.name) + ": input ", 0), 0u) << msg;
      EXPECT_NE(msg.find(fmt::format("{}x{}", min, min)), std::string::npos) << msg;
      EXPECT_NE(msg.find("graph node "), std::string::npos) << msg;  // ... 'features.12': ...
      EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Torchvision, CnnModel, ::testing::ValuesIn(expected()),
                         [](const auto& p) { return std::string(p.param.name); });

// BatchNorm2d layers in graph order, folded ones included (they follow their conv).
std::vector<BatchNorm2d*> batch_norms(Graph& g) {
  std::vector<BatchNorm2d*> out;
  for (int i = 1; i < g.size(); ++i) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&g.layer(i))) out.push_back(bn);
    if (auto* c = dynamic_cast<Conv2d*>(&g.layer(i)); c != nullptr && c->folded_batchnorm()) {
      out.push_back(c->folded_batchnorm());
    }
  }
  return out;
}

TEST(CnnModels, FoldedBatchNormGivesTheUnfoldedOutput) {
  for (const char* name : {"resnet18", "mobilenet_v2", "googlenet", "densenet121"}) {
    const ModelEntry& m = find_model(name);
    Graph plain = m.build(ModelOptions{});
    ModelOptions fold;
    fold.fold_bn = true;
    Graph folded = m.build(fold);
    EXPECT_LT(folded.size(), plain.size()) << name;
    fast_init(plain, 11);
    // Trained-looking statistics, so folding has something to fold.
    std::vector<BatchNorm2d*> a = batch_norms(plain), b = batch_norms(folded);
    ASSERT_EQ(a.size(), b.size()) << name;
    Rng stats(12);
    for (BatchNorm2d* bn : a) {
      const auto c = static_cast<std::size_t>(bn->channels());
      stats.fill_uniform(std::span<float>(bn->weight().data(), c), 0.5f, 1.5f);
      stats.fill_uniform(std::span<float>(bn->bias().data(), c), -0.2f, 0.2f);
      stats.fill_uniform(std::span<float>(bn->running_mean().data(), c), -0.2f, 0.2f);
      stats.fill_uniform(std::span<float>(bn->running_var().data(), c), 0.5f, 2.0f);
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i]->channels(), b[i]->channels());
      b[i]->running_mean() = a[i]->running_mean();
      b[i]->running_var() = a[i]->running_var();
    }
    const std::vector<Param> pa = plain.params(), pb = folded.params();
    ASSERT_EQ(pa.size(), pb.size()) << name;
    for (std::size_t i = 0; i < pa.size(); ++i) {
      ASSERT_EQ(pa[i].value->shape(), pb[i].value->shape()) << pa[i].name << " / " << pb[i].name;
      *pb[i].value = *pa[i].value;
    }
    const Shape in{2, 3, 32, 32};
    plain.plan(in, inference_ctx());
    folded.plan(in, inference_ctx());
    const Tensor x = test::random_tensor(in, 13);
    const Tensor ya = plain.forward(x);
    const Tensor& yb = folded.forward(x);
    // Folding only changes float rounding (measured ~1e-6 here): relative 2-norm < 1e-4.
    double diff = 0.0, norm = 0.0;
    for (int64_t i = 0; i < ya.numel(); ++i) {
      diff += (double(ya[i]) - yb[i]) * (double(ya[i]) - yb[i]);
      norm += double(ya[i]) * ya[i];
    }
    EXPECT_GT(norm, 0.0);
    std::cout << fmt::format("{:<13} folded vs unfolded: relative 2-norm difference {:.2e}\n", name,
                             std::sqrt(diff / norm));
    EXPECT_LT(std::sqrt(diff / norm), 1e-4) << name;
  }
}

TEST(CnnModels, OptionsClassesChannelsAndErrors) {
  const ModelEntry& m = find_model("ResNet50");  // case-insensitive
  ModelOptions o;
  o.classes = 10;
  o.input_shape = Shape{1, 64, 64};
  Graph g = m.build(o);
  g.plan(Shape{1, 1, 64, 64}, inference_ctx("gemm"));
  EXPECT_EQ(g.output_shape(g.size() - 1), (Shape{1, 10}));
  EXPECT_EQ(dynamic_cast<const Conv2d&>(g.layer(1)).in_channels(), 1);
  o.input_shape = Shape{64, 64};
  EXPECT_THROW(m.build(o), UsageError);

  ModelOptions fold;
  fold.fold_bn = true;
  Graph f = m.build(fold);
  for (int i = 1; i < f.size(); ++i) {
    EXPECT_EQ(dynamic_cast<const BatchNorm2d*>(&f.layer(i)), nullptr) << f.name(i);
  }
  EXPECT_EQ(f.num_params(), 25557032);  // the folded BN parameters stay listed
  PlanContext train;
  train.training = true;
  EXPECT_THROW(f.plan(Shape{1, 3, 32, 32}, train), Error);  // folding is inference-only
}

TEST(CnnModels, RegistryListsEveryModelAndKeepsMlp) {
  EXPECT_EQ(model_names(),
            "mlp, alexnet, vgg16, resnet18, resnet34, resnet50, resnet152, googlenet, "
            "densenet121, mobilenet_v2");
  const ModelEntry& mlp = find_model("mlp");
  Graph g = mlp.build(ModelOptions{});
  g.plan(Shape{2, 1, 28, 28}, PlanContext{});
  EXPECT_EQ(g.num_params(), mlp.params);
  try {
    find_model("resnet9000");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("resnet9000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("resnet50 (25,557,032 parameters)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("vgg16 (138,357,544 parameters)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mlp (575,050 parameters)"), std::string::npos) << msg;
  }
}

TEST(CnnModels, NamedAlgorithmStrictNamesTheLayerOtherwiseFallsBack) {
  const ModelEntry& m = find_model("resnet18");
  Graph g = m.build(ModelOptions{});
  const ConvAlgorithm& winograd = find_conv("winograd");
  PlanContext ctx = inference_ctx("winograd");
  plan_model(m, g, Shape{1, 3, 32, 32}, ctx);
  int served = 0, fell_back = 0;
  for (int i = 1; i < g.size(); ++i) {
    const auto* c = dynamic_cast<const Conv2d*>(&g.layer(i));
    if (c == nullptr) continue;
    const std::string why = winograd.why_not(c->problem());
    if (why.empty()) {
      EXPECT_EQ(c->algorithm(), &winograd) << g.name(i);
      ++served;
    } else {
      EXPECT_EQ(c->fallback_reason(), why) << g.name(i);
      EXPECT_NE(c->dispatch().find("fallback from winograd: " + why), std::string::npos);
      ++fell_back;
    }
  }
  EXPECT_GT(served, 0);
  EXPECT_GT(fell_back, 0);  // the 7x7 stem, stride-2 and 1x1 convs
  ctx.strict = true;
  try {
    plan_model(m, g, Shape{1, 3, 32, 32}, ctx);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("resnet18: graph node 1 'conv1': layer Conv2d(3->64, k7x7", 0), 0u) << msg;
    EXPECT_NE(msg.find("winograd cannot serve mb1ic3ih32oc64kh7sh2ph3"), std::string::npos) << msg;
  }
}

TEST(CnnModels, ResnetDepthMustBeKnown) {
  EXPECT_THROW(build_resnet(20, CnnOptions{}), UsageError);
}

}  // namespace
}  // namespace nnperf
