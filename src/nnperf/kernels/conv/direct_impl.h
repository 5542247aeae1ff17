// The direct convolution's loop nest, written once over a SIMD traits type K (conv_simd.h) and
// instantiated by direct.cc (portable vectors) and direct_avx2.cc (AVX2+FMA).
//
// Per image: the input is copied once into a zero-padded, phase-split buffer (each padded row is
// stored as sw phases: phase r holds columns r, r+sw, r+2sw, ...), so that for every stride and
// dilation the kw taps of a run of consecutive outputs are contiguous vector loads and the inner
// loops have no bounds checks. Register tiles of ocb output channels x (8 * owv) outputs of one
// row: per (input channel, tap) owv vector loads of input, ocb weight broadcasts, ocb*owv FMAs
// (6 x 2 vectors: 12 accumulators, 8 loads per 12 FMAs, both FMA pipes busy from L1).
// Cache blocking: jobs are (group, chunk of output rows); inside, input channels go in blocks of
// cb sized so that the block's kh input rows stay in L1 and the weights of all output channels
// for those cb inputs stay in L2; partial sums live in dst between blocks (one read-modify-write
// per tile per block, < 3% of the tile's FMAs).
// Depthwise (icg == 1): each thread pads one channel into its own slice and runs all rows of it,
// 2 rows x 4 vectors per tile (dw_tile), so the input is read from memory once.
#pragma once
#include <cstdint>

#include "nnperf/kernels/conv/conv_simd.h"

