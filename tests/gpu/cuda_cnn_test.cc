// CNN training on the GPU (train/cuda_cnn.h). Everywhere: which registered models the GPU
// trainer covers (the ResNets, DenseNet) and that the others are refused by layer (VGG-16's
// Dropout, MobileNetV2's ReLU6), and the refusal without a device. With a device: ResNet-18 and
// DenseNet-121 against the CPU from the same weights and batch: the first step's loss and every
// node's output within 1e-4, every layer's forward and backward on the GPU's own inputs within
// 1e-4 of the CPU layer's, the whole-network gradients where the ReLU masks agree, and three
// SGD (Nesterov, weight decay) updates against the CPU optimizer on the GPU's gradients.
#include "nnperf/train/cuda_cnn.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/linear.h"
#include "nnperf/nn/pool.h"
#include "nnperf/train/checkpoint.h"
#include "nnperf/train/optimizer.h"
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

// Every node keeps its own output (no ReLU fused into a BatchNorm): the tests compare the CPU
// graph's outputs node by node with the GPU trainer's, which runs the ReLU nodes.
PlanContext training_ctx() {
  PlanContext ctx;
  ctx.training = true;
  ctx.conv_algorithm = "guess";
  ctx.fuse_relu = false;
  return ctx;
}

// The host side of a GPU trainer: shapes and parameters, no node storage (as the commands plan it).
PlanContext gpu_host_ctx() {
  PlanContext ctx = training_ctx();
  ctx.node_storage = false;
  return ctx;
}

// A layer the GPU has no kernels for (none of the registered models has one).
class NoGpuLayer final : public Layer {
 public:
  std::string kind() const override { return "NoGpuLayer"; }
  std::string describe() const override { return "NoGpuLayer()"; }
  Shape plan(std::span<const Shape> src, const PlanContext&) override { return src[0]; }
  void forward(std::span<const Tensor* const>, Tensor&) override {}
  void backward(std::span<const Tensor* const>, const Tensor&, const Tensor&,
                std::span<Tensor* const>) override {}
};

TEST(CudaCnnTrainer, CoversEveryRegisteredCnnAndRefusesAnUnknownLayerByName) {
  for (const ModelEntry& m : model_registry()) {
    if (std::string(m.name) == "mlp") continue;
    SCOPED_TRACE(m.name);
    Graph g = built(m.name, 1);
    plan_model(m, g, Shape{2, 3, 64, 64}, gpu_host_ctx());  // as the commands plan it
    EXPECT_EQ(cuda_training_unsupported(g), "");
  }
  Graph g;
  g.add("odd", std::make_unique<NoGpuLayer>(), {Graph::kInput});
  g.add("flat", std::make_unique<Flatten>());
  g.plan(Shape{2, 3}, training_ctx());
  EXPECT_EQ(cuda_training_unsupported(g),
            "layer odd (NoGpuLayer()): no GPU training kernel for NoGpuLayer yet");
}

// The memory the trainer checks before allocating, counted by hand for a small graph (runs
// without a device): input [2,3,8,8] 384 values, conv out [2,4,8,8] 512 with 4*3*3*3+4 = 112
// parameters, max-pool out [2,4,4,4] 128 plus its argmax, dropout 128 plus its mask, flatten
// 128, linear out [2,10] 20 with 64*10+10 = 650 parameters.
TEST(CudaCnnTrainer, TheMemoryCheckCountsOutputsGradientsParametersAndState) {
  Graph g;
  g.add("conv", std::make_unique<Conv2d>(3, 4, 3, 3, 1, 1), {Graph::kInput});
  g.add("pool", std::make_unique<MaxPool2d>(2));
  g.add("drop", std::make_unique<Dropout>(0.5));
  g.add("flat", std::make_unique<Flatten>());
  g.add("fc", std::make_unique<Linear>(64, 10));
  g.plan(Shape{2, 3, 8, 8}, training_ctx());
  // Every output; every gradient but the input's; the argmax and the mask.
  const std::size_t outputs = 384 + 2 * (512 + 128 + 128 + 128 + 20) + 128 + 128;
  const std::size_t params = 112 + 650;
  OptimizerOptions o;
  o.name = "sgd";
  o.momentum = 0.0;
  EXPECT_EQ(cuda_training_bytes(g, o), (outputs + 2 * params) * sizeof(float));
  o.momentum = 0.9;
  EXPECT_EQ(cuda_training_bytes(g, o), (outputs + 3 * params) * sizeof(float));
  o.name = "adam";
  EXPECT_EQ(cuda_training_bytes(g, o), (outputs + 4 * params) * sizeof(float));

  // A residual Add: c2 feeds only the Add, so its gradient is the Add's (no buffer of its own);
  // c1 feeds c2 and the Add and keeps one.
  Graph r;
  const int c1 = r.add("c1", std::make_unique<Conv2d>(3, 4, 3, 3, 1, 1), {Graph::kInput});
  const int c2 = r.add("c2", std::make_unique<Conv2d>(4, 4, 3, 3, 1, 1), {c1});
  r.add("sum", std::make_unique<Add>(), {c1, c2});
  r.add("flat", std::make_unique<Flatten>());
  r.add("fc", std::make_unique<Linear>(256, 10));
  r.plan(Shape{2, 3, 8, 8}, training_ctx());
  const std::size_t residual_outputs = 384 + 512 + 512 + 512 + 512 + 20;  // input .. fc
  const std::size_t residual_grads = 512 + 512 + 512 + 20;                // c1, sum, flat, fc
  const std::size_t residual_params = 112 + 148 + 2570;
  o.name = "sgd";
  o.momentum = 0.0;
  EXPECT_EQ(cuda_training_bytes(r, o),
            (residual_outputs + residual_grads + 2 * residual_params) * sizeof(float));
}

