// Fused Winograd F(4x4, 3x3) convolution (Lavin & Gray 2016): each 4x4 output tile costs 36
// multiply-adds per channel pair instead of 144, a 4x cut of the GEMM work. Weights are
// transformed once at plan time (U = G g G^T, in double); at run time each block of tiles goes
// through input transform -> 36 GEMMs over channels -> output transform (+bias) while its
// buffers are still in L2, with OpenMP over blocks. Also the geometry, weight transform and
// kernel dispatch shared with winograd_nonfused.cc.
// Why F(4x4,3x3) and not F(6x6,3x3): F(6,3) cuts the GEMM work by another 21% (64 products per
// 36 outputs, not 36 per 16), but in a float32 simulation of both on random inputs its worst
// error ratio (the tests' bound) was 2x F(4,3)'s from 3 input channels on and 4x at one channel,
// where F(4,3) already needs a factor of 50 (see kConvWinogradTolerance).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_filter_impl.h"
#include "nnperf/kernels/conv/winograd_internal.h"

namespace nnperf {
namespace winograd {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Blocking, from sweeps of bench/winograd_bench.cc on Zen3 (32 KB L1d, 512 KB L2 per core,
// 32 MB L3). While U (36 x ic x oc floats) is small, a block's V (36 x tiles x icp floats) and
// M chunk (36 x tiles x oc_chunk) should stay in L2: 64 channels ran best with 12-24 tiles per
// block, 5-10% slower at 72-96. But every block streams all of U through the GEMMs, and from
// 256 channels on (9.4 MB of U, 38 MB at 512) blocks of 48-96 tiles beat 12-18 by 10-15%.
constexpr int64_t kOcChunkMax = 64;
constexpr int64_t kBlockBytesTarget = 384 * 1024;
constexpr int64_t kBlockTilesMin = 12;
constexpr int64_t kBlockTilesMax = 96;
constexpr int64_t kBlockTilesStreamingU = 72;
constexpr int64_t kStreamingUL2s = 8;  // U bigger than this many L2s: large blocks

}  // namespace

Geometry make_geometry(const ConvProblem& p) {
  Geometry g{};
  g.mb = p.mb;
  g.ic = p.ic;
  g.ih = p.ih;
  g.iw = p.iw;
  g.oc = p.oc;
  g.oh = p.oh();
  g.ow = p.ow();
  g.ph = p.ph;
  g.pw = p.pw;
  g.tiles_h = ceil_div(g.oh, kTile);
  g.tiles_w = ceil_div(g.ow, kTile);
  g.tiles = g.mb * g.tiles_h * g.tiles_w;
  g.icp = round_up(p.ic, kIcBlock);
  g.ocp = round_up(p.oc, kOcBlock);
  return g;
}

const Kernels& kernels_for(SimdLevel level) {
  const SimdLevel cpu = cpu_info().simd;
  const SimdLevel use = static_cast<int>(level) < static_cast<int>(cpu) ? level : cpu;
  return use >= SimdLevel::kAvx2 ? kKernelsAvx2 : kKernelsPortable;
}

void transform_filters(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]) {
  filter_transform(g, u);
}

void gather_filters(const ConvProblem& p, const float* wei, int64_t o0, int64_t c,
                    double (*g)[kFilterLanes]) {
  for (int64_t l = 0; l < kFilterLanes; ++l) {
    const int64_t o = o0 + l;
    const bool real = o < p.oc && c < p.ic;
    for (int tap = 0; tap < 9; ++tap) g[tap][l] = real ? wei[(o * p.ic + c) * 9 + tap] : 0.0;
  }
}

Blocking plan_fused(const ConvProblem& p, int threads) {
  const Geometry g = make_geometry(p);
  Blocking b{};
  b.oc_chunk = std::min(g.ocp, kOcChunkMax);
  const int64_t f = sizeof(float);
  int64_t nt = std::clamp(kBlockBytesTarget / (kXi * (g.icp + b.oc_chunk) * f), kBlockTilesMin,
                          kBlockTilesMax);
  const int64_t l2 = cpu_info().l2_bytes > 0 ? cpu_info().l2_bytes : (512 << 10);
  if (kXi * g.icp * g.ocp * f > kStreamingUL2s * l2) nt = std::max(nt, kBlockTilesStreamingU);
  // Spread the tiles evenly over the blocks (no nearly empty last block).
  int64_t blocks = ceil_div(g.tiles, nt);
  nt = round_up(ceil_div(g.tiles, blocks), kNr);
  blocks = ceil_div(g.tiles, nt);
  b.block_tiles = nt;
  // A second thread needs ~1 MFLOP of work to pay for the fork/join (a few microseconds).
  const double flops = 2.0 * kXi * static_cast<double>(g.tiles * g.icp * g.ocp);
  int t = static_cast<int>(std::clamp<double>(flops / 1e6, 1.0, std::max(threads, 1)));
  b.split_oc = t > 1 && blocks < 2 * t;
  t = static_cast<int>(std::min<int64_t>(t, b.split_oc ? ceil_div(g.ocp, b.oc_chunk) : blocks));
  b.threads = std::max(t, 1);
  b.split_oc = b.split_oc && b.threads > 1;
  return b;
}

int64_t xi_stride_for(int64_t floats) { return round_up(floats, 16) + 16; }

TileLayout fused_v_layout(const Geometry& g, const Blocking& b) {
  return TileLayout{xi_stride_for(b.block_tiles * g.icp), 8, b.block_tiles * 8};
}

TileLayout fused_m_layout(const Geometry& /*g*/, const Blocking& b) {
  return TileLayout{xi_stride_for(b.block_tiles * b.oc_chunk), 8, b.block_tiles * 8};
}

namespace {

struct Sizes {
  int64_t v_floats, m_floats;  // one block's V; one chunk's M
  int64_t v_copies, m_copies;  // per thread, or V shared when split_oc
};

Sizes sizes_of(const Geometry& g, const Blocking& b) {
  Sizes s{};
  s.v_floats = kXi * fused_v_layout(g, b).xi_stride;
  s.m_floats = kXi * fused_m_layout(g, b).xi_stride;
  s.v_copies = b.split_oc ? 1 : b.threads;
  s.m_copies = b.threads;
  return s;
}

}  // namespace

std::size_t fused_workspace_bytes(const Geometry& g, const Blocking& b) {
  const Sizes s = sizes_of(g, b);
  return static_cast<std::size_t>(s.v_floats * s.v_copies + s.m_floats * s.m_copies) *
         sizeof(float);
}

void run_fused(const Kernels& k, const Blocking& b, const ConvArgs& args) {
  const Geometry g = make_geometry(*args.p);
  const int64_t nt = b.block_tiles, blocks = ceil_div(g.tiles, nt);
  const int64_t chunks = ceil_div(g.ocp, b.oc_chunk);
  const Sizes s = sizes_of(g, b);
  float* const ws = static_cast<float*>(args.workspace);
  // Channel-blocked V (all icp channels) and M (one chunk of output channels) of one block.
  const TileLayout lv = fused_v_layout(g, b), lm = fused_m_layout(g, b);
  auto count_of = [&](int64_t blk) { return std::min(nt, g.tiles - blk * nt); };
  // GEMMs and output transform of one block's output-channel chunk.
  auto run_chunk = [&](int64_t blk, int64_t chunk, const float* v, float* m) {
    const int64_t t0 = blk * nt, o0 = chunk * b.oc_chunk;
    const int64_t o1 = std::min(o0 + b.oc_chunk, g.ocp);
    k.batched_gemm(g, args.packed, v, lv, count_of(blk), o0, o1, m, lm);
    k.output_transform(g, m, lm, t0, count_of(blk), o0, std::min(o1, g.oc), args.bias, args.dst);
  };
  auto run_block = [&](int64_t blk, float* v, float* m) {
    k.input_transform(g, args.src, blk * nt, count_of(blk), v, lv);
    for (int64_t chunk = 0; chunk < chunks; ++chunk) run_chunk(blk, chunk, v, m);
  };
  if (b.threads <= 1) {
    for (int64_t blk = 0; blk < blocks; ++blk) run_block(blk, ws, ws + s.v_floats);
    return;
  }
  if (!b.split_oc) {
#pragma omp parallel num_threads(b.threads)
    {
      float* v = ws + static_cast<int64_t>(omp_get_thread_num()) * (s.v_floats + s.m_floats);
#pragma omp for schedule(static)
      for (int64_t blk = 0; blk < blocks; ++blk) run_block(blk, v, v + s.v_floats);
    }
    return;
  }
  // split_oc: V shared by the team; each thread its own M chunk buffer.
  float* const v = ws;
#pragma omp parallel num_threads(b.threads)
  {
    const int tid = omp_get_thread_num(), team = omp_get_num_threads();
    float* m = ws + s.v_floats + static_cast<int64_t>(tid) * s.m_floats;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t count = count_of(blk);
      const int64_t a = count * tid / team, z = count * (tid + 1) / team;
      if (z > a) k.input_transform(g, args.src, blk * nt + a, z - a, v + a * lv.t_stride, lv);
#pragma omp barrier
#pragma omp for schedule(dynamic, 1)
      for (int64_t chunk = 0; chunk < chunks; ++chunk) run_chunk(blk, chunk, v, m);
      // (the implicit barrier of the for keeps V until every chunk of the block is done)
    }
  }
}

