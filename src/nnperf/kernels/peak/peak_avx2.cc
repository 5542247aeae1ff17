// The FMA loops and bandwidth kernels for CPUs with AVX2 + FMA (compiled with -mavx2 -mfma): FMA
// at three widths, scalar (vfmadd...ss), 128-bit (xmm) and 256-bit (ymm). Zen 3 runs two FMA
// pipes of 4 cycles latency, so 8 chains are the minimum to fill them; 10 and 12 are measured too
// (16 ymm chains would spill). Exported as plain pointers, not std::span: no standard-library
// inline code may be emitted from a file built with these flags.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "nnperf/kernels/peak/peak.h"
#include "nnperf/kernels/peak/peak_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

namespace {

// One float in the low lane of an xmm register: the scalar FMA instruction, 1 lane counted.
struct ScalarFma {
  using V = __m128;
  static constexpr int kWidth = 1;
  static V set1(float x) { return _mm_set_ss(x); }
  static V fmadd(V a, V b, V c) { return _mm_fmadd_ss(a, b, c); }
  static V add(V a, V b) { return _mm_add_ss(a, b); }
  static void storeu(float* p, V v) { _mm_store_ss(p, v); }
};

// 128-bit FMA (VEX-encoded; SSE itself has no FMA).
struct Fma128 {
  using V = __m128;
  static constexpr int kWidth = 4;
  static V set1(float x) { return _mm_set1_ps(x); }
  static V fmadd(V a, V b, V c) { return _mm_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm_add_ps(a, b); }
  static void storeu(float* p, V v) { _mm_storeu_ps(p, v); }
};

using peak::fma_chains;
using simd::Avx2;
constexpr SimdLevel kNeeds = SimdLevel::kAvx2;

constexpr FmaKernel kFma[] = {
    {"scalar fma", "scalar", kNeeds, 1, 8, fma_chains<ScalarFma, 8>},
    {"scalar fma", "scalar", kNeeds, 1, 10, fma_chains<ScalarFma, 10>},
    {"scalar fma", "scalar", kNeeds, 1, 12, fma_chains<ScalarFma, 12>},
    {"sse fma", "sse", kNeeds, 4, 8, fma_chains<Fma128, 8>},
    {"sse fma", "sse", kNeeds, 4, 10, fma_chains<Fma128, 10>},
    {"sse fma", "sse", kNeeds, 4, 12, fma_chains<Fma128, 12>},
    {"avx2 fma", "avx2", kNeeds, 8, 8, fma_chains<Avx2, 8>},
    {"avx2 fma", "avx2", kNeeds, 8, 10, fma_chains<Avx2, 10>},
    {"avx2 fma", "avx2", kNeeds, 8, 12, fma_chains<Avx2, 12>},
};

constexpr BandwidthKernels kBandwidth = {"avx2", peak::kBlock<Avx2>, peak::read_sum<Avx2>,
                                         peak::copy<Avx2>, peak::triad<Avx2>};

}  // namespace

const FmaKernel* fma_kernels_avx2(std::size_t* count) {
  *count = sizeof(kFma) / sizeof(kFma[0]);
  return kFma;
}

const BandwidthKernels* bandwidth_kernels_avx2() { return &kBandwidth; }

void stream_triad_f64_avx2(double* a, const double* b, const double* c, double s, int64_t n,
                           int64_t reps, int threads) {
  peak::stream_triad_f64_loop(a, b, c, s, n, reps, threads);
}

}  // namespace nnperf
