// The backward registries (conv_backward.h). Five methods:
//  - gemm: per image and group, im2col + two BLAS GEMMs + col2im (Caffe's backward):
//      dW_g [ocg x K] += dY_g [ocg x N] . col^T        dcol [K x N] = W_g^T . dY_g, col2im
//    with K = icg*kh*kw, N = oh*ow; dW as dW_g^T [K x ocg] += col . dY_g^T where ocg <= 64 < K
//    (weights_transposed).
//  - gemm_batched: the same over chunks of images side by side (N -> images x N columns), so the
//    small maps of deep layers (N = 1..49) make wide GEMMs instead of matrix-vector products;
//    dY is gathered into the chunk's layout first.
//  - transposed_forward (data only): for stride 1, dX is a forward convolution of dY with the
//    flipped, transposed weights W'[c][o][i][j] = W[o][c][kh-1-i][kw-1-j] and padding
//    d*(k-1) - p, run by the cheapest forward algorithm for that problem (Winograd for 3x3).
//  - gemm_tiled (conv_backward_tiled.cc): gemm's products one L2-sized band of output rows at a
//    time, so that no whole-image patch matrix goes out to DRAM and back.
//  - winograd_nonfused (weights only; winograd_backward_weights.cc): Winograd F(3x3, 2x2).
#include "nnperf/kernels/conv/conv_backward.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/transpose.h"

