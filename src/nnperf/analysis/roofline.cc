#include "nnperf/analysis/roofline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "nnperf/analysis/complexity.h"
#include "nnperf/analysis/ncu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- counting, with a cache

struct CountKey {
  std::string model;
  int64_t input_size, batch;
  bool training, fold_bn;
  std::string optimizer;
  std::vector<int64_t> hidden;
  std::string activation;
  int64_t channels = 0, classes = 0;  // 0: the model's defaults
  bool operator<(const CountKey& o) const {
    return std::tie(model, input_size, batch, training, fold_bn, optimizer, hidden, activation,
                    channels, classes) < std::tie(o.model, o.input_size, o.batch, o.training,
                                                  o.fold_bn, o.optimizer, o.hidden, o.activation,
                                                  o.channels, o.classes);
  }
};

class Counter {
 public:
  const ModelComplexity& count(const CountKey& k) {
    auto it = cache_.find(k);
    if (it != cache_.end()) return it->second;
    ComplexityOptions co;
    co.training = k.training;
    co.optimizer = k.optimizer;
    ModelOptions mo;
    mo.fold_bn = k.fold_bn;
    if (!k.hidden.empty()) mo.hidden = k.hidden;
    if (!k.activation.empty()) mo.activation = k.activation;
    if (k.channels > 0) mo.input_shape = Shape{k.channels, k.input_size, k.input_size};
    if (k.classes > 0) mo.classes = k.classes;
    return cache_.emplace(k, model_complexity(k.model, k.input_size, k.batch, co, mo))
        .first->second;
  }

 private:
  std::map<CountKey, ModelComplexity> cache_;
};

// The complexity model's row for a recorded optimizer name (any spelling the name rule accepts);
// a name it has no row for ("adamw" from another program) by its prefix.
std::string optimizer_family(const std::string& name) {
  if (const OptimizerCost* c = Registry<OptimizerCost>(optimizer_costs()).find(name))
    return c->name;
  return registry_key(name).rfind("adam", 0) == 0 ? "adam" : "sgd";
}

