// Winograd F(4x4, 3x3) convolutions (fused and non-fused) against the float64 conv2d_reference:
// output sizes around the 4x4 tile (1, 3, 4, 5, 8, 9, 13), padding 0/1/2, batch 1 and 3,
// channels 1, 3, 17, 64, bias on and off, 1 and 2 threads, explicit fused blockings that split
// the tiles and the output channels unevenly, and real VGG16 / ResNet-50 3x3 layers at reduced
// spatial size; each on every SIMD path this CPU has. Bound per output (STYLE.md section 2):
// |y - ref| <= c * K * eps * sum|a*b| + eps * |ref|, K = ic * 9, c = the registry rows' factor
// (set by the error tail at 1-3 input channels) or 1 from 8 input channels on.
// Unsupported problems must name the property that rules them out.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::kEps;

// c_algo of both Winograd rows; the worst ratio measured here is printed at the end. The rows'
// factor is set by the tail at 1-3 input channels (see kConvWinogradTolerance); from 8 channels
// on the worst measured ratio is 0.57 (16.7 M outputs at ic=8), so those shapes are held to 1,
// which would still catch a single dropped term of a 3x3x64 window.
constexpr double kWinogradTolerance = kConvWinogradTolerance;
constexpr int64_t kManyChannels = 8;
constexpr double kManyChannelsTolerance = 1.0;

std::map<std::string, double>& worst_ratios() {
  static std::map<std::string, double> worst;
  return worst;
}

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string line;
    for (const auto& [label, ratio] : worst_ratios()) {
      line += " " + label + "=" + std::to_string(ratio);
    }
    if (!line.empty())
      std::printf("[winograd] worst |y-ref|/(K*eps*sum|a*b|+eps|ref|):%s\n", line.c_str());
  }
};
const auto* const kReportWorst = ::testing::AddGlobalTestEnvironment(new ReportWorst);

struct Inputs {
  std::vector<float> src, wei, bias;
  std::vector<double> ref, abs_sum;
};

Inputs make_inputs(const ConvProblem& p, bool with_bias, uint64_t seed) {
  Inputs in;
  in.src = test::random_vector(p.src_numel(), seed);
  in.wei = test::random_vector(p.wei_numel(), seed + 1);
  if (with_bias) in.bias = test::random_vector(p.oc, seed + 2);
  in.ref.resize(static_cast<std::size_t>(p.dst_numel()));
  in.abs_sum.resize(in.ref.size());
  conv2d_reference(p, in.src.data(), in.wei.data(), with_bias ? in.bias.data() : nullptr,
                   in.ref.data(), in.abs_sum.data());
  return in;
}

enum class Algo { kFused, kNonfused };
const char* name_of(Algo a) { return a == Algo::kFused ? "winograd" : "winograd_nonfused"; }

