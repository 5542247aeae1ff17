// The implicit-GEMM convolutions' loop nest (`implicit_gemm`, `implicit_precomp_gemm`), written
// once over a SIMD traits type K (conv_simd.h) and instantiated by implicit_gemm.cc (portable)
// and implicit_gemm_avx2.cc (AVX2+FMA).
//
// Per image and group it is the GEMM dst[ocg x N] = wei[ocg x K] * col[K x N] (N = oh*ow,
// K = icg*kh*kw) in the GotoBLAS/BLIS loop nest, except that the K x N patch matrix is never
// materialised: each thread packs only the kc x nc panel of it that it is about to use, straight
// from the input, into 16-column micro-panels (kc x 16 floats: 16 KiB at kc 256, stays in L1
// while the ir loop streams the weight panels from L2). The weights are packed once at plan time
// into 6-row panels per k block, so the run packs nothing but input panels:
//   jc: nc output pixels of this thread            (the packed kc x nc panel: L2/L3)
//   pc: kc of the reduction                        -> pack the input panel (im2col on the fly)
//   mb: mc output channels (weight block in L2)
//   jr: 16 pixels (micro-panel in L1)
//   ir: 6 output channels -> 6 x 16 micro-kernel, 12 accumulators, 2 loads + 6 broadcasts per
//       12 FMAs (the blocked GEMM's micro-kernel idea).
// implicit_gemm computes each patch element's input position and bounds on the fly;
// implicit_precomp_gemm reads a zero-padded copy of the image (workspace) at offsets
// koff[k] + noff[j] precomputed at plan time, so its packing loop only loads (AVX2 gathers, or
// plain vector loads where 16 pixels are contiguous).
#pragma once
#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "nnperf/kernels/conv/conv_simd.h"

