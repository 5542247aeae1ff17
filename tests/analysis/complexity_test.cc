// analysis/complexity: per-layer formulas hand-computed on small odd shapes (a 3x5 conv with
// stride 2, groups and dilation; a linear; pools with padding and ceil mode; adaptive windows),
// the backward pass against independent counts (conv/linear data gradient = 2 x MACs except for
// the first layer, weight gradient = 2 x MACs; fan-out accumulation), every registry model's
// parameters and MACs against torchvision's published figures and the roofline project's
// summary.json, shapes and names against a real plan, flagged layer types, the reporters.
#include "nnperf/analysis/complexity.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <memory>

#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/models/cnn_blocks.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/global_pool.h"
#include "nnperf/nn/linear.h"
#include "nnperf/nn/pool.h"
#include "nnperf/profile/exec_log.h"

namespace nnperf {
namespace {

const LayerComplexity& layer(const ModelComplexity& c, const std::string& name) {
  for (const LayerComplexity& l : c.layers) {
    if (l.name == name) return l;
  }
  throw Error("test: no layer " + name);
}

ComplexityOptions training(const std::string& optimizer = "sgd") {
  ComplexityOptions o;
  o.training = true;
  o.optimizer = optimizer;
  return o;
}

// ---- hand-computed formulas on small odd shapes ----

// c1: Conv2d 6->6 3x3 p1 (no bias) on [2, 6, 11, 13], the first layer;
// odd: Conv2d 6->4, kernel 3x5, stride 2, padding 1, dilation 2, groups 2, bias.
Graph odd_conv_graph() {
  Graph g;
  g.add("c1", std::make_unique<Conv2d>(6, 6, 3, 3, 1, 1, 1, 1, false));
  g.add("odd", std::make_unique<Conv2d>(6, 4, 3, 5, 2, 1, 2, 2, true));
  return g;
}

TEST(Complexity, OddConvolutionByHand) {
  const Graph g = odd_conv_graph();
  const Shape in{2, 6, 11, 13};
  const ModelComplexity c = analyze_complexity(g, in, training());
  const LayerComplexity& odd = layer(c, "odd");
  // oh = (11 + 2*1 - 2*(3-1) - 1) / 2 + 1 = 5; ow = (13 + 2 - 2*(5-1) - 1) / 2 + 1 = 4.
  EXPECT_EQ(odd.output_shape, (Shape{2, 4, 5, 4}));
  const double outputs = 2 * 4 * 5 * 4;           // 160
  const double macs = outputs * (6 / 2) * 3 * 5;  // 7200: each output sums ic/g * kh * kw
  EXPECT_EQ(odd.params, 4 * 3 * 3 * 5 + 4);       // 184
  EXPECT_DOUBLE_EQ(odd.macs, macs);
  EXPECT_DOUBLE_EQ(odd.flops, 2 * macs + outputs);  // + the bias
  const double in_values = 2 * 6 * 11 * 13;
  EXPECT_DOUBLE_EQ(odd.bytes, 4 * (in_values + 184 + outputs));
  EXPECT_DOUBLE_EQ(odd.intensity_flops_per_byte, odd.flops / odd.bytes);
  // Backward: data 2 x MACs (its input depends on c1's weights), weights 2 x MACs + bias sum.
  EXPECT_TRUE(odd.data_gradient);
  EXPECT_DOUBLE_EQ(odd.flops_backward_data, 2 * macs);
  EXPECT_DOUBLE_EQ(odd.flops_backward_weights, 2 * macs + outputs);
  // Reads dY, X (for dW), W (for dX); writes dW and dX.
  EXPECT_DOUBLE_EQ(odd.bytes_backward, 4 * (outputs + in_values + 184 + 184 + in_values));
  // torchinfo: every parameter once per output position.
  EXPECT_DOUBLE_EQ(odd.torchinfo_mult_adds, 184.0 * 2 * 5 * 4);

  // The first layer: no data gradient (its input is the graph input).
  const LayerComplexity& c1 = layer(c, "c1");
  const double c1_macs = 2.0 * 6 * 11 * 13 * 6 * 3 * 3;
  EXPECT_DOUBLE_EQ(c1.macs, c1_macs);
  EXPECT_DOUBLE_EQ(c1.flops, 2 * c1_macs);  // no bias
  EXPECT_FALSE(c1.data_gradient);
  EXPECT_DOUBLE_EQ(c1.flops_backward_data, 0.0);
  EXPECT_DOUBLE_EQ(c1.flops_backward_weights, 2 * c1_macs);
  // Reads dY and X, writes dW: no W read and no dX written.
  EXPECT_DOUBLE_EQ(c1.bytes_backward, 4 * (in_values + in_values + 6 * 6 * 9));

  // SGD with momentum: 5 values (20 bytes) and 4 FLOPs per parameter.
  EXPECT_DOUBLE_EQ(odd.optimizer_bytes, 20.0 * 184);
  EXPECT_DOUBLE_EQ(odd.optimizer_flops, 4.0 * 184);
  const ModelComplexity adam = analyze_complexity(g, in, training("adam"));
  EXPECT_DOUBLE_EQ(layer(adam, "odd").optimizer_bytes, 28.0 * 184);
  EXPECT_DOUBLE_EQ(adam.totals.optimizer_bytes, 28.0 * static_cast<double>(g.num_params()));
  EXPECT_DOUBLE_EQ(adam.totals.optimizer_state_bytes, 8.0 * static_cast<double>(g.num_params()));

  // Inference: no backward and no optimizer counted.
  const ModelComplexity inf = analyze_complexity(g, in);
  EXPECT_DOUBLE_EQ(layer(inf, "odd").flops_backward_data, 0.0);
  EXPECT_DOUBLE_EQ(inf.totals.optimizer_bytes, 0.0);
  EXPECT_DOUBLE_EQ(inf.totals.flops, c1.flops + odd.flops);
}

TEST(Complexity, LinearByHand) {
  Graph g;
  g.add("fc", std::make_unique<Linear>(7, 3));
  g.add("fc2", std::make_unique<Linear>(3, 2, false));
  const ModelComplexity c = analyze_complexity(g, Shape{5, 7}, training());
  const LayerComplexity& fc = layer(c, "fc");
  EXPECT_EQ(fc.output_shape, (Shape{5, 3}));
  EXPECT_EQ(fc.params, 24);
  EXPECT_DOUBLE_EQ(fc.macs, 105);
  EXPECT_DOUBLE_EQ(fc.flops, 2 * 105 + 15);
  EXPECT_DOUBLE_EQ(fc.bytes, 4 * (35 + 24 + 15));
  EXPECT_DOUBLE_EQ(fc.flops_backward_data, 0);            // first layer
  EXPECT_DOUBLE_EQ(fc.flops_backward_weights, 210 + 15);  // dW GEMM + bias sum
  const LayerComplexity& fc2 = layer(c, "fc2");
  EXPECT_DOUBLE_EQ(fc2.macs, 30);
  EXPECT_DOUBLE_EQ(fc2.flops, 60);
  EXPECT_DOUBLE_EQ(fc2.flops_backward_data, 60);
  EXPECT_DOUBLE_EQ(fc2.flops_backward_weights, 60);
  EXPECT_DOUBLE_EQ(fc.torchinfo_mult_adds, 5.0 * 24);
  // A training iteration as mlp-bench counts it independently (runs/mlp_bench.cc): 3 x the
  // forward FLOPs minus the first Linear's forward (its input needs no gradient).
  EXPECT_DOUBLE_EQ(c.totals.flops_iteration() - c.totals.optimizer_flops,
                   3 * (fc.flops + fc2.flops) - fc.flops);
}

// One layer after a 1x1 conv (so that its input needs a gradient), on `in`.
ModelComplexity after_conv(std::unique_ptr<Layer> l, const Shape& in,
                           const ComplexityOptions& o = training()) {
  Graph g;
  g.add("conv", std::make_unique<Conv2d>(in[1], in[1], 1, 1));
  g.add("x", std::move(l));
  return analyze_complexity(g, in, o);
}

TEST(Complexity, PoolsWithPaddingAndCeilModeByHand) {
  const Shape in{1, 2, 7, 6};
  const double in_values = 84;
  {
    // oh = floor((7 + 2 - 3) / 2) + 1 = 4, ow = floor((6 + 2 - 3) / 2) + 1 = 3: 24 outputs.
    const ModelComplexity c = after_conv(std::make_unique<MaxPool2d>(3, 2, 1), in);
    const LayerComplexity& l = layer(c, "x");
    EXPECT_EQ(l.output_shape, (Shape{1, 2, 4, 3}));
    EXPECT_DOUBLE_EQ(l.flops, 24 * 8);  // k*k - 1 comparisons per output, padding included
    EXPECT_DOUBLE_EQ(l.macs, 0);
    EXPECT_DOUBLE_EQ(l.bytes, 4 * (in_values + 24));
    EXPECT_DOUBLE_EQ(l.flops_backward_data, 24);  // one add per output into its argmax
    EXPECT_DOUBLE_EQ(l.flops_backward_weights, 0);
    // Reads dY and the argmax (one index per output), writes dX.
    EXPECT_DOUBLE_EQ(l.bytes_backward, 4 * (24 + 24 + in_values));
  }
  {
    const ModelComplexity c = after_conv(std::make_unique<AvgPool2d>(3, 2, 1), in);
    const LayerComplexity& l = layer(c, "x");
    EXPECT_EQ(l.output_shape, (Shape{1, 2, 4, 3}));
    EXPECT_DOUBLE_EQ(l.flops, 24 * 10);  // k*k adds + 1 multiply per output
    EXPECT_DOUBLE_EQ(l.flops_backward_data, 24 * 10);
    EXPECT_DOUBLE_EQ(l.bytes_backward, 4 * (24 + in_values));
  }
  {
    // Ceil mode: ceil((7 - 3) / 2) + 1 = 3 rows, ceil((6 - 3) / 2) + 1 = 3 columns (the last
    // window starts at 4, inside the input).
    const ModelComplexity c = after_conv(std::make_unique<MaxPool2d>(3, 2, 0, true), in);
    EXPECT_EQ(layer(c, "x").output_shape, (Shape{1, 2, 3, 3}));
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 18 * 8);
  }
  {
    // Adaptive 7x6 -> 3x2: row windows [0,3) [2,5) [4,7), column windows [0,3) [3,6).
    const ModelComplexity c = after_conv(std::make_unique<AdaptiveAvgPool2d>(3, 2), in);
    EXPECT_EQ(layer(c, "x").output_shape, (Shape{1, 2, 3, 2}));
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 2 * ((3 + 3 + 3) * (3 + 3) + 6));
  }
  {
    const ModelComplexity c = after_conv(std::make_unique<GlobalAvgPool>(), in);
    EXPECT_EQ(layer(c, "x").output_shape, (Shape{1, 2, 1, 1}));
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 2 * (42 + 1));
  }
  // A pool on the graph input depends on no parameter: no backward at all.
  Graph g;
  g.add("pool", std::make_unique<MaxPool2d>(3, 2, 1));
  const ModelComplexity c = analyze_complexity(g, in, training());
  EXPECT_FALSE(c.layers[0].data_gradient);
  EXPECT_DOUBLE_EQ(c.layers[0].flops_backward_data, 0);
  EXPECT_DOUBLE_EQ(c.layers[0].bytes_backward, 0);
  // Too small (a 3x3 window without padding on 2x2): the error names the node and the layer.
  Graph small;
  small.add("pool3", std::make_unique<MaxPool2d>(3, 2));
  try {
    analyze_complexity(small, Shape{1, 2, 2, 2});
    ADD_FAILURE() << "a 3x3 pool on a 2x2 input was counted";
  } catch (const LayerRefusedError& e) {
    // Labelled for the complexity command; refusal() is the same text for callers' own words.
    EXPECT_TRUE(std::string(e.what()).starts_with("complexity: node 1 'pool3': MaxPool2d(k3, s2)"))
        << e.what();
    EXPECT_TRUE(e.refusal().starts_with("node 1 'pool3': MaxPool2d(k3, s2)")) << e.refusal();
    EXPECT_EQ(std::string(e.what()), "complexity: " + e.refusal());
  }
}

