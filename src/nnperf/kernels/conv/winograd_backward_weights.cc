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
// nothing.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

namespace {

constexpr int64_t kXi = 16;                   // transform positions (4x4)
constexpr int64_t kChunkBytes = 1024 * 1024;  // U and V of one chunk
constexpr int64_t kMinChunkTiles = 128;       // the GEMMs' reduction: OpenBLAS full rate

const GemmAlgorithm& blas() {
  static const GemmAlgorithm& g = find_gemm("blas");
  return g;
}

// Floats from one transform position's U (or V, or M) to the next: channels x tiles (or
// channels), plus a cache line, so that the 16 streams the transforms write (or the inverse
// transform reads) are never a multiple of 4 KiB apart. They were, at 64 channels x 128 tiles,
// and shared one L1 set: 30 of a layer's 41 ms went to the transforms.
int64_t xi_stride(int64_t channels, int64_t n) { return conv_round_up(channels * n, 16) + 16; }

// Where tile t0 + j of a chunk reads: its image's first channel of the group in X and dY, the
// first input row and column of its 4x4 patch, and whether the patch lies inside the image.
struct Tile {
  const float* x;
  const float* dy;
  int64_t y0, x0;
  bool inside, row2, col2;  // inside: no padding read; row2/col2: the tile's second dY row/column
};

struct Layout {
  int64_t th, tw, tiles, chunk, chunks;  // tiles over the batch; chunk: tiles per chunk
  int threads;                           // the team: at most one per GEMM of a chunk
  std::size_t uv_bytes, m_bytes, tile_bytes, blas_bytes;  // blas_bytes: per thread
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
    uv_bytes = conv_aligned_bytes(
        static_cast<std::size_t>(kXi * (xi_stride(p.ocg(), chunk) + xi_stride(p.icg(), chunk))) *
        4);
    tile_bytes = conv_aligned_bytes(static_cast<std::size_t>(chunk) * sizeof(Tile));
    blas_bytes = conv_aligned_bytes(
        blas().workspace_bytes(GemmShape{false, true, p.ocg(), p.icg(), chunk}, 1));
  }
  std::size_t total() const {
    return uv_bytes + m_bytes + tile_bytes + static_cast<std::size_t>(threads) * blas_bytes;
  }
};

// V[xi][c][j] = (B^T X B)[xi] of tile j for input channel c, j over the chunk's n tiles, so that
// each of the 16 outputs is written as one stream.
void transform_x(const ConvProblem& p, const Tile* tiles, int64_t n, int64_t c, float* v) {
  const int64_t stride = xi_stride(p.icg(), n), plane = p.ih * p.iw;
  float* out = v + c * n;
  for (int64_t j = 0; j < n; ++j) {
    const Tile& t = tiles[j];
    const float* xp = t.x + c * plane;
    float d[4][4];
    if (t.inside) {
      const float* q = xp + t.y0 * p.iw + t.x0;
      for (int r = 0; r < 4; ++r) {
        for (int s = 0; s < 4; ++s) d[r][s] = q[r * p.iw + s];
      }
    } else {
      for (int r = 0; r < 4; ++r) {
        const int64_t y = t.y0 + r;
        for (int s = 0; s < 4; ++s) {
          const int64_t x = t.x0 + s;
          d[r][s] = y >= 0 && y < p.ih && x >= 0 && x < p.iw ? xp[y * p.iw + x] : 0.0f;
        }
      }
    }
    float e[4][4];  // B^T d
    for (int s = 0; s < 4; ++s) {
      e[0][s] = d[0][s] - d[2][s];
      e[1][s] = d[1][s] + d[2][s];
      e[2][s] = d[2][s] - d[1][s];
      e[3][s] = d[1][s] - d[3][s];
    }
    for (int r = 0; r < 4; ++r) {  // (B^T d) B
      out[(r * 4 + 0) * stride + j] = e[r][0] - e[r][2];
      out[(r * 4 + 1) * stride + j] = e[r][1] + e[r][2];
      out[(r * 4 + 2) * stride + j] = e[r][2] - e[r][1];
      out[(r * 4 + 3) * stride + j] = e[r][1] - e[r][3];
    }
  }
}

