// Convolution algorithms against the float64 reference: every registry row (so a new row is
// tested with no edit here) x a list of shapes around the tiles of the algorithms (direct: 6
// output channels x 8/16/32 outputs; implicit GEMM: 6 x 16 with k blocks of 256; Winograd: 4x4
// outputs; FFT tiles), odd and prime sizes, padding 0/1/2, stride 1/2, dilation, groups incl.
// depthwise and channel multipliers, 1x1..7x7, batch 1/2/3, and real VGG16 / ResNet-50 /
// MobileNetV2 layers at reduced spatial size. Bound per element (STYLE.md section 2):
// |y - ref| <= c_algo * K * eps * sum|a*b| + eps * |ref|, K = icg*kh*kw, eps = 2^-23.
#include "nnperf/kernels/conv/conv.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conv_check.h"
#include "nnperf/core/error.h"
#include "nnperf/core/workspace.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::kEps;

// Shapes as benchdnn strings (the same strings a failure prints and `nnperf` accepts).
const char* const kShapes[] = {
    // tiny and degenerate
    "mb1ic1ih1oc1kh1", "mb1ic2ih5oc3kh5", "mb1ic2ih3oc2kh1ph1", "mb1ic3ih4oc2kh3ph2",
    // around the register tiles: channels 5/6/7/12/13, widths 7..33
    "mb1ic3ih7oc5kh3ph1", "mb1ic4ih8oc6kh3ph1", "mb1ic5ih9oc7kh3ph1", "mb3ic8ih16oc12kh3ph1",
    "mb1ic7ih17oc13kh3", "mb1ic6ih15iw31oc8kh3ph1", "mb1ic4ih6iw33oc6kh3ph1",
    "mb1ic16ih13iw19oc16kh3ph1", "mb1ic3ih31oc11kh3ph1",
    // Winograd-sized outputs (4x4 tiles: 3, 4, 5, 8, 12, 13)
    "mb1ic4ih3oc4kh3ph1", "mb1ic4ih4oc4kh3ph1", "mb1ic4ih5oc4kh3ph1", "mb1ic9ih8oc10kh3ph1",
    "mb2ic16ih12oc16kh3ph1", "mb1ic8ih15oc8kh3",
    // padding 2, 5x5 and 7x7, strides, dilation, mixed height/width terms
    "mb1ic6ih33oc8kh3ph2", "mb1ic3ih23oc8kh5ph2", "mb1ic3ih29oc4kh7sh2ph3",
    "mb1ic8ih15oc8kh3sh2ph1", "mb1ic8ih12oc8kh3ph2dh2", "mb1ic4ih11iw13oc6kh3kw5sw2ph1pw2dw2",
    "mb1ic5ih6iw40oc7kh3ph1", "mb1ic3ih40iw5oc4kh3ph1", "mb1ic4ih17oc5kh3sh3ph1",
    // 1x1: plain GEMM, stride 2, reduction longer than a k block (256); a batch of 7x7 maps
    // that gemm puts two images to a GEMM (the last chunk one image)
    "mb2ic16ih14oc24kh1", "mb1ic24ih14oc16kh1sh2", "mb1ic300ih6oc10kh1", "mb1ic40ih7oc9kh3ph1",
    "mb5ic12ih7oc20kh1",
    // output maps of 16k + 1..4 pixels (the implicit GEMMs' channel-vectorised last panel) with
    // reductions that are not multiples of its 4-way unroll
    "mb1ic37ih5iw10oc7kh1", "mb1ic19ih5iw7oc11kh1", "mb2ic6ih3iw6oc13kh1", "mb1ic300ih3iw11oc8kh1",
    // stride 2 across the width only, rows of 33-37 columns: implicit_precomp_gemm's vector
    // deinterleave of each padded row's phases (16-float loads inside the row, element-wise
    // ends), with padding 0, 2 and an even kernel width
    "mb2ic5ih9iw37oc6kh3kw4sw2pw2", "mb1ic3ih8iw35oc5kh1sw2", "mb1ic4ih5iw33oc3kh3sw2",
    // groups, depthwise, channel multiplier
    "g2mb1ic8ih10oc6kh3ph1", "g4mb2ic8ih9oc12kh3ph1", "g16mb1ic16ih15oc16kh3ph1",
    "g12mb1ic12ih20oc12kh3sh2ph1", "g8mb1ic8ih9oc16kh3ph1", "g6mb1ic6ih13oc6kh5ph2",
    // real layers at reduced spatial size (VGG16, ResNet-50, MobileNetV2)
    "mb1ic3ih32oc64kh3ph1", "mb1ic64ih16oc64kh3ph1", "mb1ic256ih8oc256kh3ph1",
    "mb1ic3ih32oc64kh7sh2ph3", "mb1ic256ih14oc64kh1", "mb1ic64ih14oc256kh1",
    "mb1ic256ih14oc512kh1sh2", "mb1ic128ih14oc128kh3sh2ph1", "mb1ic128ih7oc128kh3ph1",
    "g96mb1ic96ih28oc96kh3sh2ph1", "g144mb1ic144ih14oc144kh3ph1", "mb1ic32ih28oc16kh1",
    "mb1ic96ih14oc24kh1", "mb3ic32ih10oc48kh3ph1",
    // Output rows of 25-31 columns after whole 32-column tiles: the direct kernel's 4-vector tail.
    "g4mb1ic4ih28oc4kh3ph1", "mb1ic4ih56oc2kh3sh2ph1", "g144mb1ic144ih56oc144kh3sh2ph1",
    // Batches of small maps: gemm gathers 16 images' patches side by side (73728 floats) and
    // copies the 65536 outputs back per image, split between threads on the 2-thread runs.
    "mb16ic32ih4oc256kh3ph1", "mb17ic32ih4oc256kh3ph1",
    // gemm_live_taps: a 1x1 map with one job (fewer than 48 output channels), so that on 2
    // threads its GEMM takes both; a 2x2 map at a batch it serves, split by position.
    "mb64ic512ih1oc48kh3ph1", "mb24ic40ih2oc72kh3ph1"};