TEST(Complexity, ElementwiseLayersByHand) {
  const Shape in{2, 3, 4, 5};  // 120 values
  {
    const ModelComplexity inf = after_conv(std::make_unique<BatchNorm2d>(3), in, {});
    EXPECT_DOUBLE_EQ(layer(inf, "x").flops, 2 * 120);
    EXPECT_DOUBLE_EQ(layer(inf, "x").bytes, 4 * (120 + 6 + 120));
    EXPECT_DOUBLE_EQ(layer(inf, "x").torchinfo_mult_adds, 2 * 6);  // batch x parameters
    const ModelComplexity tr = after_conv(std::make_unique<BatchNorm2d>(3), in);
    const LayerComplexity& bn = layer(tr, "x");
    EXPECT_DOUBLE_EQ(bn.flops, 5 * 120);
    EXPECT_DOUBLE_EQ(bn.flops_backward_data, 4 * 120);
    EXPECT_DOUBLE_EQ(bn.flops_backward_weights, 5 * 120);
    // Reads dY, X and gamma/beta; writes dX, dgamma, dbeta.
    EXPECT_DOUBLE_EQ(bn.bytes_backward, 4 * (120 + 120 + 6 + 120 + 6));
  }
  {
    const ModelComplexity c = after_conv(std::make_unique<Activation>(find_activation("ReLU")), in);
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 120);  // 1 comparison per element
    EXPECT_DOUBLE_EQ(layer(c, "x").flops_backward_data, 120);
    EXPECT_DOUBLE_EQ(layer(c, "x").bytes_backward, 4 * (120 + 120 + 120));  // dY, X, dX
  }
  {
    const ModelComplexity c = after_conv(std::make_unique<Activation>(find_activation("GELU")), in);
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 5 * 120);
    EXPECT_DOUBLE_EQ(layer(c, "x").flops_backward_data, 11 * 120);
  }
  {
    const ModelComplexity c = after_conv(std::make_unique<ReLU6>(), in);
    EXPECT_DOUBLE_EQ(layer(c, "x").flops, 2 * 120);
    EXPECT_DOUBLE_EQ(layer(c, "x").flops_backward_data, 2 * 120);
  }
  // Every row of the activation table has a backward formula.
  for (const ActivationKernel& k : activation_kernels()) {
    const ModelComplexity c = after_conv(std::make_unique<Activation>(k), in);
    EXPECT_TRUE(layer(c, "x").backward_counted) << k.name;
    EXPECT_GT(layer(c, "x").flops_backward_data, 0) << k.name;
  }
  // Add: 1 per element per extra input, 0 backward (dY passes through), both dX written.
  Graph g;
  const int a = g.add("a", std::make_unique<Conv2d>(3, 3, 1, 1));
  const int b = g.add("b", std::make_unique<Conv2d>(3, 3, 1, 1), {Graph::kInput});
  const int a2 = g.add("a2", std::make_unique<Conv2d>(3, 3, 1, 1), {Graph::kInput});
  g.add("add", std::make_unique<Add>(), {a, b, a2});
  const ModelComplexity c = analyze_complexity(g, in, training());
  EXPECT_DOUBLE_EQ(layer(c, "add").flops, 2 * 120);
  EXPECT_DOUBLE_EQ(layer(c, "add").flops_backward_data, 0);
  EXPECT_DOUBLE_EQ(layer(c, "add").bytes_backward, 4 * (120 + 3 * 120));
  EXPECT_EQ(layer(c, "add").input_shapes.size(), 3u);
}

