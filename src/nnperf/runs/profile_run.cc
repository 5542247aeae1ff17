#include "nnperf/runs/profile_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/text.h"
#include "nnperf/core/threads.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_lines.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"
#include "nnperf/io/trace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/cuda_inference.h"
#include "nnperf/profile/conv_timer.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/power.h"
#include "nnperf/profile/profiler.h"
#include "nnperf/profile/stats.h"
#include "nnperf/runs/profile_measure.h"
#include "nnperf/runs/profile_outputs.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

using profile_sweep::kLayersHeader;
using profile_sweep::kOverallHeader;

// What a sweep's rows depend on: resuming with any of these changed would put rows of two setups
// in one file.
nlohmann::json sweep_setup(const ProfileOptions& o, const ModelEntry& m, int threads) {
  nlohmann::json setup = {{"model", m.name},
          {"algorithm", o.algorithm},
          {"batch_size", o.batch_size},
          {"threads", threads},
          {"fold_bn", o.fold_bn},
          {"strict", o.strict},
          {"find_exhaustive", o.find_exhaustive},
          {"pass", o.pass},
          {"warmup", o.warmup},
          {"measure", o.measure},
          {"layers", o.layers},
          {"seed", o.seed},
          {"power_source", o.power_source},
          {"host", hostname()},
          {"cpu", cpu_info().model_name},
          {"simd", to_string(active_simd())}};
  if (o.device == Device::kCuda) {
    setup["device"] = "cuda";
    setup["gpu"] = cuda::device_summary();
    setup["cudnn"] = cudnn::version();
    setup["launch"] = o.cuda_graph ? "graph" : "eager";
    if (o.find_engines) setup["find_engines"] = true;  // absent otherwise, as before --engines
  }
  return setup;
}

// --resume: the stored setup (run.json's "setup") must equal this command's; lists every
// difference.
void check_same_setup(const fs::path& dir, const nlohmann::json& now) {
  const fs::path rj = dir / "run.json";
  const RunJson stored = parse_run_json(read_file(rj), rj.string());
  if (!stored.setup) {
    fail(
        "--resume {}: {} has no \"setup\" (written by an older nnperf), so the stored sweep's "
        "setup "
        "cannot be checked; start a new --output-dir",
        dir.string(), rj.string());
  }
  std::vector<std::string> diffs;
  for (const auto& [key, value] : now.items()) {
    const nlohmann::json& was =
        stored.setup->contains(key) ? (*stored.setup)[key] : nlohmann::json();
    if (was != value)
      diffs.push_back(fmt::format("{}: {} stored, {} now", key, was.dump(), value.dump()));
  }
  if (!diffs.empty()) {
    throw UsageError(
        fmt::format("--resume {}: the stored sweep ran another setup ({}); rows of two setups "
                    "never share a file: rerun with the stored flags or use another --output-dir",
                    dir.string(), fmt::join(diffs, "; ")));
  }
}

// The layer rows each size of the sweep writes, in order: every node after the input, then with
// --pass train the loss and the update (runs/profile_measure.cc); none with --no-layers.
std::vector<std::string> sweep_layer_names(const Graph& g, const ProfileOptions& o) {
  std::vector<std::string> names;
  if (!o.layers) return names;
  for (int n = 1; n < g.size(); ++n) names.push_back(g.name(n));
  if (o.pass == "train") names.insert(names.end(), {"loss", "optimizer"});
  return names;
}

