// `nnperf sweep plan`: cells, their command lines and cost estimates, written to sweep.json; reading
// a sweep back.
#include "nnperf/runs/sweep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <future>
#include <map>
#include <set>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/error.h"
#include "nnperf/core/machine_model.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/models/registry.h"
#include "nnperf/runs/profile_run.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr int kSweepVersion = 1;
// Share of the FMA peak a whole network reaches in nnperf's measurements (the profiler's
// resnet50/vgg16 figures run at 40-70% of peak): the estimate's only assumption beyond the counts.
constexpr double kAssumedEfficiency = 0.5;
// What a cell costs besides its FLOPs: starting nnperf, building and planning the model, writing
// the files (about a second per cell in the sanity sweeps of tests/slurm).
constexpr double kCellStartSeconds = 1.0;

// Forward FLOPs of one image at `size`, from the complexity model at the model's default size and
// scaled by (size / default)^2 (convolutions dominate, and their FLOPs scale with the output area;
// the fully connected tails of alexnet/vgg16 sit behind an adaptive pool). Counted once per model.
// Memory likewise: the node outputs of one image scale with the area, the parameters (with their
// gradients and optimizer state when training) do not.
struct FlopsModel {
  double flops_at_default = 0, train_flops_at_default = 0;
  double activation_bytes_at_default = 0, train_activation_bytes_at_default = 0;
  double param_bytes = 0, train_param_bytes = 0;
  int64_t default_size = 224;
};

FlopsModel count_model(const std::string& model) {
  const ModelEntry& m = find_model(model);
  FlopsModel f;
  f.default_size = m.default_input[1];
  ComplexityOptions train;
  train.training = true;
  const ModelComplexity c = model_complexity(model, f.default_size, 1, train);
  f.flops_at_default = c.totals.flops;
  f.train_flops_at_default = c.totals.flops_iteration();
  f.activation_bytes_at_default = c.totals.forward_activation_bytes;
  f.train_activation_bytes_at_default = c.totals.forward_activation_bytes + c.totals.backward_activation_bytes;
  f.param_bytes = c.totals.param_bytes;
  f.train_param_bytes = c.totals.param_bytes + c.totals.gradient_bytes + c.totals.optimizer_state_bytes;
  return f;
}

double seconds_for(double flops, int threads) {
  const double rate = machine_model().fma_gflops_per_core * 1e9 * std::max(threads, 1) * kAssumedEfficiency;
  return flops / rate;
}

double scaled(const FlopsModel& f, bool train, int64_t size) {
  const double r = static_cast<double>(size) / static_cast<double>(f.default_size);
  return (train ? f.train_flops_at_default : f.flops_at_default) * r * r;
}

// A lower bound of a cell's memory at `size` and `batch` (workspaces and the framework come on
// top), the sum that the profiler's own check refuses a size by.
double memory_for(const FlopsModel& f, bool train, int64_t size, int64_t batch) {
  const double r = static_cast<double>(size) / static_cast<double>(f.default_size);
  const double per_image = train ? f.train_activation_bytes_at_default : f.activation_bytes_at_default;
  return per_image * r * r * static_cast<double>(batch) + (train ? f.train_param_bytes : f.param_bytes);
}

// Every model counted once, in parallel (building a model's weights dominates planning: vgg16's
// 138M parameters).
std::map<std::string, FlopsModel> count_models(const std::vector<std::string>& models) {
  std::map<std::string, std::future<FlopsModel>> pending;
  for (const auto& m : models) {
    if (!pending.count(m)) pending[m] = std::async(std::launch::async, count_model, m);
  }
  std::map<std::string, FlopsModel> out;
  for (auto& [m, f] : pending) out[m] = f.get();
  return out;
}

std::string join_sizes(const std::vector<int64_t>& sizes) { return fmt::format("{}", fmt::join(sizes, ",")); }

// The models and algorithms as their registries spell them ("ResNet-18" is resnet18): a cell's
// name, folder and the files its profile writes all use those, and a name given twice in two
// spellings is one name given twice.
SweepPlanOptions canonical_names(const SweepPlanOptions& options) {
  SweepPlanOptions o = options;
  for (auto& m : o.models) m = find_model(m).name;
  for (auto& a : o.algorithms) a = canonical_conv_algorithm("--algorithms", a);
  return o;
}

