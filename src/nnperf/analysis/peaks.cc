// nnperf peaks: the measurements (FMA per SIMD width, the working-set sweep and its plateaus,
// the STREAM check, SGEMM), peaks.json (written by merging) and its reader. Timing: the steady
// clock around one OpenMP region per sample, each sample at least min_sample_seconds (passes
// are repeated inside the region for small working sets), median of `rounds` samples.
#include "nnperf/analysis/peaks.h"

#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>

#include "nnperf/core/clock.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/peak/peak.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

namespace fs = std::filesystem;

// Floats between the arrays of one sweep kernel: 5 cache lines, so equal-sized arrays never sit
// a multiple of 4 KiB apart (loads would falsely wait on stores to the same page offset).
constexpr int64_t kArrayPad = 80;
constexpr float kTriadScalar = 0.5f;

struct Stats3 {
  double median = 0, min = 0, max = 0;
};
Stats3 stats3(const std::vector<double>& v) {
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

std::vector<int> thread_counts(int all) {
  return all > 1 ? std::vector<int>{1, all} : std::vector<int>{1};
}

CacheSizes effective_caches(const PeakOptions& o) {
  if (o.caches.l1d > 0 || o.caches.l2 > 0 || o.caches.l3 > 0) return o.caches;
  const CpuInfo& cpu = cpu_info();
  return {cpu.l1d_bytes, cpu.l2_bytes, cpu.l3_bytes};
}

// CPU seconds the whole machine spent busy (every CPU; the hypervisor's steal included) and
// those this process used: the difference over the measurement is what other work took from it.
struct CpuSeconds {
  double machine = -1, self = 0;
};
CpuSeconds cpu_seconds() {
  std::ifstream in("/proc/stat");
  std::string label;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return {};
  }
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return {static_cast<double>(user + nice + system + irq + softirq + steal) / tick,
          sec(ru.ru_utime) + sec(ru.ru_stime)};
}

// ---- FMA ----

// Calibrates iterations so that one thread runs `seconds`.
int64_t calibrate_fma(const FmaKernel& k, double seconds) {
  float sink = 0;
  int64_t iters = 1 << 10;
  for (;;) {
    const int64_t t0 = now_ns();
    k.run(iters, &sink);
    const double sec = seconds_since(t0);
    if (sec > seconds / 4 || iters > (int64_t{1} << 36)) {
      return std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(iters) * seconds / std::max(sec, 1e-9)));
    }
    iters *= 4;
  }
}

// GFLOP/s of `threads` threads each running the loop `iters` times.
double fma_sample(const FmaKernel& k, int threads, int64_t iters) {
  std::vector<double> flops(static_cast<std::size_t>(threads), 0.0);
  std::vector<float> sinks(static_cast<std::size_t>(threads), 0.0f);
  const int64_t t0 = now_ns();
#pragma omp parallel num_threads(threads)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    flops[t] = k.run(iters, &sinks[t]);
  }
  const double sec = seconds_since(t0);
  double total = 0;
  for (double f : flops) total += f;
  volatile float keep = sinks[0];
  (void)keep;
  return total / sec * 1e-9;
}

// The rows measured for one simd width: those of the highest `needs` level this CPU may run.
std::vector<const FmaKernel*> fma_candidates(const std::string& simd) {
  const SimdLevel active = active_simd();
  std::vector<const FmaKernel*> rows;
  for (const FmaKernel& k : fma_kernels()) {
    if (simd != k.simd || k.needs > active) continue;
    if (!rows.empty() && k.needs > rows.front()->needs) rows.clear();
    if (rows.empty() || k.needs == rows.front()->needs) rows.push_back(&k);
  }
  return rows;
}

std::vector<std::string> fma_widths() {
  std::vector<std::string> widths;
  for (const FmaKernel& k : fma_kernels()) {
    if (k.needs <= active_simd() &&
        std::find(widths.begin(), widths.end(), k.simd) == widths.end()) {
      widths.push_back(k.simd);
    }
  }
  return widths;
}

// Tries every chain count on one thread (interleaved, `rounds` samples each) and returns the
// best row; the trials are appended to `trials`.
const FmaKernel* choose_chains(const std::vector<const FmaKernel*>& rows, int rounds,
                               double seconds, std::vector<FmaTrial>* trials) {
  std::vector<int64_t> iters;
  for (const FmaKernel* k : rows) iters.push_back(calibrate_fma(*k, seconds));
  std::vector<std::vector<double>> g(rows.size());
  for (int r = 0; r < rounds; ++r) {
    check_interrupt();
    for (std::size_t i = 0; i < rows.size(); ++i) g[i].push_back(fma_sample(*rows[i], 1, iters[i]));
  }
  std::size_t best = 0;
  std::vector<double> med;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    med.push_back(median(g[i]));
    if (trials != nullptr)
      trials->push_back({rows[i]->name, rows[i]->simd, rows[i]->chains, med[i]});
    if (med[i] > med[best]) best = i;
  }
  return rows[best];
}

FmaCeiling fma_ceiling(const FmaKernel& k, int threads, int rounds, double seconds) {
  const int64_t iters = calibrate_fma(k, seconds);
  std::vector<double> g;
  for (int r = 0; r < rounds; ++r) {
    check_interrupt();
    g.push_back(fma_sample(k, threads, iters));
  }
  const Stats3 s = stats3(g);
  return {k.name, k.simd, threads, k.lanes, k.chains, rounds, s.median, s.min, s.max};
}

// ---- Bandwidth sweep ----

