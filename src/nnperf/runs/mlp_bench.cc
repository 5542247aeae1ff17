// Timing method: implementations are timed alternately (one iteration of each in turn, round
// after round) so drift and the other core's load hit them alike; medians and min/max after a
// warm-up; every figure is a ratio within this one run. Train FLOPs are counted exactly from the
// layers: forward GEMMs, plus the weight-gradient GEMMs, plus the input-gradient GEMMs of every
// Linear except the first (whose input needs no gradient).
#include "nnperf/runs/mlp_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/data/dataset.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/train_run.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/mlp.h"
#include "nnperf/profile/clock.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/profiler.h"
#include "nnperf/profile/stats.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace {

struct Case {
  const GemmAlgorithm* algo;
  Graph graph;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<ExecLog> exec;  // NNPERF_VERBOSE=exec
  std::vector<double> train_ms, forward_ms;
  double spent_sec = 0;
};

Graph make_graph(const MlpBenchOptions& o, int64_t features, uint64_t seed) {
  Graph g = build_mlp(features, o.hidden, 10, find_activation(o.activation), /*flatten=*/false);
  Rng rng(seed);
  g.init(rng);
  return g;
}

// Exact FLOPs of one training iteration, from the planned graph (see the file comment).
double train_flops(const Graph& g) {
  double fwd = 0, first_linear = -1;
  for (int i = 1; i < g.size(); ++i) {
    const double f = g.layer(i).forward_flops();
    fwd += f;
    if (g.layer(i).kind() == "Linear" && first_linear < 0) first_linear = f;
  }
  return 3 * fwd - std::max(first_linear, 0.0);
}

OptimizerOptions optimizer_options(const std::string& name) {
  OptimizerOptions oo;
  oo.name = name;
  oo.lr = name == "sgd" ? 0.01f : 1e-3f;
  return oo;
}

}  // namespace