void check_names(const SweepPlanOptions& o) {
  if (o.models.empty()) throw UsageError("--models: expected at least one model");
  for (const auto& m : o.models) {
    if (m == "mlp") throw UsageError("--models mlp: sweeps cover the CNNs; mlp-bench times the MLP");
  }
  if (o.threads < 1) throw UsageError(fmt::format("--threads {}: expected at least 1", o.threads));
}

// A size below the model's smallest input would fail in every cell that holds it: refused when
// planning, not after the jobs are queued. (Memory is the machine's that runs the cell, so each
// cell checks it there, before its folder.)
void check_model_size(const std::string& model, int64_t size, const char* flag) {
  const ModelEntry& m = find_model(model);
  if (size < m.min_input_size) {
    throw UsageError(fmt::format("{} {}: {} needs inputs of at least {}x{}", flag, size, model,
                                 m.min_input_size, m.min_input_size));
  }
}

nlohmann::json profile_cells(const SweepPlanOptions& o) {
  if (o.algorithms.empty()) throw UsageError("--algorithms: expected at least one algorithm");
  for (const auto& a : o.algorithms) {
    (void)canonical_conv_algorithm("--algorithms", a);
  }
  if (o.pass != "inference" && o.pass != "train") {
    throw UsageError(fmt::format("--pass {}: expected inference or train", o.pass));
  }
  for (std::size_t i = 0; i < o.sizes.size(); ++i) {
    if (std::find(o.sizes.begin(), o.sizes.begin() + static_cast<std::ptrdiff_t>(i), o.sizes[i]) !=
        o.sizes.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw UsageError(fmt::format("--sizes {}: {} is given twice", join_sizes(o.sizes), o.sizes[i]));
    }
  }
  ProfileOptions po;
  po.stage = o.stage;
  po.sizes = o.sizes;
  apply_stage(po);
  const int per_cell = o.sizes_per_cell > 0 ? o.sizes_per_cell : static_cast<int>(po.sizes.size());
  const bool train = o.pass == "train";
  nlohmann::json cells = nlohmann::json::array();
  const auto counts = count_models(o.models);
  for (const auto& m : o.models) {
    for (int64_t s : po.sizes) check_model_size(m, s, "--sizes");
    // What each cell's profile would refuse, refused before any cell is queued.
    if (train) check_profile_train_batch(m, po.sizes, o.batch_size);
    const FlopsModel& f = counts.at(m);
    for (const auto& a : o.algorithms) {
      for (std::size_t i0 = 0; i0 < po.sizes.size(); i0 += static_cast<std::size_t>(per_cell)) {
        const std::vector<int64_t> sizes(
            po.sizes.begin() + static_cast<std::ptrdiff_t>(i0),
            po.sizes.begin() + static_cast<std::ptrdiff_t>(std::min(po.sizes.size(), i0 + static_cast<std::size_t>(per_cell))));
        const std::string name = fmt::format("{}_{}{}_{}-{}", m, a, train ? "_train" : "",
                                             sizes.front(), sizes.back());
        double flops = 0;
        // The whole-model passes (warm-up + measure) and the per-layer passes (measure).
        for (int64_t s : sizes) flops += (po.warmup + 2.0 * po.measure) * scaled(f, train, s) * o.batch_size;
        cells.push_back({{"name", name},
                         {"kind", "profile"},
                         {"model", m},
                         {"algorithm", a},
                         {"pass", o.pass},
                         {"sizes", sizes},
                         {"output", "cells/" + name},
                         {"estimated_seconds", kCellStartSeconds + seconds_for(flops, o.threads)},
                         {"estimated_memory_bytes", memory_for(f, train, *std::max_element(sizes.begin(), sizes.end()), o.batch_size)},
                         {"args",
                          {"profile", "--model", m, "--algorithm", a, "--sizes", join_sizes(sizes),
                           "--warmup", std::to_string(po.warmup), "--measure",
                           std::to_string(po.measure), "--batch-size", std::to_string(o.batch_size),
                           "--threads", std::to_string(o.threads), "--pass", o.pass,
                           "--output-dir", "cells/" + name, "--progress", "lines"}}});
      }
    }
  }
  return cells;
}

