// Plain 2-D float transposes: dst[j*ld_dst + i] = src[i*ld_src + j] for a rows x cols block.
// The layout changes of kernels that run GEMMs on another layout than the tensors' (conv's
// gemm_live_taps: NCHW <-> NHWC, OIHW <-> [oc][kh][kw][ic]). One thread; callers split the work.
#pragma once
#include <cstdint>

#include "nnperf/core/cpu.h"

namespace nnperf {

using TransposeFn = void (*)(const float* src, int64_t rows, int64_t cols, int64_t ld_src,
                             float* dst, int64_t ld_dst);

// The transpose for `level`, capped at what this CPU runs (AVX-512 takes the AVX2 one): 8 x 8
// blocks in registers with AVX2, else 8 x 8 blocks of scalar moves. Both move the same floats.
TransposeFn transpose_floats_at(SimdLevel level);

// The one for active_simd().
void transpose_floats(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                      int64_t ld_dst);

namespace detail {
void transpose_floats_avx2(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                           int64_t ld_dst);  // transpose_avx2.cc
}  // namespace detail

}  // namespace nnperf
