#include "nnperf/report/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/limits.h"
#include "nnperf/core/text.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/records.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kTitlePrefix = "nnperf report: ";

std::string g4(double v) { return std::isfinite(v) ? fmt::format("{:.4g}", v) : std::string(); }
std::string pct(double v) {
  return std::isfinite(v) ? fmt::format("{:.1f}%", 100 * v) : std::string("n/a");
}

double num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : std::nan("");
}
std::string str(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number()) return g4(it->get<double>());
  return it->dump();
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// A CSV as a table: numeric columns are those whose non-empty cells all parse as numbers.
ReportTable csv_table(const CsvTable& t, std::string caption) {
  ReportTable out;
  out.caption = std::move(caption);
  out.header = t.header;
  out.rows = t.rows;
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    bool numeric = false, all = true;
    for (const auto& r : t.rows) {
      if (r[c].empty()) continue;
      numeric = true;
      all = all && is_number(r[c]);
    }
    out.numeric.push_back(numeric && all);
  }
  return out;
}

// A folder's own name, also when given as "." or with a trailing separator.
std::string folder_name(const fs::path& dir) {
  std::error_code ec;
  fs::path a = fs::absolute(dir, ec).lexically_normal();
  if (!a.has_filename()) a = a.parent_path();
  return a.filename().string();
}

// `p` relative to the report's folder; the folder itself by its name (not ".").
std::string rel(const fs::path& p, const fs::path& root) {
  std::error_code ec;
  const fs::path r = fs::relative(p, root, ec);
  if (!ec && r == ".") return folder_name(root);
  return ec || r.empty() ? p.string() : r.generic_string();
}

// The figure when its SVG is there, else a line saying which is missing (the job ran without
// gnuplot, or the file was removed), never a silent gap.
void add_figure(ReportSection& s, const fs::path& svg, std::string caption) {
  std::error_code ec;
  if (fs::exists(svg, ec)) {
    s.figures.push_back({std::move(caption), svg});
  } else {
    s.paragraphs.push_back(fmt::format(
        "Figure not shown: {} is missing (gnuplot was not found when it was rendered, or the file "
        "was removed): {}.",
        svg.filename().string(), caption));
  }
}

// ---------------------------------------------------------------- machine

// Runs that claimed their folder (run.json) but never wrote what a finished run writes:
// interrupted, failed or still running. Their partial files are not presented as results, so
// they are listed, with how far each got.
std::vector<std::string> incomplete_runs(const std::vector<fs::path>& run_jsons, const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  const auto rows = [](const fs::path& csv) -> int64_t {
    try {
      return static_cast<int64_t>(read_csv(csv).rows.size());
    } catch (const Error&) {
      return -1;
    }
  };
  for (const fs::path& p : run_jsons) {
    RunJson j;
    try {
      j = parse_run_json(read_file(p), p.string());
    } catch (const Error&) {
      continue;  // the machine section says which run.json it cannot read
    }
    const fs::path d = p.parent_path();
    const std::string where = rel(d, root);
    // A --profile-one-step run ends after its one step, with one_step.json and no final results.
    if (j.job == "train" && !fs::exists(d / "final_results.json", ec) &&
        !fs::exists(d / "one_step.json", ec)) {
      const int64_t epochs = fs::exists(d / "training_metrics.csv", ec) ? rows(d / "training_metrics.csv") : 0;
      out.push_back(
          fmt::format("{}: a training run without final_results.json ({} in training_metrics.csv)",
                      where, count_noun(std::max<int64_t>(epochs, 0), "epoch")));
    } else if (j.job == "activations" && !fs::exists(d / "summary.csv", ec)) {
      out.push_back(fmt::format("{}: an activation study without summary.csv (its finished runs appear "
                                "under Training runs)", where));
    } else if (j.job == "mlp-bench" && !fs::exists(d / "mlp_bench.json", ec)) {
      out.push_back(fmt::format("{}: an MLP benchmark without mlp_bench.json", where));
    } else if (j.job == "profile" && !j.sizes.empty()) {
      const fs::path overall = d / fmt::format("{}_{}_overall.csv", j.model, j.algorithm);
      const int64_t done = fs::exists(overall, ec) ? rows(overall) : 0;
      if (done < static_cast<int64_t>(j.sizes.size())) {
        out.push_back(fmt::format("{}: the profile sweep of {} with {} has {} of its {} sizes (resume with "
                                  "--resume)", where, j.model, j.algorithm, std::max<int64_t>(done, 0),
                                  j.sizes.size()));
      }
    }
  }
  return out;
}

// The unfinished runs' section, and a line of the intro pointing to it; nothing when all finished.
void add_unfinished_section(ReportDocument& doc, const std::vector<fs::path>& run_jsons, const fs::path& root) {
  const std::vector<std::string> unfinished = incomplete_runs(run_jsons, root);
  if (unfinished.empty()) return;
  ReportSection s;
  s.title = "Runs that did not finish";
  s.paragraphs.push_back(fmt::format(
      "{} started (wrote run.json) but never wrote what a finished run writes: interrupted, "
      "failed or still running. Of what they wrote, only rows complete in themselves (a profile "
      "sweep's finished sizes) appear above.",
      unfinished.size() == 1 ? std::string("This run") : fmt::format("These {} runs", unfinished.size())));
  for (const auto& u : unfinished) s.paragraphs.push_back("- " + u);
  doc.intro.push_back(fmt::format("{} did not finish: see \"Runs that did not finish\".",
                                  unfinished.size() == 1 ? std::string("One run") : fmt::format("{} runs", unfinished.size())));
  doc.sections.push_back(std::move(s));
}

ReportSection machine_section(const std::vector<fs::path>& run_jsons, const fs::path& root) {
  ReportSection s;
  s.title = "Machine and build";
  std::map<std::string, std::vector<std::string>> hosts;  // hostname -> runs
  ReportTable t;
  t.header = {"run",          "job",  "date", "host",     "cpu",
              "logical CPUs", "SIMD", "BLAS", "compiler", "commit"};
  for (const fs::path& p : run_jsons) {
    const nlohmann::json j = read_json(p);
    if (!j.is_object()) continue;
    const nlohmann::json m = j.value("machine", nlohmann::json::object());
    const nlohmann::json b = j.value("build", nlohmann::json::object());
    const std::string host = str(m, "hostname");
    hosts[host].push_back(rel(p.parent_path(), root));
    t.rows.push_back({rel(p.parent_path(), root), str(j, "job"), str(j, "date"), host,
                      str(m, "cpu_model"), str(m, "logical_cpus"), str(m, "simd_active"),
                      str(j, "blas"), str(b, "compiler"), str(b, "commit")});
  }
  t.caption = "Where each run was measured (from its run.json)";
  s.tables.push_back(std::move(t));
  if (hosts.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [h, runs] : hosts)
      names.push_back(fmt::format("{} ({} runs)", h, runs.size()));
    s.recommendations.push_back(
        fmt::format("These results come from {} machines ({}): figures from different machines are "
                    "not comparable "
                    "and are not compared below.",
                    hosts.size(), fmt::join(names, ", ")));
  }
  return s;
}

