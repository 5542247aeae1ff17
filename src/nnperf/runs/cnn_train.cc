// The CNN `train` job: plan (data, model, schedule, resume), then epochs of measured steps, each
// epoch appended as a record that the reporter (cnn_train_outputs) renders. Timing rules as the
// MLP job: MEASURED_SEC counts the training steps of the timed epochs only (evaluation,
// checkpoints and --warmup-epochs excluded); the loader's wait is measured inside that time.
#include "nnperf/runs/cnn_train.h"

#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <string>
#include <system_error>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/text.h"
#include "nnperf/core/threads.h"
#include "nnperf/data/loader.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/files.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/models/registry.h"
#include "nnperf/profile/conv_timer.h"
#include "nnperf/profile/nvtx.h"
#include "nnperf/runs/cnn_train_outputs.h"
#include "nnperf/train/checkpoint.h"
#include "nnperf/train/cuda_cnn.h"
#include "nnperf/train/schedule.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// --device cuda (its --algorithm and --batchnorm names were read by run_cnn_training): a device
// and cuDNN (before any data is read).
void validate_cuda(const CnnTrainOptions& o) {
  (void)parse_cuda_launch(o.launch);
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
}

constexpr const char* kStepLogHeader = "step,loss,lr";

// --step-log appends: to a new or empty file, or to an earlier step log; never under another
// CSV's header, and never to a device or a folder.
void check_step_log(const fs::path& path) {
  if (path.empty()) return;
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  if (!fs::is_regular_file(path, ec)) {
    throw UsageError(fmt::format("--step-log {}: not a regular file", path.string()));
  }
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (fs::file_size(path, ec) > 0 && first != kStepLogHeader) {
    throw UsageError(fmt::format("--step-log {}: holds another file (first line '{}', expected '{}'); "
                                 "rows would be appended under it: choose another file",
                                 path.string(), first.substr(0, 60), kStepLogHeader));
  }
}

void validate(const CnnTrainOptions& o) {
  if (o.epochs < 1) throw UsageError(fmt::format("--epochs {}: expected at least 1", o.epochs));
  if (o.warmup_epochs < 0 || o.warmup_epochs >= o.epochs) {
    throw UsageError(fmt::format("--warmup-epochs {}: expected 0 <= n < --epochs ({})",
                                 o.warmup_epochs, o.epochs));
  }
  if (o.batch_size < 1)
    throw UsageError(fmt::format("--batch-size {}: expected at least 1", o.batch_size));
  if (o.warmup_steps < 0)
    throw UsageError(fmt::format("--warmup {}: expected 0 or more steps", o.warmup_steps));
  if (o.save_every < 0)
    throw UsageError(fmt::format("--save-every {}: expected 0 or more", o.save_every));
  if (o.profile_one_step && (o.warmup_iters < 0 || o.profile_iter < 1)) {
    throw UsageError(fmt::format("--warmup-iters {} --profile-iter {}: expected >= 0 and >= 1",
                                 o.warmup_iters, o.profile_iter));
  }
  if (o.device == Device::kCuda) {
    validate_cuda(o);
  }
  (void)make_optimizer(o.optimizer);
  if (!o.resume.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(o.resume, ec)) {
      throw UsageError(fmt::format("--resume {}: {}", o.resume.string(),
                                   fs::is_directory(o.resume, ec)
                                       ? "is a folder; expected a checkpoint file in it "
                                         "(<model>_best.ckpt or epoch_NNN.ckpt)"
                                       : fs::exists(o.resume, ec) ? "not a regular file; expected a checkpoint file"
                                                                  : "no such checkpoint file"));
    }
  }
  check_step_log(o.step_log);
  if (!o.init_weights.empty()) {
    std::error_code ec;
    if (!o.resume.empty())
      throw UsageError("--init-weights: not with --resume (a checkpoint carries its weights)");
    if (!fs::is_regular_file(o.init_weights, ec)) {
      throw UsageError(fmt::format("--init-weights {}: {}", o.init_weights.string(),
                                   fs::is_directory(o.init_weights, ec)
                                       ? "is a folder; expected a weights file"
                                       : fs::exists(o.init_weights, ec) ? "not a regular file; expected a weights file"
                                                                        : "no such weights file"));
    }
  }
}

