// Backward-weights `winograd_nonfused` (cuDNN's name for its filter-gradient algorithm of the same
// structure): dW of a 3x3, stride-1, undilated convolution by Winograd's F(3x3, 2x2).
//
// Per 2x2 tile of the output, the tile's share of dW is a 2-tap correlation in each dimension of
// the tile's 4x4 input patch X with the tile's 2x2 dY, giving 3x3 outputs, i.e. F(3, 2):
//   dW_tile = G^T [ (A dY A^T) (.) (B^T X B) ] G        (. elementwise, all 4x4)
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   A = [1 0; 1 1; 1 -1; 0 -1]
//   G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1]
// (the transpose-dual of the forward F(2, 3)). The sum over tiles is taken in the transformed
// domain, one GEMM per transform position xi (16 of them) over a chunk of tiles:
//   M[xi] (ocg x icg) += U[xi] (ocg x tiles) . V[xi]^T (tiles x icg)
// with U = A dY A^T and V = B^T X B for every tile of the chunk, then dW = G^T M G once. 16
// multiplies per tile where the direct sum takes 36: 2.25x fewer FLOPs, in OpenBLAS GEMMs.
// Tiles are numbered over images, tile rows and tile columns; a chunk is a range of them, its U
// and V about kChunkBytes. All threads work on each chunk together: the transforms split by
// channel, the 16 GEMMs by xi, each into its own M[xi], so no thread holds an M of its own (an
// earlier version gave each thread whole chunks and an M to sum: on 2 threads a batch of one
// chunk left the second thread spinning while the first ran, 8.8-11.9 ms where one thread took 1.2,
// and 512x512 channels cost each thread 16.8 MB of M). The last tile row or column of an odd output
// takes zeros for the dY it lacks, so the X it reads there (also zero outside the image) adds
// nothing. The two input transforms (winograd_bw_impl.h) take a vector of tiles at a time, per
// SIMD level (winograd_bw::transforms_for); the scalar loops they replaced, one tile at a time,
// took 0.45 ns per transformed value.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_bw_impl.h"
#include "nnperf/kernels/conv/winograd_bw_internal.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

namespace {

constexpr int64_t kXi = 16;                   // transform positions (4x4)
constexpr int64_t kChunkBytes = 1024 * 1024;  // U and V of one chunk
constexpr int64_t kMinChunkTiles = 128;       // the GEMMs' reduction: OpenBLAS full rate

// Floats from one transform position's U (or V, or M) to the next: channels x tiles (or
// channels), plus a cache line, so that the 16 streams the transforms write (or the inverse
// transform reads) are never a multiple of 4 KiB apart. They were, at 64 channels x 128 tiles,
// and shared one L1 set: 30 of a layer's 41 ms went to the transforms.
int64_t xi_stride(int64_t channels, int64_t n) { return conv_round_up(channels * n, 16) + 16; }

// Floats per channel row of U and V for n tiles: the transforms write whole vectors, up to 15
// floats past the last tile (winograd_bw_internal.h).
int64_t row_floats(int64_t n) { return conv_round_up(n + 15, 16); }

struct Layout {
  int64_t th, tw, tiles, chunk, chunks;  // tiles over the batch; chunk: tiles per chunk
  int threads;                           // the team: at most one per GEMM of a chunk
  std::size_t uv_bytes, m_bytes, blas_bytes;  // blas_bytes: per thread
  Layout(const ConvProblem& p, int threads_asked) {
    th = conv_ceil_div(p.oh(), 2);
    tw = conv_ceil_div(p.ow(), 2);
    tiles = p.mb * th * tw;
    const int64_t per_tile = kXi * (p.ocg() + p.icg()) * 4;
    chunk = std::min(tiles, std::max(kMinChunkTiles, kChunkBytes / per_tile));
    chunks = conv_ceil_div(tiles, chunk);
    const double flops = 2.0 * kXi * static_cast<double>(p.g * p.ocg() * p.icg() * tiles);
    threads = conv_useful_threads(threads_asked, flops, kXi);
    m_bytes =
        conv_aligned_bytes(static_cast<std::size_t>(kXi * p.g * xi_stride(p.ocg(), p.icg())) * 4);
    const int64_t ld = row_floats(chunk);
    uv_bytes = conv_aligned_bytes(
        static_cast<std::size_t>(kXi * (xi_stride(p.ocg(), ld) + xi_stride(p.icg(), ld))) * 4);
    blas_bytes = conv_aligned_bytes(
        conv_blas().workspace_bytes(GemmShape{false, true, p.ocg(), p.icg(), chunk}, 1));
  }
  std::size_t total() const {
    return uv_bytes + m_bytes + static_cast<std::size_t>(threads) * blas_bytes;
  }
};

}  // namespace

