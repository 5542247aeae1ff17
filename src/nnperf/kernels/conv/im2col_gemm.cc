// `gemm`: im2col + GEMM (Caffe's and early cuDNN's method). Per image and group the input patches
// are unrolled into a K x N matrix (K = icg*kh*kw rows, N = oh*ow columns) in the workspace, then
// one GEMM dst[ocg x N] = wei[ocg x K] * col[K x N] does all the arithmetic. Small maps (N < 256)
// put several images' matrices side by side (conv_chunk_images) so the GEMM is wide rather than
// a matrix-vector product. 1x1 stride-1 unpadded convolutions skip the unrolling one image at a
// time: the input plane already is the K x N matrix (they chunk only maps under 96 positions).
// The GEMM is OpenBLAS's (kConvGemm below): on this machine it beats our `blocked` GEMM on these
// shapes (measured in bench/conv_bench.cc; see the report of issue 3). With OpenBLAS's own pool at
// one thread (CNN runs: core/threads.h) gemm_blas splits each product over args.threads OpenMP
// threads; otherwise OpenBLAS threads it itself and args.threads applies to im2col only.
// tolerance_factor 1: plain float32 sums (each output a different order of the same products);
// worst measured |y - ref| / (K*eps*sum|ab| + eps*|ref|) over tests/kernels/conv_test.cc: 0.18.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf {

namespace {

constexpr const char* kConvGemm = "blas";

const GemmAlgorithm& conv_gemm() {
  static const GemmAlgorithm& algo = find_gemm(kConvGemm);
  return algo;
}

// Images per GEMM (conv_chunk_images): a chunk's patch matrices sit side by side, K x (c*N).
struct Layout {
  int64_t c, k, n, cols;
  bool chunked() const { return c > 1; }
};

Layout layout(const ConvProblem& p) {
  const int64_t c = conv_chunk_images(p);
  const int64_t n = p.oh() * p.ow();
  return {c, p.icg() * p.kh * p.kw, n, c * n};
}

GemmShape gemm_shape(const ConvProblem& p) {
  const Layout l = layout(p);
  return GemmShape{false, false, p.ocg(), l.cols, l.k};
}

// The patch matrix (none for a 1x1/s1/p0 layer one image at a time) and, for chunks, the GEMM's
// ocg x (c*N) output before it is scattered into NCHW.
std::size_t col_bytes(const ConvProblem& p) {
  const Layout l = layout(p);
  if (conv_patches_are_input(p) && !l.chunked()) return 0;
  return conv_aligned_bytes(static_cast<std::size_t>(l.k * l.cols) * sizeof(float));
}
std::size_t out_bytes(const ConvProblem& p) {
  const Layout l = layout(p);
  return l.chunked()
             ? conv_aligned_bytes(static_cast<std::size_t>(p.ocg() * l.cols) * sizeof(float))
             : 0;
}
// The tap table (conv_internal.h) where the patch matrix is built from one.
std::size_t table_bytes(const ConvProblem& p) {
  return conv_patches_are_input(p) ? 0 : conv_tap_table_bytes(p);
}

}  // namespace

void conv_im2col_row(const ConvProblem& p, const float* src, int64_t k, float* row) {
  conv_im2col_row_band(p, src, k, 0, p.oh(), row);
}

