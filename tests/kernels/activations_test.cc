// Activation table: every row's forward and backward, on every SIMD path this CPU runs, against
// the float64 reference within the row's stated tolerance; the references' derivatives against
// central finite differences; agreement between paths; edge values; lookup by name.
#include "nnperf/kernels/activations.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/activations_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

using detail::ActivationPath;

// Random points over [-12, 12] plus the special points the brief names. The odd count (1000 + 23)
// exercises the vector tails.
std::vector<float> test_points(uint64_t seed) {
  std::vector<float> x = test::random_vector(1000, seed, -12.0f, 12.0f);
  const float specials[] = {0.0f,   -0.0f, 1e-30f, -1e-30f, 1e-7f,  -1e-7f, 0.5f,   -0.5f,
                            1.0f,   -1.0f, -0.75f, 30.0f,   -30.0f, 88.0f,  -88.0f, 20.0f,
                            -20.0f, 20.5f, -87.5f, 1e4f,    -1e4f,  3e38f,  -3e38f};
  x.insert(x.end(), std::begin(specials), std::end(specials));
  return x;
}

std::vector<SimdLevel> runnable_levels() {
  std::vector<SimdLevel> levels;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (!detail::activation_paths(l).empty()) levels.push_back(l);
  }
  return levels;
}

void check_forward(const ActivationKernel& k, const char* path, const float* x, const float* y,
                   size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double ref = k.reference(x[i]);
    const double bound = k.abs_tol + k.rel_tol * std::fabs(ref);
    ASSERT_LE(std::fabs(y[i] - ref), bound) << k.name << " forward (" << path << ") at x = " << x[i]
                                            << ": got " << y[i] << ", float64 reference " << ref;
  }
}

void check_backward(const ActivationKernel& k, const char* path, const float* x, const float* dy,
                    const float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double ref = k.reference_derivative(x[i]) * dy[i];
    const double bound = k.grad_abs_tol * std::fabs(dy[i]) + k.grad_rel_tol * std::fabs(ref);
    ASSERT_LE(std::fabs(dx[i] - ref), bound)
        << k.name << " backward (" << path << ") at x = " << x[i] << ", d_dst = " << dy[i]
        << ": got " << dx[i] << ", float64 reference " << ref;
  }
}

TEST(Activations, TableHasTheSeedsOrderAndPyTorchNames) {
  const char* expected[] = {"ReLU", "GELU", "Sigmoid", "Tanh", "ELU", "LeakyReLU", "SiLU", "Mish"};
  auto table = activation_kernels();
  ASSERT_EQ(table.size(), std::size(expected));
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_STREQ(table[i].name, expected[i]);
    EXPECT_GT(table[i].flops_per_element, 0.0);
    EXPECT_NE(std::string(table[i].formula), "");
  }
  EXPECT_EQ(activation_names(), "ReLU, GELU, Sigmoid, Tanh, ELU, LeakyReLU, SiLU, Mish");
}