// U[xi][o][j] = (A dY A^T)[xi] of tile j for output channel o.
void transform_dy(const ConvProblem& p, const Tile* tiles, int64_t n, int64_t o, float* u) {
  const int64_t stride = xi_stride(p.ocg(), n), ow = p.ow(), oplane = p.oh() * ow;
  float* out = u + o * n;
  for (int64_t j = 0; j < n; ++j) {
    const Tile& t = tiles[j];
    const float* g = t.dy + o * oplane;
    const float g00 = g[0], g01 = t.col2 ? g[1] : 0.0f;
    const float g10 = t.row2 ? g[ow] : 0.0f, g11 = t.row2 && t.col2 ? g[ow + 1] : 0.0f;
    // A g: rows g0, g0 + g1, g0 - g1, -g1 of each column, then the same along the rows.
    const float c0[4] = {g00, g00 + g10, g00 - g10, -g10};
    const float c1[4] = {g01, g01 + g11, g01 - g11, -g11};
    for (int r = 0; r < 4; ++r) {
      out[(r * 4 + 0) * stride + j] = c0[r];
      out[(r * 4 + 1) * stride + j] = c0[r] + c1[r];
      out[(r * 4 + 2) * stride + j] = c0[r] - c1[r];
      out[(r * 4 + 3) * stride + j] = -c1[r];
    }
  }
}

// Tile t (numbered over the batch) of group grp.
Tile locate_tile(const ConvProblem& p, const ConvBackwardArgs& a, const Layout& l, int64_t grp,
                 int64_t t) {
  const int64_t plane = p.ih * p.iw, oplane = p.oh() * p.ow();
  const int64_t img = t / (l.th * l.tw), ty = t / l.tw % l.th, tx = t % l.tw;
  Tile tile;
  tile.x = a.src + (img * p.ic + grp * p.icg()) * plane;
  tile.dy = a.dst_grad + (img * p.oc + grp * p.ocg()) * oplane + 2 * ty * p.ow() + 2 * tx;
  tile.y0 = 2 * ty - p.ph;
  tile.x0 = 2 * tx - p.pw;
  tile.inside = tile.y0 >= 0 && tile.y0 + 4 <= p.ih && tile.x0 >= 0 && tile.x0 + 4 <= p.iw;
  tile.row2 = 2 * ty + 1 < p.oh();
  tile.col2 = 2 * tx + 1 < p.ow();
  return tile;
}

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

