// Winograd F(4x4, 3x3) benchmark on real VGG16 / ResNet-50 3x3 stride-1 layers: the fused and
// non-fused algorithms on each SIMD path, against the GEMM at the heart of im2col+GEMM (one
// OpenBLAS sgemm of m = oc, n = oh*ow, k = ic*9: a lower bound on im2col+GEMM's time), plus a
// sweep of the fused blocking (tiles per block x output-channel chunk) used to tune plan_fused.
// gflops = direct-convolution FLOPs (2 * MACs) / time, so Winograd's counter shows its
// "effective" rate; gemm_gflops = the GEMM work actually done / time.
//   winograd_bench --benchmark_filter='fused|nonfused|im2col'   (the table)
//   winograd_bench --benchmark_filter=registry                  (vs the registry's `gemm`)
//   winograd_bench --benchmark_filter=stage                     (time per stage, fused)
//   winograd_bench --benchmark_filter=sweep                     (blocking sweep)
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_internal.h"

namespace nnperf {
namespace {

// The conv operands, and the packed weights in a vector.
struct Buffers : bench::ConvBuffers {
  using ConvBuffers::ConvBuffers;
  std::vector<float> packed;
};

ConvArgs args_for(const ConvProblem& p, Buffers& b, void* workspace, int threads) {
  return bench::conv_args(p, b, b.packed.data(), workspace, threads);
}

void set_counters(benchmark::State& state, const ConvProblem& p) {
  const winograd::Geometry g = winograd::make_geometry(p);
  state.counters["gflops"] = bench::gflops(p.flops());
  state.counters["gemm_gflops"] =
      bench::gflops(2.0 * winograd::kXi * static_cast<double>(g.tiles * g.icp * g.ocp));
}

void bm_fused(benchmark::State& state, ConvProblem p, SimdLevel level, int threads,
              winograd::Blocking blocking) {
  set_threads(threads);
  Buffers b(p);
  b.packed.resize(conv_winograd_packed_floats(p));
  conv_winograd_pack(p, b.wei.data(), b.packed.data(), 1);
  if (blocking.block_tiles == 0) blocking = winograd::plan_fused(p, threads);
  Workspace ws;
  ws.reserve(winograd::fused_workspace_bytes(winograd::make_geometry(p), blocking));
  const ConvArgs args = args_for(p, b, ws.data(), threads);
  const winograd::Kernels& k = winograd::kernels_for(level);
  bench::timed_loop(
      state, [&] { winograd::run_fused(k, blocking, args); }, args.dst);
  set_counters(state, p);
  state.SetLabel(fmt::format("blocking {}x{}", blocking.block_tiles, blocking.oc_chunk));
}

void bm_nonfused(benchmark::State& state, ConvProblem p, SimdLevel level, int threads) {
  set_threads(threads);
  Buffers b(p);
  b.packed.resize(conv_winograd_nonfused_packed_floats(p));
  conv_winograd_nonfused_pack(p, b.wei.data(), b.packed.data(), 1);
  Workspace ws;
  ws.reserve(conv_winograd_nonfused_workspace_bytes(p, threads));
  const ConvArgs args = args_for(p, b, ws.data(), threads);
  const winograd::Kernels& k = winograd::kernels_for(level);
  bench::timed_loop(
      state, [&] { conv_winograd_nonfused_run_with(k, args); }, args.dst);
  set_counters(state, p);
}

// One stage of the fused algorithm alone, over all blocks of the single-thread plan, with one
// block's buffers (the time split behind the fused numbers). stage: 0 input transform,
// 1 GEMMs, 2 output transform.
void bm_stage(benchmark::State& state, ConvProblem p, int stage) {
  set_threads(1);
  Buffers b(p);
  b.packed.resize(conv_winograd_packed_floats(p));
  conv_winograd_pack(p, b.wei.data(), b.packed.data(), 1);
  const winograd::Blocking blocking = winograd::plan_fused(p, 1);
  const winograd::Geometry g = winograd::make_geometry(p);
  const int64_t nt = blocking.block_tiles, chunk = blocking.oc_chunk;
  Workspace ws;
  ws.reserve(winograd::fused_workspace_bytes(g, blocking));
  float* v = static_cast<float*>(ws.data());
  float* m = v + winograd::kXi * winograd::fused_v_layout(g, blocking).xi_stride;
  const winograd::Kernels& k = winograd::kernels_for(active_simd());
  const winograd::TileLayout lv = winograd::fused_v_layout(g, blocking);
  const winograd::TileLayout lm = winograd::fused_m_layout(g, blocking);
  k.input_transform(g, b.src.data(), 0, std::min(nt, g.tiles), v, lv);
  for (auto _ : state) {
    for (int64_t t0 = 0; t0 < g.tiles; t0 += nt) {
      const int64_t count = std::min(nt, g.tiles - t0);
      if (stage == 0) k.input_transform(g, b.src.data(), t0, count, v, lv);
      for (int64_t o0 = 0; stage > 0 && o0 < g.ocp; o0 += chunk) {
        const int64_t o1 = std::min(o0 + chunk, g.ocp);
        if (stage == 1) {
          k.batched_gemm(g, b.packed.data(), v, lv, count, o0, o1, m, lm);
        } else {
          k.output_transform(g, m, lm, t0, count, o0, std::min(o1, g.oc), b.bias.data(),
                             b.dst.data());
        }
      }
    }
    benchmark::ClobberMemory();
  }
  set_counters(state, p);
}

// Any registry row, as layers run it (plan-time packing and workspace outside the timed loop):
// `gemm` (im2col + OpenBLAS) is the baseline the issue compares Winograd with.
void bm_registry(benchmark::State& state, ConvProblem p, const ConvAlgorithm* algo, int threads) {
  set_threads(threads);
  Buffers b(p);
  if (algo->pack_weights != nullptr) {
    b.packed.resize(algo->packed_weights_floats(p));
    algo->pack_weights(p, b.wei.data(), b.packed.data(), threads);
  }
  Workspace ws;
  ws.reserve(algo->workspace_bytes(p, threads));
  const ConvArgs args = args_for(p, b, ws.data(), threads);
  bench::timed_loop(
      state, [&] { algo->run(args); }, args.dst);
  set_counters(state, p);
}

// The GEMM of im2col+GEMM alone (the column matrix is random data of the right size).
void bm_im2col_gemm_only(benchmark::State& state, ConvProblem p, int threads) {
  set_threads(threads);
  const int64_t m = p.oc, n = p.oh() * p.ow(), k = p.ic * p.kh * p.kw;
  std::vector<float> a(static_cast<std::size_t>(m * k)), col(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n));
  Rng rng(7);
  rng.fill_uniform(a, -1.0f, 1.0f);
  rng.fill_uniform(col, -1.0f, 1.0f);
  auto run = [&] {
    for (int64_t i = 0; i < p.mb; ++i) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
                  static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a.data(),
                  static_cast<blasint>(k), col.data(), static_cast<blasint>(n), 0.0f, c.data(),
                  static_cast<blasint>(n));
    }
  };
  bench::timed_loop(state, run, c.data());
  state.counters["gflops"] = bench::gflops(p.flops());
}

