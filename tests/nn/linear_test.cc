// Linear layer, for every CPU GEMM algorithm in the registry: forward against a float64
// reference, dW/db/dX against central finite differences of the float64 loss sum(r * Y),
// workspace sizing, initialisation statistics, shape errors.
#include "nnperf/nn/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

struct Dims {
  int64_t mb, in, out;
};

// Y = X W + b in double.
std::vector<double> linear_ref(const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, const Dims& d) {
  std::vector<double> y(static_cast<size_t>(d.mb * d.out));
  for (int64_t i = 0; i < d.mb; ++i) {
    for (int64_t j = 0; j < d.out; ++j) {
      double acc = b.empty() ? 0.0 : b[j];
      for (int64_t k = 0; k < d.in; ++k) acc += x[i * d.in + k] * w[k * d.out + j];
      y[i * d.out + j] = acc;
    }
  }
  return y;
}

std::vector<double> to_double(const float* p, int64_t n) { return {p, p + n}; }

std::vector<const GemmAlgorithm*> cpu_gemms() {
  std::vector<const GemmAlgorithm*> out;
  for (const GemmAlgorithm& a : gemm_algorithms()) {
    if (a.device == Device::kCpu) out.push_back(&a);
  }
  return out;
}

class LinearPerGemm : public ::testing::TestWithParam<const GemmAlgorithm*> {};

TEST_P(LinearPerGemm, ForwardAndBackwardMatchFloat64) {
  const GemmAlgorithm& algo = *GetParam();
  for (const Dims& d : {Dims{3, 5, 4}, Dims{1, 1, 1}, Dims{7, 33, 17}}) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE(::testing::Message() << algo.name << " mb" << d.mb << " in" << d.in << " out"
                                        << d.out << (bias ? "" : " no bias"));
      Linear layer(d.in, d.out, bias);
      Rng rng(17);
      layer.init(rng);
      PlanContext ctx{&algo, 2, true};
      const Shape in_shape{d.mb, d.in};
      ASSERT_EQ(layer.plan(std::span<const Shape>(&in_shape, 1), ctx), (Shape{d.mb, d.out}));

      Tensor x = test::random_tensor(in_shape, 5 + d.in);
      Tensor y({d.mb, d.out});
      const Tensor* src[] = {&x};
      layer.forward(src, y);

      const auto xd = to_double(x.data(), x.numel());
      auto wd = to_double(layer.weight().data(), layer.weight().numel());
      auto bd = bias ? to_double(layer.bias().data(), d.out) : std::vector<double>{};
      const auto yref = linear_ref(xd, wd, bd, d);
      for (int64_t i = 0; i < d.mb; ++i) {
        for (int64_t j = 0; j < d.out; ++j) {
          // |err| <= c * K * eps * sum_k |x_ik w_kj| + eps * (|ref| + |b_j|) (bias add rounding)
          double abs_sum = 0;
          for (int64_t k = 0; k < d.in; ++k)
            abs_sum += std::fabs(xd[i * d.in + k] * wd[k * d.out + j]);
          const double ref = yref[i * d.out + j];
          const double bound = algo.tolerance_factor * d.in * test::kEps * abs_sum +
                               test::kEps * (std::fabs(ref) + (bias ? std::fabs(bd[j]) : 0.0));
          ASSERT_NEAR(y[i * d.out + j], ref, bound) << "Y[" << i << ", " << j << "]";
        }
      }

      // Loss L = sum(r * Y): dL/dY = r.
      Tensor r = test::random_tensor({d.mb, d.out}, 9 + d.out);
      Tensor dx({d.mb, d.in});
      dx.fill(1e30f);  // must be overwritten
      Tensor* d_src[] = {&dx};
      layer.backward(src, y, r, d_src);

      const auto rd = to_double(r.data(), r.numel());
      auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv,
                      const std::vector<double>& bv) {
        const auto yv = linear_ref(xv, wv, bv, d);
        double l = 0;
        for (size_t i = 0; i < yv.size(); ++i) l += rd[i] * yv[i];
        return l;
      };
      const double h = 1e-3;  // the loss is linear in each entry: no truncation error
      // Gradients are sums of K = mb (dW), mb (db) or out (dX) products of magnitude <= 1.
      auto check = [&](std::vector<double>& v, const float* grad, int64_t k_len, const char* what) {
        for (size_t i = 0; i < v.size(); ++i) {
          const double saved = v[i];
          v[i] = saved + h;
          const double up = loss(xd, wd, bd);
          v[i] = saved - h;
          const double down = loss(xd, wd, bd);
          v[i] = saved;
          const double fd = (up - down) / (2 * h);
          const double bound = 4 * algo.tolerance_factor * k_len * test::kEps * k_len + 1e-9;
          ASSERT_NEAR(grad[i], fd, bound) << what << "[" << i << "]";
        }
      };
      for (size_t i = 0; i < xd.size(); ++i) {  // dX
        auto xp = xd, xm = xd;
        xp[i] += h;
        xm[i] -= h;
        const double fd = (loss(xp, wd, bd) - loss(xm, wd, bd)) / (2 * h);
        ASSERT_NEAR(dx[i], fd, 4 * algo.tolerance_factor * d.out * test::kEps * d.out + 1e-9)
            << "dX[" << i << "]";
      }
      check(wd, layer.weight_grad().data(), d.mb, "dW");
      if (bias) check(bd, layer.bias_grad().data(), d.mb, "db");

      // With no gradient wanted for the input, dX is skipped (and the rest still computed).
      Tensor* no_dx[] = {nullptr};
      layer.backward(src, y, r, no_dx);
      check(wd, layer.weight_grad().data(), d.mb, "dW (no dX)");
    }
  }
}

