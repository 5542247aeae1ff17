// Our own high-performance GEMM in the GotoBLAS/BLIS style: cache blocking chosen from this CPU's
// cache sizes, packed panels of A and B in the workspace, a register-tiled micro-kernel picked at
// run time (AVX-512, AVX2+FMA or a portable vector kernel), OpenMP over a grid of C blocks.
// This file plans (block sizes, thread grid, workspace) and holds the portable kernel; the loop
// nest itself is blocked_kernel_impl.h, instantiated once per SIMD level.
#include <algorithm>
#include <cstdint>

#include "nnperf/core/cpu.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/blocked_kernel_impl.h"
#include "nnperf/kernels/gemm/gemm_internal.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {
namespace blocked_gemm {

namespace {

// Portable micro-kernel: GCC/Clang vector extensions of 4 floats, lowered to SSE2 on baseline
// x86-64 (or NEON elsewhere); no FMA, so a*b+c rounds twice, still well inside the tolerance.
struct Portable : simd::Portable<simd::F32x4> {
  static constexpr int kMr = kTilePortable.mr, kNv = kTilePortable.nr / kWidth;
};

// Below this many FLOPs per thread a second thread costs more than it saves: waking a spinning
// OpenMP team and joining it costs ~1-2 us, and 0.5 MFLOP is ~6 us of one Zen3 core at ~85
// GFLOP/s (OpenBLAS uses the same threshold). Measured on a quiet machine: m64n64k128 (1 MFLOP)
// runs at ~130 GFLOP/s on 2 threads against ~70 on 1.
constexpr double kMinFlopsPerThread = 0.5e6;

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Tile tile_of(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return kTileAvx512;
    case SimdLevel::kAvx2:
      return kTileAvx2;
    default:
      return kTilePortable;
  }
}

std::size_t plan_bytes(const Plan& pl) {
  return static_cast<std::size_t>(pl.threads * (pl.b_pack_floats + pl.a_pack_floats)) *
         sizeof(float);
}

}  // namespace

BlockSizes block_sizes(SimdLevel level) {
  const Tile t = tile_of(level);
  const CpuInfo& cpu = cpu_info();
  // Caches per core; the fallbacks are Zen3's (the machine this was tuned on). L3 is shared (and
  // misreported inside VMs), so only a quarter of it, capped, is counted on.
  const int64_t l1 = cpu.l1d_bytes > 0 ? cpu.l1d_bytes : 32 * 1024;
  const int64_t l2 = cpu.l2_bytes > 0 ? cpu.l2_bytes : 512 * 1024;
  const int64_t l3 = std::min<int64_t>(cpu.l3_bytes > 0 ? cpu.l3_bytes : 8 << 20, 32 << 20);
  const int64_t f = sizeof(float);
  BlockSizes bs{t.mr, t.nr, 0, 0, 0};
  // kc: the kc x nr micro-panel of B is reused by every micro-kernel call of the ir loop, so it
  // stays in L1 beside the streaming A micro-panel: kc * nr * 4 <= L1 / 2. Zen3 AVX2: 32 KiB / 2
  // / 64 B = kc 256 (BLIS's zen3 choice too). Each k step loads 2 vectors of B and broadcasts 6
  // floats of A for 12 vector FMAs, and a call's 256 k steps amortise the C tile's update.
  bs.kc = std::clamp<int64_t>(l1 / 2 / (t.nr * f) / 8 * 8, 64, 512);
  // mc: the packed mc x kc block of A is reused by every jr micro-panel, so it stays in L2 with
  // room for the B micro-panels streaming through: mc * kc * 4 <= L2 / 2. Zen3: 512 KiB / 2 /
  // 1 KiB = 256 rows, rounded down to the tile (252 for mr = 6).
  bs.mc = std::clamp<int64_t>(l2 / 2 / (bs.kc * f) / t.mr * t.mr, t.mr, 1024 / t.mr * t.mr);
  // nc: each thread's kc x nc packed panel of B is re-read from L3 for every mc block of A:
  // kc * nc * 4 <= L3 / 4, capped at 4096 columns (4 MiB at kc 256), a multiple of nr.
  bs.nc = std::clamp<int64_t>(l3 / 4 / (bs.kc * f) / t.nr * t.nr, t.nr, 4096 / t.nr * t.nr);
  return bs;
}