TEST(CudaCnnTrainer, WithoutADeviceItRefusesWithTheReason) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is usable here";
  Graph g = built("resnet18", 1);
  plan_model(find_model("resnet18"), g, Shape{2, 3, 32, 32}, training_ctx());
  OptimizerOptions sgd;
  sgd.name = "sgd";
  try {
    CudaCnnTrainer t(g, sgd, {});
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
  // The tables' spelling, whatever the case given; the shortest form for outputs.
  const CudaConvChoice shouted = parse_cuda_conv_choice("fwd=Implicit-GEMM,bwd_data=FIND");
  EXPECT_EQ(to_string(shouted), "fwd=implicit_gemm,bwd_data=find,bwd_weights=guess");
  EXPECT_TRUE(uses_find(shouted));
  EXPECT_EQ(to_string(parse_cuda_conv_choice("FIND")), "find");
  EXPECT_EQ(to_string(parse_cuda_conv_choice("Guess")), "guess");
  EXPECT_EQ(to_string(parse_cuda_conv_choice("Winograd-Nonfused")), "winograd_nonfused");
  EXPECT_EQ(to_string(parse_cuda_conv_choice("fwd=find")),
            "fwd=find,bwd_data=guess,bwd_weights=guess");
  EXPECT_EQ(to_string(parse_cuda_conv_choice("fwd=guess,bwd_weights=guess")), "guess");
  EXPECT_FALSE(uses_find(n));
  EXPECT_EQ(canonical_train_algorithm("FIND", true, false, false), "find");
  EXPECT_EQ(canonical_train_algorithm("Implicit-GEMM", false, false, true), "implicit_gemm");
  EXPECT_THROW((void)canonical_train_algorithm("algo_1", false, false, false), UsageError);
  for (const bool cuda : {false, true}) {  // timing is refused under --deterministic, any case
    EXPECT_THROW((void)canonical_train_algorithm("Find", cuda, false, true), UsageError) << cuda;
  }
  EXPECT_THROW((void)canonical_train_algorithm("bwd_weights=FIND", true, false, true), UsageError);
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

Tensor tensor_of(const Shape& shape, const std::vector<float>& v) {
  Tensor t(shape);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size())) << shape.str();
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

// Each layer on its own: every node of `local` (a CPU graph with the GPU's starting weights) run
// forward and backward on the GPU trainer's own inputs and output gradients of its last step, the
// CPU's input gradients summed per producer as the graph sums them. Returns a table of the nodes
// (output and output gradient) and parameters (gradient) where the GPU's values differ from the
// CPU layer's by more than `tol` of the largest value. Nothing propagates from one layer to the
// next, so ReLU masks and max-pool choices are the same on both sides. `Source` is the
// CudaCnnTrainer or, to check this check, CpuSource.
template <class Source>
std::string layer_by_layer_mismatches(Graph& local, const Source& gpu, const Tensor& x,
                                      double tol) {
  const int size = local.size();
  std::vector<Tensor> out(static_cast<std::size_t>(size)), d_sum(out.size());
  for (int n = 1; n < size; ++n) {
    out[static_cast<std::size_t>(n)] = tensor_of(local.output_shape(n), gpu.node_output(n));
    d_sum[static_cast<std::size_t>(n)] = Tensor::zeros(local.output_shape(n));
  }
  std::string table;
  const auto check = [&](const std::string& what, std::span<const float> got, const Tensor& want) {
    const double d = relative_diff(got, span_of(want));
    if (d > tol) table += fmt::format("  {}: {:.3g}\n", what, d);
  };
  for (int n = size - 1; n >= 1; --n) {
    std::vector<const Tensor*> src;
    std::vector<Tensor> d_src;
    for (const int k : local.inputs(n)) {
      src.push_back(k == Graph::kInput ? &x : &out[static_cast<std::size_t>(k)]);
      d_src.emplace_back(k == Graph::kInput ? Shape{} : local.output_shape(k));
    }
    std::vector<Tensor*> d_ptr;
    for (std::size_t i = 0; i < d_src.size(); ++i)
      d_ptr.push_back(local.inputs(n)[i] == Graph::kInput ? nullptr : &d_src[i]);
    Tensor y(local.output_shape(n));
    const Tensor dy = tensor_of(y.shape(), gpu.node_grad(n));
    if (local.layer(n).kind() == "Dropout") {
      // The source's own mask (the GPU draws its own): y = x * mask, dx = dy * mask.
      const std::vector<float> mask = gpu.dropout_mask(n);
      for (int64_t j = 0; j < y.numel(); ++j) {
        y.data()[j] = src[0]->data()[j] * mask[static_cast<std::size_t>(j)];
        if (d_ptr[0] != nullptr)
          d_ptr[0]->data()[j] = dy.data()[j] * mask[static_cast<std::size_t>(j)];
      }
    } else {
      local.layer(n).forward(src, y);
      local.layer(n).backward(src, y, dy, d_ptr);
    }
    check(local.name(n) + " output", span_of(out[static_cast<std::size_t>(n)]), y);
    for (std::size_t i = 0; i < d_ptr.size(); ++i) {
      if (d_ptr[i] == nullptr) continue;
      Tensor& sum = d_sum[static_cast<std::size_t>(local.inputs(n)[i])];
      for (int64_t j = 0; j < sum.numel(); ++j) sum.data()[j] += d_src[i].data()[j];
    }
  }
  for (int n = 1; n + 1 < size; ++n)
    check(local.name(n) + " gradient", gpu.node_grad(n), d_sum[static_cast<std::size_t>(n)]);
  const std::vector<Param> ps = local.params();
  for (std::size_t i = 0; i < ps.size(); ++i) check(ps[i].name, gpu.param_grad(i), *ps[i].grad);
  return table;
}

