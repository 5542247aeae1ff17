// `gemm_tiled`, both backward passes (conv_backward.h): gemm's products one band of output rows
// at a time.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

namespace {

// The patch matrix, or its gradient, one band at a time: whole output rows of one image and
// group whose K x cols patch rows fill about kBandBytes, so that the GEMM reads (backward-data:
// col2im reads) them from L2 right after they were written; gemm writes a whole image's K x N
// rows first: 7.4 MB for ResNet-50's stem, 115 MB for VGG-16's second layer, out to DRAM and
// back. Each band is one OpenBLAS call over 256+ columns (its full rate from ~128), on one
// thread (with fewer bands, or images, than threads: on all of them, see TiledLayout).
// Backward-weights runs in the transposed orientation dW_g^T [K x ocg] += col_band [K x cols] .
// dY_band^T: with the patch rows as A, OpenBLAS ran ResNet-50's stem band (m147n64k336) at 95
// GFLOP/s against 80 for dY . col^T (m64n147k336), one Zen 4 core. Its bands, of all images, are
// split between the threads, each summing into its own dW^T in the workspace; the end transposes
// and adds them into wei_grad. Backward-data: dcol_band = W_g^T . dY_band, then col2im of the band.
constexpr int64_t kBandBytes = 256 * 1024;  // half the fitted Zen 3 core's 512 KiB L2
constexpr int64_t kBandColumns = 256;
constexpr std::size_t kMaxPartialBytes = std::size_t{64} << 20;  // all threads' dW^T

// The bands of both passes. Weights: a thread takes any bands (items: mb*g*bands) and sums into
// its own dW^T. Data: a thread takes whole images and groups (items: mb*g), whose dX planes no
// other thread touches, their bands in order (neighbouring bands add into the same input rows).
// With fewer items than threads, one thread takes them all and each band's GEMM, im2col and
// col2im use the threads instead (`inner`), so that no thread of the team waits idle.
struct TiledLayout {
  int64_t k, n, rows, bands, items;  // rows per band, bands per image and group, work items
  int threads;                       // threads that take items
  int inner;                         // threads each band's work uses
  std::size_t col_bytes, blas_bytes, table_bytes, partial_bytes;  // per thread but the table
  TiledLayout(const ConvProblem& p, int threads_asked, ConvPass pass)
      : k(p.icg() * p.kh * p.kw), n(p.oh() * p.ow()) {
    const bool weights = pass == ConvPass::kBackwardWeights;
    const int64_t fit = std::max(kBandColumns, kBandBytes / (k * 4));
    rows = std::clamp<int64_t>(fit / p.ow(), 1, p.oh());
    bands = conv_ceil_div(p.oh(), rows);
    items = p.mb * p.g * (weights ? bands : 1);
    partial_bytes =
        weights ? conv_aligned_bytes(static_cast<std::size_t>(p.wei_numel()) * sizeof(float)) : 0;
    const auto cap =
        weights ? static_cast<int64_t>(std::max<std::size_t>(1, kMaxPartialBytes / partial_bytes))
                : int64_t{threads_asked};
    threads = static_cast<int>(
        std::clamp<int64_t>(std::min<int64_t>(threads_asked, cap), 1, std::max<int64_t>(items, 1)));
    inner = items < threads_asked ? std::max(1, threads_asked) : 1;
    if (inner > 1) threads = 1;
    col_bytes = conv_patches_are_input(p)
                    ? 0
                    : conv_aligned_bytes(static_cast<std::size_t>(k * rows * p.ow()) * 4);
    const GemmShape shape = weights ? GemmShape{false, true, k, p.ocg(), rows * p.ow()}
                                    : GemmShape{true, false, k, rows * p.ow(), p.ocg()};
    blas_bytes = conv_aligned_bytes(conv_blas().workspace_bytes(shape, inner));
    table_bytes = conv_patches_are_input(p) ? 0 : conv_tap_table_bytes(p);
  }
  std::size_t per_thread() const { return col_bytes + blas_bytes + partial_bytes; }
  std::size_t total() const {
    return table_bytes + static_cast<std::size_t>(threads) * per_thread();
  }
};

// The workspace as the layout says: the tap table (filled; null when the layout has none), then
// each thread's buffers.
struct TiledBuffers {
  const int32_t* table = nullptr;
  char* per_thread;
  TiledBuffers(const ConvProblem& p, const TiledLayout& l, void* workspace) {
    auto* base = static_cast<char*>(workspace);
    if (l.table_bytes > 0) {
      auto* t = reinterpret_cast<int32_t*>(base);
      conv_fill_tap_table(p, t);
      table = t;
    }
    per_thread = base + l.table_bytes;
  }
};

// take(t, nt) on each of the layout's threads; on one thread outside any parallel region, so
// that the band's own parallel regions (inner > 1) are top-level teams. Nested in an inactive
// region, libgomp gave each a team of its own threads: ResNet-50's stem dX at batch 1 on 2
// threads took 12.6 ms that way (155 ms with OMP_WAIT_POLICY=active), against 3.7 on one.
template <typename Take>
void tiled_team(const TiledLayout& l, const Take& take) {
  if (l.threads == 1) {
    take(0, 1);
    return;
  }
#pragma omp parallel num_threads(l.threads)
  take(omp_get_thread_num(), omp_get_num_threads());
}

// dW^T of one group (acc: K x ocg) += col . dY^T over output rows [oy0, oy1) of image img.
void tiled_band(const ConvProblem& p, const ConvBackwardArgs& a, const TiledLayout& l,
                const int32_t* table, int64_t img, int64_t grp, int64_t oy0, int64_t oy1,
                float* col, void* blas_ws, float* acc) {
  const int64_t ow = p.ow(), plane = p.ih * p.iw, cols = (oy1 - oy0) * ow;
  const float* src = a.src + (img * p.ic + grp * p.icg()) * plane;
  const float* rows = src + oy0 * ow;  // 1x1 stride 1 unpadded: the input rows are the patches
  int64_t ld = plane;
  if (!conv_patches_are_input(p)) {
    const int t = conv_useful_copy_threads(l.inner, l.k * cols, l.k);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
    for (int64_t r = 0; r < l.k; ++r) {
      if (table != nullptr) {
        conv_im2col_row_table(p, table, src, r, oy0 * ow, oy1 * ow, col + r * cols);
      } else {
        conv_im2col_row_band(p, src, r, oy0, oy1, col + r * cols);
      }
    }
    rows = col;
    ld = cols;
  }
  const float* dy = a.dst_grad + (img * p.oc + grp * p.ocg()) * l.n + oy0 * ow;
  conv_blas().run(gemm_args({false, true, l.k, p.ocg(), cols}, rows, ld, dy, l.n,
                            acc + grp * l.k * p.ocg(), p.ocg(), blas_ws, l.inner, 1.0f));
}

}  // namespace

