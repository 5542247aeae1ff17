// Tests for kernels/batchnorm: training forward (output, saved statistics, running statistics)
// and backward against the float64 references at odd shapes (1x1 planes, batch 1 with a plane of
// 2, 3 and 5 channels, planes not a multiple of the 8 accumulators, a large mean), on 1 and 3
// threads, in the automatic layout and in each layout that serves the shape (blocks of channels
// for planes of up to 1024 values, channel by channel for any); the blocks' results whatever the
// split; the inference map; the backward reference against central differences of the forward
// reference. Tolerances: outputs are float32 roundings of float64 results: 1e-5 relative to the
// largest magnitude of the tensor (a few float ulps of its scale); statistics 1e-9 relative
// (float64 sums in another order). The SIMD copies of the loops give the portable loops' bits. A
// fused ReLU gives the bits of BatchNorm followed by the activation table's ReLU.
#include "nnperf/kernels/batchnorm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/batchnorm_impl.h"  // the portable loops, compiled into this test
#include "nnperf/kernels/batchnorm_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

// Planes up to 1024 values go by blocks of channels (70 channels of 33: more than one block),
// larger ones channel by channel.
const BatchNormShape kShapes[] = {{2, 3, 25}, {1, 5, 2},   {4, 3, 1},    {3, 2, 67},
                                  {2, 4, 9},  {2, 70, 33}, {2, 3, 1025}, {1, 2, 1300}};

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
      for (const auto& [layout, threads] :
           {std::pair{BatchNormLayout::kAuto, 1}, std::pair{BatchNormLayout::kAuto, 3},
            std::pair{BatchNormLayout::kChannels, 3}, std::pair{BatchNormLayout::kBlocks, 3}}) {
        if (!batchnorm_layout_why_not(layout, s).empty()) continue;
        SCOPED_TRACE(testing::Message() << "mb" << s.mb << "c" << s.channels << "p" << s.plane
                                        << " " << to_string(layout) << " threads " << threads);
        std::vector<float> y(static_cast<std::size_t>(n)), dx(y.size()), dg(rmean.size()),
            db(rmean.size()), run_mean(rmean.size(), 0.5f), run_var(rmean.size(), 2.0f);
        std::vector<double> mean(rmean.size()), inv(rmean.size());
        BatchNormTrainArgs f{s,          x.data(), y.data(),        gamma.data(),   beta.data(),
                             1e-5,       0.1,      run_mean.data(), run_var.data(), mean.data(),
                             inv.data(), threads};
        batchnorm_train_forward(f, layout);
        BatchNormBackwardArgs b{s,           x.data(),   dy.data(), dx.data(), gamma.data(),
                                mean.data(), inv.data(), dg.data(), db.data(), threads};
        batchnorm_backward(b, layout);
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
        batchnorm_backward(b, layout);
        EXPECT_EQ(dg, dg_with_dx);
        EXPECT_EQ(db, db_with_dx);
      }
    }
  }
}

