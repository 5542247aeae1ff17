// The peak loops, written once over a SIMD traits type K (kernels/simd_traits.h) and
// instantiated by peak.cc (baseline), peak_avx2.cc and peak_avx512.cc, each compiled with its own
// SIMD flags. Internal linkage only, so no instruction of one ISA can reach the other's callers
// through the linker; each file exports plain functions with the level in their names.
#pragma once
#include <cstdint>

namespace nnperf::peak {
namespace {

// kChains independent accumulators, each one K::fmadd per iteration; returns the FLOPs done (2
// per lane per update) and stores a value depending on every accumulator in *sink. The final sum
// is stored and added by hand: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized. kChains must
// leave room in the register file for the two constants (AVX2: 16 ymm, so at most 14 chains; 16
// chains spill and run at half speed on Zen 3).
template <class K, int kChains>
double fma_chains(int64_t iters, float* sink) {
  using V = typename K::V;
  V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = K::set1(static_cast<float>(c + 1));
  const V a = K::set1(0.999999f), b = K::set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (int c = 0; c < kChains; ++c) acc[c] = K::fmadd(acc[c], a, b);
  }
  V s = acc[0];
  for (int c = 1; c < kChains; ++c) s = K::add(s, acc[c]);
  alignas(64) float out[K::kWidth];
  K::storeu(out, s);
  float t = 0;
  for (float v : out) t += v;
  *sink = t;
  return 2.0 * K::kWidth * kChains * static_cast<double>(iters);
}

// Bandwidth kernels: n is a multiple of kBlock<K> floats. The empty asm between the passes of copy
// and triad keeps the compiler from merging or dropping repeated stores; read needs none (every
// load feeds the sum, in order), and one there would spill its accumulators every pass.
template <class K>
constexpr int64_t kBlock = 8 * K::kWidth;

template <class K>
float read_sum(const float* a, int64_t n, int64_t reps) {
  using V = typename K::V;
  V acc[8];
  for (V& v : acc) v = K::zero();
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t i = 0; i < n; i += kBlock<K>) {
      for (int j = 0; j < 8; ++j) acc[j] = K::add(acc[j], K::load(a + i + j * K::kWidth));
    }
  }
  for (int j = 1; j < 8; ++j) acc[0] = K::add(acc[0], acc[j]);
  alignas(64) float out[K::kWidth];
  K::storeu(out, acc[0]);
  float t = 0;
  for (float v : out) t += v;
  return t;
}

template <class K>
void copy(float* dst, const float* src, int64_t n, int64_t reps) {
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t i = 0; i < n; i += kBlock<K>) {
      for (int j = 0; j < 8; ++j)
        K::storeu(dst + i + j * K::kWidth, K::load(src + i + j * K::kWidth));
    }
    asm volatile("" ::: "memory");
  }
}

template <class K>
void triad(float* a, const float* b, const float* c, float s, int64_t n, int64_t reps) {
  const typename K::V vs = K::set1(s);
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t i = 0; i < n; i += kBlock<K>) {
      for (int j = 0; j < 8; ++j) {
        const int64_t k = i + j * K::kWidth;
        K::storeu(a + k, K::fmadd(vs, K::load(c + k), K::load(b + k)));
      }
    }
    asm volatile("" ::: "memory");
  }
}

// STREAM's triad as STREAM writes it (a plain loop the compiler vectorizes for this file's
// flags), `reps` times in one parallel region; nowait: the static schedule gives each thread the
// same slice every pass, so passes need no barrier between them. Built with -funroll-loops (as
// STREAM often is): GCC's one-vector-per-iteration loop is bound by loop overhead in L1 (146
// GB/s against 204 unrolled on one Zen 3 core, measured), which is not what this check is for.
// (clang unrolls such loops at -O2 without being asked, and has no optimize attribute.)
#if defined(__clang__)
#define NNPERF_UNROLL_LOOPS
#else
#define NNPERF_UNROLL_LOOPS __attribute__((optimize("unroll-loops")))
#endif
NNPERF_UNROLL_LOOPS void stream_triad_f64_loop(double* a, const double* b, const double* c,
                                               double s, int64_t n, int64_t reps, int threads) {
#pragma omp parallel num_threads(threads)
  for (int64_t r = 0; r < reps; ++r) {
#pragma omp for schedule(static) nowait
    for (int64_t j = 0; j < n; ++j) a[j] = b[j] + s * c[j];
  }
}

}  // namespace
}  // namespace nnperf::peak