// The data decide channels and classes; flags given must agree with them.
void check_data_fits(const CnnTrainOptions& o, const ImageData& d) {
  if (o.in_channels > 0 && o.in_channels != d.channels()) {
    throw UsageError(fmt::format("--in-channels {}: {} has {}-channel images", o.in_channels,
                                 d.source, d.channels()));
  }
  if (o.num_classes > 0 && o.num_classes != d.train.num_classes) {
    throw UsageError(fmt::format("--num-classes {}: {} has {} classes", o.num_classes, d.source,
                                 d.train.num_classes));
  }
  if (o.batch_size > d.train.size()) {
    throw UsageError(fmt::format("--batch-size {}: larger than the training set of {} ({} samples)",
                                 o.batch_size, d.source, d.train.size()));
  }
  if (d.test.size() == 0) fail("{}: the test split holds no samples", d.source);
}

// An epoch's short last batch is trained too; one that the model cannot train (a BatchNorm left
// with one value per channel, as PyTorch refuses it) is refused as soon as the graph is built,
// before it is planned or anything is written, from the layers' shape rules at that batch
// (analysis/complexity.h), rather than at the epoch's end.
void check_short_batch(const CnnTrainOptions& o, const ImageData& d, const Graph& g) {
  const int64_t n = d.train.size(), k = n % o.batch_size;
  if (k == 0 || o.profile_one_step) return;
  ComplexityOptions training;
  training.training = true;
  try {
    (void)analyze_complexity(g, Shape{k, d.channels(), d.side(), d.side()}, training);
  } catch (const LayerRefusedError& e) {
    throw UsageError(fmt::format(
        "--batch-size {}: an epoch's last batch holds the {} left of {} training images, and "
        "training it fails: {} (another --batch-size or --limit-train leaves more, or none)",
        o.batch_size, k, n, e.refusal()));
  }
}

LoaderOptions loader_options(const CnnTrainOptions& o, const ImageData& d, bool train) {
  LoaderOptions l;
  l.batch_size = o.batch_size;
  l.shuffle = train;
  l.seed = o.seed + 1;
  l.augment.enabled = train && o.augment;
  l.norm = d.norm;
  l.workers = o.workers;
  l.prefetch_factor = o.prefetch_factor;
  return l;
}