nlohmann::json train_cells(const SweepPlanOptions& o) {
  if (o.batch_sizes.empty()) throw UsageError("--batch-sizes: expected at least one batch size");
  const std::vector<int> threads = o.thread_counts.empty() ? std::vector<int>{o.threads} : o.thread_counts;
  if (o.iters < 1 || o.warmup_iters < 0) throw UsageError("--iters must be >= 1 and --warmup-iters >= 0");
  nlohmann::json cells = nlohmann::json::array();
  const auto counts = count_models(o.models);
  for (const auto& m : o.models) {
    const FlopsModel& f = counts.at(m);
    const int64_t size = o.input_size > 0 ? o.input_size : f.default_size;
    check_model_size(m, size, "--input-size");
    for (int64_t b : o.batch_sizes) {
      check_batchnorm_trains(m, size, b, fmt::format("--batch-sizes {}", b),
                             "give batch sizes of 2 or more, or a larger --input-size");
      for (int t : threads) {
        const std::string name = fmt::format("{}_b{}_t{}", m, b, t);
        nlohmann::json args = {"train", "--model", m, "--synthetic", "--iters", std::to_string(o.iters),
                               "--warmup-iters", std::to_string(o.warmup_iters), "--batch-size",
                               std::to_string(b), "--input-size", std::to_string(size), "--threads",
                               std::to_string(t), "--label", name, "--log-dir", "cells/" + name};
        const double flops = (o.iters + o.warmup_iters) * scaled(f, true, size) * static_cast<double>(b);
        cells.push_back({{"name", name},
                         {"kind", "train"},
                         {"model", m},
                         {"batch_size", b},
                         {"threads", t},
                         {"input_size", size},
                         {"output", "cells/" + name},
                         {"estimated_seconds", kCellStartSeconds + seconds_for(flops, t)},
                         {"estimated_memory_bytes", memory_for(f, true, size, b)},
                         {"args", args}});
      }
    }
  }
  return cells;
}

void claim_sweep_dir(const fs::path& dir) {
  if (fs::exists(dir / "sweep.json")) {
    throw UsageError(fmt::format("--out-dir {}: already holds a sweep (sweep.json); one sweep per "
                                 "folder: choose another folder",
                                 dir.string()));
  }
  if (fs::exists(dir) && (!fs::is_directory(dir) || !fs::is_empty(dir))) {
    throw UsageError(fmt::format("--out-dir {}: exists and is not an empty folder", dir.string()));
  }
  fs::create_directories(dir);
}

}  // namespace

nlohmann::json plan_sweep(const SweepPlanOptions& options) {
  if (options.kind != "profile" && options.kind != "train")
    throw UsageError("sweep plan: expected --profile or --train");
  if (options.out_dir.empty()) throw UsageError("--out-dir: required");
  const SweepPlanOptions o = canonical_names(options);
  check_names(o);
  nlohmann::json cells = o.kind == "profile" ? profile_cells(o) : train_cells(o);
  std::set<std::string> names;
  double total = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    cells[i]["index"] = i;
    if (!names.insert(cells[i]["name"].get<std::string>()).second) {
      throw UsageError(fmt::format("sweep plan: cell {} planned twice (a model, algorithm or size "
                                   "given twice?)",
                                   cells[i]["name"].get<std::string>()));
    }
    total += cells[i]["estimated_seconds"].get<double>();
  }
  claim_sweep_dir(o.out_dir);
  const nlohmann::json sweep = {
      {"version", kSweepVersion},
      {"kind", o.kind},
      {"id", fmt::format("{}_{}", timestamp_compact(), hostname())},
      {"created", iso8601_now()},
      {"planned_on", hostname()},
      {"command", o.command_line},
      {"threads_per_cell", o.threads},
      {"estimate", {{"total_seconds", total},
                    {"basis", fmt::format("complexity-model FLOPs / ({} of {:.1f} GFLOP/s per core "
                                          "x threads; {})",
                                          kAssumedEfficiency, machine_model().fma_gflops_per_core,
                                          machine_model().source)}}},
      {"cells", cells}};
  write_json_atomic(o.out_dir / "sweep.json", sweep);
  return sweep;
}