struct SweepKernel {
  const char* name;
  int arrays;  // bytes counted per element = 4 x arrays (STREAM: no write-allocate)
  void (*run)(const BandwidthKernels& k, float* a, float* b, float* c, int64_t n, int64_t reps,
              float* sink);
};

constexpr SweepKernel kSweepKernels[] = {
    {"read", 1,
     [](const BandwidthKernels& k, float* a, float*, float*, int64_t n, int64_t reps, float* sink) {
       *sink += k.read(a, n, reps);
     }},
    {"copy", 2,
     [](const BandwidthKernels& k, float* a, float* b, float*, int64_t n, int64_t reps, float*) {
       k.copy(a, b, n, reps);
     }},
    {"triad", 3,
     [](const BandwidthKernels& k, float* a, float* b, float* c, int64_t n, int64_t reps, float*) {
       k.triad(a, b, c, kTriadScalar, n, reps);
     }},
};

struct SweepRun {
  const BandwidthKernels& k;
  const SweepKernel& kernel;
  float* base;
  int threads;
  int64_t n;  // floats per array, a multiple of k.block * threads

  int64_t bytes() const { return kernel.arrays * n * static_cast<int64_t>(sizeof(float)); }
  // Seconds for `reps` passes, each thread over its slice of every array: the wall time around
  // the parallel region, and in *busy the longest time one thread spent in the kernel (without
  // the wait for a sleeping thread to be scheduled, which on a loaded machine can take
  // milliseconds per region and would make calibration take 1 pass of 4 KiB for 1 ms of work).
  double time(int64_t reps, std::vector<float>& sinks, double* busy = nullptr) const {
    float* a = base;
    float* b = a + n + kArrayPad;
    float* c = b + n + kArrayPad;
    const int64_t chunk = n / threads;
    int64_t longest = 0;
    const int64_t t0 = now_ns();
#pragma omp parallel num_threads(threads) reduction(max : longest)
    {
      const int t = omp_get_thread_num();
      const int64_t off = t * chunk;
      const int64_t start = now_ns();
      kernel.run(k, a + off, b + off, c + off, chunk, reps, &sinks[static_cast<std::size_t>(t)]);
      longest = now_ns() - start;
    }
    const double wall = seconds_since(t0);
    if (busy != nullptr) *busy = static_cast<double>(longest) * 1e-9;
    return wall;
  }
  // Passes per sample so that each thread works at least `seconds` (also warms the caches and
  // the pages). The count found is timed twice more and the fastest of the three decides: one
  // time can include a preemption several milliseconds long.
  int64_t calibrate(double seconds, std::vector<float>& sinks) const {
    auto busy = [&](int64_t reps) {
      double b = 0;
      time(reps, sinks, &b);
      return b;
    };
    int64_t reps = 1;
    for (;;) {
      double sec = busy(reps);
      if (sec >= seconds) sec = std::min({sec, busy(reps), busy(reps)});
      if (sec >= seconds || reps >= (int64_t{1} << 40)) return reps;
      const double want = sec > 0 ? std::ceil(static_cast<double>(reps) * seconds * 1.1 / sec)
                                  : static_cast<double>(reps) * 64;
      reps = std::clamp(static_cast<int64_t>(want), reps * 2, reps * 64);
    }
  }
};

// Floats per array for a working set of about `ws` bytes: a multiple of block x threads, at least
// one block per thread.
int64_t floats_per_array(int64_t ws, int arrays, int64_t block, int threads) {
  const int64_t unit = block * threads;
  return std::max<int64_t>(1, ws / (arrays * static_cast<int64_t>(sizeof(float))) / unit) * unit;
}

std::vector<int64_t> sweep_sizes(int64_t lo, int64_t hi, int steps_per_octave) {
  std::vector<int64_t> sizes;
  for (int i = 0;; ++i) {
    const auto ws = static_cast<int64_t>(std::llround(
        static_cast<double>(lo) * std::exp2(static_cast<double>(i) / steps_per_octave)));
    if (ws >= hi) break;
    if (sizes.empty() || ws != sizes.back()) sizes.push_back(ws);
  }
  sizes.push_back(hi);  // 4 x LLC exactly, even when it is not on the grid
  return sizes;
}

void first_touch(float* p, int64_t n, float value) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) p[i] = value;
}

// ---- Cache windows ----

struct Window {
  const char* level;
  double lo, hi;
};

std::vector<Window> cache_windows(const CacheSizes& c, int threads) {
  struct Level {
    const char* name;
    double bytes;
  };
  std::vector<Level> levels;
  const auto t = static_cast<double>(threads);
  if (c.l1d > 0) levels.push_back({"L1", static_cast<double>(c.l1d) * t});  // private
  if (c.l2 > 0) levels.push_back({"L2", static_cast<double>(c.l2) * t});    // private
  if (c.l3 > 0) levels.push_back({"L3", static_cast<double>(c.l3)});        // shared
  std::vector<Window> w;
  double prev = 0, last = 0;
  for (const Level& l : levels) {
    if (l.bytes <= prev) continue;  // a level no larger than the one below adds no plateau
    w.push_back({l.name, 2 * prev, l.bytes / 2});
    prev = l.bytes;
    last = std::max(last, l.bytes);
  }
  w.push_back(
      {"DRAM", last > 0 ? 4 * last : 64.0 * (1 << 20), std::numeric_limits<double>::infinity()});
  return w;
}

int64_t default_max_working_set(const CacheSizes& c) {
  const int64_t llc = std::max({c.l1d, c.l2, c.l3});
  return llc > 0 ? 4 * llc : int64_t{256} << 20;
}

// ---- SGEMM ----