namespace nnperf {

namespace {

int64_t chunk_images(const ConvProblem& p, bool batched) {
  return batched ? conv_chunk_images(p) : 1;
}

// Backward-weights with at most 64 output channels per group and more patch rows than that:
// the product runs as dW^T [K x ocg] = col . dY^T into the workspace, transposed into dW at the
// end. OpenBLAS runs a GEMM with the larger dimension as its rows faster, the more so the fewer
// channels: m147n64k256 at 92 GFLOP/s against 83 for m64n147k256 (ResNet-18's stem), m576n64k256
// 94 against 87, m432n48k256 92 against 84, m576n32k256 85 against 74, m576n16k1024 69 against
// 31 (`nnperf bench gemm --problem mMnNkK_tb`, one Zen 4 core). From 128 channels the gap is 2-4%
// (m576n128k64 93 against 89, m2304n256k256 90 against 88), less than the transpose of larger
// weights costs.
bool weights_transposed(const ConvProblem& p) {
  return p.ocg() <= 64 && p.icg() * p.kh * p.kw > p.ocg();
}

// Workspace of the gemm methods: col (K x cN), dY chunk (ocg x cN), the tap table, BLAS's own,
// and backward-weights' dW^T where weights_transposed.
struct GemmLayout {
  int64_t c, k, n, cols;
  std::size_t col_bytes, dy_bytes, table_bytes, blas_bytes, dwt_bytes;
  GemmLayout(const ConvProblem& p, bool batched, int threads, ConvPass pass)
      : c(chunk_images(p, batched)), k(p.icg() * p.kh * p.kw), n(p.oh() * p.ow()), cols(c * n) {
    col_bytes = conv_aligned_bytes(static_cast<std::size_t>(k * cols) * sizeof(float));
    dy_bytes =
        c > 1 ? conv_aligned_bytes(static_cast<std::size_t>(p.ocg() * cols) * sizeof(float)) : 0;
    table_bytes = conv_patches_are_input(p) ? 0 : conv_tap_table_bytes(p);
    const bool dwt = pass == ConvPass::kBackwardWeights && weights_transposed(p);
    // The one product the pass runs.
    const GemmShape shape = pass == ConvPass::kBackwardData
                                ? GemmShape{true, false, k, cols, p.ocg()}
                            : dwt ? GemmShape{false, true, k, p.ocg(), cols}
                                  : GemmShape{false, true, p.ocg(), k, cols};
    blas_bytes = conv_blas().workspace_bytes(shape, threads);
    dwt_bytes =
        dwt ? conv_aligned_bytes(static_cast<std::size_t>(p.wei_numel()) * sizeof(float)) : 0;
  }
  std::size_t total() const { return col_bytes + dy_bytes + table_bytes + blas_bytes + dwt_bytes; }
};

// The workspace carved as the layout says; the tap table (if any) filled.
struct GemmBuffers {
  float* col;
  float* dy;
  const int32_t* table;
  void* blas;
  float* dwt;  // null without dW^T
  GemmBuffers(const ConvProblem& p, const GemmLayout& l, void* workspace) {
    auto* base = static_cast<char*>(workspace);
    col = reinterpret_cast<float*>(base);
    dy = reinterpret_cast<float*>(base + l.col_bytes);
    auto* t = reinterpret_cast<int32_t*>(base + l.col_bytes + l.dy_bytes);
    if (l.table_bytes > 0) conv_fill_tap_table(p, t);
    table = l.table_bytes > 0 ? t : nullptr;
    blas = base + l.col_bytes + l.dy_bytes + l.table_bytes;
    dwt = l.dwt_bytes > 0 ? reinterpret_cast<float*>(static_cast<char*>(blas) + l.blas_bytes)
                          : nullptr;
  }
};

// dY of images [n0, n0 + c), group g, as one ocg x (c*N) matrix (or a pointer into dY for c = 1).
const float* gather_dy(const ConvProblem& p, const float* dy, int64_t n0, int64_t c, int64_t g,
                       const GemmLayout& l, float* buf, int threads) {
  const int64_t ocg = p.ocg();
  if (c == 1) return dy + (n0 * p.oc + g * ocg) * l.n;
  const int t = conv_useful_copy_threads(threads, c * ocg * l.n, c * ocg);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t i = 0; i < c; ++i) {
    for (int64_t o = 0; o < ocg; ++o) {
      float* out = buf + o * l.cols + i * l.n;
      const float* in = dy + ((n0 + i) * p.oc + g * ocg + o) * l.n;
      for (int64_t j = 0; j < l.n; ++j) out[j] = in[j];  // a loop: l.n is a few floats
    }
  }
  return buf;
}

// The patch matrix of images [n0, n0 + c), group g: K x (c*N), image i in columns [i*N, (i+1)*N).
const float* build_col(const ConvProblem& p, const float* x, int64_t n0, int64_t c, int64_t g,
                       const GemmLayout& l, const int32_t* table, float* col, int threads) {
  const int64_t plane = p.ih * p.iw;
  if (c == 1 && conv_patches_are_input(p)) return x + (n0 * p.ic + g * p.icg()) * plane;
  conv_im2col_images(p, x + (n0 * p.ic + g * p.icg()) * plane, c, l.cols, table, col, threads);
  return col;
}

// The adjoint of build_col for channel c of image i of the chunk: its dx plane (zeroed here) +=
// every dcol entry at the pixel it was read from.
void col2im_plane(const ConvProblem& p, const float* dcol, const GemmLayout& l,
                  const int32_t* table, int64_t i, int64_t c, float* plane) {
  std::fill(plane, plane + p.ih * p.iw, 0.0f);
  const float* rows = dcol + c * p.kh * p.kw * l.cols + i * l.n;
  if (table != nullptr) {
    conv_col2im_plane_table(p, table, rows, l.cols, 0, l.n, plane);
  } else {
    conv_col2im_band(p, rows, l.cols, 0, p.oh(), plane);
  }
}

// dX of every image of the chunk and group from dcol (dx0: the chunk's first image, this group's
// first channel): a copy of the rows for a 1x1 stride-1 convolution, else col2im. Images and
// channels write disjoint planes, so they run in parallel.
void scatter_dcol(const ConvProblem& p, const float* dcol, const GemmLayout& l,
                  const int32_t* table, float* dx0, int threads) {
  const int64_t icg = p.icg(), plane = p.ih * p.iw;
  const int t = conv_useful_copy_threads(threads, l.k * l.cols, l.c * icg);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t i = 0; i < l.c; ++i) {
    for (int64_t c = 0; c < icg; ++c) {
      float* dx = dx0 + (i * p.ic + c) * plane;
      if (conv_patches_are_input(p)) {  // row c of dcol is the plane
        const float* row = dcol + c * l.cols + i * l.n;
        for (int64_t j = 0; j < l.n; ++j) dx[j] = row[j];  // a loop: l.n is a few floats
      } else {
        col2im_plane(p, dcol, l, table, i, c, dx);
      }
    }
  }
}

