// The `train` job. Timing rules (usra-survey MLP.py's mistakes, not repeated): only training
// forwards are timed per layer (evaluation passes run with the profiler detached), no device-wide
// synchronisation inside the timed region, the timer's own overhead is measured and reported (and
// not subtracted), and MEASURED_SEC counts the training steps only.
#include "nnperf/runs/train_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/threads.h"
#include "nnperf/data/dataset.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/run_info.h"
#include "nnperf/io/tensorboard.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/mlp.h"
#include "nnperf/core/clock.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/profiler.h"
#include "nnperf/runs/train_outputs.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/train/cuda_mlp.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || v <= 0) {
      throw UsageError(
          fmt::format("{} '{}': expected a comma-separated list of positive integers", flag, text));
    }
    out.push_back(v);
    pos = comma + 1;
  }
  return out;
}

namespace {

struct Data {
  Dataset train, val, test;
  std::string source;
};

Data load_data(const DataOptions& o, uint64_t seed) {
  Data d;
  Dataset all;
  if (o.synthetic) {
    // Sizes from flags: the whole draw (and its split copy) must fit before it is made.
    const int64_t n = o.synthetic_train + o.synthetic_test + o.val_split;
    const auto bytes = checked_mul(n, int64_t{2 * 28 * 28 * 4});
    check_memory(
        bytes.value_or(-1),
        fmt::format("--val-split {} with --synthetic ({} samples of 28x28)", o.val_split, n));
    // One draw (the class patterns depend on the seed), then the test part split off.
    Dataset everything =
        make_synthetic(o.synthetic_train + o.val_split + o.synthetic_test, 1, 28, 28, 10, seed);
    auto [rest, test] = split_dataset(everything, o.synthetic_test, seed + 7919);
    all = std::move(rest);
    d.test = std::move(test);
    d.source = "synthetic";
  } else {
    const auto dir = o.dir.empty() ? default_data_dir() : o.dir;
    all = load_mnist(dir, "train");
    d.test = load_mnist(dir, "t10k");
    d.source = dir.string();
    check_same_sample_shape(all, d.test, dir.string());
  }
  if (o.val_split < 0 || o.val_split >= all.size()) {
    throw UsageError(fmt::format("--val-split {}: expected 0 <= n < {} (the training set size)",
                                 o.val_split, all.size()));
  }
  if (o.val_split > 0) {
    auto [tr, va] = split_dataset(all, o.val_split, seed);
    d.train = std::move(tr);
    d.val = std::move(va);
  } else {
    d.train = std::move(all);
  }
  d.train = take_first(d.train, o.limit_train);
  d.test = take_first(d.test, o.limit_test);
  return d;
}

// The CUDA event timer's cost in the CPU timer's terms: the device time an empty pair reads and
// the host time recording a pair costs.
TimerOverhead event_timer_overhead() {
  const cuda::EventTimerOverhead e = cuda::measure_event_timer_overhead(200);
  TimerOverhead t;
  t.empty_interval_ns = e.device_ms_empty_pair * 1e6;
  t.pair_cost_ns = e.host_us_per_pair * 1e3;
  return t;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0.0 : s / static_cast<double>(v.size());
}

}  // namespace

void check_mlp_memory(const std::vector<int64_t>& hidden, int64_t batch, const std::string& what,
                      int64_t copies) {
  constexpr int64_t kFeatures = 28 * 28, kClasses = 10;
  int64_t params = 0, widths = kFeatures + kClasses;
  int64_t prev = kFeatures;
  bool overflow = false;
  auto add = [&](int64_t& acc, std::optional<int64_t> v) {
    const auto r = v ? checked_add(acc, *v) : std::nullopt;
    if (!r) overflow = true;
    acc = r.value_or(0);
  };
  for (int64_t h : hidden) {
    add(params, checked_mul(prev, h));
    add(params, h);
    add(widths, h);
    prev = h;
  }
  add(params, checked_mul(prev, kClasses));
  add(params, kClasses);  // the output layer's bias
  int64_t floats = 0;
  add(floats, checked_mul(params, 4));
  add(floats, checked_mul(widths, checked_mul(batch, 3).value_or(-1)));
  const auto bytes = checked_mul(floats, checked_mul(4, copies).value_or(-1));
  check_memory(overflow || !bytes ? -1 : *bytes, fmt::format("{} ({} parameters)", what, params));
}