SgemmFigure sgemm_figure(const char* impl, int64_t n, int threads, int rounds, const Tensor& a,
                         const Tensor& b, Tensor& c) {
  set_threads(threads);
  const GemmShape shape{false, false, n, n, n};
  const auto ni = static_cast<int>(n);
  auto once = [&] {
    if (std::string_view(impl) == "blas") {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(), ni,
                  b.data(), ni, 0.0f, c.data(), ni);
    } else {
      gemm_run(find_gemm(impl, Device::kCpu),
               gemm_args(shape, a.data(), n, b.data(), n, c.data(), n, nullptr, threads));
    }
  };
  once();  // warm-up: packing buffers, thread pools, pages
  std::vector<double> g;
  for (int r = 0; r < rounds; ++r) {
    check_interrupt();
    const int64_t t0 = now_ns();
    once();
    g.push_back(shape.flops() / seconds_since(t0) * 1e-9);
  }
  const Stats3 s = stats3(g);
  return {impl, n, threads, s.median, s.min, s.max};
}

}  // namespace

PeakOptions quick_peak_options() {
  PeakOptions o;
  o.quick = true;
  o.rounds = 3;
  o.fma_seconds = 0.02;
  o.fma_trial_seconds = 0.005;
  o.steps_per_octave = 2;
  o.sgemm_n = 512;
  return o;
}

std::vector<BandwidthPlateau> detect_plateaus(std::span<const SweepPoint> sweep,
                                              const CacheSizes& caches) {
  // Groups in the order they first appear in the sweep.
  std::vector<std::pair<std::string, int>> groups;
  for (const SweepPoint& p : sweep) {
    const std::pair<std::string, int> g{p.kernel, p.threads};
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
  }
  std::vector<BandwidthPlateau> out;
  for (const auto& [kernel, threads] : groups) {
    for (const Window& w : cache_windows(caches, threads)) {
      BandwidthPlateau pl{w.level, kernel, threads};
      std::vector<double> medians;
      for (const SweepPoint& p : sweep) {
        const auto b = static_cast<double>(p.bytes);
        // 2% slack: sizes are rounded down to whole blocks per thread (4 x LLC lands just below).
        if (p.kernel != kernel || p.threads != threads || b < 0.98 * w.lo || b > 1.02 * w.hi) {
          continue;
        }
        medians.push_back(p.gbps);
        pl.min = medians.size() == 1 ? p.min : std::min(pl.min, p.min);
        pl.max = medians.size() == 1 ? p.max : std::max(pl.max, p.max);
        pl.lo = medians.size() == 1 ? p.bytes : std::min(pl.lo, p.bytes);
        pl.hi = std::max(pl.hi, p.bytes);
      }
      if (medians.empty()) continue;
      pl.gbps = median(medians);
      pl.sizes = static_cast<int>(medians.size());
      out.push_back(pl);
    }
  }
  return out;
}

double Peaks::best_fma(int t) const {
  double best = 0;
  for (const FmaCeiling& c : compute) {
    if (c.threads == t) best = std::max(best, c.gflops);
  }
  return best;
}

const BandwidthPlateau* Peaks::plateau(const std::string& level, const std::string& kernel,
                                       int t) const {
  for (const BandwidthPlateau& p : plateaus) {
    if (p.level == level && p.kernel == kernel && p.threads == t) return &p;
  }
  return nullptr;
}

double Peaks::peak_gbps() const {
  if (const BandwidthPlateau* p = plateau("DRAM", "triad", threads)) return p->gbps;
  double gbps = 0;
  int64_t largest = -1;
  for (const SweepPoint& s : sweep) {
    if (s.kernel == "triad" && s.threads == threads && s.bytes > largest) {
      largest = s.bytes;
      gbps = s.gbps;
    }
  }
  return gbps;
}

double measure_fma_peak(int threads, int rounds, double seconds_per_round) {
  const std::vector<std::string> widths = fma_widths();
  const FmaKernel* k =
      choose_chains(fma_candidates(widths.back()), rounds, seconds_per_round / 4, nullptr);
  return fma_ceiling(*k, std::max(1, threads), rounds, seconds_per_round).gflops;
}