// A CPU graph after forward(x) and backward(d_output), read as layer_by_layer_mismatches reads
// the GPU trainer.
struct CpuSource {
  Graph& g;
  const Tensor& d_output;
  std::vector<float> node_output(int n) const { return as_vector(g.value(n)); }
  std::vector<float> node_grad(int n) const {
    return as_vector(n == g.size() - 1 ? d_output : g.grad(n));
  }
  std::vector<float> param_grad(std::size_t i) const { return as_vector(*g.params()[i].grad); }
  std::vector<float> dropout_mask(int n) const { return dynamic_cast<Dropout&>(g.layer(n)).mask(); }
  static std::vector<float> as_vector(const Tensor& t) { return {t.data(), t.data() + t.numel()}; }
};

// The check itself, without a device: a CPU graph read layer by layer against itself (the same
// layers recomputed on their recorded inputs and gradients) agrees to 1e-6, on both models.
TEST(CudaCnnTrainer, TheLayerByLayerCheckFindsNothingBetweenACpuGraphAndItself) {
  for (const auto& [model, input] :
       {std::pair{"resnet18", Shape{2, 3, 32, 32}}, std::pair{"densenet121", Shape{2, 3, 33, 33}},
        std::pair{"mobilenet_v2", Shape{2, 3, 32, 32}}}) {
    SCOPED_TRACE(model);
    Graph g = built(model, 5), local = built(model, 5);
    plan_model(find_model(model), g, input, training_ctx());
    plan_model(find_model(model), local, input, training_ctx());
    Tensor x = test::random_tensor(input, 11);
    const Tensor& y = g.forward(x);
    Tensor r = test::random_tensor(y.shape(), 12);
    g.backward(r);
    EXPECT_EQ(layer_by_layer_mismatches(local, CpuSource{g, r}, x, 1e-6), "");
    // and it does see a difference: one gradient changed in one place by 1% of the largest
    Tensor& wrong = const_cast<Tensor&>(g.grad(3));
    float largest = 0;
    for (int64_t j = 0; j < wrong.numel(); ++j) largest = std::max(largest, std::abs(wrong[j]));
    wrong.data()[0] += 0.01f * largest;
    EXPECT_NE(layer_by_layer_mismatches(local, CpuSource{g, r}, x, 1e-6).find(g.name(3)),
              std::string::npos);
  }
}

// ReLU inputs whose sign differs between the CPU graph's last forward and the GPU's ("node:
// count" per ReLU node): where one does, the two backward passes route that gradient differently
// from there down, and whole-network gradients are no longer comparable element by element.
// Outputs that agree within 1e-4 of their largest value can differ in sign only near zero: more
// than 1% of all ReLU inputs flipped fails the test.
std::string relu_mask_flips(const Graph& cpu, const CudaCnnTrainer& gpu) {
  std::string flips;
  int64_t flipped = 0, inputs = 0;
  for (int n = 1; n < cpu.size(); ++n) {
    if (cpu.layer(n).describe() != "ReLU") continue;
    const int k = cpu.inputs(n)[0];
    const std::vector<float> g = gpu.node_output(k);
    const Tensor& c = cpu.value(k);
    int64_t count = 0;
    for (int64_t j = 0; j < c.numel(); ++j)
      count += (c.data()[j] > 0) != (g[static_cast<std::size_t>(j)] > 0);
    if (count > 0) flips += fmt::format("{}: {} ", cpu.name(n), count);
    flipped += count;
    inputs += c.numel();
  }
  EXPECT_LE(static_cast<double>(flipped), 0.01 * static_cast<double>(inputs)) << flips;
  return flips;
}

// Three SGD steps (momentum, Nesterov, weight decay) on the GPU, the CPU optimizer applied to the
// GPU's own gradients of each step beside them from the same weights: after the three, every
// parameter within 1e-3 of its change (the optimizer's wiring: state kept across steps, the
// weights it reads and writes).
void expect_same_updates(Graph& gpu_graph, CudaCnnTrainer& gpu, const std::vector<Tensor>& w0,
                         const OptimizerOptions& sgd, std::span<const float> x,
                         std::span<const int32_t> labels) {
  std::vector<Tensor> value = w0, grad;
  for (const Tensor& w : w0) grad.push_back(Tensor::zeros(w.shape()));
  std::vector<Param> shadow;
  for (std::size_t i = 0; i < w0.size(); ++i) shadow.push_back({"", &value[i], &grad[i]});
  const std::unique_ptr<Optimizer> cpu = make_optimizer(sgd);
  for (int step = 0; step < 3; ++step) {
    if (step > 0) (void)gpu.step(x, labels);
    for (std::size_t i = 0; i < grad.size(); ++i) {
      const std::vector<float> g = gpu.param_grad(i);
      std::copy(g.begin(), g.end(), grad[i].data());
    }
    cpu->step(shadow);
  }
  gpu.download_params();
  const std::vector<Param> b = gpu_graph.params();
  ASSERT_EQ(b.size(), value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    double change = 0, diff = 0;
    for (int64_t j = 0; j < value[i].numel(); ++j) {
      change = std::max(change, std::abs(double{value[i].data()[j]} - w0[i].data()[j]));
      diff = std::max(diff, std::abs(double{value[i].data()[j]} - b[i].value->data()[j]));
    }
    EXPECT_GT(change, 0.0) << b[i].name;
    EXPECT_LE(diff, 1e-3 * change + 1e-7) << b[i].name;
  }
}

