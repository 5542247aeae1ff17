// `gemm_live_taps`, all three passes: im2col + GEMM without the padding's products.
//
// im2col's patch matrix has kh*kw rows per channel for every output position. On a small map
// most of those entries are padding: ResNet-18's 2x2 maps with 3x3 kernels (32x32 input) read
// 4 live taps of 9 per output, so 56% of `gemm`'s multiply-adds there are by zeros. Here each
// output position (oy, ox) and each kernel row ky whose input row is inside the image is one
// GEMM over the batch, whose reduction runs over the live taps of that row and every channel:
//   forward           Yt[:, (oy,ox), :]        += Xt[:, iy, ix0..ix1, :] . W'[:, ky, kx0..kx1, :]^T
//   backward-data     dXt[:, iy, ix0..ix1, :]  += dYt[:, (oy,ox), :] . W'[:, ky, kx0..kx1, :]
//   backward-weights  dW'[:, ky, kx0..kx1, :]  += dYt[:, (oy,ox), :]^T . Xt[:, iy, ix0..ix1, :]
// Xt, Yt, dXt, dYt are channels-last (NHWC) copies and W' the weights as [oc][kh][kw][ic], so
// every operand is a plain strided matrix: one row per image (stride ih*iw*ic or oh*ow*oc) or
// per output channel (stride kh*kw*ic), and a kernel row's live taps are contiguous in both (at
// dilation 1; dilated taps are a GEMM each). The multiply-adds are exactly the live ones. The
// price: a GEMM per (position, kernel row) whose m (forward, data) or k (weights) is the batch,
// so it pays at batch >= ~16, and the transposes to and from channels-last. Groups: 1 only.
// The GEMMs are OpenBLAS's, one thread each; the threads take positions (forward), positions
// into private dXt copies summed at the end (data: positions overlap in dX), or blocks of
// output channels (weights). With fewer jobs than threads (a 1x1 map) one thread takes them and
// each GEMM uses them all. tolerance_factor 1: plain float32 sums.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/transpose.h"

namespace nnperf {

namespace {

// A 1x1 kernel's OIHW weights already are W' ([oc][1][1][ic]): no transform.
bool weights_are_taps_last(const ConvProblem& p) { return p.kh * p.kw == 1; }

// The live taps of output position (oy, ox) = (position / ow, position % ow): f(ky, kx0, taps,
// pixel) for each run of taps whose input pixels are neighbours in a row (a kernel row's live taps
// at dilation 1, else one tap), `pixel` the input pixel (iy*iw + ix) of the run's first tap.
template <class F>
void for_live_runs(const ConvProblem& p, int64_t position, const F& f) {
  const int64_t oy = position / p.ow(), ox = position % p.ow();
  const int64_t x0 = ox * p.sw - p.pw;  // input column of kx = 0
  const int64_t kx_lo = x0 >= 0 ? 0 : conv_ceil_div(-x0, p.dw);
  const int64_t kx_hi = x0 >= p.iw ? 0 : std::min(p.kw, (p.iw - 1 - x0) / p.dw + 1);
  if (kx_lo >= kx_hi) return;
  for (int64_t ky = 0; ky < p.kh; ++ky) {
    const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
    if (iy < 0 || iy >= p.ih) continue;
    if (p.dw == 1) {
      f(ky, kx_lo, kx_hi - kx_lo, iy * p.iw + x0 + kx_lo);
      continue;
    }
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx) f(ky, kx, int64_t{1}, iy * p.iw + x0 + kx * p.dw);
  }
}

// Live taps and GEMMs over all output positions: the kernel rows and columns that read inside
// the image are independent, so the live taps of (oy, ox) are rows(oy) x columns(ox).
struct LiveCount {
  double taps = 0, gemms = 0;
};
LiveCount live_count(const ConvProblem& p) {
  double rows = 0, cols = 0, runs = 0;
  for (int64_t oy = 0; oy < p.oh(); ++oy) {
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.sh - p.ph + ky * p.dh;
      rows += iy >= 0 && iy < p.ih;
    }
  }
  for (int64_t ox = 0; ox < p.ow(); ++ox) {
    int64_t live = 0;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t ix = ox * p.sw - p.pw + kx * p.dw;
      live += ix >= 0 && ix < p.iw;
    }
    cols += static_cast<double>(live);
    runs += p.dw == 1 ? (live > 0) : static_cast<double>(live);
  }
  return {rows * cols, rows * runs};
}