// Runs one algorithm on one path and checks every output; `blocking` overrides the fused plan.
void check(Algo algo, SimdLevel level, const ConvProblem& p, const Inputs& in, int threads,
           uint64_t seed, const winograd::Blocking* blocking = nullptr) {
  const winograd::Kernels& k = winograd::kernels_for(level);
  const winograd::Geometry g = winograd::make_geometry(p);
  const winograd::Blocking plan =
      blocking != nullptr ? *blocking : winograd::plan_fused(p, threads);
  std::vector<float> packed;
  std::size_t ws_bytes = 0;
  if (algo == Algo::kFused) {
    packed.resize(conv_winograd_packed_floats(p));
    conv_winograd_pack(p, in.wei.data(), packed.data(), 1);
    ws_bytes = winograd::fused_workspace_bytes(g, plan);
    if (blocking == nullptr) {
      ASSERT_EQ(ws_bytes, conv_winograd_workspace_bytes(p, threads));
    }
  } else {
    packed.resize(conv_winograd_nonfused_packed_floats(p));
    conv_winograd_nonfused_pack(p, in.wei.data(), packed.data(), 1);
    ws_bytes = conv_winograd_nonfused_workspace_bytes(p, threads);
  }
  constexpr std::size_t kCanary = 256;
  Workspace ws;
  ws.reserve(ws_bytes + kCanary);
  auto* bytes = static_cast<unsigned char*>(ws.data());
  std::memset(bytes, 0x7F, ws_bytes);  // NaN-like garbage: stages must not read stale data
  std::memset(bytes + ws_bytes, 0xA5, kCanary);
  std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()),
                         std::numeric_limits<float>::quiet_NaN());
  ConvArgs args;
  args.p = &p;
  args.src = in.src.data();
  args.wei = in.wei.data();
  args.packed = packed.data();
  args.bias = in.bias.empty() ? nullptr : in.bias.data();
  args.dst = dst.data();
  args.workspace = ws.data();
  args.threads = threads;
  if (algo == Algo::kFused) {
    winograd::run_fused(k, plan, args);
  } else {
    conv_winograd_nonfused_run_with(k, args);
  }

  const bool many = p.ic >= kManyChannels;
  const double c_algo = many ? kManyChannelsTolerance : kWinogradTolerance;
  const std::string label =
      fmt::format("{}/{}/{}", name_of(algo), to_string(level), many ? "ic>=8" : "ic<8");
  const std::string where =
      fmt::format("{} {} bias={} threads={} blocking={}x{} seed={}", label, p.str(),
                  !in.bias.empty(), threads, plan.block_tiles, plan.oc_chunk, seed);
  for (std::size_t i = 0; i < kCanary; ++i) {
    ASSERT_EQ(bytes[ws_bytes + i], 0xA5) << where << ": wrote past workspace_bytes";
  }
  const auto nonzero =
      std::count_if(in.ref.begin(), in.ref.end(), [](double r) { return r != 0.0; });
  ASSERT_GE(static_cast<double>(nonzero), 0.9 * static_cast<double>(in.ref.size()))
      << where << ": reference is mostly zeros";
  const double k_len = static_cast<double>(p.icg() * p.kh * p.kw);
  double& worst = worst_ratios()[label];
  for (std::size_t i = 0; i < dst.size(); ++i) {
    const double ref = in.ref[i];
    const double scale = k_len * kEps * in.abs_sum[i] + kEps * std::fabs(ref);
    const double err = std::fabs(static_cast<double>(dst[i]) - ref);
    worst = std::max(worst, err / scale);
    ASSERT_LE(err, c_algo * scale)
        << where << ": output " << i << " = " << dst[i] << ", reference " << ref;
  }
}

std::vector<SimdLevel> levels() {
  std::vector<SimdLevel> out = {SimdLevel::kScalar};
  if (cpu_info().simd >= SimdLevel::kAvx2) out.push_back(SimdLevel::kAvx2);
  return out;
}

// Both algorithms on every path, threads alternating 1 / 2 between the paths.
void check_all(const ConvProblem& p, bool with_bias, uint64_t seed) {
  ASSERT_EQ(conv_winograd_why_not(p), "") << p.str();
  ASSERT_EQ(conv_winograd_nonfused_why_not(p), "") << p.str();
  const Inputs in = make_inputs(p, with_bias, seed);
  int threads = 1 + static_cast<int>(seed % 2);
  for (SimdLevel level : levels()) {
    for (Algo algo : {Algo::kFused, Algo::kNonfused}) {
      check(algo, level, p, in, threads, seed);
      threads = 3 - threads;
    }
  }
}

ConvProblem square(int64_t mb, int64_t ic, int64_t ih, int64_t oc, int64_t pad) {
  ConvProblem p;
  p.mb = mb;
  p.ic = ic;
  p.ih = p.iw = ih;
  p.oc = oc;
  p.kh = p.kw = 3;
  p.ph = p.pw = pad;
  return p;
}