// A ReLU fused into the loops gives the bits of BatchNorm, then the activation table's ReLU (both
// ways: the table's ReLU backward on the BatchNorm output, then BatchNorm's backward on that), in
// each layout and on 1 and 3 threads, with and without dx; and it matches the float64 reference
// with the ReLU, at the tolerances above.
TEST(BatchNormKernels, FusedReluGivesTheBitsOfBatchNormThenReLU) {
  const ActivationKernel& relu = find_activation("ReLU");
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (const BatchNormShape& s : kShapes) {
    const int64_t n = s.mb * s.channels * s.plane;
    const auto c = static_cast<std::size_t>(s.channels);
    const std::vector<float> x = test::random_vector(n, 13, -1.0f, 1.0f);
    const std::vector<float> gamma = test::random_vector(s.channels, 14, 0.5f, 1.5f);
    const std::vector<float> beta = test::random_vector(s.channels, 15, -0.5f, 0.5f);
    const std::vector<float> dy = test::random_vector(n, 16);
    std::vector<double> ry(static_cast<std::size_t>(n)), rmean(c), rvar(c), rdx(ry.size()), rdg(c),
        rdb(c);
    batchnorm_train_forward_reference(s, x.data(), gamma.data(), beta.data(), 1e-5, ry.data(),
                                      rmean.data(), rvar.data(), true);
    batchnorm_backward_reference(s, x.data(), dy.data(), gamma.data(), 1e-5, rdx.data(), rdg.data(),
                                 rdb.data(), beta.data(), true);
    for (const auto& [layout, threads] :
         {std::pair{BatchNormLayout::kAuto, 1}, std::pair{BatchNormLayout::kChannels, 3},
          std::pair{BatchNormLayout::kBlocks, 3}}) {
      if (!batchnorm_layout_why_not(layout, s).empty()) continue;
      SCOPED_TRACE(testing::Message() << "mb" << s.mb << "c" << s.channels << "p" << s.plane << " "
                                      << to_string(layout) << " threads " << threads);
      struct Run {
        std::vector<float> y, dx, dg, db, rm, rv;
      };
      const auto fresh = [&] {
        return Run{std::vector<float>(x.size()), std::vector<float>(x.size()),
                   std::vector<float>(c),        std::vector<float>(c),
                   std::vector<float>(c, 0.5f),  std::vector<float>(c, 2.0f)};
      };
      std::vector<double> mean(c), inv(c);
      // BatchNorm, then the table's ReLU.
      Run two = fresh();
      std::vector<float> bn_y(x.size()), g(x.size());
      BatchNormTrainArgs f{s,   x.data(),      bn_y.data(),   gamma.data(), beta.data(), 1e-5,
                           0.1, two.rm.data(), two.rv.data(), mean.data(),  inv.data(),  threads};
      batchnorm_train_forward(f, layout);
      relu.forward(bn_y.data(), two.y.data(), n);
      relu.backward(bn_y.data(), two.y.data(), dy.data(), g.data(), n);
      BatchNormBackwardArgs b{s,           x.data(),   g.data(),      two.dx.data(), gamma.data(),
                              mean.data(), inv.data(), two.dg.data(), two.db.data(), threads};
      batchnorm_backward(b, layout);
      // The fused loops.
      Run one = fresh();
      f.y = one.y.data();
      f.running_mean = one.rm.data();
      f.running_var = one.rv.data();
      f.relu = true;
      batchnorm_train_forward(f, layout);
      b.dy = dy.data();
      b.dx = one.dx.data();
      b.d_gamma = one.dg.data();
      b.d_beta = one.db.data();
      b.y = one.y.data();
      b.relu = true;
      batchnorm_backward(b, layout);
      const std::vector<float>* got[] = {&one.y, &one.rm, &one.rv, &one.dx, &one.dg, &one.db};
      const std::vector<float>* want[] = {&two.y, &two.rm, &two.rv, &two.dx, &two.dg, &two.db};
      for (std::size_t i = 0; i < std::size(got); ++i) EXPECT_TRUE(same(*got[i], *want[i])) << i;
      const double ys = max_abs(ry), dxs = max_abs(rdx), gs = max_abs(rdg) + max_abs(rdb);
      int64_t zeros = 0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(one.y[i], ry[i], 1e-5 * ys) << i;
        ASSERT_NEAR(one.dx[i], rdx[i], 1e-5 * dxs) << i;
        zeros += one.y[i] == 0.0f;
      }
      EXPECT_GT(zeros, 0);  // the ReLU cut something
      EXPECT_LT(zeros, n);
      for (std::size_t k = 0; k < c; ++k) {
        EXPECT_NEAR(one.dg[k], rdg[k], 1e-5 * gs);
        EXPECT_NEAR(one.db[k], rdb[k], 1e-5 * gs);
      }
      // Without dx: the same parameter gradients.
      std::fill(one.dg.begin(), one.dg.end(), -1.0f);
      b.dx = nullptr;
      batchnorm_backward(b, layout);
      EXPECT_TRUE(same(one.dg, two.dg));
    }
  }
}

