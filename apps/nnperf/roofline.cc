// `nnperf roofline`: results folders (profile, mlp-bench, train) become roofline points against
// the ceilings of peaks.json (or --peak-compute/--peak-bw); writes roofline.json (the records),
// roofline_points.csv, the plot and, with --summary, nn-perf's attained-vs-attainable CSV.
// Parsing and file handling only: the model is analysis/roofline.h.
#include "nnperf/analysis/roofline.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "command.h"
#include "flags.h"
#include "nnperf/analysis/ncu.h"
#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/run_info.h"

namespace nnperf::app {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::vector<std::string> dirs;
  std::string peaks, env, out_dir, summary, json, ncu, color_by = "type";
  double peak_compute = 0, peak_bw = 0;
  bool overwrite = false;
};

// The ceilings: the two numbers when given, else --peaks, else the first peaks.json inside the
// folders, else this folder's peaks.json.
MachineCeilings ceilings(const Flags& f) {
  if ((f.peak_compute > 0) != (f.peak_bw > 0)) {
    throw UsageError("--peak-compute and --peak-bw go together (TFLOP/s and GB/s)");
  }
  if (f.peak_compute > 0) {
    if (!f.peaks.empty())
      throw UsageError("--peaks and --peak-compute/--peak-bw exclude each other");
    return ceilings_from_peaks(f.peak_compute, f.peak_bw);
  }
  if (!f.peaks.empty()) return read_peaks_json(f.peaks, f.env);
  for (const auto& d : f.dirs) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(d, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == "peaks.json") return read_peaks_json(it->path(), f.env);
    }
  }
  if (fs::exists("peaks.json")) return read_peaks_json("peaks.json", f.env);
  throw UsageError(
      "no ceilings: give --peaks FILE (write one with `nnperf peaks`) or --peak-compute TFLOP/s "
      "and "
      "--peak-bw GB/s");
}

// --ncu: Nsight Compute launches as points. The file is read in full before anything is written,
// so a broken export leaves no partial output.
int run_ncu(const Flags& f) {
  if (!f.dirs.empty())
    throw UsageError("--ncu and results folders exclude each other: give one or the other");
  if (f.color_by != "type") {
    throw UsageError(
        "--color-by " + f.color_by +
        ": an Nsight Compute launch has no algorithm; --ncu points are coloured by type");
  }
  check_output_file(f.summary, "--summary", {f.ncu, f.peaks});
  check_output_file(f.json, "--json", {f.ncu, f.peaks});
  check_distinct_outputs({{"--summary", f.summary}, {"--json", f.json}});
  const NcuImport import = read_ncu_csv(f.ncu);
  NcuRoof nr;
  std::optional<MachineCeilings> roof;
  if (f.peak_compute > 0 || f.peak_bw > 0 || !f.peaks.empty()) {
    roof = ceilings(f);
    nr.peak_gflops = roof->peak_gflops_fp32;
    nr.peak_gbps = roof->peak_gbps;
  }
  const nlohmann::json ncu = ncu_json(import, nr);
  for (const auto& w : import.warnings) warn("{}", w);
  std::vector<std::string> notes;
  const std::vector<RooflinePoint> points = ncu_roofline_points(import, notes);
  if (!import.utilisation_only && !roof) {
    throw UsageError(
        "--ncu: give the GPU's ceilings with --peak-compute TFLOP/s and --peak-bw GB/s (or "
        "--peaks)");
  }
  const fs::path out = prepare_output_dir(f.out_dir, "results/roofline", "--out-dir", f.overwrite);
  write_run_json(out, command_line(), {{"job", "roofline"}, {"ncu", f.ncu}});
  write_json_atomic(out / "ncu.json", ncu);
  if (!f.json.empty()) write_json_atomic(f.json, ncu);
  fmt::print("{}: {} launches ({} page, numbers as {})\n", f.ncu, import.launches.size(),
             import.layout, import.number_convention);
  if (import.utilisation_only) {
    fmt::print(
        "{}\nno counter roofline can be drawn from utilisation metrics alone (collect the metrics "
        "of "
        "share/ncu-roofline-metrics.txt)\nwrote {}\n",
        ncu_utilisation_summary(import).dump(2), out.string());
    return 0;
  }
  const nlohmann::json doc = roofline_json(points, *roof, notes, "type");
  const PlotResult plot = write_roofline_outputs(doc, out);
  if (!f.summary.empty()) write_csv_doc(roofline_summary_csv(doc), f.summary);
  fmt::print("{}", roofline_text(doc));
  if (!plot.rendered) warn("roofline plot not rendered: {}", plot.message);
  fmt::print("wrote {}\n", out.string());
  return 0;
}