TEST(ConvWinograd, OutputSizesAroundTheTileWithEveryPadding) {
  uint64_t seed = 100;
  for (int64_t out : {1, 3, 4, 5, 8, 9, 13}) {
    for (int64_t pad : {0, 1, 2}) {
      const int64_t ih = out + 2 - 2 * pad;
      if (ih < 1) continue;
      check_all(square(1, 3, ih, 5, pad), pad != 1, seed++);
    }
  }
}

// Winograd's rounding error comes from the whole 6x6 input tile, while the bound's sum|a*b|
// covers only an output's own 3x3 window, so the ratio has a tail that only shows with few
// input channels (K = 9) and many outputs: ~1.3 M outputs here (see kConvWinogradTolerance).
TEST(ConvWinograd, ErrorTailWithFewInputChannels) {
  uint64_t seed = 800;
  for (int64_t ic : {1, 2, 3}) {
    const ConvProblem p = square(4, ic, 60, 96, 1);
    const Inputs in = make_inputs(p, ic == 2, seed);
    for (SimdLevel level : levels()) {
      for (Algo algo : {Algo::kFused, Algo::kNonfused}) check(algo, level, p, in, 2, seed);
    }
    ++seed;
  }
}

TEST(ConvWinograd, ChannelCountsAndBatch) {
  uint64_t seed = 200;
  for (int64_t c : {1, 3, 17, 64}) {
    check_all(square(1, c, 9, c, 1), true, seed++);
    check_all(square(3, c, 7, 1 + c / 2, 0), false, seed++);
  }
  check_all(square(3, 17, 11, 33, 1), true, seed++);
}

TEST(ConvWinograd, RectangularInputsAndPadding) {
  ConvProblem p = square(2, 5, 10, 7, 1);
  p.iw = 17;
  p.pw = 2;
  check_all(p, true, 300);
  p.ih = 3;
  p.iw = 29;
  p.ph = 0;
  p.pw = 1;
  check_all(p, false, 301);
}

// Fused blockings that leave a partial last block (not a multiple of the 6-tile micro-kernel)
// and several output-channel chunks with a partial last one; threads on whole blocks and
// threads sharing each block (split_oc).
TEST(ConvWinograd, FusedBlockingsSplitTilesAndChannels) {
  const ConvProblem p = square(2, 19, 13, 40, 1);  // 2 x 4 x 4 = 32 tiles, ocp 48
  const Inputs in = make_inputs(p, true, 400);
  for (SimdLevel level : levels()) {
    for (const winograd::Blocking b :
         {winograd::Blocking{6, 16, 1, false}, winograd::Blocking{12, 32, 2, false},
          winograd::Blocking{30, 16, 2, false}, winograd::Blocking{18, 16, 2, true},
          winograd::Blocking{36, 32, 2, true}}) {
      check(Algo::kFused, level, p, in, b.threads, 400, &b);
    }
  }
}

// Real 3x3 stride-1 layers with their channel counts at reduced spatial size (the full sizes
// are in bench/winograd_bench.cc): VGG16 conv1_2, conv3_2, conv4_2; ResNet-50 res2 (batch 2) and
// res3 3x3s. Odd output sizes leave partial edge tiles.
TEST(ConvWinograd, RealLayersAtReducedSize) {
  uint64_t seed = 500;
  for (const char* desc :
       {"mb1ic64ih20oc64kh3ph1", "mb1ic256ih7oc256kh3ph1", "mb1ic512ih5oc512kh3ph1",
        "mb2ic64ih14oc64kh3ph1", "mb1ic128ih9oc128kh3ph1"}) {
    check_all(parse_conv_problem(desc), true, seed++);
  }
}

