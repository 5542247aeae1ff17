// Internals of the Winograd F(4x4, 3x3) convolutions shared by winograd.cc (fused driver, weight
// transform), winograd_portable.cc and winograd_avx2.cc (the stage kernels per SIMD level),
// winograd_nonfused.cc and the tests. The three stages are plain functions on raw buffers, so the
// fused algorithm runs them on one cache-sized block of tiles at a time and the non-fused one on
// the whole tensor. Only plain structs and declarations here: no inline code is compiled both with
// and without -mavx2.
//
// Layouts (xi = 6*xi_y + xi_x is the position in the 6x6 Winograd domain, t a tile):
//   U  fused:      [36][ocp/16][icp][16]  (a 16-wide output-channel panel per GEMM micro-kernel)
//   U  non-fused:  [36][ic][ocp]          (plain k x n matrices for the GEMM registry)
//   V  input tiles (B^T d B), M products (U V): [36] x tiles x channels as a TileLayout below;
//      channel-blocked in the fused algorithm, plain matrices in the non-fused one.
// Tiles are numbered image by image, row-major: t = (n * tiles_h + ty) * tiles_w + tx; tile
// (ty, tx) covers output rows 4ty..4ty+3 and columns 4tx..4tx+3 (clipped at oh / ow).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {
struct ConvMachine;  // conv_internal.h
}  // namespace nnperf

namespace nnperf::winograd {

inline constexpr int64_t kTile = 4;      // outputs per tile side, m in F(m x m, 3 x 3)
inline constexpr int64_t kAlpha = 6;     // input tile side, m + r - 1
inline constexpr int64_t kXi = 36;       // kAlpha^2 independent GEMMs
inline constexpr int64_t kIcBlock = 8;   // input channels per vector in the input transform
inline constexpr int64_t kOcBlock = 16;  // output channels per GEMM micro-kernel panel
inline constexpr int64_t kNr = 6;        // tiles per GEMM micro-kernel (12 ymm accumulators)

// Everything the kernels need about one problem, computed once.
struct Geometry {
  int64_t mb, ic, ih, iw, oc, oh, ow, ph, pw;
  int64_t tiles_h, tiles_w, tiles;  // tiles = mb * tiles_h * tiles_w
  int64_t icp, ocp;                 // ic rounded up to kIcBlock, oc rounded up to kOcBlock
};
Geometry make_geometry(const ConvProblem& p);

// Where element (xi, t, c) of a V or M tensor lives: base[xi * xi_stride + t * t_stride +
// (c / 8) * group_stride + c % 8]. Plain (channels contiguous, a matrix per xi): t_stride = row
// length, group_stride = 8. Channel-blocked (the fused GEMM's layout): t_stride = 8 and
// group_stride = 8 * tiles, so the tiles of one 8-channel group are adjacent: the transforms
// write and read it in sequential streams, and the micro-kernel's 6 tiles share cache lines.
struct TileLayout {
  int64_t xi_stride, t_stride, group_stride;
};
// The distance between the 36 xi planes holding `floats` each: rounded up to a cache line, plus
// one line. Without the extra line, planes 6 KB apart (24 tiles x 64 channels) put all 36
// streams of a transform into 2 of L1's 64 sets, and the transforms ran 2x slower.
int64_t xi_stride_for(int64_t floats);

// u = G g G^T of kFilterLanes 3x3 filters at once, computed in double lane by lane (the compiler
// vectorises across filters) and rounded to float: g[tap][lane] (tap = 3 * row + column) ->
// u[xi][lane] (xi = 6 * row + column), a panel row of the packed layouts. Training transforms
// every layer's weights every step. The portable copy; Kernels::transform_filters is the SIMD
// path's (winograd_filter_impl.h: the same operations, contraction off, so the same bits).
inline constexpr int64_t kFilterLanes = 16;
void transform_filters(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]);
void transform_filters_avx2(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]);
// The input of transform_filters for both packs: g[tap][l] = tap `tap` of filter (o0 + l, c) of
// p's OIHW weights, 0 where o0 + l >= oc or c >= ic (the padded panels).
void gather_filters(const ConvProblem& p, const float* wei, int64_t o0, int64_t c,
                    double (*g)[kFilterLanes]);

