#include "nnperf/analysis/peaks.h"

#include <cblas.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"
#include "nnperf/core/threads.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/peak/peak.h"
#include "nnperf/profile/clock.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

// GFLOP/s of the FMA loop on `threads` threads: every thread runs the same number of rounds.
double fma_gflops(SimdLevel level, int threads, int64_t iters) {
  std::vector<double> flops(static_cast<std::size_t>(threads), 0.0);
  std::vector<float> sinks(static_cast<std::size_t>(threads), 0.0f);
  const int64_t t0 = now_ns();
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    flops[static_cast<std::size_t>(t)] =
        fma_peak_loop(level, iters, &sinks[static_cast<std::size_t>(t)]);
  }
  const double sec = seconds_since(t0);
  double total = 0;
  for (double f : flops) total += f;
  volatile float keep = sinks[0];
  (void)keep;
  return total / sec * 1e-9;
}

double sgemm_gflops(int64_t n, int threads) {
  set_threads(threads);
  Tensor a(Shape{n, n}), b(Shape{n, n}), c(Shape{n, n});
  Rng rng(7);
  rng.fill_uniform({a.data(), static_cast<std::size_t>(a.numel())}, -1, 1);
  rng.fill_uniform({b.data(), static_cast<std::size_t>(b.numel())}, -1, 1);
  const auto ni = static_cast<int>(n);
  std::vector<double> g;
  for (int r = 0; r < 6; ++r) {
    check_interrupt();
    const int64_t t0 = now_ns();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data(), ni, b.data(),
                ni, 0.0f, c.data(), ni);
    const double sec = seconds_since(t0);
    if (r > 0)
      g.push_back(2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
                  sec * 1e-9);
  }
  return median(g);
}

}  // namespace

Peaks measure_peaks(const PeakOptions& options) {
  PeakOptions o = options;
  if (o.quick) {
    o.rounds = std::min(o.rounds, 3);
    o.seconds_per_round = 0.03;
    o.triad_bytes = 3 * (int64_t{32} << 20);
    o.sgemm_n = std::min<int64_t>(o.sgemm_n, 512);
  }
  if (o.rounds < 1) throw UsageError(fmt::format("--rounds {}: expected at least 1", o.rounds));
  if (o.sgemm_n < 0)
    throw UsageError(fmt::format("--sgemm-n {}: expected 0 (skip) or a size", o.sgemm_n));
  if (o.sgemm_n > 0) {
    check_memory(
        3 * o.sgemm_n * o.sgemm_n * static_cast<int64_t>(sizeof(float)),
        fmt::format("--sgemm-n {} (three {}x{} float matrices)", o.sgemm_n, o.sgemm_n, o.sgemm_n));
  }
  Peaks p;
  const int threads = set_threads(o.threads);
  p.threads = threads;
  const SimdLevel level = active_simd();
  p.simd = to_string(level);
  // Calibrate the loop length to ~seconds_per_round on one thread.
  float sink = 0;
  int64_t iters = 1 << 16;
  for (;;) {
    const int64_t t0 = now_ns();
    fma_peak_loop(level, iters, &sink);
    const double sec = seconds_since(t0);
    if (sec > o.seconds_per_round / 4 || iters > (int64_t{1} << 34)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * o.seconds_per_round /
                                   std::max(sec, 1e-6));
      break;
    }
    iters *= 4;
  }
  std::vector<double> one, all;
  for (int r = 0; r < o.rounds; ++r) {
    check_interrupt();
    one.push_back(fma_gflops(level, 1, iters));
    if (threads > 1) all.push_back(fma_gflops(level, threads, iters));
  }
  p.fma_gflops_1thread = median(one);
  p.fma_gflops = threads > 1 ? median(all) : p.fma_gflops_1thread;
  const double mhz = cpu_info().nominal_mhz;
  if (mhz > 0) p.flops_per_cycle_estimate = p.fma_gflops_1thread / (mhz * 1e-3);

  const int64_t n = o.triad_bytes / 3 / static_cast<int64_t>(sizeof(float));
  Tensor a(Shape{n}), b(Shape{n}), c(Shape{n});
  b.fill(1.0f);
  c.fill(2.0f);
  stream_triad(a.data(), b.data(), c.data(), 3.0f, n);  // first touch
  std::vector<double> bw;
  for (int r = 0; r < o.rounds; ++r) {
    check_interrupt();
    const int64_t t0 = now_ns();
    stream_triad(a.data(), b.data(), c.data(), 3.0f, n);
    bw.push_back(12.0 * static_cast<double>(n) / seconds_since(t0) * 1e-9);
  }
  p.triad_gbps = median(bw);
  if (o.sgemm_n > 0) {
    p.sgemm_gflops_1thread = sgemm_gflops(o.sgemm_n, 1);
    p.sgemm_gflops = threads > 1 ? sgemm_gflops(o.sgemm_n, threads) : p.sgemm_gflops_1thread;
    set_threads(threads);
  }
  return p;
}

