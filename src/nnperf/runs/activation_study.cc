#include "nnperf/runs/activation_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nnperf/analysis/activation_analysis.h"
#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/records.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/activations.h"

namespace nnperf {

namespace fs = std::filesystem;

fs::path run_activation_study(const ActivationStudyOptions& o) {
  std::vector<const ActivationKernel*> acts;
  if (o.activations.empty()) {
    for (const auto& k : activation_kernels()) acts.push_back(&k);
  } else {
    for (const auto& name : o.activations) acts.push_back(&find_activation(name));
  }
  const fs::path out_dir =
      prepare_output_dir(o.out_dir, "results/activations", "--out-dir", o.base.overwrite);
  write_run_json(out_dir, o.base.command_line,
                 {{"job", "activations"},
                  {"activations",
                   [&] {
                     std::vector<std::string> n;
                     for (auto* a : acts) n.push_back(a->name);
                     return n;
                   }()},
                  {"quick", o.quick}});
  int i = 0;
  for (const ActivationKernel* act : acts) {
    ++i;
    TrainRunOptions run = o.base;
    run.activation = act->name;
    run.overwrite = false;
    // usra-survey's folder names; unique even for two runs of one activation in one second.
    run.out_dir = create_unique_dir(out_dir / fmt::format("MLP_{}_{}", act->name, timestamp_compact()));
    fmt::print("=== [{}/{}] {} -> {}\n", i, acts.size(), act->name, run.out_dir.string());
    std::fflush(stdout);
    const TrainRunResult r = run_training(run);
    fmt::print("=== {}: test acc {:.4f}, activations {:.4f} ms per forward, {:.0f} img/s\n",
               act->name, r.test_acc, r.total_activation_ms, r.imgs_per_sec);
  }
  return analyse_activation_study(out_dir, o.base.command_line);
}

namespace {

ActivationRun load_run(const fs::path& folder) {
  ActivationRun r;
  r.folder = folder.filename().string();
  const fs::path fr = folder / "final_results.json";
  if (!fs::exists(fr))
    fail("{}: no final_results.json (the run did not finish); rerun it or remove the folder",
         folder.string());
  const FinalResults f = parse_final_results(read_file(fr), fr.string());
  r.activation = f.activation;
  r.test_acc = f.final_test_acc;
  r.test_loss = f.final_test_loss;
  r.val_acc = f.final_val_acc;  // absent: the run had no validation split
  r.imgs_per_sec = f.imgs_per_sec.value_or(0.0);
  r.batch_size = f.batch_size;
  r.timer_empty_interval_ns = f.timer_empty_interval_ns.value_or(0.0);
  r.test_samples = f.test_samples;
  const CsvTable t = read_csv(folder / "activation_timings.csv");
  const int total_col = t.column("total_time");
  if (total_col < 0 || t.header.size() < 3 || t.header.front() != "epoch") {
    fail("{}: expected columns epoch,layer_1..layer_N,total_time",
         (folder / "activation_timings.csv").string());
  }
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    std::vector<double> layers;
    for (int c = 1; c < total_col; ++c) layers.push_back(t.number(row, static_cast<std::size_t>(c)));
    r.layer_ms_per_epoch.push_back(std::move(layers));
    r.total_ms_per_epoch.push_back(t.number(row, static_cast<std::size_t>(total_col)));
  }
  if (r.total_ms_per_epoch.empty())
    fail("{}: activation_timings.csv has no timed epochs", folder.string());
  return r;
}

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  std::string s = "| " + fmt::format("{}", fmt::join(header, " | ")) + " |\n|";
  for (std::size_t i = 0; i < header.size(); ++i) s += i == 0 ? "---|" : "---:|";
  s += "\n";
  for (const auto& r : rows) s += "| " + fmt::format("{}", fmt::join(r, " | ")) + " |\n";
  return s;
}

}  // namespace