// Measured on the fitted Zen 3 core (conv_internal.h) with bench/winograd_bench.cc (stage/...):
// the AVX2 16x6 micro-kernel runs the 36 GEMMs at 85-92 GFLOP/s (U streamed from L3/DRAM at
// 256-512 channels costs the low end); the input transform takes ~10 ns per tile and input
// channel, the output transform ~7 ns per tile and output channel (12 and 10 at 224x224, where
// channel planes alias in L1). The portable kernels: ~22 GFLOP/s and about 4x the transform
// time. Rates are ratios to the FMA peak, times scale with the clock (ConvMachine::seconds).
constexpr double kGemmRate = 85.0 / conv_fit::kFmaGflops;
constexpr double kGemmPortableRate = 22.0 / conv_fit::kFmaGflops;

double gemm_seconds(const Geometry& g, const ConvMachine& m) {
  const double flops = 2.0 * kXi * static_cast<double>(g.tiles * g.icp * g.ocp);
  return flops / ((m.avx2 ? kGemmRate : kGemmPortableRate) * m.fma_flops_per_s);
}

double transform_seconds(const Geometry& g, const ConvMachine& m) {
  const double scale = m.avx2 ? 1.0 : 4.0;
  return scale * static_cast<double>(g.tiles) *
         (m.seconds(10e-9) * static_cast<double>(g.icp) +
          m.seconds(7e-9) * static_cast<double>(g.oc));
}

}  // namespace winograd