nlohmann::json peaks_to_json(const Peaks& p, const std::string& env) {
  const CpuInfo& cpu = cpu_info();
  return {{env,
           {{"description", fmt::format("{}, {} thread(s), {} kernels (measured by nnperf peaks)",
                                        cpu.model_name, p.threads, p.simd)},
            {"peak_gbps", p.triad_gbps},
            {"peak_gflops", {{"fp32", p.fma_gflops}}},
            {"measured",
             {{"threads", p.threads},
              {"simd", p.simd},
              {"fma_gflops_per_s_1thread", p.fma_gflops_1thread},
              {"fma_gflops_per_s", p.fma_gflops},
              {"triad_gbytes_per_s", p.triad_gbps},
              {"sgemm_gflops_per_s_1thread", p.sgemm_gflops_1thread},
              {"sgemm_gflops_per_s", p.sgemm_gflops},
              {"flops_per_cycle_at_nominal_clock", p.flops_per_cycle_estimate}}}}}};
}

MachineCeilings ceilings_from_json(const nlohmann::json& doc, const std::string& env,
                                   const std::string& path) {
  const JsonPath root{path, ""};
  if (!doc.is_object() || doc.empty()) fail("{}: expected an object of environments", path);
  std::string key = env;
  if (key.empty()) {
    if (doc.size() == 1) {
      key = doc.begin().key();
    } else if (doc.contains(hostname())) {
      key = hostname();
    } else {
      std::vector<std::string> names;
      for (const auto& [k, v] : doc.items()) names.push_back(k);
      throw UsageError(fmt::format("{} holds {} environments ({}); choose one with --env", path,
                                   names.size(), fmt::join(names, ", ")));
    }
  } else if (!doc.contains(key)) {
    std::vector<std::string> names;
    for (const auto& [k, v] : doc.items()) names.push_back(k);
    throw UsageError(fmt::format("--env {}: not in {} (it holds: {})", quote_input(key), path,
                                 fmt::join(names, ", ")));
  }
  const JsonPath at = root.at(key);
  const nlohmann::json& e = json_object(doc, key, root);
  MachineCeilings m;
  m.env = key;
  if (e.contains("description") && e["description"].is_string()) m.description = e["description"];
  m.peak_gbps = json_number(e, "peak_gbps", at);
  m.peak_gflops_fp32 = json_number(json_object(e, "peak_gflops", at), "fp32", at.at("peak_gflops"));
  if (!(m.peak_gbps > 0)) fail("{}: expected a positive number", at.at("peak_gbps").str());
  if (!(m.peak_gflops_fp32 > 0))
    fail("{}: expected a positive number", at.at("peak_gflops.fp32").str());
  if (e.contains("compute_ceilings")) {
    const JsonPath cp = at.at("compute_ceilings");
    if (!e["compute_ceilings"].is_array()) fail("{}: expected an array", cp.str());
    for (std::size_t i = 0; i < e["compute_ceilings"].size(); ++i) {
      const JsonPath ip = cp.at(std::to_string(i));
      const nlohmann::json& c = e["compute_ceilings"][i];
      if (!c.is_object()) fail("{}: expected an object", ip.str());
      m.compute.push_back({json_string(c, "name", ip), json_string(c, "simd", ip),
                           static_cast<int>(json_integer(c, "threads", ip)),
                           json_number(c, "gflops", ip)});
    }
  }
  if (e.contains("memory_ceilings")) {
    const JsonPath mp = at.at("memory_ceilings");
    if (!e["memory_ceilings"].is_array()) fail("{}: expected an array", mp.str());
    for (std::size_t i = 0; i < e["memory_ceilings"].size(); ++i) {
      const JsonPath ip = mp.at(std::to_string(i));
      const nlohmann::json& c = e["memory_ceilings"][i];
      if (!c.is_object()) fail("{}: expected an object", ip.str());
      MemoryCeiling mc{json_string(c, "level", ip),
                       static_cast<int>(json_integer(c, "threads", ip)),
                       json_number(c, "gbps", ip)};
      if (c.contains("working_set_bytes") && c["working_set_bytes"].is_array() &&
          c["working_set_bytes"].size() == 2 && c["working_set_bytes"][0].is_number() &&
          c["working_set_bytes"][1].is_number()) {
        mc.working_set_lo = c["working_set_bytes"][0].get<double>();
        mc.working_set_hi = c["working_set_bytes"][1].get<double>();
      }
      m.memory.push_back(mc);
    }
  }
  return m;
}

MachineCeilings read_peaks_json(const std::filesystem::path& path, const std::string& env) {
  return ceilings_from_json(read_json(path), env, path.string());
}

}  // namespace nnperf
