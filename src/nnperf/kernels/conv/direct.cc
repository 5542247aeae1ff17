// `direct`: the convolution computed where it is defined, loops over output rows vectorised over
// output width, with a register tile of output channels and no im2col matrix (see direct_impl.h
// for the loop nest). Serves every problem (stride, padding, dilation, groups); with one input
// channel per group (depthwise, g == ic) it is the natural fast path: memory-bound, one read of
// the input. This file plans (tile, padded-buffer geometry, workspace), packs the weights into
// channel blocks, dispatches the SIMD level and holds the portable instantiation.
// tolerance_factor 1: plain float32 sums (each output a different order of the same products);
// worst measured |y - ref| / (K*eps*sum|ab| + eps*|ref|) over tests/kernels/conv_test.cc: 0.18
// (AVX2), 0.22 (portable).
#include <algorithm>
#include <cstdint>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/direct_impl.h"

namespace nnperf {

namespace {

constexpr int64_t kMaxOcBlock = 6;  // 6 x 2 ymm accumulators + 2 loads + 1 broadcast = 15 regs
constexpr int64_t kLanes = 8;       // vector width of both kernels (ymm / 2 x xmm)

// Cache budgets (Zen3: 32 KiB L1d, 512 KiB L2): the kh input rows of a channel block in about
// two thirds of L1, the weights of all output channels for the block in half of L2.
constexpr int64_t kRowsBytes = 20 * 1024;
constexpr int64_t kWeightsBytes = 256 * 1024;
// Row chunks per thread when there are fewer groups than that (load balance).
constexpr int64_t kChunksPerThread = 2;

struct Geometry {
  int64_t ocb, n_ob, hn, wph, rs, cs, cb;
  bool per_channel;
  std::size_t taps_bytes, xp_floats;
};

Geometry geometry(const ConvProblem& p, int threads) {
  Geometry g{};
  g.per_channel = p.icg() == 1;
  g.ocb = g.per_channel ? 1 : std::min(kMaxOcBlock, p.ocg());  // depthwise: plain OIHW weights
  g.n_ob = conv_ceil_div(p.ocg(), g.ocb);
  g.hn = (p.oh() - 1) * p.sh + (p.kh - 1) * p.dh + 1;
  g.wph = conv_round_up(p.ow(), kLanes) + (p.kw - 1) * p.dw / p.sw + 1;
  g.rs = p.sw * g.wph;
  g.cs = conv_round_up(g.hn * g.rs, 16);
  const int64_t f = sizeof(float);
  g.cb =
      std::min(kRowsBytes / (p.kh * g.rs * f), kWeightsBytes / (g.n_ob * g.ocb * p.kh * p.kw * f));
  g.cb = std::clamp<int64_t>(g.cb, std::min<int64_t>(4, p.icg()), p.icg());
  g.taps_bytes = static_cast<std::size_t>(conv_round_up(p.kh * p.kw, 8)) * sizeof(int64_t);
  g.xp_floats = static_cast<std::size_t>((g.per_channel ? std::max(1, threads) : p.ic) * g.cs);
  return g;
}

}  // namespace

namespace conv_direct {
void run_portable(const Plan& pl) { run_plan<conv_simd::Portable>(pl); }
}  // namespace conv_direct

std::string conv_direct_why_not(const ConvProblem& p) { return conv_serves_any(p); }

std::size_t conv_direct_workspace_bytes(const ConvProblem& p, int threads) {
  const Geometry g = geometry(p, threads);
  return g.taps_bytes + g.xp_floats * sizeof(float);
}

std::size_t conv_direct_packed_floats(const ConvProblem& p) {
  const Geometry g = geometry(p, 1);
  return static_cast<std::size_t>(p.g * g.n_ob * g.ocb * p.icg() * p.kh * p.kw);
}

// OIHW -> [g][channel block][icg][kh*kw][ocb], zero rows past ocg in the last block.
void conv_direct_pack(const ConvProblem& p, const float* wei, float* packed, int /*threads*/) {
  const Geometry geo = geometry(p, 1);
  const int64_t kk = p.kh * p.kw, icg = p.icg(), ocg = p.ocg();
  float* out = packed;
  for (int64_t grp = 0; grp < p.g; ++grp) {
    for (int64_t ob = 0; ob < geo.n_ob; ++ob) {
      for (int64_t c = 0; c < icg; ++c) {
        for (int64_t t = 0; t < kk; ++t) {
          for (int64_t i = 0; i < geo.ocb; ++i) {
            const int64_t o = ob * geo.ocb + i;
            *out++ = o < ocg ? wei[((grp * ocg + o) * icg + c) * kk + t] : 0.0f;
          }
        }
      }
    }
  }
}

void conv_direct_run(const ConvArgs& args) {
  const ConvProblem& p = *args.p;
  const Geometry geo = geometry(p, args.threads);
  conv_direct::Plan pl{};
  conv_copy_dims(p, pl);
  pl.ocb = geo.ocb;
  pl.n_ob = geo.n_ob;
  pl.hn = geo.hn;
  pl.wph = geo.wph;
  pl.rs = geo.rs;
  pl.cs = geo.cs;
  pl.cb = geo.cb;
  pl.per_channel = geo.per_channel;
  // Tap (r, s) of a window starts at padded row r*dh, phase (s*dw) % sw, column (s*dw) / sw.
  auto* taps = static_cast<int64_t*>(args.workspace);
  for (int64_t r = 0; r < p.kh; ++r) {
    for (int64_t s = 0; s < p.kw; ++s) {
      taps[r * p.kw + s] = r * p.dh * geo.rs + (s * p.dw) % p.sw * geo.wph + (s * p.dw) / p.sw;
    }
  }
  pl.taps = taps;
  pl.src = args.src;
  pl.packed = args.packed;
  pl.bias = args.bias;
  pl.dst = args.dst;
  pl.xp = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + geo.taps_bytes);
  pl.row_chunks = 1;
  if (!geo.per_channel && p.g < kChunksPerThread * args.threads) {
    pl.row_chunks = std::min(pl.oh, conv_ceil_div(kChunksPerThread * args.threads, p.g));
  }
  const int64_t jobs = geo.per_channel ? p.g : p.g * pl.row_chunks;
  pl.threads = conv_useful_threads(args.threads, p.flops() / static_cast<double>(p.mb), jobs);
  if (active_simd() >= SimdLevel::kAvx2) {
    conv_direct::run_avx2(pl);
  } else {
    conv_direct::run_portable(pl);
  }
}