// The model, its trainer, the loaders and the schedule of one run.
struct Session {
  Session(const CnnTrainOptions& o, const ModelEntry& m, const ImageData& d, int threads)
      : model(m),
        data(d),
        graph(build(o, m, d)),
        trainer(graph, make_optimizer(o.optimizer), plan_context(o, threads), o.label_smoothing),
        train_loader(d.train, loader_options(o, d, true)),
        test_loader(d.test, loader_options(o, d, false)),
        batch_size(o.batch_size) {
    plan_model(m, graph, Shape{o.batch_size, d.channels(), d.side(), d.side()},
               plan_context(o, threads));
    schedule.base_lr = o.optimizer.lr;
    schedule.warmup_steps = o.warmup_steps;
    schedule.total_steps = int64_t{o.epochs} * train_loader.batches_per_epoch();
  }
  // Opened once the output folder exists (the log may live in it); appends to a log of the same
  // columns (validate refused any other file).
  void open_step_log(const fs::path& path) {
    if (path.empty()) return;
    step_log = std::make_unique<std::ofstream>(path, std::ios::app);
    if (!*step_log) {
      fail("--step-log {}: cannot open for writing: {}", path.string(),
           std::error_code(errno, std::generic_category()).message());
    }
    if (step_log->tellp() == 0) *step_log << kStepLogHeader << "\n";
  }
  static Graph build(const CnnTrainOptions& o, const ModelEntry& m, const ImageData& d) {
    ModelOptions mo;
    mo.input_shape = Shape{d.channels(), d.side(), d.side()};
    mo.classes = d.train.num_classes;
    const std::string what = fmt::format("--model {} for {} classes of {}x{}x{} images", m.name,
                                         mo.classes, d.channels(), d.side(), d.side());
    Graph g = [&] {
      const MemoryContext building(what);
      return m.build(mo);
    }();
    check_training_memory(g, o.optimizer, what);
    check_short_batch(o, d, g);
    Rng rng(o.seed);
    g.init(rng);
    return g;
  }
  // On the GPU the host graph holds shapes and parameters only: no node storage, and no CPU
  // convolution is timed or run.
  static PlanContext plan_context(const CnnTrainOptions& o, int threads) {
    PlanContext ctx;
    ctx.threads = threads;
    ctx.training = true;
    ctx.node_storage = o.device != Device::kCuda;
    if (o.device == Device::kCuda) return ctx;
    ctx.conv_algorithm = o.algorithm;
    ctx.time_conv = time_conv_ms;
    ctx.time_conv_backward = time_conv_backward_ms;
    return ctx;
  }
  // --device cuda, once the graph holds the run's starting weights (and the CPU optimizer a
  // resumed run's state): the GPU trainer takes both over.
  void start_gpu(const CnnTrainOptions& o) {
    if (const std::string why = cuda_training_unsupported(graph); !why.empty())
      throw UsageError(fmt::format("--model {} --device cuda: {}", model.name, why));
    gpu = std::make_unique<CudaCnnTrainer>(
        graph, o.optimizer,
        CudaTrainOptions{o.algorithm, o.label_smoothing, o.deterministic, o.find_engines,
                         o.batchnorm, o.launch});
    gpu->load_optimizer_state(trainer.optimizer().state(), trainer.optimizer().steps());
  }
  int64_t steps() { return gpu ? gpu->steps() : trainer.optimizer().steps(); }
  // One training step at the schedule's rate for the optimizer's step count.
  BatchResult step(const Tensor& x, const std::vector<int32_t>& labels) {
    const int64_t n = steps();
    lr = static_cast<float>(schedule.lr_at(n));
    BatchResult r;
    if (gpu) {
      gpu->set_lr(lr);
      r = gpu->step({x.data(), static_cast<std::size_t>(x.numel())}, labels);
    } else {
      trainer.optimizer().set_lr(lr);
      r = trainer.step(x, labels);
    }
    if (step_log) {
      *step_log << fmt::format("{},{:.9g},{:.9g}\n", n + 1, r.mean_loss(), lr)
                << std::flush;  // readable while the run goes on
    }
    return r;
  }
  BatchResult evaluate(const Tensor& x, const std::vector<int32_t>& labels) {
    return gpu ? gpu->evaluate({x.data(), static_cast<std::size_t>(x.numel())}, labels)
               : trainer.evaluate(x, labels);
  }
  // The GPU's weights, BatchNorm statistics and optimizer state into the graph and the CPU
  // optimizer, which checkpoints read.
  void to_host() {
    if (!gpu) return;
    gpu->download_params();
    trainer.optimizer().load_state(gpu->optimizer_state(), gpu->steps());
  }
  const ModelEntry& model;
  const ImageData& data;
  Graph graph;
  Trainer trainer;
  BatchLoader train_loader, test_loader;
  int64_t batch_size;
  std::unique_ptr<CudaCnnTrainer> gpu;
  float lr = 0;  // of the last step
  WarmupCosine schedule;
  Tensor x;
  std::vector<int32_t> labels;
  std::unique_ptr<std::ofstream> step_log;
};

// Where a run stands: what a checkpoint saves besides the tensors.
struct RunState {
  int epoch = 0;  // epochs finished
  double best_acc = -1;
  int best_epoch = 0;
  std::vector<CnnEpochRecord> records;
  fs::path last_checkpoint;
};

nlohmann::json checkpoint_meta(const CnnTrainOptions& o, const Session& s, const RunState& st) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : st.records) records.push_back(cnn_epoch_json(r));
  return {{"model", s.model.name},
          {"kind", "full"},
          {"dataset", s.data.name},
          {"epoch", st.epoch},
          {"best_acc", st.best_acc},
          {"best_epoch", st.best_epoch},
          {"batch_size", o.batch_size},
          {"input_side", s.data.side()},
          {"base_lr", o.optimizer.lr},
          {"seed", o.seed},
          {"total_steps", s.schedule.total_steps},
          {"warmup_steps", o.warmup_steps},
          {"weight_decay", o.optimizer.weight_decay},
          {"momentum", o.optimizer.momentum},
          {"nesterov", o.optimizer.nesterov},
          {"label_smoothing", o.label_smoothing},
          {"optimizer", {{"lr", o.optimizer.lr}}},
          {"records", records}};
}

