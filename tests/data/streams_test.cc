// The random streams the PyTorch peer replays (bench/peers/nnperf_format.py) pinned to a golden
// file: Rng's raw outputs and bounded integers, epoch orders and crop + flip draws as nnperf
// computes them. The Python port is checked against the same file (ctest
// peers.nnperf_format_streams), so a change on either side fails one of the two tests. After an
// intended change of the streams, NNPERF_UPDATE_GOLDEN=1 rewrites the file from this code.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/data/dataset.h"
#include "nnperf/data/transform.h"

namespace nnperf {
namespace {

const std::string kGolden = std::string(NNPERF_TEST_DATA_DIR) + "/streams/golden.json";

nlohmann::json compute() {
  nlohmann::json g;
  const std::vector<uint64_t> bounds = {1, 2, 3, 9, 10, 60000, (uint64_t{1} << 40) + 7,
                                        std::numeric_limits<uint64_t>::max()};
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{43}, ~uint64_t{0}}) {
    Rng r(seed);
    nlohmann::json raw = nlohmann::json::array();
    for (int i = 0; i < 5; ++i) raw.push_back(std::to_string(r.next_u64()));  // > 2^53
    Rng b(seed);
    nlohmann::json below = nlohmann::json::array(), below_n = nlohmann::json::array();
    for (uint64_t n : bounds) {
      below_n.push_back(n);
      below.push_back(b.below(n));
    }
    g["rng"].push_back({{"seed", std::to_string(seed)}, {"next_u64", raw}, {"below_n", below_n},
                        {"below", below}});
  }
  for (const auto& [n, seed, epoch] : std::vector<std::tuple<int64_t, uint64_t, int64_t>>{
           {10, 43, 0}, {10, 43, 4}, {37, 2, 1}, {1, 5, 0}, {2, 7, 3}}) {
    g["orders"].push_back({{"n", n}, {"seed", seed}, {"epoch", epoch},
                           {"order", shuffled_order(n, seed, epoch, true)}});
  }
  for (int pad : {4, 2, 0}) {
    for (int64_t epoch : {0, 3}) {
      for (int64_t pos : {0, 1, 2, 127, 128, 59999}) {
        const SampleDraw d = draw_sample(AugmentOptions{true, pad, true}, 43, epoch, pos);
        g["draws"].push_back({{"seed", 43}, {"epoch", epoch}, {"position", pos}, {"pad", pad},
                              {"dy", d.dy}, {"dx", d.dx}, {"flip", d.flip}});
      }
    }
  }
  return g;
}

TEST(Streams, MatchTheGoldenFileThePeerReplays) {
  const nlohmann::json now = compute();
  if (const char* u = std::getenv("NNPERF_UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
    std::ofstream(kGolden) << now.dump(1) << "\n";
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << kGolden;
  const nlohmann::json golden = nlohmann::json::parse(in);
  ASSERT_EQ(golden.size(), now.size());
  for (const char* part : {"rng", "orders", "draws"}) {
    ASSERT_EQ(golden.at(part).size(), now.at(part).size()) << part;
    for (std::size_t i = 0; i < now.at(part).size(); ++i) {
      EXPECT_EQ(golden.at(part)[i], now.at(part)[i]) << part << " case " << i;
    }
  }
  // The draws of one file differ among themselves (a constant draw would pass trivially).
  std::set<std::string> distinct;
  for (const auto& d : now.at("draws")) {
    if (d.at("pad") == 4) distinct.insert(d.at("dy").dump() + d.at("dx").dump() + d.at("flip").dump());
  }
  EXPECT_GT(distinct.size(), 6u);
}

}  // namespace
}  // namespace nnperf