// Through the registry as layers use it (conv_run packs and sizes the workspace); the fused
// algorithm computes every tile the same way however the tiles are split, so 1 and 2 threads
// agree bit for bit.
TEST(ConvWinograd, RegistryRowsRunAndThreadsAgree) {
  const ConvProblem p = parse_conv_problem("mb3ic24ih23oc40kh3ph1");
  const Inputs in = make_inputs(p, true, 700);
  for (const char* name : {"winograd", "winograd_nonfused"}) {
    const ConvAlgorithm& algo = find_conv(name);
    EXPECT_EQ(algo.tolerance_factor, kWinogradTolerance);
    std::vector<float> one(static_cast<std::size_t>(p.dst_numel())), two(one.size());
    conv_run(algo, p, in.src.data(), in.wei.data(), in.bias.data(), one.data(), 1);
    conv_run(algo, p, in.src.data(), in.wei.data(), in.bias.data(), two.data(), 2);
    const double k_len = static_cast<double>(p.icg() * 9);
    for (std::size_t i = 0; i < one.size(); ++i) {
      const double bound =
          kManyChannelsTolerance * k_len * kEps * in.abs_sum[i] + kEps * std::fabs(in.ref[i]);
      ASSERT_LE(std::fabs(one[i] - in.ref[i]), bound) << name << " " << p.str() << " output " << i;
      ASSERT_LE(std::fabs(two[i] - in.ref[i]), bound)
          << name << " " << p.str() << " output " << i << ", 2 threads";
      if (std::string(name) == "winograd") {  // the fused row splits no sum between threads
        ASSERT_EQ(one[i], two[i]) << p.str() << " output " << i;
      }
    }
  }
}

TEST(ConvWinograd, UnsupportedProblemsNameTheReason) {
  ConvProblem p = square(1, 8, 16, 8, 1);
  struct Case {
    void (*edit)(ConvProblem&);
    const char* reason;
  };
  const Case cases[] = {
      {[](ConvProblem& q) { q.kh = q.kw = 7; }, "7x7 kernel not supported (3x3 only)"},
      {[](ConvProblem& q) { q.kh = q.kw = 1; }, "1x1 kernel not supported (3x3 only)"},
      {[](ConvProblem& q) { q.kw = 5; }, "3x5 kernel not supported (3x3 only)"},
      {[](ConvProblem& q) { q.sh = q.sw = 2; }, "stride 2 not supported"},
      {[](ConvProblem& q) { q.sw = 2; }, "stride 1x2 not supported"},
      {[](ConvProblem& q) { q.dh = q.dw = 2; }, "dilation 2 not supported"},
      {[](ConvProblem& q) { q.g = 2; }, "groups (g2) not supported"},
      {[](ConvProblem& q) { q.g = q.ic = q.oc = 8; }, "groups (g8) not supported"},
  };
  for (const Case& c : cases) {
    ConvProblem q = p;
    c.edit(q);
    const std::string fused = conv_winograd_why_not(q);
    const std::string nonfused = conv_winograd_nonfused_why_not(q);
    EXPECT_EQ(fused.rfind("winograd: ", 0), 0u) << fused;
    EXPECT_NE(fused.find(c.reason), std::string::npos) << q.str() << " -> " << fused;
    EXPECT_EQ(nonfused.rfind("winograd_nonfused: ", 0), 0u) << nonfused;
    EXPECT_NE(nonfused.find(c.reason), std::string::npos) << q.str() << " -> " << nonfused;
  }
  ConvProblem bad = p;
  bad.ic = 0;
  EXPECT_NE(conv_winograd_why_not(bad).find("ic must be at least 1"), std::string::npos);
  EXPECT_EQ(conv_winograd_why_not(p), "");
}