TEST(Activations, ReferencesMatchPyTorchAtKnownValues) {
  // Values from the closed forms (GELU(1) = Phi(1), Mish(1) = tanh(log(1 + e))).
  EXPECT_NEAR(find_activation("GELU").reference(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(find_activation("GELU").reference(-1.0), -0.15865525393145707, 1e-15);
  EXPECT_NEAR(find_activation("Mish").reference(1.0), 0.8650983882673103, 1e-15);
  EXPECT_NEAR(find_activation("ELU").reference(-1.0), std::exp(-1.0) - 1.0, 1e-15);
  EXPECT_DOUBLE_EQ(find_activation("LeakyReLU").reference(-2.0), -0.02);
  EXPECT_NEAR(find_activation("SiLU").reference(2.0), 2.0 / (1.0 + std::exp(-2.0)), 1e-15);
  // Mish past the softplus threshold: x * tanh(x).
  EXPECT_DOUBLE_EQ(find_activation("Mish").reference(25.0), 25.0 * std::tanh(25.0));
}

TEST(Activations, ReferenceDerivativesMatchFiniteDifferences) {
  const std::vector<float> xs = test::random_vector(200, 7, -12.0f, 12.0f);
  for (const ActivationKernel& k : activation_kernels()) {
    for (float xf : xs) {
      const double x = xf;
      if (std::fabs(x) < 1e-4) continue;  // ReLU/LeakyReLU/ELU kink at 0
      const double h = 1e-6;
      const double fd = (k.reference(x + h) - k.reference(x - h)) / (2 * h);
      EXPECT_NEAR(k.reference_derivative(x), fd, 1e-7 + 1e-7 * std::fabs(fd))
          << k.name << " at x = " << x;
    }
  }
}

TEST(Activations, EveryPathMatchesTheReference) {
  const std::vector<float> x = test_points(11);
  const std::vector<float> dy =
      test::random_vector(static_cast<int64_t>(x.size()), 12, -2.0f, 2.0f);
  const int64_t n = static_cast<int64_t>(x.size());
  for (SimdLevel level : runnable_levels()) {
    for (const ActivationKernel& k : activation_kernels()) {
      const ActivationPath* p = detail::find_activation_path(level, k.name);
      ASSERT_NE(p, nullptr) << k.name << " missing on " << to_string(level);
      std::vector<float> y(x.size()), dx(x.size());
      p->forward(x.data(), y.data(), n);
      check_forward(k, to_string(level), x.data(), y.data(), x.size());
      p->backward(x.data(), y.data(), dy.data(), dx.data(), n);
      check_backward(k, to_string(level), x.data(), dy.data(), dx.data(), x.size());
    }
  }
}

TEST(Activations, PublicTableDispatchesToAWorkingPath) {
  const std::vector<float> x = test_points(21);
  const std::vector<float> dy = test::random_vector(static_cast<int64_t>(x.size()), 22);
  for (const ActivationKernel& k : activation_kernels()) {
    std::vector<float> y(x.size()), dx(x.size());
    k.forward(x.data(), y.data(), static_cast<int64_t>(x.size()));
    check_forward(k, "table", x.data(), y.data(), x.size());
    k.backward(x.data(), y.data(), dy.data(), dx.data(), static_cast<int64_t>(x.size()));
    check_backward(k, "table", x.data(), dy.data(), dx.data(), x.size());
  }
}

TEST(Activations, BackwardMatchesFiniteDifferencesOfTheReference) {
  // The kernel's gradient against (f(x+h) - f(x-h)) / 2h of the float64 reference: catches a
  // backward and a reference_derivative that are wrong the same way.
  const std::vector<float> x = test::random_vector(301, 31, -8.0f, 8.0f);
  const std::vector<float> dy(x.size(), 1.0f);
  for (const ActivationKernel& k : activation_kernels()) {
    std::vector<float> y(x.size()), dx(x.size());
    k.forward(x.data(), y.data(), static_cast<int64_t>(x.size()));
    k.backward(x.data(), y.data(), dy.data(), dx.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double h = 1e-5;
      const double fd = (k.reference(x[i] + h) - k.reference(x[i] - h)) / (2 * h);
      EXPECT_NEAR(dx[i], fd, k.grad_abs_tol + k.grad_rel_tol * std::fabs(fd) + 1e-8)
          << k.name << " at x = " << x[i];
    }
  }
}

TEST(Activations, PathsAgree) {
  // The paths share one implementation of the math; they differ only by FMA contraction, so
  // they agree to within the sum of their tolerances (checked) and usually to 1-2 ulp.
  const auto levels = runnable_levels();
  if (levels.size() < 2) GTEST_SKIP() << "only one SIMD path runs on this CPU";
  const std::vector<float> x = test::random_vector(4099, 41, -12.0f, 12.0f);
  const std::vector<float> dy = test::random_vector(4099, 42);
  const int64_t n = static_cast<int64_t>(x.size());
  for (const ActivationKernel& k : activation_kernels()) {
    std::vector<float> y0(x.size()), y1(x.size()), d0(x.size()), d1(x.size());
    const ActivationPath* p0 = detail::find_activation_path(levels[0], k.name);
    const ActivationPath* p1 = detail::find_activation_path(levels[1], k.name);
    p0->forward(x.data(), y0.data(), n);
    p1->forward(x.data(), y1.data(), n);
    p0->backward(x.data(), y0.data(), dy.data(), d0.data(), n);
    p1->backward(x.data(), y0.data(), dy.data(), d1.data(), n);  // same dst for both
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(y0[i] - y1[i]), 2 * (k.abs_tol + k.rel_tol * std::fabs(y0[i])))
          << k.name << " forward at x = " << x[i];
      ASSERT_LE(std::fabs(d0[i] - d1[i]),
                2 * (k.grad_abs_tol * std::fabs(dy[i]) + k.grad_rel_tol * std::fabs(d0[i])))
          << k.name << " backward at x = " << x[i];
    }
  }
}