void register_all() {
  bench::add_context(true);
  // ResNet-50 res2 / VGG16 conv2_x-ish, res3 at 56, VGG16 conv3_x, conv4_x, conv1_2.
  const std::vector<std::string> layers = {"mb1ic64ih56oc64kh3ph1", "mb1ic128ih56oc128kh3ph1",
                                           "mb1ic256ih56oc256kh3ph1", "mb1ic512ih28oc512kh3ph1",
                                           "mb1ic64ih224oc64kh3ph1"};
  std::vector<SimdLevel> levels = {SimdLevel::kScalar};
  if (cpu_info().simd >= SimdLevel::kAvx2) levels = {SimdLevel::kAvx2, SimdLevel::kScalar};
  for (int threads : {1, 2}) {
    for (const std::string& layer : layers) {
      const ConvProblem p = parse_conv_problem(layer);
      const std::string tail = fmt::format("{}/threads:{}", layer, threads);
      for (SimdLevel level : levels) {
        if (level == SimdLevel::kScalar && threads > 1) continue;
        bench::ms_with_min(
            benchmark::RegisterBenchmark(fmt::format("fused/{}/{}", to_string(level), tail).c_str(),
                                         bm_fused, p, level, threads, winograd::Blocking{}));
        bench::ms_with_min(benchmark::RegisterBenchmark(
            fmt::format("nonfused/{}/{}", to_string(level), tail).c_str(), bm_nonfused, p, level,
            threads));
      }
      for (const char* name : {"gemm", "winograd", "winograd_nonfused"}) {
        bench::ms_with_min(
            benchmark::RegisterBenchmark(fmt::format("registry/{}/{}", name, tail).c_str(),
                                         bm_registry, p, &find_conv(name), threads));
      }
      bench::ms_with_min(benchmark::RegisterBenchmark(
          fmt::format("im2col_gemm_only/{}", tail).c_str(), bm_im2col_gemm_only, p, threads));
    }
  }
  for (const std::string& layer : layers) {
    for (int stage = 0; stage < 3; ++stage) {
      constexpr const char* kStages[] = {"input_transform", "gemms", "output_transform"};
      bench::ms_with_min(
          benchmark::RegisterBenchmark(fmt::format("stage/{}/{}", layer, kStages[stage]).c_str(),
                                       bm_stage, parse_conv_problem(layer), stage));
    }
  }
  for (const std::string& layer : layers) {
    const ConvProblem p = parse_conv_problem(layer);
    for (int64_t nt : {12, 18, 24, 36, 48, 72, 96, 144, 196}) {
      for (int64_t oc_chunk : {16, 32, 64, 128, 256, 512}) {
        if (oc_chunk > p.oc) continue;
        bench::ms_with_min(benchmark::RegisterBenchmark(
            fmt::format("sweep/{}/nt:{}/oc_chunk:{}", layer, nt, oc_chunk).c_str(), bm_fused, p,
            active_simd(), 1, winograd::Blocking{nt, oc_chunk, 1, false}));
      }
    }
  }
}

}  // namespace
}  // namespace nnperf

int main(int argc, char** argv) {
  return nnperf::bench::run_main(argc, argv, nnperf::register_all);
}
