// The FFT convolutions (fft: whole padded image; fft_tiling: overlap-save tiles) against the
// float64 conv2d_reference: 1x1/3x3/5x5/7x7 and rectangular kernels x padding 0..3, odd and
// prime image sizes, batch 1 and 3, channels 1/3/17/64, groups and depthwise, output sizes
// around fft_tiling's tile (u-1, u, u+1, 2u, 2u+1), real layers at reduced size; the
// frequency-domain multiply-accumulate of every SIMD path against float64; FFTW plans made at
// pack time only; identical results on 1 and 2 threads; reasons for unsupported problems.
// Two bounds per output. The registry's elementwise one,
//   |y - ref| <= c_algo * K * eps * sum|a*b| + eps * |ref|  (K = icg*kh*kw, eps = 2^-23),
// and, because an FFT's rounding error is spread over the whole transform instead of tied to
// each output's own products, a normwise one that every output must meet:
//   |y - ref| <= kNormwise * eps * log2(th*tw) * max over the tensor of sum|a*b|.
// The elementwise bound is applied to outputs that sum at least kMinProducts products: for an
// output of one product x*w (a 1x1 kernel on one input channel, a corner that sees one pixel),
// the bound shrinks with |x*w| (+|bias|, which may be as small) while the transform's error
// does not, so no finite c_algo holds for every seed (measured: ratios of 10^2..10^4 growing
// with the number of such outputs, up to 404 even with a bias). They get the normwise bound only.
#include <fftw3.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/fft_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::kEps;

// Normwise factor: the worst max|y - ref| / (eps * log2(th*tw) * max sum|a*b|) measured over
// this file's problems was 0.34 (fft) and 0.37 (fft_tiling); 1 leaves room for other seeds.
constexpr double kNormwise = 1.0;
constexpr int64_t kMinProducts = 4;

// Products x*w summed into output (oy, ox): icg times the kernel taps inside the image
// (stride 1, dilation 1, as the FFT algorithms require).
int64_t products(const ConvProblem& p, int64_t oy, int64_t ox) {
  auto taps = [](int64_t o, int64_t pad, int64_t k, int64_t size) {
    int64_t n = 0;
    for (int64_t r = 0; r < k; ++r) n += (o - pad + r >= 0 && o - pad + r < size) ? 1 : 0;
    return n;
  };
  return p.icg() * taps(oy, p.ph, p.kh, p.ih) * taps(ox, p.pw, p.kw, p.iw);
}

struct Worst {
  double elementwise = 0.0;   // max |y - ref| / (K * eps * sum|a*b| + eps * |ref|)
  double few_products = 0.0;  // the same ratio over the outputs exempt from it (see above)
  double normwise = 0.0;      // max |y - ref| / (eps * log2(th*tw) * max sum|a*b|)
};
std::map<std::string, Worst>& worst_seen() {
  static std::map<std::string, Worst> worst;
  return worst;
}

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [name, w] : worst_seen()) {
      std::printf(
          "[fft] %s: worst elementwise ratio %.4g (outputs of < %d products, checked normwise "
          "only: %.4g), normwise ratio %.4g\n",
          name.c_str(), w.elementwise, static_cast<int>(kMinProducts), w.few_products, w.normwise);
    }
  }
};
const auto* const kReportWorst = ::testing::AddGlobalTestEnvironment(new ReportWorst);

fft_conv::Geometry geometry_of(const ConvAlgorithm& algo, const ConvProblem& p) {
  return std::string(algo.name) == "fft" ? fft_conv::whole_image_geometry(p)
                                         : fft_conv::tiling_geometry(p);
}

// Runs algo on p (seeded inputs in [-1, 1), bias optional) and returns dst.
std::vector<float> run(const ConvAlgorithm& algo, const ConvProblem& p, uint64_t seed,
                       bool with_bias, int threads) {
  const std::vector<float> src = test::random_vector(p.src_numel(), seed);
  const std::vector<float> wei = test::random_vector(p.wei_numel(), seed + 1);
  const std::vector<float> bias = test::random_vector(p.oc, seed + 2);
  std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()),
                         std::numeric_limits<float>::quiet_NaN());  // every output is written
  conv_run(algo, p, src.data(), wei.data(), with_bias ? bias.data() : nullptr, dst.data(), threads);
  return dst;
}