// Claims the sweep folder, or, with --resume, checks it and returns the sizes already done: those
// whose rows are whole (profile_sweep::keep_whole_sizes); the rows of any other size are dropped,
// so no row is duplicated or lost.
std::set<int64_t> open_sweep_folder(const ProfileOptions& o, const nlohmann::json& setup,
                                    const std::vector<std::string>& layer_names,
                                    const fs::path& overall_path, const fs::path& layers_path) {
  const auto owner = folder_owner(o.output_dir);
  if (!o.resume || !owner) {
    if (!o.resume && owner && owner->job == "profile" && !o.overwrite) {
      throw UsageError(
          fmt::format("--output-dir {}: already holds {}; nothing was written. Use --resume to "
                      "continue it, another --output-dir, or --overwrite to replace it whole",
                      o.output_dir.string(), owner->description));
    }
    claim_output_dir(o.output_dir, "--output-dir", o.overwrite);
    return {};
  }
  if (owner->job != "profile") {
    throw UsageError(
        fmt::format("--output-dir {} --resume: the folder holds {}, not a profile sweep",
                    o.output_dir.string(), owner->description));
  }
  check_same_setup(o.output_dir, setup);
  if (!fs::exists(overall_path)) {
    if (fs::exists(layers_path))
      fs::remove(layers_path);  // layer rows of a size that never finished
    return {};
  }
  return profile_sweep::keep_whole_sizes(overall_path, layers_path, layer_names);
}

}  // namespace

void apply_stage(ProfileOptions& o) {
  int n = 0, w = 0, m = 0;
  if (o.stage == "sanity") {
    n = 1, w = 1, m = 2;
  } else if (o.stage == "quick") {
    n = 10, w = 5, m = 10;
  } else if (o.stage == "full") {
    n = 100, w = 10, m = 20;
  } else {
    throw UsageError(fmt::format("--stage '{}': expected sanity, quick or full", o.stage));
  }
  if (o.num_sizes < 0) o.num_sizes = n;
  if (o.warmup < 0) o.warmup = w;
  if (o.measure < 0) o.measure = m;
  if (o.num_sizes < 1)
    throw UsageError(fmt::format("--num-sizes {}: expected at least 1", o.num_sizes));
  if (o.measure < 1) throw UsageError(fmt::format("--measure {}: expected at least 1", o.measure));
  if (o.batch_size < 1)
    throw UsageError(fmt::format("--batch-size {}: expected at least 1", o.batch_size));
  if (o.min_size < 1 || o.max_size < o.min_size) {
    throw UsageError(fmt::format("--min-size {} / --max-size {}: expected 1 <= min <= max",
                                 o.min_size, o.max_size));
  }
  if (o.sizes.empty()) {
    for (int i = 0; i < o.num_sizes; ++i) {
      const int64_t size = o.num_sizes == 1
                               ? o.min_size
                               : o.min_size + i * (o.max_size - o.min_size) / (o.num_sizes - 1);
      if (o.sizes.empty() || o.sizes.back() != size) o.sizes.push_back(size);  // each size once
    }
    if (static_cast<int>(o.sizes.size()) < o.num_sizes) {
      warn("--num-sizes {}: {}..{} holds {} distinct sizes; profiling each once", o.num_sizes,
           o.min_size, o.max_size, o.sizes.size());
    }
  }
}

namespace {

using profile_sweep::SizeRecord;
using profile_sweep::Sweep;

// --device cuda: inference only, cuDNN's algorithm names, a device and cuDNN present.
void validate_cuda(const ProfileOptions& o) {
  if (o.pass != "inference") {
    throw UsageError("--pass train: training passes are profiled on the CPU only, not with "
                     "--device cuda");
  }
  if (o.fold_bn)
    throw UsageError("--fold-bn: folding BatchNorm is a CPU rewrite, not with --device cuda");
  if (find_conv_choice(o.algorithm) == nullptr &&
      cudnn::find_algorithm(ConvPass::kForward, o.algorithm) == nullptr) {
    throw UsageError(
        fmt::format("--algorithm {}: with --device cuda, one of cuDNN's ({}), guess or find",
                    o.algorithm, fmt::join(cudnn::forward_algorithms(), ", ")));
  }
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
}

// The largest size's node outputs and parameters (the complexity model's count, a lower bound:
// workspaces come on top) against the memory budget, so a sweep whose last size cannot run is
// refused before its folder is claimed, not after hours of the smaller sizes.
void check_largest_size_memory(const ProfileOptions& o, const ModelEntry& model) {
  const int64_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
  const int64_t channels = model.default_input[0];
  const std::string what = fmt::format("{} at input {}x{}x{}x{} (--batch-size, --sizes)",
                                       model.name, o.batch_size, channels, largest, largest);
  if (o.batch_size > kComplexityMaxBatch) {
    throw UsageError(fmt::format("--batch-size {}: expected at most {}", o.batch_size,
                                 kComplexityMaxBatch));
  }
  ModelOptions mo;
  mo.fold_bn = o.fold_bn;
  const ModelComplexity c = model_complexity(model.name, largest, o.batch_size, {}, mo);
  const double bytes = c.totals.forward_activation_bytes + c.totals.param_bytes;
  check_memory(bytes < 9e18 ? static_cast<int64_t>(bytes) : -1, what);
}

}  // namespace