// dst[n][j][c] = src[n][c][j] for `planes` channels of `plane` floats per image (NCHW -> NHWC);
// the threads take images.
void to_channels_last(const float* src, int64_t mb, int64_t planes, int64_t plane, float* dst,
                      int threads) {
  const int t = conv_useful_copy_threads(threads, mb * planes * plane, mb);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t n = 0; n < mb; ++n) {
    transpose_floats(src + n * planes * plane, planes, plane, plane, dst + n * planes * plane,
                     planes);
  }
}

// The way back: dst[n][c][j] = sum over parts of src[part][n][j][c] (+ bias[c] when non-null),
// `parts` copies `part_stride` floats apart (backward-data's per-thread dXt), summed into the
// first.
void from_channels_last(float* src, int64_t parts, int64_t part_stride, int64_t mb, int64_t planes,
                        int64_t plane, const float* bias, float* dst, int threads) {
  const int64_t image = planes * plane;
  const int t = conv_useful_copy_threads(threads, parts * mb * image, mb);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t n = 0; n < mb; ++n) {
    float* s = src + n * image;
    for (int64_t q = 1; q < parts; ++q) {
      const float* o = s + q * part_stride;
      for (int64_t i = 0; i < image; ++i) s[i] += o[i];
    }
    float* d = dst + n * image;
    transpose_floats(s, plane, planes, planes, d, plane);
    if (bias == nullptr) continue;
    for (int64_t c = 0; c < planes; ++c) {
      for (int64_t j = 0; j < plane; ++j) d[c * plane + j] += bias[c];
    }
  }
}

// OIHW -> W' [oc][kh][kw][ic]: per output channel an ic x taps transpose.
void pack_taps_last(const ConvProblem& p, const float* wei, float* packed, int threads) {
  const int64_t taps = p.kh * p.kw, filter = p.ic * taps;
  const int t = conv_useful_copy_threads(threads, p.wei_numel(), p.oc);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t o = 0; o < p.oc; ++o) {
    transpose_floats(wei + o * filter, p.ic, taps, taps, packed + o * filter, p.ic);
  }
}

// And back: W' -> OIHW.
void unpack_taps_last(const ConvProblem& p, const float* packed, float* wei, int threads) {
  const int64_t taps = p.kh * p.kw, filter = p.ic * taps;
  const int t = conv_useful_copy_threads(threads, p.wei_numel(), p.oc);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t o = 0; o < p.oc; ++o) {
    transpose_floats(packed + o * filter, taps, p.ic, p.ic, wei + o * filter, taps);
  }
}

// The GEMM of one run, by pass: shape and operand offsets.
GemmShape run_shape(const ConvProblem& p, ConvPass pass, int64_t taps, int64_t channels) {
  const int64_t k = taps * p.ic;
  switch (pass) {
    case ConvPass::kBackwardData:
      return GemmShape{false, false, p.mb, k, p.oc};
    case ConvPass::kBackwardWeights:
      return GemmShape{true, false, channels, k, p.mb};
    case ConvPass::kForward:
      break;
  }
  return GemmShape{false, true, p.mb, channels, k};
}

// The workspace: Xt (or dXt per thread), Yt (or dYt), W' where the pass packs it, BLAS's own per
// thread. `threads`: the team that runs the GEMMs; `blocks`: forward's channel blocks per
// position, weights' channel blocks.
struct Layout {
  int threads = 1;
  int inner = 1;  // threads each GEMM uses: all of them when the jobs are too few to share
  int64_t blocks = 1;
  std::size_t x_bytes = 0, y_bytes = 0, w_bytes = 0, blas_bytes = 0;
  Layout(const ConvProblem& p, ConvPass pass, int threads_asked) {
    const int64_t positions = p.oh() * p.ow();
    const int64_t x_floats = p.src_numel(), y_floats = p.dst_numel();
    const LiveCount live = live_count(p);
    const double flops = 2.0 * static_cast<double>(p.mb * p.oc * p.ic) * live.taps;
    const int asked = std::max(1, threads_asked);
    if (pass == ConvPass::kBackwardWeights) {
      blocks = std::clamp<int64_t>(p.oc / 16, 1, asked);  // at least 16 channels a block
      threads = conv_useful_threads(asked, flops, blocks);
      blocks = threads;
    } else if (pass == ConvPass::kBackwardData) {
      // Private dXt copies: at most 64 MiB of them.
      const int64_t cap =
          std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(1, x_floats));
      threads =
          conv_useful_threads(static_cast<int>(std::min<int64_t>(asked, cap)), flops, positions);
    } else {
      // Enough channel blocks of >= 32 channels that every thread has two jobs.
      blocks = std::clamp<int64_t>(conv_ceil_div(2 * asked, std::max<int64_t>(1, positions)), 1,
                                   std::max<int64_t>(1, p.oc / 32));
      threads = conv_useful_threads(asked, flops, positions * blocks);
    }
    if (threads == 1) inner = conv_useful_threads(asked, flops, asked);
    const int parts = pass == ConvPass::kBackwardData ? threads : 1;
    x_bytes = conv_aligned_bytes(static_cast<std::size_t>(x_floats) * sizeof(float)) *
              static_cast<std::size_t>(parts);
    y_bytes = conv_aligned_bytes(static_cast<std::size_t>(y_floats) * sizeof(float));
    // Forward's W' is the row's packed weights; the backward passes pack it (data) or sum into
    // it (weights) here, but for 1x1 kernels, whose OIHW weights are W'.
    w_bytes = pass == ConvPass::kForward || weights_are_taps_last(p)
                  ? 0
                  : conv_aligned_bytes(static_cast<std::size_t>(p.wei_numel()) * sizeof(float));
    const int64_t widest = p.dw == 1 ? std::min(p.kw, p.iw) : 1;
    blas_bytes =
        conv_aligned_bytes(conv_blas().workspace_bytes(run_shape(p, pass, widest, p.oc), inner));
  }
  std::size_t total() const {
    return x_bytes + y_bytes + w_bytes + blas_bytes * static_cast<std::size_t>(threads);
  }
};

