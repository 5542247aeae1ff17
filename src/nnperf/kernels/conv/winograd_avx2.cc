// AVX2+FMA Winograd F(4x4, 3x3) stage kernels (compiled with -mavx2 -mfma by file name).
// Input transform: 8 input channels per ymm; the 6 tile rows of 8 channels are loaded as 128-bit
// halves and transposed in-lane (masked 8x8 transposes at the borders) so lanes are channels,
// then B^T d B is 2 x 6 sets of 14 vector ops. GEMM: a 16 (oc) x 6 (tiles) register tile, 12 ymm
// accumulators, per channel 2 loads of U and 6 broadcasts of V; Zen3's 2 FMA pipes x 8 lanes x 2
// FLOPs = 32 FLOPs per cycle peak. Output transform: 8 output channels per ymm, then a 4x8
// transpose per output row so each channel's 4 outputs leave as one 128-bit store. The file
// exports only the kernel table and uses no library templates, so no AVX2 code can be picked by
// the linker for the portable path.
#include <immintrin.h>

#include <cstdint>

#include "nnperf/kernels/conv/winograd_internal.h"

namespace nnperf::winograd {

namespace {

using V = __m256;

int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
int64_t at(const TileLayout& l, int64_t xi, int64_t t, int64_t c) {
  return xi * l.xi_stride + t * l.t_stride + (c / 8) * l.group_stride + c % 8;
}

// r = B^T d (see winograd_portable.cc for the matrix); 14 vector ops for 6 outputs.
inline void input_1d(const V* d, V* r) {
  const V c2 = _mm256_set1_ps(2.0f), c4 = _mm256_set1_ps(4.0f), c5 = _mm256_set1_ps(5.0f);
  const V m42 = _mm256_sub_ps(d[4], d[2]), m31 = _mm256_sub_ps(d[3], d[1]);
  r[0] = _mm256_fmadd_ps(c4, d[0], _mm256_fnmadd_ps(c5, d[2], d[4]));
  r[1] = _mm256_fnmadd_ps(c4, _mm256_add_ps(d[1], d[2]), _mm256_add_ps(d[3], d[4]));
  r[2] = _mm256_fmadd_ps(c4, _mm256_sub_ps(d[1], d[2]), _mm256_sub_ps(d[4], d[3]));
  r[3] = _mm256_fmadd_ps(c2, m31, m42);
  r[4] = _mm256_fnmadd_ps(c2, m31, m42);
  r[5] = _mm256_fmadd_ps(c4, d[1], _mm256_fnmadd_ps(c5, d[3], d[5]));
}

// o = A^T m; 10 vector ops for 4 outputs.
inline void output_1d(const V* m, V* o) {
  const V a12 = _mm256_add_ps(m[1], m[2]), s12 = _mm256_sub_ps(m[1], m[2]);
  const V a34 = _mm256_add_ps(m[3], m[4]), s34 = _mm256_sub_ps(m[3], m[4]);
  o[0] = _mm256_add_ps(_mm256_add_ps(m[0], a12), a34);
  o[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), s34, s12);
  o[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), a34, a12);
  o[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), s34, s12), m[5]);
}

