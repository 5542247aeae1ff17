// The FMA peak loop, written once over a SIMD traits type K (kernels/simd_traits.h) and
// instantiated by peak_avx2.cc and peak_avx512.cc, each compiled with its own SIMD flags.
// Internal linkage only, so no instruction of one ISA can reach the other's callers through the
// linker.
#pragma once
#include <cstdint>

namespace nnperf::peak {
namespace {

// kChains independent accumulators, each one FMA per round; returns the FLOPs done (2 per lane
// per FMA) and stores a value depending on every accumulator in *sink. The final sum is stored
// and added by hand: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized.
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
  alignas(sizeof(V)) float out[K::kWidth];
  K::storeu(out, s);
  float t = 0;
  for (float v : out) t += v;
  *sink = t;
  return 2.0 * K::kWidth * kChains * static_cast<double>(iters);
}

}  // namespace
}  // namespace nnperf::peak