// Both bounds on every output; records the worst ratios.
void check(const char* name, const std::string& problem, uint64_t seed, bool with_bias = true,
           int threads = 1) {
  const ConvAlgorithm& algo = find_conv(name);
  const ConvProblem p = parse_conv_problem(problem);
  SCOPED_TRACE(
      fmt::format("{} on {} seed={} bias={} threads={}", name, p.str(), seed, with_bias, threads));
  ASSERT_EQ(algo.why_not(p), "");
  const std::vector<float> y = run(algo, p, seed, with_bias, threads);
  const std::vector<float> src = test::random_vector(p.src_numel(), seed);
  const std::vector<float> wei = test::random_vector(p.wei_numel(), seed + 1);
  const std::vector<float> bias = test::random_vector(p.oc, seed + 2);
  std::vector<double> ref(y.size()), abs_sum(y.size());
  conv2d_reference(p, src.data(), wei.data(), with_bias ? bias.data() : nullptr, ref.data(),
                   abs_sum.data());
  const auto nonzero = std::count_if(ref.begin(), ref.end(), [](double v) { return v != 0.0; });
  ASSERT_GE(static_cast<double>(nonzero), 0.5 * static_cast<double>(ref.size()))
      << "reference mostly zeros: the comparison would prove nothing";
  const fft_conv::Geometry geo = geometry_of(algo, p);
  const double k = static_cast<double>(p.icg() * p.kh * p.kw);
  const double scale = *std::max_element(abs_sum.begin(), abs_sum.end());
  const double norm_unit = kEps * std::log2(static_cast<double>(geo.th * geo.tw)) * scale;
  Worst& worst = worst_seen()[name];
  int failures = 0;
  const int64_t plane = p.oh() * p.ow();
  for (std::size_t i = 0; i < y.size(); ++i) {
    const int64_t e = static_cast<int64_t>(i), oy = e % plane / p.ow(), ox = e % p.ow();
    const bool elementwise = products(p, oy, ox) >= kMinProducts;
    const double err = std::fabs(static_cast<double>(y[i]) - ref[i]);
    const double unit = k * kEps * abs_sum[i] + kEps * std::fabs(ref[i]);
    const double bound = algo.tolerance_factor * k * kEps * abs_sum[i] + kEps * std::fabs(ref[i]);
    const bool ok = err <= kNormwise * norm_unit && (!elementwise || err <= bound);
    if (!ok && failures++ < 3) {
      ADD_FAILURE() << "dst[n" << e / (p.oc * plane) << " oc" << e / plane % p.oc << " y" << oy
                    << " x" << ox << "] = " << y[i] << ", reference " << ref[i] << ", |error| "
                    << err << ", elementwise bound " << (elementwise ? bound : INFINITY)
                    << ", normwise bound " << kNormwise * norm_unit << " (transform " << geo.th
                    << "x" << geo.tw << ")";
    }
    double& ratio = elementwise ? worst.elementwise : worst.few_products;
    if (unit > 0) ratio = std::max(ratio, err / unit);
    worst.normwise = std::max(worst.normwise, err / norm_unit);
  }
  EXPECT_EQ(failures, 0);
}

constexpr const char* kBoth[] = {"fft", "fft_tiling"};

// Every kernel size x padding 0..3, on odd/prime sizes, channels 1/3/17, batch 1 and 3, with
// and without bias; the last rows are rectangular.
TEST(ConvFft, KernelSizesAndPadding) {
  const int64_t sizes[] = {7, 11, 13, 17, 19, 23, 29, 31};
  const int64_t channels[] = {1, 3, 17};
  int case_index = 0;
  for (int64_t k : {1, 3, 5, 7}) {
    for (int64_t pad = 0; pad <= 3; ++pad, ++case_index) {
      const int64_t ih = sizes[case_index % 8], iw = sizes[(case_index + 3) % 8];
      const int64_t ic = channels[case_index % 3], oc = channels[(case_index + 1) % 3];
      const int64_t mb = case_index % 2 == 0 ? 1 : 3;
      const std::string s = fmt::format("mb{}ic{}ih{}iw{}oc{}kh{}ph{}", mb, ic, ih, iw, oc, k, pad);
      for (const char* name : kBoth) check(name, s, 100 + case_index, case_index % 4 != 3);
    }
  }
  for (const char* s : {"mb1ic3ih12iw17oc4kh3kw5ph1pw2", "mb3ic2ih9iw20oc3kh7kw1ph3",
                        "mb1ic5ih23iw8oc6kh1kw3pw1"}) {
    for (const char* name : kBoth) check(name, s, 200);
  }
}