namespace {

void check_peak_options(const PeakOptions& o) {
  if (o.rounds < 1) throw UsageError(fmt::format("--rounds {}: expected at least 1", o.rounds));
  if (o.sgemm_n < 0) {
    throw UsageError(fmt::format("--sgemm-n {}: expected 0 (skip) or a size", o.sgemm_n));
  }
  if (o.steps_per_octave < 1) {
    throw UsageError(fmt::format("--steps-per-octave {}: expected at least 1", o.steps_per_octave));
  }
}

// FMA: the best chain count per width on one thread, then those loops on 1 and all threads,
// round-robin (round r samples every width and thread count once), so a few seconds of other
// work on the machine lands in a few rounds of every figure rather than in all of one.
void measure_fma_ceilings(Peaks& p, const PeakOptions& o) {
  std::vector<const FmaKernel*> best;
  std::vector<int64_t> iters;
  for (const std::string& width : fma_widths()) {
    best.push_back(
        choose_chains(fma_candidates(width), o.rounds, o.fma_trial_seconds, &p.fma_trials));
    iters.push_back(calibrate_fma(*best.back(), o.fma_seconds));
  }
  const std::vector<int> ts = thread_counts(p.threads);
  std::vector<std::vector<double>> g(best.size() * ts.size());
  for (int r = 0; r < o.rounds; ++r) {
    check_interrupt();
    for (std::size_t i = 0; i < g.size(); ++i) {
      g[i].push_back(fma_sample(*best[i / ts.size()], ts[i % ts.size()], iters[i / ts.size()]));
    }
  }
  for (std::size_t i = 0; i < g.size(); ++i) {
    const FmaKernel& k = *best[i / ts.size()];
    const Stats3 s = stats3(g[i]);
    p.compute.push_back(
        {k.name, k.simd, ts[i % ts.size()], k.lanes, k.chains, o.rounds, s.median, s.min, s.max});
  }
}

// What the bandwidth sweep and the STREAM check share: the widest vectors' kernels (one level
// below would halve L1 bandwidth), the sweep's buffer, one sink per thread.
struct BandwidthBench {
  const BandwidthKernels& kernels;
  float* base;
  std::vector<float>& sinks;
  int64_t max_ws;
};

// Every point is calibrated first, then sampled round-robin like the FMA figures; a point's
// sample is preceded by one untimed pass that brings its arrays back into the caches the
// previous point evicted them from (not for DRAM-sized sets, which no cache keeps).
void measure_bandwidth_sweep(Peaks& p, const PeakOptions& o, const BandwidthBench& bench,
                             int64_t min_ws) {
  struct Point {
    SweepRun run;
    int64_t reps;
    std::vector<double> gbps;
  };
  std::vector<Point> points;
  const std::vector<int64_t> sizes = sweep_sizes(min_ws, bench.max_ws, o.steps_per_octave);
  for (int t : thread_counts(p.threads)) {
    for (int64_t ws : sizes) {
      for (const SweepKernel& sk : kSweepKernels) {
        const SweepRun run{bench.kernels, sk, bench.base, t,
                           floats_per_array(ws, sk.arrays, bench.kernels.block, t)};
        check_interrupt();
        points.push_back({run, run.calibrate(o.min_sample_seconds, bench.sinks), {}});
      }
    }
  }
  for (int r = 0; r < o.rounds; ++r) {
    check_interrupt();
    for (Point& pt : points) {
      check_interrupt();
      if (pt.run.bytes() < bench.max_ws / 2) pt.run.time(1, bench.sinks);
      const double sec = pt.run.time(pt.reps, bench.sinks);
      pt.gbps.push_back(static_cast<double>(pt.run.bytes() * pt.reps) / sec * 1e-9);
    }
  }
  for (const Point& pt : points) {
    const Stats3 s = stats3(pt.gbps);
    p.sweep.push_back({pt.run.kernel.name, pt.run.threads, pt.run.bytes(), s.median, s.min, s.max});
  }
  p.plateaus = detect_plateaus(p.sweep, p.caches);
}

// STREAM's plain double triad against ours at plateau pl's middle working set (DRAM: its
// smallest, 4 x LLC) on t threads, sample by sample in turn (the machine's noise hits both
// alike); d: room for three arrays of up to max_ws / 24 doubles.
StreamCheck stream_check(const Peaks& p, const PeakOptions& o, const BandwidthBench& bench,
                         const BandwidthPlateau& pl, int t, double* d) {
  std::vector<int64_t> in;
  for (const SweepPoint& s : p.sweep) {
    if (s.kernel == "triad" && s.threads == t && s.bytes >= pl.lo && s.bytes <= pl.hi) {
      in.push_back(s.bytes);
    }
  }
  const int64_t ws = pl.level == "DRAM" ? in.front() : in[in.size() / 2];
  const int64_t n = std::max<int64_t>(ws / 24 / 8, 1) * 8;
  double* a = d;
  double* b = a + n + 8;
  double* c = b + n + 8;
  for (int64_t i = 0; i < n; ++i) {
    b[i] = 2.0;
    c[i] = 0.5;
  }
  const SimdLevel level = active_simd();
  auto stream = [&](int64_t r) {
    const int64_t t0 = now_ns();
    stream_triad_f64(a, b, c, 3.0, n, r, t, level);
    return seconds_since(t0);
  };
  const SweepKernel& triad = kSweepKernels[2];
  const SweepRun ours{bench.kernels, triad, bench.base, t,
                      floats_per_array(ws, 3, bench.kernels.block, t)};
  auto time_ours = [&](int64_t r) { return ours.time(r, bench.sinks); };
  // The same bytes in both: STREAM runs as many passes as ours needs.
  const int64_t reps_ours = ours.calibrate(o.min_sample_seconds, bench.sinks);
  const int64_t reps_stream = reps_ours;
  // Each sample after one untimed pass of its own (the other's arrays evicted its own).
  const bool warm = ws < bench.max_ws / 2;
  std::vector<double> gs, go;
  for (int r = 0; r < o.rounds; ++r) {
    check_interrupt();
    if (warm) stream(1);
    gs.push_back(24.0 * static_cast<double>(n * reps_stream) / stream(reps_stream) * 1e-9);
    if (warm) time_ours(1);
    go.push_back(static_cast<double>(ours.bytes() * reps_ours) / time_ours(reps_ours) * 1e-9);
  }
  return StreamCheck{pl.level, t, 24 * n, median(gs), median(go)};
}

// The STREAM check at every triad plateau, the all-threads DRAM one last.
void measure_stream_checks(Peaks& p, const PeakOptions& o, const BandwidthBench& bench,
                           int64_t buffer_bytes) {
  Workspace stream_buf;
  stream_buf.reserve(static_cast<std::size_t>(buffer_bytes));
  auto* d = static_cast<double*>(stream_buf.data());
  const int64_t max_n = bench.max_ws / 24;
  first_touch(static_cast<float*>(stream_buf.data()), 2 * (3 * max_n + 64), 0.0f);
  std::vector<StreamCheck> dram;
  for (int t : thread_counts(p.threads)) {
    for (const BandwidthPlateau& pl : p.plateaus) {
      if (pl.kernel != "triad" || pl.threads != t) continue;
      const StreamCheck sc = stream_check(p, o, bench, pl, t, d);
      (pl.level == "DRAM" && t == p.threads ? dram : p.stream).push_back(sc);
    }
  }
  p.stream.insert(p.stream.end(), dram.begin(), dram.end());
}

// SGEMM: ours (blocked) first, then OpenBLAS, whose pool threads spin for a while after a call.
void measure_sgemm(Peaks& p, const PeakOptions& o) {
  if (o.sgemm_n <= 0) return;
  const int64_t n = o.sgemm_n;
  Tensor a(Shape{n, n}), b(Shape{n, n}), c(Shape{n, n});
  Rng rng(7);
  rng.fill_uniform({a.data(), static_cast<std::size_t>(a.numel())}, -1, 1);
  rng.fill_uniform({b.data(), static_cast<std::size_t>(b.numel())}, -1, 1);
  for (const char* impl : {"blocked", "blas"}) {
    for (int t : thread_counts(p.threads))
      p.sgemm.push_back(sgemm_figure(impl, n, t, o.rounds, a, b, c));
  }
}

}  // namespace