// Refuses a checkpoint of another run, the model first (shapes are checked by
// restore_checkpoint).
void check_resume_meta(const nlohmann::json& m, const CnnTrainOptions& o, const Session& s,
                       const std::string& src) {
  if (m.value("kind", "") == "weights") {
    fail("{}: a weights-only file (final weights); --resume needs a _best or epoch_NNN checkpoint",
         src);
  }
  const auto same = [&](const char* key, const nlohmann::json& want, const char* flag) {
    if (!m.contains(key) || m[key] != want) {
      fail("{}: checkpoint of a run with {} {}, this run has {} (give the same {})", src, key,
           m.contains(key) ? m[key].dump() : "(none)", want.dump(), flag);
    }
  };
  check_model_name(m, s.model.name, src);  // first: another model makes the rest moot
  same("dataset", s.data.name, "--data");
  same("batch_size", o.batch_size, "--batch-size");
  same("seed", o.seed, "--seed");
  same("total_steps", s.schedule.total_steps, "--epochs");
  same("warmup_steps", o.warmup_steps, "--warmup");
  // Checkpoints written before these were recorded lack them.
  if (m.contains("input_side")) same("input_side", s.data.side(), "--input-size");
  if (m.contains("base_lr")) same("base_lr", o.optimizer.lr, "--lr");
  if (m.contains("weight_decay")) same("weight_decay", o.optimizer.weight_decay, "--weight-decay");
  if (m.contains("label_smoothing"))
    same("label_smoothing", o.label_smoothing, "--label-smoothing");
  if (o.optimizer.name == "sgd") {  // Adam reads neither
    if (m.contains("momentum")) same("momentum", o.optimizer.momentum, "--momentum");
    if (m.contains("nesterov")) same("nesterov", o.optimizer.nesterov, "--no-nesterov");
  }
}

RunState resume(const CnnTrainOptions& o, Session& s) {
  const std::string src = o.resume.string();
  const Checkpoint ckpt = read_checkpoint(o.resume);
  check_resume_meta(ckpt.meta, o, s, src);
  restore_checkpoint(ckpt, s.graph, s.trainer.optimizer(), s.model.name, src);
  RunState st;
  try {
    st.epoch = ckpt.meta.at("epoch").get<int>();
    st.best_acc = ckpt.meta.at("best_acc").get<double>();
    st.best_epoch = ckpt.meta.at("best_epoch").get<int>();
    for (const auto& r : ckpt.meta.at("records")) st.records.push_back(cnn_epoch_from_json(r));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: checkpoint metadata incomplete: {}", src, e.what());
  }
  if (st.epoch < 1 || st.epoch >= o.epochs) {
    fail("{}: checkpoint after epoch {}, nothing left to train with --epochs {}", src, st.epoch,
         o.epochs);
  }
  st.last_checkpoint = o.resume;
  return st;
}

void save(const fs::path& path, const CnnTrainOptions& o, Session& s, RunState& st) {
  s.to_host();
  write_checkpoint(path,
                   capture_checkpoint(s.graph, s.trainer.optimizer(), checkpoint_meta(o, s, st)));
  st.last_checkpoint = path;
}

BatchResult evaluate(Session& s) {
  BatchResult total;
  s.test_loader.start_epoch(0);
  while (s.test_loader.next(s.x, s.labels)) total += s.evaluate(s.x, s.labels);
  return total;
}

CnnEpochRecord train_epoch(Session& s, int epoch, int epochs, Progress& progress) {
  CnnEpochRecord rec;
  rec.epoch = epoch;
  s.train_loader.start_epoch(epoch - 1);
  BatchResult acc;
  int64_t done = 0;
  const int64_t t0 = now_ns();
  while (s.train_loader.next(s.x, s.labels)) {
    check_interrupt();
    acc += s.step(s.x, s.labels);
    if (progress.is_bar()) {
      progress.update(fmt::format("epoch {}/{}", epoch, epochs), ++done,
                      s.train_loader.batches_per_epoch(),
                      fmt::format("loss {:.4f} acc {:.3f}", acc.mean_loss(), acc.accuracy()));
    }
  }
  rec.train_sec = seconds_since(t0);
  rec.data_wait_sec = static_cast<double>(s.train_loader.wait_ns()) * 1e-9;
  rec.train_loss = acc.mean_loss();
  rec.train_acc = acc.accuracy();
  rec.images = acc.count;
  rec.imgs_per_sec = static_cast<double>(acc.count) / std::max(rec.train_sec, 1e-12);
  rec.lr = s.lr;
  const int64_t e0 = now_ns();
  const BatchResult test = evaluate(s);
  rec.eval_sec = seconds_since(e0);
  rec.test_loss = test.mean_loss();
  rec.test_acc = test.accuracy();
  return rec;
}