void validate_training(const TrainRunOptions& o) {
  if (o.init != "pytorch" && o.init != "he") {
    throw UsageError(fmt::format("--init '{}': expected pytorch or he", o.init));
  }
  if (o.epochs <= 0)
    throw UsageError(fmt::format("--epochs {}: expected a positive number", o.epochs));
  if (o.warmup_epochs < 0 || o.warmup_epochs >= o.epochs) {
    throw UsageError(fmt::format("--warmup-epochs {}: expected 0 <= n < --epochs ({})",
                                 o.warmup_epochs, o.epochs));
  }
  if (o.batch_size <= 0)
    throw UsageError(fmt::format("--batch-size {}: expected a positive number", o.batch_size));
  if (!(o.optimizer.lr > 0.0f))
    throw UsageError(fmt::format("--lr {}: expected a positive number", o.optimizer.lr));
  (void)make_optimizer(o.optimizer);  // an unknown --optimizer is refused before the data is read
  (void)find_activation(o.activation);
  if (const GemmAlgorithm& g = find_gemm(o.gemm); g.device != o.device) {
    throw UsageError(fmt::format("--impl {}: runs on the {} device; with --device {} use one "
                                 "of: {}",
                                 o.gemm, device_name(g.device), device_name(o.device),
                                 gemm_algorithm_names(o.device)));
  }
  if (o.device == Device::kCuda) cuda::require("--device cuda");
  check_mlp_memory(o.hidden, std::max(o.batch_size, o.eval_batch_size),
                   fmt::format("the MLP with --hidden {} and --batch-size {}",
                               fmt::join(o.hidden, ","), o.batch_size));
}

