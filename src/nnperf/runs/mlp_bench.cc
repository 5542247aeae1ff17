// Timing method: implementations are timed alternately (one iteration of each in turn, round
// after round) so drift and the other core's load hit them alike; medians and min/max after a
// warm-up; every figure is a ratio within this one run. Train FLOPs are counted exactly from the
// layers: forward GEMMs, plus the weight-gradient GEMMs, plus the input-gradient GEMMs of every
// Linear except the first (whose input needs no gradient).
//
// The job is plan (validate, the implementations), measure (each part returns its records:
// timing cases per batch size, consistency per implementation, the overhead record), assemble
// {context, records, consistency, overhead}. Its outputs are rendered from that JSON by the
// reporters in mlp_bench_outputs.cc.
#include "nnperf/runs/mlp_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <map>

#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/data/dataset.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/mlp.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/text.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/profiler.h"
#include "nnperf/profile/stats.h"
#include "nnperf/runs/train_run.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/train/cuda_mlp.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace {

constexpr int64_t kFeatures = 784;
constexpr int64_t kOverheadBatch = 64;
constexpr int kOverheadWarmup = 20;

// The optimizer `name` (the table's spelling) at the learning rate the benchmark trains with.
OptimizerOptions optimizer_options(const std::string& name) {
  OptimizerOptions oo;
  oo.name = name;
  oo.lr = name == "sgd" ? 0.01 : 1e-3;
  return oo;
}

// What the benchmark measures with, validated before an output folder is claimed.
struct Plan {
  int threads = 1;
  std::vector<const GemmAlgorithm*> algos;
};

Plan plan_bench(const MlpBenchOptions& o) {
  Plan p;
  p.threads = set_threads(o.threads);
  if (o.impls.empty()) {
    for (const auto& a : gemm_algorithms()) {
      if (a.device == Device::kCpu || o.device == Device::kCuda) p.algos.push_back(&a);
    }
  } else {
    for (const auto& n : o.impls) {
      try {
        p.algos.push_back(&find_gemm(n));
      } catch (const UsageError&) {
        throw UsageError(fmt::format("--impls {}: unknown GEMM implementation; expected one of: {}",
                                     n, gemm_algorithm_names()));
      }
    }
  }
  const bool blas_row = std::any_of(p.algos.begin(), p.algos.end(), [](const GemmAlgorithm* a) {
    return a->name == std::string("blas");
  });
  if (blas_row && p.threads > 1 && !blas_uses_openmp()) {
    warn(
        "the blas row runs on OpenBLAS's pthread build, whose own threads contend with the OpenMP "
        "threads of the other layers (up to 10x a step on 2 cores): build with OpenBLAS's OpenMP "
        "build (Debian: libopenblas-openmp-dev) for the library's own speed");
  }
  for (const GemmAlgorithm* a : p.algos) {
    if (a->device == Device::kCuda && o.device != Device::kCuda) {
      throw UsageError(fmt::format("--impls {}: a GPU row; add --device cuda", a->name));
    }
  }
  if (o.device == Device::kCuda) cuda::require("--device cuda");
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  (void)make_optimizer(optimizer_options(o.optimizer));  // its options, checked
  const int64_t max_batch = *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  check_mlp_memory(o.hidden, max_batch,
                   fmt::format("--hidden {} with --batch-sizes up to {} for {}",
                               fmt::join(o.hidden, ","), max_batch,
                               count_noun(static_cast<int64_t>(p.algos.size()), "implementation")),
                   static_cast<int64_t>(p.algos.size()));
  return p;
}

Graph make_graph(const MlpBenchOptions& o) {
  Graph g = build_mlp(kFeatures, o.hidden, 10, find_activation(o.activation), /*flatten=*/false);
  Rng rng(o.seed);
  g.init(rng);
  return g;
}

