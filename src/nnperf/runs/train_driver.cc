#include "nnperf/runs/train_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "nnperf/build_info.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/data/dataset.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/models/registry.h"
#include "nnperf/profile/conv_timer.h"
#include "nnperf/runs/train_driver_records.h"
#include "nnperf/train/cuda_cnn.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// The steps cycle over this many distinct synthetic batches.
constexpr int64_t kDistinctBatches = 2;

// --device cuda (its --algorithm and --batchnorm names were read by run_train_driver): one
// micro-batch per step, a device and cuDNN present.
void validate_cuda(const TrainDriverOptions& o) {
  (void)parse_cuda_launch(o.launch);
  if (o.grad_accum_steps != 1) {
    throw UsageError("--grad-accum-steps: one micro-batch per step on the GPU so far");
  }
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
}

void validate(const TrainDriverOptions& o, const ModelEntry& m) {
  if (o.batch_size < 1)
    throw UsageError(fmt::format("--batch-size {}: expected at least 1", o.batch_size));
  if (o.iters < 1) throw UsageError(fmt::format("--iters {}: expected at least 1", o.iters));
  if (o.warmup_iters < 0)
    throw UsageError(fmt::format("--warmup-iters {}: expected 0 or more", o.warmup_iters));
  const bool image_model = std::string(m.name) != "mlp";
  if (image_model && o.input_size != 0 && o.input_size < m.min_input_size) {
    throw UsageError(fmt::format("--input-size {}: {} needs at least {}", o.input_size, m.name,
                                 m.min_input_size));
  }
  if (o.device == Device::kCuda) {
    validate_cuda(o);
  }
  if (o.grad_accum_steps < 1) {
    throw UsageError(fmt::format("--grad-accum-steps {}: expected at least 1", o.grad_accum_steps));
  }
  (void)make_optimizer(o.optimizer);
}

// [C, H, W] of one sample.
Shape sample_shape(const TrainDriverOptions& o, const ModelEntry& m) {
  const int64_t c = o.in_channels > 0 ? o.in_channels : m.default_input[0];
  const int64_t h = o.input_size > 0 ? o.input_size : m.default_input[1];
  const int64_t w = o.input_size > 0 ? o.input_size : m.default_input[2];
  return Shape{c, h, w};
}

std::string utc_timestamp() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> metrics_row(const TrainDriverOptions& o, const std::string& arch,
                                     const TrainDriverResult& r) {
  const bool gpu = o.device == Device::kCuda;
  return {utc_timestamp(),
          hostname(),
          arch,
          gpu ? "cuda" : "cpu",
          gpu ? cuda::device_summary() : cpu_info().model_name,
          std::to_string(o.batch_size),
          std::to_string(o.warmup_iters),
          std::to_string(o.iters),
          "fp32",
          csv_number(o.optimizer.lr, 8),
          csv_number(o.optimizer.momentum, 8),
          csv_number(o.optimizer.weight_decay, 8),
          csv_number(r.measured_sec, 8),
          csv_number(r.imgs_per_sec, 8),
          std::to_string(r.images_processed),
          "synthetic",
          o.label,
          fmt::format("nnperf {}",
                      build_info::kVersion),  // the column run_train.py fills with torch's version
          "false",                            // channels_last: nnperf is NCHW
          std::to_string(o.grad_accum_steps),
          o.deterministic ? "true" : "false",
          is_conv_find(o.algorithm) ? "true" : "false"};  // cudnn_benchmark = time every algorithm
}

}  // namespace

const std::vector<std::string>& train_metrics_header() {
  static const std::vector<std::string> h{
      "timestamp",     "hostname",       "arch",           "backend",        "device_name",
      "batch_size",    "warmup_iters",   "measured_iters", "precision",      "lr",
      "momentum",      "weight_decay",   "elapsed_sec",    "images_per_sec", "images_processed",
      "data_root",     "label",          "torch_version",  "channels_last",  "grad_accum_steps",
      "deterministic", "cudnn_benchmark"};
  return h;
}