struct Buffers {
  float *x, *y, *w;
  char* blas;
  Buffers(const Layout& l, void* workspace) {
    auto* base = static_cast<char*>(workspace);
    x = reinterpret_cast<float*>(base);
    y = reinterpret_cast<float*>(base + l.x_bytes);
    w = reinterpret_cast<float*>(base + l.x_bytes + l.y_bytes);
    blas = base + l.x_bytes + l.y_bytes + l.w_bytes;
  }
};

// The GEMMs' leading dimensions: a row of Xt (one image), of Yt, of W' (one output channel).
struct Strides {
  int64_t positions, ldx, ldy, ldw;
  explicit Strides(const ConvProblem& p)
      : positions(p.oh() * p.ow()),
        ldx(p.ih * p.iw * p.ic),
        ldy(positions * p.oc),
        ldw(p.kh * p.kw * p.ic) {}
};

// Runs body(job, thread) for jobs [0, jobs) on the layout's threads, each a contiguous share; on
// one thread outside any parallel region, so that a GEMM's own threads (inner) are a top-level
// team (conv_backward_tiled.cc's tiled_team says why).
template <class Body>
void for_jobs(int threads, int64_t jobs, const Body& body) {
  if (threads <= 1) {
    for (int64_t j = 0; j < jobs; ++j) body(j, 0);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    for (int64_t j = jobs * tid / nt; j < jobs * (tid + 1) / nt; ++j)
      body(j, static_cast<int>(tid));
  }
}

double cost_of(const ConvProblem& p, ConvPass pass, int threads);

}  // namespace

std::string conv_gemm_live_taps_why_not(const ConvProblem& p) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) return invalid;
  if (p.g != 1) return "gemm_live_taps: groups > 1 not supported";
  return "";
}

std::size_t conv_gemm_live_taps_workspace_bytes(const ConvProblem& p, int threads) {
  return Layout(p, ConvPass::kForward, threads).total();
}

std::size_t conv_gemm_live_taps_packed_floats(const ConvProblem& p) {
  return weights_are_taps_last(p) ? 0 : static_cast<std::size_t>(p.wei_numel());
}

void conv_gemm_live_taps_pack(const ConvProblem& p, const float* wei, float* packed, int threads) {
  if (!weights_are_taps_last(p)) pack_taps_last(p, wei, packed, threads);
}

void conv_gemm_live_taps_run(const ConvArgs& a) {
  const ConvProblem& p = *a.p;
  const Layout l(p, ConvPass::kForward, a.threads);
  const Buffers b(l, a.workspace);
  const Strides d(p);
  const float* w = weights_are_taps_last(p) ? a.wei : a.packed;
  to_channels_last(a.src, p.mb, p.ic, p.ih * p.iw, b.x, a.threads);
  for_jobs(l.threads, d.positions * l.blocks, [=, &p](int64_t job, int t) {
    const int64_t pos = job / l.blocks, blk = job % l.blocks;
    const int64_t o0 = p.oc * blk / l.blocks, o1 = p.oc * (blk + 1) / l.blocks;
    float* c = b.y + pos * p.oc + o0;
    void* ws = b.blas + static_cast<std::size_t>(t) * l.blas_bytes;
    float beta = 0.0f;
    for_live_runs(p, pos, [&](int64_t ky, int64_t kx0, int64_t n, int64_t pixel) {
      conv_blas().run(gemm_args(run_shape(p, ConvPass::kForward, n, o1 - o0), b.x + pixel * p.ic,
                                d.ldx, w + o0 * d.ldw + (ky * p.kw + kx0) * p.ic, d.ldw, c, d.ldy,
                                ws, l.inner, beta));
      beta = 1.0f;
    });
    if (beta == 0.0f) {  // no live tap: the output is the bias alone
      for (int64_t n = 0; n < p.mb; ++n) std::fill(c + n * d.ldy, c + n * d.ldy + (o1 - o0), 0.0f);
    }
  });
  from_channels_last(b.y, 1, 0, p.mb, p.oc, d.positions, a.bias, a.dst, a.threads);
}