Peaks measure_peaks(const PeakOptions& o) {
  check_peak_options(o);
  const int64_t started = now_ns();
  const CpuSeconds cpu_start = cpu_seconds();
  Peaks p;
  p.options = o;
  p.caches = effective_caches(o);
  const int all = set_threads(o.threads);
  p.threads = all;
  p.simd = to_string(active_simd());
  const int64_t max_ws =
      o.max_working_set > 0 ? o.max_working_set : default_max_working_set(p.caches);
  p.options.max_working_set = max_ws;
  const int64_t min_ws = std::min(o.min_working_set, max_ws);

  // Memory first: SGEMM's three n x n matrices, then with them the sweep's arrays (about max_ws)
  // and the STREAM check's doubles (max_ws).
  const int64_t sweep_bytes = max_ws + 4 * (kArrayPad + 1024) * static_cast<int64_t>(sizeof(float));
  const int64_t gemm_bytes = 3 * o.sgemm_n * o.sgemm_n * static_cast<int64_t>(sizeof(float));
  const std::string sgemm_what =
      fmt::format("--sgemm-n {} (three {}x{} float matrices)", o.sgemm_n, o.sgemm_n, o.sgemm_n);
  check_memory(gemm_bytes, sgemm_what);
  check_memory(2 * sweep_bytes + gemm_bytes,
               fmt::format("the bandwidth sweep (two {} buffers: working sets up to 4 x the "
                           "last-level cache){}",
                           format_bytes(sweep_bytes), o.sgemm_n > 0 ? " and " + sgemm_what : ""));

  measure_fma_ceilings(p, o);
  Workspace sweep_buf;
  sweep_buf.reserve(static_cast<std::size_t>(sweep_bytes));
  float* base = static_cast<float*>(sweep_buf.data());
  first_touch(base, sweep_bytes / static_cast<int64_t>(sizeof(float)), 1.0f);
  std::vector<float> sinks(static_cast<std::size_t>(all), 0.0f);
  const BandwidthBench bench{bandwidth_kernels(active_simd()), base, sinks, max_ws};
  measure_bandwidth_sweep(p, o, bench, min_ws);
  measure_stream_checks(p, o, bench, sweep_bytes);
  measure_sgemm(p, o);
  set_threads(all);
  volatile float keep = sinks[0];
  (void)keep;
  p.seconds = seconds_since(started);
  const CpuSeconds cpu_end = cpu_seconds();
  if (cpu_start.machine >= 0 && cpu_end.machine >= 0) {
    p.other_cpu_seconds =
        std::max(0.0, (cpu_end.machine - cpu_start.machine) - (cpu_end.self - cpu_start.self));
  }
  return p;
}

// ---- peaks.json ----