void check_batchnorm_trains(const std::string& model, int64_t size, int64_t batch,
                            const std::string& flags, const std::string& remedy) {
  if (batch > 1) return;
  const ModelComplexity c = model_complexity(model, size, batch, {}, {});
  for (const LayerComplexity& l : c.layers) {
    const Shape& s = l.output_shape;
    if (l.type == "BatchNorm2d" && s.rank() == 4 && s[2] * s[3] <= 1) {
      throw UsageError(fmt::format(
          "{}: at input size {} {}'s {} output is {}x{} per channel, and BatchNorm cannot train on "
          "one value per channel; {}",
          flags, size, model, l.name, s[2], s[3], remedy));
    }
  }
}

// One value (batch 1 where a layer's output is 1x1) has no variance. The profiler refuses it
// before the sweep, from the smallest size's shapes, not at that size's turn.
void check_profile_train_batch(const std::string& model, const std::vector<int64_t>& sizes,
                               int64_t batch) {
  check_batchnorm_trains(model, *std::min_element(sizes.begin(), sizes.end()), batch,
                         fmt::format("--pass train --batch-size {}", batch),
                         "give --batch-size 2 or more, or larger --sizes");
}

namespace {

void validate_sweep(ProfileOptions& o, const ModelEntry& model) {
  if (o.resume && o.overwrite) {
    throw UsageError("--resume and --overwrite: give one (continue the sweep, or replace it)");
  }
  if (std::string(model.name) == "mlp") {
    throw UsageError(
        "--model mlp: the profiler sweeps image sizes of CNNs; use mlp-bench for the MLP");
  }
  if (o.pass != "inference" && o.pass != "train") {
    throw UsageError(fmt::format("--pass '{}': expected inference or train", o.pass));
  }
  if (o.device == Device::kCuda) {
    validate_cuda(o);
    const char* choice = find_conv_choice(o.algorithm);
    o.algorithm =
        choice != nullptr ? choice : cudnn::find_algorithm(ConvPass::kForward, o.algorithm);
  } else {
    o.algorithm = canonical_conv_algorithm("--algorithm", o.algorithm);
  }
  if (o.pass == "train" && o.fold_bn) {
    throw UsageError("--fold-bn: folding BatchNorm is an inference rewrite; not with --pass train");
  }
  for (int64_t s : o.sizes) {
    if (s < model.min_input_size) {
      throw UsageError(fmt::format(
          "input size {}: {} needs at least {}x{} (its receptive field shrinks smaller inputs "
          "below 1x1)",
          s, model.name, model.min_input_size, model.min_input_size));
    }
  }
  check_largest_size_memory(o, model);
  if (o.pass == "train") check_profile_train_batch(model.name, o.sizes, o.batch_size);
  if (o.machine.empty()) o.machine = hostname();
  if (o.machine.find('/') != std::string::npos || o.machine == "." || o.machine == "..") {
    throw UsageError(fmt::format(
        "--machine '{}': expected a name for the default folder, without '/'", o.machine));
  }
  if (o.output_dir.empty()) {
    const bool cuda = o.device == Device::kCuda;
    o.output_dir =
        fs::path("results") / o.stage /
        fmt::format("{}_{}{}{}{}{}_{}", model.name, o.algorithm, o.pass == "train" ? "_train" : "",
                    cuda ? "_cuda" : "", cuda && !o.cuda_graph ? "_eager" : "",
                    cuda && o.find_engines ? "_engines" : "", o.machine);
  }
}

PowerOptions power_options(const ProfileOptions& o) {
  PowerOptions po;
  po.source = o.power_source;
  po.device = o.device;
  if (o.device == Device::kCuda && cuda::available()) {
    po.nvml_pci_bus_id = cuda::device_properties().pci_bus_id;  // its board only
  }
  return po;
}

nlohmann::json run_record(const ProfileOptions& o, const nlohmann::json& setup, const Sweep& sw) {
  const ModelEntry& model = sw.model;
  const PowerMonitor& power = sw.power;
  nlohmann::json r = {
      {"job", "profile"},
      {"setup", setup},
      {"model", model.name},
      {"algorithm", o.algorithm},
      {"stage", o.stage},
      {"sizes", o.sizes},
      {"batch_size", o.batch_size},
      {"warmup", o.warmup},
      {"measure", o.measure},
      {"strict", o.strict},
      {"fold_bn", o.fold_bn},
      {"find_exhaustive", o.find_exhaustive},
      {"power",
       {{"source", power.source()}, {"available", power.available()}, {"scope", power.scope()}}},
      {"device", device_name(o.device)},
      {"timing",
       o.device == Device::kCuda
           ? std::string(o.cuda_graph
                             ? "each pass launched as one CUDA graph (captured once; the layer "
                               "passes' events are nodes of their graph); "
                             : "each pass launched kernel by kernel (eager); ") +
                 "whole model: CUDA events around each forward pass, all read after one "
                 "synchronisation at the end, no per-layer events; layers: separate passes with "
                 "one event after every node's kernels (a node's time runs from the event "
                 "before it, less the device time one such event adds: event_timer), one "
                 "synchronisation per pass; percentages against the sum of the layer means of "
                 "those passes"
           : "whole model: one steady-clock interval per forward pass, no per-layer hooks; "
             "layers: separate passes with a hook around every node; percentages against the "
             "sum of the layer means of those passes"}};
  if (!power.available()) {
    r["power"]["note"] =
        fmt::format("no power counter readable here ({}); the power and energy columns are empty",
                    power.unavailable_reason());
  }
  if (o.device == Device::kCuda) {
    // What the layers' events cost: the device time between two back-to-back events, the host
    // time recording a pair (a launch-bound pass pays it between kernels), and the device time
    // one event adds between two kernels (taken off each layer's time).
    const cuda::EventTimerOverhead e = cuda::measure_event_timer_overhead(200);
    r["event_timer"] = {
        {"empty_interval_ns", e.device_ms_empty_pair * 1e6},
        {"pair_cost_ns", e.host_us_per_pair * 1e3},
        {"layer_event_cost_ns", sw.mark_cost_ms * 1e6},
        {"layer_event_cost_full_device_ns", sw.mark_cost_full_device_ms * 1e6},
        {"note",
         "each layer records one event after its kernels; the device time such an event adds "
         "between two kernels (layer_event_cost_ns: 200 one-block kernels with and without an "
         "event after each, in this launch mode) is taken off every layer's time, floored at 0; "
         "layer_event_cost_full_device_ns is the same between kernels of two blocks per SM, "
         "recorded beside it and not taken off; the whole-model passes record none"}};
  }
  return r;
}

// The progress line of one measured size: the whole model's times, with --layers how the layers'
// means add up, the energy per inference, and conv layers that ran another algorithm.
std::string size_summary(const ProfileOptions& o, const std::string& model, const SizeRecord& r) {
  const PowerWindow& pw = r.power;
  const double per_inf = pw.energy_j ? *pw.energy_j / static_cast<double>(r.energy_passes) : 0.0;
  const Summary& w = r.whole;
  return fmt::format(
      "{} {}{} size {}: median {:.3f} ms (min {:.3f}, max {:.3f}){}{}{}", model, o.algorithm,
      o.device != Device::kCuda ? ""
      : o.cuda_graph            ? fmt::format(" (CUDA graph of {} nodes, {:.0f} MiB on the device)",
                                              r.graph_nodes, static_cast<double>(r.device_bytes) / (1 << 20))
                                : fmt::format(" (eager launches, {:.0f} MiB on the device)",
                                              static_cast<double>(r.device_bytes) / (1 << 20)),
      r.size, w.median, w.min, w.max,
      !o.layers ? ""
      : o.device != Device::kCuda
          ? fmt::format(
                ", layers' means sum to {:.3f} ms ({:+.1f}% vs the whole model's mean {:.3f})",
                r.layers_sum, 100 * (r.layers_sum / w.mean - 1), w.mean)
          : fmt::format(
                ", layers' means sum to {:.3f} ms ({:+.1f}% vs the whole model's mean {:.3f}; "
                "{:+.1f}% before each layer's event cost came off)",
                r.layers_sum, 100 * (r.layers_sum / w.mean - 1), w.mean,
                100 * (r.layers_sum_raw / w.mean - 1)),
      !pw.energy_j ? ""
      : o.batch_size == 1
          ? fmt::format(", {:.3f} J per inference", per_inf)
          : fmt::format(", {:.3f} J per inference of {} images ({:.4f} J per image)", per_inf,
                        o.batch_size, per_inf / static_cast<double>(o.batch_size)),
      r.use.other > 0 ? fmt::format("; {} of {} conv layers ran another algorithm than {} ({})",
                                    r.use.other, r.use.conv_layers, o.algorithm, r.use.text())
                      : "");
}

// The records in `file` (either format, when it exists) of the sizes in `done`, one per size. The
// CSVs are the resume state: a cut last line is left out, unreadable records are none (both
// warned of); the sizes without a record are listed by the caller.
std::vector<nlohmann::json> kept_records(const fs::path& file, const std::set<int64_t>& done) {
  std::vector<nlohmann::json> kept;
  if (!fs::exists(file)) return kept;
  try {
    bool cut = false;
    const nlohmann::json doc = profile_sweep::read_profile_records(file, &cut);
    std::set<int64_t> seen;
    for (const nlohmann::json& rec : doc.at("records")) {
      const auto size = rec.at("size").get<int64_t>();
      if (done.count(size) && seen.insert(size).second) kept.push_back(rec);
    }
    if (cut) warn("{}: its last line was cut (stopped while writing it); left out", file.string());
  } catch (const std::exception& e) {
    warn("{}: unreadable ({}); its sizes are listed as sizes_without_records", file.string(),
         e.what());
    kept.clear();
  }
  return kept;
}

// The sweep's records and what is rendered from them (runs/profile_outputs.h): each size's
// record is rendered into the two CSVs and the trace, then appended to profile_records.jsonl;
// the progress line says what the size measured.
class SweepOutputs {
 public:
  SweepOutputs(const ProfileOptions& o, const std::string& model, int threads,
               int64_t input_channels, const std::set<int64_t>& done, const fs::path& overall,
               const fs::path& layers)
      : o_(o),
        model_(model),
        records_path_(o.output_dir / profile_sweep::kRecordsFile),
        context_(profile_sweep::profile_context(model, o.algorithm, o.batch_size, threads, o.layers,
                                                input_channels)),
        overall_(overall, kOverallHeader, CsvWriter::Mode::kAppend),
        layers_(layers, kLayersHeader, CsvWriter::Mode::kAppend) {
    // Resumed: the records of the sizes the CSVs keep, the file begun anew with them (a line cut
    // by a crash left out). Sizes whose rows have no record (measured by an nnperf from before
    // records were kept, or killed between the rows and the record) are listed, so that nothing
    // renders the CSVs from records that lack them.
    nlohmann::json header = {{"context", context_}};
    const fs::path legacy = o.output_dir / profile_sweep::kLegacyRecordsFile;
    std::vector<nlohmann::json> lines =
        done.empty() ? std::vector<nlohmann::json>{}
                     : kept_records(fs::exists(records_path_) ? records_path_ : legacy, done);
    std::vector<int64_t> without;
    for (const int64_t size : done) {
      const bool kept = std::any_of(lines.begin(), lines.end(), [size](const nlohmann::json& r) {
        return r.at("size").get<int64_t>() == size;
      });
      if (!kept) without.push_back(size);
    }
    if (!without.empty()) header["sizes_without_records"] = without;
    lines.insert(lines.begin(), std::move(header));
    write_json_lines_atomic(records_path_, lines);
    // An earlier nnperf's whole-document file, now carried over: one record file per folder.
    std::error_code ec;
    if (fs::exists(legacy, ec) && !fs::remove(legacy, ec)) {
      warn("{}: not removed ({}); {} replaces it", legacy.string(), ec.message(),
           records_path_.string());
    }
  }