// Outputs of one to three products (1x1 on 1-3 input channels, corners that see one pixel):
// the normwise bound only, see the top of the file; the outputs of these problems that sum
// kMinProducts or more still get the elementwise bound. The 4-channel 1x1 case is the worst
// that the elementwise bound covers.
TEST(ConvFft, SingleProductOutputs) {
  for (const char* name : kBoth) {
    check(name, "mb3ic1ih29oc7kh1", 300, false);
    check(name, "mb1ic1ih56oc2kh1", 301, false);
    check(name, "mb1ic1ih41oc3kh3ph2", 302, false);
    check(name, "mb1ic1ih30oc4kh1", 303, true);
    check(name, "mb2ic4ih40oc6kh1", 304, false);
  }
}

TEST(ConvFft, SixtyFourChannels) {
  for (const char* name : kBoth) {
    check(name, "mb1ic64ih15oc64kh3ph1", 400);
    check(name, "mb3ic64ih9iw13oc17kh5ph2", 401, false);
    check(name, "mb1ic17ih10oc64kh7ph3", 402);
  }
}

TEST(ConvFft, GroupsAndDepthwise) {
  for (const char* name : kBoth) {
    check(name, "g2mb1ic4ih9oc6kh3ph1", 500);
    check(name, "g8mb3ic8ih12oc8kh3ph1", 501, false);  // depthwise
    check(name, "g3mb1ic6ih11oc9kh5ph2", 502);
    check(name, "g4mb1ic8ih7oc16kh1", 503);  // channel multiplier 4
  }
}

// fft_tiling on every output height (then width) from 1 to 64 for 3x3, 5x5 and 7x7 kernels, with
// the transform it picks for each: the counters prove that multi-tile rows with an exact
// multiple of u outputs, with a partial last tile, and one short of a multiple all occurred
// (the cost model avoids a last tile of one output, so ForcedSmallTiles places those).
TEST(ConvFft, TilingAroundTileEdges) {
  int multiples = 0, partial = 0, one_short = 0;
  for (int64_t k : {3, 5, 7}) {
    for (int64_t out = 1; out <= 64; ++out) {
      // oh = ih + 2*ph - k + 1 with ph = k/2: ih = out. The other side stays a small prime.
      const std::string tall = fmt::format("mb1ic3ih{}iw7oc4kh{}ph{}", out, k, k / 2);
      const std::string wide = fmt::format("mb2ic2ih5iw{}oc3kh{}ph{}", out, k, k / 2);
      for (int side = 0; side < 2; ++side) {
        const std::string& s = side == 0 ? tall : wide;
        const ConvProblem p = parse_conv_problem(s);
        const fft_conv::Geometry geo = fft_conv::tiling_geometry(p);
        const int64_t u = side == 0 ? geo.uh : geo.uw;
        const int64_t tiles = side == 0 ? geo.tiles_h : geo.tiles_w;
        if (tiles >= 2 && out % u == 0) ++multiples;
        if (tiles >= 2 && out % u != 0) ++partial;
        if (out % u == u - 1) ++one_short;
        check("fft_tiling", s, 600 + static_cast<uint64_t>(out), out % 3 != 0);
      }
    }
  }
  EXPECT_GE(multiples, 5);
  EXPECT_GE(partial, 5);
  EXPECT_GE(one_short, 5);
}