namespace nnperf::conv_direct {

// Everything one run needs, computed by direct.cc (plain fields only, so the ISA files never
// instantiate inline code of ConvProblem or the standard library).
struct Plan {
  int64_t mb, g, ic, icg, oc, ocg, ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t ocb;   // output channels per register block (1..6), as in the packed weights
  int64_t n_ob;  // blocks per group: ceil(ocg / ocb); the last is zero-padded in the weights
  int64_t hn;    // padded rows needed: (oh-1)*sh + (kh-1)*dh + 1
  int64_t wph;   // floats per phase row: round_up(ow, 8) + (kw-1)*dw/sw + 1 (covers overreads)
  int64_t rs;    // floats per padded row: sw * wph
  int64_t cs;    // floats per padded channel: hn * rs rounded up to 16
  int64_t cb;    // input channels per cache block (input rows in L1, weights in L2)
  int64_t row_chunks;   // output rows split into this many jobs per group (for threads)
  bool per_channel;     // icg == 1: depthwise-style, per-thread channel slices
  const int64_t* taps;  // kh*kw offsets of the taps from a window's origin in a padded channel
  const float* src;
  const float* packed;  // [g][n_ob][icg][kh*kw][ocb]
  const float* bias;
  float* dst;
  float* xp;  // padded input: ic channels, or `threads` channel slices when per_channel
  int threads;
};

void run_portable(const Plan& pl);
void run_avx2(const Plan& pl);

namespace {

using conv_simd::min_i64;

// One input plane (ih x iw) -> hn padded rows of sw phases of wph floats.
inline void pad_channel(const Plan& pl, const float* s, float* d) {
  for (int64_t y = 0; y < pl.hn; ++y) {
    const int64_t h = y - pl.ph;
    float* row = d + y * pl.rs;
    if (h < 0 || h >= pl.ih) {
      __builtin_memset(row, 0, sizeof(float) * pl.rs);
      continue;
    }
    const float* sr = s + h * pl.iw;
    if (pl.sw == 1) {
      const int64_t lo = min_i64(pl.pw, pl.wph), hi = min_i64(pl.pw + pl.iw, pl.wph);
      __builtin_memset(row, 0, sizeof(float) * lo);
      __builtin_memcpy(row + lo, sr + (lo - pl.pw), sizeof(float) * (hi - lo));
      __builtin_memset(row + hi, 0, sizeof(float) * (pl.wph - hi));
      continue;
    }
    // Phase r, column t reads input column t*sw + r - pw: inside the row for t in [lo_r, hi_r).
    // Stride 2 copies the columns both phases read in one loop (vectorised as a de-interleave).
    int64_t lo_all = pl.wph, hi_all = 0;
    if (pl.sw == 2) {
      lo_all = 0;
      hi_all = pl.wph;
      for (int64_t r = 0; r < 2; ++r) {
        const int64_t off = r - pl.pw;
        const int64_t lo = min_i64(pl.wph, off >= 0 ? 0 : (-off + 1) / 2);
        int64_t hi = pl.iw - 1 - off < 0 ? 0 : (pl.iw - 1 - off) / 2 + 1;
        hi = min_i64(pl.wph, hi < lo ? lo : hi);
        lo_all = lo > lo_all ? lo : lo_all;
        hi_all = hi < hi_all ? hi : hi_all;
      }
      if (hi_all < lo_all) hi_all = lo_all;
      float* __restrict p0 = row;
      float* __restrict p1 = row + pl.wph;
      const float* __restrict in = sr;
      for (int64_t t = lo_all; t < hi_all; ++t) {
        p0[t] = in[2 * t - pl.pw];
        p1[t] = in[2 * t + 1 - pl.pw];
      }
    }
    for (int64_t r = 0; r < pl.sw; ++r) {
      float* ph_row = row + r * pl.wph;
      const int64_t off = r - pl.pw;
      const int64_t lo = min_i64(pl.wph, off >= 0 ? 0 : (-off + pl.sw - 1) / pl.sw);
      int64_t hi = pl.iw - 1 - off < 0 ? 0 : (pl.iw - 1 - off) / pl.sw + 1;
      hi = min_i64(pl.wph, hi < lo ? lo : hi);
      for (int64_t t = 0; t < lo; ++t) ph_row[t] = 0.0f;
      for (int64_t t = lo; t < hi; ++t) {
        if (t == lo_all) t = hi_all;  // already copied
        if (t >= hi) break;
        ph_row[t] = sr[t * pl.sw + off];
      }
      for (int64_t t = hi; t < pl.wph; ++t) ph_row[t] = 0.0f;
    }
  }
}

// acc[i][v] += w[i] * xs[8v : 8v+8]: one (input channel, tap) step of a tile.
template <class K, int OCB, int OWV>
__attribute__((always_inline)) inline void tap_step(typename K::V (&acc)[OCB][OWV],
                                                    const float* __restrict xs,
                                                    const float* __restrict w) {
  using V = typename K::V;
  V xv[OWV];
#pragma GCC unroll 4
  for (int v = 0; v < OWV; ++v) xv[v] = K::loadu(xs + v * K::kWidth);
#pragma GCC unroll 8
  for (int i = 0; i < OCB; ++i) {
    const V wv = K::set1(w[i]);
#pragma GCC unroll 4
    for (int v = 0; v < OWV; ++v) acc[i][v] = K::fmadd(wv, xv[v], acc[i][v]);
  }
}

// rows x lanes outputs (rows <= OCB, lanes <= OWV * 8) starting at d (row stride pl.oh*pl.ow),
// summed over cn input channels of the padded input x (window origin of the first output, first
// channel of the block) with the packed weights w of this channel block. first: start from the
// bias; else add to what d holds (the previous input-channel blocks).
template <class K, int OCB, int OWV, bool kOneTap>
inline void tile(const Plan& pl, const float* __restrict x, const float* __restrict w, int64_t cn,
                 bool first, const float* bias, float* d, int rows, int64_t lanes) {
  using V = typename K::V;
  constexpr int W = K::kWidth;
  // An FMA has 4-5 cycles of latency and Zen3/Haswell start 2 per cycle: fewer than 8
  // independent accumulators leave the pipes idle (a depthwise tile has 4), so small tiles
  // alternate two accumulator sets between consecutive steps and add them at the end.
  constexpr bool kSplit = OCB * OWV < 8;
  V acc[OCB][OWV], acc2[OCB][OWV];
#pragma GCC unroll 8
  for (int i = 0; i < OCB; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < OWV; ++v) acc[i][v] = acc2[i][v] = K::zero();
  }
  const int64_t cs = pl.cs;
  if constexpr (kOneTap) {
    int64_t c = 0;
    if constexpr (kSplit) {
      for (; c + 1 < cn; c += 2) {
        tap_step<K, OCB, OWV>(acc, x + c * cs, w);
        tap_step<K, OCB, OWV>(acc2, x + (c + 1) * cs, w + OCB);
        w += 2 * OCB;
      }
    }
    for (; c < cn; ++c) {
      tap_step<K, OCB, OWV>(acc, x + c * cs, w);
      w += OCB;
    }
  } else {
    const int64_t kk = pl.kh * pl.kw;
    const int64_t* __restrict taps = pl.taps;
    for (int64_t c = 0; c < cn; ++c) {
      const float* xc = x + c * cs;
      int64_t t = 0;
      if constexpr (kSplit) {
        for (; t + 1 < kk; t += 2) {
          tap_step<K, OCB, OWV>(acc, xc + taps[t], w);
          tap_step<K, OCB, OWV>(acc2, xc + taps[t + 1], w + OCB);
          w += 2 * OCB;
        }
      }
      for (; t < kk; ++t) {
        tap_step<K, OCB, OWV>(acc, xc + taps[t], w);
        w += OCB;
      }
    }
  }
  if constexpr (kSplit) {
#pragma GCC unroll 8
    for (int i = 0; i < OCB; ++i) {
#pragma GCC unroll 4
      for (int v = 0; v < OWV; ++v) acc[i][v] = K::add(acc[i][v], acc2[i][v]);
    }
  }
  const int64_t ds = pl.oh * pl.ow;
#pragma GCC unroll 8
  for (int i = 0; i < OCB; ++i) {
    if (i >= rows) break;
    const V b = K::set1(first && bias != nullptr ? bias[i] : 0.0f);
#pragma GCC unroll 4
    for (int v = 0; v < OWV; ++v) {
      const int64_t left = lanes - v * W;
      if (left <= 0) break;
      float* dp = d + i * ds + v * W;
      if (left >= W) {
        K::storeu(dp, K::add(acc[i][v], first ? b : K::loadu(dp)));
      } else {
        const int cnt = static_cast<int>(left);
        K::store_partial(dp, K::add(acc[i][v], first ? b : K::load_partial(dp, cnt)), cnt);
      }
    }
  }
}

// One output row of `rows` channels: full tiles of OWV vectors, then one narrower tile.
template <class K, int OCB, bool kOneTap>
void out_row(const Plan& pl, const float* x, const float* w, int64_t cn, bool first,
             const float* bias, float* d, int rows) {
  constexpr int W = K::kWidth;
  constexpr int OWV = OCB <= 2 ? 4 : 2;
  constexpr int TW = OWV * W;
  int64_t x0 = 0;
  for (; x0 + TW <= pl.ow; x0 += TW) {
    tile<K, OCB, OWV, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, TW);
  }
  const int64_t rem = pl.ow - x0;
  if (rem <= 0) return;
  const int64_t nv = (rem + W - 1) / W;
  if (nv == 1) {
    tile<K, OCB, 1, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, rem);
  } else if constexpr (OWV > 2) {  // OWV == 4: the tail is 2, 3 or 4 vectors
    if (nv == 2) {
      tile<K, OCB, 2, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, rem);
    } else if (nv == 3) {
      tile<K, OCB, 3, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, rem);
    } else {
      tile<K, OCB, 4, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, rem);
    }
  } else {
    tile<K, OCB, OWV, kOneTap>(pl, x + x0, w, cn, first, bias, d + x0, rows, rem);
  }
}

