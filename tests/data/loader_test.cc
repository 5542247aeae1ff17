// Tests for data/loader: batches equal a direct gather + transform of the epoch's order; the same
// batches for 0, 1 and 3 workers and any prefetch factor, across epochs and after an epoch
// abandoned halfway; the last partial batch; every label in an epoch once; refused options.
#include "nnperf/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

Dataset data(int64_t n) {
  Dataset d = make_synthetic(n, 3, 6, 5, 10, 3);
  for (int64_t i = 0; i < n; ++i) d.labels[static_cast<std::size_t>(i)] = static_cast<int32_t>(i);
  return d;
}

LoaderOptions options(int workers, int prefetch) {
  LoaderOptions o;
  o.batch_size = 4;
  o.seed = 9;
  o.augment.pad = 2;
  o.norm = {{0.5, 0.4, 0.3}, {0.2, 0.25, 0.3}, "test"};
  o.workers = workers;
  o.prefetch_factor = prefetch;
  return o;
}

struct Epoch {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<int32_t>> y;
};

Epoch read_epoch(BatchLoader& l, int64_t epoch, int64_t max_batches = 1 << 30) {
  Epoch e;
  l.start_epoch(epoch);
  Tensor x;
  std::vector<int32_t> y;
  while (static_cast<int64_t>(e.x.size()) < max_batches && l.next(x, y)) {
    e.x.emplace_back(x.data(), x.data() + x.numel());
    e.y.push_back(y);
  }
  return e;
}

TEST(BatchLoader, BatchesAreTheOrderTransformed) {
  const Dataset d = data(10);
  const LoaderOptions o = options(0, 1);
  BatchLoader l(d, o);
  const Epoch e = read_epoch(l, 2);
  ASSERT_EQ(e.x.size(), 3u);  // 4 + 4 + 2
  EXPECT_EQ(e.y[2].size(), 2u);
  const std::vector<int64_t> order = shuffled_order(10, o.seed, 2, true);
  const float scale[3] = {5.0f, 4.0f, 1.0f / 0.3f};
  const float shift[3] = {-2.5f, -1.6f, -1.0f};
  std::vector<int32_t> seen;
  for (int64_t i = 0; i < 10; ++i) {
    const int64_t s = order[static_cast<std::size_t>(i)];
    EXPECT_EQ(e.y[static_cast<std::size_t>(i / 4)][static_cast<std::size_t>(i % 4)], s);
    seen.push_back(static_cast<int32_t>(s));
    std::vector<float> want(90);
    transform_sample(d.images.data() + s * 90, 3, 6, 5, draw_sample(o.augment, o.seed, 2, i), 2,
                     scale, shift, want.data());
    const auto& got = e.x[static_cast<std::size_t>(i / 4)];
    for (int k = 0; k < 90; ++k) {
      ASSERT_NEAR(got[static_cast<std::size_t>((i % 4) * 90 + k)], want[k], 1e-5) << i << " " << k;
    }
  }
  std::sort(seen.begin(), seen.end());
  for (int32_t i = 0; i < 10; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
}

TEST(BatchLoader, SameBatchesForAnyWorkerCount) {
  const Dataset d = data(23);
  BatchLoader serial(d, options(0, 1));
  const Epoch e0 = read_epoch(serial, 0), e1 = read_epoch(serial, 1);
  for (const auto& [workers, prefetch] :
       std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {3, 2}, {2, 5}}) {
    BatchLoader l(d, options(workers, prefetch));
    (void)read_epoch(l, 5, 2);  // abandoned halfway: the next epoch must not see its batches
    const Epoch a = read_epoch(l, 0), b = read_epoch(l, 1);
    EXPECT_EQ(a.x, e0.x) << workers << " workers";
    EXPECT_EQ(a.y, e0.y) << workers << " workers";
    EXPECT_EQ(b.x, e1.x) << workers << " workers";
    EXPECT_EQ(b.y, e1.y) << workers << " workers";
    EXPECT_NE(a.y, b.y);
    EXPECT_GE(l.wait_ns(), 0);
  }
}

TEST(BatchLoader, RefusesBadOptions) {
  const Dataset d = data(8);
  LoaderOptions o = options(0, 1);
  o.workers = 1000;
  EXPECT_THROW(BatchLoader(d, o), Error);
  o = options(0, 0);
  EXPECT_THROW(BatchLoader(d, o), Error);
  o = options(0, 1);
  o.norm.mean.pop_back();
  EXPECT_THROW(BatchLoader(d, o), Error);
  o = options(0, 1);
  o.batch_size = 0;
  EXPECT_THROW(BatchLoader(d, o), Error);
  // Images smaller than the random crop's padding: the message says what to give.
  o = options(0, 1);
  o.augment.pad = 7;
  try {
    BatchLoader l(d, o);
    ADD_FAILURE() << "a padding of 7 on 6x5 images was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "its 6x5 images are smaller than the augmentation's random-crop padding of 7 "
                  "pixels; train them with --no-augment"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nnperf
