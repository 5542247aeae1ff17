// Tests for kernels/batchnorm: training forward (output, saved statistics, running statistics)
// and backward against the float64 references at odd shapes (1x1 planes, batch 1 with a plane of
// 2, 3 and 5 channels, planes not a multiple of the 8 accumulators, a large mean), on 1 and 3
// threads; the backward reference against central differences of the forward reference.
// Tolerances: outputs are float32 roundings of float64 results: 1e-5 relative to the largest
// magnitude of the tensor (a few float ulps of its scale); statistics 1e-9 relative (float64
// sums in another order). The SIMD copies of the loops give the portable loops' bits.
#include "nnperf/kernels/batchnorm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/batchnorm_impl.h"  // the portable loops, compiled into this test
#include "nnperf/kernels/batchnorm_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

const BatchNormShape kShapes[] = {{2, 3, 25}, {1, 5, 2}, {4, 3, 1}, {3, 2, 67}, {2, 4, 9}};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

TEST(BatchNormKernels, ForwardAndBackwardMatchTheReference) {
  for (const BatchNormShape& s : kShapes) {
    for (double offset : {0.0, 1000.0}) {  // a large mean: the centred second pass keeps it exact
      const int64_t n = s.mb * s.channels * s.plane;
      std::vector<float> x = test::random_vector(n, 3, -1.0f, 1.0f);
      for (float& v : x) v += static_cast<float>(offset);
      const std::vector<float> gamma = test::random_vector(s.channels, 4, 0.5f, 1.5f);
      const std::vector<float> beta = test::random_vector(s.channels, 5);
      const std::vector<float> dy = test::random_vector(n, 6);
      std::vector<double> ry(static_cast<std::size_t>(n)),
          rmean(static_cast<std::size_t>(s.channels)), rvar(rmean.size()), rdx(ry.size()),
          rdg(rmean.size()), rdb(rmean.size());
      batchnorm_train_forward_reference(s, x.data(), gamma.data(), beta.data(), 1e-5, ry.data(),
                                        rmean.data(), rvar.data());
      batchnorm_backward_reference(s, x.data(), dy.data(), gamma.data(), 1e-5, rdx.data(),
                                   rdg.data(), rdb.data());
      for (int threads : {1, 3}) {
        std::vector<float> y(static_cast<std::size_t>(n)), dx(y.size()), dg(rmean.size()),
            db(rmean.size()), run_mean(rmean.size(), 0.5f), run_var(rmean.size(), 2.0f);
        std::vector<double> mean(rmean.size()), inv(rmean.size());
        BatchNormTrainArgs f{s,          x.data(), y.data(),        gamma.data(),   beta.data(),
                             1e-5,       0.1,      run_mean.data(), run_var.data(), mean.data(),
                             inv.data(), threads};
        batchnorm_train_forward(f);
        BatchNormBackwardArgs b{s,           x.data(),   dy.data(), dx.data(), gamma.data(),
                                mean.data(), inv.data(), dg.data(), db.data(), threads};
        batchnorm_backward(b);
        const double ys = max_abs(ry), dxs = max_abs(rdx), gs = max_abs(rdg) + max_abs(rdb);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_NEAR(y[i], ry[i], 1e-5 * ys) << i;
          ASSERT_NEAR(dx[i], rdx[i], 1e-5 * dxs) << i;
        }
        const double count = static_cast<double>(s.mb * s.plane);
        for (int64_t c = 0; c < s.channels; ++c) {
          EXPECT_NEAR(mean[c], rmean[c], 1e-9 * (1 + std::abs(rmean[c])));
          EXPECT_NEAR(inv[c], 1 / std::sqrt(rvar[c] + 1e-5), 1e-9 * inv[c]);
          EXPECT_NEAR(run_mean[c], 0.9 * 0.5 + 0.1 * rmean[c], 1e-6 * (1 + std::abs(rmean[c])));
          const double unbiased = count > 1 ? rvar[c] * count / (count - 1) : 0;
          EXPECT_NEAR(run_var[c], 0.9 * 2.0 + 0.1 * unbiased, 1e-6 * (1 + unbiased));
          EXPECT_NEAR(dg[c], rdg[c], 1e-5 * gs);
          EXPECT_NEAR(db[c], rdb[c], 1e-5 * gs);
        }
        // dx may be skipped: the parameter gradients come out the same.
        const std::vector<float> dg_with_dx = dg, db_with_dx = db;
        std::fill(dg.begin(), dg.end(), -1.0f);
        std::fill(db.begin(), db.end(), -1.0f);
        b.dx = nullptr;
        batchnorm_backward(b);
        EXPECT_EQ(dg, dg_with_dx);
        EXPECT_EQ(db, db_with_dx);
      }
    }
  }
}