Plan plan_shape(SimdLevel level, const GemmShape& s, int threads) {
  const BlockSizes bs = block_sizes(level);
  Plan pl{};
  pl.trans_a = s.trans_a;
  pl.trans_b = s.trans_b;
  pl.m = s.m;
  pl.n = s.n;
  pl.k = s.k;
  // Balanced blocks: k = 300 with kc <= 256 runs 2 x 150 rather than 256 + 44.
  pl.kc = s.k == 0 ? 0 : ceil_div(s.k, ceil_div(s.k, bs.kc));
  pl.nc = s.n == 0 ? 0 : round_up(ceil_div(s.n, ceil_div(s.n, bs.nc)), bs.nr);
  // Threads: at most `threads`, at least kMinFlopsPerThread each, at most one per tile.
  const int64_t m_panels = ceil_div(s.m, bs.mr);
  const int64_t n_panels = ceil_div(pl.nc, bs.nr);
  const int64_t t = useful_threads(threads, s.flops(), kMinFlopsPerThread, m_panels * n_panels);
  pl.threads = static_cast<int>(t);
  // Grid threads_m x threads_n: the split with the smallest per-thread tile count; ties go to
  // splitting m, since threads that share rows each pack the same A block.
  int64_t best = -1;
  for (int64_t tm = 1; tm <= t; ++tm) {
    if (t % tm != 0) continue;
    const int64_t work = ceil_div(m_panels, tm) * ceil_div(n_panels, t / tm);
    if (best < 0 || work <= best) {
      best = work;
      pl.threads_m = static_cast<int>(tm);
      pl.threads_n = static_cast<int>(t / tm);
    }
  }
  pl.pack_a = ceil_div(n_panels, pl.threads_n) > kUnpackedAMaxPanels;
  // mc: a thread's rows in balanced chunks of at most bs.mc.
  const int64_t rows = ceil_div(m_panels, pl.threads_m) * bs.mr;
  pl.mc = rows == 0 ? bs.mr : round_up(ceil_div(rows, ceil_div(rows, bs.mc)), bs.mr);
  pl.b_pack_floats = round_up(pl.kc * ceil_div(n_panels, pl.threads_n) * bs.nr, 16);
  pl.a_pack_floats = pl.pack_a ? round_up(pl.mc * pl.kc, 16) : 0;
  return pl;
}

void run_portable(const Plan& plan) { run_plan<Portable>(plan); }

}  // namespace blocked_gemm

void gemm_blocked_with(SimdLevel level, const GemmArgs& args) {
  using namespace blocked_gemm;
  const GemmShape& s = args.shape;
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0 || args.alpha == 0.0f) {  // as in BLAS: A and B are not read
    gemm_scale_c(args);
    return;
  }
  level = std::min(level, cpu_info().simd);
  Plan pl = plan_shape(level, s, args.threads);
  pl.alpha = args.alpha;
  pl.beta = args.beta;
  pl.a = args.a;
  pl.lda = args.lda;
  pl.b = args.b;
  pl.ldb = args.ldb;
  pl.c = args.c;
  pl.ldc = args.ldc;
  pl.pack = static_cast<float*>(args.workspace);
  switch (level) {
    case SimdLevel::kAvx512:
      run_avx512(pl);
      break;
    case SimdLevel::kAvx2:
      run_avx2(pl);
      break;
    default:
      run_portable(pl);
      break;
  }
}

void gemm_blocked(const GemmArgs& args) { gemm_blocked_with(active_simd(), args); }

// Covers every SIMD level, so the same workspace serves whichever kernel runs (and the tests,
// which run each level on one workspace).
std::size_t gemm_blocked_workspace_bytes(const GemmShape& shape, int threads) {
  using namespace blocked_gemm;
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return 0;
  std::size_t bytes = 0;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    bytes = std::max(bytes, plan_bytes(plan_shape(level, shape, threads)));
  }
  return bytes;
}

}  // namespace nnperf