namespace {

// Cell i of sweep.json as plan_sweep writes it: every field the runner, status and merge read,
// with its type, so that none of them meets a missing or mistyped field.
void check_cell(const nlohmann::json& c, std::size_t i, const std::string& kind,
                const fs::path& file) {
  const JsonPath cw = JsonPath{file.string(), "cells"}.item(i);
  const auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: cells[{}]: {}", file.string(), i, what));
  };
  if (!c.is_object() || json_integer(c, "index", cw) != static_cast<int64_t>(i)) {
    throw Error(fmt::format("{}: cells[{}] is not cell {}", file.string(), i, i));
  }
  const std::string name = json_string(c, "name", cw);
  if (name.empty() || name.find('/') != std::string::npos || name.starts_with(".")) {
    throw bad(fmt::format("bad cell name '{}'", name));
  }
  if (json_string(c, "kind", cw) != kind)
    throw bad(fmt::format("kind is not the sweep's ({})", kind));
  (void)json_string(c, "model", cw);
  const fs::path output = json_string(c, "output", cw);
  const auto up = std::find(output.begin(), output.end(), fs::path(".."));
  if (output.empty() || output.is_absolute() || up != output.end()) {
    throw bad(fmt::format("output '{}' is not a folder inside the sweep", output.string()));
  }
  if (!(json_number(c, "estimated_seconds", cw) >= 0)) throw bad("negative estimated_seconds");
  if (c.contains("estimated_memory_bytes") &&  // absent in sweeps planned before it existed
      !(json_number(c, "estimated_memory_bytes", cw) >= 0)) {
    throw bad("negative estimated_memory_bytes");
  }
  if (kind == "profile") {
    (void)json_string(c, "algorithm", cw);
    (void)json_string(c, "pass", cw);
    if (!c.contains("sizes") || !c["sizes"].is_array() || c["sizes"].empty()) {
      throw bad("sizes: expected a non-empty list");
    }
    for (const auto& sz : c["sizes"]) {
      if (!sz.is_number_integer() || sz.get<int64_t>() < 1)
        throw bad("sizes: expected positive integers");
    }
  }
  if (!c.contains("args") || !c["args"].is_array() || c["args"].empty()) throw bad("no command");
  for (const auto& a : c["args"]) {
    if (!a.is_string()) throw bad("a non-string argument");
  }
}

}  // namespace

nlohmann::json read_sweep(const fs::path& dir) {
  const fs::path file = dir / "sweep.json";
  if (!fs::exists(file)) throw Error(fmt::format("{}: no sweep.json (not a sweep folder)", dir.string()));
  nlohmann::json j = read_json(file);
  const JsonPath where{file.string(), ""};
  if (json_integer(j, "version", where) != kSweepVersion) {
    throw Error(fmt::format("{}: sweep version {} (this nnperf reads {})", file.string(),
                            j["version"].dump(), kSweepVersion));
  }
  const std::string kind = json_string(j, "kind", where);
  if (kind != "profile" && kind != "train") {
    throw Error(fmt::format("{}: kind '{}' (expected profile or train)", file.string(), kind));
  }
  (void)json_string(j, "id", where);
  if (j.contains("threads_per_cell") && json_integer(j, "threads_per_cell", where) < 1) {
    throw Error(fmt::format("{}: threads_per_cell {}: expected at least 1", file.string(),
                            j["threads_per_cell"].dump()));
  }
  if (!j.contains("cells") || !j["cells"].is_array())
    throw Error(file.string() + ": no cells array");
  if (j["cells"].empty())
    throw Error(file.string() + ": the cells array is empty (nothing to run)");
  for (std::size_t i = 0; i < j["cells"].size(); ++i) check_cell(j["cells"][i], i, kind, file);
  return j;
}

}  // namespace nnperf