MlpBenchResult run_mlp_bench(const MlpBenchOptions& o) {
  const int threads = set_threads(o.threads);
  std::vector<const GemmAlgorithm*> algos;
  if (o.impls.empty()) {
    for (const auto& a : gemm_algorithms()) {
      if (a.device == Device::kCpu) algos.push_back(&a);
    }
  } else {
    for (const auto& n : o.impls) algos.push_back(&find_gemm(n));
  }
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  constexpr int64_t kFeatures = 784;
  const int64_t max_batch = *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  check_mlp_memory(o.hidden, max_batch,
                   fmt::format("--hidden {} with --batch-sizes up to {} for {} implementations",
                               fmt::join(o.hidden, ","), max_batch, algos.size()),
                   static_cast<int64_t>(algos.size()));
  MlpBenchResult result;
  result.out_dir = prepare_output_dir(o.out_dir, "results/mlp-bench", "--out-dir", o.overwrite);
  nlohmann::json records = nlohmann::json::array();
  Rng data_rng(o.seed + 17);

  for (int64_t mb : o.batch_sizes) {
    Tensor x(Shape{mb, kFeatures});
    data_rng.fill_uniform(std::span<float>(x.data(), static_cast<std::size_t>(x.numel())), 0.0f,
                          1.0f);
    std::vector<int32_t> labels(static_cast<std::size_t>(mb));
    for (auto& l : labels) l = static_cast<int32_t>(data_rng.below(10));
    // Each Trainer holds a reference to its Graph, so the cases never move once built.
    std::vector<Case> cases;
    cases.reserve(algos.size());
    for (const GemmAlgorithm* a : algos) {
      Case& c = cases.emplace_back(
          Case{a, make_graph(o, kFeatures, o.seed), nullptr, nullptr, {}, {}, 0});
      c.exec = exec_log_from_env(c.graph, "mlp", a->name);
      c.graph.set_hook(with_exec_log(c.exec.get(), nullptr));
      c.trainer = std::make_unique<Trainer>(c.graph, make_optimizer(optimizer_options(o.optimizer)),
                                            PlanContext{a, threads, true});
    }
    // Warm-up, then measure alternately.
    for (int r = 0; r < o.warmup; ++r) {
      for (auto& c : cases) c.trainer->step(x, labels);
    }
    for (int r = 0; r < o.measure; ++r) {
      bool any = false;
      for (auto& c : cases) {
        if (c.spent_sec > o.max_seconds_per_case && c.train_ms.size() >= 3) continue;
        any = true;
        int64_t t0 = now_ns();
        c.trainer->step(x, labels);
        int64_t t1 = now_ns();
        c.graph.forward(x);
        int64_t t2 = now_ns();
        c.train_ms.push_back(static_cast<double>(t1 - t0) * 1e-6);
        c.forward_ms.push_back(static_cast<double>(t2 - t1) * 1e-6);
        c.spent_sec += static_cast<double>(t2 - t0) * 1e-9;
      }
      if (!any) break;
    }
    const double tflops = train_flops(cases.front().graph);
    const double fflops = cases.front().graph.forward_flops();
    std::map<std::string, double> med_train, med_fwd;
    for (auto& c : cases) {
      med_train[c.algo->name] = median(c.train_ms);
      med_fwd[c.algo->name] = median(c.forward_ms);
    }
    for (auto& c : cases) {
      for (const char* step : {"train", "forward"}) {
        const bool train = std::string(step) == "train";
        const auto& v = train ? c.train_ms : c.forward_ms;
        const Summary s = summarize(v);
        const auto& med = train ? med_train : med_fwd;
        nlohmann::json r = {{"impl", c.algo->name},
                            {"batch_size", mb},
                            {"step", step},
                            {"time_ms_median", s.median},
                            {"time_ms_min", s.min},
                            {"time_ms_max", s.max},
                            {"time_ms_mean", s.mean},
                            {"time_ms_std", s.std},
                            {"reps", s.count},
                            {"flops", train ? tflops : fflops},
                            {"gflops_per_s", (train ? tflops : fflops) / (s.median * 1e-3) * 1e-9},
                            {"imgs_per_sec", static_cast<double>(mb) / (s.median * 1e-3)}};
        r["speedup_vs_naive"] = med.count("naive") ? nlohmann::json(med.at("naive") / s.median)
                                                   : nlohmann::json(nullptr);
        r["speedup_vs_blas"] =
            med.count("blas") ? nlohmann::json(med.at("blas") / s.median) : nlohmann::json(nullptr);
        records.push_back(r);
      }
    }
  }

  // Accuracy consistency: identical initial weights and batches for every implementation.
  nlohmann::json consistency = nlohmann::json::array();
  if (o.consistency_steps > 0) {
    Dataset train_set, test_set;
    std::string source = "synthetic";
    if (!o.synthetic &&
        std::filesystem::exists(o.data_dir.empty() ? default_data_dir() : o.data_dir)) {
      const auto dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
      train_set = load_mnist(dir, "train");
      test_set = load_mnist(dir, "t10k");
      source = dir.string();
    } else {
      auto [tr, te] = split_dataset(make_synthetic(22000, 1, 28, 28, 10, o.seed), 2000, o.seed + 1);
      train_set = std::move(tr);
      test_set = std::move(te);
    }
    std::vector<std::vector<double>> curves;
    for (const GemmAlgorithm* a : algos) {
      Graph g = make_graph(o, kFeatures, o.seed);
      const std::unique_ptr<ExecLog> exec = exec_log_from_env(g, "mlp", a->name);
      g.set_hook(with_exec_log(exec.get(), nullptr));
      Trainer t(g, make_optimizer(optimizer_options(o.optimizer)), PlanContext{a, threads, true});
      Batcher b(train_set, o.consistency_batch, true, o.seed + 3);
      b.start_epoch();
      Tensor bx;
      std::vector<int32_t> bl;
      std::vector<double> curve;
      for (int s = 0; s < o.consistency_steps; ++s) {
        if (!b.next(bx, bl, true)) {
          b.start_epoch();
          b.next(bx, bl, true);
        }
        curve.push_back(t.step(bx, bl).mean_loss());
      }
      const BatchResult ev = t.evaluate(test_set, 1000);
      curves.push_back(curve);
      consistency.push_back({{"impl", a->name},
                             {"steps", o.consistency_steps},
                             {"batch_size", o.consistency_batch},
                             {"final_loss", curve.back()},
                             {"test_acc", ev.accuracy()},
                             {"data", source}});
    }
    std::size_t ref = 0;
    for (std::size_t i = 0; i < algos.size(); ++i) {
      if (std::string(algos[i]->name) == "blas") ref = i;
    }
    for (std::size_t i = 0; i < algos.size(); ++i) {
      double maxdiff = 0;
      for (std::size_t s = 0; s < curves[i].size(); ++s)
        maxdiff = std::max(maxdiff, std::abs(curves[i][s] - curves[ref][s]));
      consistency[i]["reference"] = algos[ref]->name;
      consistency[i]["max_abs_loss_diff"] = maxdiff;
      consistency[i]["tolerance"] = o.consistency_tolerance;
      const bool ok = maxdiff <= o.consistency_tolerance;
      consistency[i]["pass"] = ok;
      result.consistent = result.consistent && ok;
    }
  }

  // Instrumentation overhead: the fastest implementation at batch 64, hooked (every node, both
  // phases) vs not, alternating.
  nlohmann::json overhead = nullptr;
  if (o.overhead_reps > 0) {
    const GemmAlgorithm* best = algos.front();
    double best_ms = 1e300;
    for (const auto& r : records) {
      if (r["step"] == "train" && r["batch_size"] == 64 &&
          r["time_ms_median"].get<double>() < best_ms) {
        best_ms = r["time_ms_median"].get<double>();
        best = &find_gemm(r["impl"].get<std::string>());
      }
    }
    Graph g = make_graph(o, kFeatures, o.seed);
    const std::unique_ptr<ExecLog> exec = exec_log_from_env(g, "mlp", best->name);
    Trainer t(g, make_optimizer(optimizer_options(o.optimizer)), PlanContext{best, threads, true});
    Tensor x(Shape{64, kFeatures});
    data_rng.fill_uniform(std::span<float>(x.data(), static_cast<std::size_t>(x.numel())), 0.0f,
                          1.0f);
    std::vector<int32_t> labels(64);
    for (auto& l : labels) l = static_cast<int32_t>(data_rng.below(10));
    LayerProfiler prof = LayerProfiler::all_nodes(g);
    std::vector<double> plain, hooked;
    for (int r = 0; r < o.overhead_reps + 20; ++r) {
      for (int hook = 0; hook < 2; ++hook) {
        g.set_hook(with_exec_log(exec.get(), hook ? &prof : nullptr));
        const int64_t t0 = now_ns();
        t.step(x, labels);
        const double ms = static_cast<double>(now_ns() - t0) * 1e-6;
        if (r >= 20) (hook ? hooked : plain).push_back(ms);
      }
    }
    g.set_hook(with_exec_log(exec.get(), nullptr));
    // Where the time goes: per-node means from the instrumented iterations (warm-up included in
    // the totals is negligible: 20 of overhead_reps + 20 iterations).
    const LayerProfiler::Totals tot = prof.take();
    nlohmann::json breakdown = nlohmann::json::array();
    double nodes_ms = 0;
    for (int i = 1; i < g.size(); ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double f = tot.forward_count[k] ? tot.forward_ms[k] / static_cast<double>(tot.forward_count[k]) : 0.0;
      const double b = tot.backward_count[k] ? tot.backward_ms[k] / static_cast<double>(tot.backward_count[k]) : 0.0;
      nodes_ms += f + b;
      breakdown.push_back({{"node", g.name(i)}, {"layer", g.layer(i).describe()}, {"forward_ms", f}, {"backward_ms", b}});
    }
    const TimerOverhead to = measure_timer_overhead();
    const double mp = median(plain), mh = median(hooked);
    overhead = {{"impl", best->name},
                {"batch_size", 64},
                {"timed_intervals_per_iteration", 2 * (g.size() - 1)},
                {"uninstrumented_ms_median", mp},
                {"instrumented_ms_median", mh},
                {"overhead_percent", 100 * (mh / mp - 1)},
                {"timer_empty_interval_ns", to.empty_interval_ns},
                {"timer_pair_cost_ns", to.pair_cost_ns},
                {"reps", o.overhead_reps},
                {"breakdown", breakdown},
                {"other_ms", median(hooked) - nodes_ms},
                {"other_note", "loss, optimizer step and the timer's own cost"}};
  }

  nlohmann::json ctx = run_context();
  ctx["threads"] = threads;
  ctx["model"] = fmt::format("mlp 784-{}-10 {}", fmt::join(o.hidden, "-"), o.activation);
  ctx["hidden"] = o.hidden;
  ctx["activation"] = o.activation;
  ctx["optimizer"] = o.optimizer;
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["flops_convention"] =
      "2 FLOPs per multiply-add; train = forward + weight-gradient + input-gradient GEMMs (first "
      "layer's input gradient skipped)";
  result.json = {
      {"context", ctx}, {"records", records}, {"consistency", consistency}, {"overhead", overhead}};
  return result;
}