// The backward of a graph with fan-out: relu feeds conv2 and add. Backward runs add first (it
// writes relu's gradient), then conv2, which adds its part in: numel FLOPs on conv2.
TEST(Complexity, FanOutAccumulationOnTheEarlierConsumer) {
  Graph g;
  g.add("conv1", std::make_unique<Conv2d>(4, 4, 3, 3, 1, 1));
  const int relu = g.add("relu", std::make_unique<Activation>(find_activation("ReLU")));
  const int conv2 = g.add("conv2", std::make_unique<Conv2d>(4, 4, 3, 3, 1, 1), {relu});
  g.add("add", std::make_unique<Add>(), {conv2, relu});
  const Shape in{3, 4, 9, 7};
  const double values = 3 * 4 * 9 * 7;
  const ModelComplexity c = analyze_complexity(g, in, training());
  const LayerComplexity& c2 = layer(c, "conv2");
  EXPECT_DOUBLE_EQ(c2.flops_backward_data, 2 * c2.macs + values);
  EXPECT_DOUBLE_EQ(layer(c, "add").flops_backward_data, 0);
  EXPECT_DOUBLE_EQ(layer(c, "conv1").flops_backward_data, 0);  // first layer
  // conv2's backward bytes: dY, X, W read; dW, dX written; + the accumulation (2 read, 1 write).
  const double w = 4 * 4 * 9 + 4;
  EXPECT_DOUBLE_EQ(c2.bytes_backward, 4 * (values + values + w + w + values + 3 * values));
  // The totals are the sums of the rows.
  double data = 0, weights = 0;
  for (const LayerComplexity& l : c.layers) {
    data += l.flops_backward_data;
    weights += l.flops_backward_weights;
  }
  EXPECT_DOUBLE_EQ(c.totals.flops_backward_data, data);
  EXPECT_DOUBLE_EQ(c.totals.flops_backward_weights, weights);
}