// One implementation's MLP from the run's initial weights (the same for every implementation)
// and its trainer: what each measured part measures with. A GPU row trains on the device
// (train/cuda_mlp; its step and forward return when the device has finished) and leaves the
// CPU trainer unused. Never moved: the trainers hold the Graph.
struct Session {
  Session(const MlpBenchOptions& o, const GemmAlgorithm& a, int threads)
      : algo(a),
        graph(make_graph(o)),
        exec(exec_log_from_env(graph, "mlp", a.name)),  // NNPERF_VERBOSE=exec
        trainer(graph, make_optimizer(optimizer_options(o.optimizer)),
                PlanContext{a.device == Device::kCpu ? &a : nullptr, threads, true}) {
    graph.set_hook(with_exec_log(exec.get(), nullptr));
    if (a.device == Device::kCuda) {
      gpu = std::make_unique<CudaMlpTrainer>(graph, a, optimizer_options(o.optimizer));
    }
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  BatchResult step(const Tensor& x, std::span<const int32_t> labels) {
    return gpu ? gpu->step(x, labels) : trainer.step(x, labels);
  }
  void forward(const Tensor& x) {
    if (gpu) {
      gpu->forward(x);
    } else {
      graph.forward(x);
    }
  }
  BatchResult evaluate(const Dataset& data, int64_t batch_size) {
    return gpu ? gpu->evaluate(data, batch_size) : trainer.evaluate(data, batch_size);
  }
  const GemmAlgorithm& algo;
  Graph graph;
  std::unique_ptr<ExecLog> exec;
  Trainer trainer;
  std::unique_ptr<CudaMlpTrainer> gpu;
};

struct Batch {
  Tensor x;
  std::vector<int32_t> labels;
};

Batch random_batch(Rng& rng, int64_t mb) {
  Batch b{Tensor(Shape{mb, kFeatures}), std::vector<int32_t>(static_cast<std::size_t>(mb))};
  rng.fill_uniform(std::span<float>(b.x.data(), static_cast<std::size_t>(b.x.numel())), 0.0f, 1.0f);
  for (auto& l : b.labels) l = static_cast<int32_t>(rng.below(10));
  return b;
}

// The run's MLP planned for batch mb on the CPU: the layers count their FLOPs from it.
Graph planned_graph(const MlpBenchOptions& o, int64_t mb) {
  Graph g = make_graph(o);
  g.plan(Shape{mb, kFeatures}, PlanContext{&find_gemm("naive"), 1, true});
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

// ---- timing cases ----------------------------------------------------------------------------

struct Samples {
  std::vector<double> train_ms, forward_ms;
  double spent_sec = 0;
};

// Warm-up, then every session timed alternately (one iteration each per round, in round_order's
// order); a session past --max-seconds (with at least 3 samples) sits the remaining rounds out.
std::vector<Samples> time_alternately(std::vector<std::unique_ptr<Session>>& sessions,
                                      const Batch& b, const MlpBenchOptions& o) {
  for (int r = 0; r < o.warmup; ++r) {
    for (auto& s : sessions) s->step(b.x, b.labels);
  }
  std::vector<Samples> out(sessions.size());
  for (int r = 0; r < o.measure; ++r) {
    bool any = false;
    for (const int k : round_order(static_cast<int>(sessions.size()), r)) {
      const auto i = static_cast<std::size_t>(k);
      Samples& c = out[i];
      if (c.spent_sec > o.max_seconds_per_case && c.train_ms.size() >= 3) continue;
      any = true;
      const int64_t t0 = now_ns();
      sessions[i]->step(b.x, b.labels);
      const int64_t t1 = now_ns();
      sessions[i]->forward(b.x);
      const int64_t t2 = now_ns();
      c.train_ms.push_back(static_cast<double>(t1 - t0) * 1e-6);
      c.forward_ms.push_back(static_cast<double>(t2 - t1) * 1e-6);
      c.spent_sec += static_cast<double>(t2 - t0) * 1e-9;
    }
    if (!any) break;
  }
  return out;
}

// One (implementation, batch size, step) record; `medians` holds every implementation's median
// of this step, for the speedups.
nlohmann::json timing_record(const std::string& impl, int64_t mb, const std::string& step,
                             const std::vector<double>& ms, double flops,
                             const std::map<std::string, double>& medians) {
  const Summary s = summarize(ms);
  nlohmann::json r = {{"impl", impl},
                      {"device", find_gemm(impl).device == Device::kCuda ? "cuda" : "cpu"},
                      {"batch_size", mb},
                      {"step", step},
                      {"time_ms_median", s.median},
                      {"time_ms_min", s.min},
                      {"time_ms_max", s.max},
                      {"time_ms_mean", s.mean},
                      {"time_ms_std", s.std},
                      {"reps", s.count},
                      {"flops", flops},
                      {"gflops_per_s", flops / (s.median * 1e-3) * 1e-9},
                      {"imgs_per_sec", static_cast<double>(mb) / (s.median * 1e-3)}};
  const auto speedup = [&](const char* ref) {
    return medians.count(ref) ? nlohmann::json(medians.at(ref) / s.median)
                              : nlohmann::json(nullptr);
  };
  r["speedup_vs_naive"] = speedup("naive");
  r["speedup_vs_blas"] = speedup("blas");
  return r;
}

// The timing cases of one batch size: a train and a forward record per implementation.
nlohmann::json measure_batch_size(const MlpBenchOptions& o, const Plan& p, int64_t mb,
                                  Rng& data_rng) {
  const Batch b = random_batch(data_rng, mb);
  std::vector<std::unique_ptr<Session>> sessions;
  for (const GemmAlgorithm* a : p.algos)
    sessions.push_back(std::make_unique<Session>(o, *a, p.threads));
  const std::vector<Samples> samples = time_alternately(sessions, b, o);
  const Graph planned = planned_graph(o, mb);
  const double tflops = train_flops(planned);
  const double fflops = planned.forward_flops();
  std::map<std::string, double> med_train, med_fwd;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    med_train[sessions[i]->algo.name] = median(samples[i].train_ms);
    med_fwd[sessions[i]->algo.name] = median(samples[i].forward_ms);
  }
  nlohmann::json records = nlohmann::json::array();
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const std::string impl = sessions[i]->algo.name;
    records.push_back(timing_record(impl, mb, "train", samples[i].train_ms, tflops, med_train));
    records.push_back(timing_record(impl, mb, "forward", samples[i].forward_ms, fflops, med_fwd));
  }
  return records;
}

