// `implicit_gemm`: the convolution as a GEMM whose K x N patch matrix is never materialised;
// each thread packs only the kc x nc panel it is about to use, from the input, computing every
// patch element's position and bounds on the fly (loop nest in implicit_gemm_impl.h). Serves
// every problem. This file also holds what implicit_precomp_gemm shares: block sizes, the
// weight packing (done once at plan time), the Plan and the SIMD dispatch.
// tolerance_factor 1: plain float32 sums (each output a different order of the same products);
// worst measured |y - ref| / (K*eps*sum|ab| + eps*|ref|) over tests/kernels/conv_test.cc: 0.18 for
// both implicit GEMMs, AVX2 and portable.
#include <algorithm>
#include <cstdint>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/implicit_gemm_impl.h"

namespace nnperf {

namespace conv_igemm {

namespace {

// Zen3: 32 KiB L1d, 512 KiB L2 per core. kc 256: a 16-pixel input micro-panel is 16 KiB (half
// of L1, the rest for the streaming weight panel); the weight block mc x kc <= 192 KiB and the
// packed input panel kc x nc <= 256 KiB share L2.
constexpr int64_t kMaxKc = 256;
constexpr int64_t kWeightBlockBytes = 192 * 1024;
constexpr int64_t kInputPanelBytes = 256 * 1024;

}  // namespace

void run_portable(const Plan& pl) { run_plan<conv_simd::Portable>(pl); }

Geometry geometry(const ConvProblem& p, int threads, bool precomp) {
  Geometry g{};
  const int64_t k = p.icg() * p.kh * p.kw, n = p.oh() * p.ow();
  g.kblocks = conv_ceil_div(k, kMaxKc);
  g.kc = conv_ceil_div(k, g.kblocks);  // balanced: k = 300 runs 2 x 150, not 256 + 44
  g.m_panels = conv_ceil_div(p.ocg(), kMr);
  g.mc_panels = std::max<int64_t>(1, kWeightBlockBytes / (g.kc * kMr * 4));
  g.nc_panels = std::clamp<int64_t>(kInputPanelBytes / (g.kc * kNr * 4), 1, conv_ceil_div(n, kNr));
  g.bpack_floats = static_cast<std::size_t>(conv_round_up(g.kc * g.nc_panels * kNr, 16));
  g.bpack_bytes = g.bpack_floats * sizeof(float) * static_cast<std::size_t>(std::max(1, threads));
  g.a_floats = static_cast<std::size_t>(p.g * g.m_panels * kMr * k);
  if (precomp) {
    g.hp = p.ih + 2 * p.ph;
    g.wph = conv_ceil_div(p.iw + 2 * p.pw, p.sw);
    g.rs = p.sw * g.wph;
    if (p.ph > 0 || p.pw > 0 || p.sw > 1) {
      g.xpad_bytes = static_cast<std::size_t>(p.ic * g.hp * g.rs) * sizeof(float);
    }
    g.table_floats = static_cast<std::size_t>(k + n);
  }
  return g;
}

void pack_weight_panels(const ConvProblem& p, const float* wei, float* packed) {
  const Geometry geo = geometry(p, 1, false);
  const int64_t k = p.icg() * p.kh * p.kw, ocg = p.ocg();
  float* out = packed;
  for (int64_t grp = 0; grp < p.g; ++grp) {
    const float* wg = wei + grp * ocg * k;
    for (int64_t pc = 0; pc < k; pc += geo.kc) {
      const int64_t kc = std::min(geo.kc, k - pc);
      for (int64_t mp = 0; mp < geo.m_panels; ++mp) {
        for (int64_t q = 0; q < kc; ++q) {
          for (int64_t i = 0; i < kMr; ++i) {
            const int64_t o = mp * kMr + i;
            *out++ = o < ocg ? wg[o * k + pc + q] : 0.0f;
          }
        }
      }
    }
  }
}

void run(const ConvArgs& args, bool precomp, const int32_t* koff, const int32_t* noff) {
  const ConvProblem& p = *args.p;
  const Geometry geo = geometry(p, args.threads, precomp);
  Plan pl{};
  conv_copy_dims(p, pl);
  pl.n = pl.oh * pl.ow;
  pl.k = pl.icg * p.kh * p.kw;
  pl.kc = geo.kc;
  pl.kblocks = geo.kblocks;
  pl.m_panels = geo.m_panels;
  pl.mc_panels = geo.mc_panels;
  pl.nc_panels = geo.nc_panels;
  pl.src = args.src;
  pl.packed_a = args.packed;
  pl.bias = args.bias;
  pl.dst = args.dst;
  pl.bpack = static_cast<float*>(args.workspace);
  pl.bpack_floats = static_cast<int64_t>(geo.bpack_floats);
  pl.precomp = precomp;
  if (precomp) {
    pl.hp = geo.hp;
    pl.wph = geo.wph;
    pl.rs = geo.rs;
    pl.pad_copy = geo.xpad_bytes > 0;
    pl.xpad = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + geo.bpack_bytes);
    pl.koff = reinterpret_cast<const alias_i32*>(koff);
    pl.noff = reinterpret_cast<const alias_i32*>(noff);
  }
  const int64_t jobs = std::max(conv_ceil_div(pl.n, kNr), geo.m_panels);
  pl.threads = conv_useful_threads(args.threads, p.flops() / static_cast<double>(p.mb * p.g), jobs);
  if (active_simd() >= SimdLevel::kAvx2) {
    run_avx2(pl);
  } else {
    run_portable(pl);
  }
}

double cost_seconds(const ConvProblem& p, int threads, double flops_per_s,
                    double pack_s_per_element) {
  const double t = std::max(1, threads);
  const int64_t k = p.icg() * p.kh * p.kw, n = p.oh() * p.ow();
  const double fill =
      static_cast<double>(p.ocg()) / static_cast<double>(conv_round_up(p.ocg(), kMr));
  const double eff =
      std::max(0.1, conv_gemm_shape_efficiency(p.ocg(), n, k, 64.0, kConvIgemmFullColumns) * fill);
  const double patch = static_cast<double>(p.mb * p.g * k) * static_cast<double>(n);
  return p.flops() / (flops_per_s * eff * t) + patch * pack_s_per_element / t;
}

}  // namespace conv_igemm