// Refuses a run whose checkpoints cannot fit on the disk of its output folder, before it starts:
// the epoch_NNN files --save-every keeps (all of them, as nn-perf's train.py does) and the best,
// each the parameters and the optimizer's state, and the final weights (--save-every 1 with a
// million epochs wrote 6.4 GB a minute until the disk was full).
void check_checkpoint_space(const CnnTrainOptions& o, const Session& s, const RunState& st) {
  const int64_t epoch_files =
      o.save_every > 0 ? o.epochs / o.save_every - st.epoch / o.save_every : 0;
  const int64_t weights = s.graph.num_params() * 4;
  const int64_t per_file = weights * (1 + optimizer_state_copies(o.optimizer));
  // -1: more bytes than an int64 holds.
  const int64_t files = checked_mul(epoch_files + 1, per_file).value_or(-1);
  const int64_t need = files < 0 ? -1 : checked_add(files, weights).value_or(-1);
  const fs::path where = o.out_dir.empty() ? fs::path("runs") : o.out_dir;
  const int64_t free = free_disk_bytes(where);
  if (need >= 0 && need <= free) return;
  const std::string total =
      need >= 0 ? format_bytes(need) : std::string("more bytes than a 64-bit size holds");
  if (o.save_every == 0) {
    throw UsageError(fmt::format(
        "the best checkpoint ({}) and the final weights ({}) need {}, more than the {} free on "
        "the disk of {} (--out-dir)",
        format_bytes(per_file), format_bytes(weights), total, format_bytes(free), where.string()));
  }
  throw UsageError(fmt::format(
      "--save-every {} with --epochs {}: {} epoch checkpoints and the best, {} each, and the "
      "final weights need {}, more than the {} free on the disk of {} (save less often, or free "
      "space)",
      o.save_every, o.epochs, epoch_files, format_bytes(per_file), total, format_bytes(free),
      where.string()));
}

// "<model>_<dataset>": the prefix of the best and final checkpoints (seed 004's names).
std::string file_stem(const Session& s) { return fmt::format("{}_{}", s.model.name, s.data.name); }

// Checkpoints after an epoch: best when the test accuracy improved, epoch_NNN every
// --save-every epochs.
void checkpoint_epoch(const CnnTrainOptions& o, Session& s, RunState& st, CnnEpochRecord& rec,
                      const fs::path& dir) {
  st.epoch = rec.epoch;
  if (rec.test_acc > st.best_acc) {
    st.best_acc = rec.test_acc;
    st.best_epoch = rec.epoch;
    rec.best = true;
  }
  st.records.push_back(rec);
  if (rec.best) save(dir / (file_stem(s) + "_best.ckpt"), o, s, st);
  if (o.save_every > 0 && rec.epoch % o.save_every == 0) {
    save(dir / fmt::format("epoch_{:03d}.ckpt", rec.epoch), o, s, st);
  }
}

// Each convolution's cuDNN algorithms for the planned batch, or (short) for the short batch last
// trained.
nlohmann::json conv_algorithms(const Session& s, bool short_batch) {
  nlohmann::json algorithms = nlohmann::json::object();
  for (int n = 1; n < s.graph.size(); ++n) {
    const std::string a = short_batch ? s.gpu->short_batch_algorithms(n) : s.gpu->algorithms(n);
    if (!a.empty()) algorithms[s.graph.name(n)] = a;
  }
  return algorithms;
}

// What ran on the GPU: the device, each convolution's cuDNN algorithms, and an epoch's last,
// short batch (its own plans: their algorithms are known once it has run, in final_results.json).
nlohmann::json gpu_context(const CnnTrainOptions& o, const Session& s) {
  nlohmann::json last = {{"images", s.data.train.size() % o.batch_size}};
  if (s.gpu->short_batch() > 0) last["conv_algorithms"] = conv_algorithms(s, true);
  return {{"device", cuda::device_summary()},
          {"launch", s.gpu->launch()},
          {"graph_launches", s.gpu->graph_launches()},
          {"evaluation_graph_launches", s.gpu->evaluation_launches()},
          {"conv_algorithms", conv_algorithms(s, false)},
          {"short_last_batch", last}};
}