namespace nnperf::conv_igemm {

inline constexpr int kMr = 6;   // output channels per micro-kernel
inline constexpr int kNr = 16;  // output pixels per micro-kernel (2 vectors of 8)

using alias_i32 = int32_t __attribute__((may_alias));

// Everything one run needs (plain fields only, see direct_impl.h for why).
struct Plan {
  int64_t mb, g, ic, icg, oc, ocg, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t n, k;         // GEMM columns (oh*ow) and reduction length (icg*kh*kw)
  int64_t kc, kblocks;  // k block (balanced: k = kblocks blocks of <= kc), as packed
  int64_t m_panels;     // ceil(ocg / 6)
  int64_t mc_panels;    // weight panels per L2 block
  int64_t nc_panels;    // pixel micro-panels per packed input panel
  const float* src;
  const float* packed_a;  // [g][kblock][m_panel][kc_b][6]
  const float* bias;
  float* dst;
  float* bpack;  // per thread: kc * nc_panels * 16 floats
  int64_t bpack_floats;
  // implicit_precomp_gemm only
  bool precomp;
  // Padded image, each padded row split into sw phases (phase r holds columns r, r+sw, ...,
  // wph of them), so that consecutive outputs read consecutive floats at any stride:
  // hp = ih + 2ph rows of rs = sw * wph floats, wph = ceil((iw + 2pw) / sw).
  int64_t hp, wph, rs;
  float* xpad;            // ic padded planes of the current image (when pad_copy)
  const alias_i32* koff;  // [k]: c*hp*rs + r*dh*rs + ((s*dw) % sw)*wph + (s*dw) / sw
  // [n]: oy*sh*rs + ox, strictly increasing, so "last - first == 15" means contiguous
  const alias_i32* noff;
  bool pad_copy;  // false at stride 1 without padding: the image itself is read
  int threads;
};

void run_portable(const Plan& pl);
void run_avx2(const Plan& pl);

namespace {

using conv_simd::min_i64;

// dst[p*16 + j] = col[pc + p][j0 + j] for p < kc, j < 16 (pixels past n read pixel n-1;
// their results are never stored). Positions and bounds computed here.
template <class K>
void pack_panel_onthefly(const Plan& pl, const float* src, int64_t j0, int64_t pc, int64_t kc,
                         float* dst) {
  int64_t hb[kNr], wb[kNr];
  for (int j = 0; j < kNr; ++j) {
    const int64_t pix = min_i64(j0 + j, pl.n - 1);
    hb[j] = pix / pl.ow * pl.sh - pl.ph;
    wb[j] = pix % pl.ow * pl.sw - pl.pw;
  }
  const int64_t plane = pl.ih * pl.iw;
  // 1x1, stride 1, no padding: the input plane is the patch matrix (row c = channel c).
  if (pl.kh == 1 && pl.kw == 1 && pl.sh == 1 && pl.sw == 1 && pl.ph == 0 && pl.pw == 0 &&
      j0 + kNr <= pl.n) {
    const float* in = src + pc * plane + j0;
    for (int64_t p = 0; p < kc; ++p) {
      K::storeu(dst + p * kNr, K::loadu(in + p * plane));
      K::storeu(dst + p * kNr + 8, K::loadu(in + p * plane + 8));
    }
    return;
  }
  // 16 pixels of one output row at stride 1: each tap reads 16 consecutive input columns.
  const bool row_run = pl.sw == 1 && j0 % pl.ow + kNr <= pl.ow && j0 + kNr <= pl.n;
  int64_t s = pc % pl.kw, r = pc / pl.kw % pl.kh, c = pc / (pl.kw * pl.kh);
  for (int64_t p = 0; p < kc; ++p) {
    const float* in = src + c * plane;
    float* d = dst + p * kNr;
    if (row_run) {
      const int64_t h = hb[0] + r * pl.dh, w = wb[0] + s * pl.dw;
      if (h >= 0 && h < pl.ih && w >= 0 && w + kNr <= pl.iw) {
        const float* row = in + h * pl.iw + w;
        K::storeu(d, K::loadu(row));
        K::storeu(d + 8, K::loadu(row + 8));
      } else if (h < 0 || h >= pl.ih) {
        K::storeu(d, K::zero());
        K::storeu(d + 8, K::zero());
      } else {
        const float* row = in + h * pl.iw;
        for (int j = 0; j < kNr; ++j) {
          const int64_t wj = w + j;
          d[j] = (wj >= 0 && wj < pl.iw) ? row[wj] : 0.0f;
        }
      }
    } else {
      const int64_t hr = r * pl.dh, ws = s * pl.dw;
      for (int j = 0; j < kNr; ++j) {
        const int64_t h = hb[j] + hr, w = wb[j] + ws;
        d[j] = (h >= 0 && h < pl.ih && w >= 0 && w < pl.iw) ? in[h * pl.iw + w] : 0.0f;
      }
    }
    if (++s == pl.kw) {
      s = 0;
      if (++r == pl.kh) {
        r = 0;
        ++c;
      }
    }
  }
}

// The same panel from the padded image at precomputed offsets: loads only.
template <class K>
void pack_panel_precomp(const Plan& pl, const float* xg, int64_t j0, int64_t pc, int64_t kc,
                        float* dst) {
  const alias_i32* no = pl.noff + j0;
  const alias_i32* ko = pl.koff + pc;
  if (j0 + kNr > pl.n) {  // last panel: lanes past n repeat pixel n-1 (never read past src)
    const int64_t valid = pl.n - j0;
    for (int64_t p = 0; p < kc; ++p) {
      const float* in = xg + ko[p];
      for (int j = 0; j < kNr; ++j) dst[p * kNr + j] = in[no[j < valid ? j : valid - 1]];
    }
    return;
  }
  if (no[kNr - 1] - no[0] == kNr - 1) {  // 16 contiguous input columns
    const float* base = xg + no[0];
    for (int64_t p = 0; p < kc; ++p) {
      const float* in = base + ko[p];
      K::storeu(dst + p * kNr, K::loadu(in));
      K::storeu(dst + p * kNr + 8, K::loadu(in + 8));
    }
    return;
  }
  // Two contiguous runs (the panel crosses one output row end): lanes [0, a) from no[0] on,
  // lanes [a, 16) from no[a] on. Both 16-float loads stay between no[0] and no[15].
  int a = 1;
  while (a < kNr && no[a] - no[a - 1] == 1) ++a;
  if (no[kNr - 1] - no[a] == kNr - 1 - a) {
    const float* base0 = xg + no[0];
    const float* base1 = xg + no[a] - a;
#if defined(__AVX2__)
    const __m256i lane0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i av = _mm256_set1_epi32(a);
    // Lanes j < a take the first run.
    const __m256 first0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(av, lane0));
    const __m256 first1 =
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(av, _mm256_add_epi32(lane0, _mm256_set1_epi32(8))));
    for (int64_t p = 0; p < kc; ++p) {
      const float* i0 = base0 + ko[p];
      const float* i1 = base1 + ko[p];
      _mm256_storeu_ps(dst + p * kNr,
                       _mm256_blendv_ps(_mm256_loadu_ps(i1), _mm256_loadu_ps(i0), first0));
      _mm256_storeu_ps(dst + p * kNr + 8,
                       _mm256_blendv_ps(_mm256_loadu_ps(i1 + 8), _mm256_loadu_ps(i0 + 8), first1));
    }
#else
    for (int64_t p = 0; p < kc; ++p) {
      const float* i0 = base0 + ko[p];
      const float* i1 = base1 + ko[p];
      for (int j = 0; j < kNr; ++j) dst[p * kNr + j] = j < a ? i0[j] : i1[j];
    }
#endif
    return;
  }
#if defined(__AVX2__)
  const __m256i n0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(no));
  const __m256i n1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(no + 8));
  for (int64_t p = 0; p < kc; ++p) {
    const float* in = xg + ko[p];
    _mm256_storeu_ps(dst + p * kNr, _mm256_i32gather_ps(in, n0, 4));
    _mm256_storeu_ps(dst + p * kNr + 8, _mm256_i32gather_ps(in, n1, 4));
  }