// The backward counts of a whole model against an independent count: for every conv and linear,
// data gradient = 2 x MACs except the first layer, weight gradient = 2 x MACs (+ bias sums).
TEST(Complexity, ResNetBackwardAgainstConvLinearMacs) {
  const ModelEntry& m = find_model("resnet18");
  Graph g = m.build(ModelOptions{});
  PlanContext ctx;
  ctx.training = false;
  ctx.conv_algorithm = "gemm";
  const Shape in{2, 3, 64, 64};
  g.plan(in, ctx);
  const double macs = conv_linear_macs(g);  // the models' own counter, from the plan
  const ModelComplexity c = analyze_complexity(g, in, training());
  EXPECT_DOUBLE_EQ(c.totals.macs, macs);
  const double first = layer(c, "conv1").macs;
  double data = 0, weights = 0;
  for (const LayerComplexity& l : c.layers) {
    if (l.type == "Conv2d" || l.type == "Linear") {
      data += l.flops_backward_data;
      weights += l.flops_backward_weights;
    }
  }
  // Fan-out in ResNet-18: every block input feeds the block's conv1 and the add (or the
  // downsample conv), which runs backward first; conv1 adds its part of the block input's
  // gradient in: one accumulation per block (8 BasicBlocks).
  double block_inputs = 0;
  int blocks = 0;
  for (const LayerComplexity& l : c.layers) {
    if (l.name.size() > 6 && l.name.substr(l.name.size() - 6) == ".conv1") {
      block_inputs += static_cast<double>(l.input_shapes[0].numel());
      ++blocks;
    }
  }
  EXPECT_EQ(blocks, 8);
  EXPECT_DOUBLE_EQ(data, 2 * (macs - first) + block_inputs);
  EXPECT_DOUBLE_EQ(weights, 2 * macs + 2 * 1000);  // fc bias: batch x 1000 sums
  // A training iteration is about 3x the forward (not the "2x forward" estimate).
  EXPECT_NEAR(c.totals.flops_iteration() / c.totals.flops, 3.0, 0.1);
}

