// `nnperf peaks`: measures this machine's ceilings (FMA per SIMD width, bandwidth per cache level
// and DRAM with a STREAM check, SGEMM) and merges them into peaks.json under this machine's env
// key, in cloudml-project1's layout plus the ceilings (read back by analysis/peaks.h); draws
// bandwidth against working-set size beside it. `--device cuda` measures the GPU's ceilings
// (analysis/gpu_peaks.h) into its own env (default <hostname>-cuda).
#include "nnperf/analysis/peaks.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "command.h"
#include "flags.h"
#include "nnperf/analysis/gpu_peaks.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/io/files.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"

namespace nnperf::app {
namespace {

namespace fs = std::filesystem;

struct Flags {
  PeakOptions o;
  bool quick = false;
  std::string out = "peaks.json";
  std::string env;
  std::string device = "cpu";
  // Flags given explicitly keep their value under --quick.
  CLI::Option* rounds = nullptr;
  CLI::Option* sgemm_n = nullptr;
  CLI::Option* steps = nullptr;
};

std::string kib(int64_t bytes) { return format_bytes(bytes); }

void print_summary(const Peaks& p) {
  const std::vector<int> ts = p.threads > 1 ? std::vector<int>{1, p.threads} : std::vector<int>{1};
  fmt::print("caches: L1d {}, L2 {}, L3 {} (per core L1d/L2; {} threads)\n", kib(p.caches.l1d),
             kib(p.caches.l2), kib(p.caches.l3), p.threads);
  fmt::print("\nFMA (fp32 GFLOP/s, median of {}; min-max)\n", p.options.rounds);
  fmt::print("  {:<16} {:>6}", "loop", "chains");
  for (int t : ts) fmt::print(" {:>22}", fmt::format("{} thread{}", t, t > 1 ? "s" : ""));
  fmt::print("\n");
  for (std::size_t i = 0; i < p.compute.size();) {
    const FmaCeiling& c = p.compute[i];
    fmt::print("  {:<16} {:>6}", c.name, c.chains);
    for (; i < p.compute.size() && p.compute[i].simd == c.simd; ++i) {
      const FmaCeiling& x = p.compute[i];
      fmt::print(" {:>22}", fmt::format("{:.1f} ({:.1f}-{:.1f})", x.gflops, x.min, x.max));
    }
    fmt::print("\n");
  }
  fmt::print("\nBandwidth plateaus (GB/s, STREAM byte counting, median of the sizes inside)\n");
  fmt::print("  {:<5} {:>7}", "level", "threads");
  for (const char* k : {"read", "copy", "triad"}) fmt::print(" {:>8}", k);
  fmt::print("  {:<22} {:>10} {:>6}\n", "triad working sets", "STREAM", "ours/S");
  for (const char* level : {"L1", "L2", "L3", "DRAM"}) {
    for (int t : ts) {
      const BandwidthPlateau* triad = p.plateau(level, "triad", t);
      if (triad == nullptr) continue;
      fmt::print("  {:<5} {:>7}", level, t);
      for (const char* k : {"read", "copy", "triad"}) {
        const BandwidthPlateau* pl = p.plateau(level, k, t);
        fmt::print(" {:>8}", pl ? fmt::format("{:.1f}", pl->gbps) : "-");
      }
      fmt::print("  {:<22}", fmt::format("{}-{}", kib(triad->lo), kib(triad->hi)));
      for (const StreamCheck& s : p.stream) {
        if (s.level == level && s.threads == t) {
          fmt::print(" {:>10} {:>6.2f}", fmt::format("{:.1f}", s.stream_gbps), s.ratio());
        }
      }
      fmt::print("\n");
    }
  }
  fmt::print(
      "  (STREAM: the plain double triad loop at one working set of the plateau, "
      "interleaved with ours there)\n");
  if (!p.sgemm.empty()) {
    fmt::print("\nSGEMM {}^3 (GFLOP/s, % of the best FMA loop on as many threads)\n",
               p.sgemm.front().n);
    for (const SgemmFigure& s : p.sgemm) {
      const double peak = p.best_fma(s.threads);
      fmt::print("  {:<8} {} thread{}: {:7.1f}  ({:.0f}%)\n", s.impl, s.threads,
                 s.threads > 1 ? "s" : " ", s.gflops, peak > 0 ? 100 * s.gflops / peak : 0.0);
    }
  }
  fmt::print("\npeak_gflops fp32 {:.1f}, peak_gbps {:.1f} ({} threads); measured in {:.1f} s\n",
             p.best_fma(p.threads), p.peak_gbps(), p.threads, p.seconds);
  if (p.other_cpu_seconds > 0.1 * p.seconds) {
    warn(
        "other processes kept {:.1f} of {} CPUs busy on average during the measurement: the "
        "figures (above all on {} threads) are low; measure again on an idle machine",
        p.other_cpu_seconds / p.seconds, cpu_info().logical_cpus, p.threads);
  }
}

void plot_sweep(const nlohmann::json& entry, const fs::path& peaks_json, const std::string& env) {
  const fs::path stem = peaks_bandwidth_stem(peaks_json, env);
  const PlotResult r = peaks_bandwidth_plot(entry, JsonPath{peaks_json.string(), env}, stem);
  if (r.rendered) {
    fmt::print("wrote {}.svg and .png\n", stem.string());
  } else {
    fmt::print("plot not rendered ({}); data and script in {}.dat/.gp\n", r.message, stem.string());
  }
}

void print_gpu_summary(const GpuPeaks& p) {
  fmt::print("{} ({}, {} SMs, {} MHz, L2 {})\n", p.device.name, p.fma.simd, p.device.multiprocessors,
             p.device.clock_mhz, kib(p.device.l2_bytes));
  fmt::print("\nFMA (fp32 GFLOP/s, median of {}; min-max): {:.0f} ({:.0f}-{:.0f}), {} threads x {} "
             "chains\n",
             p.options.rounds, p.fma.gflops, p.fma.min, p.fma.max, p.fma.lanes, p.fma.chains);
  fmt::print("\nBandwidth (GB/s, STREAM byte counting)\n  {:<5} {:>8} {:>8} {:>8}  working set\n",
             "level", "read", "copy", "triad");
  for (const char* level : {"L2", "DRAM"}) {
    std::string row;
    int64_t ws = 0;
    for (const BandwidthPlateau& b : p.bandwidth) {
      if (b.level != level) continue;
      row += fmt::format(" {:>8.0f}", b.gbps);
      ws = b.hi;
    }
    if (!row.empty()) fmt::print("  {:<5}{}  {} (triad)\n", level, row, kib(ws));
  }
  for (const SgemmFigure& s : p.sgemm) {
    fmt::print("\nSGEMM {}^3 {:<7} {:8.0f} GFLOP/s ({:.0f}% of the FMA ceiling)", s.n, s.impl,
               s.gflops, 100 * s.gflops / p.fma.gflops);
  }
  fmt::print("\n");
  for (const std::string& why : p.skipped) fmt::print("not measured: {}\n", why);
  fmt::print("\npeak_gflops fp32 {:.0f}, peak_gbps {:.0f}; measured in {:.1f} s\n", p.fma.gflops,
             p.peak_gbps(), p.seconds);
}

int run_cuda(Flags& f) {
  if (f.o.threads != 0 || f.steps->count() > 0) {
    throw UsageError("--threads and --steps-per-octave are CPU options; not with --device cuda");
  }
  GpuPeakOptions o = f.quick ? quick_gpu_peak_options() : GpuPeakOptions{};
  if (f.rounds->count() > 0) o.rounds = f.o.rounds;
  if (f.sgemm_n->count() > 0) o.sgemm_n = f.o.sgemm_n;
  if (!f.out.empty()) {
    ensure_writable_dir(fs::absolute(f.out).parent_path(), "--out's folder");
    check_output_file(f.out, "--out");
    check_peaks_json_mergeable(f.out);
  }
  const GpuPeaks p = measure_gpu_peaks(o);
  print_gpu_summary(p);
  if (!f.out.empty()) {
    const std::string env = f.env.empty() ? hostname() + "-cuda" : f.env;
    merge_peaks_json(f.out, env, gpu_peaks_env_json(p));
    fmt::print("wrote {} (env '{}')\n", f.out, env);
  }
  return 0;
}

int run(Flags& f) {
  if (f.device == "cuda") return run_cuda(f);
  if (f.quick) {
    PeakOptions q = quick_peak_options();
    q.threads = f.o.threads;
    if (f.rounds->count() > 0) q.rounds = f.o.rounds;
    if (f.sgemm_n->count() > 0) q.sgemm_n = f.o.sgemm_n;
    if (f.steps->count() > 0) q.steps_per_octave = f.o.steps_per_octave;
    f.o = q;
  }
  // The destination is checked before a minute of measuring, not after: a folder we can write
  // and an existing peaks.json we can merge into (a corrupt one is refused and left alone).
  if (!f.out.empty()) {
    ensure_writable_dir(fs::absolute(f.out).parent_path(), "--out's folder");
    check_output_file(f.out, "--out");
    check_peaks_json_mergeable(f.out);
  }
  const Peaks p = measure_peaks(f.o);
  print_summary(p);
  if (!f.out.empty()) {
    const std::string env = f.env.empty() ? hostname() : f.env;
    const nlohmann::json entry = peaks_env_json(p);
    merge_peaks_json(f.out, env, entry);
    fmt::print("wrote {} (env '{}')\n", f.out, env);
    // peaks.json, env e -> peaks_bandwidth_e.svg/.png (peaks_end.json -> peaks_end_bandwidth_e).
    plot_sweep(entry, fs::absolute(f.out), env);
  }
  return 0;
}

const Registrar reg{Command{
    "peaks", 60, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Measure the machine's ceilings: FMA per SIMD width, bandwidth per cache level and DRAM "
          "(with a STREAM check), SGEMM; merge them into peaks.json");
      auto f = std::make_shared<Flags>();
      sub.add_option("--threads", f->o.threads, "Threads (0 = all logical CPUs)")
          ->check(threads_count())
          ->capture_default_str();
      f->rounds = sub.add_option("--rounds", f->o.rounds, "Rounds per figure (median)")
                      ->check(integer_in(1, 1000))
                      ->capture_default_str();
      f->sgemm_n = sub.add_option("--sgemm-n", f->o.sgemm_n,
                                  "SGEMM size (0 = skip; --device cuda: default 4096)")
                       ->check(integer_in(0, 65536))
                       ->capture_default_str();
      f->steps = sub.add_option("--steps-per-octave", f->o.steps_per_octave,
                                "Working-set sizes per doubling in the bandwidth sweep")
                     ->check(integer_in(1, 16))
                     ->capture_default_str();
      sub.add_flag("--quick", f->quick,
                   "A few seconds: 3 rounds, 2 sizes per octave, 512^3 SGEMM, short FMA samples; "
                   "--device cuda: 5 ms samples, 128 MiB arrays, 2048^3 SGEMM (flags given "
                   "explicitly still apply)");
      sub.add_option("--out", f->out,
                     "peaks.json path (empty = do not write); other envs in it are kept")
          ->capture_default_str();
      sub.add_option("--env", f->env,
                     "Environment name used as the key in peaks.json (default: hostname, or "
                     "hostname-cuda with --device cuda)");
      sub.add_option("--device", f->device,
                     "cpu, or cuda: the GPU's FMA throughput, L2 and device-memory bandwidth, "
                     "cuBLAS and our SGEMM (--rounds, --sgemm-n, --quick, --out, --env apply)")
          ->check(CLI::IsMember({"cpu", "cuda"}))
          ->capture_default_str();
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
