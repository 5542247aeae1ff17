// The convolution registry: one row per algorithm in the order users see them, the name lookup,
// the workspace/packing convenience runner used by tests and benchmarks, and helpers the
// algorithm files share. A new algorithm = one file in this folder + one row in kConvAlgorithms
// (its entry points declared in conv_internal.h).
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "nnperf/core/error.h"
#include "nnperf/core/machine_model.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

namespace {

// ======================= registry table: one row per algorithm ==============================
// {name, description, why_not, workspace_bytes, packed_weights_floats, pack_weights, run,
//  tolerance_factor, cost, pack_fitted_ns_per_float, pack_parallel}. tolerance_factor: see each
//  algorithm file for
// its measured worst case. pack_fitted_ns_per_float: pack_weights alone, timed per algorithm on
// ResNet and VGG layers (64 to 1024 channels, 1x1 to 7x7 kernels) on a Zen 4 core measured at
// 115 GFLOP/s of AVX2 FMA (2026-11-27), scaled to the fitted core's clock (x 115 / 102): the
// weight-panel packs 0.4-0.8 ns there, Winograd's fused layout 0.66-0.83 (16 filters transformed
// at a time), its non-fused layout 0.75-1.45 (stores strided by the output channels), the FFT
// spectra 1.3-2.4 (a real 2-D FFT per filter). gemm_live_taps' [oc][kh][kw][ic] transpose
// (transpose.h, 8 x 8 blocks in AVX2): 0.4, the copy rate of its cost model (gemm_live_taps.cc).
constexpr ConvAlgorithm kConvAlgorithms[] = {
    {"direct",
     "direct loops over output rows, vectorised over output width, register tile of output "
     "channels; fast depthwise path",
     conv_direct_why_not, conv_direct_workspace_bytes, conv_direct_packed_floats, conv_direct_pack,
     conv_direct_run, 1.0, conv_direct_cost, 0.7, false},
    {"gemm", "im2col into the workspace, then one OpenBLAS SGEMM per image and group",
     conv_gemm_why_not, conv_gemm_workspace_bytes, nullptr, nullptr, conv_gemm_run, 1.0,
     conv_gemm_cost, 0.0, false},
    {"implicit_gemm",
     "GEMM over the patch matrix without materialising it: kc x nc input panels packed on the "
     "fly (positions computed), weights packed at plan time, 6x16 FMA micro-kernel",
     conv_implicit_gemm_why_not, conv_implicit_gemm_workspace_bytes,
     conv_implicit_gemm_packed_floats, conv_implicit_gemm_pack, conv_implicit_gemm_run, 1.0,
     conv_implicit_gemm_cost, 0.7, false},
    {"implicit_precomp_gemm",
     "implicit_gemm with patch offsets precomputed at plan time over a zero-padded input: "
     "the packing loop only loads",
     conv_implicit_precomp_gemm_why_not, conv_implicit_precomp_gemm_workspace_bytes,
     conv_implicit_precomp_gemm_packed_floats, conv_implicit_precomp_gemm_pack,
     conv_implicit_precomp_gemm_run, 1.0, conv_implicit_precomp_gemm_cost, 0.7, false},
    {"winograd",
     "fused Winograd F(4x4,3x3): per block of tiles, input transform, 36 GEMMs with a 16x6 FMA "
     "micro-kernel and output transform while in L2; 3x3 stride 1 only",
     conv_winograd_why_not, conv_winograd_workspace_bytes, conv_winograd_packed_floats,
     conv_winograd_pack, conv_winograd_run, kConvWinogradTolerance, conv_winograd_cost, 0.85, true},
    {"winograd_nonfused",
     "Winograd F(4x4,3x3) in whole-tensor stages: transform all tiles, 36 blocked GEMMs, "
     "output transform (cuDNN's WINOGRAD_NONFUSED); 3x3 stride 1 only",
     conv_winograd_nonfused_why_not, conv_winograd_nonfused_workspace_bytes,
     conv_winograd_nonfused_packed_floats, conv_winograd_nonfused_pack, conv_winograd_nonfused_run,
     kConvWinogradTolerance, conv_winograd_nonfused_cost, 1.25, true},
    {"fft",
     "2-D real FFTs (FFTW) of each whole padded image plane, filter spectra at plan time, "
     "complex multiply-accumulate over input channels; stride 1, dilation 1",
     conv_fft_why_not, conv_fft_workspace_bytes, conv_fft_packed_floats, conv_fft_pack,
     conv_fft_run, kConvFftTolerance, conv_fft_cost, 2.0, false},
    {"fft_tiling",
     "FFT on overlapping tiles (overlap-save) of a small transform chosen per problem (<= 64x64), "
     "as cuDNN's FFT_TILING; stride 1, dilation 1",
     conv_fft_tiling_why_not, conv_fft_tiling_workspace_bytes, conv_fft_tiling_packed_floats,
     conv_fft_tiling_pack, conv_fft_tiling_run, kConvFftTolerance, conv_fft_tiling_cost, 2.0,
     false},
    {"gemm_live_taps",
     "per output position and kernel row, one OpenBLAS GEMM over the batch whose reduction runs "
     "over only the taps inside the image (no padding products), on channels-last copies; "
     "small maps at batch >= ~16; groups 1",
     conv_gemm_live_taps_why_not, conv_gemm_live_taps_workspace_bytes,
     conv_gemm_live_taps_packed_floats, conv_gemm_live_taps_pack, conv_gemm_live_taps_run, 1.0,
     conv_gemm_live_taps_cost, 0.4, true},
};
// ===================== end of registry table =================================================

constexpr Registry<ConvAlgorithm> kRegistry{kConvAlgorithms};

}  // namespace