// Every SIMD path this CPU can run (batchnorm_avx2.cc, batchnorm_avx512.cc: the same loops,
// vectorised, contraction off) gives exactly the portable loops' outputs and statistics, at planes
// below, at and around the 8 lanes and a vector's width, and with a large mean.
TEST(BatchNormKernels, EverySimdPathGivesThePortableBits) {
  std::vector<std::pair<const char*, const detail::BatchNormPaths*>> paths;
  if (cpu_info().simd >= SimdLevel::kAvx2) paths.emplace_back("avx2", &detail::kBatchNormPathsAvx2);
  if (cpu_info().simd >= SimdLevel::kAvx512)
    paths.emplace_back("avx512", &detail::kBatchNormPathsAvx512);
  if (paths.empty()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512";
  struct Run {
    std::vector<float> y, dx, dg, db, rm, rv, applied;
    std::vector<double> mean, inv;
  };
  const auto run = [](const BatchNormShape& s, const std::vector<float>& x,
                      const std::vector<float>& dy, const std::vector<float>& g,
                      const std::vector<float>& b, const detail::BatchNormPaths& p) {
    const auto c = static_cast<std::size_t>(s.channels);
    Run r{std::vector<float>(x.size()), std::vector<float>(x.size()), std::vector<float>(c),
          std::vector<float>(c),        std::vector<float>(c, 0.5f),  std::vector<float>(c, 2.0f),
          std::vector<float>(x.size()), std::vector<double>(c),       std::vector<double>(c)};
    const BatchNormTrainArgs f{s,   x.data(),    r.y.data(),  g.data(),      b.data(),     1e-5,
                               0.1, r.rm.data(), r.rv.data(), r.mean.data(), r.inv.data(), 1};
    const BatchNormBackwardArgs k{
        s,           x.data(),    dy.data(), r.dx.data(), g.data(), r.mean.data(), r.inv.data(),
        r.dg.data(), r.db.data(), 1};
    for (int64_t ch = 0; ch < s.channels; ++ch) p.train_forward_channel(f, ch);
    for (int64_t ch = 0; ch < s.channels; ++ch) p.backward_channel(k, ch);
    p.apply_rows(s, x.data(), g.data(), b.data(), r.applied.data(), 0, s.mb * s.channels);
    return r;
  };
  const detail::BatchNormPaths portable{&detail::train_forward_channel, &detail::backward_channel,
                                        &detail::apply_rows};
  const auto same = [](const auto& a, const auto& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
  };
  for (int64_t plane : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 67, 196}) {
    for (float offset : {0.0f, 1000.0f}) {
      const BatchNormShape s{3, 5, plane};
      const int64_t n = s.mb * s.channels * s.plane;
      std::vector<float> x = test::random_vector(n, 7, -1.0f, 1.0f);
      for (float& v : x) v += offset;
      const std::vector<float> dy = test::random_vector(n, 8);
      const std::vector<float> g = test::random_vector(s.channels, 9, 0.5f, 1.5f);
      const std::vector<float> b = test::random_vector(s.channels, 10);
      const Run want = run(s, x, dy, g, b, portable);
      for (const auto& [name, p] : paths) {
        const Run got = run(s, x, dy, g, b, *p);
        SCOPED_TRACE(testing::Message() << name << " plane " << plane << " offset " << offset);
        EXPECT_TRUE(same(got.y, want.y));
        EXPECT_TRUE(same(got.mean, want.mean));
        EXPECT_TRUE(same(got.inv, want.inv));
        EXPECT_TRUE(same(got.rm, want.rm));
        EXPECT_TRUE(same(got.rv, want.rv));
        EXPECT_TRUE(same(got.dx, want.dx));
        EXPECT_TRUE(same(got.dg, want.dg));
        EXPECT_TRUE(same(got.db, want.db));
        EXPECT_TRUE(same(got.applied, want.applied));
      }
    }
  }
}

// The backward reference is the forward reference's gradient: L = sum(dy * y).
TEST(BatchNormKernels, BackwardReferenceMatchesFiniteDifferences) {
  const BatchNormShape s{2, 2, 3};
  const int64_t n = s.mb * s.channels * s.plane;
  std::vector<float> x = test::random_vector(n, 7);
  std::vector<float> gamma = test::random_vector(s.channels, 8, 0.5f, 1.5f);
  std::vector<float> beta = test::random_vector(s.channels, 9);
  const std::vector<float> dy = test::random_vector(n, 10);
  std::vector<double> dx(static_cast<std::size_t>(n)), dg(2), db(2), y(dx.size()), m(2), v(2);
  batchnorm_backward_reference(s, x.data(), dy.data(), gamma.data(), 1e-5, dx.data(), dg.data(),
                               db.data());
  const auto loss = [&] {
    batchnorm_train_forward_reference(s, x.data(), gamma.data(), beta.data(), 1e-5, y.data(),
                                      m.data(), v.data());
    double l = 0;
    for (int64_t i = 0; i < n; ++i) l += dy[i] * y[i];
    return l;
  };
  const float h = 1.0f / 256;  // exact in float
  // Each element of `values` against the analytic gradient, within tol * (1 + |analytic|).
  const auto check = [&](std::vector<float>& values, const std::vector<double>& analytic,
                         double tol, const char* what) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(test::central_difference(values[i], loss, h), analytic[i],
                  tol * (1 + std::abs(analytic[i])))
          << what << " " << i;
    }
  };
  check(x, dx, 2e-3, "dx");      // O(h^2)
  check(gamma, dg, 1e-6, "dg");  // linear in gamma
  check(beta, db, 1e-6, "db");   // linear in beta
}

}  // namespace
}  // namespace nnperf
