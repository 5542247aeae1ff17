// The mlp-bench reporters: mlp_bench.csv, the iteration-time plot and the terminal table, each
// rendered from the {context, records, consistency, overhead} JSON document alone.
#include <fmt/format.h>

#include <map>

#include "nnperf/io/csv.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/mlp_bench.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kCsvColumns{"impl",
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
                                           "speedup_vs_blas",
                                           "device"};

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  return csv_number(v.get<double>(), 7);
}

void write_records_csv(const nlohmann::json& records, const fs::path& path) {
  CsvWriter csv(path, kCsvColumns);
  for (const auto& r : records) {
    std::vector<std::string> row;
    for (const auto& c : kCsvColumns) {
      // Records from before GPU rows existed have no device: they ran on the CPU.
      row.push_back(c == "device" && !r.contains(c) ? "cpu" : csv_cell(r.at(c)));
    }
    csv.row(row);
  }
}

// plots/iteration_time: the median training iteration per batch size, a line per implementation.
void render_iteration_time_plot(const nlohmann::json& doc, const fs::path& dir) {
  PlotSpec p;
  p.title = "MLP training iteration time by GEMM implementation";
  p.xlabel = "batch size";
  p.ylabel = "ms per training iteration (median)";
  p.kind = PlotSpec::Kind::kLines;
  p.logx = true;
  p.logy = true;
  std::map<std::string, Series> by_impl;
  std::vector<std::string> order;
  for (const auto& r : doc.at("records")) {
    if (r.at("step") != "train") continue;
    const std::string impl = r.at("impl").get<std::string>();
    if (!by_impl.count(impl)) {
      order.push_back(impl);
      by_impl[impl].title = impl;
    }
    by_impl[impl].x.push_back(static_cast<double>(r.at("batch_size").get<int64_t>()));
    by_impl[impl].y.push_back(r.at("time_ms_median").get<double>());
  }
  for (const auto& n : order) p.series.push_back(by_impl[n]);
  fs::create_directories(dir / "plots");
  const PlotResult pr = render_plot(p, dir / "plots" / "iteration_time");
  if (!pr.rendered) fmt::print(stderr, "nnperf: note: plot not rendered: {}\n", pr.message);
}

std::string format_records(const nlohmann::json& records) {
  std::string s =
      fmt::format("{:<10} {:>6} {:>8} {:>12} {:>10} {:>10} {:>9} {:>11} {:>10}\n", "impl", "batch",
                  "step", "median_ms", "min_ms", "max_ms", "GFLOP/s", "vs_naive", "vs_blas");
  auto ratio = [](const nlohmann::json& v) {
    return v.is_null() ? std::string("-") : fmt::format("{:.2f}x", v.get<double>());
  };
  for (const auto& r : records) {
    s += fmt::format("{:<10} {:>6} {:>8} {:>12.4f} {:>10.4f} {:>10.4f} {:>9.2f} {:>11} {:>10}\n",
                     r["impl"].get<std::string>(), r["batch_size"].get<int64_t>(),
                     r["step"].get<std::string>(), r["time_ms_median"].get<double>(),
                     r["time_ms_min"].get<double>(), r["time_ms_max"].get<double>(),
                     r["gflops_per_s"].get<double>(), ratio(r["speedup_vs_naive"]),
                     ratio(r["speedup_vs_blas"]));
  }
  return s;
}

std::string format_consistency(const nlohmann::json& consistency) {
  std::string s = "\naccuracy consistency (same initial weights and batches):\n";
  for (const auto& c : consistency) {
    s += fmt::format(
        "  {:<10} final loss {:.5f}  test acc {:.4f}  max |loss - {}| {:.2e} (tolerance {:.0e}) "
        "{}\n",
        c["impl"].get<std::string>(), c["final_loss"].get<double>(), c["test_acc"].get<double>(),
        c["reference"].get<std::string>(), c["max_abs_loss_diff"].get<double>(),
        c["tolerance"].get<double>(), c["pass"].get<bool>() ? "PASS" : "FAIL");
  }
  return s;
}

std::string format_overhead(const nlohmann::json& o) {
  std::string s = fmt::format(
      "\ninstrumentation overhead ({} at batch 64, {} timed intervals per iteration): {:.4f} ms "
      "-> {:.4f} ms "
      "({:+.2f}%); empty interval reads {:.0f} ns\n",
      o["impl"].get<std::string>(), o["timed_intervals_per_iteration"].get<int>(),
      o["uninstrumented_ms_median"].get<double>(), o["instrumented_ms_median"].get<double>(),
      o["overhead_percent"].get<double>(), o["timer_empty_interval_ns"].get<double>());
  s += fmt::format("\nwhere the time goes ({} at batch 64, ms per iteration):\n",
                   o["impl"].get<std::string>());
  s += fmt::format("  {:<10} {:<22} {:>10} {:>10}\n", "node", "layer", "forward", "backward");
  for (const auto& b : o["breakdown"]) {
    s += fmt::format("  {:<10} {:<22} {:>10.4f} {:>10.4f}\n", b["node"].get<std::string>(),
                     b["layer"].get<std::string>(), b["forward_ms"].get<double>(),
                     b["backward_ms"].get<double>());
  }
  s += fmt::format("  {:<33} {:>10.4f}  ({})\n", "other", o["other_ms"].get<double>(),
                   o["other_note"].get<std::string>());
  return s;
}

}  // namespace

void render_mlp_bench_outputs(const nlohmann::json& doc, const fs::path& dir) {
  write_records_csv(doc.at("records"), dir / "mlp_bench.csv");
  render_iteration_time_plot(doc, dir);
}

void write_mlp_bench_outputs(const MlpBenchResult& result,
                             const fs::path& json_path, const fs::path& csv_path) {
  const nlohmann::json& doc = result.json;
  write_json_atomic(result.out_dir / "mlp_bench.json", doc);
  render_mlp_bench_outputs(doc, result.out_dir);
  if (!json_path.empty()) write_json_atomic(json_path, doc);
  if (!csv_path.empty()) write_records_csv(doc.at("records"), csv_path);
}

std::string format_mlp_bench(const nlohmann::json& j) {
  std::string s = format_records(j["records"]);
  const nlohmann::json& ctx = j["context"];
  if (ctx.value("device", "cpu") == "cuda") {
    s += fmt::format(
        "GPU rows (cuda, cublas) ran on {}; their speedup vs blas is the GPU against OpenBLAS on "
        "the CPU ({})\n",
        ctx.value("cuda_device", "the CUDA device"), ctx.value("gpu_timing", ""));
  }
  if (!j["consistency"].empty()) s += format_consistency(j["consistency"]);
  if (!j["overhead"].is_null()) s += format_overhead(j["overhead"]);
  return s;
}

}  // namespace nnperf