namespace {

// out[ox] = in[w0 + 2 * ox] for ox in [lo, hi), zero elsewhere in [0, ow), for an input row of
// `width` floats: 4 columns per step, the even lanes of two 4-float loads, while those 8 floats
// lie inside the row; the rest one by one. The zeros are vector stores, not memset calls: on
// short rows (16 floats for ResNet-18's stem at 32x32) the calls and a scalar loop's remainder
// cost more than the copy. 0.39-0.55 ns per float against 0.59-0.81 for the plain strided loop with
// memsets (3x3 and 7x7 kernels, ow 12-16), 0.24 against 0.44 at ow 112 (one Zen 4 core).
void im2col_stride2(float* out, const float* in, int64_t w0, int64_t lo, int64_t hi, int64_t ow,
                    int64_t width) {
  using K = simd::Portable<simd::F32x4>;
  int64_t ox = 0;
  for (; ox + 4 <= lo; ox += 4) K::storeu(out + ox, K::zero());
  for (; ox < lo; ++ox) out[ox] = 0.0f;
  for (; ox + 4 <= hi && w0 + 2 * ox + 8 <= width; ox += 4) {
    const float* q = in + (w0 + 2 * ox);
    K::storeu(out + ox, __builtin_shufflevector(K::loadu(q), K::loadu(q + 4), 0, 2, 4, 6));
  }
  for (; ox < hi; ++ox) out[ox] = in[w0 + 2 * ox];
  for (; ox + 4 <= ow; ox += 4) K::storeu(out + ox, K::zero());
  for (; ox < ow; ++ox) out[ox] = 0.0f;
}

// row[w0 + 2 * ox] += src[ox] for ox in [lo, hi) (w0 + 2 * lo >= 0), in a row of `width` floats: 4
// columns per step, src's 4 floats spread over the even lanes of the row's 8 (the odd lanes add
// +0, which leaves every float as it was: no -0 arises in a plane that starts at +0) while those
// 8 floats stay in the row; the rest one by one. A strided scatter-add otherwise: 13% of a 3x3
// stride-2 layer's backward-data time (mb8ic128ih56oc128kh3sh2ph1, perf).
void col2im_stride2(float* row, int64_t w0, const float* src, int64_t lo, int64_t hi,
                    int64_t width) {
  using K = simd::Portable<simd::F32x4>;
  const K::V zero = K::zero();
  int64_t ox = lo;
  for (; ox + 4 <= hi && w0 + 2 * ox + 8 <= width; ox += 4) {
    float* o = row + (w0 + 2 * ox);
    const K::V s = K::loadu(src + ox);
    K::storeu(o, K::add(K::loadu(o), __builtin_shufflevector(s, zero, 0, 4, 1, 5)));
    K::storeu(o + 4, K::add(K::loadu(o + 4), __builtin_shufflevector(s, zero, 2, 6, 3, 7)));
  }
  for (; ox < hi; ++ox) row[w0 + 2 * ox] += src[ox];
}

}  // namespace

void conv_im2col_row_band(const ConvProblem& p, const float* src, int64_t k, int64_t oy0,
                          int64_t oy1, float* row) {
  const int64_t ow = p.ow();
  const int64_t s = k % p.kw, r = k / p.kw % p.kh, c = k / (p.kw * p.kh);
  const float* plane = src + c * p.ih * p.iw;
  // Columns ox with 0 <= ox*sw - pw + s*dw < iw: [ox_lo, ox_hi).
  const int64_t w0 = s * p.dw - p.pw;  // input column of ox = 0
  const int64_t ox_lo = std::min(ow, w0 >= 0 ? 0 : conv_ceil_div(-w0, p.sw));
  const int64_t ox_hi = std::max(ox_lo, std::min(ow, w0 >= p.iw ? 0 : (p.iw - 1 - w0) / p.sw + 1));
  for (int64_t oy = oy0; oy < oy1; ++oy) {
    float* out = row + (oy - oy0) * ow;
    const int64_t h = oy * p.sh - p.ph + r * p.dh;
    if (h < 0 || h >= p.ih) {
      std::memset(out, 0, sizeof(float) * ow);
      continue;
    }
    const float* in = plane + h * p.iw;
    if (p.sw == 2) {
      im2col_stride2(out, in, w0, ox_lo, ox_hi, ow, p.iw);
      continue;
    }
    std::memset(out, 0, sizeof(float) * ox_lo);
    if (p.sw == 1) {
      std::memcpy(out + ox_lo, in + (w0 + ox_lo), sizeof(float) * (ox_hi - ox_lo));
    } else {
      for (int64_t ox = ox_lo; ox < ox_hi; ++ox) out[ox] = in[w0 + ox * p.sw];
    }
    std::memset(out + ox_hi, 0, sizeof(float) * (ow - ox_hi));
  }
}