namespace {

using nlohmann::json;

json compute_json(const Peaks& p) {
  json compute = json::array();
  for (const FmaCeiling& c : p.compute) {
    compute.push_back({{"name", c.name},
                       {"simd", c.simd},
                       {"threads", c.threads},
                       {"gflops", c.gflops},
                       {"min", c.min},
                       {"max", c.max},
                       {"rounds", c.rounds},
                       {"chains", c.chains},
                       {"lanes", c.lanes}});
  }
  return compute;
}

json plateau_json(const BandwidthPlateau& pl) {
  return json{{"level", pl.level},
              {"kernel", pl.kernel},
              {"threads", pl.threads},
              {"gbps", pl.gbps},
              {"min", pl.min},
              {"max", pl.max},
              {"working_set_bytes", {pl.lo, pl.hi}},
              {"sizes", pl.sizes}};
}

json sweep_json(const Peaks& p) {
  json sweep = json::array();
  for (const SweepPoint& s : p.sweep) {
    sweep.push_back({{"kernel", s.kernel},
                     {"threads", s.threads},
                     {"bytes", s.bytes},
                     {"gbps", s.gbps},
                     {"min", s.min},
                     {"max", s.max}});
  }
  return sweep;
}

// Every STREAM check, and the DRAM one on all threads (null when none ran).
std::pair<json, json> stream_json(const Peaks& p) {
  json checks = json::array();
  json stream_dram = nullptr;
  for (const StreamCheck& s : p.stream) {
    const json j{{"level", s.level},
                 {"threads", s.threads},
                 {"working_set_bytes", s.working_set_bytes},
                 {"gbps", s.stream_gbps},
                 {"ours_gbps", s.ours_gbps},
                 {"ratio", s.ratio()}};
    checks.push_back(j);
    if (s.level == "DRAM" && s.threads == p.threads) stream_dram = j;
  }
  return {checks, stream_dram};
}

json sgemm_json(const Peaks& p) {
  json sgemm = json::array();
  for (const SgemmFigure& s : p.sgemm) {
    const double peak = p.best_fma(s.threads);
    sgemm.push_back({{"impl", s.impl},
                     {"n", s.n},
                     {"threads", s.threads},
                     {"gflops", s.gflops},
                     {"min", s.min},
                     {"max", s.max},
                     {"percent_of_fma_peak", peak > 0 ? 100 * s.gflops / peak : 0.0}});
  }
  return sgemm;
}

json method_json(const Peaks& p) {
  json trials = json::array();
  for (const FmaTrial& t : p.fma_trials) {
    trials.push_back(
        {{"name", t.name}, {"simd", t.simd}, {"chains", t.chains}, {"gflops_1thread", t.gflops}});
  }
  const PeakOptions& o = p.options;
  return {
      {"rounds", o.rounds},
      {"statistic", "median"},
      {"bytes_counting", "STREAM (no write-allocate)"},
      {"quick", o.quick},
      {"threads", p.threads},
      {"fma_seconds_per_sample", o.fma_seconds},
      {"fma_trials", trials},
      {"bandwidth_simd", p.simd},
      {"min_sample_seconds", o.min_sample_seconds},
      {"steps_per_octave", o.steps_per_octave},
      {"working_set_range", {std::min(o.min_working_set, o.max_working_set), o.max_working_set}},
      {"working_set", "bytes of every array the kernel touches (read 1, copy 2, triad 3)"},
      {"plateau_rule",
       "L1: ws <= L1/2; Ln: 2 x L(n-1) <= ws <= Ln/2; DRAM: ws >= 4 x the last level; L1d and "
       "L2 count once per thread, L3 once; gbps = median of the per-size medians, min/max over "
       "every sample"},
      {"timing", "steady clock around one OpenMP region per sample; passes repeated inside it"},
      {"wall_seconds", p.seconds},
      {"other_processes_cpu_seconds",
       p.other_cpu_seconds >= 0 ? json(p.other_cpu_seconds) : json(nullptr)}};
}

// The headline figures: FMA, triad bandwidth and OpenBLAS SGEMM on 1 and all threads.
json measured_json(const Peaks& p, const CpuInfo& cpu) {
  auto sgemm_at = [&](const char* impl, int t) {
    for (const SgemmFigure& s : p.sgemm) {
      if (s.impl == impl && s.threads == t) return s.gflops;
    }
    return 0.0;
  };
  const double fma1 = p.best_fma(1);
  return {{"threads", p.threads},
          {"simd", p.simd},
          {"fma_gflops_per_s_1thread", fma1},
          {"fma_gflops_per_s", p.best_fma(p.threads)},
          {"triad_gbytes_per_s", p.peak_gbps()},
          {"sgemm_gflops_per_s_1thread", sgemm_at("blas", 1)},
          {"sgemm_gflops_per_s", sgemm_at("blas", p.threads)},
          {"flops_per_cycle_at_nominal_clock",
           cpu.nominal_mhz > 0 ? fma1 / (cpu.nominal_mhz * 1e-3) : 0.0}};
}

}  // namespace

nlohmann::json peaks_env_json(const Peaks& p) {
  const CpuInfo& cpu = cpu_info();
  json simd = json::array();
  for (const FmaCeiling& c : p.compute) {
    if (std::find(simd.begin(), simd.end(), c.simd) == simd.end()) simd.push_back(c.simd);
  }
  json memory = json::array(), plateaus = json::array();
  for (const BandwidthPlateau& pl : p.plateaus) {
    if (pl.kernel == "triad") memory.push_back(plateau_json(pl));
    plateaus.push_back(plateau_json(pl));
  }
  auto [checks, stream_dram] = stream_json(p);
  return {
      {"description", fmt::format("{}, {} thread(s), {} kernels (measured by nnperf peaks)",
                                  cpu.model_name, p.threads, p.simd)},
      {"peak_gbps", p.peak_gbps()},
      {"peak_gflops", {{"fp32", p.best_fma(p.threads)}}},
      {"machine",
       {{"cpu", cpu.model_name},
        {"logical_cpus", cpu.logical_cpus},
        {"simd", simd},
        {"caches", {{"L1d", p.caches.l1d}, {"L2", p.caches.l2}, {"L3", p.caches.l3}}},
        {"nominal_mhz", cpu.nominal_mhz}}},
      {"method", method_json(p)},
      {"compute_ceilings", compute_json(p)},
      {"memory_ceilings", memory},
      {"bandwidth_plateaus", plateaus},
      {"bandwidth_sweep", sweep_json(p)},
      {"stream_triad", stream_dram},
      {"stream_checks", checks},
      {"sgemm", sgemm_json(p)},
      {"measured", measured_json(p, cpu)}};
}

nlohmann::json peaks_to_json(const Peaks& p, const std::string& env) {
  return {{env, peaks_env_json(p)}};
}