std::span<const ConvAlgorithm> conv_algorithms() { return kConvAlgorithms; }

std::string conv_algorithm_names() { return kRegistry.names(); }

const ConvAlgorithm& find_conv(std::string_view name) {
  if (const ConvAlgorithm* algo = kRegistry.find(name)) return *algo;
  throw UsageError(fmt::format("unknown convolution algorithm '{}'; expected one of: {}", name,
                               conv_algorithm_names()));
}

void conv_run(const ConvAlgorithm& algo, const ConvProblem& p, const float* src, const float* wei,
              const float* bias, float* dst, int threads) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) throw UsageError(fmt::format("convolution {}: {}", p.str(), invalid));
  const std::string reason = algo.why_not(p);
  if (!reason.empty()) {
    throw Error(fmt::format("convolution '{}' cannot run {}: {}", algo.name, p.str(), reason));
  }
  thread_local Workspace workspace;
  thread_local Workspace packed;
  algo.run(conv_prepare(algo, p, src, wei, bias, dst, threads, workspace, packed));
}

ConvArgs conv_prepare(const ConvAlgorithm& algo, const ConvProblem& p, const float* src,
                      const float* wei, const float* bias, float* dst, int threads,
                      Workspace& workspace, Workspace& packed) {
  threads = std::max(1, threads);
  workspace.reserve(algo.workspace_bytes(p, threads));
  ConvArgs args;
  args.p = &p;
  args.src = src;
  args.wei = wei;
  args.bias = bias;
  args.dst = dst;
  args.workspace = workspace.data();
  args.threads = threads;
  if (algo.pack_weights != nullptr && algo.packed_weights_floats != nullptr) {
    packed.reserve(algo.packed_weights_floats(p) * sizeof(float));
    algo.pack_weights(p, wei, static_cast<float*>(packed.data()), threads);
    args.packed = static_cast<const float*>(packed.data());
  }
  return args;
}

// ---- helpers shared by the algorithm files ----

const GemmAlgorithm& conv_blas() {
  static const GemmAlgorithm& g = find_gemm("blas");
  return g;
}

std::string conv_serves_any(const ConvProblem& p) { return p.invalid_reason(); }

std::size_t conv_no_workspace(const ConvProblem&, int) { return 0; }

ConvMachine conv_machine() {
  const MachineModel& m = machine_model();
  ConvMachine c;
  c.avx2 = m.simd >= SimdLevel::kAvx2;
  // Our conv kernels top out at AVX2 (an AVX-512 model is halved to AVX2 width); OpenBLAS
  // dispatches to the hardware's best level itself.
  c.fma_flops_per_s = fma_gflops_at(m, SimdLevel::kAvx2) * 1e9;
  c.blas_flops_per_s = fma_gflops_at(m, m.blas_simd) * 1e9;
  c.dram_bytes_per_s = m.dram_gbps_per_core * 1e9;
  c.dram_total_bytes_per_s = std::max(m.dram_gbps_total, m.dram_gbps_per_core) * 1e9;
  c.l2_bytes = static_cast<double>(m.l2_bytes > 0 ? m.l2_bytes : 512L << 10);
  c.l3_bytes = static_cast<double>(m.l3_bytes);
  return c;
}

double conv_pack_cost(const ConvAlgorithm& algo, const ConvProblem& p, int threads) {
  if (algo.pack_weights == nullptr || algo.packed_weights_floats == nullptr) return 0.0;
  const auto floats = static_cast<int64_t>(algo.packed_weights_floats(p));
  const int used = algo.pack_parallel ? conv_useful_copy_threads(threads, floats, floats) : 1;
  return conv_machine().seconds(algo.pack_fitted_ns_per_float * 1e-9 *
                                static_cast<double>(floats)) /
         used;
}

int conv_useful_threads(int threads, double flops, int64_t jobs) {
  // Below ~1 MFLOP per thread (~20 us of one core) a second thread costs more than it saves.
  return useful_threads(threads, flops, 1e6, jobs);
}

int conv_useful_copy_threads(int threads, int64_t elements, int64_t jobs) {
  // 32768 elements per thread: a copy's ~20 us of one core.
  return useful_threads(threads, static_cast<double>(elements), 1 << 15, jobs);
}

void conv_add_bias(const ConvProblem& p, const float* bias, float* dst, int threads) {
  if (bias == nullptr) return;
  const int64_t plane = p.oh() * p.ow();
  const int64_t rows = p.mb * p.oc;
  auto add_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float b = bias[r % p.oc];
      float* d = dst + r * plane;
      for (int64_t i = 0; i < plane; ++i) d[i] += b;
    }
  };
  const int t = conv_useful_threads(threads, static_cast<double>(rows * plane) * 8.0, rows);
  if (t <= 1) {
    add_rows(0, rows);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    add_rows(rows * tid / nt, rows * (tid + 1) / nt);
  }
}

}  // namespace nnperf