// ---------------------------------------------------------------- peaks

// A value of a method record in words: text as it is, numbers to 4 digits, lists joined.
std::string method_value(const nlohmann::json& v) {
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return g4(v.get<double>());
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& x : v) items.push_back(method_value(x));
    return fmt::format("{}", fmt::join(items, ", "));
  }
  std::vector<std::string> fields;
  for (const auto& [k, x] : v.items()) fields.push_back(k + " " + method_value(x));
  return fmt::format("{}", fmt::join(fields, ", "));
}

bool is_list_of_objects(const nlohmann::json& v) {
  return v.is_array() && !v.empty() &&
         std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_object(); });
}

// How a ceilings environment was measured (its "method" record) as tables: one of its fields and
// their values, then one per field holding a list of records (the FMA trials), its text columns
// first.
std::vector<ReportTable> method_tables(const nlohmann::json& method, const std::string& env) {
  std::vector<ReportTable> tables;
  ReportTable fields;
  fields.caption = fmt::format("{}: how the ceilings were measured", env);
  fields.header = {"field", "value"};
  for (const auto& [key, v] : method.items()) {
    std::string name = key;
    std::replace(name.begin(), name.end(), '_', ' ');
    if (!is_list_of_objects(v)) {
      fields.rows.push_back({name, method_value(v)});
      continue;
    }
    ReportTable t;
    t.caption = fmt::format("{}: {}", env, name);
    std::vector<std::string> columns;
    for (const auto& [col, x] : v.front().items()) {
      if (!x.is_number()) columns.push_back(col);
    }
    for (const auto& [col, x] : v.front().items()) {
      if (x.is_number()) columns.push_back(col);
    }
    for (const std::string& col : columns) {
      t.header.push_back(col);
      t.numeric.push_back(v.front()[col].is_number());
    }
    for (const auto& row : v) {
      std::vector<std::string> cells;
      for (const std::string& col : columns) {
        cells.push_back(row.contains(col) ? method_value(row[col]) : std::string());
      }
      t.rows.push_back(std::move(cells));
    }
    fields.rows.push_back({name, fmt::format("the table \"{}\"", t.caption)});
    tables.push_back(std::move(t));
  }
  fields.markdown_rows = fields.rows.size();
  tables.insert(tables.begin(), std::move(fields));
  return tables;
}

ReportSection peaks_section(const fs::path& path, const fs::path& root) {
  const nlohmann::json doc = read_json(path);
  ReportSection s;
  s.title = fmt::format("Measured ceilings ({})", rel(path, root));
  if (!doc.is_object()) fail("{}: expected an object of environments", path.string());
  for (const auto& [env, e] : doc.items()) {
    if (!e.is_object()) fail("{}: field '{}': expected an object", path.string(), env);
    s.paragraphs.push_back(fmt::format("{}: {}", env, str(e, "description")));
    ReportTable t;
    t.caption = fmt::format("{}: ceilings", env);
    t.header = {"ceiling", "threads", "value", "unit"};
    t.numeric = {false, true, true, false};
    t.rows.push_back({"peak fp32 (peak_gflops.fp32)", "",
                      g4(num(e.value("peak_gflops", nlohmann::json::object()), "fp32")),
                      "GFLOP/s"});
    t.rows.push_back({"DRAM bandwidth (peak_gbps)", "", g4(num(e, "peak_gbps")), "GB/s"});
    for (const auto& c : e.value("compute_ceilings", nlohmann::json::array())) {
      t.rows.push_back({str(c, "name"), str(c, "threads"), g4(num(c, "gflops")), "GFLOP/s"});
    }
    for (const auto& c : e.value("memory_ceilings", nlohmann::json::array())) {
      t.rows.push_back({fmt::format("{} {} bandwidth", str(c, "level"), str(c, "kernel")),
                        str(c, "threads"), g4(num(c, "gbps")), "GB/s"});
    }
    for (const auto& c : e.value("sgemm", nlohmann::json::array())) {
      t.rows.push_back({fmt::format("SGEMM {} n={}", str(c, "impl"), str(c, "n")),
                        str(c, "threads"), g4(num(c, "gflops")), "GFLOP/s"});
    }
    if (e.contains("measured") && e["measured"].is_object()) {
      for (const auto& [k, v] : e["measured"].items()) {
        if (v.is_number())
          t.rows.push_back(
              {k, "", g4(v.get<double>()), k.find("gbytes") != std::string::npos ? "GB/s" : ""});
      }
    }
    const nlohmann::json method = e.value("method", nlohmann::json::object());
    const bool described = method.is_object() && !method.empty();
    t.note = described ? "Medians of timed rounds (nnperf peaks); how, in the tables below."
                       : "Medians of timed rounds (nnperf peaks).";
    s.tables.push_back(std::move(t));
    if (described) {
      for (ReportTable& mt : method_tables(method, env)) s.tables.push_back(std::move(mt));
    }
    if (e.contains("stream_triad") && e["stream_triad"].is_object()) {
      const auto& st = e["stream_triad"];
      s.recommendations.push_back(fmt::format(
          "{}: our triad {} GB/s vs an independent STREAM triad {} GB/s at {} bytes (ratio {}).",
          env, g4(num(st, "ours_gbps")), g4(num(st, "gbps")), str(st, "working_set_bytes"),
          g4(num(st, "ratio"))));
    }
    if (has_bandwidth_sweep(e)) {
      add_figure(s, peaks_bandwidth_stem(path, env).string() + ".svg",
                 fmt::format("{}: bandwidth (GB/s, STREAM byte counting) against working-set "
                             "size, per kernel and thread count",
                             env));
    }
  }
  return s;
}

// ---------------------------------------------------------------- roofline

