// GPU ceilings: calibrate each kernel so one sample lasts options.sample_seconds, then time
// `rounds` samples of every kernel of a group in alternation (read, copy, triad in one round;
// cuBLAS and our SGEMM in one round) by CUDA events, and read them all after one synchronisation.
#include "nnperf/analysis/gpu_peaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/peak/gpu_peak.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

using Launch = std::function<void()>;

struct Timed {
  double median = 0, min = 0, max = 0;  // milliseconds per sample
};

// Milliseconds of one launch of each kernel, after one untimed launch each (module load, clocks).
std::vector<double> probe_ms(const std::vector<Launch>& kernels) {
  auto timer = cuda::make_event_timer(static_cast<int>(kernels.size()));
  for (const Launch& k : kernels) k();
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    timer->begin(static_cast<int>(i));
    kernels[i]();
    timer->end(static_cast<int>(i));
  }
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer->resolve(ms, counts);
  cuda::synchronize();
  return ms;
}

// `rounds` rounds; in each, every kernel (in round_order's order) runs reps[i] times back to back
// between two events.
std::vector<Timed> time_alternating(const std::vector<Launch>& kernels,
                                    const std::vector<int>& reps, int rounds) {
  const int n = static_cast<int>(kernels.size());
  auto timer = cuda::make_event_timer(n * rounds);
  for (int r = 0; r < rounds; ++r) {
    check_interrupt();
    for (const int i : round_order(n, r)) {
      timer->begin(r * n + i);
      for (int k = 0; k < reps[static_cast<std::size_t>(i)]; ++k)
        kernels[static_cast<std::size_t>(i)]();
      timer->end(r * n + i);
    }
  }
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer->resolve(ms, counts);
  cuda::synchronize();
  std::vector<Timed> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::vector<double> v;
    for (int r = 0; r < rounds; ++r) v.push_back(ms[static_cast<std::size_t>(r * n + i)]);
    out[static_cast<std::size_t>(i)] = {median(v), *std::min_element(v.begin(), v.end()),
                                        *std::max_element(v.begin(), v.end())};
  }
  return out;
}

// Repetitions that make a sample last about `seconds`, from one launch's milliseconds.
int reps_for(double launch_ms, double seconds) {
  if (!(launch_ms > 0)) return 1;
  return static_cast<int>(std::clamp(std::ceil(seconds * 1e3 / launch_ms), 1.0, 1e6));
}

void measure_fma(GpuPeaks& p) {
  const cuda::DeviceProperties& d = p.device;
  p.fma_threads_per_block = 256;
  p.fma_blocks = d.multiprocessors * 8;  // 2048 resident threads per SM on sm_80 and sm_90
  const int64_t threads = int64_t{p.fma_blocks} * p.fma_threads_per_block;
  cuda::Buffer out(static_cast<std::size_t>(threads));
  int64_t iters = 4096;
  const auto launch = [&] {
    cuda_kernels::fma_chains(out.data(), p.fma_blocks, p.fma_threads_per_block, iters, 0.999999f,
                             1e-6f);
  };
  const double ms = probe_ms({launch}).front();
  // One launch per sample, long enough on its own (the loop count is the knob, not repetitions).
  if (ms > 0) {
    iters =
        std::max<int64_t>(iters, static_cast<int64_t>(iters * p.options.sample_seconds * 1e3 / ms));
  }
  const Timed t = time_alternating({launch}, {1}, p.options.rounds).front();
  const double flops =
      2.0 * cuda_kernels::kGpuFmaChains * static_cast<double>(iters) * static_cast<double>(threads);
  const auto gflops = [&](double sample_ms) { return flops / (sample_ms * 1e6); };
  p.fma = {"cuda fma",
           fmt::format("sm_{}{}", d.compute_major, d.compute_minor),
           1,
           static_cast<int>(threads),
           cuda_kernels::kGpuFmaChains,
           p.options.rounds,
           gflops(t.median),
           gflops(t.max),
           gflops(t.min)};
}