std::string conv_winograd_bw_why_not(const ConvProblem& p) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) return invalid;
  if (p.kh != 3 || p.kw != 3) return "winograd_nonfused: F(3x3, 2x2) serves 3x3 kernels only";
  if (p.sh != 1 || p.sw != 1) return "winograd_nonfused: stride > 1 not supported";
  if (p.dh != 1 || p.dw != 1) return "winograd_nonfused: dilation not supported";
  return "";
}

std::size_t conv_winograd_bw_workspace_bytes(const ConvProblem& p, int threads) {
  return Layout(p, threads).total();
}

namespace winograd_bw {

const Transforms kTransformsPortable{&input_transform<simd::Portable<simd::F32x4>>,
                                     &grad_transform<simd::Portable<simd::F32x4>>,
                                     &inverse_transform<simd::Portable<simd::F32x4>>};

const Transforms& transforms_for(SimdLevel level) {
  return std::min(level, cpu_info().simd) >= SimdLevel::kAvx2 ? kTransformsAvx2
                                                              : kTransformsPortable;
}

}  // namespace winograd_bw

void conv_winograd_bw_run(const ConvBackwardArgs& a) {
  conv_winograd_bw_run_with(winograd_bw::transforms_for(active_simd()), a);
}

void conv_winograd_bw_run_with(const winograd_bw::Transforms& tf, const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const Layout l(p, a.threads);
  const winograd_bw::Geometry geo{p.ih,
                                  p.iw,
                                  p.oh(),
                                  p.ow(),
                                  p.ph,
                                  p.pw,
                                  l.th,
                                  l.tw,
                                  p.ic * p.ih * p.iw,
                                  p.oc * p.oh() * p.ow()};
  // One transform position's M of one group (ocg x icg), padded as U and V are: the inverse
  // transform reads the 16 of every (o, c).
  const int64_t ocg = p.ocg(), icg = p.icg(), mg = xi_stride(ocg, icg);
  const int64_t plane = p.ih * p.iw, oplane = p.oh() * p.ow();
  auto* base = static_cast<char*>(a.workspace);
  auto* u = reinterpret_cast<float*>(base);               // [xi][ocg][ld], xi_stride apart, then V
  auto* m = reinterpret_cast<float*>(base + l.uv_bytes);  // [g][xi][ocg][icg]
  char* blas_ws = base + l.uv_bytes + l.m_bytes;
#pragma omp parallel num_threads(l.threads) if (l.threads > 1)
  {
    void* ws = blas_ws + omp_get_thread_num() * l.blas_bytes;
    for (int64_t item = 0; item < p.g * l.chunks; ++item) {
      const int64_t grp = item / l.chunks, t0 = item % l.chunks * l.chunk;
      const int64_t n = std::min(l.chunk, l.tiles - t0), ld = row_floats(n);
      const int64_t su = xi_stride(ocg, ld), sv = xi_stride(icg, ld);
      float* v = u + kXi * su;  // [xi][icg][ld]
#pragma omp for schedule(static)
      for (int64_t ch = 0; ch < icg + ocg; ++ch) {
        if (ch < icg) {
          tf.input(geo, a.src + (grp * icg + ch) * plane, t0, n, v + ch * ld, sv);
        } else {
          const int64_t o = ch - icg;
          tf.grad(geo, a.dst_grad + (grp * ocg + o) * oplane, t0, n, u + o * ld, su);
        }
      }
#pragma omp for schedule(static)
      for (int64_t xi = 0; xi < kXi; ++xi) {
        // A group's first chunk writes M (beta 0: no zeroing pass, no read of 16 MB at 512x512).
        conv_blas().run(gemm_args({false, true, ocg, icg, n}, u + xi * su, ld, v + xi * sv, ld,
                                  m + (grp * kXi + xi) * mg, icg, ws, 1, t0 == 0 ? 0.0f : 1.0f));
      }
    }
  }
  // dW[g][o][c] = G^T M[g][.][o][c] G.
  const int t = conv_useful_copy_threads(a.threads, p.g * kXi * mg, p.g * ocg);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t grp = 0; grp < p.g; ++grp) {
    for (int64_t o = 0; o < ocg; ++o) {
      tf.inverse(m + grp * kXi * mg + o * icg, mg, icg, a.wei_grad + (grp * ocg + o) * icg * 9);
    }
  }
  if (a.bias_grad != nullptr) conv_bias_grad(p, a.dst_grad, a.bias_grad, a.threads);
}