// The weight transform alone: G g G^T of 16 filters at once against the matrices written out in
// double, each lane within float rounding of its own filter's product.
TEST(ConvWinograd, FilterTransformMatchesTheMatrices) {
  const std::vector<float> all = test::random_vector(9 * winograd::kFilterLanes, 600);
  double taps[9][winograd::kFilterLanes];
  for (int64_t l = 0; l < winograd::kFilterLanes; ++l) {
    for (int t = 0; t < 9; ++t) taps[t][l] = all[static_cast<std::size_t>(l * 9 + t)];
  }
  float lanes[36][winograd::kFilterLanes];
  winograd::transform_filters(taps, lanes);
  const double G[6][3] = {{0.25, 0, 0},
                          {-1 / 6.0, -1 / 6.0, -1 / 6.0},
                          {-1 / 6.0, 1 / 6.0, -1 / 6.0},
                          {1 / 24.0, 1 / 12.0, 1 / 6.0},
                          {1 / 24.0, -1 / 12.0, 1 / 6.0},
                          {0, 0, 1}};
  for (int64_t l = 0; l < winograd::kFilterLanes; ++l) {
    const float* g = all.data() + l * 9;
    for (int i = 0; i < 6; ++i) {
      for (int j = 0; j < 6; ++j) {
        double want = 0.0;
        for (int a = 0; a < 3; ++a) {
          for (int b = 0; b < 3; ++b) want += G[i][a] * g[a * 3 + b] * G[j][b];
        }
        // float32 rounding of a double result: half an ulp
        EXPECT_NEAR(lanes[i * 6 + j][l], want, 0x1.0p-24 * std::abs(want) + 1e-30)
            << "lane " << l << " at " << i << "," << j;
      }
    }
  }
}

// The AVX2 copy of the weight transform (winograd_filter_avx2.cc, contraction off) gives exactly
// the portable copy's floats, on random filters and on ones with zeros, negative zeros and a
// large range; the packs of both layouts go through the active path's copy.
TEST(ConvWinograd, FilterTransformIsTheSameOnEveryPath) {
  if (cpu_info().simd < SimdLevel::kAvx2) GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  for (uint64_t seed : {601, 602, 603}) {
    std::vector<float> all = test::random_vector(9 * winograd::kFilterLanes, seed, -3.0f, 3.0f);
    if (seed == 602) {
      for (std::size_t i = 0; i < all.size(); i += 3) all[i] = i % 2 ? -0.0f : 0.0f;
    }
    if (seed == 603) {
      for (std::size_t i = 0; i < all.size(); ++i) all[i] *= std::ldexp(1.0f, int(i % 40) - 20);
    }
    double taps[9][winograd::kFilterLanes];
    for (int64_t l = 0; l < winograd::kFilterLanes; ++l) {
      for (int t = 0; t < 9; ++t) taps[t][l] = all[static_cast<std::size_t>(l * 9 + t)];
    }
    float portable[36][winograd::kFilterLanes], avx2[36][winograd::kFilterLanes];
    winograd::kKernelsPortable.transform_filters(taps, portable);
    winograd::kKernelsAvx2.transform_filters(taps, avx2);
    EXPECT_EQ(std::memcmp(portable, avx2, sizeof(portable)), 0) << "seed " << seed;
  }
}

// Both packs split their work between threads (the fused one its panel rows, the non-fused one
// its input channels): the same floats on 1, 2 and 3 threads, with padded channels (oc 70 and
// ic 45 round up to 80 and 48) and enough work to be split.
TEST(ConvWinograd, PackIsTheSameOnAnyThreadCount) {
  const ConvProblem p = parse_conv_problem("mb1ic45ih6oc70kh3ph1");
  std::vector<float> wei(static_cast<std::size_t>(p.wei_numel()));
  Rng rng(91);
  rng.fill_uniform(std::span<float>(wei.data(), wei.size()), -2.0f, 2.0f);
  for (const Algo algo : {Algo::kFused, Algo::kNonfused}) {
    const auto pack = algo == Algo::kFused ? conv_winograd_pack : conv_winograd_nonfused_pack;
    std::vector<float> one(algo == Algo::kFused ? conv_winograd_packed_floats(p)
                                                : conv_winograd_nonfused_packed_floats(p));
    pack(p, wei.data(), one.data(), 1);
    for (int threads : {2, 3}) {
      std::vector<float> many(one.size(), std::numeric_limits<float>::quiet_NaN());
      pack(p, wei.data(), many.data(), threads);
      ASSERT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * sizeof(float)))
          << name_of(algo) << ", " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace nnperf
