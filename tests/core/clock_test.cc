// core/clock.h's alternating timing: the order pieces run in per round (round_order) and the host
// timer that follows it.
#include "nnperf/core/clock.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace nnperf {
namespace {

// Every round a permutation of 0..n-1, round 0 in index order, the same orders on every call;
// over 60 rounds of 5 pieces each piece runs first, last, and after at least three different
// pieces (a fixed order has one predecessor per piece).
TEST(RoundOrder, EachRoundIsAPermutationAndPredecessorsVary) {
  for (const int n : {0, 1, 2, 5, 17}) {
    EXPECT_EQ(round_order(n, 0).size(), static_cast<std::size_t>(n));
    for (int r = 0; r < 60; ++r) {
      std::vector<int> order = round_order(n, r);
      EXPECT_EQ(order, round_order(n, r)) << n << " " << r;
      if (r == 0) {
        for (int i = 0; i < n; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
      }
      std::sort(order.begin(), order.end());
      for (int i = 0; i < n; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i) << n << " " << r;
    }
  }
  const int n = 5;
  std::vector<std::set<int>> before(n);
  std::set<int> first, last;
  for (int r = 0; r < 60; ++r) {
    const std::vector<int> order = round_order(n, r);
    first.insert(order.front());
    last.insert(order.back());
    for (std::size_t k = 1; k < order.size(); ++k) {
      before[static_cast<std::size_t>(order[k])].insert(order[k - 1]);
    }
  }
  EXPECT_EQ(first.size(), 5u);
  EXPECT_EQ(last.size(), 5u);
  for (int i = 0; i < n; ++i) EXPECT_GE(before[static_cast<std::size_t>(i)].size(), 3u) << i;
}

// The host timer runs every piece once per round, in round_order's order, and returns one figure
// per piece and timed round.
TEST(RoundOrder, TheHostTimerRunsEachRoundInItsOrder) {
  std::vector<int> ran;
  int rounds_begun = 0;
  const std::vector<std::vector<double>> ms = time_alternately_on_host(
      4, [&](int i) { ran.push_back(i); }, 2, 3, [&] { ++rounds_begun; });
  EXPECT_EQ(rounds_begun, 5);
  ASSERT_EQ(ran.size(), 20u);
  for (int r = 0; r < 5; ++r) {
    const std::vector<int> got(ran.begin() + 4 * r, ran.begin() + 4 * (r + 1));
    EXPECT_EQ(got, round_order(4, r)) << r;
  }
  ASSERT_EQ(ms.size(), 4u);
  for (const auto& piece : ms) {
    ASSERT_EQ(piece.size(), 3u);
    for (const double t : piece) EXPECT_GE(t, 0.0);
  }
}

}  // namespace
}  // namespace nnperf