// The CPU Trainer's step (`cpu`, from the same weights) against the GPU's of the same batch: the
// loss and every node's output within 1e-4 of the largest value; the whole-network gradients
// within `grad` where no ReLU's mask differs between the two forward passes (else they are
// reported, not compared: measured on an H200, one ReLU input of ResNet-18 of another sign moved
// every gradient below it by 1-15%).
void expect_same_step(const std::string& model, Trainer& cpu, const Graph& cpu_graph,
                      CudaCnnTrainer& gpu, const Tensor& x, std::span<const int32_t> labels,
                      double grad) {
  const double want = cpu.step(x, labels).mean_loss();
  EXPECT_NEAR(gpu.step(span_of(x), labels).mean_loss(), want, 1e-4 * std::abs(want));
  std::string table;
  for (int n = 1; n < cpu_graph.size(); ++n) {
    const double d = relative_diff(gpu.node_output(n), span_of(cpu_graph.value(n)));
    if (d > 1e-4) table += fmt::format("  {}: {:.3g}\n", cpu_graph.name(n), d);
  }
  EXPECT_EQ(table, "") << "outputs differing by more than 1e-4 of their largest value:\n" << table;
  const std::string flips = relu_mask_flips(cpu_graph, gpu);
  table.clear();
  const std::vector<Param> ps = const_cast<Graph&>(cpu_graph).params();
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const double d = relative_diff(gpu.param_grad(i), span_of(*ps[i].grad));
    if (d > grad) table += fmt::format("  {}: {:.3g}\n", ps[i].name, d);
  }
  ::testing::Test::RecordProperty("relu_mask_flips_" + model, flips.empty() ? "none" : flips);
  if (flips.empty()) {
    EXPECT_EQ(table, "") << "whole-network gradients differing by more than " << grad << ":\n"
                         << table;
  } else if (!table.empty()) {
    std::cout << model << ": ReLU inputs of another sign on the GPU (" << flips
              << "); whole-network gradients not compared, differing by more than " << grad << ":\n"
              << table;
  }
}

bool has_dropout(const Graph& g) {
  for (int n = 1; n < g.size(); ++n) {
    if (g.layer(n).kind() == "Dropout") return true;
  }
  return false;
}

// One training step of `model` on the GPU from the CPU's initial weights, cuDNN's GEMM-based
// algorithms in every pass (Winograd and FFT are less exact: measured 10x the GEMM's error on an
// H200): every layer on its own (layer_by_layer_mismatches) within 1e-4; the step against the
// CPU Trainer's (expect_same_step) unless the model has Dropout, whose masks the GPU draws from
// its own generator; then the updates of three steps.
void expect_same_training(const std::string& model, const Shape& input, double grad) {
  SCOPED_TRACE(model);
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.lr = 0.01;
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weight_decay = 5e-4;
  Graph cpu_graph = built(model, 5), gpu_graph = built(model, 5), local = built(model, 5);
  std::vector<Tensor> w0;
  for (const Param& p : cpu_graph.params()) w0.push_back(*p.value);
  plan_model(find_model(model), gpu_graph, input, gpu_host_ctx());
  plan_model(find_model(model), local, input, training_ctx());
  CudaCnnTrainer gpu(gpu_graph, sgd,
                     {.conv_algorithm = "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1",
                      .deterministic = true});
  Tensor x(input);
  Rng rng(9);
  rng.fill_uniform({x.data(), static_cast<std::size_t>(x.numel())}, -1.0f, 1.0f);
  std::vector<int32_t> labels(static_cast<std::size_t>(input[0]));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>((3 * i + 1) % 10);
  if (has_dropout(gpu_graph)) {
    EXPECT_TRUE(std::isfinite(gpu.step(span_of(x), labels).mean_loss()));
  } else {
    Trainer cpu(cpu_graph, make_optimizer(sgd), training_ctx());
    expect_same_step(model, cpu, cpu_graph, gpu, x, labels, grad);
  }
  const std::string table = layer_by_layer_mismatches(local, gpu, x, 1e-4);
  EXPECT_EQ(table, "") << "layer by layer, differing by more than 1e-4:\n" << table;
  expect_same_updates(gpu_graph, gpu, w0, sgd, span_of(x), labels);
}

TEST(CudaCnnTrainer, TrainingStepsMatchTheCpuTrainer) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  // ResNet-18 with its last stage 2x2 at batch 4 (every BatchNorm averages 16 values or more).
  expect_same_training("resnet18", Shape{4, 3, 64, 64}, 1e-3);
  // DenseNet-121 through 65 -> 33 -> 17 -> 8 -> 4 -> 2 (odd maps into the stem's pool and the
  // first transition's average pool), batch 4. Its whole-network gradients are ill-conditioned
  // here: two exact CPU algorithms (gemm, direct) already part by up to 3.8% of the largest
  // value, so they are held to 10% (layer by layer, the 1e-4 holds).
  expect_same_training("densenet121", Shape{4, 3, 65, 65}, 0.1);
  // Dropout (VGG-16's classifier, MobileNetV2's) and ReLU6 (MobileNetV2): layer by layer and the
  // updates (the GPU's masks are its own draws, so no whole-network comparison).
  expect_same_training("vgg16", Shape{2, 3, 32, 32}, 1e-3);
  expect_same_training("mobilenet_v2", Shape{4, 3, 32, 32}, 1e-3);
}