struct Data {
  std::string shape;  // as listed in kShapes (the test name)
  ConvProblem p;
  uint64_t seed;
  std::vector<float> src, wei, bias;
  std::vector<double> ref, abs_sum;
};

// Inputs and reference per shape, computed once and shared by every algorithm. Shapes at even
// positions get a bias, odd ones none.
const Data& data_for(int index) {
  static std::map<int, std::unique_ptr<Data>> cache;
  auto& slot = cache[index];
  if (!slot) {
    auto d = std::make_unique<Data>();
    d->shape = kShapes[index];
    d->p = parse_conv_problem(d->shape);
    d->seed = 7919 * static_cast<uint64_t>(index) + 17;
    d->src = test::random_vector(d->p.src_numel(), d->seed);
    d->wei = test::random_vector(d->p.wei_numel(), d->seed + 1);
    if (index % 2 == 0) d->bias = test::random_vector(d->p.oc, d->seed + 2);
    d->ref.resize(static_cast<std::size_t>(d->p.dst_numel()));
    d->abs_sum.resize(d->ref.size());
    conv2d_reference(d->p, d->src.data(), d->wei.data(), d->bias.empty() ? nullptr : d->bias.data(),
                     d->ref.data(), d->abs_sum.data());
    slot = std::move(d);
  }
  return *slot;
}

// Worst |y - ref| / bound per algorithm, printed at the end: the evidence for the tolerance
// factors stated in the algorithm files.
std::map<std::string, double>& worst_ratios() {
  static std::map<std::string, double> worst;
  return worst;
}

// Problems each algorithm declined, with one reason each, printed at the end.
std::map<std::string, std::pair<int, std::string>>& declined() {
  static std::map<std::string, std::pair<int, std::string>> skips;
  return skips;
}

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [name, skip] : declined()) {
      std::printf("[conv] %s declined %d shapes, e.g. \"%s\"\n", name.c_str(), skip.first,
                  skip.second.c_str());
    }
    std::string line;
    for (const auto& [label, ratio] : worst_ratios())
      line += fmt::format(" {}={:.4f}", label, ratio);
    if (!line.empty())
      std::printf("[conv] worst |y-ref|/(K*eps*sum|ab| + eps*|ref|):%s\n", line.c_str());
  }
};
const auto* const kReportWorst = ::testing::AddGlobalTestEnvironment(new ReportWorst);

std::vector<float> run_checked(const ConvAlgorithm& algo, const Data& d, int threads,
                               const std::string& where) {
  return test::conv_run_checked(algo, d.p, d.src, d.wei, d.bias, threads, where);
}

std::string where(const ConvAlgorithm& algo, const Data& d, int threads) {
  return fmt::format(
      "{} on {} threads={} seed={} (repro: test_kernels "
      "--gtest_filter='Registry/ConvAlgorithmTest.MatchesFloat64Reference/{}_{}')",
      algo.name, d.p.str(), threads, d.seed, algo.name, d.shape);
}

class ConvAlgorithmTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ConvAlgorithmTest, MatchesFloat64Reference) {
  const auto& [name, index] = GetParam();
  const ConvAlgorithm& algo = find_conv(name);
  const Data& d = data_for(index);
  const std::string reason = algo.why_not(d.p);
  if (!reason.empty()) {
    // A declined problem must say why in words (it is shown to users as the skip reason).
    EXPECT_GE(reason.size(), 8u) << name << " on " << d.p.str() << ": reason '" << reason << "'";
    auto& [count, example] = declined()[name];
    if (count++ == 0) example = d.p.str() + ": " + reason;
    // The check for this pair is the decline contract above (a reason in words), not a skip.
    RecordProperty("declined", reason);
    return;
  }
  const auto nonzero = std::count_if(d.ref.begin(), d.ref.end(), [](double v) { return v != 0.0; });
  ASSERT_GE(static_cast<double>(nonzero), 0.75 * static_cast<double>(d.ref.size()))
      << d.p.str() << ": reference is mostly zeros, the test would prove nothing";
  const double c_algo = algo.tolerance_factor;
  double& worst = worst_ratios()[name];
  // Odd shapes run one thread, even ones two (every algorithm meets both on every shape kind).
  const int threads = 1 + index % 2;
  const std::string at = where(algo, d, threads);
  const std::vector<float> y = run_checked(algo, d, threads, at);
  const int64_t plane = d.p.oh() * d.p.ow();
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double r = d.ref[i];
    const double bound = test::conv_bound(c_algo, d.p, d.abs_sum[i], r);
    const double err = std::fabs(static_cast<double>(y[i]) - r);
    const int64_t e = static_cast<int64_t>(i);
    ASSERT_TRUE(err <= bound) << at << ": dst[n" << e / (d.p.oc * plane) << " oc"
                              << e / plane % d.p.oc << " y" << e % plane / d.p.ow() << " x"
                              << e % d.p.ow() << "] = " << y[i] << ", reference " << r
                              << ", |error| " << err << " > bound " << bound;
    if (bound > 0) worst = std::max(worst, err / bound);
  }
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const ConvAlgorithm& algo : conv_algorithms()) names.emplace_back(algo.name);
  return names;
}

std::vector<int> shape_indices() {
  std::vector<int> v;
  for (int i = 0; i < static_cast<int>(std::size(kShapes)); ++i) v.push_back(i);
  return v;
}

std::string test_name(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  return std::get<0>(info.param) + "_" + kShapes[std::get<1>(info.param)];
}

INSTANTIATE_TEST_SUITE_P(Registry, ConvAlgorithmTest,
                         ::testing::Combine(::testing::ValuesIn(algorithm_names()),
                                            ::testing::ValuesIn(shape_indices())),
                         test_name);

// A declined pair above passes on its reason alone, so a why_not that wrongly declined every
// shape would leave a row unchecked: each row must serve its share of kShapes. The rows that serve
// any problem serve them all; the others (3x3 only, stride 1 only, groups 1) at least the counts
// below, which are what the list gives them today.
TEST(ConvAlgorithms, EachRowServesItsShareOfTheShapes) {
  const std::map<std::string, int> at_least = {{"winograd", 27},
                                               {"winograd_nonfused", 27},
                                               {"fft", 49},
                                               {"fft_tiling", 49},
                                               {"gemm_live_taps", 57}};
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    int served = 0;
    for (const char* shape : kShapes) served += algo.why_not(parse_conv_problem(shape)).empty();
    const auto want = at_least.find(algo.name);
    const int need = want != at_least.end() ? want->second : static_cast<int>(std::size(kShapes));
    std::printf("[conv] %s serves %d of %zu shapes\n", algo.name, served, std::size(kShapes));
    EXPECT_GE(served, need) << algo.name;
  }
}

// All algorithms that serve a shape agree with each other within the sum of their bounds (the
// reference check implies it; this catches a shared mistake, e.g. in a common helper, only if
// the reference differs, so it also compares against `direct`, which shares no code with the
// GEMM-based algorithms beyond the registry).
TEST(ConvAlgorithms, AgreeWithEachOther) {
  for (int index : {3, 12, 24, 35, 47}) {
    const Data& d = data_for(index);
    const double k = static_cast<double>(d.p.icg() * d.p.kh * d.p.kw);
    std::vector<std::pair<const ConvAlgorithm*, std::vector<float>>> results;
    for (const ConvAlgorithm& algo : conv_algorithms()) {
      if (!algo.why_not(d.p).empty()) continue;
      results.emplace_back(&algo, run_checked(algo, d, 2, where(algo, d, 2)));
    }
    ASSERT_GE(results.size(), 2u) << d.p.str();
    const auto& [first, y0] = results.front();
    for (std::size_t a = 1; a < results.size(); ++a) {
      const auto& [algo, y] = results[a];
      const double c = first->tolerance_factor + algo->tolerance_factor;
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double bound = c * k * kEps * d.abs_sum[i] + 2 * kEps * std::fabs(d.ref[i]);
        ASSERT_LE(std::fabs(static_cast<double>(y[i]) - y0[i]), bound)
            << algo->name << " vs " << first->name << " on " << d.p.str() << " at " << i;
      }
    }
  }
}