void gemm_data(const ConvBackwardArgs& a, bool batched) {
  const ConvProblem& p = *a.p;
  const GemmLayout l(p, batched, a.threads, ConvPass::kBackwardData);
  const GemmBuffers b(p, l, a.workspace);
  float* dcol = b.col;
  float* dy_buf = b.dy;
  void* ws = b.blas;
  const int64_t plane = p.ih * p.iw;
  for (int64_t n0 = 0; n0 < p.mb; n0 += l.c) {
    const int64_t c = std::min(l.c, p.mb - n0);
    GemmLayout lc = l;  // the last chunk may be shorter
    lc.c = c;
    lc.cols = c * l.n;
    for (int64_t g = 0; g < p.g; ++g) {
      const float* dy = gather_dy(p, a.dst_grad, n0, c, g, lc, dy_buf, a.threads);
      const float* w = a.wei + g * p.ocg() * l.k;
      float* dx0 = a.src_grad + (n0 * p.ic + g * p.icg()) * plane;
      if (c == 1 && conv_patches_are_input(p)) {  // dX is dcol itself
        conv_blas().run(
            gemm_args({true, false, l.k, l.n, p.ocg()}, w, l.k, dy, l.n, dx0, l.n, ws, a.threads));
        continue;
      }
      conv_blas().run(gemm_args({true, false, l.k, lc.cols, p.ocg()}, w, l.k, dy, lc.cols, dcol,
                                lc.cols, ws, a.threads));
      scatter_dcol(p, dcol, lc, b.table, dx0, a.threads);
    }
  }
}

void gemm_weights(const ConvBackwardArgs& a, bool batched) {
  const ConvProblem& p = *a.p;
  const GemmLayout l(p, batched, a.threads, ConvPass::kBackwardWeights);
  const GemmBuffers b(p, l, a.workspace);
  float* col = b.col;
  float* dy_buf = b.dy;
  void* ws = b.blas;
  for (int64_t n0 = 0; n0 < p.mb; n0 += l.c) {
    const int64_t c = std::min(l.c, p.mb - n0);
    GemmLayout lc = l;
    lc.c = c;
    lc.cols = c * l.n;
    for (int64_t g = 0; g < p.g; ++g) {
      const float* dy = gather_dy(p, a.dst_grad, n0, c, g, lc, dy_buf, a.threads);
      const float* cols = build_col(p, a.src, n0, c, g, lc, b.table, col, a.threads);
      const float beta = n0 == 0 ? 0.0f : 1.0f;
      if (b.dwt != nullptr) {
        conv_blas().run(gemm_args({false, true, l.k, p.ocg(), lc.cols}, cols, lc.cols, dy, lc.cols,
                                  b.dwt + g * l.k * p.ocg(), p.ocg(), ws, a.threads, beta));
      } else {
        conv_blas().run(gemm_args({false, true, p.ocg(), l.k, lc.cols}, dy, lc.cols, cols, lc.cols,
                                  a.wei_grad + g * p.ocg() * l.k, l.k, ws, a.threads, beta));
      }
    }
  }
  if (b.dwt != nullptr) {  // dW_g [ocg x K] = (dW^T_g)^T: at most 64 rows of K floats a group
    for (int64_t g = 0; g < p.g; ++g) {
      transpose_floats(b.dwt + g * l.k * p.ocg(), l.k, p.ocg(), p.ocg(),
                       a.wei_grad + g * p.ocg() * l.k, l.k);
    }
  }
  if (a.bias_grad != nullptr) conv_bias_grad(p, a.dst_grad, a.bias_grad, a.threads);
}