void conv_winograd_bw_run(const ConvBackwardArgs& a) {
  const ConvProblem& p = *a.p;
  const Layout l(p, a.threads);
  // One transform position's M of one group (ocg x icg), padded as U and V are: the inverse
  // transform reads the 16 of every (o, c).
  const int64_t ocg = p.ocg(), icg = p.icg(), mg = xi_stride(ocg, icg);
  auto* base = static_cast<char*>(a.workspace);
  auto* u = reinterpret_cast<float*>(base);               // [xi][ocg][n], xi_stride apart, then V
  auto* m = reinterpret_cast<float*>(base + l.uv_bytes);  // [g][xi][ocg][icg]
  auto* tiles = reinterpret_cast<Tile*>(base + l.uv_bytes + l.m_bytes);
  char* blas_ws = base + l.uv_bytes + l.m_bytes + l.tile_bytes;
#pragma omp parallel num_threads(l.threads) if (l.threads > 1)
  {
    void* ws = blas_ws + omp_get_thread_num() * l.blas_bytes;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < p.g * kXi; ++i) std::fill(m + i * mg, m + (i + 1) * mg, 0.0f);
    for (int64_t item = 0; item < p.g * l.chunks; ++item) {
      const int64_t grp = item / l.chunks, t0 = item % l.chunks * l.chunk;
      const int64_t n = std::min(l.chunk, l.tiles - t0);
      float* v = u + kXi * xi_stride(ocg, n);  // [xi][icg][n]
#pragma omp for schedule(static)
      for (int64_t j = 0; j < n; ++j) tiles[j] = locate_tile(p, a, l, grp, t0 + j);
#pragma omp for schedule(static)
      for (int64_t ch = 0; ch < icg + ocg; ++ch) {
        if (ch < icg) {
          transform_x(p, tiles, n, ch, v);
        } else {
          transform_dy(p, tiles, n, ch - icg, u);
        }
      }
#pragma omp for schedule(static)
      for (int64_t xi = 0; xi < kXi; ++xi) {
        blas().run(gemm_args({false, true, ocg, icg, n}, u + xi * xi_stride(ocg, n), n,
                             v + xi * xi_stride(icg, n), n, m + (grp * kXi + xi) * mg, icg, ws, 1,
                             1.0f));
      }
    }
  }
  // dW[g][o][c] = G^T M[g][.][o][c] G.
  const int t = conv_useful_copy_threads(a.threads, p.g * kXi * mg, p.g * ocg);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static) collapse(2)
  for (int64_t grp = 0; grp < p.g; ++grp) {
    for (int64_t o = 0; o < ocg; ++o) {
      for (int64_t c = 0; c < icg; ++c) {
        float s[4][4];
        const float* mo = m + grp * kXi * mg + o * icg + c;
        for (int xi = 0; xi < kXi; ++xi) s[xi / 4][xi % 4] = mo[xi * mg];
        float h[3][4];  // G^T s
        for (int q = 0; q < 4; ++q) {
          h[0][q] = s[0][q] + 0.5f * (s[1][q] + s[2][q]);
          h[1][q] = 0.5f * (s[1][q] - s[2][q]);
          h[2][q] = 0.5f * (s[1][q] + s[2][q]) + s[3][q];
        }
        float* w = a.wei_grad + ((grp * ocg + o) * icg + c) * 9;
        for (int r = 0; r < 3; ++r) {  // (G^T s) G
          w[r * 3 + 0] = h[r][0] + 0.5f * (h[r][1] + h[r][2]);
          w[r * 3 + 1] = 0.5f * (h[r][1] - h[r][2]);
          w[r * 3 + 2] = 0.5f * (h[r][1] + h[r][2]) + h[r][3];
        }
      }
    }
  }
  if (a.bias_grad != nullptr) conv_bias_grad(p, a.dst_grad, a.bias_grad, a.threads);
}

// OpenBLAS's rate over the 16 GEMMs at their shape, ceil(16 / threads) of them per thread, plus
// the transforms split over the threads (kTransformSeconds per transformed value on the fitted
// core: measured 0.45 ns on a Zen 4 core at 116 GFLOP/s, 12.8M values of mb8ic64ih56oc64kh3ph1
// in 5.7 ms, scaled by 116 / 102) and M, zeroed and read back by the inverse transform at DRAM
// speed.
double conv_winograd_bw_cost(const ConvProblem& p, int threads) {
  constexpr double kTransformSeconds = 0.5e-9;
  const ConvMachine m = conv_machine();
  const Layout l(p, threads);
  const double gemm_flops = 2.0 * static_cast<double>(p.g * p.ocg() * p.icg() * l.tiles);
  const double per_thread = static_cast<double>(conv_ceil_div(kXi, l.threads));
  const double eff = std::max(0.05, conv_gemm_shape_efficiency(p.ocg(), p.icg(), l.chunk));
  const double values = static_cast<double>(kXi * p.g * (p.ocg() + p.icg()) * l.tiles);
  return gemm_flops * per_thread / ((86.0 / conv_fit::kFmaGflops) * m.blas_flops_per_s * eff) +
         values * m.seconds(kTransformSeconds) / l.threads +
         2.0 * static_cast<double>(l.m_bytes) / m.dram_at(l.threads);
}

}  // namespace nnperf