template <class K, int OCB>
void out_row_taps(const Plan& pl, const float* x, const float* w, int64_t cn, bool first,
                  const float* bias, float* d, int rows) {
  if (pl.kh * pl.kw == 1) {
    out_row<K, OCB, true>(pl, x, w, cn, first, bias, d, rows);
  } else {
    out_row<K, OCB, false>(pl, x, w, cn, first, bias, d, rows);
  }
}

template <class K>
void out_row_any(const Plan& pl, const float* x, const float* w, int64_t cn, bool first,
                 const float* bias, float* d, int rows) {
  switch (pl.ocb) {
    case 1:
      return out_row_taps<K, 1>(pl, x, w, cn, first, bias, d, rows);
    case 2:
      return out_row_taps<K, 2>(pl, x, w, cn, first, bias, d, rows);
    case 3:
      return out_row_taps<K, 3>(pl, x, w, cn, first, bias, d, rows);
    case 4:
      return out_row_taps<K, 4>(pl, x, w, cn, first, bias, d, rows);
    case 5:
      return out_row_taps<K, 5>(pl, x, w, cn, first, bias, d, rows);
    default:
      return out_row_taps<K, 6>(pl, x, w, cn, first, bias, d, rows);
  }
}

// Depthwise tile: ROWS output rows x OWV vectors of one output channel from its one padded input
// channel; ROWS = 2 gives 8 independent accumulators and twice the work per weight broadcast.
template <class K, int OWV, int ROWS>
inline void dw_tile(const Plan& pl, const float* __restrict x, const float* __restrict w, float b,
                    float* d, int64_t lanes) {
  using V = typename K::V;
  constexpr int W = K::kWidth;
  V acc[ROWS][OWV];
#pragma GCC unroll 2
  for (int j = 0; j < ROWS; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < OWV; ++v) acc[j][v] = K::set1(b);
  }
  const int64_t kk = pl.kh * pl.kw, row_step = pl.sh * pl.rs;
  const int64_t* __restrict taps = pl.taps;
  for (int64_t t = 0; t < kk; ++t) {
    const V wv = K::set1(w[t]);
    const float* xs = x + taps[t];
#pragma GCC unroll 2
    for (int j = 0; j < ROWS; ++j) {
#pragma GCC unroll 4
      for (int v = 0; v < OWV; ++v) {
        acc[j][v] = K::fmadd(wv, K::loadu(xs + j * row_step + v * W), acc[j][v]);
      }
    }
  }