// The roofline's findings: the memory-bound share, where the time goes by layer type, the
// slowest memory-bound points, the points furthest below their roof, and points above it.
std::vector<std::string> roofline_findings(
    const nlohmann::json& ctx, const nlohmann::json& recs,
    const std::vector<std::pair<double, std::size_t>>& order) {
  std::vector<std::string> out;
  double total = 0;
  std::map<std::string, double> by_type;
  for (const auto& r : recs) {
    total += num(r, "time_ms");
    by_type[str(r, "layer_type")] += num(r, "time_ms");
  }
  const double share = num(ctx, "memory_bound_time_share");
  out.push_back(fmt::format("{} of the measured time is in memory-bound points.", pct(share)));
  std::vector<std::pair<double, std::string>> types;
  for (const auto& [k, v] : by_type) types.push_back({v, k});
  std::sort(types.begin(), types.end(), std::greater<>());
  std::vector<std::string> where;
  for (std::size_t k = 0; k < std::min<std::size_t>(5, types.size()); ++k) {
    where.push_back(fmt::format("{} {}", types[k].second.empty() ? "-" : types[k].second,
                                pct(types[k].first / total)));
  }
  if (total > 0) out.push_back(fmt::format("Where the time goes: {}.", fmt::join(where, ", ")));
  std::vector<std::string> mem, low;
  for (const auto& [t, i] : order) {
    const auto& r = recs[i];
    if (str(r, "bound") == "memory" && mem.size() < 5) {
      mem.push_back(fmt::format("{} ({} ms, {} FLOP/B, {})", str(r, "label"), g4(t),
                                g4(num(r, "ai")), str(r, "ceiling")));
    }
    if (num(r, "pct_of_roof") < 10 && low.size() < 5) {
      low.push_back(fmt::format("{} ({} ms at {} of its roof)", str(r, "label"), g4(t),
                                pct(num(r, "pct_of_roof") / 100)));
    }
  }
  if (!mem.empty()) {
    out.push_back(
        fmt::format("Slowest memory-bound points (faster arithmetic will not help them; fewer "
                    "bytes will: fusion, "
                    "blocking for a smaller level, lower precision): {}.",
                    fmt::join(mem, "; ")));
  }
  if (!low.empty()) {
    out.push_back(fmt::format("Slowest points below 10% of their roof (the most headroom): {}.",
                              fmt::join(low, "; ")));
  }
  std::map<std::string, int> above;
  for (const auto& r : recs) {
    if (num(r, "pct_of_roof") > 100) ++above[str(r, "algorithm")];
  }
  if (!above.empty()) {
    std::vector<std::string> parts;
    for (const auto& [a, n] : above)
      parts.push_back(fmt::format("{} ({})", a.empty() ? "-" : a, count_noun(n, "point")));
    out.push_back(
        fmt::format("Above the compute roof: {}. FLOPs are counted as the layer defines them "
                    "(direct convolution); "
                    "winograd and fft do less arithmetic, so these rates are effective rates, not "
                    "a broken roof.",
                    fmt::join(parts, ", ")));
  }
  return out;
}

ReportTable roofline_points_table(const nlohmann::json& recs,
                                  const std::vector<std::pair<double, std::size_t>>& order) {
  ReportTable t;
  t.caption = "Every point, slowest first";
  t.header = {"point",
              "layer type",
              "algorithm",
              "time (ms)",
              "FLOPs",
              "bytes",
              "intensity (FLOP/B)",
              "attained (GFLOP/s)",
              "attainable (GFLOP/s)",
              "% of roof",
              "bound",
              "ceiling"};
  t.numeric = {false, false, false, true, true, true, true, true, true, true, false, false};
  for (const auto& [tm, i] : order) {
    const auto& r = recs[i];
    t.rows.push_back({str(r, "label"), str(r, "layer_type"), str(r, "algorithm"), g4(tm),
                      g4(num(r, "flops")), g4(num(r, "bytes")), g4(num(r, "ai")),
                      g4(num(r, "attained_gflops")), g4(num(r, "attainable_gflops")),
                      g4(num(r, "pct_of_roof")), str(r, "bound"), str(r, "ceiling")});
  }
  t.note =
      "time: the measured median or mean per interval as the source job reports it; GFLOP/s "
      "decimal (1e9).";
  return t;
}

ReportSection roofline_section(const fs::path& path, const fs::path& root) {
  const nlohmann::json doc = read_json(path);
  const JsonPath at{path.string(), ""};
  const nlohmann::json& ctx = json_object(doc, "context", at);
  if (!doc.contains("records") || !doc["records"].is_array())
    fail("{}: field 'records': expected an array", path.string());
  const nlohmann::json& recs = doc["records"];
  ReportSection s;
  s.title = fmt::format("Roofline ({})", rel(path.parent_path(), root));
  s.paragraphs.push_back(fmt::format(
      "{} points against {} ({}): peak fp32 {} GFLOP/s, DRAM {} GB/s. Intensity is counted FLOPs "
      "over "
      "counted minimum bytes (complexity model); each point is held to the compute roof of its "
      "thread count "
      "and the bandwidth of the smallest memory level whose measured plateau holds its bytes.",
      recs.size(), str(ctx, "env"), str(ctx, "description"),
      g4(num(ctx.value("peak_gflops", nlohmann::json::object()), "fp32")),
      g4(num(ctx, "peak_gbps"))));
  std::vector<std::pair<double, std::size_t>> order;  // slowest first
  for (std::size_t i = 0; i < recs.size(); ++i) order.push_back({num(recs[i], "time_ms"), i});
  std::sort(order.begin(), order.end(), std::greater<>());
  s.recommendations = roofline_findings(ctx, recs, order);
  for (const auto& n : ctx.value("notes", nlohmann::json::array())) {
    if (n.is_string()) s.paragraphs.push_back(fmt::format("Note: {}", n.get<std::string>()));
  }
  add_figure(s, path.parent_path() / "roofline.svg",
             "Roofline: attained GFLOP/s against arithmetic intensity (FLOP/byte, counted), "
             "log-log; one ceiling per "
             "memory level and SIMD level; the ten slowest points labelled");
  s.tables.push_back(roofline_points_table(recs, order));
  return s;
}

// ---------------------------------------------------------------- Nsight Compute imports

ReportSection ncu_section(const fs::path& path, const fs::path& root) {
  const nlohmann::json doc = read_json(path);
  const nlohmann::json& ctx = json_object(doc, "context", {path.string(), ""});
  ReportSection s;
  s.title = fmt::format("Nsight Compute kernels ({})", rel(path, root));
  s.paragraphs.push_back(
      fmt::format("{}: {} launches of {} kernels ({} page). FLOPs = 2 x FMA + MUL + ADD thread "
                  "instructions per precision; tensor-pipe work is not counted (flagged).",
                  str(ctx, "path"), str(ctx, "launches"), str(ctx, "kernels"), str(ctx, "layout")));
  if (doc.contains("utilisation")) {
    s.paragraphs.push_back(
        "Utilisation metrics only: no counter roofline can be drawn from this file.");
  }
  ReportTable t;
  t.caption = "Per kernel name (launches summed, never joined across IDs)";
  t.header = {
      "kernel",  "launches",  "time (ms)",       "FLOPs", "DRAM bytes", "intensity (FLOP/B, DRAM)",
      "GFLOP/s", "DRAM GB/s", "% of attainable", "bound", "flags"};
  t.numeric = {false, true, true, true, true, true, true, true, true, false, false};
  for (const auto& k : doc.value("by_name", nlohmann::json::array())) {
    std::vector<std::string> flags;
    for (const auto& f : k.value("flags", nlohmann::json::array())) {
      if (f.is_string()) flags.push_back(f.get<std::string>());
    }
    t.rows.push_back({str(k, "name"), str(k, "launches"), g4(num(k, "time_s") * 1e3),
                      g4(num(k, "flops")), g4(num(k, "dram_bytes")), g4(num(k, "ai_dram")),
                      g4(num(k, "gflops")), g4(num(k, "dram_gbs")), g4(num(k, "pct_of_attainable")),
                      str(k, "bound"), fmt::format("{}", fmt::join(flags, " "))});
  }
  s.tables.push_back(std::move(t));
  return s;
}

// ---------------------------------------------------------------- profile sweeps