// ---- accuracy consistency --------------------------------------------------------------------

struct ConsistencyData {
  Dataset train, test;
  std::string source = "synthetic";
};

// The MNIST-format data: --data (or $NNPERF_DATA), which must exist, or the default folder when
// it is installed; a synthetic draw with --synthetic or when the default folder is not there
// (the records say which).
ConsistencyData consistency_data(const MlpBenchOptions& o) {
  ConsistencyData d;
  const bool named = !o.data_dir.empty() || std::getenv("NNPERF_DATA") != nullptr;
  const auto dir = o.data_dir.empty() ? default_data_dir() : o.data_dir;
  std::error_code ec;
  if (o.synthetic && !o.data_dir.empty()) {
    throw UsageError(fmt::format("--data {} --synthetic: give one of them (real data or synthetic)", o.data_dir.string()));
  }
  if (!o.synthetic && named && !std::filesystem::is_directory(dir, ec)) {
    // Missing data is a runtime error (exit 1), as for train and activations.
    throw Error(
        fmt::format("{} {}: no such folder (expected MNIST-format IDX files; or "
                    "--synthetic)",
                    o.data_dir.empty() ? "$NNPERF_DATA" : "--data", dir.string()));
  }
  if (!o.synthetic && std::filesystem::exists(dir, ec)) {
    d.train = load_mnist(dir, "train");
    d.test = load_mnist(dir, "t10k");
    d.source = dir.string();
    check_same_sample_shape(d.train, d.test, dir.string());
  } else {
    auto [tr, te] = split_dataset(make_synthetic(22000, 1, 28, 28, 10, o.seed), 2000, o.seed + 1);
    d.train = std::move(tr);
    d.test = std::move(te);
    if (!o.synthetic) d.source = fmt::format("synthetic (no data at {})", dir.string());
  }
  return d;
}

// The training loss of each of --consistency-steps steps, on batches drawn with the run's seed.
std::vector<double> loss_curve(Session& s, const Dataset& train, const MlpBenchOptions& o) {
  Batcher b(train, o.consistency_batch, true, o.seed + 3);
  b.start_epoch();
  Tensor bx;
  std::vector<int32_t> bl;
  std::vector<double> curve;
  for (int step = 0; step < o.consistency_steps; ++step) {
    if (!b.next(bx, bl, true)) {
      b.start_epoch();
      b.next(bx, bl, true);
    }
    curve.push_back(s.step(bx, bl).mean_loss());
  }
  return curve;
}