nlohmann::json run_context(const CnnTrainOptions& o, const Session& s, int threads) {
  const ImageData& d = s.data;
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& k : d.skipped) skipped.push_back({{"path", k.path}, {"reason", k.reason}});
  return {
      {"job", "train"},
      {"model",
       {{"name", s.model.name}, {"params", s.graph.num_params()}, {"nodes", s.graph.size() - 1}}},
      {"data",
       {{"format", d.format},
        {"name", d.name},
        {"source", d.source},
        {"train", d.train.size()},
        {"test", d.test.size()},
        {"shape", {d.channels(), d.side(), d.side()}},
        {"classes", d.train.num_classes},
        {"class_names", d.classes},
        {"norm", {{"mean", d.norm.mean}, {"std", d.norm.std}, {"source", d.norm.source}}},
        {"augment", o.augment ? "random crop (padding 4) + horizontal flip" : "none"},
        {"skipped_images", d.skipped.size()},
        {"skipped", skipped}}},
      {"recipe",
       {{"epochs", o.epochs},
        {"warmup_epochs", o.warmup_epochs},
        {"batch_size", o.batch_size},
        {"optimizer", checked_optimizer(o.optimizer).name},
        {"lr", o.optimizer.lr},
        {"momentum", o.optimizer.momentum},
        {"nesterov", o.optimizer.nesterov},
        {"weight_decay", o.optimizer.weight_decay},
        {"schedule", s.schedule.describe()},
        {"warmup_steps", o.warmup_steps},
        {"label_smoothing", o.label_smoothing},
        {"seed", o.seed}}},
      {"threads", threads},
      {"workers", o.workers},
      {"prefetch_factor", o.prefetch_factor},
      {"conv_algorithm", o.algorithm},
      {"deterministic", o.deterministic},
      {"find_engines", o.find_engines},
      {"batchnorm", o.batchnorm},
      {"launch", s.gpu ? nlohmann::json(o.launch) : nlohmann::json(nullptr)},
      {"resume", o.resume.string()},
      {"init_weights", o.init_weights.string()},
      {"device", s.gpu ? "cuda" : "cpu"},
      {"cuda", s.gpu ? gpu_context(o, s) : nlohmann::json(nullptr)}};
}

// --profile-one-step: unrecorded steps, then one step recorded per layer and phase (on the GPU by
// CUDA events), written as one_step.json, one_step_trace.json and one_step_layers.csv. Every step
// here is of --batch-size images (an epoch's short last batch is passed over): the recorded one is
// of the size asked for, and the steps before it warm the same plans.
nlohmann::json profile_one_step(const CnnTrainOptions& o, Session& s, const fs::path& dir,
                                const nlohmann::json& context) {
  const int64_t before = int64_t{o.warmup_iters} + o.profile_iter - 1;
  int64_t epoch = 0;
  s.train_loader.start_epoch(epoch);
  const auto next_batch = [&] {
    do {
      if (!s.train_loader.next(s.x, s.labels)) {
        s.train_loader.start_epoch(++epoch);
        s.train_loader.next(s.x, s.labels);
      }
    } while (static_cast<int64_t>(s.labels.size()) < s.batch_size);
  };
  for (int64_t i = 0; i < before; ++i) {
    check_interrupt();
    next_batch();
    s.step(s.x, s.labels);
  }
  next_batch();
  // On the GPU the spans are CUDA events on the step's stream, read after it.
  StepRecorder rec(s.graph.size(), s.gpu ? cuda::make_event_timeline() : nullptr);
  // NVTX ranges around the recorded step's layers and phases (nvtx.h), the recorder inside them.
  NvtxRanges nvtx(s.graph, &rec, &rec);
  const bool ranges = nvtx_available();
  GraphHook* layer_hook = ranges ? static_cast<GraphHook*>(&nvtx) : &rec;
  StepHook* step_hook = ranges ? static_cast<StepHook*>(&nvtx) : &rec;
  if (s.gpu) {
    s.gpu->set_hooks(layer_hook, step_hook);
  } else {
    s.graph.set_hook(layer_hook);
    s.trainer.set_step_hook(step_hook);
  }
  const int64_t graph_launches_before = s.gpu ? s.gpu->graph_launches() : 0;
  if (s.gpu) cuda::profiler_start();  // the window of `ncu --profile-from-start off`
  s.step(s.x, s.labels);
  if (s.gpu) {
    cuda::profiler_stop();
    s.gpu->set_hooks(nullptr, nullptr);
  }
  s.graph.set_hook(nullptr);
  s.trainer.set_step_hook(nullptr);
  const nlohmann::json spans = one_step_spans(s.graph, rec);
  const nlohmann::json phases = one_step_phases(spans);
  // How the recorded step ran on the GPU: "graph" when it was launched as one captured graph
  // (its marks event-record nodes, its NVTX ranges around the capture), else "eager"; and the
  // trainer's launch() (a refused capture's reason).
  nlohmann::json launch = nullptr, trainer_launch = nullptr;
  if (s.gpu) {
    launch = s.gpu->graph_launches() > graph_launches_before ? "graph" : "eager";
    trainer_launch = s.gpu->launch();
  }
  const nlohmann::json doc = {{"phases_ms", phases},
                              {"clock", rec.clock()},
                              {"launch", launch},
                              {"trainer_launch", trainer_launch},
                              {"nvtx_ranges", nvtx_available()},
                              {"context", context},
                              {"spans", spans}};
  render_one_step_profile(doc, dir);
  write_json_atomic(dir / "one_step.json", doc);
  return phases;
}