#else
  for (int64_t p = 0; p < kc; ++p) {
    const float* in = xg + ko[p];
    for (int j = 0; j < kNr; ++j) dst[p * kNr + j] = in[no[j]];
  }
#endif
}

// C[0:mr, 0:nr] (row stride ldc) = acc (+ bias) when first, else C += acc; acc = 6-row weight
// panel a (kc x 6) times the first kVecs * 8 columns of a 16-pixel input panel b (kc x 16).
template <class K, int kVecs>
inline void micro_kernel_vecs(int64_t kc, const float* __restrict a, const float* __restrict b,
                              float* c, int64_t ldc, int mr, int nr, bool first,
                              const float* bias) {
  using V = typename K::V;
  V acc[kMr][kVecs];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) acc[i][v] = K::zero();
  }
#pragma GCC unroll 2
  for (int64_t p = 0; p < kc; ++p) {
    V bv[kVecs];
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) bv[v] = K::loadu(b + 8 * v);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const V av = K::set1(a[i]);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[i][v] = K::fmadd(av, bv[v], acc[i][v]);
    }
    a += kMr;
    b += kNr;
  }
  if (mr == kMr && nr == 8 * kVecs) {
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* cp = c + i * ldc;
      const V bias_v = K::set1(first && bias != nullptr ? bias[i] : 0.0f);
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) {
        K::storeu(cp + 8 * v, K::add(acc[i][v], first ? bias_v : K::loadu(cp + 8 * v)));
      }
    }
    return;
  }
  for (int i = 0; i < mr; ++i) {
    float* cp = c + i * ldc;
    const V bv = K::set1(first && bias != nullptr ? bias[i] : 0.0f);
    for (int v = 0; v < kVecs; ++v) {
      const int left = nr - v * 8;
      if (left <= 0) break;
      const int cnt = left < 8 ? left : 8;
      V r = acc[i][v];
      r = K::add(r, first ? bv : K::load_partial(cp + v * 8, cnt));
      if (cnt == 8) {
        K::storeu(cp + v * 8, r);
      } else {
        K::store_partial(cp + v * 8, r, cnt);
      }
    }
  }
}

