// Activation, Flatten and Add layers: output shapes, values against plain loops, gradients,
// skipped gradients (null d_src), FLOPs, and shape errors that name the layer.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/flatten.h"
#include "test_util.h"

namespace nnperf {
namespace {

TEST(ActivationLayer, AppliesTheTableRowToAnyShape) {
  for (const ActivationKernel& k : activation_kernels()) {
    Activation layer(k);
    const Shape s{2, 3, 5, 7};
    ASSERT_EQ(layer.plan(std::span<const Shape>(&s, 1), PlanContext{}), s);
    EXPECT_TRUE(layer.is_activation());
    EXPECT_EQ(layer.describe(), k.name);
    EXPECT_DOUBLE_EQ(layer.forward_flops(), s.numel() * k.flops_per_element);
    Tensor x = test::random_tensor(s, 1, -4.0f, 4.0f), y(s);
    const Tensor* src[] = {&x};
    layer.forward(src, y);
    Tensor dy = test::random_tensor(s, 2), dx(s);
    Tensor* d_src[] = {&dx};
    layer.backward(src, y, dy, d_src);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double ref = k.reference(x[i]);
      ASSERT_NEAR(y[i], ref, k.abs_tol + k.rel_tol * std::fabs(ref)) << k.name;
      const double dref = k.reference_derivative(x[i]) * dy[i];
      ASSERT_NEAR(dx[i], dref, k.grad_abs_tol * std::fabs(dy[i]) + k.grad_rel_tol * std::fabs(dref))
          << k.name;
    }
    Tensor* none[] = {nullptr};
    layer.backward(src, y, dy, none);  // nothing to do, must not crash
  }
}

TEST(FlattenLayer, CopiesAndReshapes) {
  Flatten layer;
  const Shape s{3, 2, 4, 5};
  ASSERT_EQ(layer.plan(std::span<const Shape>(&s, 1), PlanContext{}), (Shape{3, 40}));
  Tensor x = test::random_tensor(s, 3), y({3, 40});
  const Tensor* src[] = {&x};
  layer.forward(src, y);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(y[i], x[i]);
  Tensor dy = test::random_tensor({3, 40}, 4), dx(s);
  Tensor* d_src[] = {&dx};
  layer.backward(src, y, dy, d_src);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(dx[i], dy[i]);
  const Shape flat{6, 9};
  EXPECT_EQ(layer.plan(std::span<const Shape>(&flat, 1), PlanContext{}), flat);
  const Shape vec{9};
  try {
    layer.plan(std::span<const Shape>(&vec, 1), PlanContext{});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Flatten"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[9]"), std::string::npos) << e.what();
  }
}

TEST(AddLayer, SumsInputsAndCopiesTheGradient) {
  Add layer;
  const Shape s{4, 7};
  const Shape shapes[] = {s, s, s};
  ASSERT_EQ(layer.plan(shapes, PlanContext{}), s);
  EXPECT_DOUBLE_EQ(layer.forward_flops(), 2.0 * 28);
  Tensor a = test::random_tensor(s, 5), b = test::random_tensor(s, 6),
         c = test::random_tensor(s, 7);
  Tensor y(s);
  const Tensor* src[] = {&a, &b, &c};
  layer.forward(src, y);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_FLOAT_EQ(y[i], a[i] + b[i] + c[i]);
  Tensor dy = test::random_tensor(s, 8), da(s), dc(s);
  Tensor* d_src[] = {&da, nullptr, &dc};
  layer.backward(src, y, dy, d_src);
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_EQ(da[i], dy[i]);
    ASSERT_EQ(dc[i], dy[i]);
  }
}

TEST(AddLayer, ShapeMismatchNamesBothShapes) {
  Add layer;
  const Shape shapes[] = {Shape{4, 7}, Shape{4, 8}};
  try {
    layer.plan(shapes, PlanContext{});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 7]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 8]"), std::string::npos) << msg;
  }
  const Shape one[] = {Shape{4, 7}};
  EXPECT_THROW(layer.plan(one, PlanContext{}), Error);
}

// On long tensors both layers split their element-wise loops between the plan's threads: every
// activation's forward and backward and Add's sum and gradient copies give the same floats on 1,
// 2 and 3 threads (100003 elements: slices of 64, the SIMD tail at the end).
TEST(ActivationLayer, ThreadsGiveTheSameFloatsAsAddDoes) {
  const Shape s{100003};
  const Tensor x = test::random_tensor(s, 3, -4.0f, 4.0f), dy = test::random_tensor(s, 4);
  const Tensor x2 = test::random_tensor(s, 5), x3 = test::random_tensor(s, 6);
  auto same = [](const Tensor& a, const Tensor& b) {
    return std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * 4) == 0;
  };
  for (const ActivationKernel& k : activation_kernels()) {
    Tensor y1(s), dx1(s);
    for (int threads : {1, 2, 3}) {
      Activation layer(k);
      PlanContext ctx;
      ctx.threads = threads;
      (void)layer.plan(std::span<const Shape>(&s, 1), ctx);
      Tensor y(s), dx(s);
      const Tensor* src[] = {&x};
      layer.forward(src, y);
      Tensor* d_src[] = {&dx};
      layer.backward(src, y, dy, d_src);
      if (threads == 1) {
        y1 = y;
        dx1 = dx;
      } else {
        EXPECT_TRUE(same(y, y1)) << k.name << " forward, " << threads << " threads";
        EXPECT_TRUE(same(dx, dx1)) << k.name << " backward, " << threads << " threads";
      }
    }
  }
  Tensor sum1(s);
  for (int threads : {1, 3}) {
    Add layer;
    PlanContext ctx;
    ctx.threads = threads;
    const Shape shapes[] = {s, s, s};
    (void)layer.plan(shapes, ctx);
    const Tensor* src[] = {&x, &x2, &x3};
    Tensor y(s), d0(s), d2(s);
    layer.forward(src, y);
    Tensor* d_src[] = {&d0, nullptr, &d2};
    layer.backward(src, y, dy, d_src);
    EXPECT_TRUE(same(d0, dy) && same(d2, dy)) << threads << " threads";
    if (threads == 1) {
      sum1 = y;
      for (int64_t i = 0; i < s.numel(); ++i) ASSERT_EQ(y[i], (x[i] + x2[i]) + x3[i]) << i;
    } else {
      EXPECT_TRUE(same(y, sum1)) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace nnperf
