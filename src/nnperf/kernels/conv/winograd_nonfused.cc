// Non-fused Winograd F(4x4, 3x3), as cuDNN's WINOGRAD_NONFUSED: the same math as winograd.cc in
// three whole-tensor stages - every input tile transformed into a workspace tensor V, then 36
// independent GEMMs M[xi] = V[xi] U[xi] through the GEMM registry, then the output
// transform. Simple and GEMM-bound, at the price of a workspace of 36 x tiles x (ic + oc) floats
// (4.5x the input for ic = oc: 36/16 for V, as much for M) that streams through memory twice.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <string>

#include "nnperf/core/cpu.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_internal.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

namespace {

using winograd::Geometry;
using winograd::kXi;

// Our blocked GEMM: as fast as OpenBLAS on these shapes (m = tiles, n = oc, k = ic; within 5%
// either way on the five benchmark layers, 10% faster at 64 channels) and it honours
// args.threads, where OpenBLAS uses its global pool.
constexpr const char* kGemmName = "blocked";
constexpr int64_t kTilesPerJob = 16;  // transform work per OpenMP chunk

struct Layout {
  Geometry g;
  winograd::TileLayout lv, lm;  // plain: V[xi] a tiles x icp matrix, M[xi] tiles x ocp
  int64_t v_floats, m_floats;
  GemmShape shape;  // one of the 36 GEMMs: m = tiles, n = ocp, k = ic
};

Layout layout_of(const ConvProblem& p) {
  Layout l{};
  l.g = winograd::make_geometry(p);
  l.lv = {winograd::xi_stride_for(l.g.tiles * l.g.icp), l.g.icp, 8};
  l.lm = {winograd::xi_stride_for(l.g.tiles * l.g.ocp), l.g.ocp, 8};
  l.v_floats = kXi * l.lv.xi_stride;
  l.m_floats = kXi * l.lm.xi_stride;
  l.shape = GemmShape{false, false, l.g.tiles, l.g.ocp, l.g.ic};
  return l;
}

// Runs stage(t0, count) over all tiles, split into chunks across `threads`.
template <class Stage>
void for_tiles(int64_t tiles, int threads, const Stage& stage) {
  const int64_t jobs = (tiles + kTilesPerJob - 1) / kTilesPerJob;
  if (threads <= 1 || jobs <= 1) {
    stage(0, tiles);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t j = 0; j < jobs; ++j) {
    const int64_t t0 = j * kTilesPerJob;
    stage(t0, std::min(kTilesPerJob, tiles - t0));
  }
}

}  // namespace

std::string conv_winograd_nonfused_why_not(const ConvProblem& p) {
  return winograd_why_not("winograd_nonfused", p);
}

std::size_t conv_winograd_nonfused_workspace_bytes(const ConvProblem& p, int threads) {
  const Layout l = layout_of(p);
  return static_cast<std::size_t>(l.v_floats + l.m_floats) * sizeof(float) +
         find_gemm(kGemmName).workspace_bytes(l.shape, threads);
}

std::size_t conv_winograd_nonfused_packed_floats(const ConvProblem& p) {
  const Geometry g = winograd::make_geometry(p);
  return static_cast<std::size_t>(kXi * g.ic * g.ocp);
}

// U[xi][c][o] (row-major ic x ocp per xi), zero for o >= oc. As conv_winograd_pack: 16 output
// channels transformed into a local block, then stored 16 contiguous floats per xi; input
// channels are independent, so they are split between `threads`.
void conv_winograd_nonfused_pack(const ConvProblem& p, const float* wei, float* packed,
                                 int threads) {
  const Geometry g = winograd::make_geometry(p);
  constexpr int64_t kBlock = winograd::kFilterLanes;
  const auto transform = winograd::kernels_for(active_simd()).transform_filters;
  const int t = conv_useful_copy_threads(threads, kXi * g.ic * g.ocp, g.ic);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < g.ic; ++c) {
    double taps[9][kBlock];
    alignas(64) float block[kXi][kBlock];
    for (int64_t o0 = 0; o0 < g.ocp; o0 += kBlock) {
      const int64_t width = std::min(kBlock, g.ocp - o0);
      winograd::gather_filters(p, wei, o0, c, taps);  // zero filters pad o >= oc
      transform(taps, block);
      for (int64_t xi = 0; xi < kXi; ++xi) {
        std::memcpy(packed + (xi * g.ic + c) * g.ocp + o0, block[xi],
                    static_cast<std::size_t>(width) * sizeof(float));
      }
    }
  }
}

void conv_winograd_nonfused_run_with(const winograd::Kernels& k, const ConvArgs& args) {
  const Layout l = layout_of(*args.p);
  const Geometry& g = l.g;
  float* const v = static_cast<float*>(args.workspace);
  float* const m = v + l.v_floats;
  const winograd::TileLayout &lv = l.lv, &lm = l.lm;
  for_tiles(g.tiles, args.threads, [&](int64_t t0, int64_t count) {
    k.input_transform(g, args.src, t0, count, v + t0 * g.icp, lv);
  });
  const GemmAlgorithm& gemm = find_gemm(kGemmName);
  GemmArgs ga;
  ga.shape = l.shape;
  ga.lda = g.icp;
  ga.ldb = g.ocp;
  ga.ldc = g.ocp;
  ga.workspace = m + l.m_floats;
  ga.threads = args.threads;
  for (int64_t xi = 0; xi < kXi; ++xi) {
    ga.a = v + xi * lv.xi_stride;
    ga.b = args.packed + xi * g.ic * g.ocp;
    ga.c = m + xi * lm.xi_stride;
    gemm.run(ga);
  }
  for_tiles(g.tiles, args.threads, [&](int64_t t0, int64_t count) {
    k.output_transform(g, m + t0 * g.ocp, lm, t0, count, 0, g.oc, args.bias, args.dst);
  });
}

void conv_winograd_nonfused_run(const ConvArgs& args) {
  conv_winograd_nonfused_run_with(winograd::kernels_for(active_simd()), args);
}

// The fused algorithm's GEMM and transform terms (the blocked GEMM runs these shapes at about
// the speed of the fused micro-kernel), plus V and M written and read once each through memory
// (~10 GB/s per core on the fitted one) and the OpenMP split of the transforms.
constexpr double kBufferDram = 10.0 / conv_fit::kDramGbps;

double conv_winograd_nonfused_cost(const ConvProblem& p, int threads) {
  const Layout l = layout_of(p);
  const ConvMachine m = conv_machine();
  const double bytes = 2.0 * static_cast<double>(l.v_floats + l.m_floats) * sizeof(float);
  return (winograd::gemm_seconds(l.g, m) + winograd::transform_seconds(l.g, m)) /
             std::max(1, threads) +
         bytes / (kBufferDram * m.dram_at(threads));
}

}  // namespace nnperf