struct Sweep {
  fs::path overall, layers;
};

// From a profile folder's run.json: the machines its rows were measured on (a merged sweep's
// "hosts", else the run's own machine.hostname), and what they ran on as a suffix of the
// algorithm's name, so that rows of one algorithm on the CPU and on the GPU, or launched as a
// CUDA graph and kernel by kernel, are never compared as one: "" on the CPU, " on cuda (graph)"
// or " on cuda (eager)" (a GPU sweep from before --launch existed ran eagerly), with ", engines"
// when find's candidates included cuDNN's graph-API engines; and whether the timed pass was a
// training step (--pass train): such sweeps are compared among themselves, never with
// inferences. Nothing when run.json is missing or unreadable.
struct SweepInfo {
  std::vector<std::string> hosts;
  std::string label;
  std::string pass;  // ", training step" for a --pass train sweep, else ""
};

SweepInfo sweep_info(const fs::path& run_json) {
  SweepInfo out;
  try {
    if (!fs::exists(run_json)) return out;
    const nlohmann::json j = read_json(run_json);
    if (j.contains("hosts") && j["hosts"].is_array()) {
      for (const auto& h : j["hosts"]) {
        if (h.is_string()) out.hosts.push_back(h.get<std::string>());
      }
    } else if (j.contains("machine") && j["machine"].is_object() && j["machine"].contains("hostname") &&
               j["machine"]["hostname"].is_string()) {
      out.hosts.push_back(j["machine"]["hostname"].get<std::string>());
    }
    const nlohmann::json setup = j.value("setup", nlohmann::json::object());
    if (setup.is_object() && setup.value("device", "cpu") == "cuda")
      out.label = fmt::format(" on cuda ({}{})", setup.value("launch", "eager"),
                              setup.value("find_engines", false) ? ", engines" : "");
    if (setup.is_object() && setup.value("pass", "inference") == "train") {
      out.pass = ", training step";
    }
  } catch (const Error&) {
  } catch (const nlohmann::json::exception&) {
  }
  return out;
}