std::size_t gemm_data_ws(const ConvProblem& p, int threads) {
  return GemmLayout(p, false, threads, ConvPass::kBackwardData).total();
}
std::size_t batched_data_ws(const ConvProblem& p, int threads) {
  return GemmLayout(p, true, threads, ConvPass::kBackwardData).total();
}
std::size_t gemm_weights_ws(const ConvProblem& p, int threads) {
  return GemmLayout(p, false, threads, ConvPass::kBackwardWeights).total();
}
std::size_t batched_weights_ws(const ConvProblem& p, int threads) {
  return GemmLayout(p, true, threads, ConvPass::kBackwardWeights).total();
}
void gemm_data_run(const ConvBackwardArgs& a) { gemm_data(a, false); }
void batched_data_run(const ConvBackwardArgs& a) { gemm_data(a, true); }
void gemm_weights_run(const ConvBackwardArgs& a) { gemm_weights(a, false); }
void batched_weights_run(const ConvBackwardArgs& a) { gemm_weights(a, true); }

// OpenBLAS's rate (as im2col_gemm.cc: 86 GFLOP/s on the fitted core) scaled by the shape
// efficiency of the pass's GEMM, plus writing and reading the patch matrices.
double gemm_cost(const ConvProblem& p, int threads, bool batched, ConvPass pass) {
  const ConvMachine m = conv_machine();
  const GemmLayout l(p, batched, 1, pass);
  // dW^T's GEMM (weights_transposed) at its shape as gemm_tiled's: full rate from 64 columns.
  const double eff = std::max(
      0.05, pass == ConvPass::kBackwardData ? conv_gemm_shape_efficiency(l.k, l.cols, p.ocg())
            : l.dwt_bytes > 0 ? conv_gemm_shape_efficiency(l.k, p.ocg(), l.cols, 128.0, 64)
                              : conv_gemm_shape_efficiency(p.ocg(), l.k, l.cols));
  const double col =
      conv_patches_are_input(p) ? 0.0 : static_cast<double>(l.k * l.n * p.mb * p.g) * 4.0;
  return p.flops() /
             ((86.0 / conv_fit::kFmaGflops) * m.blas_flops_per_s * eff * std::max(1, threads)) +
         2.0 * col / ((15.0 / conv_fit::kDramGbps) * m.dram_at(threads));
}
double gemm_data_cost(const ConvProblem& p, int t) {
  return gemm_cost(p, t, false, ConvPass::kBackwardData);
}
double batched_data_cost(const ConvProblem& p, int t) {
  return gemm_cost(p, t, true, ConvPass::kBackwardData);
}
double gemm_weights_cost(const ConvProblem& p, int t) {
  return gemm_cost(p, t, false, ConvPass::kBackwardWeights);
}
double batched_weights_cost(const ConvProblem& p, int t) {
  return gemm_cost(p, t, true, ConvPass::kBackwardWeights);
}

// ---- transposed_forward ----
ConvProblem transposed(const ConvProblem& p) {
  ConvProblem q;
  q.mb = p.mb;
  q.ic = p.oc;
  q.ih = p.oh();
  q.iw = p.ow();
  q.oc = p.ic;
  q.kh = p.kh;
  q.kw = p.kw;
  q.ph = p.dh * (p.kh - 1) - p.ph;
  q.pw = p.dw * (p.kw - 1) - p.pw;
  q.dh = p.dh;
  q.dw = p.dw;
  return q;
}

// Every run flips and transposes the weights and transforms them for the inner algorithm (the
// weights change every training step): its cost counts that transform.
double inner_cost(const ConvAlgorithm& f, const ConvProblem& q, int threads) {
  return f.cost(q, threads) + conv_pack_cost(f, q, threads);
}