// read, copy and triad over arrays of `n` floats, each sweeping them `passes` times per launch.
void measure_stream_level(GpuPeaks& p, const std::string& level, int64_t n, int passes) {
  const int blocks = p.device.multiprocessors * 8;
  cuda::Buffer a(static_cast<std::size_t>(n)), b(static_cast<std::size_t>(n)),
      c(static_cast<std::size_t>(n)),
      partial(static_cast<std::size_t>(blocks) * cuda_kernels::kGpuStreamThreads);
  cuda_kernels::fill(a.data(), 1.0f, n, blocks);
  cuda_kernels::fill(b.data(), 2.0f, n, blocks);
  cuda_kernels::fill(c.data(), 0.5f, n, blocks);
  const std::vector<Launch> kernels{
      [&] { cuda_kernels::stream_read(a.data(), partial.data(), n, passes, blocks); },
      [&] { cuda_kernels::stream_copy(a.data(), b.data(), n, passes, blocks); },
      [&] { cuda_kernels::stream_triad(a.data(), b.data(), c.data(), 0.5f, n, passes, blocks); }};
  const std::vector<double> one = probe_ms(kernels);
  std::vector<int> reps;
  for (double ms : one) reps.push_back(reps_for(ms, p.options.sample_seconds));
  const std::vector<Timed> t = time_alternating(kernels, reps, p.options.rounds);
  const char* names[] = {"read", "copy", "triad"};
  for (int i = 0; i < 3; ++i) {
    const double arrays = i + 1;  // STREAM counting: bytes of every array touched, once per pass
    const double bytes = arrays * static_cast<double>(n) * sizeof(float) * passes *
                         reps[static_cast<std::size_t>(i)];
    const auto gbps = [&](double ms) { return bytes / (ms * 1e6); };
    const auto ws = static_cast<int64_t>(arrays * static_cast<double>(n) * sizeof(float));
    p.bandwidth.push_back({level, names[i], 1, gbps(t[static_cast<std::size_t>(i)].median),
                           gbps(t[static_cast<std::size_t>(i)].max),
                           gbps(t[static_cast<std::size_t>(i)].min), ws, ws, 1});
  }
}

void measure_bandwidth(GpuPeaks& p) {
  const cuda::DeviceProperties& d = p.device;
  // L2: the three triad arrays fill a quarter of it (H100's L2 is two partitions; a working set
  // well inside one stays resident); 64 passes per launch so traffic, not launch cost, is timed.
  if (d.l2_bytes >= (int64_t{1} << 20)) {
    measure_stream_level(p, "L2", d.l2_bytes / 4 / 3 / static_cast<int64_t>(sizeof(float)), 64);
  } else {
    p.skipped.push_back("L2 bandwidth: the runtime reports no L2 size");
  }
  // Device memory: each array at least 4/3 x L2 (the triad's working set >= 4 x L2), at most a
  // quarter of free memory.
  int64_t bytes = std::min<int64_t>(p.options.array_bytes, static_cast<int64_t>(d.free_bytes / 4));
  bytes = std::max<int64_t>(bytes, d.l2_bytes * 4 / 3);
  measure_stream_level(p, "DRAM", bytes / static_cast<int64_t>(sizeof(float)) / 4 * 4, 1);
}

void measure_sgemm(GpuPeaks& p) {
  const int64_t n = p.options.sgemm_n;
  if (n == 0) return;
  const GemmShape shape{false, false, n, n, n};
  std::vector<const GemmAlgorithm*> rows;
  for (const char* name : {"cublas", "cuda"}) {
    const GemmAlgorithm& g = find_gemm(name, Device::kCuda);
    if (const std::string why = g.why_not ? g.why_not(shape) : ""; !why.empty()) {
      p.skipped.push_back(fmt::format("SGEMM '{}' at {}^3: {}", name, n, why));
    } else {
      rows.push_back(&g);
    }
  }
  const auto count = static_cast<std::size_t>(n * n);
  cuda::Buffer a(count), b(count), c(count);
  const int blocks = p.device.multiprocessors * 8;
  cuda_kernels::fill(a.data(), 0.5f, n * n, blocks);
  cuda_kernels::fill(b.data(), 0.25f, n * n, blocks);
  std::vector<Launch> kernels;
  for (const GemmAlgorithm* g : rows) {
    kernels.push_back([&, g] {
      gemm_run(*g, gemm_args(shape, a.data(), n, b.data(), n, c.data(), n, nullptr, 1));
    });
  }
  if (kernels.empty()) return;
  const std::vector<double> one = probe_ms(kernels);
  std::vector<int> reps;
  for (double ms : one) reps.push_back(reps_for(ms, p.options.sample_seconds));
  const std::vector<Timed> t = time_alternating(kernels, reps, p.options.rounds);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto gflops = [&](double ms) { return shape.flops() * reps[i] / (ms * 1e6); };
    p.sgemm.push_back(
        {rows[i]->name, n, 1, gflops(t[i].median), gflops(t[i].max), gflops(t[i].min)});
  }
}

}  // namespace