namespace {

// Everything one run measures with: the model, its trainer and the per-layer timer. On the GPU
// the graph holds the initial weights and the layer list; CudaMlpTrainer trains a device copy
// and the profiler's intervals are CUDA events.
struct Session {
  Session(const TrainRunOptions& o, const Data& data, int threads)
      : act(find_activation(o.activation)),
        gemm(find_gemm(o.gemm, o.device)),
        cpu_gemm(o.device == Device::kCpu ? &gemm : &find_gemm("blocked")),
        graph(initialized_mlp(o, data, act)),
        trainer(graph, make_optimizer(o.optimizer), PlanContext{cpu_gemm, threads, true},
                o.label_smoothing),
        profiler(LayerProfiler::activations_forward(
            graph, o.device == Device::kCuda ? cuda::make_event_timer(2 * graph.size())
                                             : nullptr)),
        // NNPERF_VERBOSE=exec logs every node of every pass: training steps and evaluations.
        exec(exec_log_from_env(graph, "mlp", gemm.name)) {
    // Batches arrive flattened (mb x features), so the graph needs no Flatten copy.
    graph.plan(Shape{o.batch_size, data.train.sample_numel()},
               PlanContext{cpu_gemm, threads, true});
    for (int i = 1; i < graph.size(); ++i) {
      if (graph.layer(i).is_activation()) act_nodes.push_back(i);
    }
    if (o.device == Device::kCuda) {
      gpu = std::make_unique<CudaMlpTrainer>(graph, gemm, o.optimizer, o.label_smoothing);
    }
    set_hook(false);
  }
  // The profiler joins the exec log (when set) around every node of the training steps.
  void set_hook(bool timed) {
    GraphHook* h = with_exec_log(exec.get(), timed ? &profiler : nullptr);
    if (gpu) {
      gpu->set_hook(h);
    } else {
      graph.set_hook(h);
    }
  }
  BatchResult step(const Tensor& x, std::span<const int32_t> labels) {
    return gpu ? gpu->step(x, labels) : trainer.step(x, labels);
  }
  BatchResult evaluate(const Dataset& data, int64_t batch_size) {
    return gpu ? gpu->evaluate(data, batch_size) : trainer.evaluate(data, batch_size);
  }
  static Graph initialized_mlp(const TrainRunOptions& o, const Data& data,
                               const ActivationKernel& act) {
    Graph g = build_mlp(data.train.sample_numel(), o.hidden, data.train.num_classes, act,
                        /*flatten=*/false,
                        o.init == "he" ? LinearInit::kHeNormal : LinearInit::kTorchDefault);
    Rng rng(o.seed);
    g.init(rng);
    return g;
  }
  const ActivationKernel& act;
  const GemmAlgorithm& gemm;
  const GemmAlgorithm* cpu_gemm;  // plans the graph (FLOP counts; the CPU trainer's GEMM)
  Graph graph;
  Trainer trainer;
  LayerProfiler profiler;
  std::unique_ptr<ExecLog> exec;
  std::unique_ptr<CudaMlpTrainer> gpu;
  std::vector<int> act_nodes;
};

nlohmann::json run_record(const Session& s, const Data& data, const TimerOverhead& overhead) {
  nlohmann::json r = {
      {"job", "train"},
      {"model",
       {{"name", "mlp"}, {"layers", nlohmann::json::array()}, {"params", s.graph.num_params()}}},
      {"data", data.source},
      {"gemm", s.gemm.name},
      {"device", s.gpu ? "cuda" : "cpu"},
      {"timer",
       {{"clock", s.profiler.timer_name()},
        {"empty_interval_ns", overhead.empty_interval_ns},
        {"pair_cost_ns", overhead.pair_cost_ns},
        {"note", "per-layer times include the timer's own overhead; nothing is subtracted"}}}};
  for (int i = 1; i < s.graph.size(); ++i)
    r["model"]["layers"].push_back(s.graph.layer(i).describe());
  if (s.gpu) {
    r["cuda_device"] = cuda::device_summary();
    r["timer"]["note"] =
        "CUDA events around each activation layer's kernels, recorded into the stream and read "
        "after one synchronisation per epoch; the step itself returns when the device has "
        "finished. Per-layer times include the timer's own overhead; nothing is subtracted";
  }
  return r;
}

// One epoch: the training steps (timed per activation layer unless a warm-up epoch), then the
// validation pass with the profiler detached.
EpochRecord train_epoch(Session& s, Batcher& batcher, const Data& data, const TrainRunOptions& o,
                        int epoch, Progress& progress, int64_t& images) {
  EpochRecord rec;
  rec.epoch = epoch;
  rec.timed = o.time_layers && epoch > o.warmup_epochs;
  batcher.start_epoch();
  BatchResult train_acc;
  int64_t batch_index = 0, step_ns = 0;
  Tensor x;
  std::vector<int32_t> labels;
  s.set_hook(rec.timed);
  s.profiler.take();  // discard anything stale
  while (batcher.next(x, labels, /*flatten=*/true)) {
    const int64_t t0 = now_ns();
    train_acc += s.step(x, labels);
    step_ns += now_ns() - t0;
    ++batch_index;
    if (progress.is_bar()) {
      const double secs = static_cast<double>(step_ns) * 1e-9;
      progress.update(fmt::format("epoch {}/{}", epoch, o.epochs), batch_index,
                      batcher.batches_per_epoch(),
                      fmt::format("loss {:.4f} acc {:.3f} {:.0f} img/s", train_acc.mean_loss(),
                                  train_acc.accuracy(),
                                  secs > 0 ? static_cast<double>(train_acc.count) / secs : 0.0));
    }
  }
  s.set_hook(false);
  const LayerProfiler::Totals totals = s.profiler.take();
  rec.train_loss = train_acc.mean_loss();
  rec.train_acc = train_acc.accuracy();
  rec.train_sec = static_cast<double>(step_ns) * 1e-9;
  rec.imgs_per_sec = rec.train_sec > 0 ? static_cast<double>(train_acc.count) / rec.train_sec : 0.0;
  images = train_acc.count;
  if (data.val.size() > 0) {
    const BatchResult v = s.evaluate(data.val, o.eval_batch_size);
    rec.val_loss = v.mean_loss();
    rec.val_acc = v.accuracy();
  }
  if (rec.timed) {
    for (int node : s.act_nodes) {
      rec.layer_ms.push_back(totals.forward_mean_ms(node));
      rec.total_ms += rec.layer_ms.back();
    }
  }
  return rec;
}

// The means over the timed epochs.
void summarize_epochs(TrainRunResult& result, std::size_t layers) {
  int timed = 0;
  result.layer_ms.assign(layers, 0.0);
  std::vector<double> totals;
  for (const EpochRecord& r : result.epochs) {
    if (!r.timed) continue;
    ++timed;
    for (std::size_t i = 0; i < layers; ++i) result.layer_ms[i] += r.layer_ms[i];
    totals.push_back(r.total_ms);
  }
  for (double& v : result.layer_ms) v = timed > 0 ? v / timed : 0.0;
  result.total_activation_ms = mean(totals);
  result.imgs_per_sec = result.measured_sec > 0
                            ? static_cast<double>(result.images_trained) / result.measured_sec
                            : 0.0;
}

nlohmann::json final_results_json(const TrainRunResult& result, const TrainRunOptions& o,
                                  const Session& s, const Data& data, int64_t test_samples,
                                  int threads) {
  const EpochRecord& last = result.epochs.back();
  const int timed_epochs = o.epochs - o.warmup_epochs;
  const bool has_val = data.val.size() > 0;
  nlohmann::json j = {
      {"activation", s.act.name},
      {"final_train_loss", last.train_loss},
      {"final_train_acc", last.train_acc},
      {"final_val_loss", has_val ? nlohmann::json(last.val_loss) : nlohmann::json(nullptr)},
      {"final_val_acc", has_val ? nlohmann::json(last.val_acc) : nlohmann::json(nullptr)},
      {"validation_samples", data.val.size()},
      {"final_test_loss", result.test_loss},
      {"final_test_acc", result.test_acc},
      {"test_samples", test_samples},
      {"activation_times", nlohmann::json::object()},
      {"total_activation_time", result.total_activation_ms},
      {"hyperparameters",
       {{"batch_size", o.batch_size},
        // "epochs" as usra-survey's README shows it: the timed epochs (total_epochs counts the
        // warm-up epochs too).
        {"epochs", timed_epochs},
        {"total_epochs", o.epochs},
        {"warmup_epochs", o.warmup_epochs},
        {"timing_epochs", timed_epochs},
        {"learning_rate", o.optimizer.lr},
        {"optimizer", checked_optimizer(o.optimizer).name},
        {"hidden", o.hidden},
        {"seed", o.seed},
        {"threads", threads},
        {"gemm", s.gemm.name},
        {"device", s.gpu ? "cuda" : "cpu"}}},
      {"timing_unit", "ms per training forward pass (mean over timed epochs)"},
      {"timer_empty_interval_ns", result.timer_empty_interval_ns},
      {"timer_pair_cost_ns", result.timer_pair_cost_ns},
      {"measured_sec", result.measured_sec},
      {"measured_epochs", timed_epochs},
      {"imgs_per_sec", result.imgs_per_sec}};
  for (std::size_t i = 0; i < result.layer_ms.size(); ++i) {
    j["activation_times"][fmt::format("layer_{}", i + 1)] = result.layer_ms[i];
  }
  return j;
}

}  // namespace