const ConvAlgorithm* inner_forward(const ConvProblem& q, int threads) {
  const ConvAlgorithm* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const ConvAlgorithm& f : conv_algorithms()) {
    if (!f.why_not(q).empty()) continue;
    const double c = inner_cost(f, q, threads);
    if (c < best_cost) {
      best = &f;
      best_cost = c;
    }
  }
  return best;
}

std::string transposed_why_not(const ConvProblem& p) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) return invalid;
  if (p.sh != 1 || p.sw != 1)
    return "transposed_forward: stride > 1 (dX is not a stride-1 convolution of dY)";
  if (p.g != 1) return "transposed_forward: groups > 1 not supported";
  const ConvProblem q = transposed(p);
  if (q.ph < 0 || q.pw < 0) return "transposed_forward: padding larger than the dilated kernel";
  if (q.oh() != p.ih || q.ow() != p.iw) return "transposed_forward: shapes do not round-trip";
  if (inner_forward(q, 1) == nullptr)
    return "transposed_forward: no forward algorithm serves " + q.str();
  return "";
}

struct TransposedLayout {
  const ConvAlgorithm* f;
  std::size_t wt_bytes, packed_bytes, inner_bytes;
  TransposedLayout(const ConvProblem& p, int threads) : f(inner_forward(transposed(p), threads)) {
    const ConvProblem q = transposed(p);
    wt_bytes = conv_aligned_bytes(static_cast<std::size_t>(p.wei_numel()) * sizeof(float));
    packed_bytes = f->packed_weights_floats != nullptr
                       ? conv_aligned_bytes(f->packed_weights_floats(q) * sizeof(float))
                       : 0;
    inner_bytes = f->workspace_bytes(q, threads);
  }
};

std::size_t transposed_ws(const ConvProblem& p, int threads) {
  const TransposedLayout l(p, threads);
  return l.wt_bytes + l.packed_bytes + l.inner_bytes;
}

void transposed_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const ConvProblem q = transposed(p);
  const TransposedLayout l(p, a.threads);
  auto* base = static_cast<char*>(a.workspace);
  auto* wt = reinterpret_cast<float*>(base);
  auto* packed = reinterpret_cast<float*>(base + l.wt_bytes);
  const int64_t khw = p.kh * p.kw;
  for (int64_t c = 0; c < p.ic; ++c) {  // wt written in order, wei read with a stride
    for (int64_t o = 0; o < p.oc; ++o) {
      const float* src = a.wei + (o * p.ic + c) * khw;
      float* dst = wt + (c * p.oc + o) * khw;
      for (int64_t i = 0; i < khw; ++i) dst[i] = src[khw - 1 - i];  // flipped in both axes
    }
  }
  if (l.f->pack_weights != nullptr) l.f->pack_weights(q, wt, packed, a.threads);
  ConvArgs f;
  f.p = &q;
  f.src = a.dst_grad;
  f.wei = wt;
  f.packed = l.f->pack_weights != nullptr ? packed : nullptr;
  f.dst = a.src_grad;
  f.workspace = base + l.wt_bytes + l.packed_bytes;
  f.threads = a.threads;
  l.f->run(f);
}

// The inner forward with its weight transform, plus the flip: each weight read (with a stride)
// and written once, at DRAM speed.
double transposed_cost(const ConvProblem& p, int threads) {
  const ConvProblem q = transposed(p);
  const ConvAlgorithm* f = inner_forward(q, threads);
  if (f == nullptr) return std::numeric_limits<double>::infinity();
  const double flip_bytes = 2.0 * sizeof(float) * static_cast<double>(p.wei_numel());
  return inner_cost(*f, q, threads) + flip_bytes / conv_machine().dram_at(1);
}

