// The baseline (x86-64, SSE2) peak loops, and the one list of every FMA loop and bandwidth kernel
// across the per-ISA files. Without FMA the update is a multiply and an add, whose chain latency
// is the sum of both (6 cycles on Zen 3), so these rows try 8 and 12 chains.
#include "nnperf/kernels/peak/peak.h"

#include <xmmintrin.h>

#include <vector>

#include "nnperf/kernels/peak/peak_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

const FmaKernel* fma_kernels_avx2(std::size_t* count);
const FmaKernel* fma_kernels_avx512(std::size_t* count);
const BandwidthKernels* bandwidth_kernels_avx2();
const BandwidthKernels* bandwidth_kernels_avx512();
void stream_triad_f64_avx2(double* a, const double* b, const double* c, double s, int64_t n,
                           int64_t reps, int threads);
void stream_triad_f64_avx512(double* a, const double* b, const double* c, double s, int64_t n,
                             int64_t reps, int threads);

namespace {

// One float in the low lane of an xmm register, multiply then add (mulss, addss): the compiler
// cannot pack these chains into vectors as it may with plain float code.
struct ScalarMulAdd {
  using V = __m128;
  static constexpr int kWidth = 1;
  static V set1(float x) { return _mm_set_ss(x); }
  static V fmadd(V a, V b, V c) { return _mm_add_ss(_mm_mul_ss(a, b), c); }
  static V add(V a, V b) { return _mm_add_ss(a, b); }
  static void storeu(float* p, V v) { _mm_store_ss(p, v); }
};

using peak::fma_chains;
using Sse = simd::Portable<simd::F32x4>;  // mulps + addps: -std=c++20 does not contract
constexpr SimdLevel kNeeds = SimdLevel::kScalar;

constexpr FmaKernel kFma[] = {
    {"scalar mul+add", "scalar", kNeeds, 1, 8, fma_chains<ScalarMulAdd, 8>},
    {"scalar mul+add", "scalar", kNeeds, 1, 12, fma_chains<ScalarMulAdd, 12>},
    {"sse mul+add", "sse", kNeeds, 4, 8, fma_chains<Sse, 8>},
    {"sse mul+add", "sse", kNeeds, 4, 12, fma_chains<Sse, 12>},
};

constexpr BandwidthKernels kBandwidth = {"sse", peak::kBlock<Sse>, peak::read_sum<Sse>,
                                         peak::copy<Sse>, peak::triad<Sse>};

std::vector<FmaKernel> all_fma_kernels() {
  std::vector<FmaKernel> all(std::begin(kFma), std::end(kFma));
  for (auto* rows : {fma_kernels_avx2, fma_kernels_avx512}) {
    std::size_t n = 0;
    const FmaKernel* k = rows(&n);
    all.insert(all.end(), k, k + n);
  }
  return all;
}

}  // namespace

std::span<const FmaKernel> fma_kernels() {
  static const std::vector<FmaKernel> all = all_fma_kernels();
  return all;
}

const BandwidthKernels& bandwidth_kernels(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return *bandwidth_kernels_avx512();
    case SimdLevel::kAvx2:
      return *bandwidth_kernels_avx2();
    default:
      return kBandwidth;
  }
}

void stream_triad_f64(double* a, const double* b, const double* c, double s, int64_t n,
                      int64_t reps, int threads, SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return stream_triad_f64_avx512(a, b, c, s, n, reps, threads);
    case SimdLevel::kAvx2:
      return stream_triad_f64_avx2(a, b, c, s, n, reps, threads);
    default:
      return peak::stream_triad_f64_loop(a, b, c, s, n, reps, threads);
  }
}

}  // namespace nnperf