namespace {
void write_records_csv(const nlohmann::json& records, const std::filesystem::path& path) {
  const std::vector<std::string> cols{"impl",
                                      "batch_size",
                                      "step",
                                      "time_ms_median",
                                      "time_ms_min",
                                      "time_ms_max",
                                      "time_ms_mean",
                                      "time_ms_std",
                                      "reps",
                                      "flops",
                                      "gflops_per_s",
                                      "imgs_per_sec",
                                      "speedup_vs_naive",
                                      "speedup_vs_blas"};
  CsvWriter csv(path, cols);
  for (const auto& r : records) {
    std::vector<std::string> row;
    for (const auto& c : cols) {
      const auto& v = r[c];
      if (v.is_null()) {
        row.emplace_back();
      } else if (v.is_string()) {
        row.push_back(v.get<std::string>());
      } else if (v.is_number_integer()) {
        row.push_back(std::to_string(v.get<int64_t>()));
      } else {
        row.push_back(csv_number(v.get<double>(), 7));
      }
    }
    csv.row(row);
  }
}
}  // namespace

void write_mlp_bench_outputs(const MlpBenchResult& result, const MlpBenchOptions& o,
                             const std::filesystem::path& json_path,
                             const std::filesystem::path& csv_path) {
  const std::filesystem::path& out_dir = result.out_dir;
  write_json_atomic(out_dir / "mlp_bench.json", result.json);
  write_records_csv(result.json["records"], out_dir / "mlp_bench.csv");
  if (!json_path.empty()) write_json_atomic(json_path, result.json);
  if (!csv_path.empty()) write_records_csv(result.json["records"], csv_path);
  write_run_json(out_dir, o.command_line, {{"job", "mlp-bench"}});
  PlotSpec p;
  p.title = "MLP training iteration time by GEMM implementation";
  p.xlabel = "batch size";
  p.ylabel = "ms per training iteration (median)";
  p.kind = PlotSpec::Kind::kLines;
  p.logx = true;
  p.logy = true;
  std::map<std::string, Series> by_impl;
  std::vector<std::string> order;
  for (const auto& r : result.json["records"]) {
    if (r["step"] != "train") continue;
    const std::string impl = r["impl"].get<std::string>();
    if (!by_impl.count(impl)) {
      order.push_back(impl);
      by_impl[impl].title = impl;
    }
    by_impl[impl].x.push_back(static_cast<double>(r["batch_size"].get<int64_t>()));
    by_impl[impl].y.push_back(r["time_ms_median"].get<double>());
  }
  for (const auto& n : order) p.series.push_back(by_impl[n]);
  std::filesystem::create_directories(out_dir / "plots");
  const PlotResult pr = render_plot(p, out_dir / "plots" / "iteration_time");
  if (!pr.rendered) fmt::print(stderr, "nnperf: note: plot not rendered: {}\n", pr.message);
}