GpuPeakOptions quick_gpu_peak_options() {
  GpuPeakOptions o;
  o.quick = true;
  o.rounds = 3;
  o.sample_seconds = 0.005;
  o.array_bytes = int64_t{1} << 27;
  o.sgemm_n = 2048;
  return o;
}

std::string gpu_sgemm_size_error(int64_t n, std::size_t free_bytes) {
  const double need = 3.0 * static_cast<double>(n) * static_cast<double>(n) * sizeof(float);
  if (need <= 0.8 * static_cast<double>(free_bytes)) return "";
  return fmt::format(
      "--sgemm-n {}: three {}x{} float32 matrices need {:.1f} GiB, the device has {:.1f} GiB free",
      n, n, n, need / (1 << 30), static_cast<double>(free_bytes) / (1 << 30));
}

double GpuPeaks::peak_gbps() const {
  for (const BandwidthPlateau& b : bandwidth) {
    if (b.level == "DRAM" && b.kernel == "triad") return b.gbps;
  }
  return 0;
}

GpuPeaks measure_gpu_peaks(const GpuPeakOptions& options) {
  cuda::require("--device cuda");
  const int64_t t0 = now_ns();
  GpuPeaks p;
  p.options = options;
  p.device = cuda::device_properties();
  if (const std::string e = gpu_sgemm_size_error(options.sgemm_n, p.device.free_bytes);
      !e.empty()) {
    throw UsageError(e);
  }
  measure_fma(p);
  measure_bandwidth(p);
  measure_sgemm(p);
  p.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return p;
}

nlohmann::json gpu_peaks_env_json(const GpuPeaks& p) {
  using nlohmann::json;
  const cuda::DeviceProperties& d = p.device;
  const FmaCeiling& f = p.fma;
  json memory = json::array(), bandwidth = json::array(), sgemm = json::array();
  for (const BandwidthPlateau& b : p.bandwidth) {
    const json j{{"level", b.level},
                 {"kernel", b.kernel},
                 {"threads", 1},
                 {"gbps", b.gbps},
                 {"min", b.min},
                 {"max", b.max},
                 {"working_set_bytes", {b.lo, b.hi}}};
    bandwidth.push_back(j);
    if (b.kernel == "triad") memory.push_back(j);
  }
  for (const SgemmFigure& s : p.sgemm) {
    sgemm.push_back({{"impl", s.impl},
                     {"n", s.n},
                     {"threads", 1},
                     {"gflops", s.gflops},
                     {"min", s.min},
                     {"max", s.max},
                     {"percent_of_fma_peak", f.gflops > 0 ? 100 * s.gflops / f.gflops : 0.0}});
  }
  const GpuPeakOptions& o = p.options;
  return {
      {"description", fmt::format("{} ({}, {} SMs), FP32 (measured by nnperf peaks --device cuda)",
                                  d.name, f.simd, d.multiprocessors)},
      {"peak_gbps", p.peak_gbps()},
      {"peak_gflops", {{"fp32", f.gflops}}},
      {"device", "cuda"},
      {"machine",
       {{"gpu", d.name},
        {"compute_capability", f.simd},
        {"multiprocessors", d.multiprocessors},
        {"clock_mhz", d.clock_mhz},
        {"l2_bytes", d.l2_bytes},
        {"memory_bytes", d.total_bytes}}},
      {"method",
       {{"rounds", o.rounds},
        {"statistic", "median"},
        {"timing", "CUDA events around each sample, all read after one synchronisation"},
        {"sample_seconds", o.sample_seconds},
        {"quick", o.quick},
        {"threads", "1 = the whole device"},
        {"fma", fmt::format("{} blocks x {} threads, {} independent fmaf chains each", p.fma_blocks,
                            p.fma_threads_per_block, f.chains)},
        {"bytes_counting", "STREAM (read 1, copy 2, triad 3 arrays per pass)"},
        {"skipped", p.skipped},
        {"wall_seconds", p.seconds}}},
      {"compute_ceilings", json::array({{{"name", f.name},
                                         {"simd", f.simd},
                                         {"threads", 1},
                                         {"gflops", f.gflops},
                                         {"min", f.min},
                                         {"max", f.max},
                                         {"rounds", f.rounds},
                                         {"chains", f.chains},
                                         {"lanes", f.lanes}}})},
      {"memory_ceilings", memory},
      {"bandwidth_plateaus", bandwidth},
      {"sgemm", sgemm}};
}

}  // namespace nnperf