// An epoch's short last batch on a trainer planned for input[0] images: steps of input[0], then
// short_n, then input[0] again, each against the CPU Trainer's on the same images and the GPU's
// weights of that step (copied over: one ReLU input of another sign in a step moves its
// gradients, and so the weights after it, by up to a few percent) where the model has no Dropout
// (expect_same_step; the CPU replans for the short batch), else checked finite; the short step
// also layer by layer (within 1e-4) on a CPU graph planned at its size, and its convolutions on
// plans of their own.
void expect_short_batch_training(const std::string& model, const Shape& input, int64_t short_n,
                                 double grad) {
  SCOPED_TRACE(model);
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.lr = 0.01;
  sgd.momentum = 0.9;
  const Shape short_shape{short_n, input[1], input[2], input[3]};
  Graph cpu_graph = built(model, 5), gpu_graph = built(model, 5), local = built(model, 5);
  plan_model(find_model(model), gpu_graph, input, gpu_host_ctx());
  plan_model(find_model(model), local, short_shape, training_ctx());
  CudaCnnTrainer gpu(gpu_graph, sgd,
                     {.conv_algorithm = "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1",
                      .deterministic = true});
  Trainer cpu(cpu_graph, make_optimizer(sgd), training_ctx());
  const Tensor x = test::random_tensor(input, 31);
  Tensor xs(short_shape);
  std::copy(x.data(), x.data() + xs.numel(), xs.data());
  std::vector<int32_t> labels(static_cast<std::size_t>(input[0]));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>((7 * i + 2) % 10);
  const bool dropout = has_dropout(gpu_graph);
  const auto step = [&](const Tensor& images, std::span<const int32_t> l) {
    gpu.download_params();
    const std::vector<Param> from = gpu_graph.params(), to = local.params(), c = cpu_graph.params();
    for (std::size_t i = 0; i < from.size(); ++i) {  // in place: the graphs keep their tensors
      const std::span<const float> w = span_of(*from[i].value);
      std::copy(w.begin(), w.end(), to[i].value->data());
      std::copy(w.begin(), w.end(), c[i].value->data());
    }
    if (!dropout) return expect_same_step(model, cpu, cpu_graph, gpu, images, l, grad);
    const BatchResult r = gpu.step(span_of(images), l);
    EXPECT_EQ(r.count, static_cast<int64_t>(l.size()));
    EXPECT_TRUE(std::isfinite(r.mean_loss()));
  };
  step(x, labels);
  EXPECT_EQ(gpu.short_batch(), 0);
  step(xs, std::span(labels).first(static_cast<std::size_t>(short_n)));
  EXPECT_EQ(gpu.short_batch(), short_n);
  const std::string table = layer_by_layer_mismatches(local, gpu, xs, 1e-4);
  EXPECT_EQ(table, "") << "the short batch layer by layer, differing by more than 1e-4:\n" << table;
  for (int n = 1; n < gpu_graph.size(); ++n) {  // the named algorithms serve both sizes
    EXPECT_EQ(gpu.short_batch_algorithms(n), gpu.algorithms(n)) << gpu_graph.name(n);
  }
  step(x, labels);  // the planned batch's plans again
  const std::vector<float> too_many(
      static_cast<std::size_t>(x.numel() / input[0] * (input[0] + 1)));
  EXPECT_THROW(gpu.step(too_many, std::vector<int32_t>(static_cast<std::size_t>(input[0] + 1), 0)),
               Error);
}

TEST(CudaCnnTrainer, AShortLastBatchTrainsAsTheCpuTrainerDoes) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  // BatchNorm over 3 x 2 x 2 values in ResNet-18's last stage; Add, the adaptive pool, Linear.
  expect_short_batch_training("resnet18", Shape{4, 3, 64, 64}, 3, 1e-3);
  // One image: Linear at m = 1, Dropout's mask for one image, max pools.
  expect_short_batch_training("vgg16", Shape{2, 3, 32, 32}, 1, 1e-3);
  // Concat at a short batch (its parts per image from the inputs' sizes at that batch; the
  // whole-network gradients held to 10% as in TrainingStepsMatchTheCpuTrainer).
  expect_short_batch_training("densenet121", Shape{4, 3, 65, 65}, 3, 0.1);
}

// ResNet-18 at 32x32 ends on 1x1 maps: a short batch of one image would leave its last
// BatchNorms one value per channel, which the CPU refuses at planning (as PyTorch does); the GPU
// refuses the step, naming the layer, before anything runs, and trains on after it.
TEST(CudaCnnTrainer, AShortBatchWithOneValuePerChannelIsRefused) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  Graph g = built("resnet18", 5);
  plan_model(find_model("resnet18"), g, Shape{2, 3, 32, 32}, gpu_host_ctx());
  OptimizerOptions sgd;
  sgd.name = "sgd";
  CudaCnnTrainer gpu(g, sgd, {});
  const Tensor x = test::random_tensor(Shape{2, 3, 32, 32}, 3);
  const std::vector<int32_t> labels = {1, 2};
  try {
    gpu.step(std::span(x.data(), static_cast<std::size_t>(x.numel() / 2)),
             std::span(labels).first(1));
    FAIL() << "a step of one image trained";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 1 value per channel"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("layer4"), std::string::npos) << e.what();
  }
  EXPECT_EQ(gpu.short_batch(), 0);
  const BatchResult r = gpu.step(span_of(x), labels);
  EXPECT_EQ(r.count, 2);
  EXPECT_TRUE(std::isfinite(r.mean_loss()));
}