std::string winograd_why_not(const char* name, const ConvProblem& p) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) return fmt::format("{}: {}", name, invalid);
  if (p.kh != 3 || p.kw != 3) {
    return fmt::format("{}: {}x{} kernel not supported (3x3 only)", name, p.kh, p.kw);
  }
  if (p.sh != 1 || p.sw != 1) {
    const std::string s = p.sh == p.sw ? fmt::format("{}", p.sh) : fmt::format("{}x{}", p.sh, p.sw);
    return fmt::format("{}: stride {} not supported (stride 1 only)", name, s);
  }
  if (p.dh != 1 || p.dw != 1) {
    const std::string d = p.dh == p.dw ? fmt::format("{}", p.dh) : fmt::format("{}x{}", p.dh, p.dw);
    return fmt::format("{}: dilation {} not supported (dense 3x3 only)", name, d);
  }
  if (p.g != 1) return fmt::format("{}: groups (g{}) not supported (g1 only)", name, p.g);
  return "";
}

std::string conv_winograd_why_not(const ConvProblem& p) { return winograd_why_not("winograd", p); }

std::size_t conv_winograd_workspace_bytes(const ConvProblem& p, int threads) {
  return winograd::fused_workspace_bytes(winograd::make_geometry(p),
                                         winograd::plan_fused(p, threads));
}

std::size_t conv_winograd_packed_floats(const ConvProblem& p) {
  const winograd::Geometry g = winograd::make_geometry(p);
  return static_cast<std::size_t>(winograd::kXi * g.ocp * g.icp);
}

// U[xi][o / 16][c][o % 16], zero for o >= oc or c >= ic (the micro-kernel's padded panels).
// Written a panel row at a time: the 16 filters of (o / 16, c) are transformed into a local
// block, then each xi's 16 floats (one cache line) are stored together. Storing each filter's 36
// values straight into the 36 xi planes (a cache line touched per value) took ~2 ms for 128x128
// channels; training transforms the weights every step, and transposed_forward per backward pass.
// Panel rows are independent, so they are split between `threads` (each writes its own lines).
void conv_winograd_pack(const ConvProblem& p, const float* wei, float* packed, int threads) {
  using namespace winograd;
  const Geometry g = make_geometry(p);
  static_assert(kOcBlock == kFilterLanes);
  const int64_t plane = g.ocp * g.icp;  // floats per xi
  const int64_t rows = g.ocp / kOcBlock * g.icp;
  const auto transform = kernels_for(active_simd()).transform_filters;
  const int t = conv_useful_copy_threads(threads, kXi * plane, rows);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    double taps[9][kFilterLanes];
    alignas(64) float block[kXi][kOcBlock];
    gather_filters(p, wei, row / g.icp * kOcBlock, row % g.icp, taps);
    transform(taps, block);
    float* dst = packed + row * kOcBlock;
    for (int64_t xi = 0; xi < kXi; ++xi) {
      std::memcpy(dst + xi * plane, block[xi], sizeof(block[xi]));
    }
  }
}

void conv_winograd_run(const ConvArgs& args) {
  winograd::run_fused(winograd::kernels_for(active_simd()),
                      winograd::plan_fused(*args.p, args.threads), args);
}

double conv_winograd_cost(const ConvProblem& p, int threads) {
  const winograd::Geometry g = winograd::make_geometry(p);
  const ConvMachine m = conv_machine();
  const int used = winograd::plan_fused(p, threads).threads;
  return (winograd::gemm_seconds(g, m) + winograd::transform_seconds(g, m)) / used;
}

}  // namespace nnperf