void conv_tiled_weights_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const TiledLayout l(p, a.threads, ConvPass::kBackwardWeights);
  const TiledBuffers b(p, l, a.workspace);
  const int32_t* table = b.table;
  char* per_thread = b.per_thread;
  const int64_t wn = p.wei_numel();
  auto partial = [&](int t) {
    return reinterpret_cast<float*>(per_thread + t * l.per_thread() + l.col_bytes + l.blas_bytes);
  };
  const auto take = [&](int t, int nt) {  // thread t of nt: its share of the items
    char* mine = per_thread + t * l.per_thread();
    float* acc = partial(t);
    std::fill(acc, acc + wn, 0.0f);
    const int64_t lo = l.items * t / nt, hi = l.items * (t + 1) / nt;
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t img = item / (p.g * l.bands), grp = item / l.bands % p.g;
      const int64_t oy0 = item % l.bands * l.rows, oy1 = std::min(p.oh(), oy0 + l.rows);
      tiled_band(p, a, l, table, img, grp, oy0, oy1, reinterpret_cast<float*>(mine),
                 mine + l.col_bytes, acc);
    }
  };
  tiled_team(l, take);
  // wei_grad[g][o][k] = sum over threads of acc[g][k][o], 16 channels at a time: each k reads
  // 64 contiguous bytes of every partial and writes 16 rows of wei_grad.
  constexpr int64_t kBlock = 16;
  const int64_t ocg = p.ocg(), blocks = conv_ceil_div(ocg, kBlock);
  const int t = conv_useful_copy_threads(a.threads, wn * l.threads, p.g * blocks);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t g = 0; g < p.g; ++g) {
    for (int64_t ob = 0; ob < blocks; ++ob) {
      const int64_t o0 = ob * kBlock, o1 = std::min(ocg, o0 + kBlock);
      float* dw = a.wei_grad + g * ocg * l.k;
      for (int64_t k = 0; k < l.k; ++k) {
        float s[kBlock] = {};
        for (int u = 0; u < l.threads; ++u) {
          const float* in = partial(u) + (g * l.k + k) * ocg;
          for (int64_t o = o0; o < o1; ++o) s[o - o0] += in[o];
        }
        for (int64_t o = o0; o < o1; ++o) dw[o * l.k + k] = s[o - o0];
      }
    }
  }
  if (a.bias_grad != nullptr) conv_bias_grad(p, a.dst_grad, a.bias_grad, a.threads);
}