nlohmann::json final_results(const CnnTrainResult& r, const Session& s, const RunState& st,
                             const nlohmann::json& context) {
  const CnnEpochRecord& last = r.epochs.back();
  int timed = 0;
  for (const auto& e : r.epochs) timed += e.timed && e.epoch > r.resumed_after_epoch ? 1 : 0;
  return {{"model", s.model.name},
          {"dataset", s.data.name},
          {"final_train_loss", last.train_loss},
          {"final_train_acc", last.train_acc},
          {"final_test_loss", last.test_loss},
          {"final_test_acc", last.test_acc},
          {"best_test_acc", r.best_acc},
          {"best_epoch", r.best_epoch},
          {"epochs", r.epochs.size()},
          {"resumed_after_epoch", r.resumed_after_epoch},
          {"measured_sec", r.measured_sec},
          {"measured_epochs", timed},
          {"images_trained", r.images_trained},
          {"imgs_per_sec", r.imgs_per_sec},
          {"data_wait_fraction", r.data_wait_fraction},
          {"best_checkpoint", st.best_epoch > 0 ? file_stem(s) + "_best.ckpt" : ""},
          {"final_weights", file_stem(s) + "_final_weights.ckpt"},
          {"context", context}};
}

void summarize(CnnTrainResult& r, const RunState& st) {
  double wait = 0;
  for (const auto& e : r.epochs) {
    if (!e.timed || e.epoch <= r.resumed_after_epoch) continue;
    r.measured_sec += e.train_sec;
    r.images_trained += e.images;
    wait += e.data_wait_sec;
  }
  r.imgs_per_sec = r.measured_sec > 0 ? static_cast<double>(r.images_trained) / r.measured_sec : 0;
  r.data_wait_fraction = r.measured_sec > 0 ? wait / r.measured_sec : 0;
  r.best_acc = st.best_acc;
  r.best_epoch = st.best_epoch;
}

// Images --on-bad-image skip left out: said as soon as the data is read.
void warn_of_skipped(const ImageData& data) {
  if (!data.skipped.empty()) {
    warn("--on-bad-image skip: {} left out (listed in final_results.json), the first: {}: {}",
         data.skipped.size() == 1 ? std::string("1 image") : fmt::format("{} images", data.skipped.size()),
         data.skipped.front().path, data.skipped.front().reason);
  }
}

// A warm-up as long as the run (the learning rate never decays).
void warn_of_warmup(const CnnTrainOptions& o, const Session& s) {
  if (s.schedule.warmup_steps >= s.schedule.total_steps && s.schedule.total_steps > 0 && !o.profile_one_step) {
    warn(
        "--warmup {} is not shorter than the whole run ({}): the learning rate only reaches {:.3g} "
        "(of --lr {}) and never decays (give a smaller --warmup)",
        o.warmup_steps, count_noun(s.schedule.total_steps, "step"),
        s.schedule.lr_at(s.schedule.total_steps - 1), o.optimizer.lr);
  }
}