// Each record's verdict: its loss curve against the reference's (blas when measured, else the
// first implementation).
void compare_to_reference(nlohmann::json& consistency,
                          const std::vector<std::vector<double>>& curves, const Plan& p,
                          double tolerance) {
  std::size_t ref = 0;
  for (std::size_t i = 0; i < p.algos.size(); ++i) {
    if (std::string(p.algos[i]->name) == "blas") ref = i;
  }
  for (std::size_t i = 0; i < p.algos.size(); ++i) {
    double maxdiff = 0;
    for (std::size_t s = 0; s < curves[i].size(); ++s)
      maxdiff = std::max(maxdiff, std::abs(curves[i][s] - curves[ref][s]));
    consistency[i]["reference"] = p.algos[ref]->name;
    consistency[i]["max_abs_loss_diff"] = maxdiff;
    consistency[i]["tolerance"] = tolerance;
    consistency[i]["pass"] = maxdiff <= tolerance;
  }
}

// Accuracy consistency: identical initial weights and batches for every implementation; a
// record per implementation.
nlohmann::json measure_consistency(const MlpBenchOptions& o, const Plan& p,
                                   const ConsistencyData& data) {
  nlohmann::json consistency = nlohmann::json::array();
  std::vector<std::vector<double>> curves;
  for (const GemmAlgorithm* a : p.algos) {
    Session s(o, *a, p.threads);
    curves.push_back(loss_curve(s, data.train, o));
    const BatchResult ev = s.evaluate(data.test, 1000);
    consistency.push_back({{"impl", a->name},
                           {"steps", o.consistency_steps},
                           {"batch_size", o.consistency_batch},
                           {"final_loss", curves.back().back()},
                           {"test_acc", ev.accuracy()},
                           {"data", data.source}});
  }
  compare_to_reference(consistency, curves, p, o.consistency_tolerance);
  return consistency;
}

// ---- instrumentation overhead ----------------------------------------------------------------

// The CPU implementation with the fastest median training iteration at `batch` (`fallback`
// when that batch size was not measured): the per-layer profiler hooks the CPU graph.
const GemmAlgorithm* fastest_at(const nlohmann::json& records, int64_t batch,
                                const GemmAlgorithm* fallback) {
  const GemmAlgorithm* best = fallback;
  double best_ms = 1e300;
  for (const auto& r : records) {
    if (r["step"] == "train" && r["batch_size"] == batch &&
        find_gemm(r["impl"].get<std::string>()).device == Device::kCpu &&
        r["time_ms_median"].get<double>() < best_ms) {
      best_ms = r["time_ms_median"].get<double>();
      best = &find_gemm(r["impl"].get<std::string>());
    }
  }
  return best;
}