// ======================= registry tables ===================================================
// {name, description, pass, why_not, workspace_bytes, run, tolerance_factor, cost}
const ConvBackwardAlgorithm kData[] = {
    {"gemm", "per image and group: dcol = W^T . dY (OpenBLAS), then col2im",
     ConvPass::kBackwardData, conv_serves_any, gemm_data_ws, gemm_data_run, 1.0, gemm_data_cost},
    {"gemm_batched",
     "as gemm over chunks of images side by side (~256 columns per GEMM): wide GEMMs for small "
     "maps",
     ConvPass::kBackwardData, conv_serves_any, batched_data_ws, batched_data_run, 1.0,
     batched_data_cost},
    {"transposed_forward",
     "dX as a forward convolution of dY with the flipped, transposed weights, by the cheapest "
     "forward algorithm (Winograd for 3x3); stride 1, groups 1",
     // The inner forward algorithm's bound: the largest of the forward rows' (Winograd's).
     ConvPass::kBackwardData, transposed_why_not, transposed_ws, transposed_run,
     std::max(kConvWinogradTolerance, kConvFftTolerance), transposed_cost},
    {"gemm_tiled",
     "one L2-sized band of output rows at a time: dcol_band = W^T . dY_band (OpenBLAS, one "
     "thread), col2im of the band; the threads take whole images and groups",
     ConvPass::kBackwardData, conv_serves_any, conv_tiled_data_workspace_bytes, conv_tiled_data_run,
     1.0, conv_tiled_data_cost},
    {"gemm_live_taps",
     "per output position and kernel row, dXt[images, live taps' pixels] += dYt . W'_taps "
     "(OpenBLAS) over only the taps inside the image, into a channels-last dX per thread; small "
     "maps; groups 1",
     ConvPass::kBackwardData, conv_gemm_live_taps_why_not, conv_gemm_live_taps_data_workspace_bytes,
     conv_gemm_live_taps_data_run, 1.0, conv_gemm_live_taps_data_cost},
};
const ConvBackwardAlgorithm kWeights[] = {
    {"gemm",
     "per image and group: dW += dY . col^T (OpenBLAS) after im2col; dW^T += col . dY^T for "
     "groups of at most 64 output channels",
     ConvPass::kBackwardWeights, conv_serves_any, gemm_weights_ws, gemm_weights_run, 1.0,
     gemm_weights_cost},
    {"gemm_batched",
     "as gemm over chunks of images side by side: the reduction runs over images x positions in "
     "one GEMM",
     ConvPass::kBackwardWeights, conv_serves_any, batched_weights_ws, batched_weights_run, 1.0,
     batched_weights_cost},
    {"winograd_nonfused",
     "Winograd F(3x3, 2x2): per 2x2 output tile U = A dY A^T and V = B^T X B, 16 GEMMs M += U . "
     "V^T "
     "over chunks of tiles (OpenBLAS), dW = G^T M G; 3x3, stride 1, no dilation",
     ConvPass::kBackwardWeights, conv_winograd_bw_why_not, conv_winograd_bw_workspace_bytes,
     conv_winograd_bw_run, kConvWinogradBwTolerance, conv_winograd_bw_cost},
    {"gemm_tiled",
     "im2col one L2-sized band of output rows at a time, dW^T += col_band . dY_band^T (OpenBLAS, "
     "one thread per band); the threads' partial dW^T transposed and summed at the end",
     ConvPass::kBackwardWeights, conv_serves_any, conv_tiled_weights_workspace_bytes,
     conv_tiled_weights_run, 1.0, conv_tiled_weights_cost},
    {"gemm_live_taps",
     "per output position and kernel row, dW'_taps += dYt^T . Xt[images, live taps' pixels] "
     "(OpenBLAS) over only the taps inside the image, channels-last; the threads take blocks "
     "of output channels; small maps; groups 1",
     ConvPass::kBackwardWeights, conv_gemm_live_taps_why_not,
     conv_gemm_live_taps_weights_workspace_bytes, conv_gemm_live_taps_weights_run, 1.0,
     conv_gemm_live_taps_weights_cost},
};

}  // namespace