int run(const Flags& f) {
  if (!f.ncu.empty()) return run_ncu(f);
  if (f.dirs.empty())
    throw UsageError("roofline: give at least one results folder (profile, mlp-bench or train)");
  std::vector<fs::path> inputs{f.peaks};
  for (const auto& d : f.dirs) {
    if (!fs::exists(d)) throw UsageError(fmt::format("{}: no such results folder", d));
    std::error_code ec;
    for (const fs::path& earlier : inputs) {
      if (!earlier.empty() && fs::equivalent(earlier, d, ec)) {
        throw UsageError(fmt::format("{}: given twice (its points would be counted twice)", d));
      }
    }
    inputs.emplace_back(d);
  }
  check_output_file(f.summary, "--summary", inputs);
  check_output_file(f.json, "--json", inputs);
  check_distinct_outputs({{"--summary", f.summary}, {"--json", f.json}});
  const MachineCeilings roof = ceilings(f);
  std::vector<std::string> notes;
  std::vector<RooflinePoint> points;
  for (const auto& d : f.dirs) {
    auto p = collect_roofline_points(d, notes);
    points.insert(points.end(), std::make_move_iterator(p.begin()),
                  std::make_move_iterator(p.end()));
  }
  if (points.empty()) {
    throw UsageError(
        fmt::format("{}: no profile, mlp-bench or train results found{}", fmt::join(f.dirs, ", "),
                    notes.empty() ? "" : " (" + fmt::format("{}", fmt::join(notes, "; ")) + ")"));
  }
  const nlohmann::json doc = roofline_json(points, roof, notes, f.color_by);
  const fs::path out = prepare_output_dir(f.out_dir, "results/roofline", "--out-dir", f.overwrite);
  write_run_json(out, command_line(), {{"job", "roofline"}});
  const PlotResult plot = write_roofline_outputs(doc, out);
  if (!f.summary.empty()) write_csv_doc(roofline_summary_csv(doc), f.summary);
  if (!f.json.empty()) write_json_atomic(f.json, doc);
  fmt::print("{}", roofline_text(doc));
  if (!plot.rendered) warn("roofline plot not rendered: {}", plot.message);
  fmt::print("wrote {}\n", out.string());
  return 0;
}

const Registrar reg{Command{
    "roofline", 62, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Put measured layers and runs on a roofline: FLOPs and bytes from the complexity model, "
          "times from profile / mlp-bench / train results, ceilings from peaks.json");
      auto f = std::make_shared<Flags>();
      sub.add_option("dirs", f->dirs, "Results folders (searched recursively)");
      sub.add_option("--peaks", f->peaks,
                     "peaks.json with the ceilings (default: one found in the folders, else "
                     "./peaks.json)");
      sub.add_option("--env", f->env,
                     "Environment of peaks.json (default: the only one, or this host's)");
      sub.add_option("--peak-compute", f->peak_compute, "Compute roof in TFLOP/s (with --peak-bw)")
          ->check(number_in(0, 1e6, true));
      sub.add_option("--peak-bw", f->peak_bw, "Memory roof in GB/s (with --peak-compute)")
          ->check(number_in(0, 1e7, true));
      sub.add_option("--out-dir", f->out_dir,
                     "Output folder (default: a new results/roofline_<time>)");
      sub.add_flag("--overwrite", f->overwrite, "Replace an earlier roofline's --out-dir whole");
      sub.add_option("--summary", f->summary,
                     "Also write attained vs attainable per point to this CSV");
      sub.add_option("--json", f->json, "Also write the records to this JSON file");
      sub.add_option("--ncu", f->ncu,
                     "Nsight Compute CSV export (ncu --csv, or --page raw --csv): one point per "
                     "kernel launch");
      sub.add_option("--color-by", f->color_by,
                     "Colour points by layer type or algorithm (--ncu: by type only)")
          ->check(CLI::IsMember({"type", "algorithm"}))
          ->capture_default_str();
      return [f] { return run(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
