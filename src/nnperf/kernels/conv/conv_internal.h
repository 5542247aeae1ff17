// Entry points of the convolution algorithms, named once here for the registry table in
// conv_registry.cc, plus small helpers the algorithm files share. Not part of the public
// interface: layers go through conv_algorithms() / find_conv(). One block per algorithm file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/kernels/conv/conv.h"

namespace nnperf {

struct GemmAlgorithm;  // kernels/gemm/gemm.h

// ---- shared helpers (conv_registry.cc) ----
// The GEMM registry's `blas` row (OpenBLAS SGEMM), which the GEMM-based rows call.
const GemmAlgorithm& conv_blas();
// "" for any well-formed problem, else its invalid_reason() (algorithms that serve everything).
std::string conv_serves_any(const ConvProblem& p);
std::size_t conv_no_workspace(const ConvProblem& p, int threads);
// Threads worth using for `flops` of work split into `jobs` independent pieces (never more than
// asked): a second thread costs an OpenMP fork/join, a few microseconds.
int conv_useful_threads(int threads, double flops, int64_t jobs);
// The same for copies and gathers of `elements` floats (patch matrices, weight crops): below
// 32768 elements per thread (~20 us of one core) a second thread costs more than it saves.
int conv_useful_copy_threads(int threads, int64_t elements, int64_t jobs);
// dst[n][o][:] += bias[o] for every image and output channel (no-op when bias is null).
void conv_add_bias(const ConvProblem& p, const float* bias, float* dst, int threads);
inline int64_t conv_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Bytes rounded up to whole 64-byte lines, so that the pieces a workspace is carved into stay
// aligned.
inline std::size_t conv_aligned_bytes(std::size_t bytes) { return (bytes + 63) / 64 * 64; }
// A 1x1 stride-1 unpadded problem: its patch matrix is its input (rows = channel planes), so the
// GEMM algorithms read the input instead of building one.
inline bool conv_patches_are_input(const ConvProblem& p) {
  return p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0;
}
// Fraction of its large-shape rate a GEMM keeps at m x n x k (for the cost models): short
// reductions and narrow panels leave the micro-kernel in its prologue/epilogue and edge tiles.
// Fitted on the VGG16/ResNet-50 layers (bench/conv_bench.cc): OpenBLAS needs k >= ~128 for its
// full rate (k = 64: ~0.75), our implicit GEMMs k >= ~64; k = 27 (3-channel stems) ~0.5 for
// both, and n = 49 (7x7 maps) ~0.75 for OpenBLAS. Our implicit GEMMs keep ~0.85 there since their
// last panel of 1-3 pixels is vectorised over channels (implicit_gemm_impl.h; measured
// 2026-11-28: mb1ic2048ih7oc512kh1 and mb1ic512ih7oc2048kh1 at 66-76 of the large shapes' 86
// GFLOP/s on a Zen 3 core), so they reach full rate from 64 columns.
// The widths from which the model counts a GEMM at its full rate.
inline constexpr int64_t kConvGemmFullColumns = 96;
inline constexpr int64_t kConvIgemmFullColumns = 64;
inline double conv_gemm_shape_efficiency(int64_t m, int64_t n, int64_t k, double k_full = 128.0,
                                         int64_t n_full = kConvGemmFullColumns) {
  auto clamp01 = [](double x) { return x < 1.0 ? x : 1.0; };
  return clamp01(static_cast<double>(m) / 48.0) *
         __builtin_sqrt(clamp01(static_cast<double>(k) / k_full)) *
         __builtin_sqrt(clamp01(static_cast<double>(n) / static_cast<double>(n_full)));
}
// Row k = (c, r, s) of the K x N patch matrix of one image and group (src points at its first
// channel): row[oy*ow + ox] = src[c][oy*sh - ph + r*dh][ox*sw - pw + s*dw], zero in the padding.
// im2col_gemm.cc.
void conv_im2col_row(const ConvProblem& p, const float* src, int64_t k, float* row);
// Output rows [oy0, oy1) of that row: row[(oy - oy0)*ow + ox] (gemm_tiled's bands).
void conv_im2col_row_band(const ConvProblem& p, const float* src, int64_t k, int64_t oy0,
                          int64_t oy1, float* row);
// The same rows for small maps from a tap table: for every tap (r, s) and output position, the
// input offset it reads within one channel plane, -1 in the padding. Built once per call, it
// turns a row into one branch-free gather; conv_im2col_row's divisions and per-output-row
// memcpy/memset cost more than the copy itself when output rows are a few floats (ResNet-18's
// 4x4 and 2x2 maps at 32x32 input: 1.6 of the 3.7 ms of a layer3 backward-weights pass).
// Used when ow <= 16 (ow <= 8 at stride 2) and the table holds at most 16384 entries; 0 bytes
// otherwise. At stride 2 the band functions move 4 columns per step (shuffles of two loads, or
// of one load into two), and from 12 outputs a row they beat the table's one-by-one gather:
// im2col 0.39-0.55 against 0.56-0.65 ns per float, col2im 0.39-0.69 against 0.50-0.81 (3x3 and
// 7x7 kernels, ow 12-16; one Zen 4 core); at ow 4-8 the table wins (1.3 against 2.5, 0.8 against
// 1.2).
std::size_t conv_tap_table_bytes(const ConvProblem& p);
void conv_fill_tap_table(const ConvProblem& p, int32_t* table);
// Columns [j0, j1) of that row (row[j - j0]); the whole row is [0, oh*ow).
inline void conv_im2col_row_table(const ConvProblem& p, const int32_t* table, const float* src,
                                  int64_t k, int64_t j0, int64_t j1, float* row) {
  const int64_t taps = p.kh * p.kw, n = p.oh() * p.ow();
  const float* plane = src + (k / taps) * p.ih * p.iw;
  const int32_t* t = table + (k % taps) * n;
  for (int64_t j = j0; j < j1; ++j) row[j - j0] = t[j] >= 0 ? plane[t[j]] : 0.0f;
}
inline void conv_im2col_row_table(const ConvProblem& p, const int32_t* table, const float* src,
                                  int64_t k, float* row) {
  conv_im2col_row_table(p, table, src, k, 0, p.oh() * p.ow(), row);
}
// dx plane of one channel += every dcol row of that channel at the pixel its entries were read
// from (the adjoint of the rows above; `rows` points at row (c, 0, 0), row stride ld), for
// columns [j0, j1) of those rows (rows[j - j0]); the whole rows are [0, oh*ow).
inline void conv_col2im_plane_table(const ConvProblem& p, const int32_t* table, const float* rows,
                                    int64_t ld, int64_t j0, int64_t j1, float* plane) {
  const int64_t taps = p.kh * p.kw, n = p.oh() * p.ow();
  for (int64_t tap = 0; tap < taps; ++tap) {
    const int32_t* t = table + tap * n;
    const float* in = rows + tap * ld - j0;
    for (int64_t j = j0; j < j1; ++j) {
      if (t[j] >= 0) plane[t[j]] += in[j];
    }
  }
}
// The same without a table, for output rows [oy0, oy1) (rows[(oy - oy0)*ow + ox]): the adjoint
// of conv_im2col_row_band over the kh*kw rows of one channel. im2col_gemm.cc.
void conv_col2im_band(const ConvProblem& p, const float* rows, int64_t ld, int64_t oy0, int64_t oy1,
                      float* plane);
// The patch matrices of images [0, c) side by side (gemm and gemm_batched): col[k][i*N + j], row
// stride ld, from src (image 0's first channel of the group; images p.ic planes apart); from the
// tap table where there is one (table != nullptr). Maps of fewer than kRowsAlone positions take
// one image and input channel (its kh*kw rows) per step: there a row is a few floats (4 at 2x2,
// 1 at 1x1), and a step per row spent more on the step than on the row (26% of a 2x2 layer's
// forward time, 2.4 ns per float). Larger maps take a row per step, the finer split between
// threads (a 3-channel stem has 3 channels but 147 rows). im2col_gemm.cc.
inline constexpr int64_t kRowsAlone = 64;
void conv_im2col_images(const ConvProblem& p, const float* src, int64_t c, int64_t ld,
                        const int32_t* table, float* col, int threads);
// Images whose patch matrices go side by side into one GEMM (gemm, gemm_batched): enough for
// ~256 columns, at most the batch, the chunk's K x (c*N) floats within 64 MiB unless one image
// alone needs more; 1 for maps of 256+ positions. A 1x1 stride-1 unpadded layer, whose input
// planes are already its GEMM operand one image at a time, chunks only below
// kConvGemmFullColumns positions and only up to that width: there a chunk costs a copy of the
// input (and of the output) that one image does not, for no gain the model counts (measured
// with OpenBLAS, one thread: ResNet-50's 14x14 1x1 layers at batch 8 ran 8.8 ms as eight
// 196-column GEMMs against 10.9 ms in chunks of two images).
int64_t conv_chunk_images(const ConvProblem& p);
inline int64_t conv_round_up(int64_t a, int64_t b) { return conv_ceil_div(a, b) * b; }

// ---- backward rows and helpers outside conv_backward.cc ----
struct ConvBackwardArgs;
// db[o] = sum over images and positions of dY, in float64 (conv_backward.cc).
void conv_bias_grad(const ConvProblem& p, const float* dy, float* db, int threads);
// gemm_tiled, both passes (conv_backward_tiled.cc).
std::size_t conv_tiled_data_workspace_bytes(const ConvProblem& p, int threads);
void conv_tiled_data_run(const ConvBackwardArgs& a);
double conv_tiled_data_cost(const ConvProblem& p, int threads);
std::size_t conv_tiled_weights_workspace_bytes(const ConvProblem& p, int threads);
void conv_tiled_weights_run(const ConvBackwardArgs& a);
double conv_tiled_weights_cost(const ConvProblem& p, int threads);
// winograd_nonfused: F(3x3, 2x2) for 3x3 stride-1 undilated kernels (winograd_backward_weights.cc).
// Worst measured |dW - ref| / (K*eps*sum|x*dy| + eps*|ref|) over
// tests/kernels/conv_backward_test.cc and ResNet/VGG-like shapes up to mb8ic64ih56: 0.17 (gemm's
// 0.17), at K = 4 (1x1 output maps).
inline constexpr double kConvWinogradBwTolerance = 1.0;
std::string conv_winograd_bw_why_not(const ConvProblem& p);
std::size_t conv_winograd_bw_workspace_bytes(const ConvProblem& p, int threads);
void conv_winograd_bw_run(const ConvBackwardArgs& a);
double conv_winograd_bw_cost(const ConvProblem& p, int threads);

// ---- the cost models' machine (docs/machine-model.md) ----
// Every rate in the cost functions was measured with bench/conv_bench.cc on one machine, the
// "fitted" one: one Zen 3 core of an AMD EPYC VM (2.45 GHz nominal, ~3.2 GHz sustained), whose
// `nnperf peaks` figures are below (tests/data/bench_conv/peaks.json). A cost function states a
// rate as measured there over the fitted figure, a ratio, and multiplies it by the model's term:
// e.g. implicit_gemm's 84 GFLOP/s becomes (84 / kFmaGflops) * m.fma_flops_per_s.
namespace conv_fit {
inline constexpr double kFmaGflops = 102.0;  // fp32 FMA, AVX2, 1 thread (peaks: 101.9-102.5)
inline constexpr double kDramGbps = 21.0;    // STREAM triad, 1 thread (peaks: 21.0)
inline constexpr double kL3Bytes = 32.0 * 1024 * 1024;  // cpu0's L3 in sysfs
}  // namespace conv_fit
// machine_model() in the units the cost functions use.
struct ConvMachine {
  bool avx2 = true;             // our AVX2 kernels run (else the portable ones)
  double fma_flops_per_s = 0;   // one core's FMA peak at AVX2 width (the model's, lane-scaled)
  double blas_flops_per_s = 0;  // one core's FMA peak at the width OpenBLAS uses
  double dram_bytes_per_s = 0;  // one core
  double dram_total_bytes_per_s = 0;
  double l2_bytes = 0;  // one core's
  double l3_bytes = 0;
  // Seconds of a per-element overhead measured on the fitted core, on this one: they scale with
  // the clock, i.e. with the FMA peak at a fixed width (32 FLOPs per cycle at AVX2 width).
  double seconds(double fitted_seconds) const {
    return fitted_seconds * conv_fit::kFmaGflops * 1e9 / fma_flops_per_s;
  }
  // DRAM bytes/s of `threads` threads copying in parallel.
  double dram_at(int threads) const {
    const double t = threads > 1 ? threads : 1;
    return t * dram_bytes_per_s < dram_total_bytes_per_s ? t * dram_bytes_per_s
                                                         : dram_total_bytes_per_s;
  }
};
ConvMachine conv_machine();  // reads machine_model() on every call (tests may replace it)
// p's dimensions into the plain int64 fields a kernel's Plan starts with (mb, g, ic, icg, oc, ocg,
// ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw: direct_impl.h, implicit_gemm_impl.h), which the
// ISA files read without instantiating ConvProblem's inline code.
template <class Plan>
void conv_copy_dims(const ConvProblem& p, Plan& pl) {
  pl.mb = p.mb;
  pl.g = p.g;
  pl.ic = p.ic;
  pl.icg = p.icg();
  pl.oc = p.oc;
  pl.ocg = p.ocg();
  pl.ih = p.ih;
  pl.iw = p.iw;
  pl.oh = p.oh();
  pl.ow = p.ow();
  pl.kh = p.kh;
  pl.kw = p.kw;
  pl.sh = p.sh;
  pl.sw = p.sw;
  pl.ph = p.ph;
  pl.pw = p.pw;
  pl.dh = p.dh;
  pl.dw = p.dw;
}

// ---- direct.cc ----
std::string conv_direct_why_not(const ConvProblem& p);
std::size_t conv_direct_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_direct_packed_floats(const ConvProblem& p);
void conv_direct_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_direct_run(const ConvArgs& args);
double conv_direct_cost(const ConvProblem& p, int threads);

// ---- im2col_gemm.cc ----
std::string conv_gemm_why_not(const ConvProblem& p);
std::size_t conv_gemm_workspace_bytes(const ConvProblem& p, int threads);
void conv_gemm_run(const ConvArgs& args);
double conv_gemm_cost(const ConvProblem& p, int threads);

// ---- implicit_gemm.cc ----
std::string conv_implicit_gemm_why_not(const ConvProblem& p);
std::size_t conv_implicit_gemm_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_implicit_gemm_packed_floats(const ConvProblem& p);
void conv_implicit_gemm_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_implicit_gemm_run(const ConvArgs& args);
double conv_implicit_gemm_cost(const ConvProblem& p, int threads);

// Shared by implicit_gemm.cc and implicit_precomp_gemm.cc (one loop nest, implicit_gemm_impl.h).
namespace conv_igemm {
struct Plan;
struct Geometry {
  int64_t kc, kblocks, m_panels, mc_panels, nc_panels;
  int64_t hp, wph, rs;       // padded phase-split plane (precomp only)
  std::size_t bpack_floats;  // per thread
  std::size_t bpack_bytes, xpad_bytes;
  std::size_t a_floats, table_floats;  // packed weights; int32 offset tables (precomp only)
};
Geometry geometry(const ConvProblem& p, int threads, bool precomp);
// Weights -> [g][k block][6-row panel][kc][6] (rows past ocg zero).
void pack_weight_panels(const ConvProblem& p, const float* wei, float* packed);
// Fills a Plan for args (tables: precomp offsets or null) and runs it on the active SIMD level.
void run(const ConvArgs& args, bool precomp, const int32_t* koff, const int32_t* noff);
// Modelled seconds of the loop nest: the micro-kernel at flops_per_s on large shapes, scaled by
// the shape efficiency and the fill of its 6-row panels, plus the packing of every patch element.
double cost_seconds(const ConvProblem& p, int threads, double flops_per_s,
                    double pack_s_per_element);
}  // namespace conv_igemm

// ---- implicit_precomp_gemm.cc ----
std::string conv_implicit_precomp_gemm_why_not(const ConvProblem& p);
std::size_t conv_implicit_precomp_gemm_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_implicit_precomp_gemm_packed_floats(const ConvProblem& p);
void conv_implicit_precomp_gemm_pack(const ConvProblem& p, const float* wei, float* packed,
                                     int threads);
void conv_implicit_precomp_gemm_run(const ConvArgs& args);
double conv_implicit_precomp_gemm_cost(const ConvProblem& p, int threads);

// ---- other algorithm files: add one block each below ----

// ---- gemm_live_taps.cc: forward, backward-data and backward-weights ----
std::string conv_gemm_live_taps_why_not(const ConvProblem& p);
std::size_t conv_gemm_live_taps_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_gemm_live_taps_packed_floats(const ConvProblem& p);
void conv_gemm_live_taps_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_gemm_live_taps_run(const ConvArgs& args);
double conv_gemm_live_taps_cost(const ConvProblem& p, int threads);
std::size_t conv_gemm_live_taps_data_workspace_bytes(const ConvProblem& p, int threads);
void conv_gemm_live_taps_data_run(const ConvBackwardArgs& a);
double conv_gemm_live_taps_data_cost(const ConvProblem& p, int threads);
std::size_t conv_gemm_live_taps_weights_workspace_bytes(const ConvProblem& p, int threads);
void conv_gemm_live_taps_weights_run(const ConvBackwardArgs& a);
double conv_gemm_live_taps_weights_cost(const ConvProblem& p, int threads);

// ---- fft.cc, fft_tiling.cc (shared pipeline in fft_engine.cc, internals in fft_internal.h) ----
// tolerance_factor of both rows. An FFT's rounding error is normwise (~eps log2(th*tw) times the
// tile's magnitudes), not tied to each output's products: tests/kernels/conv_fft_test.cc measured
// a worst |y - ref| / (K eps sum|a*b| + eps |ref|) of 5.7 (fft) and 4.3 (fft_tiling) over its
// outputs that sum >= 4 products, 7.8 on 75k outputs of exactly 4 (1x1, 4 channels, 3 seeds) and
// 0.81 over conv_test.cc's shapes; real layers sum >= 27 (3x3 depthwise corners: 4, ratio <= 1.9).
// Outputs of 1-3 products have no finite factor (the test checks them normwise instead).
inline constexpr double kConvFftTolerance = 16.0;
std::string conv_fft_why_not(const ConvProblem& p);
std::size_t conv_fft_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_fft_packed_floats(const ConvProblem& p);
void conv_fft_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_fft_run(const ConvArgs& args);
double conv_fft_cost(const ConvProblem& p, int threads);
std::string conv_fft_tiling_why_not(const ConvProblem& p);
std::size_t conv_fft_tiling_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_fft_tiling_packed_floats(const ConvProblem& p);
void conv_fft_tiling_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_fft_tiling_run(const ConvArgs& args);
double conv_fft_tiling_cost(const ConvProblem& p, int threads);

// ---- winograd.cc, winograd_nonfused.cc (stage kernels and internals in winograd_internal.h) --
// tolerance_factor of both rows. Winograd's rounding error scales with the whole 6x6 input tile
// while the bound's sum|a*b| covers an output's own 3x3 window, so the worst ratio
// |y - ref| / (K eps sum|a*b| + eps |ref|) sits in a thin tail at few input channels: measured
// 44.1 at ic=1 over 67M outputs (16 seeds of mb8ic1ih64oc128, F(4x4,3x3), AVX2 and portable),
// 6.3 at ic=2, 3.1 at ic=3, 0.57 at ic=8 (tests/kernels/conv_winograd_test.cc reaches 21).
inline constexpr double kConvWinogradTolerance = 50.0;
std::string conv_winograd_why_not(const ConvProblem& p);
std::size_t conv_winograd_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_winograd_packed_floats(const ConvProblem& p);
void conv_winograd_pack(const ConvProblem& p, const float* wei, float* packed, int threads);
void conv_winograd_run(const ConvArgs& args);
double conv_winograd_cost(const ConvProblem& p, int threads);
std::string conv_winograd_nonfused_why_not(const ConvProblem& p);
std::size_t conv_winograd_nonfused_workspace_bytes(const ConvProblem& p, int threads);
std::size_t conv_winograd_nonfused_packed_floats(const ConvProblem& p);
void conv_winograd_nonfused_pack(const ConvProblem& p, const float* wei, float* packed,
                                 int threads);
void conv_winograd_nonfused_run(const ConvArgs& args);
double conv_winograd_nonfused_cost(const ConvProblem& p, int threads);

}  // namespace nnperf