// Rates measured on the fitted Zen 3 core (bench/conv_bench.cc, single thread), as ratios to its
// FMA peak and triad bandwidth (conv_internal.h): full 6 x 16 tiles run at ~82 GFLOP/s (80% of
// the FMA peak) on rows of 48+ outputs, ~62 on 14-28 (edge tiles), ~38 on 7; 1x1 loads one input
// vector per 6 FMAs from 60+ channel planes, ~60. The portable kernels (NNPERF_SIMD=scalar) run
// at 17-20 GFLOP/s whatever the shape. Depthwise runs at ~30 GFLOP/s (portable ~9; 1 load per
// FMA, 9 FMAs per output) plus ~0.1 us per channel of setup, or at the memory rate (~10 GB/s
// for src + dst) when that is slower (stride 2: 4 inputs per output).
constexpr double kDenseRate = 82.0 / conv_fit::kFmaGflops;
constexpr double kDensePortableRate = 19.0 / conv_fit::kFmaGflops;
constexpr double kDepthwiseRate = 30.0 / conv_fit::kFmaGflops;
constexpr double kDepthwisePortableRate = 9.0 / conv_fit::kFmaGflops;
constexpr double kDepthwiseSetupSeconds = 0.1e-6;  // per channel, on the fitted core
constexpr double kDepthwiseDram = 10.0 / conv_fit::kDramGbps;
constexpr double kPadCopyDram = 15.0 / conv_fit::kDramGbps;

double conv_direct_cost(const ConvProblem& p, int threads) {
  const ConvMachine m = conv_machine();
  const double t = std::max(1, threads);
  const double pad_bytes = 8.0 * static_cast<double>(p.src_numel());  // padded copy: read + write
  if (p.icg() == 1) {
    const double rate = (m.avx2 ? kDepthwiseRate : kDepthwisePortableRate) * m.fma_flops_per_s;
    const double compute = p.flops() / (rate * t) +
                           static_cast<double>(p.mb * p.g) * m.seconds(kDepthwiseSetupSeconds) / t;
    const double memory = 4.0 * static_cast<double>(p.src_numel() + p.dst_numel()) /
                          (kDepthwiseDram * m.dram_at(threads));
    return std::max(compute, memory);
  }
  const int64_t ow = p.ow();
  double rate = m.fma_flops_per_s;
  if (m.avx2) {
    // Below 14 columns the 16-wide rows are mostly edge lanes: ~ow/16 of them do work (7: 0.44,
    // as measured; a 1x1 map of ResNet-18's layer4 at 28x28 input: 1/16).
    rate *= kDenseRate *
            (ow >= 48   ? 1.0
             : ow >= 14 ? 0.75
                        : std::min(0.45, static_cast<double>(ow) / 16.0)) *
            (p.kh * p.kw == 1 ? 0.75 : 1.0);
  } else {
    rate *= kDensePortableRate;
  }
  const int64_t ocb = std::min(kMaxOcBlock, p.ocg());
  if (ocb < kMaxOcBlock) rate *= std::min(1.0, static_cast<double>(ocb) / 4.0);
  rate *= static_cast<double>(p.ocg()) / static_cast<double>(conv_round_up(p.ocg(), ocb));
  return p.flops() / (rate * t) + pad_bytes / (kPadCopyDram * m.dram_at(threads));
}

}  // namespace nnperf
