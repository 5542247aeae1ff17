// The blocked GEMM's AVX-512 micro-kernel: a 14 x 32 tile of C in 28 zmm accumulators, 2 zmm of
// packed B and 1 broadcast of A per k step (31 of 32 registers; checked in the disassembly: no
// spills), so 28 independent FMA chains cover 2 pipes x 4 cycles of latency. Peak: 2 FMA x 16
// lanes x 2 FLOPs = 64 FLOPs per cycle. Compiled with -mavx512f... (CMake, by file name); runs
// only when CPUID reports AVX-512 (see active_simd()). Not yet run on real AVX-512 hardware.
#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/blocked_kernel_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf::blocked_gemm {

namespace {

struct Avx512 : simd::Avx512 {  // load: packed B is 64-byte aligned
  static constexpr int kMr = kTileAvx512.mr, kNv = kTileAvx512.nr / kWidth;
};

}  // namespace

void run_avx512(const Plan& plan) { run_plan<Avx512>(plan); }

}  // namespace nnperf::blocked_gemm