namespace {

nlohmann::json read_mergeable(const fs::path& path) {
  if (!fs::exists(path)) return nlohmann::json::object();
  nlohmann::json doc;
  try {
    doc = read_json(path);
  } catch (const Error& e) {
    throw Error(fmt::format("{} (left as it is: fix or move it, or pass another --out)", e.what()));
  }
  if (!doc.is_object()) {
    fail(
        "{}: expected an object of environments ({{env: {{description, peak_gbps, ...}}}}) "
        "(left as it is: fix or move it, or pass another --out)",
        path.string());
  }
  // Merging into another program's JSON would add an environment to it and keep its keys.
  for (const auto& [env, entry] : doc.items()) {
    if (!entry.is_object() || (!entry.contains("peak_gbps") && !entry.contains("peak_gflops"))) {
      fail("{}: '{}' is not an environment of ceilings (no peak_gbps or peak_gflops): not a peaks.json "
           "(left as it is: pass another --out)",
           path.string(), env);
    }
  }
  return doc;
}

}  // namespace

void check_peaks_json_mergeable(const fs::path& path) { (void)read_mergeable(path); }

void merge_peaks_json(const fs::path& path, const std::string& env, const nlohmann::json& entry) {
  nlohmann::json doc = read_mergeable(path);
  doc[env] = entry;
  write_json_atomic(path, doc);
}

// ---- Reading ----

namespace {

// The environment to read: `env` when given (it must exist), else the only one, else the one
// named after this host.
std::string choose_env(const nlohmann::json& doc, const std::string& env, const std::string& src) {
  if (!doc.is_object()) {
    fail(
        "{}: expected an object of environments ({{env: {{description, peak_gbps, "
        "peak_gflops}}}})",
        src);
  }
  if (doc.empty()) fail("{}: no environments in the file", src);
  std::vector<std::string> envs;
  for (const auto& [key, value] : doc.items()) envs.push_back(key);
  auto list = [&] {
    std::string s;
    for (const std::string& e : envs) s += (s.empty() ? "" : ", ") + quote_input(e);
    return s;
  };
  if (!env.empty()) {
    if (!doc.contains(env)) {
      throw UsageError(
          fmt::format("{}: no environment '{}'; the file has: {}", src, quote_input(env), list()));
    }
    return env;
  }
  if (envs.size() == 1) return envs.front();
  if (doc.contains(hostname())) return hostname();
  throw UsageError(
      fmt::format("{}: {} environments and none is named after this host ('{}'); "
                  "name one of: {}",
                  src, envs.size(), quote_input(hostname()), list()));
}

// The optional compute_ceilings and memory_ceilings arrays of environment `e`.
void read_ceiling_arrays(const nlohmann::json& e, const JsonPath& where, MachineCeilings& m) {
  auto array_of_objects = [&](const char* key) -> const nlohmann::json* {
    const auto it = e.find(key);
    if (it == e.end() || it->is_null()) return nullptr;
    if (!it->is_array()) fail("{}: expected an array", where.at(key).str());
    return &*it;
  };
  auto element = [&](const char* key, std::size_t i) { return where.at(key).item(i); };
  if (const nlohmann::json* cc = array_of_objects("compute_ceilings")) {
    for (std::size_t i = 0; i < cc->size(); ++i) {
      const nlohmann::json& c = (*cc)[i];
      const JsonPath at = element("compute_ceilings", i);
      m.compute.push_back({json_string(c, "name", at), json_string(c, "simd", at),
                           static_cast<int>(json_integer(c, "threads", at)),
                           json_number(c, "gflops", at)});
    }
  }
  if (const nlohmann::json* mc = array_of_objects("memory_ceilings")) {
    for (std::size_t i = 0; i < mc->size(); ++i) {
      const nlohmann::json& c = (*mc)[i];
      const JsonPath at = element("memory_ceilings", i);
      MemoryCeiling mem{json_string(c, "level", at),
                        static_cast<int>(json_integer(c, "threads", at)),
                        json_number(c, "gbps", at)};
      if (c.contains("working_set_bytes")) {
        const nlohmann::json& ws = c["working_set_bytes"];
        if (!ws.is_array() || ws.size() != 2 || !ws[0].is_number() || !ws[1].is_number()) {
          fail("{}: expected [lo, hi] in bytes", at.at("working_set_bytes").str());
        }
        mem.working_set_lo = ws[0].get<double>();
        mem.working_set_hi = ws[1].get<double>();
      }
      m.memory.push_back(mem);
    }
  }
}

// Rates beyond these are typos or corruption, not a machine: no device reaches a PFLOP/s of FP32
// or a PB/s of bandwidth (an H100's FP32 peak is about 67 TFLOP/s).
constexpr double kMaxPlausibleGflops = 1e6;
constexpr double kMaxPlausibleGbps = 1e6;

// A rate that is positive, finite and plausible.
double plausible_rate(double v, double max, const char* unit, const JsonPath& at) {
  if (!(v > 0) || !std::isfinite(v)) fail("{}: expected a positive number, found {}", at.str(), v);
  if (v > max) fail("{}: {} {} is more than any machine reaches (at most {:g})", at.str(), v, unit, max);
  return v;
}

// The ceiling arrays agree with themselves and with the headline peaks: rates plausible, thread
// counts positive, working sets ordered, and no compute ceiling at the file's largest thread
// count above peak_gflops.fp32 (which `peaks` writes as the best of those; a one-thread ceiling
// may exceed it on a loaded machine).
void check_ceilings(const MachineCeilings& m, const JsonPath& where) {
  int most_threads = 0;
  for (const ComputeCeiling& c : m.compute) most_threads = std::max(most_threads, c.threads);
  for (std::size_t i = 0; i < m.compute.size(); ++i) {
    const ComputeCeiling& c = m.compute[i];
    const JsonPath at = where.at("compute_ceilings").item(i);
    plausible_rate(c.gflops, kMaxPlausibleGflops, "GFLOP/s", at.at("gflops"));
    if (c.threads < 1) fail("{}: expected at least 1, found {}", at.at("threads").str(), c.threads);
    if (c.threads == most_threads && c.gflops > 1.05 * m.peak_gflops_fp32) {
      fail("{}: {:.1f} GFLOP/s is above peak_gflops.fp32 ({:.1f}): the file contradicts itself",
           at.at("gflops").str(), c.gflops, m.peak_gflops_fp32);
    }
  }
  for (std::size_t i = 0; i < m.memory.size(); ++i) {
    const MemoryCeiling& c = m.memory[i];
    const JsonPath at = where.at("memory_ceilings").item(i);
    plausible_rate(c.gbps, kMaxPlausibleGbps, "GB/s", at.at("gbps"));
    if (c.threads < 1) fail("{}: expected at least 1, found {}", at.at("threads").str(), c.threads);
    if (!(c.working_set_lo >= 0) || !(c.working_set_hi >= c.working_set_lo) || !std::isfinite(c.working_set_hi)) {
      fail("{}: expected [lo, hi] with 0 <= lo <= hi, found [{}, {}]", at.at("working_set_bytes").str(),
           c.working_set_lo, c.working_set_hi);
    }
  }
}

}  // namespace