// ---- the registry models ----

struct Published {
  const char* name;
  int64_t params;
  double gmacs;  // torchvision's weights metadata "_ops" (GMACs at 224 x 224)
};

TEST(Complexity, EveryModelMatchesTorchvisionAt224) {
  const Published published[] = {
      {"alexnet", 61100840, 0.714},     {"vgg16", 138357544, 15.470},
      {"resnet18", 11689512, 1.814},    {"resnet34", 21797672, 3.664},
      {"resnet50", 25557032, 4.089},    {"resnet152", 60192808, 11.514},
      {"googlenet", 6624904, 1.498},    {"densenet121", 7978856, 2.834},
      {"mobilenet_v2", 3504872, 0.301},
  };
  ASSERT_EQ(std::size(published) + 1, model_registry().size());  // + mlp
  for (const Published& p : published) {
    const ModelComplexity c = model_complexity(p.name, 224, 1);
    EXPECT_EQ(c.totals.params, p.params) << p.name;
    EXPECT_EQ(c.totals.trainable_params, p.params) << p.name;
    EXPECT_NEAR(c.totals.macs / 1e9, p.gmacs, 0.005 * p.gmacs) << p.name;
    EXPECT_TRUE(c.totals.uncounted_layers.empty()) << p.name;
    std::cout << fmt::format("{:<13} params {:>11}  MACs {:.4f} G (torchvision {:.3f}, {:+.3f}%)\n",
                             p.name, c.totals.params, c.totals.macs / 1e9, p.gmacs,
                             100 * (c.totals.macs / 1e9 / p.gmacs - 1));
  }
}

// The roofline project's (JcxaL/cloudml-project1) logs/model_summaries/summary.json, written from
// torchinfo: its mult-adds per sample exactly, at every batch size.
TEST(Complexity, SummaryMatchesTheRooflineProjectsFile) {
  const std::vector<std::string> models = {"resnet50", "vgg16", "mobilenet_v2"};
  const std::vector<int64_t> batches = {64, 128, 256};
  const nlohmann::json s = complexity_summary(models, batches);
  const std::map<std::string, std::pair<int64_t, double>> reference = {
      {"resnet50", {25557032, 4089238376.0}},
      {"vgg16", {138357544, 15483821032.0}},
      {"mobilenet_v2", {3504872, 300809384.0}},
  };
  for (const auto& [model, ref] : reference) {
    for (int64_t b : batches) {
      const nlohmann::json& e = s.at(model).at(std::to_string(b));
      EXPECT_EQ(e.size(), 5u);
      EXPECT_EQ(e.at("params").get<int64_t>(), ref.first) << model;
      EXPECT_DOUBLE_EQ(e.at("mult_adds_per_sample_forward").get<double>(), ref.second) << model;
      EXPECT_DOUBLE_EQ(e.at("mult_adds_per_batch_forward").get<double>(),
                       ref.second * static_cast<double>(b))
          << model;
      EXPECT_DOUBLE_EQ(e.at("flops_per_sample_forward").get<double>(), 2 * ref.second);
      EXPECT_DOUBLE_EQ(e.at("flops_per_batch_forward").get<double>(),
                       2 * ref.second * static_cast<double>(b));
    }
  }
  // The file's resnet50 batch-64 line, verbatim.
  EXPECT_DOUBLE_EQ(s["resnet50"]["64"]["mult_adds_per_batch_forward"].get<double>(),
                   261711256064.0);
  // And this module's own MACs (conv + linear) are within 0.5% of those figures.
  const ModelComplexity r50 = model_complexity("resnet50", 224, 1);
  EXPECT_DOUBLE_EQ(r50.totals.torchinfo_mult_adds, 4089238376.0);
  EXPECT_NEAR(r50.totals.macs, 4.089e9, 0.005 * 4.089e9);
  EXPECT_NEAR(model_complexity("vgg16", 224, 1).totals.macs, 15.484e9, 0.005 * 15.484e9);
  EXPECT_NEAR(model_complexity("mobilenet_v2", 224, 1).totals.macs, 0.301e9, 0.005 * 0.301e9);
}