// Geometries forced to 8x8 and 12x12 transforms, with u-1, u, u+1, 2u and 2u+1 outputs per
// column (then row) and a chunk budget of 3 tiles (several passes, the last one partial): the
// overlap-save bookkeeping through the same pipeline, on 2 threads.
TEST(ConvFft, ForcedSmallTiles) {
  for (int64_t t : {8, 12}) {
    for (int64_t k : {3, 5}) {
      const int64_t u = t - k + 1;
      for (int64_t out : {u - 1, u, u + 1, 2 * u, 2 * u + 1}) {
        for (const std::string& s : {fmt::format("mb2ic3ih{}iw5oc4kh{}ph{}", out, k, k / 2),
                                     fmt::format("mb1ic2ih7iw{}oc3kh{}ph{}", out, k, k / 2)}) {
          SCOPED_TRACE(fmt::format("{} with {}x{} transforms", s, t, t));
          const ConvProblem p = parse_conv_problem(s);
          const int64_t nfb = fft_conv::make_geometry(p, t, t, 1).nfb;
          const auto tile_bytes =
              static_cast<std::size_t>((p.ic + p.oc) * nfb * fft_conv::kBlockFloats * 4);
          const fft_conv::Geometry geo = fft_conv::make_geometry(p, t, t, 3 * tile_bytes);
          const std::vector<float> src = test::random_vector(p.src_numel(), 700);
          const std::vector<float> wei = test::random_vector(p.wei_numel(), 701);
          const std::vector<float> bias = test::random_vector(p.oc, 702);
          std::vector<float> packed(fft_conv::packed_floats(p, geo));
          fft_conv::pack_weights(p, geo, wei.data(), packed.data());
          Workspace ws;
          ws.reserve(fft_conv::workspace_bytes(p, geo, 2));
          std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()), std::nanf(""));
          ConvArgs args;
          args.p = &p;
          args.src = src.data();
          args.wei = wei.data();
          args.packed = packed.data();
          args.bias = bias.data();
          args.dst = dst.data();
          args.workspace = ws.data();
          args.threads = 2;
          fft_conv::run(geo, args);
          std::vector<double> ref(dst.size()), abs_sum(dst.size());
          conv2d_reference(p, src.data(), wei.data(), bias.data(), ref.data(), abs_sum.data());
          const double kk = static_cast<double>(p.icg() * p.kh * p.kw);
          const double c = find_conv("fft_tiling").tolerance_factor;
          for (std::size_t i = 0; i < dst.size(); ++i) {
            ASSERT_LE(std::fabs(dst[i] - ref[i]),
                      c * kk * kEps * abs_sum[i] + kEps * std::fabs(ref[i]))
                << "at " << i;
          }
        }
      }
    }
  }
}

// Real layers at reduced spatial size: VGG16 conv1_2 / conv3, ResNet-50 conv2_x 3x3 and 1x1,
// GoogLeNet's 5x5 branch, MobileNetV2's stride-1 depthwise 3x3.
TEST(ConvFft, RealLayersReduced) {
  const char* layers[] = {"mb1ic64ih16oc64kh3ph1", "mb1ic256ih8oc256kh3ph1",
                          "mb1ic64ih14oc64kh3ph1", "mb1ic64ih14oc256kh1",
                          "mb1ic32ih14oc64kh5ph2", "g96mb1ic96ih14oc96kh3ph1"};
  for (const char* name : kBoth) {
    for (const char* s : layers)
      check(name, s, 800, std::string(s).find("kh1") == std::string::npos);
  }
}

// Each output is computed by one thread in a fixed order, so 2 threads give the same bits.
TEST(ConvFft, TwoThreadsGiveIdenticalResults) {
  for (const char* name : kBoth) {
    const ConvAlgorithm& algo = find_conv(name);
    for (const char* s : {"mb3ic17ih23oc9kh3ph1", "g2mb1ic6ih30oc4kh5ph2"}) {
      const ConvProblem p = parse_conv_problem(s);
      const std::vector<float> one = run(algo, p, 900, true, 1);
      const std::vector<float> two = run(algo, p, 900, true, 2);
      ASSERT_EQ(one.size(), two.size());
      for (std::size_t i = 0; i < one.size(); ++i) {
        ASSERT_EQ(one[i], two[i]) << name << " on " << s << " at " << i;
      }
    }
    check(name, "mb3ic17ih23oc9kh3ph1", 900, true, 2);
  }
}