void conv_col2im_band(const ConvProblem& p, const float* rows, int64_t ld, int64_t oy0, int64_t oy1,
                      float* plane) {
  const int64_t ow = p.ow();
  for (int64_t r = 0; r < p.kh; ++r) {
    for (int64_t s = 0; s < p.kw; ++s) {
      const float* in = rows + (r * p.kw + s) * ld;
      const int64_t w0 = s * p.dw - p.pw;  // input column of ox = 0, as conv_im2col_row_band
      const int64_t ox_lo = std::min(ow, w0 >= 0 ? 0 : conv_ceil_div(-w0, p.sw));
      const int64_t ox_hi =
          std::max(ox_lo, std::min(ow, w0 >= p.iw ? 0 : (p.iw - 1 - w0) / p.sw + 1));
      for (int64_t oy = oy0; oy < oy1; ++oy) {
        const int64_t h = oy * p.sh - p.ph + r * p.dh;
        if (h < 0 || h >= p.ih) continue;
        float* out = plane + h * p.iw;
        const float* src = in + (oy - oy0) * ow;
        if (p.sw == 1) {
          float* o = out + (w0 + ox_lo);
          for (int64_t j = 0; j < ox_hi - ox_lo; ++j) o[j] += src[ox_lo + j];
        } else if (p.sw == 2) {
          col2im_stride2(out, w0, src, ox_lo, ox_hi, p.iw);
        } else {
          for (int64_t ox = ox_lo; ox < ox_hi; ++ox) out[w0 + ox * p.sw] += src[ox];
        }
      }
    }
  }
}

std::size_t conv_tap_table_bytes(const ConvProblem& p) {
  const int64_t entries = p.kh * p.kw * p.oh() * p.ow();
  const int64_t widest = p.sw == 2 ? 8 : 16;  // stride-2 rows of 12+: the band loops' 4-wide steps
  if (p.ow() > widest || entries > 16384 || p.ih * p.iw > (int64_t{1} << 30)) return 0;
  return (static_cast<std::size_t>(entries) * sizeof(int32_t) + 63) / 64 * 64;
}

void conv_fill_tap_table(const ConvProblem& p, int32_t* table) {
  const int64_t oh = p.oh(), ow = p.ow();
  for (int64_t r = 0; r < p.kh; ++r) {
    for (int64_t s = 0; s < p.kw; ++s) {
      int32_t* t = table + (r * p.kw + s) * oh * ow;
      for (int64_t oy = 0; oy < oh; ++oy) {
        const int64_t iy = oy * p.sh - p.ph + r * p.dh;
        for (int64_t ox = 0; ox < ow; ++ox) {
          const int64_t ix = ox * p.sw - p.pw + s * p.dw;
          const bool inside = iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
          t[oy * ow + ox] = inside ? static_cast<int32_t>(iy * p.iw + ix) : -1;
        }
      }
    }
  }
}

void conv_im2col_images(const ConvProblem& p, const float* src, int64_t c, int64_t ld,
                        const int32_t* table, float* col, int threads) {
  const int64_t plane_in = p.ih * p.iw, taps = p.kh * p.kw, n = p.oh() * p.ow(), k = p.icg() * taps;
  const bool copy = conv_patches_are_input(p);
  // Rows [tap0, tap1) of channel ch of image i: copies of the plane (1x1 stride 1 unpadded),
  // gathers by the tap table, or conv_im2col_row.
  auto rows = [=, &p](int64_t i, int64_t ch, int64_t tap0, int64_t tap1) {
    const float* image = src + i * p.ic * plane_in;
    const float* plane = image + ch * plane_in;
    float* out = col + ch * taps * ld + i * n;
    if (copy) {
      for (int64_t j = 0; j < n; ++j) out[j] = plane[j];
    } else if (table != nullptr) {
      for (int64_t tap = tap0; tap < tap1; ++tap) {
        const int32_t* tt = table + tap * n;
        float* o = out + tap * ld;
        for (int64_t j = 0; j < n; ++j) o[j] = tt[j] >= 0 ? plane[tt[j]] : 0.0f;
      }
    } else {
      for (int64_t tap = tap0; tap < tap1; ++tap) {
        conv_im2col_row(p, image, ch * taps + tap, out + tap * ld);
      }
    }
  };
  if (n >= kRowsAlone) {  // a row is worth a step: the most steps to split between threads
    const int t = conv_useful_copy_threads(threads, k * c * n, c * k);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
    for (int64_t i = 0; i < c; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) rows(i, kk / taps, kk % taps, kk % taps + 1);
    }
    return;
  }
  const int t = conv_useful_copy_threads(threads, k * c * n, c * p.icg());
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t ch = 0; ch < p.icg(); ++ch) rows(i, ch, 0, taps);
  }
}

std::string conv_gemm_why_not(const ConvProblem& p) { return conv_serves_any(p); }

