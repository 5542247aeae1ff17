// Internals of the blocked GEMM shared by blocked.cc (plan, dispatch, portable kernel),
// blocked_avx2.cc and blocked_avx512.cc (the FMA kernels), and the tests, which run every SIMD
// path the CPU supports in one process. The ISA files see only the plain structs below, so no
// inline function is ever compiled with both baseline and -mavx2/-mavx512f flags.
#pragma once
#include <cstdint>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

// Runs the blocked GEMM with the micro-kernel of `level` (capped at what this CPU supports).
// args.workspace must hold gemm_blocked_workspace_bytes(args.shape, args.threads) bytes.
void gemm_blocked_with(SimdLevel level, const GemmArgs& args);

namespace blocked_gemm {

// Register tile of each micro-kernel: mr rows x nr columns of C held in vector registers.
struct Tile {
  int mr;
  int nr;
};
inline constexpr Tile kTilePortable{4, 8};  // 8 accumulators of 4 floats (SSE2/NEON-sized)
inline constexpr Tile kTileAvx2{6, 16};     // 12 ymm accumulators + 2 for B + 1 broadcast
inline constexpr Tile kTileAvx512{14, 32};  // 28 zmm accumulators + 2 for B + 1 broadcast

// A is packed only when a thread's A block meets more than this many B micro-panels; below, the
// packing costs more than the contiguous reads save (n = 10 output layers: 2x faster unpacked).
inline constexpr int64_t kUnpackedAMaxPanels = 2;

// Cache block sizes for one SIMD level (upper bounds; a plan balances them to the shape).
struct BlockSizes {
  int64_t mr, nr;
  int64_t mc, kc, nc;
};
BlockSizes block_sizes(SimdLevel level);

// Everything one run needs, fixed before any thread starts.
struct Plan {
  bool trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  int64_t mc, kc, nc;        // blocks: mc multiple of mr, nc multiple of nr
  int threads;               // threads used (<= args.threads; fewer for small problems)
  int threads_m, threads_n;  // threads_m * threads_n == threads: the grid over C
  bool pack_a;               // false: A is read in place (n spans few micro-panels)
  // Workspace: one slice per thread, b_pack_floats of packed op(B) (kc x its share of nc) then
  // a_pack_floats of packed op(A) (mc x kc); both multiples of 16 floats (64-byte aligned).
  float* pack;
  int64_t b_pack_floats, a_pack_floats;
};

// Block sizes, thread grid and A packing for one shape (no pointers yet); level as given.
Plan plan_shape(SimdLevel level, const GemmShape& shape, int threads);

void run_portable(const Plan& plan);
void run_avx2(const Plan& plan);
void run_avx512(const Plan& plan);

}  // namespace blocked_gemm
}  // namespace nnperf