// One finding per (model, batch, size) timed with two or more algorithms: the fastest, and how
// much slower each other one is.
void whole_model_findings(const std::map<std::string, std::map<std::string, double>>& model_ms,
                          std::vector<std::string>& out) {
  for (const auto& [key, algos] : model_ms) {
    if (algos.size() < 2) continue;
    const auto best =
        std::min_element(algos.begin(), algos.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    std::vector<std::string> others;
    for (const auto& [a, ms] : algos) {
      if (a != best->first)
        others.push_back(fmt::format("{} {}x slower", a, g4(ms / best->second)));
    }
    out.push_back(fmt::format("{}: {} is fastest for the whole model ({} ms median); {}.", key,
                              best->first, g4(best->second), fmt::join(others, ", ")));
  }
}

// What the profile sweeps say across each other: (model, batch, size) -> algorithm -> median ms,
// and per (model, size) layer -> algorithm that ran -> the fastest of its ms.
struct ProfileFigures {
  std::map<std::string, std::map<std::string, double>> model_ms;
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> layer_ms;
  std::map<std::string, std::string> layer_shape;
  std::vector<std::string> cut;  // files whose last row was cut (left out)
};

// What a row of an overall CSV ran: the algorithm asked for, and when some conv layers ran
// another ("fft" falling back to gemm where it cannot serve), how many and what ran:
// "fft (3 of 13 conv layers ran another; ran fft:10 gemm:3)". guess and find pick per layer, so
// their rows say what they picked only in the CSV.
std::string ran_label(const CsvTable& o, std::size_t r, std::size_t c_algo, int c_conv, int c_other,
                      int c_used) {
  const std::string& algo = o.cell(r, c_algo);
  if (c_conv < 0 || c_other < 0 || algo == "guess" || algo == "find") return algo;
  const std::string& other = o.cell(r, static_cast<std::size_t>(c_other));
  if (other.empty() || other == "0") return algo;
  return fmt::format(
      "{} ({} of {} conv layers ran another{})", algo, other,
      o.cell(r, static_cast<std::size_t>(c_conv)),
      c_used < 0 ? std::string() : "; ran " + o.cell(r, static_cast<std::size_t>(c_used)));
}

// Row r's integer in column c of a profile CSV, refused with file and line unless in [1, hi]: a
// batch or an input size no sweep can have is a corrupt or hand-edited row.
int64_t sweep_integer(const CsvTable& t, std::size_t r, std::size_t c, int64_t hi) {
  const int64_t v = t.integer(r, c);
  if (v < 1 || v > hi) {
    fail("{}:{}: {} {} is not one a sweep can have (1 to {})", t.source, t.line(r), t.header[c], v,
         hi);
  }
  return v;
}

// One sweep's overall CSV: its rows into `whole` (set up from the first sweep's columns), its
// medians into the figures.
void add_overall(const Sweep& sw, const fs::path& root, const SweepInfo& info, ReportTable& whole,
                 bool& first, ProfileFigures& f) {
  const CsvTable o = read_csv(sw.overall);
  if (o.truncated_row) f.cut.push_back(rel(sw.overall, root));
  if (first) {
    whole = csv_table(o,
                      "Whole-model time (ms) per sweep and input size: an inference, or a "
                      "training step for sweeps run with --pass train");
    whole.header.insert(whole.header.begin(), "sweep");
    whole.numeric.insert(whole.numeric.begin(), false);
    whole.rows.clear();
    first = false;
  }
  const std::size_t c_model = o.require("model"), c_algo = o.require("algorithm"),
                    c_batch = o.require("batch_size"), c_size = o.require("input_size"),
                    c_med = o.require("median");
  // Older CSVs lack these: their rows keep the algorithm's name alone.
  const int c_conv = o.column("conv_layers"), c_other = o.column("conv_layers_other_algorithm"),
            c_used = o.column("algorithms_used");
  for (std::size_t r = 0; r < o.rows.size(); ++r) {
    (void)sweep_integer(o, r, c_batch, kMaxBatch);
    (void)sweep_integer(o, r, c_size, kMaxImageSide);
    auto row = o.rows[r];
    if (row.size() + 1 == whole.header.size()) {
      row.insert(row.begin(), rel(sw.overall.parent_path(), root));
      whole.rows.push_back(row);
    }
    const std::string key =
        fmt::format("{} batch {} at {}x{}{}", o.cell(r, c_model), o.cell(r, c_batch),
                    o.cell(r, c_size), o.cell(r, c_size), info.pass);
    f.model_ms[key][ran_label(o, r, c_algo, c_conv, c_other, c_used) + info.label] =
        o.number(r, c_med);
  }
}

// One sweep's layers CSV: each conv layer's time under the algorithm that ran (a layer of the
// `find` sweep that ran winograd counts as winograd) and the sweep's label (sweep_info), the
// fastest of the sweeps that ran it.
void add_layers(const fs::path& layers, const fs::path& root, const SweepInfo& info,
                ProfileFigures& f) {
  const CsvTable l = read_csv(layers);
  if (l.truncated_row) f.cut.push_back(rel(layers, root));
  const std::size_t l_model = l.require("model"), l_algo = l.require("algorithm"),
                    l_size = l.require("input_size"), l_layer = l.require("layer"),
                    l_ms = l.require("mean_ms"), l_conv = l.require("is_conv"),
                    l_k = l.require("kernel_size"), l_s = l.require("stride"),
                    l_used = l.require("algorithm_used");
  for (std::size_t r = 0; r < l.rows.size(); ++r) {
    (void)sweep_integer(l, r, l_size, kMaxImageSide);
    if (l.cell(r, l_conv) != "yes") continue;
    const std::string key =
        fmt::format("{} at {}{}", l.cell(r, l_model), l.cell(r, l_size), info.pass);
    const std::string algo =
        (l.cell(r, l_used).empty() ? l.cell(r, l_algo) : l.cell(r, l_used)) + info.label;
    const double ms = profile_layer_ms(l, r, l_ms, l.cell(r, l_layer), layers);
    if (!(ms > 0)) continue;  // no time measured
    auto& slot = f.layer_ms[key][l.cell(r, l_layer)];
    if (!slot.count(algo) || ms < slot[algo]) slot[algo] = ms;
    f.layer_shape[l.cell(r, l_layer)] =
        fmt::format("{}x{} stride {}", l.cell(r, l_k), l.cell(r, l_k), l.cell(r, l_s));
  }
}

// Per (model, size) and conv shape: which algorithm was fastest on how many layers.
void layer_findings(const ProfileFigures& f, std::vector<std::string>& recommendations) {
  for (const auto& [key, layers] : f.layer_ms) {
    // shape -> winner -> count
    std::map<std::string, std::map<std::string, int>> wins;
    for (const auto& [layer, algos] : layers) {
      if (algos.size() < 2) continue;
      const auto best =
          std::min_element(algos.begin(), algos.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      ++wins[f.layer_shape.at(layer)][best->first];
    }
    for (const auto& [shape, w] : wins) {
      int n = 0;
      std::vector<std::string> parts;
      for (const auto& [a, c] : w) {
        n += c;
        parts.push_back(fmt::format("{} on {}", a, c));
      }
      recommendations.push_back(fmt::format("{}, {} convolutions ({}): fastest {}.", key, shape,
                                            count_noun(n, "layer"), fmt::join(parts, ", ")));
    }
  }
}

ReportSection profile_section(const std::vector<Sweep>& sweeps, const fs::path& root) {
  ReportSection s;
  s.title = "Convolution-algorithm profiles";
  ReportTable whole;
  bool first = true;
  ProfileFigures f;
  std::set<std::string> hosts;  // the machines the compared rows come from
  for (const Sweep& sw : sweeps) {
    check_interrupt();
    const SweepInfo info = sweep_info(sw.overall.parent_path() / "run.json");
    hosts.insert(info.hosts.begin(), info.hosts.end());
    add_overall(sw, root, info, whole, first, f);
    if (!sw.layers.empty()) add_layers(sw.layers, root, info, f);
  }
  if (!f.cut.empty()) {
    s.paragraphs.push_back(fmt::format(
        "Note: the last row of {} was cut (the run was killed while writing it) and is left out: "
        "those sweeps may stop short of their last size or layer.",
        fmt::join(f.cut, ", ")));
  }
  if (hosts.size() > 1) {
    s.paragraphs.push_back(fmt::format(
        "Note: these rows come from {} machines ({}); the comparisons below set figures of "
        "different machines side by side.",
        hosts.size(), fmt::join(hosts, ", ")));
  }
  whole_model_findings(f.model_ms, s.recommendations);
  layer_findings(f, s.recommendations);
  whole.note =
      "median/mean/std/min/max in ms per inference (or training step, for --pass train sweeps) "
      "of the whole model, timed without per-layer hooks; "
      "power and energy columns are empty where no counter was readable.";
  s.tables.push_back(std::move(whole));
  return s;
}

// ---------------------------------------------------------------- mlp-bench

ReportSection mlp_bench_section(const fs::path& path, const fs::path& root) {
  const nlohmann::json doc = read_json(path);
  const JsonPath at{path.string(), ""};
  const nlohmann::json& ctx = json_object(doc, "context", at);
  ReportSection s;
  s.title = fmt::format("MLP implementation benchmark ({})", rel(path.parent_path(), root));
  s.paragraphs.push_back(
      fmt::format("{} with {}, {} thread(s); {} warm-up and {} measured iterations per case.",
                  str(ctx, "model"), str(ctx, "optimizer"), str(ctx, "threads"), str(ctx, "warmup"),
                  str(ctx, "measure")));
  ReportTable t;
  t.caption = "Time per iteration";
  t.header = {"implementation", "batch",   "step",     "median (ms)",      "min (ms)",
              "max (ms)",       "GFLOP/s", "images/s", "speedup vs naive", "speedup vs blas"};
  t.numeric = {false, true, false, true, true, true, true, true, true, true};
  std::map<std::pair<int64_t, std::string>, std::pair<double, std::string>> best;
  const auto records = doc.find("records");
  if (records == doc.end() || !records->is_array() || records->empty()) {
    fail("{}: expected a non-empty array 'records' (one per implementation, batch and step)", path.string());
  }
  for (std::size_t i = 0; i < records->size(); ++i) {
    const nlohmann::json& r = (*records)[i];
    const JsonPath rat = at.at("records").item(i);
    (void)json_string(r, "impl", rat);
    (void)json_integer(r, "batch_size", rat);
    for (const char* key : {"time_ms_median", "time_ms_min", "time_ms_max"}) {
      const double v = json_number(r, key, rat);
      if (!(v > 0) || !std::isfinite(v)) fail("{}: expected a positive time in ms, found {}", rat.at(key).str(), v);
    }
    t.rows.push_back({str(r, "impl"), str(r, "batch_size"), str(r, "step"),
                      g4(num(r, "time_ms_median")), g4(num(r, "time_ms_min")),
                      g4(num(r, "time_ms_max")), g4(num(r, "gflops_per_s")),
                      g4(num(r, "imgs_per_sec")), g4(num(r, "speedup_vs_naive")),
                      g4(num(r, "speedup_vs_blas"))});
    const auto key = std::make_pair(r.value("batch_size", int64_t{0}), str(r, "step"));
    const double ms = num(r, "time_ms_median");
    if (!best.count(key) || ms < best[key].first) best[key] = {ms, str(r, "impl")};
  }
  for (const auto& [key, b] : best) {
    s.recommendations.push_back(fmt::format("batch {}, {}: {} is fastest ({} ms).", key.first,
                                            key.second, b.second, g4(b.first)));
  }
  int bad = 0, checked = 0;
  for (const auto& c : doc.value("consistency", nlohmann::json::array())) {
    ++checked;
    if (c.contains("pass") && c["pass"].is_boolean() && !c["pass"].get<bool>()) ++bad;
  }
  if (checked > 0) {
    s.recommendations.push_back(
        bad == 0 ? fmt::format(
                       "All {} implementations reach the same loss curve (accuracy consistency).",
                       checked)
                 : fmt::format("{} of {} implementations drift from the reference loss curve.", bad,
                               checked));
  }
  t.note = fmt::format(
      "GFLOP/s: FLOPs per iteration / median time (decimal); FLOPs here: {}. A roofline of the "
      "same run counts the complexity model's FLOPs (also the optimizer and the element-wise "
      "layers), so its GFLOP/s differ by those.",
      ctx.contains("flops_convention") ? str(ctx, "flops_convention") : std::string("counted by mlp-bench"));
  s.tables.push_back(std::move(t));
  add_figure(s, path.parent_path() / "plots" / "iteration_time.svg",
             "Time per training iteration (ms) per implementation and batch size");
  return s;
}

// ---------------------------------------------------------------- activation study

ReportSection activation_section(const fs::path& summary, const fs::path& root) {
  const CsvTable t = read_csv(summary);
  ReportSection s;
  s.title = fmt::format("Activation-timing study ({})", rel(summary.parent_path(), root));
  s.paragraphs.push_back(
      fmt::format("The study's own report: {}.", rel(summary.parent_path() / "report.md", root)));
  const std::size_t c_act = t.require("Activation"), c_med = t.require("median_ms"),
                    c_acc = t.require("test_acc");
  std::size_t fast = 0, acc = 0;
  for (std::size_t r = 1; r < t.rows.size(); ++r) {
    if (t.number(r, c_med) < t.number(fast, c_med)) fast = r;
    if (t.number(r, c_acc) > t.number(acc, c_acc)) acc = r;
  }
  if (!t.rows.empty()) {
    s.recommendations.push_back(
        fmt::format("Fastest activation layer: {} ({} ms median per forward pass).",
                    t.cell(fast, c_act), t.cell(fast, c_med)));
    s.recommendations.push_back(
        fmt::format("Best test accuracy: {} ({}).", t.cell(acc, c_act), t.cell(acc, c_acc)));
  }
  ReportTable table = csv_table(t, "Per activation (times in ms per training forward pass)");
  s.tables.push_back(std::move(table));
  std::error_code ec;
  std::vector<fs::path> svgs;
  for (const auto& e : fs::directory_iterator(summary.parent_path() / "plots", ec)) {
    if (e.path().extension() == ".svg") svgs.push_back(e.path());
  }
  std::sort(svgs.begin(), svgs.end());
  for (const auto& p : svgs)
    add_figure(s, p,
               fmt::format("Activation study: {}", activation_figure_caption(p.stem().string())));
  return s;
}

// ---------------------------------------------------------------- complexity and training runs

ReportSection complexity_section(const std::vector<fs::path>& files, const fs::path& root) {
  ReportSection s;
  s.title = "Complexity (counted from shapes)";
  ReportTable t;
  t.header = {"file", "model", "input",      "training",         "params",
              "MACs", "FLOPs", "min. bytes", "FLOPs / iteration"};
  t.numeric = {false, false, false, false, true, true, true, true, true};
  for (const fs::path& p : files) {
    const nlohmann::json doc = read_json(p);
    const nlohmann::json& c = json_object(doc, "context", {p.string(), ""});
    const nlohmann::json tot = c.value("totals", nlohmann::json::object());
    t.rows.push_back({rel(p, root), str(c, "model"), str(c, "input_shape"), str(c, "training"),
                      str(tot, "params"), g4(num(tot, "macs")), g4(num(tot, "flops")),
                      g4(num(tot, "bytes")), g4(num(tot, "flops_per_iteration"))});
    if (s.paragraphs.empty() && c.contains("convention") && c["convention"].contains("summary")) {
      for (const auto& line : c["convention"]["summary"]) {
        if (line.is_string()) s.paragraphs.push_back(line.get<std::string>());
      }
    }
  }
  t.note =
      "Per batch, forward pass unless 'FLOPs / iteration' (forward + backward + optimizer) is "
      "given.";
  s.tables.push_back(std::move(t));
  return s;
}

// Where a training run ran: "cpu", or "cuda" with how a CNN run's GPU steps ran (its run context's
// cuda.launch, and find's engines and cuDNN's BatchNorm when asked), e.g. "cuda (graph, engines)".
std::string training_device(const nlohmann::json& final_results, bool cnn) {
  const auto hp = final_results.find("hyperparameters");
  if (!cnn) return hp != final_results.end() && hp->is_object() ? str(*hp, "device") : "";
  const auto ctx = final_results.find("context");
  if (ctx == final_results.end() || !ctx->is_object()) return "";
  if (str(*ctx, "device") != "cuda") return str(*ctx, "device");
  std::vector<std::string> how;
  if (const auto cuda = ctx->find("cuda"); cuda != ctx->end() && cuda->is_object()) {
    if (const std::string launch = str(*cuda, "launch"); !launch.empty()) how.push_back(launch);
  }
  if (str(*ctx, "find_engines") == "true") how.push_back("engines");
  if (str(*ctx, "batchnorm") == "cudnn") how.push_back("cuDNN BatchNorm");
  return how.empty() ? "cuda" : fmt::format("cuda ({})", fmt::join(how, ", "));
}

// The fixed-iteration driver's metrics.csv files (run_train.py's 22 columns, one row a run;
// sweep merge joins the training cells' rows into one): the rows that say what ran and how fast,
// and per model and batch size the fastest run. A file without those columns is another job's
// metrics.csv and is not read.
bool is_driver_metrics(const fs::path& f) {
  if (f.filename() != "metrics.csv") return false;
  try {
    const std::vector<std::string> header = read_csv_header(f);
    for (const char* c :
         {"arch", "backend", "batch_size", "measured_iters", "elapsed_sec", "images_per_sec"}) {
      if (std::find(header.begin(), header.end(), c) == header.end()) return false;
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

ReportSection driver_section(const std::vector<fs::path>& files, const fs::path& root) {
  ReportSection s;
  s.title = "Fixed-iteration training runs";
  ReportTable t;
  t.caption = "One row per run of the driver (train --iters): time of the measured steps only";
  t.header = {"file",           "arch",         "backend",  "device", "batch", "warm-up",
              "measured steps", "measured (s)", "images/s", "label",  "host"};
  t.numeric = {false, false, false, false, true, true, true, true, true, false, false};
  std::map<std::string, std::pair<double, std::string>> best;  // arch at batch -> images/s, row
  for (const fs::path& f : files) {
    check_interrupt();
    const CsvTable m = read_csv(f);
    const auto col = [&](const char* name) { return m.require(name); };
    for (std::size_t r = 0; r < m.rows.size(); ++r) {
      const double ips = m.number(r, col("images_per_sec")), sec = m.number(r, col("elapsed_sec"));
      if (!(ips >= 0) || !(sec >= 0)) {
        fail("{}:{}: expected images_per_sec and elapsed_sec >= 0", f.string(), m.line(r));
      }
      const auto text = [&](const char* name) {
        const int c = m.column(name);
        return c < 0 ? std::string() : m.cell(r, static_cast<std::size_t>(c));
      };
      const std::string device = text("device_name");
      t.rows.push_back({rel(f, root), m.cell(r, col("arch")), m.cell(r, col("backend")), device,
                        m.cell(r, col("batch_size")), text("warmup_iters"),
                        m.cell(r, col("measured_iters")), m.cell(r, col("elapsed_sec")),
                        m.cell(r, col("images_per_sec")), text("label"), text("hostname")});
      const std::string key =
          fmt::format("{} at batch {}", m.cell(r, col("arch")), m.cell(r, col("batch_size")));
      const std::string what =
          fmt::format("{} on {}{}", m.cell(r, col("backend")), device.empty() ? "?" : device,
                      text("label").empty() ? "" : " (" + text("label") + ")");
      if (!best.count(key) || ips > best[key].first) best[key] = {ips, what};
    }
  }
  for (const auto& [key, b] : best) {
    s.recommendations.push_back(
        fmt::format("{}: fastest run {} images/s, {}.", key, g4(b.first), b.second));
  }
  s.tables.push_back(std::move(t));
  return s;
}

// MLP runs (usra-survey's final_results.json: activation, hyperparameters) and CNN runs
// (model, context.recipe, best accuracy, data wait) in one table.
ReportSection training_section(const std::vector<fs::path>& files, const fs::path& root) {
  ReportSection s;
  s.title = "Training runs";
  ReportTable t;
  t.header = {"run",           "model",     "device",   "batch",        "epochs",   "test accuracy",
              "best accuracy", "test loss", "images/s", "measured (s)", "data wait"};
  t.numeric = {false, false, false, true, true, true, true, true, true, true, true};
  for (const fs::path& p : files) {
    const nlohmann::json j = read_json(p);
    const JsonPath at{p.string(), ""};
    if (!j.is_object()) fail("{}: expected an object (a run's final results)", p.string());
    // Accuracies are fractions, rates and times not negative: a file that says otherwise is not
    // shown as a result.
    for (const char* key : {"final_test_acc", "best_test_acc", "data_wait_fraction"}) {
      if (const auto v = json_optional_number(j, key, at); v && !(*v >= 0 && *v <= 1)) {
        fail("{}: expected a fraction in [0, 1], found {}", at.at(key).str(), *v);
      }
    }
    for (const char* key : {"imgs_per_sec", "measured_sec", "final_test_loss"}) {
      if (const auto v = json_optional_number(j, key, at); v && !(*v >= 0 && std::isfinite(*v))) {
        fail("{}: expected a finite number >= 0, found {}", at.at(key).str(), *v);
      }
    }
    // CNN runs name their model; the MLP's final results (train and the activation study) do not.
    // A run's row needs what identifies it and its result: the MLP's fields as the activation
    // study reads them, a CNN's model and test accuracy.
    const bool cnn = j.contains("model");
    if (cnn && (!j["model"].is_string() || j["model"].get<std::string>().empty())) {
      fail("{}: expected the model's name", at.at("model").str());
    }
    if (cnn) {
      (void)json_number(j, "final_test_acc", at);
      (void)json_object(j, "context", at);
    } else {
      (void)parse_final_results(j.dump(), p.string());
    }
    const nlohmann::json hp = cnn ? j["context"].value("recipe", nlohmann::json::object())
                                  : j.value("hyperparameters", nlohmann::json::object());
    const std::string model = cnn ? str(j, "model") : "mlp " + str(j, "activation");
    const std::string wait = cnn ? pct(num(j, "data_wait_fraction")) : "";
    t.rows.push_back({rel(p.parent_path(), root), model, training_device(j, cnn),
                      str(hp, "batch_size"), cnn ? str(j, "epochs") : str(hp, "epochs"),
                      g4(num(j, "final_test_acc")), cnn ? g4(num(j, "best_test_acc")) : "",
                      g4(num(j, "final_test_loss")), g4(num(j, "imgs_per_sec")),
                      g4(num(j, "measured_sec")), wait});
  }
  t.note =
      "images/s and measured seconds cover the training steps of the timed epochs only (no "
      "evaluation; for CNN runs the step's waits for the data loader are included and given as "
      "a share).";
  s.tables.push_back(std::move(t));
  return s;
}

// One-step training profiles (train --profile-one-step, one_step.json): per run the phases of the
// recorded step and its slowest layer (forward and backward summed).
ReportSection one_step_section(const std::vector<fs::path>& files, const fs::path& root) {
  ReportSection s;
  s.title = "One-step training profiles";
  ReportTable t;
  t.caption = "The recorded training step of each run (train --profile-one-step), by phase";
  t.header = {"run",          "model",         "device",          "batch",
              "forward (ms)", "backward (ms)", "loss (ms)",       "optimizer (ms)",
              "step (ms)",    "slowest layer", "its ms (fwd+bwd)"};
  t.numeric = {false, false, false, true, true, true, true, true, true, false, true};
  for (const fs::path& p : files) {
    check_interrupt();
    const nlohmann::json j = read_json(p);
    const JsonPath at{p.string(), ""};
    const nlohmann::json& ctx = json_object(j, "context", at);
    const nlohmann::json& phases = json_object(j, "phases_ms", at);
    const JsonPath ph = at.at("phases_ms");
    double step = 0;
    std::vector<std::string> phase_ms;
    for (const char* name : {"forward", "backward", "loss", "optimizer"}) {
      const std::optional<double> ms = json_optional_number(phases, name, ph);
      if (ms && *ms < 0) fail("{}: expected a time >= 0, found {}", ph.at(name).str(), *ms);
      step += ms.value_or(0.0);
      phase_ms.push_back(ms ? g4(*ms) : "");
    }
    // Each layer's spans (forward and backward) summed; the phase rows (node < 1) left out.
    std::map<std::string, double> layer_ms;
    if (j.contains("spans") && j["spans"].is_array()) {
      for (std::size_t i = 0; i < j["spans"].size(); ++i) {
        const nlohmann::json& sp = j["spans"][i];
        const JsonPath sat = at.at("spans").item(i);
        if (json_integer(sp, "node", sat) < 1) continue;
        const double ns = json_number(sp, "end_ns", sat) - json_number(sp, "begin_ns", sat);
        if (!(ns >= 0)) fail("{}: ends before it begins", sat.str());
        layer_ms[json_string(sp, "name", sat)] += ns * 1e-6;
      }
    }
    const auto slowest =
        std::max_element(layer_ms.begin(), layer_ms.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    const nlohmann::json model = ctx.value("model", nlohmann::json::object());
    const nlohmann::json recipe = ctx.value("recipe", nlohmann::json::object());
    const std::string run = rel(p.parent_path(), root);
    t.rows.push_back({run, str(model, "name"), str(ctx, "device"), str(recipe, "batch_size"),
                      phase_ms[0], phase_ms[1], phase_ms[2], phase_ms[3], g4(step),
                      slowest == layer_ms.end() ? "" : slowest->first,
                      slowest == layer_ms.end() ? "" : g4(slowest->second)});
    if (step > 0 && slowest != layer_ms.end()) {
      s.recommendations.push_back(fmt::format(
          "{}: the backward pass is {} of the step; the slowest layer, {}, takes {} ms ({}).", run,
          pct(num(phases, "backward") / step), slowest->first, g4(slowest->second),
          pct(slowest->second / step)));
    }
  }
  t.note =
      "One step measured after the warm-up steps (--warmup-iters), each layer and phase timed by "
      "the run's clock (one_step.json's clock); the step is the sum of the four phases.";
  s.tables.push_back(std::move(t));
  return s;
}

bool is_complexity_json(const fs::path& p) {
  std::error_code ec;
  if (p.extension() != ".json" || p.filename().string().find("_trace_") != std::string::npos ||
      fs::file_size(p, ec) > (std::uintmax_t{64} << 20)) {
    return false;
  }
  const std::string text = read_file(p);
  if (text.find("\"convention\"") == std::string::npos ||
      text.find("\"totals\"") == std::string::npos)
    return false;
  const nlohmann::json j = parse_json(text, p.string());
  return j.is_object() && j.contains("context") && j["context"].is_object() &&
         j["context"].contains("convention") && j.contains("records");
}

// The result files under a folder, by kind (sorted paths).
struct ResultFiles {
  std::vector<fs::path> runs, peaks, rooflines, benches, studies, complexity, trainings, ncus,
      drivers, one_steps;
  std::vector<Sweep> sweeps;
};

// Every regular file under `dir`, sorted; a folder that is not one, or cannot be listed, refused.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("{}: {}", dir.string(),
                                 fs::exists(dir, ec) ? "is a file; expected a results folder"
                                                     : "no such results folder"));
  }
  std::vector<fs::path> files;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) fail("{}: cannot list ({})", dir.string(), ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

ResultFiles found_results(const fs::path& dir) {
  const std::vector<fs::path> files = files_under(dir);
  std::error_code ec;
  ResultFiles r;
  std::set<fs::path> study_dirs;
  for (const fs::path& f : files) {
    if (f.filename() == "summary.csv" && fs::exists(f.parent_path() / "report.md", ec))
      study_dirs.insert(f.parent_path());
  }
  for (const fs::path& f : files) {
    check_interrupt();
    const std::string name = f.filename().string();
    if (name == "run.json") {
      r.runs.push_back(f);
    } else if (name == "peaks.json") {
      r.peaks.push_back(f);
    } else if (name == "roofline.json") {
      r.rooflines.push_back(f);
    } else if (name == "ncu.json") {
      r.ncus.push_back(f);
    } else if (name == "one_step.json") {
      r.one_steps.push_back(f);
    } else if (name == "mlp_bench.json") {
      r.benches.push_back(f);
    } else if (name == "summary.csv" && study_dirs.count(f.parent_path())) {
      r.studies.push_back(f);
    } else if (name == "final_results.json") {
      if (!study_dirs.count(f.parent_path().parent_path())) r.trainings.push_back(f);
    } else if (name.ends_with("_overall.csv") && fs::exists(f.parent_path() / "run.json", ec)) {
      const fs::path layers = f.parent_path() / (name.substr(0, name.size() - 12) + "_layers.csv");
      r.sweeps.push_back({f, fs::exists(layers, ec) ? layers : fs::path()});
    } else if (is_complexity_json(f)) {
      r.complexity.push_back(f);
    } else if (is_driver_metrics(f)) {
      r.drivers.push_back(f);
    }
  }
  return r;
}

}  // namespace

std::string activation_figure_caption(std::string_view stem) {
  constexpr std::pair<std::string_view, std::string_view> kCaptions[] = {
      {"timing_comparison",
       "Activation time per forward pass (ms, all activation layers, mean over the timed epochs)"},
      {"accuracy_vs_time", "Test accuracy (%) vs activation time per forward pass (ms)"},
      {"layer_heatmap", "Per-layer timing heatmap (ms per forward pass, activation x layer)"},
      {"validation_curves", "Validation accuracy per epoch (%)"}};
  for (const auto& [s, caption] : kCaptions) {
    if (s == stem) return std::string(caption);
  }
  return std::string(stem);
}

ReportDocument build_report(const fs::path& dir) {
  const ResultFiles r = found_results(dir);
  ReportDocument doc;
  doc.title =
      fmt::format("{}{}", kTitlePrefix, folder_name(dir));
  doc.intro.push_back(
      fmt::format("Rebuilt by nnperf report from the files saved under {}; nothing was re-run. "
                  "Every time is a "
                  "measured median or mean as its table says; FLOPs are counted (2 per "
                  "multiply-add), GFLOP/s and GB/s "
                  "are decimal.",
                  dir.string()));
  for (const auto& p : r.peaks) doc.sections.push_back(peaks_section(p, dir));
  for (const auto& p : r.rooflines) doc.sections.push_back(roofline_section(p, dir));
  for (const auto& p : r.ncus) doc.sections.push_back(ncu_section(p, dir));
  if (!r.sweeps.empty()) doc.sections.push_back(profile_section(r.sweeps, dir));
  for (const auto& p : r.benches) doc.sections.push_back(mlp_bench_section(p, dir));
  for (const auto& p : r.studies) doc.sections.push_back(activation_section(p, dir));
  if (!r.complexity.empty()) doc.sections.push_back(complexity_section(r.complexity, dir));
  if (!r.trainings.empty()) doc.sections.push_back(training_section(r.trainings, dir));
  if (!r.drivers.empty()) doc.sections.push_back(driver_section(r.drivers, dir));
  if (!r.one_steps.empty()) doc.sections.push_back(one_step_section(r.one_steps, dir));
  add_unfinished_section(doc, r.runs, dir);
  if (doc.sections.empty()) {
    throw UsageError(
        fmt::format("{}: no nnperf results found (peaks.json, roofline.json, profile sweeps, "
                    "mlp_bench.json, activation studies, complexity JSON, final_results.json, the "
                    "training driver's metrics.csv, one_step.json)",
                    dir.string()));
  }
  if (!r.runs.empty()) doc.sections.push_back(machine_section(r.runs, dir));
  return doc;
}

ReportFiles write_report(const fs::path& dir, const fs::path& out_dir) {
  const ReportDocument doc = build_report(dir);
  const fs::path out = out_dir.empty() ? dir : out_dir;
  ensure_writable_dir(out, out_dir.empty() ? "" : "--out-dir");
  ReportFiles files;
  files.markdown = out / "report.md";
  std::error_code ec;
  if (fs::exists(files.markdown, ec) &&
      read_file(files.markdown).rfind("# " + std::string(kTitlePrefix), 0) != 0) {
    files.markdown = out / "nnperf_report.md";  // another job's report.md stays
  }
  files.html = out / "report.html";
  write_file_atomic(files.markdown, render_markdown(doc, out));
  write_file_atomic(files.html, render_html(doc));
  files.sections = doc.sections.size();
  for (const auto& s : doc.sections) {
    files.figures += s.figures.size();
    files.tables += s.tables.size();
  }
  return files;
}

}  // namespace nnperf