// The frequency-domain multiply-accumulate of each SIMD path against float64, with channel
// counts that leave register-tile and channel-block remainders.
TEST(ConvFft, MultiplyAccumulateEverySimdPath) {
  const int64_t tiles = 2 * fft_conv::kRt + 1, ocg = 2 * fft_conv::kRo + 1;
  const int64_t icg = fft_conv::kIcBlock + 3;
  const int64_t bf = fft_conv::kBlockFloats, fb = fft_conv::kFreqBlock;
  // A real weight tensor (1x1, icg -> ocg) packed for a 1x14 transform has exactly one block.
  ConvProblem p = parse_conv_problem(fmt::format("mb1ic{}ih1iw14oc{}kh1", icg, ocg));
  const fft_conv::Geometry geo = fft_conv::make_geometry(p, 1, 14, 1 << 20);
  ASSERT_EQ(geo.nfb, 1);
  const std::vector<float> wei = test::random_vector(p.wei_numel(), 1000);
  std::vector<float> packed(fft_conv::packed_floats(p, geo));
  fft_conv::pack_weights(p, geo, wei.data(), packed.data());
  // Unpack W[o][c] through the same DFT in double: w is constant over frequencies, scaled 1/14.
  const std::vector<float> x = test::random_vector(tiles * icg * bf, 1001);
  std::vector<float> y(static_cast<std::size_t>(tiles * ocg * bf));
  std::string not_run;  // the paths this CPU cannot run
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2}) {
    if (level > cpu_info().simd) {
      not_run += std::string(not_run.empty() ? "" : ", ") + to_string(level);
      continue;
    }
    SCOPED_TRACE(to_string(level));
    std::fill(y.begin(), y.end(), std::nanf(""));
    fft_conv::MacArgs m;
    m.x = x.data();
    m.x_tile_stride = icg * bf;
    m.w = packed.data();
    m.y = y.data();
    m.y_tile_stride = ocg * bf;
    m.y_oc_stride = bf;
    m.tiles = tiles;
    m.ocg = ocg;
    m.icg = icg;
    if (level == SimdLevel::kScalar) {
      fft_conv::mac_portable(m);
    } else {
      fft_conv::mac_avx2(m);
    }
    for (int64_t t = 0; t < tiles; ++t) {
      for (int64_t o = 0; o < ocg; ++o) {
        for (int64_t j = 0; j < fb; ++j) {
          double re = 0, im = 0, abs = 0;
          for (int64_t c = 0; c < icg; ++c) {
            const double xr = x[(t * icg + c) * bf + j], xi = x[(t * icg + c) * bf + fb + j];
            const double w = wei[o * icg + c] / 14.0;  // a 1x1 filter's spectrum: w / (th*tw)
            re += xr * w;
            im += xi * w;
            abs += (std::fabs(xr) + std::fabs(xi)) * std::fabs(w);
          }
          // Frequencies past the 1 x 8 half spectrum carry zero weights.
          const double expect_re = j < geo.freqs ? re : 0.0, expect_im = j < geo.freqs ? im : 0.0;
          const float* got = &y[(t * ocg + o) * bf];
          const double bound = 2 * icg * kEps * abs + 1e-30;
          ASSERT_NEAR(got[j], expect_re, bound) << "t" << t << " o" << o << " f" << j;
          ASSERT_NEAR(got[fb + j], expect_im, bound) << "t" << t << " o" << o << " f" << j;
        }
      }
    }
  }
  if (!not_run.empty()) GTEST_SKIP() << "this CPU cannot run the " << not_run << " path";
}

// Plans are created by pack_weights (plan time), never by run(); plan buffers and workspace
// buffers share FFTW's alignment class.
TEST(ConvFft, PlansAreMadeAtPackTime) {
  const ConvProblem p = parse_conv_problem("mb1ic2ih97iw89oc3kh3ph1");  // a size no test uses
  for (const char* name : kBoth) {
    const ConvAlgorithm& algo = find_conv(name);
    const std::vector<float> src = test::random_vector(p.src_numel(), 1100);
    const std::vector<float> wei = test::random_vector(p.wei_numel(), 1101);
    std::vector<float> packed(algo.packed_weights_floats(p));
    const int64_t before = fft_conv::plans_created();
    algo.pack_weights(p, wei.data(), packed.data(), 1);
    const int64_t after_pack = fft_conv::plans_created();
    Workspace ws;
    ws.reserve(algo.workspace_bytes(p, 2));
    EXPECT_EQ(fftwf_alignment_of(static_cast<float*>(ws.data())), 0);
    std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()));
    ConvArgs args;
    args.p = &p;
    args.src = src.data();
    args.wei = wei.data();
    args.packed = packed.data();
    args.dst = dst.data();
    args.workspace = ws.data();
    args.threads = 2;
    algo.run(args);
    EXPECT_EQ(fft_conv::plans_created(), after_pack) << name << ": run() created a plan";
    if (std::string(name) == "fft") {
      EXPECT_EQ(after_pack, before + 1);  // a transform size no other test uses
    }
  }
}