// Shapes, names and types against a real plan of every model at a small input, and the forward
// FLOPs against the layers' own forward_flops() where the conventions agree.
TEST(Complexity, ShapesNamesAndFlopsAgreeWithThePlan) {
  for (const ModelEntry& m : model_registry()) {
    Graph g = m.build(ModelOptions{});
    const int64_t size = std::max<int64_t>(m.min_input_size, m.default_input[1] < 64 ? 28 : 64);
    const Shape in{2, m.default_input[0], size, size};
    PlanContext ctx;
    ctx.training = false;
    ctx.conv_algorithm = "gemm";
    g.plan(in, ctx);
    const ModelComplexity c = analyze_complexity(g, in);
    ASSERT_EQ(static_cast<int>(c.layers.size()), g.size() - 1) << m.name;
    for (int i = 1; i < g.size(); ++i) {
      const LayerComplexity& l = c.layers[static_cast<std::size_t>(i - 1)];
      EXPECT_EQ(l.node, i);
      EXPECT_EQ(l.name, g.name(i)) << m.name;
      EXPECT_EQ(l.type, layer_columns(g, i).layer_type) << m.name << " " << l.name;
      EXPECT_EQ(l.output_shape, g.output_shape(i)) << m.name << " " << l.name;
      EXPECT_EQ(l.params, g.layer(i).num_params());
      if (l.type != "MaxPool2d") {  // the layer counts k*k per output, this convention k*k - 1
        EXPECT_NEAR(l.flops, g.layer(i).forward_flops(), 1e-9 * l.flops) << m.name << " " << l.name;
      }
    }
    EXPECT_DOUBLE_EQ(c.totals.macs, conv_linear_macs(g)) << m.name;
  }
}

TEST(Complexity, FoldedBatchNormMovesItsWorkIntoTheConvBias) {
  ModelOptions folded;
  folded.fold_bn = true;
  const ModelComplexity f = model_complexity("resnet50", 224, 1, {}, folded);
  const ModelComplexity u = model_complexity("resnet50", 224, 1);
  EXPECT_TRUE(f.fold_bn);
  double bn_flops = 0;
  for (const LayerComplexity& l : u.layers) {
    if (l.type == "BatchNorm2d") bn_flops += l.flops;
  }
  for (const LayerComplexity& l : f.layers) EXPECT_NE(l.type, "BatchNorm2d");
  EXPECT_DOUBLE_EQ(f.totals.macs, u.totals.macs);
  EXPECT_EQ(f.totals.params, u.totals.params);
  // Each BN (2 per element) becomes one bias add per conv output.
  EXPECT_DOUBLE_EQ(f.totals.flops, u.totals.flops - bn_flops / 2);
  EXPECT_THROW(model_complexity("resnet50", 224, 1, training(), folded), UsageError);
}

TEST(Complexity, MlpFirstLayerHasNoDataGradientAndBatchScalesLinearly) {
  ModelOptions o;
  o.hidden = {100, 50};
  const ModelComplexity c = model_complexity("mlp", 28, 16, training(), o);
  ASSERT_EQ(c.layers.size(), 6u);  // flatten, fc1, act1, fc2, act2, fc3
  EXPECT_EQ(c.layers[0].name, "flatten");
  EXPECT_FALSE(layer(c, "fc1").data_gradient);  // after Flatten, which depends on no parameter
  EXPECT_DOUBLE_EQ(layer(c, "fc1").flops_backward_data, 0);
  EXPECT_DOUBLE_EQ(layer(c, "fc2").flops_backward_data, 2 * 16.0 * 100 * 50);
  EXPECT_EQ(c.totals.params, 784 * 100 + 100 + 100 * 50 + 50 + 50 * 10 + 10);
  const ModelComplexity one = model_complexity("mlp", 28, 1, training(), o);
  EXPECT_DOUBLE_EQ(c.totals.macs, 16 * one.totals.macs);
  EXPECT_DOUBLE_EQ(c.totals.optimizer_bytes, one.totals.optimizer_bytes);  // per step, not sample
}