// The last panel of a few pixels (49 = 3 x 16 + 1 on a 7x7 output),
// vectorised over the 6 output channels instead of over pixels: per k one load of the weight row
// and kNp FMAs, where the pixel-vectorised kernel spends 6 FMAs on 8 lanes of which kNp are used.
// Lanes 6 and 7 of a full load read the next k's weights; they are never stored (the last row is
// loaded partially, so nothing past the panel is read). Four accumulators per pixel over
// consecutive k hide the FMA latency.
template <class K, int kNp>
inline void micro_kernel_oc(int64_t kc, const float* __restrict a, const float* __restrict b,
                            float* c, int64_t ldc, int mr, bool first, const float* bias) {
  static_assert(K::kWidth >= kMr);
  using V = typename K::V;
  constexpr int kU = 4;
  V acc[kNp][kU];
  for (int j = 0; j < kNp; ++j) {
    for (int u = 0; u < kU; ++u) acc[j][u] = K::zero();
  }
  int64_t p = 0;
  for (; p + kU < kc; p += kU) {  // leaves at least the last row to the loop below
#pragma GCC unroll 4
    for (int u = 0; u < kU; ++u) {
      const V av = K::loadu(a + (p + u) * kMr);
#pragma GCC unroll 4
      for (int j = 0; j < kNp; ++j) {
        acc[j][u] = K::fmadd(av, K::set1(b[(p + u) * kNr + j]), acc[j][u]);
      }
    }
  }
  for (; p < kc; ++p) {
    const V av = p + 1 < kc ? K::loadu(a + p * kMr) : K::load_partial(a + p * kMr, kMr);
    for (int j = 0; j < kNp; ++j) acc[j][0] = K::fmadd(av, K::set1(b[p * kNr + j]), acc[j][0]);
  }
  for (int j = 0; j < kNp; ++j) {
    float sum[K::kWidth];
    V total = acc[j][0];
    for (int u = 1; u < kU; ++u) total = K::add(total, acc[j][u]);
    K::storeu(sum, total);
    for (int i = 0; i < mr; ++i) {
      float& out = c[i * ldc + j];
      out = sum[i] + (first ? (bias != nullptr ? bias[i] : 0.0f) : out);
    }
  }
}

// A panel of at most 3 pixels takes the channel-vectorised kernel, one of at most 8 the
// one-vector kernel (half the FMAs of the full one). At 4 pixels (14x14 maps) the
// channel-vectorised kernel measured 3% slower over the layer, not faster (mb1ic1024ih14oc256kh1,
// one Zen 3 core, 2026-11-28); at 1 (7x7 maps) 10-16% faster.
template <class K>
inline void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* c,
                         int64_t ldc, int mr, int nr, bool first, const float* bias) {
  switch (nr) {
    case 1:
      return micro_kernel_oc<K, 1>(kc, a, b, c, ldc, mr, first, bias);
    case 2:
      return micro_kernel_oc<K, 2>(kc, a, b, c, ldc, mr, first, bias);
    case 3:
      return micro_kernel_oc<K, 3>(kc, a, b, c, ldc, mr, first, bias);
    default:
      break;
  }
  if (nr <= 8) {
    micro_kernel_vecs<K, 1>(kc, a, b, c, ldc, mr, nr, first, bias);
  } else {
    micro_kernel_vecs<K, 2>(kc, a, b, c, ldc, mr, nr, first, bias);
  }
}