  void add(const SizeRecord& r, Progress& progress) {
    // The rows and the trace first, then the record: a size's record is saved only once all
    // its files are there (nnperf report rebuilds a file that is missing from the record).
    const nlohmann::json rec = profile_sweep::size_record_json(r);
    profile_sweep::render_size(context_, rec, overall_, layers_, o_.output_dir);
    append_json_line(records_path_, rec);
    progress.line(size_summary(o_, model_, r));
  }

 private:
  const ProfileOptions& o_;
  std::string model_;
  fs::path records_path_;
  nlohmann::json context_;
  CsvWriter overall_, layers_;
};

// The plan context of every size, and for --pass train the trainer (which keeps a copy of it).
void configure_sweep(Sweep& sw, const ProfileOptions& o, int threads) {
  sw.ctx.threads = threads;
  sw.ctx.training = o.pass == "train";
  // On the GPU the host graph only gives shapes and parameters: its CPU convs plan as guess.
  sw.ctx.conv_algorithm = o.device == Device::kCuda ? "guess" : o.algorithm;
  sw.ctx.strict = o.device == Device::kCuda ? false : o.strict;
  sw.ctx.time_conv = time_conv_ms;
  sw.ctx.time_conv_backward = time_conv_backward_ms;
  sw.ctx.find_exhaustive = o.find_exhaustive;
  if (sw.ctx.training) {
    // Plain SGD at a small rate: the steps are timed, not trained to anything; random labels.
    OptimizerOptions sgd;
    sgd.name = "sgd";
    sgd.lr = 1e-4;
    sgd.momentum = 0.9;
    sw.trainer = std::make_unique<Trainer>(sw.graph, make_optimizer(sgd), sw.ctx);
  }
}

// The sweep's model built (BatchNorm folded with --fold-bn) and initialised from the seed; with
// --device cuda, a layer without a GPU kernel is refused before the folder is claimed.
void build_sweep_model(Sweep& sw, const ProfileOptions& o) {
  ModelOptions mo;
  mo.fold_bn = o.fold_bn;
  {
    const MemoryContext building(fmt::format("building {}", sw.model.name));
    sw.graph = sw.model.build(mo);
  }
  sw.graph.init(sw.rng);
  if (o.device == Device::kCuda) {
    if (const std::string why = cuda_unsupported(sw.graph); !why.empty()) {
      throw UsageError(fmt::format("--model {} --device cuda: {}", sw.model.name, why));
    }
  }
}

// Every planned size not in `done`, in order: measured, then its record added to the outputs.
ProfileResult measure_sizes(Sweep& sw, const ProfileOptions& o, const std::set<int64_t>& done,
                            SweepOutputs& outputs) {
  const ModelEntry& model = sw.model;
  Progress progress(o.progress);
  ProfileResult result;
  result.output_dir = o.output_dir;
  const int64_t t_start = now_ns();
  int processed = 0;
  const int todo = static_cast<int>(
      std::count_if(o.sizes.begin(), o.sizes.end(), [&](int64_t s) { return !done.count(s); }));
  for (const int64_t size : o.sizes) {
    if (done.count(size)) {
      ++result.sizes_skipped;
      continue;
    }
    check_interrupt();
    const double elapsed = seconds_since(t_start);
    const std::string eta =
        processed > 0 ? fmt::format("{:.0f} s left", elapsed / processed * (todo - processed)) : "";
    const auto show = [&](const std::string& what) {
      progress.update(
          fmt::format("{} {} size {} ({}/{})", model.name, o.algorithm, size, processed + 1, todo),
          processed, todo, what + (eta.empty() ? "" : ", " + eta));
    };
    const SizeRecord r = measure_size(sw, o, size, show);
    outputs.add(r, progress);
    result.layers_other_algorithm = std::max(result.layers_other_algorithm, r.use.other);
    result.conv_layers = r.use.conv_layers;
    result.algorithms_used = r.use.text();
    if (result.other_reason.empty()) result.other_reason = r.use.first_reason;
    ++processed;
    ++result.sizes_done;
  }
  progress.finish();
  return result;
}

}  // namespace