// Evaluation (BatchNorm on running statistics, a short batch) against the CPU Trainer on the GPU's
// weights after two steps, and the optimizer state carried to a second trainer (as a resumed run
// does through a checkpoint): its next step the first trainer's.
TEST(CudaCnnTrainer, EvaluationAndOptimizerStateMatchTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  const Shape input{4, 3, 32, 32};
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  const std::string gemm = "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1";
  Graph g = built("resnet18", 5);
  plan_model(find_model("resnet18"), g, input, gpu_host_ctx());
  CudaCnnTrainer gpu(g, sgd,
                     {.conv_algorithm = gemm, .label_smoothing = 0.1f, .deterministic = true});
  const Tensor x = test::random_tensor(input, 21);
  const std::vector<int32_t> labels = {3, 1, 4, 1};
  for (int i = 0; i < 2; ++i) (void)gpu.step(span_of(x), labels);
  const std::span<const float> three = span_of(x).first(3 * 3 * 32 * 32);
  const BatchResult got = gpu.evaluate(three, std::span(labels).first(3));
  gpu.download_params();
  const Checkpoint weights = capture_weights(g, {{"model", "resnet18"}});
  Graph local = built("resnet18", 6);
  restore_weights(weights, local, "resnet18", "the GPU's weights");
  Trainer cpu(local, make_optimizer(sgd), training_ctx(), 0.1f);
  Tensor x3({3, 3, 32, 32});
  std::copy(three.begin(), three.end(), x3.data());
  const BatchResult want = cpu.evaluate(x3, std::span(labels).first(3));
  EXPECT_EQ(got.count, 3);
  EXPECT_NEAR(got.loss_sum, want.loss_sum, 1e-4 * want.loss_sum);
  EXPECT_EQ(got.correct, want.correct);

  const std::vector<std::pair<std::string, Tensor>> state = gpu.optimizer_state();
  ASSERT_EQ(state.size(), g.params().size());
  EXPECT_EQ(state[0].first, "momentum_buffer.0");
  std::vector<std::pair<std::string, const Tensor*>> view;
  for (const auto& [name, t] : state) view.emplace_back(name, &t);
  Graph g2 = built("resnet18", 7);
  plan_model(find_model("resnet18"), g2, input, training_ctx());
  restore_weights(weights, g2, "resnet18", "the GPU's weights");
  CudaCnnTrainer resumed(g2, sgd,
                         {.conv_algorithm = gemm, .label_smoothing = 0.1f, .deterministic = true});
  resumed.load_optimizer_state(view, gpu.steps());
  EXPECT_EQ(resumed.steps(), 2);
  const double a = gpu.step(span_of(x), labels).mean_loss();
  const double b = resumed.step(span_of(x), labels).mean_loss();
  EXPECT_NEAR(b, a, 1e-6 * a);
  gpu.download_params();
  resumed.download_params();
  const std::vector<Param> pa = g.params(), pb = g2.params();
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_LE(relative_diff(span_of(*pb[i].value), span_of(*pa[i].value)), 1e-6) << pa[i].name;
  }
  Tensor wrong({3});
  EXPECT_THROW(resumed.load_optimizer_state({{"momentum_buffer.0", &wrong}}, 1), Error);
  EXPECT_THROW(resumed.load_optimizer_state({{"exp_avg.999", &wrong}}, 1), Error);
  // As the CPU optimizer: a state covers every parameter or none, and is this optimizer's.
  EXPECT_THROW(resumed.load_optimizer_state({view.front()}, 1), Error);
  EXPECT_THROW(resumed.load_optimizer_state({{"exp_avg.0", view.front().second}}, 1), Error);
  resumed.load_optimizer_state({}, 0);  // none: made afresh at the next step
  EXPECT_TRUE(resumed.optimizer_state().empty());
  (void)resumed.step(span_of(x), labels);
  EXPECT_EQ(resumed.optimizer_state().size(), g.params().size());
}

// --deterministic keeps cuDNN's non-deterministic backward algorithms out, whatever guess ranks
// first.
TEST(CudaCnnTrainer, DeterministicTrainingUsesOnlyDeterministicAlgorithms) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  OptimizerOptions sgd;
  sgd.name = "sgd";
  Graph g = built("resnet18", 1);
  plan_model(find_model("resnet18"), g, Shape{8, 3, 64, 64}, training_ctx());
  CudaCnnTrainer t(g, sgd, {.deterministic = true});
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
  EXPECT_THROW(CudaCnnTrainer(g, sgd, {.conv_algorithm = "find", .deterministic = true}),
               UsageError);
}

// ResNet-18 at 4 x 3 x 64 x 64 for one GPU step checked layer by layer: the graph the GPU trainer
// reads, a CPU training graph with the same weights, plain SGD, the input and its labels.
struct OneStepCase {
  OptimizerOptions sgd;
  Shape input{4, 3, 64, 64};
  Graph gpu_graph = built("resnet18", 5), local = built("resnet18", 5);
  Tensor x = test::random_tensor(input, 17);
  std::vector<int32_t> labels;
  OneStepCase() {
    sgd.name = "sgd";
    sgd.lr = 0.01;
    plan_model(find_model("resnet18"), gpu_graph, input, gpu_host_ctx());
    plan_model(find_model("resnet18"), local, input, training_ctx());
    for (int64_t i = 0; i < input[0]; ++i) labels.push_back(static_cast<int32_t>((5 * i + 3) % 10));
  }
};