std::string format_mlp_bench(const nlohmann::json& j) {
  std::string s =
      fmt::format("{:<10} {:>6} {:>8} {:>12} {:>10} {:>10} {:>9} {:>11} {:>10}\n", "impl", "batch",
                  "step", "median_ms", "min_ms", "max_ms", "GFLOP/s", "vs_naive", "vs_blas");
  auto ratio = [](const nlohmann::json& v) {
    return v.is_null() ? std::string("-") : fmt::format("{:.2f}x", v.get<double>());
  };
  for (const auto& r : j["records"]) {
    s += fmt::format("{:<10} {:>6} {:>8} {:>12.4f} {:>10.4f} {:>10.4f} {:>9.2f} {:>11} {:>10}\n",
                     r["impl"].get<std::string>(), r["batch_size"].get<int64_t>(),
                     r["step"].get<std::string>(), r["time_ms_median"].get<double>(),
                     r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
                     r["gflops_per_s"].get<double>(), ratio(r["speedup_vs_naive"]),
                     ratio(r["speedup_vs_blas"]));
  }
  if (!j["consistency"].empty()) {
    s += "\naccuracy consistency (same initial weights and batches):\n";
    for (const auto& c : j["consistency"]) {
      s += fmt::format(
          "  {:<10} final loss {:.5f}  test acc {:.4f}  max |loss - {}| {:.2e} (tolerance {:.0e}) "
          "{}\n",
          c["impl"].get<std::string>(), c["final_loss"].get<double>(), c["test_acc"].get<double>(),
          c["reference"].get<std::string>(), c["max_abs_loss_diff"].get<double>(),
          c["tolerance"].get<double>(), c["pass"].get<bool>() ? "PASS" : "FAIL");
    }
  }
  if (!j["overhead"].is_null()) {
    const auto& o = j["overhead"];
    s += fmt::format(
        "\ninstrumentation overhead ({} at batch 64, {} timed intervals per iteration): {:.4f} ms "
        "-> {:.4f} ms "
        "({:+.2f}%); empty interval reads {:.0f} ns\n",
        o["impl"].get<std::string>(), o["timed_intervals_per_iteration"].get<int>(),
        o["uninstrumented_ms_median"].get<double>(), o["instrumented_ms_median"].get<double>(),
        o["overhead_percent"].get<double>(), o["timer_empty_interval_ns"].get<double>());
    s += fmt::format("\nwhere the time goes ({} at batch 64, ms per iteration):\n", o["impl"].get<std::string>());
    s += fmt::format("  {:<10} {:<22} {:>10} {:>10}\n", "node", "layer", "forward", "backward");
    for (const auto& b : o["breakdown"]) {
      s += fmt::format("  {:<10} {:<22} {:>10.4f} {:>10.4f}\n", b["node"].get<std::string>(), b["layer"].get<std::string>(),
                       b["forward_ms"].get<double>(), b["backward_ms"].get<double>());
    }
    s += fmt::format("  {:<33} {:>10.4f}  ({})\n", "other", o["other_ms"].get<double>(), o["other_note"].get<std::string>());
  }
  return s;
}

}  // namespace nnperf