std::size_t conv_gemm_live_taps_data_workspace_bytes(const ConvProblem& p, int threads) {
  return Layout(p, ConvPass::kBackwardData, threads).total();
}

// Each thread sums its positions' products into its own dXt; the copies are summed on the way
// back to NCHW.
void conv_gemm_live_taps_data_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const Layout l(p, ConvPass::kBackwardData, a.threads);
  const Buffers b(l, a.workspace);
  const Strides d(p);
  const int64_t part = static_cast<int64_t>(l.x_bytes / sizeof(float)) / l.threads;
  const float* w = b.w;
  if (weights_are_taps_last(p)) {
    w = a.wei;
  } else {
    pack_taps_last(p, a.wei, b.w, a.threads);
  }
  to_channels_last(a.dst_grad, p.mb, p.oc, d.positions, b.y, a.threads);
  std::memset(b.x, 0, l.x_bytes);
  for_jobs(l.threads, d.positions, [=, &p](int64_t pos, int t) {
    float* dx = b.x + t * part;
    void* ws = b.blas + static_cast<std::size_t>(t) * l.blas_bytes;
    for_live_runs(p, pos, [&](int64_t ky, int64_t kx0, int64_t n, int64_t pixel) {
      conv_blas().run(gemm_args(run_shape(p, ConvPass::kBackwardData, n, p.oc), b.y + pos * p.oc,
                                d.ldy, w + (ky * p.kw + kx0) * p.ic, d.ldw, dx + pixel * p.ic,
                                d.ldx, ws, l.inner, 1.0f));
    });
  });
  from_channels_last(b.x, l.threads, part, p.mb, p.ic, p.ih * p.iw, nullptr, a.src_grad, a.threads);
}

std::size_t conv_gemm_live_taps_weights_workspace_bytes(const ConvProblem& p, int threads) {
  return Layout(p, ConvPass::kBackwardWeights, threads).total();
}

// Each thread takes a block of output channels and every position, summing into its rows of W'.
void conv_gemm_live_taps_weights_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const Layout l(p, ConvPass::kBackwardWeights, a.threads);
  const Buffers b(l, a.workspace);
  const Strides d(p);
  to_channels_last(a.src, p.mb, p.ic, p.ih * p.iw, b.x, a.threads);
  to_channels_last(a.dst_grad, p.mb, p.oc, d.positions, b.y, a.threads);
  for_jobs(l.threads, l.blocks, [=, &p](int64_t blk, int t) {
    const int64_t o0 = p.oc * blk / l.blocks, o1 = p.oc * (blk + 1) / l.blocks;
    float* dw = (weights_are_taps_last(p) ? a.wei_grad : b.w) + o0 * d.ldw;
    std::memset(dw, 0, static_cast<std::size_t>((o1 - o0) * d.ldw) * sizeof(float));
    void* ws = b.blas + static_cast<std::size_t>(t) * l.blas_bytes;
    for (int64_t pos = 0; pos < d.positions; ++pos) {
      for_live_runs(p, pos, [&](int64_t ky, int64_t kx0, int64_t n, int64_t pixel) {
        conv_blas().run(gemm_args(run_shape(p, ConvPass::kBackwardWeights, n, o1 - o0),
                                  b.y + pos * p.oc + o0, d.ldy, b.x + pixel * p.ic, d.ldx,
                                  dw + (ky * p.kw + kx0) * p.ic, d.ldw, ws, l.inner, 1.0f));
      });
    }
  });
  if (!weights_are_taps_last(p)) unpack_taps_last(p, b.w, a.wei_grad, a.threads);
  if (a.bias_grad != nullptr) conv_bias_grad(p, a.dst_grad, a.bias_grad, a.threads);
}