// find with cuDNN's graph-API engines among the candidates of all three passes: a step trains
// every layer as the CPU layer does (within 1e-3: an engine may be FFT- or Winograd-based, whose
// error measured 10x the GEMM's), and algorithms() names what each pass runs.
TEST(CudaCnnTrainer, FindWithEnginesTrainsEveryLayerAsTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  OneStepCase c;
  Graph& gpu_graph = c.gpu_graph;
  CudaCnnTrainer gpu(gpu_graph, c.sgd, {.conv_algorithm = "find", .find_engines = true});
  EXPECT_TRUE(std::isfinite(gpu.step(span_of(c.x), c.labels).mean_loss()));
  const std::string table = layer_by_layer_mismatches(c.local, gpu, c.x, 1e-3);
  EXPECT_EQ(table, "") << "layer by layer, differing by more than 1e-3:\n" << table;
  int convs = 0;
  for (int n = 1; n < gpu_graph.size(); ++n) {
    const std::string a = gpu.algorithms(n);
    if (a.empty()) continue;
    ++convs;
    EXPECT_NE(a.find("fwd="), std::string::npos) << gpu_graph.name(n) << ": " << a;
    EXPECT_EQ(a.find("find"), std::string::npos) << gpu_graph.name(n) << ": " << a;
  }
  EXPECT_EQ(convs, 20);
}

// --batchnorm cudnn: a step with cuDNN's BatchNorm (float statistics) trains every layer as the
// CPU layer does (float64 statistics) within 1e-4, the same bound as the own kernels' step, and
// the running statistics it leaves are the CPU layers' after the same one update (cuDNN's running
// variance unbiased, as torch.nn.BatchNorm2d's).
TEST(CudaCnnTrainer, CudnnBatchNormTrainsEveryLayerAsTheCpu) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  OneStepCase c;
  Graph &gpu_graph = c.gpu_graph, &local = c.local;
  CudaCnnTrainer gpu(gpu_graph, c.sgd,
                     {.conv_algorithm = "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1",
                      .deterministic = true,
                      .batchnorm = "cudnn"});
  EXPECT_EQ(gpu.batchnorm(), "cudnn");
  EXPECT_TRUE(std::isfinite(gpu.step(span_of(c.x), c.labels).mean_loss()));
  const std::string table = layer_by_layer_mismatches(local, gpu, c.x, 1e-4);
  EXPECT_EQ(table, "") << "layer by layer, differing by more than 1e-4:\n" << table;
  gpu.download_params();
  int bns = 0;
  for (int n = 1; n < gpu_graph.size(); ++n) {
    auto* g = dynamic_cast<BatchNorm2d*>(&gpu_graph.layer(n));
    if (g == nullptr) continue;
    ++bns;
    auto& cpu = dynamic_cast<BatchNorm2d&>(local.layer(n));
    EXPECT_LE(relative_diff(span_of(g->running_mean()), span_of(cpu.running_mean())), 1e-4)
        << gpu_graph.name(n);
    EXPECT_LE(relative_diff(span_of(g->running_var()), span_of(cpu.running_var())), 1e-4)
        << gpu_graph.name(n);
  }
  EXPECT_EQ(bns, 20);
}

// --launch graph: the steps of the planned batch launched as one captured CUDA graph give the
// eager steps' results. Two trainers from the same weights and the same deterministic algorithms;
// the rate changed at every step (the captured update reads it from device memory); Dropout's masks
// drawn per step through the device counter; an epoch's short batch (eager) between full ones; then
// two evaluations. The loss within 1e-12 of the eager one (its float64 sum adds rows atomically, in
// any order); the masks, the last output, the evaluations' results and every parameter equal bit
// for bit (the same kernels on the same inputs).
void expect_graph_steps_equal_eager(const std::string& model, const Shape& input, int64_t short_n,
                                    const OptimizerOptions& opt) {
  SCOPED_TRACE(model);
  Graph eager_graph = built(model, 9), graph_graph = built(model, 9);
  plan_model(find_model(model), eager_graph, input, gpu_host_ctx());
  plan_model(find_model(model), graph_graph, input, gpu_host_ctx());
  CudaTrainOptions o{.conv_algorithm = "fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1",
                     .deterministic = true};
  CudaCnnTrainer eager(eager_graph, opt, o);
  o.launch = "graph";
  CudaCnnTrainer graphed(graph_graph, opt, o);
  const Tensor x = test::random_tensor(input, 41);
  const int64_t per_image = x.numel() / input[0];
  std::vector<int32_t> labels(static_cast<std::size_t>(input[0]));
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>((3 * i + 1) % 10);
  const std::vector<int64_t> sizes = {input[0], input[0], input[0], short_n, input[0], input[0]};
  std::vector<std::pair<std::string, Tensor>> after_three;  // the optimizer's state then
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const float lr = 0.01f * static_cast<float>(i + 1);
    eager.set_lr(lr);
    graphed.set_lr(lr);
    const std::span<const float> xi =
        span_of(x).first(static_cast<std::size_t>(sizes[i] * per_image));
    const std::span<const int32_t> li = std::span(labels).first(static_cast<std::size_t>(sizes[i]));
    const BatchResult a = eager.step(xi, li), b = graphed.step(xi, li);
    EXPECT_NEAR(b.loss_sum, a.loss_sum, 1e-12 * std::fabs(a.loss_sum)) << "step " << i;
    EXPECT_EQ(b.correct, a.correct) << "step " << i;
    EXPECT_EQ(b.count, sizes[i]);
    if (i == 2) after_three = eager.optimizer_state();
  }
  EXPECT_EQ(eager.launch(), "eager");
  EXPECT_EQ(eager.graph_launches(), 0);
  EXPECT_EQ(graphed.launch(), "graph");
  EXPECT_EQ(graphed.graph_launches(), 4);  // the full steps after the first
  EXPECT_EQ(graphed.steps(), static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(graphed.step_captures(), 1);
  // The update is part of the captured step: a loaded optimizer state (the one after step 3, not
  // the current one: new buffers, a new update table) has the step captured again, and the steps
  // stay equal.
  std::vector<std::pair<std::string, const Tensor*>> view;
  for (const auto& [name, t] : after_three) view.emplace_back(name, &t);
  ASSERT_FALSE(view.empty());
  eager.load_optimizer_state(view, 3);
  graphed.load_optimizer_state(view, 3);
  for (int i = 0; i < 2; ++i) {
    const BatchResult a = eager.step(span_of(x), labels), b = graphed.step(span_of(x), labels);
    EXPECT_NEAR(b.loss_sum, a.loss_sum, 1e-12 * std::fabs(a.loss_sum)) << "resumed step " << i;
  }
  EXPECT_EQ(graphed.graph_launches(), 6);
  EXPECT_EQ(graphed.step_captures(), 2);
  for (int n = 1; n < graph_graph.size(); ++n) {
    if (graph_graph.layer(n).kind() == "Dropout") {
      EXPECT_EQ(graphed.dropout_mask(n), eager.dropout_mask(n)) << graph_graph.name(n);
    }
  }
  EXPECT_EQ(graphed.node_output(graph_graph.size() - 1), eager.node_output(graph_graph.size() - 1));
  // Evaluation's forward pass as its own graph (captured at the first, launched at both), of a
  // short batch and a full one: the eager trainer's logits, so the same loss and count.
  for (const int64_t n : {short_n, input[0]}) {
    const std::span<const float> xi = span_of(x).first(static_cast<std::size_t>(n * per_image));
    const std::span<const int32_t> li = std::span(labels).first(static_cast<std::size_t>(n));
    const BatchResult a = eager.evaluate(xi, li), b = graphed.evaluate(xi, li);
    EXPECT_EQ(b.loss_sum, a.loss_sum) << n;
    EXPECT_EQ(b.correct, a.correct) << n;
  }
  EXPECT_EQ(eager.evaluation_launches(), 0);
  EXPECT_EQ(graphed.evaluation_launches(), 2);
  eager.download_params();
  graphed.download_params();
  const std::vector<Param> pa = eager_graph.params(), pb = graph_graph.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(relative_diff(span_of(*pb[i].value), span_of(*pa[i].value)), 0.0) << pa[i].name;
  }
}