fs::path analyse_activation_study(const fs::path& dir, const std::string& command_line) {
  if (!fs::is_directory(dir))
    fail("{}: not a folder (expected an activation study output folder)", dir.string());
  std::vector<fs::path> folders;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("MLP_", 0) == 0)
      folders.push_back(e.path());
  }
  if (folders.empty()) fail("{}: no MLP_<Activation>_<time> run folders found", dir.string());
  std::vector<ActivationRun> runs;
  for (const auto& f : folders) runs.push_back(load_run(f));
  // usra-survey's order, and the newest run per activation when one was repeated.
  std::vector<ActivationRun> ordered;
  for (const auto& k : activation_kernels()) {
    const ActivationRun* pick = nullptr;
    for (const auto& r : runs) {
      if (r.activation == k.name && (pick == nullptr || r.folder > pick->folder)) pick = &r;
    }
    if (pick != nullptr) ordered.push_back(*pick);
  }
  const ActivationAnalysis a = analyze_activations(ordered);

  // summary.csv: usra-survey's columns first, then ours (units in names).
  std::vector<std::string> header{"Activation", "Final (ms)", "Mean (ms)", "Std (ms)",
                                  "Min (ms)",   "Max (ms)",   "Epochs",    "test_acc"};
  for (int l = 1; l <= a.num_layers; ++l) header.push_back(fmt::format("layer_{}_ms", l));
  header.insert(header.end(),
                {"median_ms", "acc_per_ms", "train_imgs_per_sec", "share_of_step", "pareto"});
  {
    CsvWriter csv(dir / "summary.csv", header);
    for (const auto& s : a.rows) {
      std::vector<std::string> row{s.activation,
                                   csv_number(s.final_ms),
                                   csv_number(s.mean_ms),
                                   csv_number(s.std_ms),
                                   csv_number(s.min_ms),
                                   csv_number(s.max_ms),
                                   std::to_string(s.epochs),
                                   csv_number(s.test_acc)};
      for (double v : s.layer_mean_ms) row.push_back(csv_number(v));
      row.insert(row.end(),
                 {csv_number(s.median_ms), csv_number(s.acc_per_ms), csv_number(s.imgs_per_sec, 7),
                  csv_number(s.share_of_step), s.pareto ? "yes" : "no"});
      csv.row(row);
    }
  }

  // Plots.
  const fs::path plots = dir / "plots";
  fs::create_directories(plots);
  std::vector<std::string> names;
  for (const auto& s : a.rows) names.push_back(s.activation);
  PlotSpec timing;
  timing.title = "Activation forward time per training pass (mean over timed epochs)";
  timing.xlabel = "activation";
  timing.ylabel = "ms per forward pass (all activation layers)";
  timing.kind = PlotSpec::Kind::kBars;
  timing.categories = names;
  Series ts{"mean ms", {}, {}};
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    ts.x.push_back(static_cast<double>(i));
    ts.y.push_back(a.rows[i].mean_ms);
  }
  timing.series.push_back(ts);
  PlotSpec scatter;
  scatter.title = "Test accuracy vs activation time";
  scatter.xlabel = "activation forward time per pass (ms)";
  scatter.ylabel = "test accuracy (%)";
  scatter.kind = PlotSpec::Kind::kPoints;
  scatter.label_points = true;
  for (const auto& s : a.rows)
    scatter.series.push_back(Series{s.activation, {s.mean_ms}, {100 * s.test_acc}});
  PlotSpec heat;
  heat.title = "Per-layer activation time (ms per forward pass)";
  heat.kind = PlotSpec::Kind::kHeatmap;
  heat.xlabel = "layer";
  heat.ylabel = "activation";
  heat.categories = names;
  for (int l = 1; l <= a.num_layers; ++l) heat.columns.push_back(fmt::format("layer_{}", l));
  for (const auto& s : a.rows) heat.matrix.push_back(s.layer_mean_ms);
  PlotSpec curves;
  curves.title = "Validation accuracy per epoch";
  curves.xlabel = "epoch";
  curves.ylabel = "validation accuracy (%)";
  curves.kind = PlotSpec::Kind::kLines;
  for (const auto& r : ordered) {
    const fs::path folder = dir / r.folder;
    const CsvTable m = read_csv(folder / "training_metrics.csv");
    Series s{r.activation, {}, {}};
    const std::size_t ce = m.require("epoch"), cv = m.require("val_acc");
    for (std::size_t row = 0; row < m.rows.size(); ++row) {
      const auto v = m.optional_number(row, cv);  // empty: no validation split in that run
      if (!v) continue;
      s.x.push_back(static_cast<double>(m.integer(row, ce)));
      s.y.push_back(100 * *v);
    }
    if (!s.x.empty()) curves.series.push_back(std::move(s));
  }
  struct Named {
    const char* stem;
    const PlotSpec* spec;
    const char* caption;
  };
  const Named all_plots[] = {{"timing_comparison", &timing, "Activation time per forward pass"},
                             {"accuracy_vs_time", &scatter, "Accuracy vs activation time"},
                             {"layer_heatmap", &heat, "Per-layer timing heatmap"},
                             {"validation_curves", &curves, "Validation accuracy per epoch"}};
  std::string plot_md;
  for (const auto& p : all_plots) {
    if (p.spec->series.empty() && p.spec->kind == PlotSpec::Kind::kLines) {
      plot_md += fmt::format("### {}\n\nNo data: none of the runs held out a validation split (--val-split 0).\n\n",
                             p.caption);
      continue;
    }
    const PlotResult pr = render_plot(*p.spec, plots / p.stem);
    if (pr.rendered) {
      plot_md += fmt::format("### {}\n\n![{}](plots/{}.svg)\n\n", p.caption, p.caption, p.stem);
    } else {
      plot_md += fmt::format(
          "### {}\n\nNot rendered: {} (data and gnuplot script: plots/{}.dat, plots/{}.gp)\n\n",
          p.caption, pr.message, p.stem, p.stem);
    }
  }

  // report.md
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : a.rows) {
    rows.push_back({s.activation, fmt::format("{:.2f}", 100 * s.test_acc),
                    fmt::format("{:.4f}", s.mean_ms), fmt::format("{:.4f}", s.std_ms),
                    fmt::format("{:.4f}", s.min_ms), fmt::format("{:.4f}", s.max_ms),
                    fmt::format("{:.1f}", 100 * s.acc_per_ms),
                    fmt::format("{:.0f}", s.imgs_per_sec),
                    fmt::format("{:.1f}", 100 * s.share_of_step), s.pareto ? "yes" : ""});
  }
  std::vector<std::vector<std::string>> layer_rows;
  std::vector<std::string> layer_header{"activation"};
  for (int l = 1; l <= a.num_layers; ++l) layer_header.push_back(fmt::format("layer_{} (ms)", l));
  for (const auto& s : a.rows) {
    std::vector<std::string> r{s.activation};
    for (double v : s.layer_mean_ms) r.push_back(fmt::format("{:.4f}", v));
    layer_rows.push_back(std::move(r));
  }
  std::string recs;
  for (const auto& r : a.recommendations) recs += "- " + r + "\n";
  nlohmann::json ctx = run_context();
  const std::string report = fmt::format(
      "# Activation-timing study\n\n"
      "Machine: {} ({} logical CPUs, {} kernels), {} thread(s). Build {} ({}). Generated {}.\n\n"
      "Each activation trained the same MLP from the same random seed; times are the mean "
      "milliseconds per training "
      "forward pass spent in all activation layers, measured per layer with the steady clock "
      "around each layer "
      "(no device synchronisation, evaluation passes not timed), averaged per epoch over the timed "
      "epochs "
      "(warm-up epochs excluded). Spread = population std over the timed epochs.\n\n"
      "## Summary\n\n{}\n"
      "## Per-layer times\n\n{}\n"
      "## Recommendations\n\n{}\n"
      "## Plots\n\n{}"
      "## Files\n\n- `summary.csv`: the table above\n- `MLP_<Activation>_<time>/`: each run's "
      "`training_metrics.csv`, `activation_timings.csv`, `final_results.json`, `run.json`, "
      "`tensorboard/` (folders and files named and laid out as usra-survey's `MLP.py` writes "
      "them)\n"
      "- Rebuild this report from the saved runs: `nnperf activations --analyze {}`\n\n"
      "Command: `{}`\n",
      ctx["machine"].value("cpu_model", std::string("?")), ctx["machine"].value("logical_cpus", 0),
      ctx["machine"].value("simd", std::string("?")), num_threads(),
      ctx["build"].value("commit", std::string("?")),
      ctx["build"].value("build_type", std::string("?")), iso8601_now(),
      md_table({"activation", "test acc (%)", "mean (ms)", "std (ms)", "min (ms)", "max (ms)",
                "acc per ms (%/ms)", "train img/s", "share of step (%)", "Pareto"},
               rows),
      md_table(layer_header, layer_rows), recs, plot_md, dir.string(), command_line);
  write_file_atomic(dir / "report.md", report);
  return dir / "report.md";
}

}  // namespace nnperf