std::vector<int64_t> int_list(const nlohmann::json& obj, std::string_view key, const JsonPath& at) {
  const JsonPath p = at.at(key);
  if (!obj.contains(key) || !obj[std::string(key)].is_array())
    fail("{}: expected a list of integers", p.str());
  std::vector<int64_t> out;
  for (const auto& v : obj[std::string(key)]) {
    if (!v.is_number_integer()) fail("{}: expected a list of integers", p.str());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

// ---------------------------------------------------------------- the three sources

// The FLOPs and bytes of one row of a profile's layers CSV: a layer's forward, plus its backward
// for a training pass (0 when a count is missing); with a training pass, the "optimizer" row is
// the update of every parameter and the "loss" row has no count. A name the model lacks is an
// Error with `where_not_found()`'s text.
std::pair<double, double> profile_row_counts(const ModelComplexity& mc, const std::string& name,
                                             bool training,
                                             const std::function<std::string()>& where_not_found) {
  if (training && name == "optimizer")
    return {mc.totals.optimizer_flops, mc.totals.optimizer_bytes};
  if (training && name == "loss") return {0.0, 0.0};
  const auto it = std::find_if(mc.layers.begin(), mc.layers.end(),
                               [&](const LayerComplexity& l) { return l.name == name; });
  if (it == mc.layers.end()) fail("{}", where_not_found());
  if (!it->counted) return {0.0, 0.0};
  if (!training) return {it->flops, it->bytes};
  const double flops = it->flops + it->flops_backward_data + it->flops_backward_weights;
  const double bytes = it->bytes + it->bytes_backward;
  if (std::isnan(flops) || std::isnan(bytes)) return {0.0, 0.0};
  return {flops, bytes};
}

void profile_points(const fs::path& layers_csv, Counter& counter, std::vector<RooflinePoint>& out,
                    std::vector<std::string>& notes) {
  const fs::path run_path = layers_csv.parent_path() / "run.json";
  const RunJson run = parse_run_json(read_file(run_path), run_path.string());
  if (!run.setup) {
    notes.push_back(
        fmt::format("{}: no sweep setup in run.json (written by an older nnperf); skipped",
                    layers_csv.string()));
    return;
  }
  const JsonPath at{run_path.string(), "setup"};
  const nlohmann::json& s = *run.setup;
  const std::string model = json_string(s, "model", at);
  const std::string algorithm = json_string(s, "algorithm", at);
  const int64_t batch = json_integer(s, "batch_size", at);
  const int threads = static_cast<int>(json_integer(s, "threads", at));
  const bool fold_bn = json_bool(s, "fold_bn", at);
  // A --pass train sweep times each layer's forward + backward and has rows of its own for the
  // loss and the SGD update (runs/profile_measure.cc); a setup without "pass" is an inference one.
  const bool training = s.contains("pass") && json_string(s, "pass", at) == "train";

  const CsvTable t = read_csv(layers_csv);
  if (t.truncated_row) {
    notes.push_back(fmt::format("{}: its last row was cut (the run was killed while writing it) and "
                                "is left out; the sweep's last size may lack layers",
                                layers_csv.string()));
  }
  const std::size_t c_layer = t.require("layer"), c_size = t.require("input_size"),
                    c_ms = t.require("mean_ms"), c_type = t.require("layer_type"),
                    c_used = t.require("algorithm_used");
  std::size_t uncounted = 0;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    check_interrupt();
    const int64_t size = t.integer(r, c_size);
    const ModelComplexity& mc = [&]() -> const ModelComplexity& {
      try {
        return counter.count({model, size, batch, training, fold_bn, "sgd", {}, ""});
      } catch (const InterruptedError&) {
        throw;
      } catch (const Error& e) {  // a size or batch the model cannot take: say which row
        fail("{}:{}: {}", layers_csv.string(), t.line(r), e.what());
      }
    }();
    const std::string& name = t.cell(r, c_layer);
    const double ms = profile_layer_ms(t, r, c_ms, name, layers_csv);
    const auto [flops, bytes] = profile_row_counts(mc, name, training, [&] {
      return fmt::format(
          "{}:{}: layer {} is not a layer of {} at input size {} (a sweep of another "
          "model?)",
          layers_csv.string(), t.line(r), quote_input(name), model, size);
    });
    if (!(flops > 0) || !(bytes > 0) || !(ms > 0)) {
      ++uncounted;
      continue;
    }
    RooflinePoint p;
    p.source = "profile";
    p.origin = layers_csv.string();
    p.arch = model;
    p.layer = name;
    p.layer_type = t.cell(r, c_type);
    const std::string& used = t.cell(r, c_used);
    p.algorithm = used.empty() ? (p.layer_type == "Conv2d" ? algorithm : "-") : used;
    p.pass = training ? "training" : "inference";
    p.label = fmt::format("{}/{}/{}/{}{}", model, algorithm, size, name, training ? "/train" : "");
    p.batch_size = batch;
    p.input_size = size;
    p.threads = threads;
    p.flops = flops;
    p.bytes = bytes;
    p.time_ms = ms;
    p.elapsed_sec = ms * 1e-3;
    out.push_back(std::move(p));
  }
  if (uncounted > 0) {
    notes.push_back(fmt::format(
        "{}: {} layer row(s) without FLOPs (flatten, dropout, identity{}) or with no measured "
        "time are not points (nor in the time totals)",
        layers_csv.string(), uncounted, training ? ", the loss" : ""));
  }
}

void mlp_bench_points(const fs::path& path, Counter& counter, std::vector<RooflinePoint>& out,
                      std::vector<std::string>& notes) {
  const nlohmann::json doc = read_json(path);
  const JsonPath root{path.string(), ""};
  const nlohmann::json& ctx = json_object(doc, "context", root);
  const JsonPath cat = root.at("context");
  if (!ctx.contains("hidden")) {
    notes.push_back(
        fmt::format("{}: no context.hidden (written by an older nnperf); skipped", path.string()));
    return;
  }
  const std::vector<int64_t> hidden = int_list(ctx, "hidden", cat);
  const std::string activation = json_string(ctx, "activation", cat);
  const std::string optimizer = optimizer_family(json_string(ctx, "optimizer", cat));
  const int threads = static_cast<int>(json_integer(ctx, "threads", cat));
  const JsonPath rat = root.at("records");
  if (!doc.contains("records") || !doc["records"].is_array())
    fail("{}: expected an array", rat.str());
  for (std::size_t i = 0; i < doc["records"].size(); ++i) {
    const nlohmann::json& r = doc["records"][i];
    const JsonPath at = rat.item(i);
    const std::string impl = json_string(r, "impl", at);
    const std::string step = json_string(r, "step", at);
    const int64_t batch = json_integer(r, "batch_size", at);
    const double ms = json_number(r, "time_ms_median", at);
    const bool train = step == "train";
    const ModelComplexity& mc =
        counter.count({"mlp", 28, batch, train, false, optimizer, hidden, activation});
    RooflinePoint p;
    p.source = "mlp-bench";
    p.origin = path.string();
    p.arch = fmt::format("mlp-{}", fmt::join(hidden, "-"));
    p.layer_type = train ? "training step" : "forward pass";
    p.algorithm = impl;
    p.pass = train ? "training" : "inference";
    p.label = fmt::format("mlp-bench/{}/b{}/{}", impl, batch, step);
    p.batch_size = batch;
    p.threads = threads;
    p.flops = mc.totals.flops_iteration();
    p.bytes = mc.totals.bytes_iteration();
    p.time_ms = ms;
    p.elapsed_sec = ms * 1e-3;
    if (ms > 0) out.push_back(std::move(p));
  }
}

// A CNN training run's final_results.json (runs/cnn_train): one point for its mean step.
void cnn_train_point(const fs::path& path, const nlohmann::json& doc, Counter& counter,
                     std::vector<RooflinePoint>& out, std::vector<std::string>& notes) {
  const JsonPath root{path.string(), ""};
  const nlohmann::json& ctx = json_object(doc, "context", root);
  const JsonPath cat = root.at("context");
  const nlohmann::json& data = json_object(ctx, "data", cat);
  const nlohmann::json& recipe = json_object(ctx, "recipe", cat);
  const auto ips = json_optional_number(doc, "imgs_per_sec", root);
  const std::vector<int64_t> shape = int_list(data, "shape", cat.at("data"));
  if (!ips || !(*ips > 0) || shape.size() != 3) {
    notes.push_back(
        fmt::format("{}: no measured throughput or input shape; skipped", path.string()));
    return;
  }
  const std::string model = json_string(doc, "model", root);
  const int64_t batch = json_integer(recipe, "batch_size", cat.at("recipe"));
  CountKey key{model, shape[1], batch, true, false, "sgd", {}, ""};
  key.channels = shape[0];
  key.classes = json_integer(data, "classes", cat.at("data"));
  const ModelComplexity& mc = counter.count(key);
  RooflinePoint p;
  p.source = "train";
  p.origin = path.string();
  p.arch = model;
  p.layer_type = "training step";
  p.algorithm = ctx.contains("conv_algorithm") && ctx["conv_algorithm"].is_string()
                    ? ctx["conv_algorithm"].get<std::string>()
                    : "";
  p.pass = "training";
  p.label = fmt::format("train/{}/{}", path.parent_path().filename().string(), model);
  p.batch_size = batch;
  p.threads = static_cast<int>(json_integer(ctx, "threads", cat));
  p.flops = mc.totals.flops_iteration();
  p.bytes = mc.totals.bytes_iteration();
  p.time_ms = static_cast<double>(batch) / *ips * 1e3;  // one training step, data waits included
  p.elapsed_sec = json_optional_number(doc, "measured_sec", root).value_or(0.0);
  out.push_back(std::move(p));
}

void train_points(const fs::path& path, Counter& counter, std::vector<RooflinePoint>& out,
                  std::vector<std::string>& notes) {
  const nlohmann::json doc = read_json(path);
  const JsonPath root{path.string(), ""};
  if (doc.contains("model") && doc.contains("context")) {
    cnn_train_point(path, doc, counter, out, notes);
    return;
  }
  const nlohmann::json& hp = json_object(doc, "hyperparameters", root);
  const JsonPath hat = root.at("hyperparameters");
  const auto ips = json_optional_number(doc, "imgs_per_sec", root);
  const auto sec = json_optional_number(doc, "measured_sec", root);
  if (!ips || !sec || !(*ips > 0) || !hp.contains("hidden") || !hp.contains("threads")) {
    notes.push_back(fmt::format(
        "{}: no measured throughput or model widths (written by an older nnperf); skipped",
        path.string()));
    return;
  }
  const std::vector<int64_t> hidden = int_list(hp, "hidden", hat);
  const int64_t batch = json_integer(hp, "batch_size", hat);
  const std::string activation = json_string(doc, "activation", root);
  const std::string optimizer = optimizer_family(json_string(hp, "optimizer", hat));
  const ModelComplexity& mc =
      counter.count({"mlp", 28, batch, true, false, optimizer, hidden, activation});
  RooflinePoint p;
  p.source = "train";
  p.origin = path.string();
  p.arch = fmt::format("mlp-{}", fmt::join(hidden, "-"));
  p.layer_type = "training step";
  p.algorithm = hp.contains("gemm") && hp["gemm"].is_string() ? hp["gemm"].get<std::string>() : "";
  p.pass = "training";
  p.label = fmt::format("train/{}/{}", path.parent_path().filename().string(), activation);
  p.batch_size = batch;
  p.threads = static_cast<int>(json_integer(hp, "threads", hat));
  p.flops = mc.totals.flops_iteration();
  p.bytes = mc.totals.bytes_iteration();
  p.time_ms = static_cast<double>(batch) / *ips * 1e3;  // one training step
  p.elapsed_sec = *sec;
  out.push_back(std::move(p));
}

// ---------------------------------------------------------------- ceilings for one point

// The ceilings measured with `threads` threads, else with the most threads below, else the least
// above: a 1-thread run is held to the 1-thread roofs.
template <class C>
std::vector<C> for_threads(const std::vector<C>& all, int threads) {
  std::set<int> have;
  for (const C& c : all) have.insert(c.threads);
  if (have.empty()) return {};
  int pick = *have.begin();
  for (int t : have) {
    if (t <= threads) pick = t;
  }
  std::vector<C> out;
  for (const C& c : all) {
    if (c.threads == pick) out.push_back(c);
  }
  return out;
}

struct Bound {
  double compute_gflops;
  std::string compute_name;
  double gbps;
  std::string level;
};

Bound bound_for(const MachineCeilings& m, int threads, double bytes) {
  Bound b{m.peak_gflops_fp32, "peak fp32", m.peak_gbps, "DRAM"};
  const auto compute = for_threads(m.compute, threads);
  for (const ComputeCeiling& c : compute) {
    if (c.gflops > 0 && (b.compute_name == "peak fp32" || c.gflops > b.compute_gflops)) {
      b.compute_gflops = c.gflops;
      b.compute_name = c.name;
    }
  }
  auto memory = for_threads(m.memory, threads);
  std::sort(memory.begin(), memory.end(), [](const MemoryCeiling& a, const MemoryCeiling& c) {
    return a.working_set_hi < c.working_set_hi;
  });
  for (const MemoryCeiling& c : memory) {
    b.gbps = c.gbps;
    b.level = c.level;
    if (bytes <= c.working_set_hi) break;  // the first level whose plateau covers the bytes
  }
  return b;
}

nlohmann::json num_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

double dnum(const nlohmann::json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>()
                                          : std::numeric_limits<double>::quiet_NaN();
}
std::string sval(const nlohmann::json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
}
std::string cell(const nlohmann::json& v, int precision = 7) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return csv_number(v.get<double>(), precision);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

}  // namespace

