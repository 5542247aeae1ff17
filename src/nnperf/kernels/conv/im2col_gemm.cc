// `gemm`: im2col + GEMM (Caffe's and early cuDNN's method). Per image and group the input patches
// are unrolled into a K x N matrix (K = icg*kh*kw rows, N = oh*ow columns) in the workspace, then
// one GEMM dst[ocg x N] = wei[ocg x K] * col[K x N] does all the arithmetic. 1x1 stride-1
// unpadded convolutions skip the unrolling: the input plane already is the K x N matrix.
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

namespace nnperf {

namespace {

constexpr const char* kConvGemm = "blas";

const GemmAlgorithm& conv_gemm() {
  static const GemmAlgorithm& algo = find_gemm(kConvGemm);
  return algo;
}

bool needs_no_im2col(const ConvProblem& p) {
  return p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0;
}

GemmShape gemm_shape(const ConvProblem& p) {
  return GemmShape{false, false, p.ocg(), p.oh() * p.ow(), p.icg() * p.kh * p.kw};
}

std::size_t col_bytes(const ConvProblem& p) {
  if (needs_no_im2col(p)) return 0;
  const std::size_t floats = static_cast<std::size_t>(p.icg() * p.kh * p.kw * p.oh() * p.ow());
  return (floats * sizeof(float) + 63) / 64 * 64;
}

// Row k = (c, r, s) of the K x N patch matrix of one image/group: col[k][oy*ow + ox] =
// src[c][oy*sh - ph + r*dh][ox*sw - pw + s*dw], zero in the padding.
void im2col_row(const ConvProblem& p, const float* src, int64_t k, float* row) {
  const int64_t oh = p.oh(), ow = p.ow();
  const int64_t s = k % p.kw, r = k / p.kw % p.kh, c = k / (p.kw * p.kh);
  const float* plane = src + c * p.ih * p.iw;
  // Columns ox with 0 <= ox*sw - pw + s*dw < iw: [ox_lo, ox_hi).
  const int64_t w0 = s * p.dw - p.pw;  // input column of ox = 0
  const int64_t ox_lo = std::min(ow, w0 >= 0 ? 0 : conv_ceil_div(-w0, p.sw));
  const int64_t ox_hi = std::max(ox_lo, std::min(ow, w0 >= p.iw ? 0 : (p.iw - 1 - w0) / p.sw + 1));
  for (int64_t oy = 0; oy < oh; ++oy) {
    float* out = row + oy * ow;
    const int64_t h = oy * p.sh - p.ph + r * p.dh;
    if (h < 0 || h >= p.ih) {
      std::memset(out, 0, sizeof(float) * ow);
      continue;
    }
    const float* in = plane + h * p.iw;
    std::memset(out, 0, sizeof(float) * ox_lo);
    if (p.sw == 1) {
      std::memcpy(out + ox_lo, in + (w0 + ox_lo), sizeof(float) * (ox_hi - ox_lo));
    } else {
      for (int64_t ox = ox_lo; ox < ox_hi; ++ox) out[ox] = in[w0 + ox * p.sw];
    }
    std::memset(out + ox_hi, 0, sizeof(float) * (ow - ox_hi));
  }
}

}  // namespace

std::string conv_gemm_why_not(const ConvProblem& p) { return conv_serves_any(p); }

std::size_t conv_gemm_workspace_bytes(const ConvProblem& p, int threads) {
  return col_bytes(p) + conv_gemm().workspace_bytes(gemm_shape(p), threads);
}

void conv_gemm_run(const ConvArgs& args) {
  const ConvProblem& p = *args.p;
  const GemmShape shape = gemm_shape(p);
  const int64_t k = shape.k, n = shape.n, plane_in = p.ih * p.iw;
  const bool direct_b = needs_no_im2col(p);
  auto* col = static_cast<float*>(args.workspace);
  GemmArgs g;
  g.shape = shape;
  g.lda = k;
  g.ldb = n;
  g.ldc = n;
  g.workspace = static_cast<char*>(args.workspace) + col_bytes(p);
  g.threads = args.threads;
  const int t = conv_useful_threads(args.threads, static_cast<double>(k * n) * 4.0, k);
  for (int64_t img = 0; img < p.mb; ++img) {
    for (int64_t grp = 0; grp < p.g; ++grp) {
      const float* src = args.src + (img * p.ic + grp * p.icg()) * plane_in;
      if (direct_b) {
        g.b = src;
      } else {
        if (t > 1) {
#pragma omp parallel for num_threads(t) schedule(static)
          for (int64_t row = 0; row < k; ++row) im2col_row(p, src, row, col + row * n);
        } else {
          for (int64_t row = 0; row < k; ++row) im2col_row(p, src, row, col + row * n);
        }
        g.b = col;
      }
      g.a = args.wei + grp * p.ocg() * k;
      g.c = args.dst + (img * p.oc + grp * p.ocg()) * n;
      conv_gemm().run(g);
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
  const double col = static_cast<double>(col_bytes(p)) * static_cast<double>(p.mb * p.g);
  return p.flops() / (kBlasRate * m.blas_flops_per_s * eff * t) +
         2.0 * col / (kPatchDram * m.dram_at(threads));
}

}  // namespace nnperf