// Columns 0..5 of the 8x8 matrix whose rows are r[0..7]: c[j] lane i = r[i] lane j.
inline void transpose_8x6(const V* r, V* c) {
  const V t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const V t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const V t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const V t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const V s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const V s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const V s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const V s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  c[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  c[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  c[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  c[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  c[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  c[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
}

// Columns 0..5 of the 8 channel rows at `row` (stride `plane`) with channels as lanes: 128-bit
// loads of channels i and i + 4 share a register, so in-lane 4x4 transposes finish the job (12
// shuffles and 8 inserts, against 22 shuffles for 8x8 on full rows). kAllCh: all 8 channels exist.
template <bool kAllCh>
inline void load_columns(const float* row, int64_t plane, int64_t nc, V* c) {
  auto half = [&](int64_t ch, int64_t col) {
    return kAllCh || ch < nc ? _mm_loadu_ps(row + ch * plane + col) : _mm_setzero_ps();
  };
  auto pair = [&](int64_t ch, int64_t col) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(half(ch, col)), half(ch + 4, col), 1);
  };
  const V a0 = pair(0, 0), a1 = pair(1, 0), a2 = pair(2, 0), a3 = pair(3, 0);
  const V b0 = pair(0, 4), b1 = pair(1, 4), b2 = pair(2, 4), b3 = pair(3, 4);
  const V t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
  const V t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
  const V u0 = _mm256_unpacklo_ps(b0, b1), u2 = _mm256_unpacklo_ps(b2, b3);
  c[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  c[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  c[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  c[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
  c[4] = _mm256_shuffle_ps(u0, u2, 0x44);
  c[5] = _mm256_shuffle_ps(u0, u2, 0xEE);
}

// One tile, 8 channels starting at `s` (channel stride `plane`), `nc` of them real. kFull: all
// 8 columns from x0 are inside the row, else `mask` selects the columns to read.
template <bool kFull, bool kAllCh>
inline void input_tile(const Geometry& g, const float* s, int64_t plane, int64_t nc, int64_t y0,
                       __m256i mask, float* vt, int64_t v_xi) {
  V e[kAlpha][kAlpha];  // e[y][xi_x]: rows transformed along x
  for (int64_t y = 0; y < kAlpha; ++y) {
    const int64_t h = y0 + y;
    if (h < 0 || h >= g.ih) {
      for (int64_t xx = 0; xx < kAlpha; ++xx) e[y][xx] = _mm256_setzero_ps();
      continue;
    }
    const float* row = s + h * g.iw;
    V cols[kAlpha];
    if (kFull) {
      load_columns<kAllCh>(row, plane, nc, cols);
    } else {
      V rows[kIcBlock];
      for (int64_t ch = 0; ch < kIcBlock; ++ch) {
        rows[ch] =
            kAllCh || ch < nc ? _mm256_maskload_ps(row + ch * plane, mask) : _mm256_setzero_ps();
      }
      transpose_8x6(rows, cols);
    }
    input_1d(cols, e[y]);
  }
  for (int64_t xx = 0; xx < kAlpha; ++xx) {
    V col[kAlpha], r[kAlpha];
    for (int64_t y = 0; y < kAlpha; ++y) col[y] = e[y][xx];
    input_1d(col, r);
    for (int64_t xy = 0; xy < kAlpha; ++xy) _mm256_storeu_ps(vt + (xy * kAlpha + xx) * v_xi, r[xy]);
  }
}

// Channel groups outer, tiles inner: consecutive tiles of a row share most of their 48 source
// cache lines (8 channels x 6 rows), which then stay in L1, and with V channel-blocked each of
// the 36 output streams is written sequentially.
void input_transform(const Geometry& g, const float* src, int64_t t0, int64_t count, float* v,
                     const TileLayout& lv) {
  const int64_t per_image = g.tiles_h * g.tiles_w, plane = g.ih * g.iw;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t c0 = 0; c0 < g.icp; c0 += kIcBlock) {
    const int64_t nc = min64(kIcBlock, g.ic - c0);
    for (int64_t t = t0; t < t0 + count; ++t) {
      const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
      const int64_t y0 = ty * kTile - g.ph, x0 = tx * kTile - g.pw;
      // Pointer to column x0 of channel c0 (x0 may be -pw: masked lanes are never read).
      const float* s = src + (n * g.ic + c0) * plane + x0;
      float* vt = v + at(lv, 0, t - t0, c0);
      if (x0 >= 0 && x0 + 8 <= g.iw) {
        if (nc == kIcBlock) {
          input_tile<true, true>(g, s, plane, nc, y0, _mm256_setzero_si256(), vt, lv.xi_stride);
        } else {
          input_tile<true, false>(g, s, plane, nc, y0, _mm256_setzero_si256(), vt, lv.xi_stride);
        }
        continue;
      }
      // Lanes l in [lo, hi) hold columns x0 + l inside the row (and l < 6, the tile's width).
      const int lo = static_cast<int>(max64(0, -x0));
      const int hi = static_cast<int>(min64(kAlpha, g.iw - x0));
      const __m256i mask = _mm256_and_si256(_mm256_cmpgt_epi32(lane, _mm256_set1_epi32(lo - 1)),
                                            _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), lane));
      if (nc == kIcBlock) {
        input_tile<false, true>(g, s, plane, nc, y0, mask, vt, lv.xi_stride);
      } else {
        input_tile<false, false>(g, s, plane, nc, y0, mask, vt, lv.xi_stride);
      }
    }
  }
}

// M(j, 0..15) = sum_c U[c][0..15] * V(j, c) for j < kNrT tiles, over `groups` groups of 8
// channels; V and M channel-blocked, so the kNrT tiles of a group sit at v + 8j (one base
// pointer, constant offsets) and the two 8-channel halves of M at m and m + m_group.
template <int kNrT>
void gemm_tile(int64_t groups, const float* u, const float* v, int64_t v_group, float* m,
               int64_t m_group) {
  V acc0[kNrT], acc1[kNrT];
#pragma GCC unroll 6
  for (int j = 0; j < kNrT; ++j) acc0[j] = acc1[j] = _mm256_setzero_ps();
  for (int64_t cg = 0; cg < groups; ++cg, u += 8 * kOcBlock, v += v_group) {
#pragma GCC unroll 8
    for (int cc = 0; cc < 8; ++cc) {
      const V u0 = _mm256_loadu_ps(u + cc * kOcBlock), u1 = _mm256_loadu_ps(u + cc * kOcBlock + 8);
#pragma GCC unroll 6
      for (int j = 0; j < kNrT; ++j) {
        const V b = _mm256_broadcast_ss(v + j * 8 + cc);
        acc0[j] = _mm256_fmadd_ps(u0, b, acc0[j]);
        acc1[j] = _mm256_fmadd_ps(u1, b, acc1[j]);
      }
    }
  }
#pragma GCC unroll 6
  for (int j = 0; j < kNrT; ++j) {
    _mm256_storeu_ps(m + j * 8, acc0[j]);
    _mm256_storeu_ps(m + m_group + j * 8, acc1[j]);
  }
}

void batched_gemm(const Geometry& g, const float* u, const float* v, const TileLayout& lv,
                  int64_t count, int64_t o0, int64_t o1, float* m, const TileLayout& lm) {
  const int64_t groups = g.icp / 8;
  for (int64_t xi = 0; xi < kXi; ++xi) {
    const float* u_xi = u + xi * g.ocp * g.icp;
    for (int64_t ob = o0; ob < o1; ob += kOcBlock) {
      const float* panel = u_xi + ob * g.icp;  // icp x 16, reused from L1 by every tile group
      int64_t tg = 0;
      for (; tg + kNr <= count; tg += kNr) {
        gemm_tile<kNr>(groups, panel, v + at(lv, xi, tg, 0), lv.group_stride,
                       m + at(lm, xi, tg, ob - o0), lm.group_stride);
      }
      const float* vt = v + at(lv, xi, tg, 0);
      float* mt = m + at(lm, xi, tg, ob - o0);
      switch (count - tg) {
        case 1:
          gemm_tile<1>(groups, panel, vt, lv.group_stride, mt, lm.group_stride);
          break;
        case 2:
          gemm_tile<2>(groups, panel, vt, lv.group_stride, mt, lm.group_stride);
          break;
        case 3:
          gemm_tile<3>(groups, panel, vt, lv.group_stride, mt, lm.group_stride);
          break;
        case 4:
          gemm_tile<4>(groups, panel, vt, lv.group_stride, mt, lm.group_stride);
          break;
        case 5:
          gemm_tile<5>(groups, panel, vt, lv.group_stride, mt, lm.group_stride);
          break;
        default:
          break;
      }
    }
  }
}

// Output-channel groups outer, tiles inner, so the 32 destination cache lines of a group
// (8 channels x 4 rows) are completed by consecutive tiles while still in L1.
void output_transform(const Geometry& g, const float* m, const TileLayout& lm, int64_t t0,
                      int64_t count, int64_t o0, int64_t o1, const float* bias, float* dst) {
  const int64_t per_image = g.tiles_h * g.tiles_w, plane = g.oh * g.ow;
  const __m128i lane4 = _mm_setr_epi32(0, 1, 2, 3);
  const __m256i lane8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t o = o0; o < o1; o += 8) {
    const int64_t no = min64(8, o1 - o);
    V b = _mm256_setzero_ps();
    if (bias != nullptr) {
      const __m256i bmask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(no)), lane8);
      b = _mm256_maskload_ps(bias + o, bmask);
    }
    for (int64_t t = t0; t < t0 + count; ++t) {
      const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
      const int64_t oy = ty * kTile, ox = tx * kTile;
      const int64_t rows = min64(kTile, g.oh - oy), cols = min64(kTile, g.ow - ox);
      const float* mt = m + at(lm, 0, t - t0, o - o0);
      V s[kTile][kAlpha];  // A^T applied along y
      for (int64_t xx = 0; xx < kAlpha; ++xx) {
        V col[kAlpha], out[kTile];
        for (int64_t xy = 0; xy < kAlpha; ++xy) {
          col[xy] = _mm256_loadu_ps(mt + (xy * kAlpha + xx) * lm.xi_stride);
        }
        output_1d(col, out);
        for (int64_t y = 0; y < kTile; ++y) s[y][xx] = out[y];
      }
      float* d0 = dst + ((n * g.oc + o) * g.oh + oy) * g.ow + ox;
      const bool full = cols == kTile && no == 8;
      const __m128i col_mask = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(cols)), lane4);
      for (int64_t y = 0; y < rows; ++y) {
        V r[kTile];
        output_1d(s[y], r);
        for (int64_t x = 0; x < kTile; ++x) r[x] = _mm256_add_ps(r[x], b);
        // 4 x 8 transpose: q[j] low half = channel j's 4 outputs, high half = channel j + 4's.
        const V t0v = _mm256_unpacklo_ps(r[0], r[1]), t1v = _mm256_unpackhi_ps(r[0], r[1]);
        const V t2v = _mm256_unpacklo_ps(r[2], r[3]), t3v = _mm256_unpackhi_ps(r[2], r[3]);
        const V q[4] = {_mm256_shuffle_ps(t0v, t2v, 0x44), _mm256_shuffle_ps(t0v, t2v, 0xEE),
                        _mm256_shuffle_ps(t1v, t3v, 0x44), _mm256_shuffle_ps(t1v, t3v, 0xEE)};
        float* d = d0 + y * g.ow;
        if (full) {
          for (int j = 0; j < 4; ++j) {
            _mm_storeu_ps(d + j * plane, _mm256_castps256_ps128(q[j]));
            _mm_storeu_ps(d + (j + 4) * plane, _mm256_extractf128_ps(q[j], 1));
          }
        } else {
          for (int64_t ch = 0; ch < no; ++ch) {
            const __m128 val =
                ch < 4 ? _mm256_castps256_ps128(q[ch]) : _mm256_extractf128_ps(q[ch - 4], 1);
            _mm_maskstore_ps(d + ch * plane, col_mask, val);
          }
        }
      }
    }
  }
}

}  // namespace

const Kernels kKernelsAvx2 = {input_transform, batched_gemm, output_transform,
                              transform_filters_avx2};

}  // namespace nnperf::winograd