TEST(Complexity, HugeSizesAreCountedWithoutPlanning) {
  const ModelComplexity c =
      model_complexity("resnet50", kComplexityMaxInputSize, kComplexityMaxBatch, training());
  EXPECT_TRUE(std::isfinite(c.totals.flops_iteration()));
  EXPECT_TRUE(std::isfinite(c.totals.bytes_iteration()));
  EXPECT_GT(c.totals.macs, 1e21);
  const ModelComplexity small = model_complexity("resnet50", 224, 1);
  const double scale = static_cast<double>(kComplexityMaxBatch);
  EXPECT_NEAR(layer(c, "conv1").macs,
              layer(small, "conv1").macs * scale * (65536.0 / 224) * (65536.0 / 224),
              1e-9 * layer(c, "conv1").macs);
}

TEST(Complexity, RefusesBadSizesNamingTheLimit) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no UsageError");
  };
  EXPECT_NE(message([] { model_complexity("vgg16", 31, 1); }).find("32x32"), std::string::npos);
  EXPECT_NE(message([] { model_complexity("resnet50", 0, 1); }).find("1..65536"),
            std::string::npos);
  EXPECT_NE(message([] { model_complexity("resnet50", 65537, 1); }).find("1..65536"),
            std::string::npos);
  EXPECT_NE(message([] { model_complexity("resnet50", 224, 0); }).find("1..16777216"),
            std::string::npos);
  EXPECT_NE(message([] {
              model_complexity("resnet50", 224, kComplexityMaxBatch + 1);
            }).find("1..16777216"),
            std::string::npos);
  EXPECT_NE(message([] {
              model_complexity("resnet50", 224, 1, training("rmsprop"));
            }).find("sgd or adam"),
            std::string::npos);
  // The mlp's weights grow with the input: 65536^2 x 512 floats are refused before building.
  EXPECT_NE(message([] { model_complexity("mlp", 65536, 1); }).find("mlp"), std::string::npos);
}

// A layer type without a formula: an error when unplanned, a flagged row (NaN, null, named in
// the totals) when the graph is planned for this input. Never a silent zero.
class Scale : public Layer {
 public:
  std::string kind() const override { return "Scale"; }
  std::string describe() const override { return "Scale(2)"; }
  Shape plan(std::span<const Shape> src, const PlanContext&) override { return src[0]; }
  void forward(std::span<const Tensor* const> src, Tensor& dst) override {
    for (int64_t i = 0; i < dst.numel(); ++i) dst[i] = 2 * (*src[0])[i];
  }
  void backward(std::span<const Tensor* const>, const Tensor&, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override {
    if (d_src[0] != nullptr) {
      for (int64_t i = 0; i < d_dst.numel(); ++i) (*d_src[0])[i] = 2 * d_dst[i];
    }
  }
};

TEST(Complexity, LayerTypesWithoutAFormulaAreFlagged) {
  Graph g;
  g.add("fc", std::make_unique<Linear>(4, 3));
  g.add("scale", std::make_unique<Scale>());
  g.add("fc2", std::make_unique<Linear>(3, 2));
  const Shape in{5, 4};
  try {
    analyze_complexity(g, in);
    ADD_FAILURE() << "an unplanned graph with an unknown layer type was counted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'scale' is a Scale"), std::string::npos) << e.what();
  }
  PlanContext ctx;
  ctx.training = false;
  g.plan(in, ctx);
  const ModelComplexity c = analyze_complexity(g, in, training());
  const LayerComplexity& s = layer(c, "scale");
  EXPECT_FALSE(s.counted);
  EXPECT_TRUE(std::isnan(s.flops));
  EXPECT_TRUE(std::isnan(s.bytes));
  EXPECT_TRUE(std::isnan(s.flops_backward_data));
  EXPECT_EQ(s.output_shape, (Shape{5, 3}));
  EXPECT_NE(s.note.find("Scale"), std::string::npos);
  EXPECT_EQ(c.totals.uncounted_layers, std::vector<std::string>{"scale"});
  EXPECT_DOUBLE_EQ(c.totals.flops, layer(c, "fc").flops + layer(c, "fc2").flops);
  EXPECT_TRUE(layer(c, "fc2").data_gradient);  // its input still depends on fc's weights
  const nlohmann::json doc = complexity_json(c);
  EXPECT_TRUE(doc["records"][1]["flops"].is_null());
  EXPECT_FALSE(doc["records"][1]["counted"].get<bool>());
  const std::string table = complexity_table(doc);
  EXPECT_NE(table.find("NOT COUNTED"), std::string::npos);
  const ComplexityCsv csv = complexity_csv(doc);
  const auto col = std::find(csv.header.begin(), csv.header.end(), "flops") - csv.header.begin();
  EXPECT_EQ(csv.rows[1][static_cast<std::size_t>(col)], "");
}