TEST(CudaCnnTrainer, GraphLaunchedStepsEqualEagerSteps) {
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  OptimizerOptions adam;
  adam.name = "adam";
  adam.weight_decay = 1e-4;
  // BatchNorm (batch statistics, running statistics), Add, pools, Linear; Adam's coefficients.
  expect_graph_steps_equal_eager("resnet18", Shape{4, 3, 32, 32}, 3, adam);
  OptimizerOptions sgd;
  sgd.name = "sgd";
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  sgd.weight_decay = 5e-4;
  // Dropout's masks per step (VGG-16), ReLU6 and grouped convolutions (MobileNetV2), Concat
  // (DenseNet-121, odd maps as in TrainingStepsMatchTheCpuTrainer); SGD with Nesterov momentum.
  expect_graph_steps_equal_eager("vgg16", Shape{2, 3, 32, 32}, 1, sgd);
  expect_graph_steps_equal_eager("mobilenet_v2", Shape{4, 3, 32, 32}, 3, sgd);
  expect_graph_steps_equal_eager("densenet121", Shape{4, 3, 65, 65}, 3, sgd);
}

// A ResNet-18 trainer with options `o` is refused with `message` before anything is allocated
// (so on every machine).
void expect_refused_before_anything(const CudaTrainOptions& o, const std::string& message) {
  Graph g = built("resnet18", 5);
  plan_model(find_model("resnet18"), g, Shape{2, 3, 32, 32}, gpu_host_ctx());
  OptimizerOptions sgd;
  sgd.name = "sgd";
  try {
    CudaCnnTrainer t(g, sgd, o);
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(CudaCnnTrainer, LaunchIsCheckedBeforeAnything) {
  EXPECT_TRUE(parse_cuda_launch("graph"));
  EXPECT_FALSE(parse_cuda_launch("eager"));
  expect_refused_before_anything({.launch = "graphs"},
                                 "--launch graphs: expected graph (each full-batch step's "
                                 "forward, loss, backward and update as one CUDA graph) or "
                                 "eager");
}

TEST(CudaCnnTrainer, BatchNormAlgorithmIsCheckedBeforeAnything) {
  expect_refused_before_anything(
      {.batchnorm = "fused"}, "--batchnorm fused: unknown BatchNorm algorithm; one of own, cudnn");
}

TEST(CudaCnnTrainer, EnginesNeedAPassThatUsesFind) {
  EXPECT_TRUE(parse_cuda_conv_choice("find", true).find_engines);
  EXPECT_TRUE(parse_cuda_conv_choice("fwd=guess,bwd_weights=find", true).find_engines);
  EXPECT_FALSE(parse_cuda_conv_choice("find").find_engines);
  for (const char* none : {"guess", "implicit_gemm", "fwd=guess,bwd_data=algo_1"}) {
    try {
      (void)parse_cuda_conv_choice(none, true);
      ADD_FAILURE() << none << " accepted with engines";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("--engines: adds cuDNN's graph-API engines to find's candidates; "
                            "--algorithm {} uses find for no pass",
                            none));
    }
  }
}

}  // namespace
}  // namespace nnperf