std::vector<RooflinePoint> collect_roofline_points(const fs::path& dir,
                                                   std::vector<std::string>& notes) {
  std::error_code ec;
  if (!fs::exists(dir, ec))
    throw UsageError(fmt::format("{}: no such results folder", dir.string()));
  std::vector<fs::path> files;
  if (fs::is_directory(dir, ec)) {
    for (auto it = fs::recursive_directory_iterator(
             dir, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) fail("{}: cannot list ({})", dir.string(), ec.message());
  } else {
    files.push_back(dir);
  }
  std::sort(files.begin(), files.end());
  Counter counter;
  std::vector<RooflinePoint> points;
  for (const fs::path& f : files) {
    check_interrupt();
    const std::string name = f.filename().string();
    if (name.size() > 11 && name.ends_with("_layers.csv") &&
        fs::exists(f.parent_path() / "run.json", ec)) {
      const std::size_t before = points.size();
      profile_points(f, counter, points, notes);
      if (points.size() == before && read_csv(f).rows.empty()) {
        notes.push_back(fmt::format("{}: no layer rows to place (the profile ran with --no-layers)",
                                    f.string()));
      }
    } else if (name == "mlp_bench.json") {
      mlp_bench_points(f, counter, points, notes);
    } else if (name == "final_results.json") {
      train_points(f, counter, points, notes);
    }
  }
  return points;
}

std::vector<RooflinePoint> ncu_roofline_points(const NcuImport& import,
                                               std::vector<std::string>& notes) {
  std::vector<RooflinePoint> points;
  std::size_t skipped = 0;
  std::array<std::size_t, 3> without{};  // FLOPs, DRAM bytes, time: n/a, zero or not collected
  const auto usable = [](double v) { return std::isfinite(v) && v > 0; };
  for (const NcuLaunch& l : import.launches) {
    const std::array<bool, 3> has = {usable(l.flops), usable(l.dram_bytes), usable(l.time_s)};
    if (!(has[0] && has[1] && has[2])) {
      ++skipped;
      for (std::size_t i = 0; i < has.size(); ++i) without[i] += has[i] ? 0 : 1;
      continue;
    }
    RooflinePoint p;
    p.source = "ncu";
    p.origin = import.path;
    p.label = fmt::format("{}:{}", l.id, l.name);
    p.backend = "cuda";
    p.layer = l.name;
    p.layer_type = "kernel";
    p.pass = "";
    p.flops = l.flops;
    p.bytes = l.dram_bytes;
    p.time_ms = l.time_s * 1e3;
    p.elapsed_sec = l.time_s;
    points.push_back(std::move(p));
  }
  if (skipped > 0) {
    constexpr std::array<const char*, 3> kWhat = {"FLOPs", "DRAM bytes", "time"};
    std::vector<std::string> reasons;
    for (std::size_t i = 0; i < without.size(); ++i) {
      if (without[i] > 0) reasons.push_back(fmt::format("{} without {}", without[i], kWhat[i]));
    }
    notes.push_back(fmt::format(
        "{}: {} of {} launches are not points ({}: n/a, zero or not collected; the import's "
        "warnings say which counters are missing)",
        import.path, skipped, import.launches.size(), fmt::join(reasons, ", ")));
  }
  return points;
}

MachineCeilings ceilings_from_peaks(double peak_tflops, double peak_gbps) {
  if (!(peak_tflops > 0) || !std::isfinite(peak_tflops)) {
    throw UsageError(fmt::format("--peak-compute {}: expected TFLOP/s above 0", peak_tflops));
  }
  if (!(peak_gbps > 0) || !std::isfinite(peak_gbps)) {
    throw UsageError(fmt::format("--peak-bw {}: expected GB/s above 0", peak_gbps));
  }
  MachineCeilings m;
  m.env = "given";
  m.description =
      fmt::format("--peak-compute {} TFLOP/s --peak-bw {} GB/s", peak_tflops, peak_gbps);
  m.peak_gflops_fp32 = peak_tflops * 1e3;
  m.peak_gbps = peak_gbps;
  return m;
}

namespace {

// One point's record under the ceilings; memory_bound says which roof limits it.
nlohmann::json point_record(const RooflinePoint& p, const MachineCeilings& roof,
                            bool& memory_bound) {
  const Bound b = bound_for(roof, p.threads, p.bytes);
  const double ai = p.flops / p.bytes;
  const double attained = p.flops / (p.time_ms * 1e-3) * 1e-9;
  const double mem_roof = ai * b.gbps;
  memory_bound = mem_roof < b.compute_gflops;
  const double attainable = memory_bound ? mem_roof : b.compute_gflops;
  return {{"label", p.label},
          {"env", roof.env},
          {"arch", p.arch},
          {"backend", p.backend},
          {"batch_size", p.batch_size},
          {"precision", p.precision},
          {"elapsed_sec", p.elapsed_sec},
          {"images_per_sec", static_cast<double>(p.batch_size) / (p.time_ms * 1e-3)},
          {"ai", ai},
          {"attained_gflops", attained},
          {"peak_gflops", b.compute_gflops},
          {"peak_gbps", roof.peak_gbps},
          {"layer", p.layer},
          {"algorithm", p.algorithm},
          {"flops", p.flops},
          {"bytes", p.bytes},
          {"time_ms", p.time_ms},
          {"attainable_gflops", attainable},
          {"pct_of_roof", 100.0 * attained / attainable},
          {"bound", memory_bound ? "memory" : "compute"},
          {"ceiling", memory_bound ? b.level : b.compute_name},
          {"ceiling_gbps", b.gbps},
          {"layer_type", p.layer_type},
          {"pass", p.pass},
          {"source", p.source},
          {"input_size", p.input_size},
          {"threads", p.threads},
          {"origin", p.origin}};
}

// The ceilings as the context lists them: compute, then memory.
std::pair<nlohmann::json, nlohmann::json> ceilings_json(const MachineCeilings& roof) {
  nlohmann::json compute = nlohmann::json::array(), memory = nlohmann::json::array();
  for (const ComputeCeiling& c : roof.compute) {
    compute.push_back(
        {{"name", c.name}, {"simd", c.simd}, {"threads", c.threads}, {"gflops", c.gflops}});
  }
  for (const MemoryCeiling& c : roof.memory) {
    memory.push_back({{"level", c.level},
                      {"threads", c.threads},
                      {"gbps", c.gbps},
                      {"working_set_bytes", {c.working_set_lo, c.working_set_hi}}});
  }
  return {compute, memory};
}

}  // namespace

nlohmann::json roofline_json(const std::vector<RooflinePoint>& points, const MachineCeilings& roof,
                             const std::vector<std::string>& notes, const std::string& color_by) {
  if (color_by != "type" && color_by != "algorithm") {
    throw UsageError(
        fmt::format("--color-by {}: expected type or algorithm", quote_input(color_by)));
  }
  nlohmann::json records = nlohmann::json::array();
  double total_ms = 0, memory_ms = 0;
  std::set<std::string> sources;
  for (const RooflinePoint& p : points) {
    bool memory_bound = false;
    records.push_back(point_record(p, roof, memory_bound));
    total_ms += p.time_ms;
    if (memory_bound) memory_ms += p.time_ms;
    sources.insert(p.origin);
  }
  const auto [compute, memory] = ceilings_json(roof);
  nlohmann::json ctx = {
      {"env", roof.env},
      {"description", roof.description},
      {"peak_gflops", {{"fp32", roof.peak_gflops_fp32}}},
      {"peak_gbps", roof.peak_gbps},
      {"compute_ceilings", compute},
      {"memory_ceilings", memory},
      {"color_by", color_by},
      {"sources", std::vector<std::string>(sources.begin(), sources.end())},
      {"notes", notes},
      {"points", records.size()},
      {"total_time_ms", total_ms},
      {"memory_bound_time_ms", memory_ms},
      {"memory_bound_time_share",
       total_ms > 0 ? num_or_null(memory_ms / total_ms) : nlohmann::json(nullptr)},
      {"convention",
       {"ai = FLOPs / minimum bytes, both counted by the complexity model (FLOPs = 2 x MACs; "
        "training: forward + data and weight gradients per layer + optimizer); never derived "
        "from attained bandwidth",
        "attained_gflops = FLOPs / measured time (decimal GFLOP/s)",
        "attainable_gflops = min(compute roof, ai x bandwidth of the level): the compute roof is "
        "the best fp32 FMA ceiling measured with the point's thread count; the level is the "
        "smallest whose measured plateau covers the point's minimum bytes (else DRAM)",
        "peak_gbps is the DRAM figure of peaks.json, as cloudml-project1 records it; ceiling_gbps "
        "is the level's bandwidth used for the point",
        "FLOPs are those of the layer's definition (direct convolution): winograd and fft do fewer "
        "arithmetic operations, so their attained GFLOP/s is an effective rate and can exceed the "
        "compute roof (pct_of_roof above 100)"}}};
  return {{"context", ctx}, {"records", records}};
}

CsvDoc roofline_points_csv(const nlohmann::json& doc) {
  CsvDoc csv;
  csv.header = {"label", "env", "arch", "backend", "batch_size", "precision", "elapsed_sec",
                "images_per_sec", "ai", "attained_gflops", "peak_gflops", "peak_gbps",
                // ours
                "layer", "algorithm", "flops", "bytes", "time_ms", "attainable_gflops",
                "pct_of_roof", "bound", "ceiling", "ceiling_gbps", "layer_type", "pass", "source",
                "input_size", "threads"};
  for (const auto& r : doc.at("records")) {
    std::vector<std::string> row;
    for (const auto& c : csv.header) row.push_back(r.contains(c) ? cell(r[c]) : "");
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

CsvDoc roofline_summary_csv(const nlohmann::json& doc) {
  CsvDoc csv;
  csv.header = {"label", "ai",     "attained_gflops", "attainable_gflops", "pct_of_attainable",
                "bound", "ceiling"};
  for (const auto& r : doc.at("records")) {
    csv.rows.push_back({cell(r["label"]), cell(r["ai"]), cell(r["attained_gflops"]),
                        cell(r["attainable_gflops"]), cell(r["pct_of_roof"]), cell(r["bound"]),
                        cell(r["ceiling"])});
  }
  return csv;
}

void write_csv_doc(const CsvDoc& csv, const fs::path& path) {
  CsvWriter w(path, csv.header);
  for (const auto& row : csv.rows) w.row(row);
}

PlotResult write_roofline_outputs(const nlohmann::json& doc, const fs::path& dir) {
  write_json_atomic(dir / "roofline.json", doc);
  write_csv_doc(roofline_points_csv(doc), dir / "roofline_points.csv");
  return roofline_plot(doc, dir / "roofline");
}

namespace {

// Indices of the `n` records with the longest time, longest first.
std::vector<std::size_t> slowest(const nlohmann::json& records, std::size_t n) {
  std::vector<std::pair<double, std::size_t>> by_time;
  for (std::size_t i = 0; i < records.size(); ++i)
    by_time.push_back({dnum(records[i], "time_ms"), i});
  std::sort(by_time.begin(), by_time.end(), std::greater<>());
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < std::min(n, by_time.size()); ++k) out.push_back(by_time[k].second);
  return out;
}

// The ceilings roofline_json recorded in its context.
MachineCeilings ceilings_from_context(const nlohmann::json& ctx) {
  MachineCeilings m;
  m.peak_gflops_fp32 = dnum(ctx.at("peak_gflops"), "fp32");
  m.peak_gbps = dnum(ctx, "peak_gbps");
  for (const auto& c : ctx.at("compute_ceilings")) {
    m.compute.push_back(
        {sval(c, "name"), sval(c, "simd"), c.value("threads", 1), dnum(c, "gflops")});
  }
  for (const auto& c : ctx.at("memory_ceilings")) {
    const auto& ws = c.at("working_set_bytes");
    m.memory.push_back({sval(c, "level"), c.value("threads", 1), dnum(c, "gbps"),
                        ws.at(0).get<double>(), ws.at(1).get<double>()});
  }
  return m;
}

// One line per memory level (up to the compute roof) and per SIMD compute ceiling, for `threads`.
std::vector<Series> ceiling_series(const MachineCeilings& m, int threads, double xmin,
                                   double xmax) {
  auto compute = for_threads(m.compute, threads);
  if (compute.empty()) compute.push_back({"peak fp32", "", threads, m.peak_gflops_fp32});
  auto memory = for_threads(m.memory, threads);
  if (memory.empty()) memory.push_back({"DRAM", threads, m.peak_gbps, 0, 0});
  double top = 0;
  for (const auto& c : compute) top = std::max(top, c.gflops);
  std::vector<Series> out;
  for (const auto& c : memory) {
    if (!(c.gbps > 0)) continue;
    const double end = std::min(top / c.gbps, xmax);
    Series s;
    s.title = fmt::format("{} {:.1f} GB/s", c.level, c.gbps);
    s.style = Series::Style::kLines;
    s.x = {xmin, end};
    s.y = {xmin * c.gbps, end * c.gbps};
    out.push_back(std::move(s));
  }
  for (const auto& c : compute) {
    if (!(c.gflops > 0)) continue;
    Series s;
    s.title = fmt::format("{} {:.1f} GFLOP/s", c.name, c.gflops);
    s.style = Series::Style::kLines;
    const double lo = std::max(xmin, c.gflops / std::max(memory.back().gbps, 1e-9));
    s.x = {std::min(lo, xmax), xmax};
    s.y = {c.gflops, c.gflops};
    out.push_back(std::move(s));
  }
  return out;
}

// One series of points per value of `key` (layer_type or algorithm), the ten slowest labelled.
std::vector<Series> point_series(const nlohmann::json& records, const std::string& key) {
  const std::vector<std::size_t> slow_list = slowest(records, 10);
  const std::set<std::size_t> slow(slow_list.begin(), slow_list.end());
  std::map<std::string, Series> groups;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    std::string g = sval(r, key.c_str());
    if (g.empty()) g = "-";
    Series& s = groups[g];
    s.title = g;
    s.style = Series::Style::kPoints;
    s.x.push_back(dnum(r, "ai"));
    s.y.push_back(dnum(r, "attained_gflops"));
    const std::string lbl = sval(r, "layer").empty() ? sval(r, "label") : sval(r, "layer");
    s.point_labels.push_back(slow.count(i) ? lbl : "");
  }
  std::vector<Series> out;
  for (auto& [g, s] : groups) out.push_back(std::move(s));
  if (records.empty()) {
    Series s;
    s.title = "no points";
    s.style = Series::Style::kPoints;
    s.x = {std::nan("")};
    s.y = {std::nan("")};
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

PlotResult roofline_plot(const nlohmann::json& doc, const fs::path& stem) {
  const nlohmann::json& ctx = doc.at("context");
  const nlohmann::json& records = doc.at("records");
  PlotSpec spec;
  spec.kind = PlotSpec::Kind::kPoints;
  spec.logx = spec.logy = true;
  spec.xlabel = "arithmetic intensity (FLOP/byte, counted)";
  spec.ylabel = "GFLOP/s (attained)";
  spec.title = fmt::format("Roofline: {}", sval(ctx, "env"));
  // The ceilings drawn are those of the thread count most points ran with.
  std::map<int, int> thread_votes;
  double xmin = std::numeric_limits<double>::infinity(), xmax = 0;
  for (const auto& r : records) {
    ++thread_votes[r.value("threads", 1)];
    xmin = std::min(xmin, dnum(r, "ai"));
    xmax = std::max(xmax, dnum(r, "ai"));
  }
  const auto most =
      std::max_element(thread_votes.begin(), thread_votes.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  const int threads = most == thread_votes.end() ? 1 : most->first;
  if (!(xmax > 0)) {
    xmin = 0.1;
    xmax = 100;
  }
  xmin = std::max(xmin / 4, 1e-3);
  xmax = xmax * 4;
  spec.series = ceiling_series(ceilings_from_context(ctx), threads, xmin, xmax);
  const std::string key = sval(ctx, "color_by") == "algorithm" ? "algorithm" : "layer_type";
  for (Series& s : point_series(records, key)) spec.series.push_back(std::move(s));
  return render_plot(spec, stem);
}

std::string roofline_text(const nlohmann::json& doc) {
  const nlohmann::json& ctx = doc.at("context");
  const nlohmann::json& records = doc.at("records");
  std::string out =
      fmt::format("roofline against {} ({})\n", sval(ctx, "env"), sval(ctx, "description"));
  out += fmt::format("  peak fp32 {:.1f} GFLOP/s, DRAM {:.1f} GB/s",
                     dnum(ctx.at("peak_gflops"), "fp32"), dnum(ctx, "peak_gbps"));
  if (!ctx.at("memory_ceilings").empty()) {
    std::vector<std::string> lv;
    for (const auto& c : ctx.at("memory_ceilings")) {
      lv.push_back(fmt::format("{} {:.0f} GB/s ({}T)", sval(c, "level"), dnum(c, "gbps"),
                               c.value("threads", 1)));
    }
    out += fmt::format("; levels: {}", fmt::join(lv, ", "));
  }
  out += "\n";
  const double share = dnum(ctx, "memory_bound_time_share");
  out +=
      fmt::format("  {} points, {:.3f} ms in all; {} of the time in memory-bound points\n",
                  records.size(), dnum(ctx, "total_time_ms"),
                  std::isfinite(share) ? fmt::format("{:.1f}%", 100 * share) : std::string("n/a"));
  const std::vector<std::size_t> slow = slowest(records, 10);
  if (!slow.empty()) {
    out += fmt::format("  {:<44} {:>10} {:>8} {:>10} {:>10} {:>6}  {}\n", "slowest points",
                       "time_ms", "ai", "GFLOP/s", "roof", "%roof", "bound (ceiling)");
  }
  for (const std::size_t i : slow) {
    const auto& r = records[i];
    std::string label = sval(r, "label");
    if (label.size() > 44) label = "..." + label.substr(label.size() - 41);
    out += fmt::format("  {:<44} {:>10.3f} {:>8.2f} {:>10.2f} {:>10.2f} {:>6.1f}  {} ({})\n", label,
                       dnum(r, "time_ms"), dnum(r, "ai"), dnum(r, "attained_gflops"),
                       dnum(r, "attainable_gflops"), dnum(r, "pct_of_roof"), sval(r, "bound"),
                       sval(r, "ceiling"));
  }
  for (const auto& n : ctx.at("notes")) out += fmt::format("  note: {}\n", n.get<std::string>());
  return out;
}

}  // namespace nnperf