std::size_t conv_tiled_weights_workspace_bytes(const ConvProblem& p, int threads) {
  return TiledLayout(p, threads, ConvPass::kBackwardWeights).total();
}

namespace {

// dX of image img, group grp (dx: its first channel), output rows [oy0, oy1): dcol = W_g^T .
// dY_band [K x cols], then added into the dX planes where its entries were read from.
void tiled_data_band(const ConvProblem& p, const ConvBackwardArgs& a, const TiledLayout& l,
                     const int32_t* table, int64_t img, int64_t grp, int64_t oy0, int64_t oy1,
                     float* dcol, void* blas_ws) {
  const int64_t ow = p.ow(), plane = p.ih * p.iw, cols = (oy1 - oy0) * ow, taps = p.kh * p.kw;
  const float* w = a.wei + grp * p.ocg() * l.k;
  const float* dy = a.dst_grad + (img * p.oc + grp * p.ocg()) * l.n + oy0 * ow;
  float* dx = a.src_grad + (img * p.ic + grp * p.icg()) * plane;
  if (conv_patches_are_input(p)) {  // 1x1 stride 1 unpadded: the band's dX rows are dcol itself
    conv_blas().run(gemm_args({true, false, l.k, cols, p.ocg()}, w, l.k, dy, l.n, dx + oy0 * ow,
                              plane, blas_ws, l.inner));
    return;
  }
  conv_blas().run(
      gemm_args({true, false, l.k, cols, p.ocg()}, w, l.k, dy, l.n, dcol, cols, blas_ws, l.inner));
  const int t = conv_useful_copy_threads(l.inner, l.k * cols, p.icg());
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < p.icg(); ++c) {
    const float* rows = dcol + c * taps * cols;
    if (table != nullptr) {
      conv_col2im_plane_table(p, table, rows, cols, oy0 * ow, oy1 * ow, dx + c * plane);
    } else {
      conv_col2im_band(p, rows, cols, oy0, oy1, dx + c * plane);
    }
  }
}

}  // namespace

void conv_tiled_data_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const TiledLayout l(p, a.threads, ConvPass::kBackwardData);
  const TiledBuffers b(p, l, a.workspace);
  const int32_t* table = b.table;
  char* per_thread = b.per_thread;
  const int64_t plane = p.ih * p.iw;
  const auto take = [&](int t, int nt) {  // thread t of nt: its share of the images and groups
    char* mine = per_thread + t * l.per_thread();
    const int64_t lo = l.items * t / nt, hi = l.items * (t + 1) / nt;
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t img = item / p.g, grp = item % p.g;
      if (!conv_patches_are_input(p)) {
        float* dx = a.src_grad + (img * p.ic + grp * p.icg()) * plane;
        std::fill(dx, dx + p.icg() * plane, 0.0f);
      }
      for (int64_t band = 0; band < l.bands; ++band) {
        const int64_t oy0 = band * l.rows, oy1 = std::min(p.oh(), oy0 + l.rows);
        tiled_data_band(p, a, l, table, img, grp, oy0, oy1, reinterpret_cast<float*>(mine),
                        mine + l.col_bytes);
      }
    }
  };
  tiled_team(l, take);
}