namespace {

// The CPU steps; returns when the measured ones began (now_ns()).
int64_t cpu_steps(const TrainDriverOptions& o, Trainer& trainer, const std::vector<Tensor>& xs,
                  const std::vector<std::vector<int32_t>>& ys, TrainDriverResult& r) {
  int64_t t0 = now_ns();
  for (int i = 0; i < o.warmup_iters + o.iters; ++i) {
    check_interrupt();
    if (i == o.warmup_iters) t0 = now_ns();  // MEASURED_SEC: the warm-up steps are not measured
    const std::size_t b = static_cast<std::size_t>(i % kDistinctBatches);
    if (o.grad_accum_steps == 1) {
      r.final_loss = trainer.step(xs[b], ys[b]).mean_loss();
      continue;
    }
    // An optimizer step every --grad-accum-steps micro-batches, and after the last one.
    r.final_loss = trainer.accumulate(xs[b], ys[b]).mean_loss();
    if ((i + 1) % o.grad_accum_steps == 0 || i + 1 == o.warmup_iters + o.iters) {
      trainer.apply_accumulated();
    }
  }
  return t0;
}

// The GPU steps: the graph planned for training on the host (shapes and parameters only), then
// CudaCnnTrainer; every step uploads its batch and returns when the device has finished.
int64_t gpu_steps(const TrainDriverOptions& o, const ModelEntry& m, Graph& graph,
                  const Shape& sample, const std::vector<Tensor>& xs,
                  const std::vector<std::vector<int32_t>>& ys, TrainDriverResult& r) {
  PlanContext host;  // shapes only: the CPU convolutions plan as guess and never run
  host.training = true;
  host.node_storage = false;
  plan_model(m, graph, Shape{o.batch_size, sample[0], sample[1], sample[2]}, host);
  if (const std::string why = cuda_training_unsupported(graph); !why.empty()) {
    throw UsageError(fmt::format("--model {} --device cuda: {}", m.name, why));
  }
  CudaCnnTrainer trainer(
      graph, o.optimizer,
      {o.algorithm, o.label_smoothing, o.deterministic, o.find_engines, o.batchnorm, o.launch});
  int64_t t0 = now_ns();
  for (int i = 0; i < o.warmup_iters + o.iters; ++i) {
    check_interrupt();
    if (i == o.warmup_iters) t0 = now_ns();
    const std::size_t b = static_cast<std::size_t>(i % kDistinctBatches);
    r.final_loss =
        trainer.step({xs[b].data(), static_cast<std::size_t>(xs[b].numel())}, ys[b]).mean_loss();
  }
  r.launch = trainer.launch();
  r.graph_launches = trainer.graph_launches();
  return t0;
}

// What metrics_records.json keeps of a run beyond its metrics.csv row.
nlohmann::json run_facts(const TrainDriverOptions& o, const ModelEntry& m, const Shape& sample,
                         int64_t classes, int threads, const TrainDriverResult& r) {
  nlohmann::json j = {{"model", m.name},
                      {"input", sample.dims()},
                      {"classes", classes},
                      {"algorithm", o.algorithm},
                      {"optimizer", o.optimizer.name},
                      {"label_smoothing", o.label_smoothing},
                      {"seed", o.seed},
                      {"threads", threads},
                      {"final_loss", r.final_loss},
                      {"command", o.command_line}};
  if (o.device == Device::kCuda) {
    j["batchnorm"] = o.batchnorm;
    j["launch"] = r.launch;
    j["graph_launches"] = r.graph_launches;
  }
  return j;
}

}  // namespace

TrainDriverResult run_train_driver(const TrainDriverOptions& options) {
  TrainDriverOptions o = options;
  o.algorithm = canonical_train_algorithm(o.algorithm, o.device == Device::kCuda, o.find_engines,
                                          o.deterministic);
  o.batchnorm = cudnn::checked_batchnorm_algorithm("--batchnorm", o.batchnorm);
  const ModelEntry& m = find_model(o.model);
  validate(o, m);
  const int threads = set_threads(o.threads);
  set_blas_threads(
      1);  // as in CNN inference (core/threads.h): OpenBLAS's spinning pool vs the OpenMP team
  const Shape sample = sample_shape(o, m);
  const fs::path metrics = o.log_dir / "metrics.csv";
  ensure_writable_dir(o.log_dir, "--log-dir");
  // metrics.csv and its record checked now: a file the run could not add to costs no run.
  (void)driver_records::load(o.log_dir, train_metrics_header());

  const int64_t n = o.batch_size * kDistinctBatches;
  check_memory(checked_mul(n, sample.numel() * 4).value_or(-1),
               fmt::format("--batch-size {} of {} synthetic images", o.batch_size, sample.str()));
  ModelOptions mo;
  mo.input_shape = sample;
  mo.classes = o.num_classes;
  // ModelOptions::classes 0 = the model's default: the MLP's 10, the ImageNet CNNs' 1000.
  const int64_t classes =
      o.num_classes > 0 ? o.num_classes : (std::string(m.name) == "mlp" ? 10 : 1000);
  const std::string model_what =
      fmt::format("--model {} with {} classes (--num-classes)", m.name, classes);
  Graph graph = [&] {
    const MemoryContext building(model_what);
    return m.build(mo);
  }();
  check_training_memory(graph, o.optimizer, model_what, o.device != Device::kCuda);
  const MemoryContext memory(fmt::format("{} at batch {} of {} (--batch-size, --input-size)",
                                         m.name, o.batch_size, sample.str()));
  Rng rng(o.seed);
  graph.init(rng);
  PlanContext ctx;
  ctx.threads = threads;
  ctx.training = true;
  ctx.conv_algorithm = o.algorithm;
  ctx.time_conv = time_conv_ms;
  ctx.time_conv_backward = time_conv_backward_ms;

  const Dataset data =
      make_synthetic(n, static_cast<int>(sample[0]), static_cast<int>(sample[1]),
                     static_cast<int>(sample[2]), static_cast<int>(classes), o.seed);
  std::vector<Tensor> xs;
  std::vector<std::vector<int32_t>> ys;
  for (int64_t b = 0; b < kDistinctBatches; ++b) {
    Tensor x(Shape{o.batch_size, sample[0], sample[1], sample[2]});
    const int64_t per = x.numel();
    std::copy(data.images.data() + b * per, data.images.data() + (b + 1) * per, x.data());
    xs.push_back(std::move(x));
    ys.emplace_back(data.labels.begin() + b * o.batch_size,
                    data.labels.begin() + (b + 1) * o.batch_size);
  }

  TrainDriverResult r;
  int64_t t0 = now_ns();
  if (o.device == Device::kCuda) {
    t0 = gpu_steps(o, m, graph, sample, xs, ys, r);
  } else {
    Trainer trainer(graph, make_optimizer(o.optimizer), ctx, o.label_smoothing);
    t0 = cpu_steps(o, trainer, xs, ys, r);
  }
  r.measured_sec = seconds_since(t0);
  r.images_processed = o.batch_size * o.iters;
  r.imgs_per_sec = static_cast<double>(r.images_processed) / r.measured_sec;
  const driver_records::AppendResult added =
      driver_records::append(o.log_dir, train_metrics_header(), metrics_row(o, m.name, r),
                             run_facts(o, m, sample, classes, threads, r));
  r.metrics_written_whole = added.written_whole;
  r.metrics_rows = added.rows;
  r.metrics_csv = metrics;
  return r;
}

}  // namespace nnperf