TrainRunResult run_training(const TrainRunOptions& o) {
  validate_training(o);
  const int threads = set_threads(o.threads);
  Progress progress(o.progress);
  const Data data = load_data(o.data, o.seed);
  const MemoryContext memory_context(fmt::format("the MLP with --hidden {} and --batch-size {}",
                                                 fmt::join(o.hidden, ","), o.batch_size));
  progress.line(fmt::format("data: {} ({} train, {} validation, {} test samples)", data.source,
                            data.train.size(), data.val.size(), data.test.size()));
  Session s(o, data, threads);
  // Only now, with the data read and the model planned, is the folder claimed: a run refused
  // above leaves nothing behind.
  TrainRunResult result;
  result.out_dir = prepare_output_dir(o.out_dir, "runs/mlp", "--out-dir", o.overwrite);
  const TimerOverhead overhead = s.gpu ? event_timer_overhead() : measure_timer_overhead();
  result.timer_empty_interval_ns = overhead.empty_interval_ns;
  result.timer_pair_cost_ns = overhead.pair_cost_ns;
  const nlohmann::json run = run_record(s, data, overhead);
  write_run_json(result.out_dir, o.command_line, run);
  TrainOutputs outputs(result.out_dir, run, static_cast<int>(s.act_nodes.size()),
                       data.val.size() > 0, o.tensorboard, o.epochs, progress);

  Batcher batcher(data.train, o.batch_size, /*shuffle=*/true, o.seed + 1);
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    int64_t images = 0;
    EpochRecord rec = train_epoch(s, batcher, data, o, epoch, progress, images);
    if (epoch > o.warmup_epochs) {  // MEASURED_SEC: warm-up epochs are not measured
      result.measured_sec += rec.train_sec;
      result.images_trained += images;
    }
    outputs.add(rec);
    result.epochs.push_back(std::move(rec));
  }
  progress.finish();

  const BatchResult test = s.evaluate(data.test, o.eval_batch_size);
  result.test_loss = test.mean_loss();
  result.test_acc = test.accuracy();
  summarize_epochs(result, s.act_nodes.size());
  outputs.finish(result, final_results_json(result, o, s, data, test.count, threads), test.count);
  return result;
}

}  // namespace nnperf