// One SIMD level's stage kernels. v and m point at the element (xi 0, first tile, channel 0 or
// o0) of the range they are given.
struct Kernels {
  // V(xi, t - t0, c) = (B^T d B)[xi] of tile t and input channel c, for t in [t0, t0 + count)
  // and c < icp (zero for c >= ic). Padding and clipped tiles read zeros.
  void (*input_transform)(const Geometry& g, const float* src, int64_t t0, int64_t count, float* v,
                          const TileLayout& lv);
  // For every xi: M(xi, t, o - o0) = sum_c V(xi, t, c) * U[xi][o][c], for t < count and o in
  // [o0, o1) (multiples of kOcBlock). U is the fused layout; V and M must be channel-blocked.
  void (*batched_gemm)(const Geometry& g, const float* u, const float* v, const TileLayout& lv,
                       int64_t count, int64_t o0, int64_t o1, float* m, const TileLayout& lm);
  // dst = (A^T M A) (+ bias) for tiles [t0, t0 + count) and output channels [o0, o1) (o0 a
  // multiple of 8, o1 <= oc), from M(xi, t - t0, o - o0).
  void (*output_transform)(const Geometry& g, const float* m, const TileLayout& lm, int64_t t0,
                           int64_t count, int64_t o0, int64_t o1, const float* bias, float* dst);
  // The weight transform (transform_filters) compiled for this path.
  void (*transform_filters)(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]);
};
extern const Kernels kKernelsPortable;
extern const Kernels kKernelsAvx2;  // call only when the CPU has AVX2 + FMA
// The kernels for `level`, capped at what this CPU supports.
const Kernels& kernels_for(SimdLevel level);

// How the fused algorithm walks the problem: blocks of `block_tiles` tiles (a multiple of kNr),
// and within a block, output channels in chunks of `oc_chunk` (a multiple of kOcBlock). With
// several threads, either each thread takes whole blocks (many blocks), or all threads share
// each block (split_oc): they transform its input together, then take its output-channel
// chunks, so U (the transformed weights) is streamed once per block in total.
struct Blocking {
  int64_t block_tiles;
  int64_t oc_chunk;
  int threads;
  bool split_oc;
};
Blocking plan_fused(const ConvProblem& p, int threads);
// The fused algorithm's channel-blocked V (one block, all icp channels) and M (one block, one
// output-channel chunk).
TileLayout fused_v_layout(const Geometry& g, const Blocking& b);
TileLayout fused_m_layout(const Geometry& g, const Blocking& b);
std::size_t fused_workspace_bytes(const Geometry& g, const Blocking& b);
// The fused algorithm with explicit kernels and blocking (tests and the benchmark's sweeps);
// workspace holds fused_workspace_bytes(geometry, blocking).
void run_fused(const Kernels& k, const Blocking& b, const ConvArgs& args);

// Cost-model terms for `guess`: seconds on one core of the machine model (see winograd.cc).
double gemm_seconds(const Geometry& g, const ConvMachine& m);
double transform_seconds(const Geometry& g, const ConvMachine& m);

}  // namespace nnperf::winograd

namespace nnperf {

// "" when `name` (winograd or winograd_nonfused) can serve p, else the first unsupported
// property: "winograd: stride 2 not supported (stride 1 only)".
std::string winograd_why_not(const char* name, const ConvProblem& p);

// (The registry entry points are declared in conv_internal.h.)
// The non-fused algorithm with explicit stage kernels (tests run every SIMD path).
void conv_winograd_nonfused_run_with(const winograd::Kernels& k, const ConvArgs& args);

}  // namespace nnperf