// OpenBLAS's rate over the 16 GEMMs at their shape, ceil(16 / threads) of them per thread, plus
// the transforms split over the threads and M, written by the GEMMs and read back by the inverse
// transform at DRAM speed. The GEMMs' reduction is the chunk's tiles; OpenBLAS runs them at full
// rate from 32 (mb32ic256ih2oc256kh3ph1: m256 n256 k32 at 97 GFLOP/s on a 116 GFLOP/s Zen 4 core,
// from perf's share of a run), where the generic shape model, made for im2col's GEMMs, wants 128.
// The transforms cost kValueSeconds per transformed value and kStripSeconds per tile row and
// channel (each row's copies into the gather arrays), fitted on the same core from perf's shares of
// two runs: 3.4 ms for 12.8M values in 29K rows (mb8ic64ih56oc64kh3ph1) and 0.32 ms for 0.26M
// values in 16K rows (mb32ic256ih2oc256kh3ph1), scaled by 116 / 102 to the fitted core; that
// gave 18 ns per row. A third point, 4x4 maps (mb32ic128ih4oc128kh3ph1: 0.52M values in 16.6K
// rows), had the transforms at 36% of 2.3 ms, about twice what 18 ns gives, and with it this
// row's modelled-to-measured ratio on ResNet-18's 4x4 and 8x8 layers sat 25-35% below the other
// rows' (guess kept it there where gemm_live_taps ran dW 12-35% faster). 40 ns per row: 17%
// under the 4x4 point, 8% over the 56x56 one, 1.9x the 2x2 one (where the row is not the fastest);
// scored on the bench_guess runs of 2026-11-29, it changes guess's picks on those four
// ResNet-18 problems only, none of ResNet-50's.
double conv_winograd_bw_cost(const ConvProblem& p, int threads) {
  constexpr double kValueSeconds = 0.24e-9, kStripSeconds = 40e-9;
  const ConvMachine m = conv_machine();
  const Layout l(p, threads);
  const double gemm_flops = 2.0 * static_cast<double>(p.g * p.ocg() * p.icg() * l.tiles);
  const double per_thread = static_cast<double>(conv_ceil_div(kXi, l.threads));
  const double eff = std::max(0.05, conv_gemm_shape_efficiency(p.ocg(), p.icg(), l.chunk, 32.0));
  const double channels = static_cast<double>(p.g * (p.ocg() + p.icg()));
  const double values = static_cast<double>(kXi * l.tiles) * channels;
  const double strips = static_cast<double>(p.mb * l.th + l.chunks) * channels;
  return gemm_flops * per_thread / ((86.0 / conv_fit::kFmaGflops) * m.blas_flops_per_s * eff) +
         (values * m.seconds(kValueSeconds) + strips * m.seconds(kStripSeconds)) / l.threads +
         2.0 * static_cast<double>(l.m_bytes) / m.dram_at(l.threads);
}

}  // namespace nnperf