#pragma GCC unroll 2
  for (int j = 0; j < ROWS; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < OWV; ++v) {
      const int64_t left = lanes - v * W;
      if (left <= 0) break;
      float* dp = d + j * pl.ow + v * W;
      if (left >= W) {
        K::storeu(dp, acc[j][v]);
      } else {
        K::store_partial(dp, acc[j][v], static_cast<int>(left));
      }
    }
  }
}

template <class K, int ROWS>
void dw_rows(const Plan& pl, const float* x, const float* w, float b, float* d) {
  constexpr int W = K::kWidth, TW = 4 * W;
  int64_t x0 = 0;
  for (; x0 + TW <= pl.ow; x0 += TW) dw_tile<K, 4, ROWS>(pl, x + x0, w, b, d + x0, TW);
  const int64_t rem = pl.ow - x0;
  if (rem <= 0) return;
  switch ((rem + W - 1) / W) {  // 1 to 4 vectors
    case 1:
      return dw_tile<K, 1, ROWS>(pl, x + x0, w, b, d + x0, rem);
    case 2:
      return dw_tile<K, 2, ROWS>(pl, x + x0, w, b, d + x0, rem);
    case 3:
      return dw_tile<K, 3, ROWS>(pl, x + x0, w, b, d + x0, rem);
    default:
      return dw_tile<K, 4, ROWS>(pl, x + x0, w, b, d + x0, rem);
  }
}

// Every output channel of group grp (one input channel, padded in x): two rows at a time.
template <class K>
void dw_group(const Plan& pl, const float* x, int64_t grp, float* d) {
  const int64_t kk = pl.kh * pl.kw, plane_out = pl.oh * pl.ow;
  for (int64_t j = 0; j < pl.ocg; ++j) {
    const int64_t o = grp * pl.ocg + j;
    const float* w = pl.packed + o * kk;
    const float b = pl.bias != nullptr ? pl.bias[o] : 0.0f;
    float* dj = d + o * plane_out;
    int64_t oy = 0;
    for (; oy + 2 <= pl.oh; oy += 2) {
      dw_rows<K, 2>(pl, x + oy * pl.sh * pl.rs, w, b, dj + oy * pl.ow);
    }
    if (oy < pl.oh) dw_rows<K, 1>(pl, x + oy * pl.sh * pl.rs, w, b, dj + oy * pl.ow);
  }
}

