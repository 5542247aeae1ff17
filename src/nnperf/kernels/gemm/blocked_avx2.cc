// The blocked GEMM's AVX2+FMA micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators, 2 ymm of
// packed B and 1 broadcast of A per k step (15 of 16 registers). Zen3/Haswell run 2 FMAs per
// cycle with 4-5 cycles latency, so 12 independent chains keep both pipes busy; peak is
// 2 FMA x 8 lanes x 2 FLOPs = 32 FLOPs per cycle. Compiled with -mavx2 -mfma (CMake, by name).
#include <immintrin.h>

#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/blocked_kernel_impl.h"

namespace nnperf::blocked_gemm {

namespace {

// 8 ones then 8 zeros: the mask for the first `count` lanes starts at kLaneMask + 8 - count.
alignas(64) constexpr int kLaneMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

struct Avx2 {
  using V = __m256;
  static constexpr int kWidth = 8, kMr = kTileAvx2.mr, kNv = kTileAvx2.nr / kWidth;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float* p) { return _mm256_load_ps(p); }  // packed B: 32-byte aligned
  static V loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i mask(int count) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLaneMask + 8 - count));
  }
  static V load_partial(const float* p, int count) { return _mm256_maskload_ps(p, mask(count)); }
  static void store_partial(float* p, V v, int count) { _mm256_maskstore_ps(p, mask(count), v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};

}  // namespace

void run_avx2(const Plan& plan) { run_plan<Avx2>(plan); }

}  // namespace nnperf::blocked_gemm
