// AVX2 + FMA path of the activation table: the math of activations_math.h on 8 floats per
// register, with masked loads/stores for the tail (no scalar remainder loop, so every element
// goes through the same code). Compiled with -mavx2 -mfma; called only after a CPUID check.
// Everything here has internal linkage (or is a template on a local type) and the only export
// is constant data (kActivationPathsAvx2), so no AVX2-compiled function can be picked by the
// linker for the portable path.
#include <immintrin.h>

#include <array>
#include <cstdint>

#include "nnperf/kernels/activations_internal.h"
#include "nnperf/kernels/activations_math.h"

namespace nnperf::detail {
namespace {

struct Mask8 {
  __m256 m;
};

struct Vec8 {
  __m256 v;
  Vec8() = default;
  Vec8(float c) : v(_mm256_set1_ps(c)) {}  // NOLINT: implicit broadcast, as the math needs
  explicit Vec8(__m256 x) : v(x) {}
};

inline Vec8 operator+(Vec8 a, Vec8 b) { return Vec8(_mm256_add_ps(a.v, b.v)); }
inline Vec8 operator-(Vec8 a, Vec8 b) { return Vec8(_mm256_sub_ps(a.v, b.v)); }
inline Vec8 operator*(Vec8 a, Vec8 b) { return Vec8(_mm256_mul_ps(a.v, b.v)); }
inline Vec8 operator/(Vec8 a, Vec8 b) { return Vec8(_mm256_div_ps(a.v, b.v)); }
inline Vec8 fmadd(Vec8 a, Vec8 b, Vec8 c) { return Vec8(_mm256_fmadd_ps(a.v, b.v, c.v)); }
// maxps/minps return the second operand when either is NaN: the x86 semantics the math expects.
inline Vec8 vmax(Vec8 a, Vec8 b) { return Vec8(_mm256_max_ps(a.v, b.v)); }
inline Vec8 vmin(Vec8 a, Vec8 b) { return Vec8(_mm256_min_ps(a.v, b.v)); }
inline Vec8 vabs(Vec8 a) { return Vec8(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)); }
inline Vec8 copysign_of(Vec8 mag, Vec8 sign) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  return Vec8(_mm256_or_ps(_mm256_andnot_ps(sign_bit, mag.v), _mm256_and_ps(sign_bit, sign.v)));
}
inline Mask8 lt(Vec8 a, Vec8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
inline Mask8 gt(Vec8 a, Vec8 b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
inline Vec8 select(Mask8 m, Vec8 a, Vec8 b) { return Vec8(_mm256_blendv_ps(b.v, a.v, m.m)); }
inline Vec8 pow2(Vec8 n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
  return Vec8(_mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}
inline Vec8 truncate12(Vec8 a) {
  return Vec8(_mm256_and_ps(a.v, _mm256_castsi256_ps(_mm256_set1_epi32(~0xFFF))));
}

// Lanes [0, count) set, count in [1, 7].
inline __m256i tail_mask(int64_t count) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), lane);
}

template <class Op>
void forward_avx2(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, Op::forward(Vec8(_mm256_loadu_ps(src + i))).v);
  }
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(dst + i, m, Op::forward(Vec8(_mm256_maskload_ps(src + i, m))).v);
  }
}

template <class Op>
void backward_avx2(const float* src, const float* dst, const float* d_dst, float* d_src,
                   int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Vec8 x(_mm256_loadu_ps(src + i));
    const Vec8 y = Op::kUsesDst ? Vec8(_mm256_loadu_ps(dst + i)) : Vec8(0.0f);
    const Vec8 dy(_mm256_loadu_ps(d_dst + i));
    _mm256_storeu_ps(d_src + i, Op::backward(x, y, dy).v);
  }
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const Vec8 x(_mm256_maskload_ps(src + i, m));
    const Vec8 y = Op::kUsesDst ? Vec8(_mm256_maskload_ps(dst + i, m)) : Vec8(0.0f);
    const Vec8 dy(_mm256_maskload_ps(d_dst + i, m));
    _mm256_maskstore_ps(d_src + i, m, Op::backward(x, y, dy).v);
  }
}

template <class... Ops>
constexpr std::array<ActivationPath, sizeof...(Ops)> make_paths(OpList<Ops...>) {
  return {{{Ops::kName, &forward_avx2<Ops>, &backward_avx2<Ops>}...}};
}

}  // namespace

constexpr std::array<ActivationPath, kNumActivations> kActivationPathsAvx2 =
    make_paths(ActivationOps{});

}  // namespace nnperf::detail