// Packing a large layer's filters takes over a second (VGG-16's 64x64 filters as 226x226
// spectra): Ctrl-C is honoured between output channels, the packing stops with InterruptedError.
TEST(ConvFft, PackingStopsAtCtrlC) {
  const ConvProblem p = parse_conv_problem("mb1ic4ih20oc3kh3ph1");
  for (const char* name : kBoth) {
    const ConvAlgorithm& algo = find_conv(name);
    const std::vector<float> wei = test::random_vector(p.wei_numel(), 1200);
    std::vector<float> packed(algo.packed_weights_floats(p));
    request_interrupt();
    EXPECT_THROW(algo.pack_weights(p, wei.data(), packed.data(), 1), InterruptedError) << name;
    clear_interrupt();
    EXPECT_NO_THROW(algo.pack_weights(p, wei.data(), packed.data(), 1)) << name;
  }
}

TEST(ConvFft, UnsupportedProblemsSayWhy) {
  const ConvAlgorithm& fft = find_conv("fft");
  const ConvAlgorithm& tiling = find_conv("fft_tiling");
  const ConvProblem stem = parse_conv_problem("mb1ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(fft.why_not(stem), "fft: stride 2 not supported (stride 1 only)");
  EXPECT_EQ(tiling.why_not(stem), "fft_tiling: stride 2 not supported (stride 1 only)");
  const ConvProblem dilated = parse_conv_problem("mb1ic8ih20oc8kh3ph2dh2");
  EXPECT_EQ(fft.why_not(dilated), "fft: dilation 2 not supported (dilation 1 only)");
  EXPECT_EQ(tiling.why_not(dilated), "fft_tiling: dilation 2 not supported (dilation 1 only)");
  ConvProblem invalid = parse_conv_problem("g2mb1ic8ih20oc8kh3");
  invalid.oc = 7;
  EXPECT_NE(fft.why_not(invalid).find("not divisible"), std::string::npos) << fft.why_not(invalid);
  // A whole-image spectrum of a big layer: 512 x 512 x 226 x 114 complex is far past the limit.
  const ConvProblem vgg_big = parse_conv_problem("mb1ic512ih224oc512kh3ph1");
  EXPECT_NE(fft.why_not(vgg_big).find("GiB"), std::string::npos) << fft.why_not(vgg_big);
  EXPECT_EQ(tiling.why_not(vgg_big), "");
  const ConvProblem giant = parse_conv_problem("mb1ic1ih20000oc1kh3");
  EXPECT_NE(fft.why_not(giant).find("too large for one transform"), std::string::npos)
      << fft.why_not(giant);
  const ConvProblem huge_kernel = parse_conv_problem("mb1ic1ih80oc1kh65");
  EXPECT_NE(tiling.why_not(huge_kernel).find("kernel 65x65"), std::string::npos);
  EXPECT_EQ(fft.why_not(huge_kernel), "");
}

TEST(ConvFft, TransformSizesAreSmooth) {
  EXPECT_TRUE(fft_conv::is_smooth(1));
  EXPECT_TRUE(fft_conv::is_smooth(2 * 3 * 5 * 7 * 7));
  EXPECT_FALSE(fft_conv::is_smooth(11));
  EXPECT_FALSE(fft_conv::is_smooth(0));
  EXPECT_EQ(fft_conv::next_smooth(58, false), 60);
  EXPECT_EQ(fft_conv::next_smooth(226, false), 240);
  EXPECT_EQ(fft_conv::next_smooth(121, false), 125);
  EXPECT_EQ(fft_conv::next_smooth(121, true), 126);
  EXPECT_EQ(fft_conv::next_smooth(97, true), 98);
  // The whole-image transform holds the padded image; a tiling transform is at most 64.
  const ConvProblem p = parse_conv_problem("mb1ic64ih56oc64kh3ph1");
  const fft_conv::Geometry whole = fft_conv::whole_image_geometry(p);
  EXPECT_GE(whole.th, 58);
  EXPECT_TRUE(fft_conv::is_smooth(whole.th) && fft_conv::is_smooth(whole.tw));
  EXPECT_EQ(whole.tw % 2, 0);
  EXPECT_EQ(whole.tiles_h * whole.tiles_w, 1);
  const fft_conv::Geometry tiled = fft_conv::tiling_geometry(p);
  EXPECT_LE(tiled.th, 64);
  EXPECT_GT(tiled.tiles_h, 1);
  EXPECT_EQ(tiled.uh, tiled.th - 2);
}

}  // namespace
}  // namespace nnperf