// db[o] = sum over images and positions of dY, in float64. Eight independent partial sums per
// plane: one running sum is a chain of dependent adds (4 cycles each), which made this sum a
// fifth of ResNet-50's stem backward-weights pass (6.4M terms at batch 8).
void conv_bias_grad(const ConvProblem& p, const float* dy, float* db, int threads) {
  const int64_t n = p.oh() * p.ow();
  const int t = conv_useful_copy_threads(threads, p.dst_numel(), p.oc);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t o = 0; o < p.oc; ++o) {
    double s[8] = {};
    for (int64_t img = 0; img < p.mb; ++img) {
      const float* d = dy + (img * p.oc + o) * n;
      int64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        for (int u = 0; u < 8; ++u) s[u] += d[i + u];
      }
      for (; i < n; ++i) s[i % 8] += d[i];
    }
    db[o] = static_cast<float>(((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
  }
}

const char* to_string(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return "forward";
    case ConvPass::kBackwardData:
      return "backward-data";
    case ConvPass::kBackwardWeights:
      return "backward-weights";
  }
  return "?";
}

std::span<const ConvBackwardAlgorithm> conv_backward_algorithms(ConvPass pass) {
  NNPERF_CHECK(pass != ConvPass::kForward, "the forward pass has its own registry (conv.h)");
  if (pass == ConvPass::kBackwardData) return kData;
  return kWeights;
}

const ConvBackwardAlgorithm& find_conv_backward(ConvPass pass, std::string_view name) {
  if (const ConvBackwardAlgorithm* a =
          Registry<ConvBackwardAlgorithm>(conv_backward_algorithms(pass)).find(name)) {
    return *a;
  }
  throw UsageError(fmt::format("unknown {} convolution algorithm '{}': expected one of {}",
                               to_string(pass), name, conv_backward_algorithm_names(pass)));
}

std::string conv_backward_algorithm_names(ConvPass pass) {
  return Registry<ConvBackwardAlgorithm>(conv_backward_algorithms(pass)).names();
}

void conv2d_backward_reference(const ConvProblem& p, const float* x, const float* w,
                               const float* dy, double* dx, double* dw, double* db, double* abs_dx,
                               double* abs_dw) {
  const int64_t oh = p.oh(), ow = p.ow(), icg = p.icg(), ocg = p.ocg();
  if (dx != nullptr) std::fill(dx, dx + p.src_numel(), 0.0);
  if (abs_dx != nullptr) std::fill(abs_dx, abs_dx + p.src_numel(), 0.0);
  if (dw != nullptr) std::fill(dw, dw + p.wei_numel(), 0.0);
  if (abs_dw != nullptr) std::fill(abs_dw, abs_dw + p.wei_numel(), 0.0);
  if (db != nullptr) std::fill(db, db + p.oc, 0.0);
  for (int64_t n = 0; n < p.mb; ++n)
    for (int64_t o = 0; o < p.oc; ++o) {
      check_interrupt();  // a large problem's reference runs for minutes: Ctrl-C between planes
      const int64_t g = o / ocg;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xo = 0; xo < ow; ++xo) {
          const double d = dy[((n * p.oc + o) * oh + y) * ow + xo];
          if (db != nullptr) db[o] += d;
          for (int64_t c = 0; c < icg; ++c)
            for (int64_t i = 0; i < p.kh; ++i)
              for (int64_t j = 0; j < p.kw; ++j) {
                const int64_t iy = y * p.sh - p.ph + i * p.dh, ix = xo * p.sw - p.pw + j * p.dw;
                if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
                const int64_t xi = ((n * p.ic + g * icg + c) * p.ih + iy) * p.iw + ix;
                const int64_t wi = ((o * icg + c) * p.kh + i) * p.kw + j;
                if (dx != nullptr) dx[xi] += d * w[wi];
                if (abs_dx != nullptr) abs_dx[xi] += std::abs(d * w[wi]);
                if (dw != nullptr) dw[wi] += d * x[xi];
                if (abs_dw != nullptr) abs_dw[wi] += std::abs(d * x[xi]);
              }
        }
    }
}

}  // namespace nnperf