MachineCeilings ceilings_from_json(const nlohmann::json& doc, const std::string& env,
                                   const std::string& path_for_messages) {
  const std::string& src = path_for_messages;
  const std::string chosen = choose_env(doc, env, src);
  const JsonPath root{src, ""};
  const nlohmann::json& e = json_object(doc, chosen, root);
  const JsonPath where = root.at(chosen);
  MachineCeilings m;
  m.env = chosen;
  if (e.contains("description") && e["description"].is_string()) {
    m.description = e["description"].get<std::string>();
  }
  m.peak_gbps = plausible_rate(json_number(e, "peak_gbps", where), kMaxPlausibleGbps, "GB/s",
                               where.at("peak_gbps"));
  const nlohmann::json& pg = json_object(e, "peak_gflops", where);
  const JsonPath pg_at = where.at("peak_gflops");
  m.peak_gflops_fp32 = plausible_rate(json_number(pg, "fp32", pg_at), kMaxPlausibleGflops, "GFLOP/s",
                                      pg_at.at("fp32"));
  for (const auto& [precision, value] : pg.items()) {
    if (value.is_number()) {
      m.peak_gflops[precision] =
          plausible_rate(value.get<double>(), kMaxPlausibleGflops, "GFLOP/s", pg_at.at(precision));
    }
  }
  read_ceiling_arrays(e, where, m);
  check_ceilings(m, where);
  return m;
}

MachineCeilings read_peaks_json(const fs::path& path, const std::string& env) {
  return ceilings_from_json(read_json(path), env, path.string());
}

// Bandwidth against working set, one curve per kernel x threads, cache sizes marked.
PlotResult peaks_bandwidth_plot(const nlohmann::json& entry, const JsonPath& where,
                                const std::filesystem::path& stem) {
  if (!has_bandwidth_sweep(entry)) fail("{}: no bandwidth_sweep to plot", where.str());
  const std::string& env = where.path;
  // An optional member that must be an object when present.
  const auto member = [](const nlohmann::json& obj, const char* key, const JsonPath& at) {
    if (!obj.contains(key)) return nlohmann::json::object();
    return json_object(obj, key, at);
  };
  const nlohmann::json method = member(entry, "method", where);
  PlotSpec spec;
  spec.title = fmt::format("Bandwidth vs working set ({}{}, STREAM byte counting)", env,
                           method.contains("bandwidth_simd")
                               ? ", " + json_string(method, "bandwidth_simd", where.at("method"))
                               : std::string());
  spec.xlabel = "working set (KiB)";
  spec.ylabel = "GB/s";
  spec.logx = true;
  spec.logy = true;  // L1 on all threads and DRAM on one differ by 20x
  const nlohmann::json& sweep = entry["bandwidth_sweep"];
  for (std::size_t i = 0; i < sweep.size(); ++i) {  // size order per kernel x threads
    const nlohmann::json& s = sweep[i];
    const JsonPath at = where.at("bandwidth_sweep").item(i);
    if (!s.is_object()) fail("{}: expected an object", at.str());
    const std::string kernel = json_string(s, "kernel", at);
    const int64_t threads = json_integer(s, "threads", at);
    const std::string title =
        fmt::format("{}, {} thread{}", kernel, threads, threads > 1 ? "s" : "");
    auto it = std::find_if(spec.series.begin(), spec.series.end(),
                           [&](const Series& x) { return x.title == title; });
    if (it == spec.series.end()) {
      Series added;
      added.title = title;
      it = spec.series.insert(spec.series.end(), added);
    }
    it->x.push_back(static_cast<double>(json_integer(s, "bytes", at)) / 1024);
    it->y.push_back(json_number(s, "gbps", at));
  }
  const nlohmann::json caches =
      member(member(entry, "machine", where), "caches", where.at("machine"));
  const std::tuple<const char*, const char*> marks[] = {
      {"L1d", "per core"}, {"L2", "per core"}, {"L3", ""}};
  for (const auto& [name, scope] : marks) {
    const int64_t bytes =
        caches.contains(name) ? json_integer(caches, name, where.at("machine.caches")) : 0;
    if (bytes > 0) {
      spec.x_marks.push_back(
          {static_cast<double>(bytes) / 1024,
           fmt::format("{} {}{}{}", name, format_bytes(bytes), *scope ? " " : "", scope)});
    }
  }
  return render_plot(spec, stem);
}

}  // namespace nnperf