TEST(BatchNormKernels, FusedReluBackwardNeedsTheOutput) {
  const BatchNormShape s{2, 1, 4};
  std::vector<float> x(8, 1.0f), dy(8), dx(8), gamma(1, 1.0f), dg(1), db(1);
  std::vector<double> mean(1), inv(1, 1.0);
  BatchNormBackwardArgs b{s,           x.data(),   dy.data(), dx.data(), gamma.data(),
                          mean.data(), inv.data(), dg.data(), db.data(), 1};
  b.relu = true;
  EXPECT_THROW(batchnorm_backward(b), Error);
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
                      const std::vector<float>& b, const detail::BatchNormPaths& p, bool blocks,
                      bool relu) {
    const auto c = static_cast<std::size_t>(s.channels);
    Run r{std::vector<float>(x.size()), std::vector<float>(x.size()), std::vector<float>(c),
          std::vector<float>(c),        std::vector<float>(c, 0.5f),  std::vector<float>(c, 2.0f),
          std::vector<float>(x.size()), std::vector<double>(c),       std::vector<double>(c)};
    BatchNormTrainArgs f{s,   x.data(),    r.y.data(),  g.data(),      b.data(),     1e-5,
                         0.1, r.rm.data(), r.rv.data(), r.mean.data(), r.inv.data(), 1};
    f.relu = relu;
    BatchNormBackwardArgs k{
        s,           x.data(),    dy.data(), r.dx.data(), g.data(), r.mean.data(), r.inv.data(),
        r.dg.data(), r.db.data(), 1};
    k.y = r.y.data();
    k.relu = relu;
    if (blocks) {
      p.train_forward_block(f, 0, s.channels);
      p.backward_block(k, 0, s.channels);
      std::vector<float> sv, hv;
      for (int64_t v = 0; v < s.channels * s.plane; ++v) {
        sv.push_back(g[v / s.plane]);
        hv.push_back(b[v / s.plane]);
      }
      p.apply_images(s, x.data(), sv.data(), hv.data(), r.applied.data(), 0, s.mb);
    } else {
      for (int64_t ch = 0; ch < s.channels; ++ch) p.train_forward_channel(f, ch);
      for (int64_t ch = 0; ch < s.channels; ++ch) p.backward_channel(k, ch);
      p.apply_rows(s, x.data(), g.data(), b.data(), r.applied.data(), 0, s.mb * s.channels);
    }
    return r;
  };
  const detail::BatchNormPaths portable{
      &detail::train_forward_channel, &detail::backward_channel, &detail::apply_rows,
      &detail::train_forward_block,   &detail::backward_block,   &detail::apply_images};
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
      for (const auto& [blocks, relu] : {std::pair{false, false}, std::pair{true, false},
                                         std::pair{false, true}, std::pair{true, true}}) {
        const Run want = run(s, x, dy, g, b, portable, blocks, relu);
        for (const auto& [name, p] : paths) {
          const Run got = run(s, x, dy, g, b, *p, blocks, relu);
          SCOPED_TRACE(testing::Message()
                       << name << " plane " << plane << " offset " << offset
                       << (blocks ? " blocks" : " channels") << (relu ? " + ReLU" : ""));
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
}

// The blocks' results do not depend on how the channels are split: one block of all channels,
// one channel per block and uneven blocks give the same bits (the sums run over images, then
// over each channel's plane, in one order); with a dx, without it d_gamma and d_beta stay the same.
TEST(BatchNormKernels, BlocksGiveTheSameBitsWhateverTheSplit) {
  const BatchNormShape s{3, 7, 5};
  const int64_t n = s.mb * s.channels * s.plane;
  const std::vector<float> x = test::random_vector(n, 11), dy = test::random_vector(n, 12);
  const std::vector<float> g = test::random_vector(s.channels, 13, 0.5f, 1.5f);
  const std::vector<float> b = test::random_vector(s.channels, 14);
  const auto c = static_cast<std::size_t>(s.channels);
  struct Out {
    std::vector<float> y, dx, dg, db, rm, rv;
    std::vector<double> mean, inv;
  };
  const auto run = [&](const std::vector<int64_t>& cuts, bool with_dx) {
    Out o{std::vector<float>(x.size()), std::vector<float>(x.size()), std::vector<float>(c),
          std::vector<float>(c),        std::vector<float>(c, 0.5f),  std::vector<float>(c, 2.0f),
          std::vector<double>(c),       std::vector<double>(c)};
    const BatchNormTrainArgs f{s,   x.data(),    o.y.data(),  g.data(),      b.data(),     1e-5,
                               0.1, o.rm.data(), o.rv.data(), o.mean.data(), o.inv.data(), 1};
    const BatchNormBackwardArgs k{s,
                                  x.data(),
                                  dy.data(),
                                  with_dx ? o.dx.data() : nullptr,
                                  g.data(),
                                  o.mean.data(),
                                  o.inv.data(),
                                  o.dg.data(),
                                  o.db.data(),
                                  1};
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
      detail::train_forward_block(f, cuts[i], cuts[i + 1]);
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
      detail::backward_block(k, cuts[i], cuts[i + 1]);
    return o;
  };
  const Out whole = run({0, 7}, true);
  for (const auto& cuts :
       std::vector<std::vector<int64_t>>{{0, 1, 2, 3, 4, 5, 6, 7}, {0, 3, 4, 7}}) {
    const Out split = run(cuts, true);
    EXPECT_EQ(split.y, whole.y);
    EXPECT_EQ(split.dx, whole.dx);
    EXPECT_EQ(split.dg, whole.dg);
    EXPECT_EQ(split.db, whole.db);
    EXPECT_EQ(split.rm, whole.rm);
    EXPECT_EQ(split.rv, whole.rv);
    EXPECT_EQ(split.mean, whole.mean);
    EXPECT_EQ(split.inv, whole.inv);
  }
  const Out no_dx = run({0, 2, 7}, false);
  EXPECT_EQ(no_dx.dg, whole.dg);
  EXPECT_EQ(no_dx.db, whole.db);
}

// kAuto takes blocks for planes of up to 1024 values and channels above; blocks refuse a larger
// plane with the reason, and a pass asked for them there throws.
TEST(BatchNormKernels, TheAutomaticLayoutAndItsLimit) {
  EXPECT_EQ(batchnorm_auto_layout({32, 512, 1}), BatchNormLayout::kBlocks);
  EXPECT_EQ(batchnorm_auto_layout({8, 64, 1024}), BatchNormLayout::kBlocks);
  EXPECT_EQ(batchnorm_auto_layout({8, 64, 1025}), BatchNormLayout::kChannels);
  EXPECT_EQ(batchnorm_layout_why_not(BatchNormLayout::kBlocks, {8, 64, 1024}), "");
  EXPECT_EQ(batchnorm_layout_why_not(BatchNormLayout::kChannels, {8, 64, 3136}), "");
  EXPECT_EQ(batchnorm_layout_why_not(BatchNormLayout::kBlocks, {8, 64, 3136}),
            "a plane of 3136 values: more than a block of channels holds (1024)");
  const BatchNormShape s{2, 1, 1025};
  std::vector<float> x(2050, 1.0f), y(x.size()), g(1, 1.0f), b(1, 0.0f), rm(1), rv(1);
  std::vector<double> mean(1), inv(1);
  const BatchNormTrainArgs f{s,   x.data(),  y.data(),  g.data(),    b.data(),   1e-5,
                             0.1, rm.data(), rv.data(), mean.data(), inv.data(), 1};
  EXPECT_THROW(batchnorm_train_forward(f, BatchNormLayout::kBlocks), Error);
  EXPECT_STREQ(to_string(BatchNormLayout::kAuto), "auto");
}

// The inference map y = x * scale[c] + shift[c], by images (small planes) and by rows, against
// float64 within a float rounding of each value's scale, on 1 and 3 threads.
TEST(BatchNormKernels, ApplyMatchesTheReference) {
  for (const BatchNormShape& s : kShapes) {
    const int64_t n = s.mb * s.channels * s.plane;
    const std::vector<float> x = test::random_vector(n, 15);
    const std::vector<float> scale = test::random_vector(s.channels, 16, 0.5f, 1.5f);
    const std::vector<float> shift = test::random_vector(s.channels, 17);
    for (int threads : {1, 3}) {
      std::vector<float> y(static_cast<std::size_t>(n), -7.0f);
      batchnorm_apply(s, x.data(), scale.data(), shift.data(), y.data(), threads);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = (i / s.plane) % s.channels;
        const double want = static_cast<double>(x[i]) * scale[c] + shift[c];
        ASSERT_NEAR(y[i], want, 2e-7 * (std::abs(x[i] * scale[c]) + std::abs(shift[c])))
            << "mb" << s.mb << " c" << s.channels << " p" << s.plane << " at " << i;
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
