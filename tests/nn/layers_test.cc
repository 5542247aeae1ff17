// Activation, Flatten and Add layers: output shapes, values against plain loops, gradients,
// skipped gradients (null d_src), FLOPs, and shape errors that name the layer.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace nnperf