// One image/group GEMM, the share of thread tid of nt: threads split the pixel panels when
// there are enough of them (each packs only its own input panels), else the channel panels.
template <class K>
void gemm_share(const Plan& pl, const float* src, const float* xg, const float* a, float* c,
                const float* bias, float* bpack, int tid, int nt) {
  const int64_t n_panels = (pl.n + kNr - 1) / kNr;
  int64_t m_lo = 0, m_hi = pl.m_panels, n_lo = 0, n_hi = n_panels;
  if (nt > 1) {
    if (n_panels >= 2 * nt || pl.m_panels < nt) {
      n_lo = n_panels * tid / nt;
      n_hi = n_panels * (tid + 1) / nt;
    } else {
      m_lo = pl.m_panels * tid / nt;
      m_hi = pl.m_panels * (tid + 1) / nt;
    }
  }
  if (m_lo >= m_hi || n_lo >= n_hi) return;
  for (int64_t jc = n_lo; jc < n_hi; jc += pl.nc_panels) {
    const int64_t jn = min_i64(pl.nc_panels, n_hi - jc);
    int64_t pc = 0;
    for (int64_t kb = 0; kb < pl.kblocks; ++kb) {
      const int64_t kc = min_i64(pl.kc, pl.k - pc);
      for (int64_t q = 0; q < jn; ++q) {
        float* bq = bpack + q * kc * kNr;
        if (pl.precomp) {
          pack_panel_precomp<K>(pl, xg, (jc + q) * kNr, pc, kc, bq);
        } else {
          pack_panel_onthefly<K>(pl, src, (jc + q) * kNr, pc, kc, bq);
        }
      }
      const float* ak = a + pc * pl.m_panels * kMr;  // this k block's panels
      for (int64_t m0 = m_lo; m0 < m_hi; m0 += pl.mc_panels) {
        const int64_t m1 = min_i64(m_hi, m0 + pl.mc_panels);
        for (int64_t q = 0; q < jn; ++q) {
          const int64_t j0 = (jc + q) * kNr;
          const int nr = static_cast<int>(min_i64(kNr, pl.n - j0));
          const float* bq = bpack + q * kc * kNr;
          for (int64_t mp = m0; mp < m1; ++mp) {
            const int mr = static_cast<int>(min_i64(kMr, pl.ocg - mp * kMr));
            micro_kernel<K>(kc, ak + mp * kc * kMr, bq, c + mp * kMr * pl.n + j0, pl.n, mr, nr,
                            kb == 0, bias != nullptr ? bias + mp * kMr : nullptr);
          }
        }
      }
      pc += kc;
    }
  }
}

// Whether some tap of some output reads padded row y / phase r (1x1 stride 2 reads a quarter).
inline bool row_read(const Plan& pl, int64_t y) {
  for (int64_t r = 0; r < pl.kh; ++r) {
    const int64_t top = y - r * pl.dh;  // oy * sh
    if (top >= 0 && top % pl.sh == 0 && top / pl.sh < pl.oh) return true;
  }
  return false;
}
inline bool phase_read(const Plan& pl, int64_t phase) {
  for (int64_t s = 0; s < pl.kw; ++s) {
    if (s * pl.dw % pl.sw == phase) return true;
  }
  return false;
}

