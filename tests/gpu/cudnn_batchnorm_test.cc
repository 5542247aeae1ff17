// cuDNN's batch normalisation (kernels/conv/cudnn_batchnorm.h) against the float64 references of
// kernels/batchnorm.h: y, the saved mean and 1/sqrt(var + eps), the running statistics (the
// unbiased batch variance, as torch.nn.BatchNorm2d and the CPU kernel), dx, d_gamma and d_beta,
// at odd shapes (a plane of 1, planes below and above cuDNN's and our block sizes, one image) and
// a ResNet-50 layer's; the backward without dx. Float statistics (cuDNN's): each value within
// 1e-5 of the float64 result relative to the sum of the absolute terms it adds up, the
// float-summation bound with room for the order. The names and the refusals run everywhere.
#include "nnperf/kernels/conv/cudnn_batchnorm.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using cuda::to_device;
using cuda::to_host;

TEST(CudnnBatchNorm, NamesAndTheFlagsRefusal) {
  EXPECT_EQ(cudnn::batchnorm_algorithms(), (std::vector<std::string>{"own", "cudnn"}));
  EXPECT_EQ(cudnn::checked_batchnorm_algorithm("--batchnorm", "cudnn"), "cudnn");
  try {
    (void)cudnn::checked_batchnorm_algorithm("--batchnorm", "miopen");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--batchnorm miopen: unknown BatchNorm algorithm; one of own, cudnn");
  }
}

TEST(CudnnBatchNorm, WithoutCudnnItRefusesWithTheReasonAndBeyondIntItSaysWhy) {
  if (!cudnn::available()) {
    EXPECT_EQ(cudnn::batchnorm_why_not({2, 3, 4}), cudnn::unavailable_reason());
    float x = 0.0f;
    EXPECT_THROW(
        cudnn::batchnorm_train_forward({{1, 1, 1}, &x, &x, &x, &x, 1e-5, 0.1, &x, &x, &x, &x}),
        UsageError);
    EXPECT_THROW(cudnn::batchnorm_backward({{1, 1, 1}, &x, &x, &x, &x, &x, &x, 1e-5, &x, &x}),
                 UsageError);
    return;
  }
  EXPECT_EQ(cudnn::batchnorm_why_not({32, 64, 3136}), "");
  EXPECT_EQ(cudnn::batchnorm_why_not({1024, 2048, 1024}),
            "1024 x 2048 x 1024 = 2147483648 elements, more than cuDNN's descriptors take "
            "(2^31 - 1)");
}

// got[i] within 1e-5 of want[i] relative to scale[i] (the sum of |terms| behind want[i]) + 1.
void expect_near(const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& scale, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1.0 + scale[i])) << what << " " << i;
}