TEST(ConvRegistry, NamesAreUniqueAndRowsComplete) {
  std::vector<std::string> names;
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    EXPECT_NE(std::string(algo.description), "") << algo.name;
    EXPECT_NE(algo.why_not, nullptr) << algo.name;
    EXPECT_NE(algo.workspace_bytes, nullptr) << algo.name;
    EXPECT_NE(algo.run, nullptr) << algo.name;
    EXPECT_NE(algo.cost, nullptr) << algo.name;
    EXPECT_EQ(algo.pack_weights == nullptr, algo.packed_weights_floats == nullptr) << algo.name;
    EXPECT_GE(algo.tolerance_factor, 1.0) << algo.name;
    EXPECT_EQ(std::count(names.begin(), names.end(), algo.name), 0) << algo.name;
    names.emplace_back(algo.name);
  }
  // The GEMM family comes first, in this order (the other rows follow).
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "direct");
  EXPECT_EQ(names[1], "gemm");
  EXPECT_EQ(names[2], "implicit_gemm");
  EXPECT_EQ(names[3], "implicit_precomp_gemm");
}

TEST(ConvRegistry, FindAcceptsSpacesAndCase) {
  EXPECT_STREQ(find_conv("implicit gemm").name, "implicit_gemm");
  EXPECT_STREQ(find_conv("Implicit Precomp GEMM").name, "implicit_precomp_gemm");
  EXPECT_STREQ(find_conv("DIRECT").name, "direct");
  try {
    find_conv("winograd_fast");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("winograd_fast"), std::string::npos) << msg;
    for (const ConvAlgorithm& algo : conv_algorithms()) {
      EXPECT_NE(msg.find(algo.name), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(conv_algorithm_names().substr(0, 6), "direct");
}

TEST(ConvRegistry, CostIsPositiveAndGrowsWithWork) {
  const ConvProblem small = parse_conv_problem("mb1ic64ih28oc64kh3ph1");
  const ConvProblem big = parse_conv_problem("mb1ic64ih56oc64kh3ph1");
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    if (!algo.why_not(small).empty() || !algo.why_not(big).empty()) continue;
    const double a = algo.cost(small, 1), b = algo.cost(big, 1);
    EXPECT_GT(a, 0.0) << algo.name;
    EXPECT_GT(b, a) << algo.name;
    EXPECT_TRUE(std::isfinite(b)) << algo.name;
  }
}

// conv_run sizes its own buffers; it refuses invalid problems and problems the algorithm
// declines, with the reason.
TEST(ConvRun, RunsAndRefusesWithReasons) {
  const Data& d = data_for(4);
  std::vector<float> y(static_cast<std::size_t>(d.p.dst_numel()));
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    if (!algo.why_not(d.p).empty()) continue;
    std::fill(y.begin(), y.end(), std::numeric_limits<float>::quiet_NaN());
    conv_run(algo, d.p, d.src.data(), d.wei.data(), d.bias.data(), y.data(), 1);
    for (std::size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], d.ref[i], 1e-4 * (1 + d.abs_sum[i])) << algo.name << " at " << i;
    }
  }
  ConvProblem bad = d.p;
  bad.oc = 7;
  bad.g = 2;
  bad.ic = 4;
  EXPECT_THROW(conv_run(find_conv("direct"), bad, d.src.data(), d.wei.data(), nullptr, y.data(), 1),
               UsageError);
  for (const ConvAlgorithm& algo : conv_algorithms()) {
    for (const char* shape : kShapes) {
      const ConvProblem p = parse_conv_problem(shape);
      const std::string reason = algo.why_not(p);
      if (reason.empty()) continue;
      try {
        conv_run(algo, p, nullptr, nullptr, nullptr, nullptr, 1);
        FAIL() << algo.name << " ran " << shape << " although it declines it";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
      }
      break;  // one declined shape per algorithm is enough
    }
  }
}

}  // namespace
}  // namespace nnperf