double conv_gemm_live_taps_cost(const ConvProblem& p, int threads) {
  return cost_of(p, ConvPass::kForward, threads);
}
double conv_gemm_live_taps_data_cost(const ConvProblem& p, int threads) {
  return cost_of(p, ConvPass::kBackwardData, threads);
}
double conv_gemm_live_taps_weights_cost(const ConvProblem& p, int threads) {
  return cost_of(p, ConvPass::kBackwardWeights, threads);
}

namespace {

// Fitted by least squares to this row's times on 18 problems, each pass (1 thread, a Zen 4 core
// at 116.7 GFLOP/s FMA, scaled to the fitted core by 102 / 116.7; the forward timed with its
// weight transform): ResNet-18's layers at batch 32 (2x2 to 8x8 maps, 64-512 channels, 1x1 and
// stride 2 included), batch 8 and 16 layers, and batches 1-4 on 7x7 to 56x56 maps. The terms:
//  - the live multiply-adds at OpenBLAS's rate on these GEMMs (forward 80 GFLOP/s there,
//    backward 100);
//  - W' read (forward, data) or updated (weights) by every GEMM: the live taps x ic x oc floats,
//    i.e. once per image of the batch's worth of FLOPs (0.02 ns per float), and more (0.2) for
//    the share of W' beyond one core's L2;
//  - a fixed 0.2 us per GEMM call;
//  - the transposes and the weights' repack, 0.35 ns per float moved.
// Within 25% of the times at batch 8-32 but on the 2x2 maps of 512 channels (W' 9.4 MB: 0.58-0.8
// of the time); pessimistic at batch 1-4 (up to 2.6x on 14x14 maps), where `gemm` serves better.
constexpr double kForwardRate = 70.0 / conv_fit::kFmaGflops;
constexpr double kBackwardRate = 87.0 / conv_fit::kFmaGflops;
constexpr double kTrafficSeconds = 0.023e-9;
constexpr double kBeyondL2Seconds = 0.23e-9;
constexpr double kCallSeconds = 0.23e-6;
constexpr double kCopySeconds = 0.4e-9;

double cost_of(const ConvProblem& p, ConvPass pass, int threads) {
  const ConvMachine m = conv_machine();
  const Layout l(p, pass, threads);
  const LiveCount live = live_count(p);
  const auto x = static_cast<double>(p.src_numel()), y = static_cast<double>(p.dst_numel()),
             w = static_cast<double>(p.wei_numel());
  const double flops = 2.0 * static_cast<double>(p.mb * p.oc * p.ic) * live.taps;
  const double traffic = live.taps * static_cast<double>(p.ic * p.oc);
  const double beyond = std::max(0.0, 1.0 - m.l2_bytes / (w * sizeof(float)));
  const bool forward = pass == ConvPass::kForward;
  const double calls =
      live.gemms * static_cast<double>(pass == ConvPass::kBackwardData ? 1 : l.blocks);
  double copies = x + y;
  const double repack = weights_are_taps_last(p) ? 0 : w;
  if (pass == ConvPass::kBackwardData) copies += repack + x * (l.threads - 1);  // dXt sums
  if (pass == ConvPass::kBackwardWeights) copies += w + repack;  // zeroed, back to OIHW
  // Short GEMM rows (a 3-channel stem's 7 taps: 21 floats) run below the rate: OpenBLAS's
  // edge kernels (ResNet-18's 7x7 stride-2 stem at 32x32, backward-weights: 4.1 ms, where the
  // terms above give 1.9).
  const double width = live.gemms > 0 ? live.taps / live.gemms * static_cast<double>(p.ic) : 1;
  // And below a batch of 32 (the GEMMs' m, or k for backward-weights) the fit above holds on
  // small maps but not on large ones: ResNet-50's 56x56 stride-2 layer at batch 8 ran 8-15%
  // slower than `gemm` (1.3x the model; no padding products to skip there), where the batch-8
  // 2x2 layers ran level with it. Charged as a rate of sqrt(batch / 32), which leaves this row
  // to batches of 16+.
  const double batch = std::min(1.0, static_cast<double>(p.mb) / 32.0);
  const double rate = (forward ? kForwardRate : kBackwardRate) * m.blas_flops_per_s *
                      __builtin_sqrt(std::min(1.0, width / 96.0) * batch);
  const double t = static_cast<double>(l.threads * l.inner);
  return flops / (rate * t) +
         m.seconds((kTrafficSeconds + kBeyondL2Seconds * beyond) * traffic / t +
                   kCallSeconds * calls / l.threads + kCopySeconds * copies / l.threads);
}

}  // namespace

}  // namespace nnperf