// The run's first lines: the data and the schedule, and on the GPU the device.
void announce(Progress& progress, const CnnTrainOptions& o, const ImageData& data,
              const Session& s) {
  progress.line(fmt::format("data: {} ({}, {} train, {} test, {}x{}x{}); {}", data.source,
                            data.format, data.train.size(), data.test.size(), data.channels(),
                            data.side(), data.side(), s.schedule.describe()));
  if (s.gpu) {
    const int64_t rest = data.train.size() % o.batch_size;
    progress.line(fmt::format("GPU: {}{}", cuda::device_summary(),
                              rest == 0 ? std::string()
                                        : fmt::format("; each epoch's last batch of {} "
                                                      "gets cuDNN plans of its own",
                                                      count_noun(rest, "image"))));
  }
}

// The epochs after the resumed one: each trained, checkpointed and recorded. A diverging epoch
// stops the run with where its finished epochs and last good checkpoint are.
void train_epochs(const CnnTrainOptions& o, Session& s, RunState& st, CnnTrainResult& r,
                  CnnTrainOutputs& outputs, Progress& progress) {
  for (int epoch = st.epoch + 1; epoch <= o.epochs; ++epoch) {
    CnnEpochRecord rec;
    try {
      rec = train_epoch(s, epoch, o.epochs, progress);
    } catch (const DivergenceError& e) {
      throw Error(
          fmt::format("{} (epoch {}); the {} finished epochs are in {}; last good checkpoint: {}",
                      e.what(), epoch, st.epoch, (r.out_dir / "training_metrics.csv").string(),
                      st.last_checkpoint.empty() ? "none" : st.last_checkpoint.string()));
    }
    rec.timed = epoch > o.warmup_epochs;
    checkpoint_epoch(o, s, st, rec, r.out_dir);
    outputs.add(rec);
    r.epochs.push_back(rec);
  }
  progress.finish();
}

}  // namespace

CnnTrainResult run_cnn_training(const CnnTrainOptions& options) {
  CnnTrainOptions o = options;
  o.algorithm = canonical_train_algorithm(o.algorithm, o.device == Device::kCuda, o.find_engines,
                                          o.deterministic);
  o.batchnorm = cudnn::checked_batchnorm_algorithm("--batchnorm", o.batchnorm);
  const ModelEntry& m = find_model(o.model);
  validate(o);
  const int threads = set_threads(o.threads);
  set_blas_threads(1);  // as the driver: OpenBLAS's own pool would fight the OpenMP team
  Progress progress(o.progress);
  const ImageData data = load_image_data(o.data);
  check_data_fits(o, data);
  warn_of_skipped(data);
  const MemoryContext memory(fmt::format("{} at --batch-size {} on {}x{}x{} images", m.name,
                                         o.batch_size, data.channels(), data.side(), data.side()));
  Session s(o, m, data, threads);
  warn_of_warmup(o, s);
  if (!o.init_weights.empty()) {
    restore_weights(read_checkpoint(o.init_weights), s.graph, s.model.name,
                    o.init_weights.string());
  }
  RunState st = o.resume.empty() ? RunState{} : resume(o, s);
  if (o.device == Device::kCuda) s.start_gpu(o);
  if (!o.profile_one_step) check_checkpoint_space(o, s, st);
  CnnTrainResult r;
  r.resumed_after_epoch = st.epoch;
  r.epochs = st.records;
  // Claimed only now: a run refused above leaves nothing behind.
  r.out_dir =
      prepare_output_dir(o.out_dir, "runs/" + std::string(m.name), "--out-dir", o.overwrite);
  s.open_step_log(o.step_log);
  const nlohmann::json context = run_context(o, s, threads);
  write_run_json(r.out_dir, o.command_line, context);
  announce(progress, o, data, s);
  if (o.profile_one_step) {
    const nlohmann::json phases = profile_one_step(o, s, r.out_dir, context);
    progress.line(fmt::format("one step: {}", phases.dump()));
    return r;
  }
  CnnTrainOutputs outputs(r.out_dir, context, o.tensorboard, o.epochs, progress);
  for (const auto& rec : st.records) outputs.add(rec);
  train_epochs(o, s, st, r, outputs, progress);
  const fs::path weights = r.out_dir / (file_stem(s) + "_final_weights.ckpt");
  s.to_host();
  write_checkpoint(weights, capture_weights(s.graph, {{"model", m.name}, {"dataset", data.name}}));
  summarize(r, st);
  outputs.finish(final_results(r, s, st, s.gpu ? run_context(o, s, threads) : context));
  return r;
}

}  // namespace nnperf