ProfileResult run_profile(ProfileOptions o) {
  apply_stage(o);
  const ModelEntry& model = find_model(o.model);
  validate_sweep(o, model);
  const int threads = set_threads(o.threads);
  set_blas_threads(1);  // see core/threads.h: OpenBLAS's spinning pool vs the OpenMP team
  const std::string stem = fmt::format("{}_{}", model.name, o.algorithm);
  const fs::path overall_path = o.output_dir / (stem + "_overall.csv");
  const fs::path layers_path = o.output_dir / (stem + "_layers.csv");
  // Power first: a --power-source that cannot be read is refused before the folder is touched.
  Sweep sw{model,
           threads,
           Graph(),
           PlanContext{},
           Rng(o.seed),
           nullptr,
           PowerMonitor(power_options(o)),
           nullptr,
           {},
           nullptr,
           0.0};
  build_sweep_model(sw, o);
  const nlohmann::json setup = sweep_setup(o, model, threads);
  const std::set<int64_t> done =
      open_sweep_folder(o, setup, sweep_layer_names(sw.graph, o), overall_path, layers_path);
  if (o.device == Device::kCuda && o.layers) {
    sw.mark_cost_ms = cuda_mark_cost_ms(o.cuda_graph);
    sw.mark_cost_full_device_ms = cuda_mark_cost_ms(o.cuda_graph, MarkKernels::kFullDevice);
  }
  write_run_json(o.output_dir, o.command_line, run_record(o, setup, sw));
  SweepOutputs outputs(o, model.name, threads, model.default_input[0], done, overall_path,
                       layers_path);

  configure_sweep(sw, o, threads);
  // NNPERF_VERBOSE=exec: every pass (warm-up, whole model, layers) logs each node.
  sw.exec = exec_log_from_env(sw.graph, model.name, o.algorithm);

  return measure_sizes(sw, o, done, outputs);
}

