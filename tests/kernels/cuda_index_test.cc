// The CUDA kernels' index arithmetic (kernels/cuda_index.h) on the host, the same functions the
// kernels call: every thread and block of a launch is walked and each element must be visited
// exactly once. The float4 walk at every n up to 2049 and at sizes where the grid-stride loop
// wraps; the split reductions at BatchNorm shapes of the models (ResNet-50's at batch 32
// included), odd planes, planes below and above a block, a single image and a single element;
// the split count's rule; an element's channel in 32 and 64 bits.
#include "nnperf/kernels/cuda_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace nnperf::cuda_kernels::detail {
namespace {

// How often each of n floats is touched by the float4 walk of a launch of blocks_for_groups(n)
// blocks; an element touched twice or by group and tail both counts twice.
std::vector<uint8_t> groups_of_four_visits(int64_t n) {
  std::vector<uint8_t> seen(static_cast<std::size_t>(n), 0);
  const int64_t threads = int64_t{blocks_for_groups(n)} * kBlock;
  for (int64_t t = 0; t < threads; ++t) {
    walk_groups_of_four(
        n, t, threads,
        [&](int64_t g) {
          for (int64_t k = 4 * g; k < 4 * g + 4; ++k) ++seen[static_cast<std::size_t>(k)];
        },
        [&](int64_t k) { ++seen[static_cast<std::size_t>(k)]; });
  }
  return seen;
}

int64_t first_not_once(const std::vector<uint8_t>& seen) {
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != 1) return static_cast<int64_t>(i);
  return -1;
}

TEST(CudaIndex, GroupsOfFourVisitEveryElementOnce) {
  for (int64_t n = 0; n <= 2049; ++n)
    ASSERT_EQ(first_not_once(groups_of_four_visits(n)), -1) << "n = " << n;
  // Past kMaxBlocks * kBlock groups the grid is capped and the loop wraps: the first threads do
  // two groups; tails of 0 to 3.
  const int64_t wrap = 4 * kMaxBlocks * kBlock;
  for (const int64_t n : {wrap - 1, wrap, wrap + 4 * 1000 + 3, 2 * wrap + 2})
    ASSERT_EQ(first_not_once(groups_of_four_visits(n)), -1) << "n = " << n;
}

TEST(CudaIndex, GridsCoverWithoutEmptyOrOversizedLaunches) {
  EXPECT_EQ(blocks_for(0), 1u);
  EXPECT_EQ(blocks_for(1), 1u);
  EXPECT_EQ(blocks_for(kBlock), 1u);
  EXPECT_EQ(blocks_for(kBlock + 1), 2u);
  EXPECT_EQ(blocks_for(int64_t{1} << 40), static_cast<unsigned>(kMaxBlocks));
  EXPECT_EQ(blocks_for_groups(3), 1u);
  EXPECT_EQ(blocks_for_groups(4 * kBlock + 4), 2u);
}

// Runs every split's kBlock threads of every channel of s and checks that each element of the
// tensor is visited once, by a thread of its own channel.
void expect_splits_visit_once(const BatchNormShape& s) {
  const int splits = bn_splits(s);
  std::vector<uint8_t> seen(static_cast<std::size_t>(s.mb * s.channels * s.plane), 0);
  bool wrong_channel = false;
  for (int64_t c = 0; c < s.channels; ++c) {
    for (int64_t split = 0; split < splits; ++split) {
      for (int64_t t = 0; t < kBlock; ++t) {
        walk_split(s, c, splits, split, t, [&](int64_t e) {
          ++seen[static_cast<std::size_t>(e)];
          wrong_channel |= channel_of<int64_t>(e, s.plane, s.channels) != c;
        });
      }
    }
  }
  EXPECT_FALSE(wrong_channel) << s.mb << "x" << s.channels << "x" << s.plane;
  EXPECT_EQ(first_not_once(seen), -1)
      << s.mb << "x" << s.channels << "x" << s.plane << ", splits " << splits;
}

TEST(CudaIndex, SplitReductionsVisitEveryElementOnce) {
  const BatchNormShape shapes[] = {
      {32, 64, 56 * 56},  // ResNet-50 layer1 at batch 32: 16 splits of 6272 per channel
      {32, 2048, 7 * 7},  // its last block: one split per channel
      {8, 3, 4099},       // an odd plane above a block, few channels: many splits
      {41, 3, 50},        // a plane below a block: a thread's step crosses images
      {600, 2, 1},        // one value per image: the step is kBlock images
      {1, 5, 255},        // one image, a plane one short of a block
      {3, 1, 256},        // a plane exactly a block
      {2, 7, 257},       {1, 1, 1}, {1, 4, 4 * kBlock * 64 + 13},
  };
  for (const BatchNormShape& s : shapes) expect_splits_visit_once(s);
}

TEST(CudaIndex, SplitCountFollowsItsRule) {
  EXPECT_EQ(bn_splits({32, 64, 56 * 56}), 16);  // 1024 blocks over 64 channels
  EXPECT_EQ(bn_splits({32, 2048, 49}), 1);
  EXPECT_EQ(bn_splits({1, 1, 1}), 1);
  EXPECT_EQ(bn_splits({1, 1, 4 * kBlock * 1000}), kMaxSplits);
  EXPECT_EQ(bn_splits({1, 1, 4 * kBlock * 5 + 1}), 5);  // four elements per thread at least
  EXPECT_EQ(bn_splits({1, 0, 10}), 1);
  for (int64_t channels = 1; channels <= 4096; channels *= 4) {
    for (int64_t count = 1; count <= (int64_t{1} << 22); count *= 8) {
      const int splits = bn_splits({1, channels, count});
      ASSERT_GE(splits, 1);
      ASSERT_LE(splits, kMaxSplits);
      if (splits > 1) {
        EXPECT_GE(count, splits * 4 * kBlock) << channels << " " << count;
        EXPECT_LE(splits * channels, kReductionBlocks + channels) << channels << " " << count;
      }
    }
  }
}

TEST(CudaIndex, ChannelOfAnElementAndOfAGroupOfFour) {
  EXPECT_EQ(channel_of<int64_t>(0, 49, 3), 0);
  EXPECT_EQ(channel_of<int64_t>(49, 49, 3), 1);
  EXPECT_EQ(channel_of<int64_t>(3 * 49, 49, 3), 0);  // the next image's first channel
  // Near the 32-bit path's limit (launch_per_element takes it below 2^31 elements).
  const int64_t plane = 12544, channels = 96;
  for (int64_t i = (int64_t{1} << 31) - 100000; i < (int64_t{1} << 31); i += 997) {
    ASSERT_EQ(channel_of<uint32_t>(static_cast<uint32_t>(i), plane, channels),
              channel_of<int64_t>(i, plane, channels));
  }
  // The float4 affine map's channel per group equals each of its four elements' channel.
  for (const int64_t p : {4, 8, 12, 3136}) {
    for (int64_t g = 0; g < 3 * 5 * p / 4; ++g) {
      for (int64_t k = 0; k < 4; ++k)
        ASSERT_EQ(channel_of<int64_t>(g, p / 4, 5), channel_of<int64_t>(4 * g + k, p, 5));
    }
  }
}

}  // namespace
}  // namespace nnperf::cuda_kernels::detail