// out[t] = sr[t * sw + r - pw] for t < wph (0 outside [0, iw)): phase r of one padded input row.
// At stride 2 (ResNet's downsampling convolutions) the in-range middle is deinterleaved 8 outputs
// at a time from two vector loads; done element by element, this copy was 11-16% of a ResNet-50
// 3x3 stride-2 layer's time at batch 1 (layer2.0.conv2 on a Zen 3 core, 2026-11-27).
inline void phase_row(const float* sr, int64_t iw, int64_t sw, int64_t r, int64_t pw, int64_t wph,
                      float* out) {
  int64_t t = 0;
  for (; t < wph && t * sw + r - pw < 0; ++t) out[t] = 0.0f;
#if defined(__AVX2__)
  if (sw == 2) {
    // 16 loaded floats (all inside the row) give 8 outputs: lanes 0, 2, .., 14.
    for (; t + 8 <= wph && 2 * t + r - pw + 16 <= iw; t += 8) {
      const float* p = sr + 2 * t + r - pw;
      const __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
      const __m256 even = _mm256_shuffle_ps(a, b, 0x88);  // a0 a2 b0 b2 | a4 a6 b4 b6
      _mm256_storeu_ps(out + t, _mm256_castpd_ps(_mm256_permute4x64_pd(
                                    _mm256_castps_pd(even), 0xD8)));  // 64-bit units 0 2 1 3
    }
  }
#endif
  for (; t < wph; ++t) {
    const int64_t w = t * sw + r - pw;
    out[t] = w >= 0 && w < iw ? sr[w] : 0.0f;
  }
}

// One input plane -> hp padded rows of sw phases (see Plan::hp); rows and phases no tap reads
// are left unwritten.
inline void pad_plane(const Plan& pl, const float* in, float* d) {
  __builtin_memset(d, 0, sizeof(float) * pl.ph * pl.rs);
  for (int64_t h = 0; h < pl.ih; ++h) {
    float* row = d + (h + pl.ph) * pl.rs;
    const float* sr = in + h * pl.iw;
    if (pl.sh > 1 && !row_read(pl, h + pl.ph)) continue;
    if (pl.sw == 1) {
      __builtin_memset(row, 0, sizeof(float) * pl.pw);
      __builtin_memcpy(row + pl.pw, sr, sizeof(float) * pl.iw);
      __builtin_memset(row + pl.pw + pl.iw, 0, sizeof(float) * (pl.wph - pl.pw - pl.iw));
      continue;
    }
    for (int64_t r = 0; r < pl.sw; ++r) {
      if (phase_read(pl, r)) phase_row(sr, pl.iw, pl.sw, r, pl.pw, pl.wph, row + r * pl.wph);
    }
  }
  __builtin_memset(d + (pl.ph + pl.ih) * pl.rs, 0, sizeof(float) * pl.ph * pl.rs);
}

template <class K>
void body(const Plan& pl, int tid, int nt) {
  float* bpack = pl.bpack + tid * pl.bpack_floats;
  const int64_t plane_in = pl.ih * pl.iw, plane_out = pl.oh * pl.ow, plane_pad = pl.hp * pl.rs;
  const int64_t a_group = pl.m_panels * kMr * pl.k;
  for (int64_t img = 0; img < pl.mb; ++img) {
    const float* s = pl.src + img * pl.ic * plane_in;
    const float* xs = pl.pad_copy ? pl.xpad : s;  // the (padded) image the offsets index
    if (pl.pad_copy) {
      const int64_t lo = pl.ic * tid / nt, hi = pl.ic * (tid + 1) / nt;
      for (int64_t ch = lo; ch < hi; ++ch)
        pad_plane(pl, s + ch * plane_in, pl.xpad + ch * plane_pad);
      if (nt > 1) {
#pragma omp barrier
      }
    }
    for (int64_t grp = 0; grp < pl.g; ++grp) {
      const float* sg = s + grp * pl.icg * plane_in;
      const float* xg = pl.precomp ? xs + grp * pl.icg * plane_pad : nullptr;
      float* c = pl.dst + (img * pl.oc + grp * pl.ocg) * plane_out;
      const float* bias = pl.bias != nullptr ? pl.bias + grp * pl.ocg : nullptr;
      gemm_share<K>(pl, sg, xg, pl.packed_a + grp * a_group, c, bias, bpack, tid, nt);
    }
    if (pl.pad_copy && nt > 1) {
#pragma omp barrier
    }
  }
}

template <class K>
void run_plan(const Plan& pl) {
  conv_simd::run_threads(pl.threads, [&pl](int tid, int nt) { body<K>(pl, tid, nt); });
}

}  // namespace
}  // namespace nnperf::conv_igemm