int64_t conv_chunk_images(const ConvProblem& p) {
  constexpr int64_t kTargetColumns = 256;
  constexpr int64_t kMaxChunkBytes = int64_t{64} << 20;
  const int64_t n = p.oh() * p.ow(), k = p.icg() * p.kh * p.kw;
  const int64_t target = conv_patches_are_input(p) ? kConvGemmFullColumns : kTargetColumns;
  int64_t c = std::min(p.mb, conv_ceil_div(target, n));
  while (c > 1 && c * n * k * 4 > kMaxChunkBytes) c /= 2;
  return std::max<int64_t>(c, 1);
}

std::size_t conv_gemm_workspace_bytes(const ConvProblem& p, int threads) {
  return col_bytes(p) + out_bytes(p) + table_bytes(p) +
         conv_gemm().workspace_bytes(gemm_shape(p), threads);
}

// Per chunk of images and group: col = the chunk's patch matrices side by side, one GEMM
// dst[ocg x c*N] = wei[ocg x K] * col[K x c*N], then (for c > 1) each image's columns copied to
// its NCHW planes.
void conv_gemm_run(const ConvArgs& args) {
  const ConvProblem& p = *args.p;
  const Layout l = layout(p);
  auto* col = static_cast<float*>(args.workspace);
  auto* base = static_cast<char*>(args.workspace);
  auto* out = reinterpret_cast<float*>(base + col_bytes(p));
  int32_t* table = nullptr;
  if (table_bytes(p) > 0) {
    table = reinterpret_cast<int32_t*>(base + col_bytes(p) + out_bytes(p));
    conv_fill_tap_table(p, table);
  }
  void* ws = base + col_bytes(p) + out_bytes(p) + table_bytes(p);
  for (int64_t n0 = 0; n0 < p.mb; n0 += l.c) {
    const int64_t c = std::min(l.c, p.mb - n0), cols = c * l.n;
    for (int64_t grp = 0; grp < p.g; ++grp) {
      const float* b = args.src + (n0 * p.ic + grp * p.icg()) * p.ih * p.iw;
      if (!(conv_patches_are_input(p) && !l.chunked())) {
        conv_im2col_images(p, b, c, cols, table, col, args.threads);
        b = col;
      }
      const float* a = args.wei + grp * p.ocg() * l.k;
      float* dst = args.dst + (n0 * p.oc + grp * p.ocg()) * l.n;
      conv_gemm().run(gemm_args({false, false, p.ocg(), cols, l.k}, a, l.k, b, cols,
                                l.chunked() ? out : dst, cols, ws, args.threads));
      if (!l.chunked()) continue;
      const int t = conv_useful_copy_threads(args.threads, c * p.ocg() * l.n, c * p.ocg());
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
      for (int64_t i = 0; i < c; ++i) {
        for (int64_t o = 0; o < p.ocg(); ++o) {
          float* d = args.dst + ((n0 + i) * p.oc + grp * p.ocg() + o) * l.n;
          const float* q = out + o * cols + i * l.n;
          for (int64_t j = 0; j < l.n; ++j) d[j] = q[j];  // a loop: chunked maps have l.n < 256
        }
      }
    }
  }
  conv_add_bias(p, args.bias, args.dst, args.threads);
}

// OpenBLAS SGEMM at ~86 GFLOP/s per core on large shapes (measured on the fitted core, the VGG16
// layers' GEMMs; ~91 on square 1024^3), scaled by the shape efficiency, plus writing and reading
// the K x N patch matrix (~15 GB/s each way: 115 MB for VGG16 conv1_2 costs ~15 ms of its ~60).
// OpenBLAS picks its kernels from CPUID, so its rate follows the hardware's SIMD level, not
// NNPERF_SIMD (measured: the same time under NNPERF_SIMD=scalar).
constexpr double kBlasRate = 86.0 / conv_fit::kFmaGflops;
constexpr double kPatchDram = 15.0 / conv_fit::kDramGbps;

double conv_gemm_cost(const ConvProblem& p, int threads) {
  const ConvMachine m = conv_machine();
  const double t = std::max(1, threads);
  const GemmShape s = gemm_shape(p);
  const double eff = std::max(0.1, conv_gemm_shape_efficiency(s.m, s.n, s.k));
  const double col = static_cast<double>(col_bytes(p)) * static_cast<double>(p.g) *
                     static_cast<double>(conv_ceil_div(p.mb, layout(p).c));
  return p.flops() / (kBlasRate * m.blas_flops_per_s * eff * t) +
         2.0 * col / (kPatchDram * m.dram_at(threads));
}

}  // namespace nnperf