std::string profile_status(const fs::path& dir) {
  if (!fs::is_directory(dir)) fail("{}: not a folder", dir.string());
  std::string out;
  int sweeps = 0, unreadable = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename() != "run.json") continue;
    RunJson j;
    try {
      j = parse_run_json(read_file(e.path()), e.path().string());
    } catch (const Error& err) {
      out += fmt::format("unreadable run.json: {}\n", err.what());
      ++unreadable;
      continue;
    }
    if (j.job != "profile") continue;
    ++sweeps;
    const std::string& model = j.model;
    const std::string& algo = j.algorithm;
    const std::vector<int64_t>& planned = j.sizes;
    const fs::path overall = e.path().parent_path() / fmt::format("{}_{}_overall.csv", model, algo);
    int64_t rows = 0;
    std::string updated = "no rows yet";
    if (fs::exists(overall)) {
      try {
        rows = static_cast<int64_t>(read_csv(overall).rows.size());
      } catch (const Error&) {
        rows = -1;
      }
      const auto age = std::chrono::duration_cast<std::chrono::seconds>(
                           fs::file_time_type::clock::now() - fs::last_write_time(overall))
                           .count();
      if (rows != 0) updated = fmt::format("last row {} ago", format_duration(static_cast<double>(age)));
    }
    const std::string state = rows < 0                                       ? "CORRUPT overall CSV"
                              : rows >= static_cast<int64_t>(planned.size()) ? "complete"
                              : rows == 0                                    ? "not started"
                                          : "incomplete (resume with --resume)";
    out += fmt::format("{:<12} {:<22} {:>4}/{:<4} sizes  {:<34} {:<18}  {}\n", model, algo,
                       std::max<int64_t>(rows, 0), planned.size(), state, updated,
                       e.path().parent_path().string());
  }
  if (sweeps == 0 && unreadable == 0) out = fmt::format("no profile sweeps under {}\n", dir.string());
  return out;
}

}  // namespace nnperf