std::size_t conv_tiled_data_workspace_bytes(const ConvProblem& p, int threads) {
  return TiledLayout(p, threads, ConvPass::kBackwardData).total();
}

namespace {

// OpenBLAS's rate at the band GEMM's shape on the threads that take items, plus im2col (col2im)
// of each band in L2 (kTiledIm2colSeconds per element on the fitted core: ResNet-50's stride-2
// stem measured 0.22 ns on a Zen 4 core at 116 GFLOP/s, 3.2 ms for 8 images, scaled by 116 / 102)
// and, for the weights, the transposed sum of the partials. The bands save only where gemm's
// patch matrix of one image leaves the cache and the band does not: a band over
// kTiledCachedBandBytes (K >= 2304 at 256 columns), or an image's whole patch matrix within it,
// is charged as gemm charges its patch matrix. Over VGG-16's and ResNet-50's layers at batch 8
// (backward-weights, one Zen 4 core, 1 MiB L2) bands up to 1008 KiB ran 4-29% faster than gemm
// where an image's patch matrix took 2-115 MB, bands of 1.7-4.4 MiB 1-7% slower; backward-data
// on 2 threads took 1.13x gemm's time on mb8ic256ih56oc512kh1sh2, whose patch matrix of 0.8 MB
// per image stays in L2 for gemm too.
constexpr double kTiledIm2colSeconds = 0.25e-9;
constexpr double kTiledCachedBandBytes = 4.0 * kBandBytes;
double tiled_cost(const ConvProblem& p, int threads, ConvPass pass) {
  const ConvMachine m = conv_machine();
  const TiledLayout l(p, threads, pass);
  const int64_t cols = l.rows * p.ow();
  // dW^T's GEMM has ocg columns: OpenBLAS ran m147n64k336 and m576n64k224 (A plain, B
  // transposed) at 95 and 100 GFLOP/s on a Zen 4 core (116 peak), its full rate from 64 columns.
  const double eff =
      std::max(0.05, pass == ConvPass::kBackwardData
                         ? conv_gemm_shape_efficiency(l.k, cols, p.ocg())
                         : conv_gemm_shape_efficiency(l.k, p.ocg(), cols, 128.0, 64));
  // Only the threads that take items count: with inner threads every band forks its own small
  // regions (ResNet-50's stem at batch 1 on 2 threads: dX 2.6 ms against gemm's 1.9, dW 1.6
  // against 1.9), so the model counts those as one thread and guess keeps gemm there.
  const int par = l.threads;
  const double col = conv_patches_are_input(p) ? 0.0 : static_cast<double>(l.k * l.n * p.mb * p.g);
  const double image_col_bytes = static_cast<double>(l.k * l.n) * sizeof(float);
  const double col_cost =
      static_cast<double>(l.col_bytes) <= kTiledCachedBandBytes &&
              image_col_bytes > kTiledCachedBandBytes
          ? col * m.seconds(kTiledIm2colSeconds) / par
          : 2.0 * col * sizeof(float) / ((15.0 / conv_fit::kDramGbps) * m.dram_at(par));
  const double partial_bytes =
      l.partial_bytes > 0 ? (l.threads + 1.0) * static_cast<double>(l.partial_bytes) : 0.0;
  return p.flops() / ((86.0 / conv_fit::kFmaGflops) * m.blas_flops_per_s * eff * par) + col_cost +
         partial_bytes / m.dram_at(l.threads);
}
}  // namespace

double conv_tiled_data_cost(const ConvProblem& p, int t) {
  return tiled_cost(p, t, ConvPass::kBackwardData);
}
double conv_tiled_weights_cost(const ConvProblem& p, int t) {
  return tiled_cost(p, t, ConvPass::kBackwardWeights);
}

}  // namespace nnperf