TEST(CudnnBatchNorm, TrainingMatchesTheFloat64References) {
  if (!cudnn::available()) GTEST_SKIP() << cudnn::unavailable_reason();
  for (const BatchNormShape s :
       {BatchNormShape{3, 5, 7}, BatchNormShape{2, 4, 1}, BatchNormShape{1, 3, 300},
        BatchNormShape{41, 3, 50}, BatchNormShape{4, 3, 4099}, BatchNormShape{8, 64, 3136}}) {
    SCOPED_TRACE(fmt::format("mb {} channels {} plane {}", s.mb, s.channels, s.plane));
    const int64_t n = s.mb * s.channels * s.plane, count = s.mb * s.plane;
    const auto c_count = static_cast<std::size_t>(s.channels);
    const std::vector<float> x = test::random_vector(n, 1, -3.0f, 5.0f);  // a mean away from 0
    const std::vector<float> dy = test::random_vector(n, 2);
    const std::vector<float> gamma = test::random_vector(s.channels, 3, 0.5f, 1.5f);
    const std::vector<float> beta = test::random_vector(s.channels, 4);
    const double eps = 1e-5, momentum = 0.1;
    std::vector<double> y(x.size()), mean(c_count), var(c_count), dx(x.size()), dg(c_count),
        db(c_count);
    batchnorm_train_forward_reference(s, x.data(), gamma.data(), beta.data(), eps, y.data(),
                                      mean.data(), var.data());
    batchnorm_backward_reference(s, x.data(), dy.data(), gamma.data(), eps, dx.data(), dg.data(),
                                 db.data());
    // Scales: |y| for y; for the statistics and gradients the sums of absolute terms.
    std::vector<double> y_scale(x.size()), dx_scale(x.size()), abs_dy(c_count),
        abs_dy_xhat(c_count);
    std::vector<double> inv(c_count), rm(c_count), rv(c_count), mean_scale(c_count);
    for (std::size_t c = 0; c < c_count; ++c) {
      inv[c] = 1.0 / std::sqrt(var[c] + eps);
      rm[c] = (1 - momentum) * 0.1 + momentum * mean[c];
      rv[c] = (1 - momentum) * 0.9 + momentum * var[c] * count / std::max<double>(count - 1, 1);
    }
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const auto c = static_cast<std::size_t>((i / s.plane) % s.channels);
      y_scale[k] = std::abs(y[k]) + std::abs(beta[c]);
      abs_dy[c] += std::abs(dy[k]);
      abs_dy_xhat[c] += std::abs(dy[k] * (x[k] - mean[c]) * inv[c]);
      mean_scale[c] += std::abs(x[k]) / static_cast<double>(count);
    }
    for (int64_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const auto c = static_cast<std::size_t>((i / s.plane) % s.channels);
      dx_scale[k] = gamma[c] * inv[c] *
                    (std::abs(dy[k]) + (abs_dy[c] + abs_dy_xhat[c]) / static_cast<double>(count));
    }
    const cuda::Buffer xg = to_device(x), dyg = to_device(dy), gg = to_device(gamma),
                       bg = to_device(beta);
    cuda::Buffer yg(x.size()), dxg(x.size()), rmg = to_device(std::vector<float>(c_count, 0.1f)),
                                              rvg = to_device(std::vector<float>(c_count, 0.9f)),
                                              meang(c_count), invg(c_count), dgg(c_count),
                                              dbg(c_count);
    cudnn::batchnorm_train_forward({s, xg.data(), yg.data(), gg.data(), bg.data(), eps, momentum,
                                    rmg.data(), rvg.data(), meang.data(), invg.data()});
    cudnn::batchnorm_backward({s, xg.data(), dyg.data(), dxg.data(), gg.data(), meang.data(),
                               invg.data(), eps, dgg.data(), dbg.data()});
    expect_near(to_host(yg), y, y_scale, "y");
    expect_near(to_host(meang), mean, mean_scale, "saved mean");
    std::vector<double> inv_scale(c_count);
    for (std::size_t c = 0; c < c_count; ++c) inv_scale[c] = inv[c] * 10;  // var's own rounding
    expect_near(to_host(invg), inv, inv_scale, "saved 1/sqrt(var + eps)");
    expect_near(to_host(rmg), rm, mean_scale, "running mean");
    expect_near(to_host(rvg), rv, std::vector<double>(c_count, 10.0), "running var");
    expect_near(to_host(dxg), dx, dx_scale, "dx");
    expect_near(to_host(dgg), dg, abs_dy_xhat, "d_gamma");
    expect_near(to_host(dbg), db, abs_dy, "d_beta");
    // Without dx: the same parameter gradients.
    cuda::Buffer dg2(c_count), db2(c_count);
    cudnn::batchnorm_backward({s, xg.data(), dyg.data(), nullptr, gg.data(), meang.data(),
                               invg.data(), eps, dg2.data(), db2.data()});
    expect_near(to_host(dg2), dg, abs_dy_xhat, "d_gamma without dx");
    expect_near(to_host(db2), db, abs_dy, "d_beta without dx");
  }
}

}  // namespace
}  // namespace nnperf
