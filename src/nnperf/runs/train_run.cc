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
#include "nnperf/profile/clock.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/profiler.h"
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

Dataset take_first(const Dataset& d, int64_t n) {
  if (n <= 0 || n >= d.size()) return d;
  Dataset out;
  out.name = fmt::format("{}[:{}]", d.name, n);
  out.num_classes = d.num_classes;
  Shape s = d.images.shape();
  s[0] = n;
  out.images = Tensor(s);
  std::memcpy(out.images.data(), d.images.data(),
              static_cast<std::size_t>(out.images.numel()) * sizeof(float));
  out.labels.assign(d.labels.begin(), d.labels.begin() + n);
  return out;
}

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
    check_memory(bytes.value_or(-1),
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
  int64_t floats = 0;
  add(floats, checked_mul(params, 4));
  add(floats, checked_mul(widths, checked_mul(batch, 3).value_or(-1)));
  const auto bytes = checked_mul(floats, checked_mul(4, copies).value_or(-1));
  check_memory(overflow || !bytes ? -1 : *bytes, fmt::format("{} ({} parameters)", what, params));
}

TrainRunResult run_training(const TrainRunOptions& o) {
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
  const int threads = set_threads(o.threads);
  (void)make_optimizer(o.optimizer);  // an unknown --optimizer is refused before the data is read
  const ActivationKernel& act = find_activation(o.activation);
  const GemmAlgorithm& gemm = find_gemm(o.gemm);
  check_mlp_memory(o.hidden, std::max(o.batch_size, o.eval_batch_size),
                   fmt::format("the MLP with --hidden {} and --batch-size {}", fmt::join(o.hidden, ","),
                               o.batch_size));

  Progress progress(o.progress);
  const Data data = load_data(o.data, o.seed);
  const MemoryContext memory_context(
      fmt::format("the MLP with --hidden {} and --batch-size {}", fmt::join(o.hidden, ","), o.batch_size));
  progress.line(fmt::format("data: {} ({} train, {} validation, {} test samples)", data.source,
                            data.train.size(), data.val.size(), data.test.size()));

  const int64_t features = data.train.sample_numel();
  // Batches arrive flattened (mb x features), so the graph needs no Flatten copy.
  Graph graph = build_mlp(features, o.hidden, data.train.num_classes, act, /*flatten=*/false,
                          o.init == "he" ? LinearInit::kHeNormal : LinearInit::kTorchDefault);
  Rng init_rng(o.seed);
  graph.init(init_rng);
  PlanContext plan{&gemm, threads, true};
  Trainer trainer(graph, make_optimizer(o.optimizer), plan, o.label_smoothing);
  graph.plan(Shape{o.batch_size, features}, plan);
  // Only now, with the data read and the model planned, is the folder claimed: a run refused
  // above leaves nothing behind.
  const std::filesystem::path out_dir = prepare_output_dir(o.out_dir, "runs/mlp", "--out-dir", o.overwrite);

  std::vector<int> act_nodes;
  for (int i = 1; i < graph.size(); ++i) {
    if (graph.layer(i).is_activation()) act_nodes.push_back(i);
  }
  LayerProfiler profiler = LayerProfiler::activations_forward(graph);
  // NNPERF_VERBOSE=exec logs every node of every pass: training steps and evaluations.
  const std::unique_ptr<ExecLog> exec = exec_log_from_env(graph, "mlp", gemm.name);
  graph.set_hook(with_exec_log(exec.get(), nullptr));
  const TimerOverhead overhead = measure_timer_overhead();

  std::vector<std::string> timing_header{"epoch"};
  for (std::size_t i = 0; i < act_nodes.size(); ++i)
    timing_header.push_back(fmt::format("layer_{}", i + 1));
  timing_header.push_back("total_time");
  CsvWriter metrics_csv(out_dir / "training_metrics.csv",
                        {"epoch", "train_loss", "train_acc", "val_loss", "val_acc"});
  CsvWriter timing_csv(out_dir / "activation_timings.csv", timing_header);
  std::unique_ptr<TensorBoardWriter> tb;
  if (o.tensorboard) tb = std::make_unique<TensorBoardWriter>(out_dir / "tensorboard");

  nlohmann::json run_extra = {
      {"job", "train"},
      {"model",
       {{"name", "mlp"}, {"layers", nlohmann::json::array()}, {"params", graph.num_params()}}},
      {"data", data.source},
      {"gemm", gemm.name},
      {"timer",
       {{"clock", profiler.timer_name()},
        {"empty_interval_ns", overhead.empty_interval_ns},
        {"pair_cost_ns", overhead.pair_cost_ns},
        {"note", "per-layer times include the timer's own overhead; nothing is subtracted"}}}};
  for (int i = 1; i < graph.size(); ++i)
    run_extra["model"]["layers"].push_back(graph.layer(i).describe());
  write_run_json(out_dir, o.command_line, run_extra);

  TrainRunResult result;
  result.out_dir = out_dir;
  result.timer_empty_interval_ns = overhead.empty_interval_ns;
  result.timer_pair_cost_ns = overhead.pair_cost_ns;
  Batcher batcher(data.train, o.batch_size, /*shuffle=*/true, o.seed + 1);
  Tensor x;
  std::vector<int32_t> labels;
  const int64_t total_batches = batcher.batches_per_epoch();

  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    EpochRecord rec;
    rec.epoch = epoch;
    rec.timed = o.time_layers && epoch > o.warmup_epochs;
    batcher.start_epoch();
    BatchResult train_acc;
    int64_t batch_index = 0;
    int64_t step_ns = 0;
    graph.set_hook(with_exec_log(exec.get(), rec.timed ? &profiler : nullptr));
    profiler.take();  // discard anything stale
    while (batcher.next(x, labels, /*flatten=*/true)) {
      const int64_t t0 = now_ns();
      train_acc += trainer.step(x, labels);
      step_ns += now_ns() - t0;
      ++batch_index;
      if (progress.is_bar()) {
        const double secs = static_cast<double>(step_ns) * 1e-9;
        progress.update(fmt::format("epoch {}/{}", epoch, o.epochs), batch_index, total_batches,
                        fmt::format("loss {:.4f} acc {:.3f} {:.0f} img/s", train_acc.mean_loss(),
                                    train_acc.accuracy(),
                                    secs > 0 ? static_cast<double>(train_acc.count) / secs : 0.0));
      }
    }
    graph.set_hook(with_exec_log(exec.get(), nullptr));
    const LayerProfiler::Totals totals = profiler.take();
    rec.train_loss = train_acc.mean_loss();
    rec.train_acc = train_acc.accuracy();
    rec.train_sec = static_cast<double>(step_ns) * 1e-9;
    rec.imgs_per_sec =
        rec.train_sec > 0 ? static_cast<double>(train_acc.count) / rec.train_sec : 0.0;
    if (epoch > o.warmup_epochs) {  // MEASURED_SEC: warm-up epochs are not measured
      result.measured_sec += rec.train_sec;
      result.images_trained += train_acc.count;
    }
    const bool has_val = data.val.size() > 0;
    if (has_val) {
      const BatchResult v = trainer.evaluate(data.val, o.eval_batch_size);
      rec.val_loss = v.mean_loss();
      rec.val_acc = v.accuracy();
    }
    // Without a validation split the cells stay empty: no made-up zeros.
    metrics_csv.row({std::to_string(epoch), csv_number(rec.train_loss, 8),
                     csv_number(rec.train_acc, 8), has_val ? csv_number(rec.val_loss, 8) : "",
                     has_val ? csv_number(rec.val_acc, 8) : ""});
    if (rec.timed) {
      std::vector<std::string> row{std::to_string(epoch)};
      for (int node : act_nodes) {
        rec.layer_ms.push_back(totals.forward_mean_ms(node));
        rec.total_ms += rec.layer_ms.back();
        row.push_back(csv_number(rec.layer_ms.back(), 8));
      }
      row.push_back(csv_number(rec.total_ms, 8));
      timing_csv.row(row);
    }
    if (tb) {
      tb->add_scalar("Loss/train", rec.train_loss, epoch);
      tb->add_scalar("Accuracy/train", rec.train_acc, epoch);
      if (data.val.size() > 0) {
        tb->add_scalar("Loss/val", rec.val_loss, epoch);
        tb->add_scalar("Accuracy/val", rec.val_acc, epoch);
      }
      tb->add_scalar("Throughput/train_imgs_per_sec", rec.imgs_per_sec, epoch);
      for (std::size_t i = 0; i < rec.layer_ms.size(); ++i) {
        tb->add_scalar(fmt::format("Timing/layer_{}_ms", i + 1), rec.layer_ms[i], epoch);
      }
      if (rec.timed) tb->add_scalar("Timing/total_activation_ms", rec.total_ms, epoch);
      tb->flush();
    }
    std::string line = fmt::format("epoch {}/{}: train_loss {:.4f} train_acc {:.4f}", epoch,
                                   o.epochs, rec.train_loss, rec.train_acc);
    if (data.val.size() > 0)
      line += fmt::format(" val_loss {:.4f} val_acc {:.4f}", rec.val_loss, rec.val_acc);
    line += fmt::format(" | {:.2f} s, {:.0f} img/s", rec.train_sec, rec.imgs_per_sec);
    if (rec.timed) line += fmt::format(" | activations {:.4f} ms/forward", rec.total_ms);
    progress.line(line);
    result.epochs.push_back(std::move(rec));
  }
  progress.finish();

  const BatchResult test = trainer.evaluate(data.test, o.eval_batch_size);
  result.test_loss = test.mean_loss();
  result.test_acc = test.accuracy();
  result.imgs_per_sec = result.measured_sec > 0
                            ? static_cast<double>(result.images_trained) / result.measured_sec
                            : 0.0;
  int timed_epochs = 0;
  result.layer_ms.assign(act_nodes.size(), 0.0);
  for (const EpochRecord& r : result.epochs) {
    if (!r.timed) continue;
    ++timed_epochs;
    for (std::size_t i = 0; i < act_nodes.size(); ++i) result.layer_ms[i] += r.layer_ms[i];
  }
  for (double& v : result.layer_ms) v = timed_epochs > 0 ? v / timed_epochs : 0.0;
  std::vector<double> totals_per_epoch;
  for (const EpochRecord& r : result.epochs) {
    if (r.timed) totals_per_epoch.push_back(r.total_ms);
  }
  result.total_activation_ms = mean(totals_per_epoch);

  const EpochRecord& last = result.epochs.back();
  nlohmann::json final_json = {
      {"activation", act.name},
      {"final_train_loss", last.train_loss},
      {"final_train_acc", last.train_acc},
      {"final_val_loss", data.val.size() > 0 ? nlohmann::json(last.val_loss) : nlohmann::json(nullptr)},
      {"final_val_acc", data.val.size() > 0 ? nlohmann::json(last.val_acc) : nlohmann::json(nullptr)},
      {"validation_samples", data.val.size()},
      {"final_test_loss", result.test_loss},
      {"final_test_acc", result.test_acc},
      {"test_samples", test.count},
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
        {"optimizer", o.optimizer.name},
        {"hidden", o.hidden},
        {"seed", o.seed},
        {"threads", threads},
        {"gemm", gemm.name}}},
      {"timing_unit", "ms per training forward pass (mean over timed epochs)"},
      {"timer_empty_interval_ns", overhead.empty_interval_ns},
      {"timer_pair_cost_ns", overhead.pair_cost_ns},
      {"measured_sec", result.measured_sec},
      {"measured_epochs", o.epochs - o.warmup_epochs},
      {"imgs_per_sec", result.imgs_per_sec}};
  for (std::size_t i = 0; i < result.layer_ms.size(); ++i) {
    final_json["activation_times"][fmt::format("layer_{}", i + 1)] = result.layer_ms[i];
  }
  write_json_atomic(out_dir / "final_results.json", final_json);
  progress.line(fmt::format("test: loss {:.4f} acc {:.4f} ({} samples)", result.test_loss,
                            result.test_acc, test.count));
  return result;
}

}  // namespace nnperf
