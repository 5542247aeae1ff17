// BatchNorm2d: inference with running statistics and training with batch statistics against
// float64 loops, the momentum update of the running statistics (unbiased variance), backward by
// central finite differences of the training-mode function (input, gamma, beta), the folding
// helper (inference_scale_shift), init, parameter listing (buffers excluded), shape errors and
// the training layout dispatch() names.
#include "nnperf/nn/batchnorm.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

struct Case {
  int64_t mb, c, h, w;
};
const Case kCases[] = {{2, 3, 4, 5}, {1, 4, 3, 3}, {3, 2, 1, 1}, {4, 5, 2, 7}};

PlanContext ctx_with(bool training, int threads = 1) {
  PlanContext c;
  c.training = training;
  c.threads = threads;
  return c;
}

void randomise(BatchNorm2d& bn, uint64_t seed) {
  Rng rng(seed);
  const auto c = static_cast<std::size_t>(bn.channels());
  rng.fill_uniform(std::span<float>(bn.weight().data(), c), 0.5f, 1.5f);
  rng.fill_uniform(std::span<float>(bn.bias().data(), c), -0.5f, 0.5f);
  rng.fill_uniform(std::span<float>(bn.running_mean().data(), c), -0.5f, 0.5f);
  rng.fill_uniform(std::span<float>(bn.running_var().data(), c), 0.3f, 2.0f);
}

// Training-mode forward in double; also returns batch mean and biased variance per channel.
std::vector<double> bn_train_double(const Case& k, const std::vector<double>& x,
                                    const std::vector<double>& gamma,
                                    const std::vector<double>& beta, double eps,
                                    std::vector<double>* mean_out = nullptr,
                                    std::vector<double>* var_out = nullptr) {
  const int64_t plane = k.h * k.w;
  const double m = static_cast<double>(k.mb * plane);
  std::vector<double> y(x.size());
  for (int64_t c = 0; c < k.c; ++c) {
    double mean = 0.0, var = 0.0;
    for (int64_t n = 0; n < k.mb; ++n) {
      for (int64_t i = 0; i < plane; ++i) mean += x[(n * k.c + c) * plane + i];
    }
    mean /= m;
    for (int64_t n = 0; n < k.mb; ++n) {
      for (int64_t i = 0; i < plane; ++i) {
        const double d = x[(n * k.c + c) * plane + i] - mean;
        var += d * d;
      }
    }
    var /= m;
    if (mean_out != nullptr) mean_out->push_back(mean);
    if (var_out != nullptr) var_out->push_back(var);
    for (int64_t n = 0; n < k.mb; ++n) {
      for (int64_t i = 0; i < plane; ++i) {
        const int64_t j = (n * k.c + c) * plane + i;
        y[j] = (x[j] - mean) / std::sqrt(var + eps) * gamma[c] + beta[c];
      }
    }
  }
  return y;
}

std::vector<double> to_double(const Tensor& t) {
  return std::vector<double>(t.data(), t.data() + t.numel());
}

TEST(BatchNorm2d, InferenceUsesRunningStatistics) {
  uint64_t seed = 10;
  for (const Case& k : kCases) {
    for (double eps : {1e-5, 1e-3}) {
      BatchNorm2d bn(k.c, eps);
      randomise(bn, ++seed);
      const Shape s{k.mb, k.c, k.h, k.w};
      for (int threads : {1, 2}) {
        ASSERT_EQ(bn.plan(std::span<const Shape>(&s, 1), ctx_with(false, threads)), s);
        const Tensor x = test::random_tensor(s, ++seed, -2.0f, 2.0f);
        Tensor y(s);
        const Tensor* src[] = {&x};
        bn.forward(src, y);
        std::vector<double> scale(static_cast<std::size_t>(k.c)), shift(scale.size());
        bn.inference_scale_shift(scale.data(), shift.data());
        for (int64_t i = 0; i < y.numel(); ++i) {
          const int64_t c = (i / (k.h * k.w)) % k.c;
          const double ref = (x[i] - double(bn.running_mean()[c])) /
                                 std::sqrt(double(bn.running_var()[c]) + eps) *
                                 double(bn.weight()[c]) +
                             double(bn.bias()[c]);
          ASSERT_NEAR(y[i], ref, 4e-7 * (1.0 + std::fabs(ref))) << bn.describe() << " " << i;
          ASSERT_NEAR(x[i] * scale[c] + shift[c], ref, 1e-12 * (1.0 + std::fabs(ref)));
        }
      }
      EXPECT_DOUBLE_EQ(bn.forward_flops(), 2.0 * k.mb * k.c * k.h * k.w);
    }
  }
  EXPECT_EQ(BatchNorm2d(64).describe(), "BatchNorm2d(64)");
  EXPECT_EQ(BatchNorm2d(64, 0.001).describe(), "BatchNorm2d(64, eps 0.001)");
}