// Where the time goes: per-node means from the instrumented iterations (the warm-up included
// in the totals is negligible: 20 of overhead_reps + 20 iterations). Adds the nodes' sum to
// `nodes_ms`.
nlohmann::json node_breakdown(const Graph& g, const LayerProfiler::Totals& tot, double& nodes_ms) {
  nlohmann::json breakdown = nlohmann::json::array();
  const auto mean = [](double sum, int64_t n) { return n ? sum / static_cast<double>(n) : 0.0; };
  for (int i = 1; i < g.size(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    const double f = mean(tot.forward_ms[k], tot.forward_count[k]);
    const double b = mean(tot.backward_ms[k], tot.backward_count[k]);
    nodes_ms += f + b;
    breakdown.push_back({{"node", g.name(i)},
                         {"layer", g.layer(i).describe()},
                         {"forward_ms", f},
                         {"backward_ms", b}});
  }
  return breakdown;
}

// Instrumentation overhead: the fastest implementation at batch 64, hooked (every node, both
// phases) vs not, alternating; the overhead record.
nlohmann::json measure_overhead(const MlpBenchOptions& o, const Plan& p,
                                const nlohmann::json& records, Rng& data_rng,
                                const GemmAlgorithm* cpu_fallback) {
  Session s(o, *fastest_at(records, kOverheadBatch, cpu_fallback), p.threads);
  const Batch b = random_batch(data_rng, kOverheadBatch);
  LayerProfiler prof = LayerProfiler::all_nodes(s.graph);
  std::vector<double> plain, hooked;
  double hooked_sum = 0;  // every hooked iteration, as the profiler's per-node means cover them all
  int hooked_n = 0;
  for (int r = 0; r < o.overhead_reps + kOverheadWarmup; ++r) {
    for (int hook = 0; hook < 2; ++hook) {
      s.graph.set_hook(with_exec_log(s.exec.get(), hook ? &prof : nullptr));
      const int64_t t0 = now_ns();
      s.trainer.step(b.x, b.labels);
      const double ms = static_cast<double>(now_ns() - t0) * 1e-6;
      if (hook) hooked_sum += ms, ++hooked_n;
      if (r >= kOverheadWarmup) (hook ? hooked : plain).push_back(ms);
    }
  }
  s.graph.set_hook(with_exec_log(s.exec.get(), nullptr));
  double nodes_ms = 0;
  const nlohmann::json breakdown = node_breakdown(s.graph, prof.take(), nodes_ms);
  const TimerOverhead to = measure_timer_overhead();
  const double mp = median(plain), mh = median(hooked);
  return {{"impl", s.algo.name},
          {"batch_size", kOverheadBatch},
          {"timed_intervals_per_iteration", 2 * (s.graph.size() - 1)},
          {"uninstrumented_ms_median", mp},
          {"instrumented_ms_median", mh},
          {"overhead_percent", 100 * (mh / mp - 1)},
          {"timer_empty_interval_ns", to.empty_interval_ns},
          {"timer_pair_cost_ns", to.pair_cost_ns},
          {"reps", o.overhead_reps},
          {"breakdown", breakdown},
          // The iteration's mean minus the per-node means over the same iterations: what no node
          // interval covers (a median minus a sum of means could come out negative).
          {"other_ms", hooked_sum / std::max(hooked_n, 1) - nodes_ms},
          {"other_note", "loss, optimizer step and the timer's own cost; means over the same iterations"}};
}

// ---- assembly --------------------------------------------------------------------------------

nlohmann::json bench_context(const MlpBenchOptions& o, int threads) {
  nlohmann::json ctx = run_context();
  ctx["threads"] = threads;
  ctx["model"] = fmt::format("mlp 784-{}-10 {}", fmt::join(o.hidden, "-"), o.activation);
  ctx["hidden"] = o.hidden;
  ctx["activation"] = o.activation;
  ctx["optimizer"] = o.optimizer;
  ctx["learning_rate"] = optimizer_options(o.optimizer).lr;
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["device"] = o.device == Device::kCuda ? "cuda" : "cpu";
  if (o.device == Device::kCuda) {
    ctx["cuda_device"] = cuda::device_summary();
    ctx["gpu_timing"] =
        "host clock around each step and forward pass, which return when the device has "
        "finished (the loss is copied back once per step, as loss.item())";
  }
  ctx["flops_convention"] =
      "2 FLOPs per multiply-add; train = forward + weight-gradient + input-gradient GEMMs (first "
      "layer's input gradient skipped)";
  return ctx;
}

}  // namespace

MlpBenchResult run_mlp_bench(const MlpBenchOptions& options) {
  // The tables' spellings ("SGD" runs and is recorded as sgd), checked before a folder is claimed.
  MlpBenchOptions o = options;
  o.optimizer = find_optimizer(o.optimizer).name;
  o.activation = find_activation(o.activation).name;
  const Plan p = plan_bench(o);
  // The data first: a missing or corrupt --data is refused before any folder or measurement.
  const ConsistencyData data = o.consistency_steps > 0 ? consistency_data(o) : ConsistencyData{};
  MlpBenchResult result;
  result.out_dir = prepare_output_dir(o.out_dir, "results/mlp-bench", "--out-dir", o.overwrite);
  // At once, so a run that fails later leaves a folder nnperf knows as its own (--overwrite).
  write_run_json(result.out_dir, o.command_line, {{"job", "mlp-bench"}});
  Rng data_rng(o.seed + 17);  // the timing batches, then the overhead batch
  nlohmann::json records = nlohmann::json::array();
  for (int64_t mb : o.batch_sizes) {
    for (auto& r : measure_batch_size(o, p, mb, data_rng)) records.push_back(std::move(r));
  }
  nlohmann::json consistency = nlohmann::json::array();
  if (o.consistency_steps > 0) consistency = measure_consistency(o, p, data);
  for (const auto& c : consistency) result.consistent = result.consistent && c["pass"].get<bool>();
  nlohmann::json overhead = nullptr;
  const auto cpu_row = std::find_if(p.algos.begin(), p.algos.end(),
                                    [](const GemmAlgorithm* a) { return a->device == Device::kCpu; });
  if (o.overhead_reps > 0 && cpu_row != p.algos.end()) {
    overhead = measure_overhead(o, p, records, data_rng, *cpu_row);
  }
  result.json = {{"context", bench_context(o, p.threads)},
                 {"records", std::move(records)},
                 {"consistency", std::move(consistency)},
                 {"overhead", std::move(overhead)}};
  return result;
}

}  // namespace nnperf