// ---- records and reporters ----

TEST(Complexity, RecordsCarryUnitsAndTheReportersRebuildFromSavedJson) {
  const ModelComplexity c = model_complexity("resnet18", 224, 4, training("adam"));
  const nlohmann::json doc = complexity_json(c);
  const nlohmann::json& ctx = doc.at("context");
  EXPECT_EQ(ctx.at("model"), "resnet18");
  EXPECT_EQ(ctx.at("batch_size"), 4);
  EXPECT_EQ(ctx.at("input_size"), 224);
  EXPECT_EQ(ctx.at("optimizer"), "adam");
  EXPECT_EQ(ctx.at("convention").at("flops_per_mac"), 2);
  for (const char* rule :
       {"Conv2d", "Linear", "BatchNorm2d", "Activation", "MaxPool2d", "AvgPool2d",
        "AdaptiveAvgPool2d", "Add", "Concat", "Flatten", "Dropout", "optimizer", "torchinfo"}) {
    EXPECT_TRUE(ctx.at("convention").at("rules").contains(rule)) << rule;
  }
  EXPECT_EQ(ctx.at("totals").at("params"), 11689512);
  EXPECT_DOUBLE_EQ(ctx.at("totals").at("macs_per_sample_forward").get<double>(), c.totals.macs / 4);
  ASSERT_EQ(doc.at("records").size(), c.layers.size());
  const nlohmann::json& conv1 = doc.at("records").at(0);
  EXPECT_EQ(conv1.at("layer"), "conv1");
  EXPECT_EQ(conv1.at("input_shape"), "4x3x224x224");
  EXPECT_EQ(conv1.at("output_shape"), "4x64x112x112");
  for (const char* field :
       {"params", "macs", "flops", "bytes", "intensity_flops_per_byte", "flops_backward_data",
        "flops_backward_weights", "bytes_backward", "optimizer_bytes", "optimizer_flops"}) {
    EXPECT_TRUE(conv1.contains(field)) << field;
  }
  EXPECT_DOUBLE_EQ(conv1.at("flops_backward_data").get<double>(), 0.0);

  // Rendering a saved copy gives exactly what rendering the original gives.
  const nlohmann::json saved = nlohmann::json::parse(doc.dump());
  const std::string table = complexity_table(doc);
  EXPECT_EQ(complexity_table(saved), table);
  EXPECT_NE(table.find("FLOPs = 2 x MACs"), std::string::npos);
  EXPECT_NE(table.find("Total params: 11,689,512"), std::string::npos);
  EXPECT_NE(table.find("layer4.1.conv2"), std::string::npos);
  EXPECT_NE(table.find("bwd data FLOPs"), std::string::npos);
  const ComplexityCsv csv = complexity_csv(saved);
  EXPECT_EQ(csv.rows.size(), c.layers.size());
  EXPECT_EQ(csv.header.front(), "node");
  for (const auto& row : csv.rows) EXPECT_EQ(row.size(), csv.header.size());
  const auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(csv.header.begin(), csv.header.end(), name) -
                                    csv.header.begin());
  };
  ASSERT_LT(col("macs"), csv.header.size());
  EXPECT_DOUBLE_EQ(std::stod(csv.rows[0][col("macs")]), c.layers[0].macs);
  EXPECT_EQ(csv.rows[0][col("layer")], "conv1");
  EXPECT_EQ(csv.rows[0][col("describe")], c.layers[0].describe);

  const nlohmann::json s =
      complexity_summary(std::vector<std::string>{"resnet18"}, std::vector<int64_t>{16, 128});
  const std::string st = complexity_summary_table(s);
  ASSERT_NE(st.find(" 16 "), std::string::npos) << st;
  EXPECT_LT(st.find(" 16 "), st.find(" 128 ")) << st;  // batch sizes in numeric order
}

}  // namespace
}  // namespace nnperf