TEST(BatchNorm2d, TrainingUsesBatchStatisticsAndUpdatesRunningOnes) {
  uint64_t seed = 50;
  for (const Case& k : kCases) {
    if (k.mb * k.h * k.w < 2) continue;
    BatchNorm2d bn(k.c, 1e-5, 0.1);
    randomise(bn, ++seed);
    const Tensor mean0 = bn.running_mean(), var0 = bn.running_var();
    const Shape s{k.mb, k.c, k.h, k.w};
    bn.plan(std::span<const Shape>(&s, 1), ctx_with(true));
    const Tensor x = test::random_tensor(s, ++seed, -1.0f, 3.0f);  // mean far from 0
    Tensor y(s);
    const Tensor* src[] = {&x};
    bn.forward(src, y);
    std::vector<double> mean, var;
    const std::vector<double> ref = bn_train_double(k, to_double(x), to_double(bn.weight()),
                                                    to_double(bn.bias()), 1e-5, &mean, &var);
    for (int64_t i = 0; i < y.numel(); ++i) {
      ASSERT_NEAR(y[i], ref[i], 1e-6 * (1.0 + std::fabs(ref[i]))) << i;
    }
    const double m = static_cast<double>(k.mb * k.h * k.w);
    for (int64_t c = 0; c < k.c; ++c) {
      EXPECT_NEAR(bn.running_mean()[c], 0.9 * mean0[c] + 0.1 * mean[c], 1e-6);
      EXPECT_NEAR(bn.running_var()[c], 0.9 * var0[c] + 0.1 * var[c] * m / (m - 1.0), 1e-6);
    }
  }
  // One value per channel cannot give a batch variance (PyTorch refuses it too).
  BatchNorm2d bn(3);
  const Shape one{1, 3, 1, 1};
  EXPECT_THROW(bn.plan(std::span<const Shape>(&one, 1), ctx_with(true)), Error);
  EXPECT_EQ(bn.plan(std::span<const Shape>(&one, 1), ctx_with(false)), one);
}

TEST(BatchNorm2d, BackwardMatchesFiniteDifferences) {
  uint64_t seed = 90;
  for (const Case& k : kCases) {
    if (k.mb * k.h * k.w < 2) continue;
    BatchNorm2d bn(k.c, 1e-3);
    randomise(bn, ++seed);
    const Shape s{k.mb, k.c, k.h, k.w};
    bn.plan(std::span<const Shape>(&s, 1), ctx_with(true));
    const Tensor x = test::random_tensor(s, ++seed);
    Tensor y(s), dx(s);
    const Tensor r = test::random_tensor(s, ++seed);
    const Tensor* src[] = {&x};
    bn.forward(src, y);
    Tensor* d_src[] = {&dx};
    bn.backward(src, y, r, d_src);

    std::vector<double> xd = to_double(x), gd = to_double(bn.weight()), bd = to_double(bn.bias());
    auto loss = [&] {
      const std::vector<double> out = bn_train_double(k, xd, gd, bd, 1e-3);
      double l = 0.0;
      for (std::size_t i = 0; i < out.size(); ++i) l += out[i] * r[static_cast<int64_t>(i)];
      return l;
    };
    const std::string where = fmt::format(" case [{},{},{},{}]", k.mb, k.c, k.h, k.w);
    auto check = [&](std::vector<double>& v, const Tensor& analytic, const char* what) {
      test::expect_finite_differences(v, analytic, loss, 1e-4, 2e-4, what + where);
    };
    check(xd, dx, "d_src");
    check(gd, bn.weight_grad(), "d_gamma");
    check(bd, bn.bias_grad(), "d_beta");

    // No input gradient wanted: the parameter gradients come out the same.
    const Tensor dg = bn.weight_grad(), db = bn.bias_grad();
    Tensor* none[] = {nullptr};
    bn.backward(src, y, r, none);
    for (int64_t c = 0; c < k.c; ++c) {
      EXPECT_EQ(bn.weight_grad()[c], dg[c]) << c << where;
      EXPECT_EQ(bn.bias_grad()[c], db[c]) << c << where;
    }
  }
}

TEST(BatchNorm2d, ParamsInitAndErrors) {
  BatchNorm2d bn(6);
  randomise(bn, 7);
  Rng rng(1);
  bn.init(rng);
  for (int64_t c = 0; c < 6; ++c) {
    EXPECT_EQ(bn.weight()[c], 1.0f);
    EXPECT_EQ(bn.bias()[c], 0.0f);
    EXPECT_EQ(bn.running_mean()[c], 0.0f);
    EXPECT_EQ(bn.running_var()[c], 1.0f);
  }
  const std::vector<Param> p = bn.params();
  ASSERT_EQ(p.size(), 2u);  // running statistics are buffers
  EXPECT_EQ(p[0].name, "weight");
  EXPECT_EQ(p[1].name, "bias");
  const Shape wrong{2, 5, 3, 3};
  try {
    bn.plan(std::span<const Shape>(&wrong, 1), ctx_with(false));
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BatchNorm2d(6)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 5, 3, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(BatchNorm2d(0), Error);
  EXPECT_THROW(BatchNorm2d(4, 1e-5, 1.5), Error);
}

// dispatch() names the layout the training loops run and why; nothing in inference.
TEST(BatchNorm2d, DispatchNamesTheTrainingLayout) {
  BatchNorm2d bn(4);
  EXPECT_EQ(bn.dispatch(), "");  // before plan()
  const Shape small{8, 4, 7, 7}, large{8, 4, 33, 33};
  bn.plan(std::span<const Shape>(&small, 1), ctx_with(true));
  EXPECT_EQ(bn.dispatch(),
            "layout=blocks (a plane of 49 values; blocks of channels take planes up to 1024)");
  bn.plan(std::span<const Shape>(&large, 1), ctx_with(true));
  EXPECT_EQ(bn.dispatch(),
            "layout=channels (a plane of 1089 values; blocks of channels take planes up to 1024)");
  bn.plan(std::span<const Shape>(&small, 1), ctx_with(false));
  EXPECT_EQ(bn.dispatch(), "");
}

}  // namespace
}  // namespace nnperf