std::string conv_implicit_gemm_why_not(const ConvProblem& p) { return conv_serves_any(p); }

std::size_t conv_implicit_gemm_workspace_bytes(const ConvProblem& p, int threads) {
  return conv_igemm::geometry(p, threads, false).bpack_bytes;
}

std::size_t conv_implicit_gemm_packed_floats(const ConvProblem& p) {
  return conv_igemm::geometry(p, 1, false).a_floats;
}

void conv_implicit_gemm_pack(const ConvProblem& p, const float* wei, float* packed,
                             int /*threads*/) {
  conv_igemm::pack_weight_panels(p, wei, packed);
}

void conv_implicit_gemm_run(const ConvArgs& args) {
  conv_igemm::run(args, false, nullptr, nullptr);
}

// On the fitted core the 6 x 16 micro-kernel runs at ~84 GFLOP/s (82% of the FMA peak) on large
// shapes, the portable kernel at ~23 (0.27 of that, measured under NNPERF_SIMD=scalar); packing
// costs ~0.15 ns per patch element (vector copies of 16-pixel rows, bounds-checked scalars at row
// ends and for strides: ~0.6), which scales with the clock.
constexpr double kRate = 84.0 / conv_fit::kFmaGflops;
constexpr double kPortableRate = 23.0 / conv_fit::kFmaGflops;

double conv_implicit_gemm_cost(const ConvProblem& p, int threads) {
  const ConvMachine m = conv_machine();
  return conv_igemm::cost_seconds(p, threads, (m.avx2 ? kRate : kPortableRate) * m.fma_flops_per_s,
                                  m.seconds(p.sw == 1 ? 0.15e-9 : 0.6e-9));
}

}  // namespace nnperf
