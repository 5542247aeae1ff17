// The blocked GEMM's AVX-512 micro-kernel: a 14 x 32 tile of C in 28 zmm accumulators, 2 zmm of
// packed B and 1 broadcast of A per k step (31 of 32 registers; checked in the disassembly: no
// spills), so 28 independent FMA chains cover 2 pipes x 4 cycles of latency. Peak: 2 FMA x 16
// lanes x 2 FLOPs = 64 FLOPs per cycle. Compiled with -mavx512f... (CMake, by file name); runs
// only when CPUID reports AVX-512 (see active_simd()). Not yet run on real AVX-512 hardware.
#include <immintrin.h>

#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/blocked_kernel_impl.h"

namespace nnperf::blocked_gemm {

namespace {

struct Avx512 {
  using V = __m512;
  static constexpr int kWidth = 16, kMr = kTileAvx512.mr, kNv = kTileAvx512.nr / kWidth;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float* p) { return _mm512_load_ps(p); }  // packed B: 64-byte aligned
  static V loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 mask(int count) { return static_cast<__mmask16>((1u << count) - 1u); }
  static V load_partial(const float* p, int count) { return _mm512_maskz_loadu_ps(mask(count), p); }
  static void store_partial(float* p, V v, int count) { _mm512_mask_storeu_ps(p, mask(count), v); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
};

}  // namespace

void run_avx512(const Plan& plan) { run_plan<Avx512>(plan); }

}  // namespace nnperf::blocked_gemm
