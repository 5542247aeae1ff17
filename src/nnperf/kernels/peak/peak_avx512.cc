// The AVX-512 FMA loops and bandwidth kernels (compiled with -mavx512f ...): 32 zmm registers, so
// 12 to 24 chains fit (server Intel cores have two 512-bit FMA pipes, others one; which is what
// these loops are here to find out). Exported as plain pointers, not std::span: no
// standard-library inline code may be emitted from a file built with these flags.
#include <cstddef>
#include <cstdint>

#include "nnperf/kernels/peak/peak.h"
#include "nnperf/kernels/peak/peak_impl.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

namespace {

using peak::fma_chains;
using simd::Avx512;
constexpr SimdLevel kNeeds = SimdLevel::kAvx512;

constexpr FmaKernel kFma[] = {
    {"avx512 fma", "avx512", kNeeds, 16, 12, fma_chains<Avx512, 12>},
    {"avx512 fma", "avx512", kNeeds, 16, 16, fma_chains<Avx512, 16>},
    {"avx512 fma", "avx512", kNeeds, 16, 24, fma_chains<Avx512, 24>},
};

constexpr BandwidthKernels kBandwidth = {"avx512", peak::kBlock<Avx512>, peak::read_sum<Avx512>,
                                         peak::copy<Avx512>, peak::triad<Avx512>};

}  // namespace

const FmaKernel* fma_kernels_avx512(std::size_t* count) {
  *count = sizeof(kFma) / sizeof(kFma[0]);
  return kFma;
}

const BandwidthKernels* bandwidth_kernels_avx512() { return &kBandwidth; }

void stream_triad_f64_avx512(double* a, const double* b, const double* c, double s, int64_t n,
                             int64_t reps, int threads) {
  peak::stream_triad_f64_loop(a, b, c, s, n, reps, threads);
}

}  // namespace nnperf