TEST_P(LinearPerGemm, WorkspaceCoversAllThreeGemms) {
  const GemmAlgorithm& algo = *GetParam();
  const Dims d{64, 784, 512};
  Linear layer(d.in, d.out);
  const Shape in_shape{d.mb, d.in};
  layer.plan(std::span<const Shape>(&in_shape, 1), PlanContext{&algo, 2, true});
  EXPECT_EQ(layer.gemm(), &algo);
  for (const GemmShape& s :
       {GemmShape{false, false, d.mb, d.out, d.in}, GemmShape{true, false, d.in, d.out, d.mb},
        GemmShape{false, true, d.mb, d.in, d.out}}) {
    EXPECT_GE(layer.workspace_bytes(), algo.workspace_bytes(s, 2)) << s.str();
  }
}

INSTANTIATE_TEST_SUITE_P(Gemm, LinearPerGemm, ::testing::ValuesIn(cpu_gemms()),
                         [](const auto& p) { return std::string(p.param->name); });

TEST(Linear, DefaultGemmIsBlas) {
  Linear layer(4, 3);
  const Shape in_shape{2, 4};
  layer.plan(std::span<const Shape>(&in_shape, 1), PlanContext{});
  ASSERT_NE(layer.gemm(), nullptr);
  EXPECT_STREQ(layer.gemm()->name, "blas");
}

TEST(Linear, ShapeErrorNamesLayerExpectedAndGot) {
  Linear layer(784, 512);
  const Shape bad{64, 1, 28, 28};
  try {
    layer.plan(std::span<const Shape>(&bad, 1), PlanContext{});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Linear(784->512)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[mb, 784]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[64, 1, 28, 28]"), std::string::npos) << msg;
  }
  EXPECT_THROW(Linear(0, 3), Error);
}

TEST(Linear, FlopsAndParams) {
  Linear layer(784, 512);
  const Shape in_shape{64, 784};
  layer.plan(std::span<const Shape>(&in_shape, 1), PlanContext{});
  EXPECT_DOUBLE_EQ(layer.forward_flops(), 2.0 * 64 * 784 * 512 + 64 * 512);
  const auto p = layer.params();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, "weight");
  EXPECT_EQ(p[0].value->shape(), (Shape{784, 512}));
  EXPECT_EQ(p[1].name, "bias");
  EXPECT_EQ(p[1].grad->shape(), (Shape{512}));
  EXPECT_EQ(Linear(10, 3, false).params().size(), 1u);
}

TEST(Linear, TorchDefaultInitIsUniformWithinOneOverSqrtFanIn) {
  Linear layer(400, 300);
  Rng rng(3);
  layer.init(rng);
  const double bound = 1.0 / std::sqrt(400.0);
  double sum = 0, sq = 0;
  const Tensor& w = layer.weight();
  for (int64_t i = 0; i < w.numel(); ++i) {
    ASSERT_LE(std::fabs(w[i]), bound);
    sum += w[i];
    sq += static_cast<double>(w[i]) * w[i];
  }
  const double n = static_cast<double>(w.numel());
  EXPECT_NEAR(sum / n, 0.0, 0.01 * bound);
  EXPECT_NEAR(sq / n, bound * bound / 3.0, 0.02 * bound * bound);  // var of U(-a, a) = a^2/3
  for (int64_t i = 0; i < 300; ++i) ASSERT_LE(std::fabs(layer.bias()[i]), bound);
  EXPECT_GT(std::fabs(layer.bias()[0]) + std::fabs(layer.bias()[1]), 0.0);
}

TEST(Linear, HeNormalInit) {
  Linear layer(500, 400, true, LinearInit::kHeNormal);
  Rng rng(4);
  layer.init(rng);
  double sum = 0, sq = 0;
  const Tensor& w = layer.weight();
  for (int64_t i = 0; i < w.numel(); ++i) {
    sum += w[i];
    sq += static_cast<double>(w[i]) * w[i];
  }
  const double n = static_cast<double>(w.numel());
  EXPECT_NEAR(sum / n, 0.0, 0.003);
  EXPECT_NEAR(std::sqrt(sq / n), std::sqrt(2.0 / 500), 0.01 * std::sqrt(2.0 / 500));
  for (int64_t i = 0; i < 400; ++i) ASSERT_EQ(layer.bias()[i], 0.0f);
}

TEST(Linear, InitIsDeterministic) {
  Linear a(20, 10), b(20, 10);
  Rng ra(99), rb(99);
  a.init(ra);
  b.init(rb);
  for (int64_t i = 0; i < a.weight().numel(); ++i) ASSERT_EQ(a.weight()[i], b.weight()[i]);
}

}  // namespace
}  // namespace nnperf
