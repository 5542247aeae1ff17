// The blocked GEMM's AVX2+FMA micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators, 2 ymm of
// packed B and 1 broadcast of A per k step (15 of 16 registers). Zen3/Haswell run 2 FMAs per
// cycle with 4-5 cycles latency, so 12 independent chains keep both pipes busy; peak is
// 2 FMA x 8 lanes x 2 FLOPs = 32 FLOPs per cycle. Compiled with -mavx2 -mfma (CMake, by name).
#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/blocked_kernel_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf::blocked_gemm {

namespace {

struct Avx2 : simd::Avx2 {  // load: packed B is 32-byte aligned
  static constexpr int kMr = kTileAvx2.mr, kNv = kTileAvx2.nr / kWidth;
};

}  // namespace

void run_avx2(const Plan& plan) { run_plan<Avx2>(plan); }

}  // namespace nnperf::blocked_gemm