TEST(Activations, EverySizeAndInPlace) {
  // Tails of every length 0..17 (the AVX2 path masks the last < 8), and src == dst aliasing.
  for (SimdLevel level : runnable_levels()) {
    for (const ActivationKernel& k : activation_kernels()) {
      const ActivationPath* p = detail::find_activation_path(level, k.name);
      for (int64_t n = 0; n <= 17; ++n) {
        std::vector<float> x = test::random_vector(n + 1, 50 + n, -4.0f, 4.0f);
        const float guard = 12345.0f;
        x[n] = guard;  // must survive
        std::vector<float> y(x.size(), guard);
        p->forward(x.data(), y.data(), n);
        check_forward(k, to_string(level), x.data(), y.data(), static_cast<size_t>(n));
        EXPECT_EQ(y[n], guard) << k.name << " wrote past n = " << n;
        std::vector<float> inplace = x;
        p->forward(inplace.data(), inplace.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(inplace[i], y[i]) << k.name << " in place";
        // Backward in place on d_dst.
        std::vector<float> dy = test::random_vector(n + 1, 90 + n);
        std::vector<float> dx(x.size(), guard);
        p->backward(x.data(), y.data(), dy.data(), dx.data(), n);
        EXPECT_EQ(dx[n], guard) << k.name << " backward wrote past n = " << n;
        p->backward(x.data(), y.data(), dy.data(), dy.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_EQ(dy[i], dx[i]) << k.name << " backward in place";
      }
    }
  }
}

TEST(Activations, LargeInputsStayFiniteAndNaNPropagates) {
  const float big[] = {30.0f, -30.0f, 88.0f, -88.0f, 1e10f, -1e10f, 3e38f, -3e38f};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (SimdLevel level : runnable_levels()) {
    for (const ActivationKernel& k : activation_kernels()) {
      const ActivationPath* p = detail::find_activation_path(level, k.name);
      float y[8], dy[8], dx[8];
      std::fill_n(dy, 8, 1.0f);
      p->forward(big, y, 8);
      p->backward(big, y, dy, dx, 8);
      for (int i = 0; i < 8; ++i) {
        EXPECT_TRUE(std::isfinite(y[i])) << k.name << "(" << big[i] << ") = " << y[i];
        EXPECT_TRUE(std::isfinite(dx[i])) << k.name << "'(" << big[i] << ") = " << dx[i];
      }
      // A NaN input must come out NaN (training divergence must not be hidden).
      float xs[3] = {1.0f, nan, -1.0f}, ys[3];
      p->forward(xs, ys, 3);
      EXPECT_TRUE(std::isnan(ys[1])) << k.name << " (" << to_string(level) << ") hid a NaN";
      EXPECT_FALSE(std::isnan(ys[0]));
      EXPECT_FALSE(std::isnan(ys[2]));
    }
  }
}

TEST(Activations, FindIsCaseInsensitiveWithAliases) {
  EXPECT_STREQ(find_activation("relu").name, "ReLU");
  EXPECT_STREQ(find_activation("GELU").name, "GELU");
  EXPECT_STREQ(find_activation("leaky_relu").name, "LeakyReLU");
  EXPECT_STREQ(find_activation("leakyrelu").name, "LeakyReLU");
  EXPECT_STREQ(find_activation("LeakyReLU").name, "LeakyReLU");
  EXPECT_STREQ(find_activation("swish").name, "SiLU");
  EXPECT_STREQ(find_activation("Silu").name, "SiLU");
  EXPECT_STREQ(find_activation("MISH").name, "Mish");
}

TEST(Activations, UnknownNameListsTheValidOnes) {
  try {
    find_activation("softsign");
    FAIL() << "expected UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("softsign"), std::string::npos) << msg;
    for (const ActivationKernel& k : activation_kernels()) {
      EXPECT_NE(msg.find(k.name), std::string::npos) << msg;
    }
  }
}

}  // namespace
}  // namespace nnperf
