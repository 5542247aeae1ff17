// `nnperf peaks`: measures this machine's FMA throughput, memory bandwidth and SGEMM rate, and
// writes peaks.json in cloudml-project1's layout (used by the roofline and every "% of peak").
#include "nnperf/analysis/peaks.h"

#include <fmt/format.h>

#include "command.h"
#include "nnperf/io/run_info.h"

#include "flags.h"
#include "nnperf/io/files.h"

namespace nnperf::app {
namespace {

struct Flags {
  PeakOptions o;
  std::string out = "peaks.json";
  std::string env;
};

int run(Flags& f) {
  // The destination is checked before a minute of measuring, not after.
  if (!f.out.empty()) ensure_writable_dir(std::filesystem::absolute(f.out).parent_path());
  const Peaks p = measure_peaks(f.o);
  fmt::print("simd: {}, threads: {}\n", p.simd, p.threads);
  fmt::print("fp32 FMA peak: {:.1f} GFLOP/s on 1 thread, {:.1f} GFLOP/s on {} threads",
             p.fma_gflops_1thread, p.fma_gflops, p.threads);
  fmt::print("\nSTREAM triad: {:.1f} GB/s\n", p.triad_gbps);
  if (p.sgemm_gflops_1thread > 0) {
    fmt::print(
        "OpenBLAS SGEMM {}^3: {:.1f} GFLOP/s on 1 thread ({:.0f}% of FMA peak), {:.1f} on {} "
        "threads\n",
        f.o.sgemm_n, p.sgemm_gflops_1thread, 100 * p.sgemm_gflops_1thread / p.fma_gflops_1thread,
        p.sgemm_gflops, p.threads);
  }
  if (!f.out.empty()) {
    write_json_atomic(f.out, peaks_to_json(p, f.env.empty() ? hostname() : f.env));
    fmt::print("wrote {}\n", f.out);
  }
  return 0;
}

const Registrar reg{Command{
    "peaks", 60, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Measure the machine's FMA peak, memory bandwidth and SGEMM rate; write peaks.json");
      auto f = std::make_shared<Flags>();
      sub.add_option("--threads", f->o.threads, "Threads (0 = all logical CPUs)")
          ->check(threads_count())
          ->capture_default_str();
      sub.add_option("--rounds", f->o.rounds, "Rounds per figure (median)")
          ->check(integer_in(1, 1000))
          ->capture_default_str();
      sub.add_option("--sgemm-n", f->o.sgemm_n, "SGEMM size (0 = skip)")
          ->check(integer_in(0, 65536))
          ->capture_default_str();
      sub.add_option("--out", f->out, "peaks.json path (empty = do not write)")
          ->capture_default_str();
      sub.add_option("--env", f->env,
                     "Environment name used as the key in peaks.json (default: hostname)");
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