// Rows [y0, y1) of every output channel of group grp, input channels in blocks of pl.cb: per
// block, per row, every channel block (the block's input rows stay in L1 while the weights of
// all channel blocks for these cb input channels stream from L2), partial sums kept in dst.
template <class K>
void group_rows(const Plan& pl, const float* xg, int64_t grp, int64_t y0, int64_t y1, float* d) {
  const int64_t kk = pl.kh * pl.kw, plane_out = pl.oh * pl.ow;
  const int64_t wblock = pl.icg * kk * pl.ocb;  // packed floats per channel block
  for (int64_t c0 = 0; c0 < pl.icg; c0 += pl.cb) {
    const int64_t cn = min_i64(pl.cb, pl.icg - c0);
    for (int64_t oy = y0; oy < y1; ++oy) {
      const float* x = xg + c0 * pl.cs + oy * pl.sh * pl.rs;
      for (int64_t ob = 0; ob < pl.n_ob; ++ob) {
        const int64_t o0 = grp * pl.ocg + ob * pl.ocb;
        const int rows = static_cast<int>(min_i64(pl.ocb, pl.ocg - ob * pl.ocb));
        const float* w = pl.packed + (grp * pl.n_ob + ob) * wblock + c0 * kk * pl.ocb;
        const float* b = pl.bias != nullptr ? pl.bias + o0 : nullptr;
        out_row_any<K>(pl, x, w, cn, c0 == 0, b, d + o0 * plane_out + oy * pl.ow, rows);
      }
    }
  }
}

// Work of thread tid of nt: static contiguous shares of the jobs.
template <class K>
void body(const Plan& pl, int tid, int nt) {
  const int64_t plane_in = pl.ih * pl.iw;
  for (int64_t n = 0; n < pl.mb; ++n) {
    const float* s = pl.src + n * pl.ic * plane_in;
    float* d = pl.dst + n * pl.oc * pl.oh * pl.ow;
    if (pl.per_channel) {  // job = one group (one input channel), padded by its thread
      float* xp = pl.xp + tid * pl.cs;
      const int64_t lo = pl.g * tid / nt, hi = pl.g * (tid + 1) / nt;
      for (int64_t grp = lo; grp < hi; ++grp) {
        pad_channel(pl, s + grp * plane_in, xp);
        dw_group<K>(pl, xp, grp, d);
      }
      continue;
    }
    {
      const int64_t lo = pl.ic * tid / nt, hi = pl.ic * (tid + 1) / nt;
      for (int64_t c = lo; c < hi; ++c) pad_channel(pl, s + c * plane_in, pl.xp + c * pl.cs);
    }
    if (nt > 1) {
#pragma omp barrier
    }
    // job = (group, chunk of output rows)
    const int64_t jobs = pl.g * pl.row_chunks;
    const int64_t lo = jobs * tid / nt, hi = jobs * (tid + 1) / nt;
    for (int64_t j = lo; j < hi; ++j) {
      const int64_t grp = j / pl.row_chunks, chunk = j % pl.row_chunks;
      const int64_t y0 = pl.oh * chunk / pl.row_chunks, y1 = pl.oh * (chunk + 1) / pl.row_chunks;
      group_rows<K>(pl, pl.xp + grp * pl.icg * pl.cs, grp, y0, y1, d);
    }
    if (nt > 1) {
#pragma omp barrier
    }
  }
}

template <class K>
void run_plan(const Plan& pl) {
  conv_simd::run_threads(pl.threads, [&pl](int tid, int nt) { body<K>(pl, tid, nt); });
}

}  // namespace
}  // namespace nnperf::conv_direct
