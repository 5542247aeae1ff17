// `nnperf bench conv2d --problem DESC`: times every supported algorithm on one problem
// (alternating, median of --measure runs after --warmup) with GFLOP/s, % of the FMA peak and the
// cost the machine model gives it, and how the row `guess` picks compares with the fastest.
// `nnperf bench gemm --problem m4096n4096k4096 [--device cuda]`: the same for the GEMM rows of one
// device, with each row's speed and largest difference relative to the vendor library.
// `nnperf bench batchnorm --problem mb32c64h56w56 [--pass forward|backward] [--device cuda]`:
// BatchNorm's training pass by every algorithm of the device, as bandwidth
// (runs/batchnorm_bench.h).
#include <fmt/format.h>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/batchnorm_bench.h"
#include "nnperf/runs/conv_tools.h"
#include "nnperf/runs/gemm_bench.h"

namespace nnperf::app {
namespace {

struct Flags {
  std::string op, problem, algorithms, json, device = "cpu", pass = "forward", launch = "eager";
  ConvBenchOptions o;
  double peak_bw = 0;  // batchnorm: GB/s for percent_of_peak_bw
};

// 1, with one line saying so, when every algorithm was skipped: nothing was measured (the JSON
// still records the reasons); else 0.
int measured_status(const nlohmann::json& records) {
  for (const auto& r : records) {
    if (r["status"] == "ok") return 0;
  }
  fmt::print(stderr, "nnperf: error: no algorithm ran on this problem: every one was skipped (reasons above)\n");
  return 1;
}

int run_gemm(const Flags& f) {
  GemmBenchOptions g;
  g.device = f.device == "cuda" ? Device::kCuda : Device::kCpu;
  g.algorithms = f.o.algorithms;
  g.warmup = f.o.warmup;
  g.measure = f.o.measure;
  g.threads = f.o.threads;
  const GemmShape s = parse_gemm_shape(f.problem);
  const nlohmann::json j = bench_gemm(s, g);
  const auto& ctx = j["context"];
  fmt::print("problem {} ({:.3f} GFLOP) on the {}{}, vendor {}\n", s.str(), s.flops() * 1e-9,
             f.device, f.device == "cuda" ? " (" + ctx["cuda_device"].get<std::string>() + ")" : "",
             ctx["vendor"].get<std::string>());
  fmt::print("{:<10} {:>11} {:>10} {:>10} {:>9} {:>10} {:>12}\n", "algorithm", "median_ms", "min_ms",
             "max_ms", "GFLOP/s", "vs_vendor", "max|diff|");
  for (const auto& r : j["records"]) {
    if (r["status"] != "ok") {
      fmt::print("{:<10} skipped: {}\n", r["algorithm"].get<std::string>(), r["reason"].get<std::string>());
      continue;
    }
    fmt::print("{:<10} {:>11.3f} {:>10.3f} {:>10.3f} {:>9.1f} {:>10} {:>12}\n",
               r["algorithm"].get<std::string>(), r["time_ms_median"].get<double>(),
               r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
               r["gflops_per_s"].get<double>(),
               r.contains("vs_vendor") ? fmt::format("{:.2f}x", r["vs_vendor"].get<double>()) : "-",
               r.contains("max_abs_diff_vs_vendor")
                   ? fmt::format("{:.2e}", r["max_abs_diff_vs_vendor"].get<double>())
                   : "-");
  }
  if (!f.json.empty()) write_json_atomic(f.json, j);
  return measured_status(j["records"]);
}

// bench batchnorm: the device's BatchNorm algorithms on one shape (runs/batchnorm_bench.h).
int run_batchnorm(const Flags& f) {
  if (f.pass != "forward" && f.pass != "backward")
    throw UsageError(fmt::format("--pass {}: bench batchnorm takes forward or backward", f.pass));
  BatchNormBenchOptions b;
  b.device = f.device == "cuda" ? Device::kCuda : Device::kCpu;
  b.backward = f.pass == "backward";
  b.algorithms = f.o.algorithms;
  b.warmup = f.o.warmup;
  b.measure = f.o.measure;
  b.threads = f.o.threads;
  b.peak_gbps = f.peak_bw;
  b.problem = f.problem;
  const BatchNormShape s = parse_batchnorm_problem(f.problem);
  const nlohmann::json j = bench_batchnorm(s, b);
  const auto& ctx = j["context"];
  fmt::print("problem {} ({} x {} x {}), {}, on the {}{}, {} thread(s); bytes: {}\n", f.problem,
             s.mb, s.channels, s.plane, f.pass, f.device,
             f.device == "cuda" ? " (" + ctx["cuda_device"].get<std::string>() + ")" : "",
             ctx["threads"].get<int>(), ctx["bytes_rule"].get<std::string>());
  fmt::print("{:<10} {:>11} {:>10} {:>10} {:>9} {:>9} {:>12}{}\n", "algorithm", "median_ms",
             "min_ms", "max_ms", "GB/s", "%peak_bw", "max_rel_err",
             f.device == "cuda" ? "" : "  layout");
  for (const auto& r : j["records"]) {
    if (r["status"] != "ok") {
      fmt::print("{:<10} skipped: {}\n", r["algorithm"].get<std::string>(),
                 r["reason"].get<std::string>());
      continue;
    }
    // The CPU's rows name the layout that ran (own: the kernels' pick).
    const std::string layout = r.value("layout", "");
    fmt::print("{:<10} {:>11.4f} {:>10.4f} {:>10.4f} {:>9.1f} {:>9} {:>12.3g}{}\n",
               r["algorithm"].get<std::string>(), r["time_ms_median"].get<double>(),
               r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
               r["gb_per_s"].get<double>(),
               r.contains("percent_of_peak_bw")
                   ? fmt::format("{:.1f}%", r["percent_of_peak_bw"].get<double>())
                   : "-",
               r["max_rel_err"].get<double>(), layout.empty() ? "" : "  " + layout);
  }
  if (!f.json.empty()) write_json_atomic(f.json, j);
  return measured_status(j["records"]);
}

// bench conv2d --device cuda: cuDNN's algorithms of --pass (runs/conv_tools.h bench_conv_cuda).
int run_conv_cuda(const Flags& f, const ConvProblem& p) {
  const nlohmann::json j = bench_conv_cuda(p, f.o);
  const nlohmann::json& ctx = j["context"];
  fmt::print("problem {} ({:.3f} GFLOP), {}, {}, cuDNN {}, {}; guess: {}, find: {}\n", p.str(),
             p.flops() * 1e-9, to_string(f.o.pass), ctx["cuda_device"].get<std::string>(),
             ctx["cudnn_version"].get<std::string>(), ctx["math"].get<std::string>(),
             ctx["guess"].get<std::string>().empty() ? "(none)" : ctx["guess"].get<std::string>(),
             ctx["find"].empty() ? "(none)" : ctx["find"][0]["algorithm"].get<std::string>());
  fmt::print("{:<22} {:>11} {:>10} {:>10} {:>9} {:>13} {:>12} {:>10}\n", "algorithm", "median_ms",
             "min_ms", "max_ms", "GFLOP/s", "workspace_MiB", "max_abs_err", "err/bound");
  for (const auto& r : j["records"]) {
    if (r["status"] != "ok") {
      fmt::print("{:<22} skipped: {}\n", r["algorithm"].get<std::string>(),
                 r["reason"].get<std::string>());
      continue;
    }
    fmt::print("{:<22} {:>11.4f} {:>10.4f} {:>10.4f} {:>9.1f} {:>13.1f} {:>12.3g} {:>10.3g}\n",
               r["algorithm"].get<std::string>(), r["time_ms_median"].get<double>(),
               r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
               r["gflops_per_s"].get<double>(),
               static_cast<double>(r["workspace_bytes"].get<std::size_t>()) / (1 << 20),
               r["max_abs_err"].get<double>(), r["worst_bound_ratio"].get<double>());
  }
  if (!f.json.empty()) write_json_atomic(f.json, j);
  return measured_status(j["records"]);
}

// bench conv2d on the CPU: every row of --pass's registry with its modelled cost, then how the
// row guess picks compares with the fastest one measured.
int run_conv_cpu(const Flags& f, const ConvProblem& p) {
  const nlohmann::json j = bench_conv(p, f.o);
  const nlohmann::json& ctx = j["context"];
  const std::string guess = ctx["guess"].get<std::string>();
  fmt::print("problem {} ({:.3f} GFLOP), {}{}, {} thread(s), peak {:.1f} GFLOP/s, guess: {}\n",
             p.str(), p.flops() * 1e-9, f.pass,
             f.o.training ? " with the weight transform of a training step" : "",
             ctx["threads"].get<int>(), ctx["peak_gflops_per_s"].get<double>(),
             guess.empty() ? "(none serves)" : guess);
  fmt::print("{:<22} {:>11} {:>10} {:>10} {:>9} {:>8} {:>11}\n", "algorithm", "median_ms", "min_ms",
             "max_ms", "GFLOP/s", "%peak", "modelled_ms");
  for (const auto& r : j["records"]) {
    if (r["status"] != "ok") {
      fmt::print("{:<22} skipped: {}\n", r["algorithm"].get<std::string>(),
                 r["reason"].get<std::string>());
      continue;
    }
    fmt::print("{:<22} {:>11.3f} {:>10.3f} {:>10.3f} {:>9.1f} {:>7.1f}% {:>11.3f}\n",
               r["algorithm"].get<std::string>(), r["time_ms_median"].get<double>(),
               r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
               r["gflops_per_s"].get<double>(), r["percent_of_peak"].get<double>(),
               r["modelled_ms"].get<double>());
  }
  if (ctx.contains("fastest")) {
    fmt::print("fastest: {}; guess {}\n", ctx["fastest"].get<std::string>(),
               ctx.contains("guess_over_fastest")
                   ? fmt::format("took {:.2f}x its time", ctx["guess_over_fastest"].get<double>())
                   : std::string("was not among the rows timed"));
  }
  if (ctx.contains("layers_run_as")) {
    fmt::print(
        "note: some kernel taps read only padding; a layer of this shape runs {} under "
        "guess or find (the rows above ran the problem as given)\n",
        ctx["layers_run_as"].get<std::string>());
  }
  if (!f.json.empty()) write_json_atomic(f.json, j);
  return measured_status(j["records"]);
}

int run(Flags& f) {
  if (f.op != "conv2d" && f.op != "gemm" && f.op != "batchnorm") {
    throw UsageError(fmt::format("bench '{}': expected conv2d, gemm or batchnorm", f.op));
  }
  if (f.peak_bw > 0 && f.op != "batchnorm")
    throw UsageError(
        "--peak-bw: applies to bench batchnorm (conv2d on the CPU takes --peak-gflops)");
  if (f.o.peak_gflops > 0 && f.op == "batchnorm")
    throw UsageError("--peak-gflops: bench batchnorm is bound by memory; give --peak-bw");
  if (f.o.peak_gflops > 0 && (f.op != "conv2d" || f.device != "cpu")) {
    throw UsageError(
        "--peak-gflops: applies to bench conv2d on the CPU (its %peak column); gemm rows are "
        "compared with the vendor library, GPU rows with each other");
  }
  check_output_file(f.json, "--json");  // before the measurements, not after
  if (!f.algorithms.empty()) f.o.algorithms = split_list(f.algorithms);
  if (f.launch != "eager" && (f.op != "conv2d" || f.device != "cuda"))
    throw UsageError("--launch: applies to bench conv2d --device cuda only");
  f.o.cuda_graph = f.launch == "graph";
  if (f.o.engines && (f.op != "conv2d" || f.device != "cuda"))
    throw UsageError("--engines: applies to bench conv2d --device cuda only");
  if (f.o.training && (f.op != "conv2d" || f.device != "cpu" || f.pass != "forward"))
    throw UsageError("--training: applies to bench conv2d --pass forward on the CPU only");
  if (f.op == "gemm") {
    if (f.pass != "forward") throw UsageError("--pass: applies to bench conv2d, not gemm");
    return run_gemm(f);
  }
  if (f.op == "batchnorm") return run_batchnorm(f);
  if (f.pass == "backward")
    throw UsageError("--pass backward: conv2d takes forward, backward-data or backward-weights");
  f.o.pass = f.pass == "backward-data"      ? ConvPass::kBackwardData
             : f.pass == "backward-weights" ? ConvPass::kBackwardWeights
                                            : ConvPass::kForward;
  const ConvProblem p = [&] {
    try {
      return parse_conv_problem(f.problem);
    } catch (const Error& e) {
      throw UsageError(fmt::format("--problem: {}", e.what()));
    }
  }();
  if (f.device == "cuda") return run_conv_cuda(f, p);
  return run_conv_cpu(f, p);
}

const Registrar reg{Command{"bench", 75, [](CLI::App& sub) -> std::function<int()> {
  sub.description("Time every supported algorithm of an op on one problem");
  auto f = std::make_shared<Flags>();
  sub.add_option("op", f->op, "Operation: conv2d, gemm or batchnorm")->required();
  sub.add_option("--problem", f->problem,
                 "benchdnn-style descriptor, e.g. mb1ic64ih56oc64kh3ph1 (conv2d), "
                 "m4096n4096k4096_ta (gemm) or mb32c64h56w56 (batchnorm)")
      ->required();
  sub.add_option("--device", f->device,
                 "cpu, or cuda (gemm: the cuda and cublas rows; conv2d: cuDNN's algorithms of "
                 "--pass; batchnorm: own and cudnn)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub.add_option("--algorithms", f->algorithms, "Comma-separated subset (default: all)")->check(list_items());
  sub.add_option("--pass", f->pass,
                 "conv2d: forward, backward-data or backward-weights (that pass's algorithms); "
                 "batchnorm: forward or backward (training)")
      ->check(CLI::IsMember({"forward", "backward-data", "backward-weights", "backward"}))
      ->capture_default_str();
  sub.add_option("--launch", f->launch,
                 "conv2d --device cuda: eager (cuDNN called at every run) or graph (each "
                 "algorithm's call captured once as a CUDA graph: the GPU's time without the "
                 "call's host work)")
      ->check(CLI::IsMember({"eager", "graph"}))
      ->capture_default_str();
  sub.add_flag("--engines", f->o.engines,
               "conv2d --device cuda: also time the pass's FP32 engine configurations of "
               "cuDNN's graph API (rows engine:<index>.<n>), each checked like the legacy "
               "algorithms, and let find rank them too");
  sub.add_flag("--training", f->o.training,
               "conv2d on the CPU, forward: each run also transforms the weights, as every "
               "training step does (Winograd, FFT and packed panels), and guess counts it");
  sub.add_option("--warmup", f->o.warmup, "Untimed runs per algorithm")->check(integer_in(0, 10000))->capture_default_str();
  sub.add_option("--measure", f->o.measure, "Timed runs per algorithm")->check(integer_in(1, 100000))->capture_default_str();
  sub.add_option("--threads", f->o.threads, "Threads (0 = all logical CPUs)")->check(threads_count())->capture_default_str();
  sub.add_option("--peak-gflops", f->o.peak_gflops,
                 "conv2d on the CPU: FMA peak for %peak (0 = measure per thread x threads)")
      ->check(number_in(0, 1e9));
  sub.add_option("--peak-bw", f->peak_bw,
                 "batchnorm: memory bandwidth in GB/s for %peak_bw (e.g. peaks.json's DRAM figure)")
      ->check(number_in(0, 1e9));
  sub.add_option("--json", f->json, "Write {context, records} JSON here");
  return [f] { return run(*f); };
}}};

}  // namespace
}  // namespace nnperf::app
