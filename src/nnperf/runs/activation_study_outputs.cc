#include "nnperf/runs/activation_study_outputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "nnperf/core/threads.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/run_info.h"
#include "nnperf/report/report.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> activation_names(const ActivationAnalysis& a) {
  std::vector<std::string> names;
  for (const auto& s : a.rows) names.push_back(s.activation);
  return names;
}

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  std::string s = "| " + fmt::format("{}", fmt::join(header, " | ")) + " |\n|";
  for (std::size_t i = 0; i < header.size(); ++i) s += i == 0 ? "---|" : "---:|";
  s += "\n";
  for (const auto& r : rows) s += "| " + fmt::format("{}", fmt::join(r, " | ")) + " |\n";
  return s;
}

std::string summary_table_md(const ActivationAnalysis& a) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : a.rows) {
    rows.push_back({s.activation, fmt::format("{:.2f}", 100 * s.test_acc),
                    fmt::format("{:.4f}", s.mean_ms), fmt::format("{:.4f}", s.std_ms),
                    fmt::format("{:.4f}", s.min_ms), fmt::format("{:.4f}", s.max_ms),
                    fmt::format("{:.1f}", 100 * s.acc_per_ms),
                    fmt::format("{:.0f}", s.imgs_per_sec),
                    fmt::format("{:.1f}", 100 * s.share_of_step), s.pareto ? "yes" : ""});
  }
  return md_table({"activation", "test acc (%)", "mean (ms)", "std (ms)", "min (ms)", "max (ms)",
                   "acc per ms (%/ms)", "train img/s", "share of step (%)", "Pareto"},
                  rows);
}

std::string layer_table_md(const ActivationAnalysis& a) {
  std::vector<std::string> header{"activation"};
  for (int l = 1; l <= a.num_layers; ++l) header.push_back(fmt::format("layer_{} (ms)", l));
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : a.rows) {
    std::vector<std::string> r{s.activation};
    for (double v : s.layer_mean_ms) r.push_back(fmt::format("{:.4f}", v));
    rows.push_back(std::move(r));
  }
  return md_table(header, rows);
}

std::string recommendations_md(const ActivationAnalysis& a) {
  std::string recs;
  for (const auto& r : a.recommendations) recs += "- " + r + "\n";
  return recs;
}

}  // namespace

void write_activation_summary_csv(const ActivationAnalysis& a, const fs::path& path) {
  std::vector<std::string> header{"Activation", "Final (ms)", "Mean (ms)", "Std (ms)",
                                  "Min (ms)",   "Max (ms)",   "Epochs",    "test_acc"};
  for (int l = 1; l <= a.num_layers; ++l) header.push_back(fmt::format("layer_{}_ms", l));
  header.insert(header.end(),
                {"median_ms", "acc_per_ms", "train_imgs_per_sec", "share_of_step", "pareto"});
  CsvWriter csv(path, header);
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

PlotSpec activation_timing_plot(const ActivationAnalysis& a) {
  PlotSpec timing;
  timing.title = "Activation forward time per training pass (mean over timed epochs)";
  timing.xlabel = "activation";
  timing.ylabel = "ms per forward pass (all activation layers)";
  timing.kind = PlotSpec::Kind::kBars;
  timing.categories = activation_names(a);
  Series ts{"mean ms", {}, {}};
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    ts.x.push_back(static_cast<double>(i));
    ts.y.push_back(a.rows[i].mean_ms);
  }
  timing.series.push_back(ts);
  return timing;
}

PlotSpec activation_accuracy_plot(const ActivationAnalysis& a) {
  PlotSpec scatter;
  scatter.title = "Test accuracy vs activation time";
  scatter.xlabel = "activation forward time per pass (ms)";
  scatter.ylabel = "test accuracy (%)";
  scatter.kind = PlotSpec::Kind::kPoints;
  scatter.label_points = true;
  for (const auto& s : a.rows)
    scatter.series.push_back(Series{s.activation, {s.mean_ms}, {100 * s.test_acc}});
  return scatter;
}

PlotSpec activation_layer_heatmap(const ActivationAnalysis& a) {
  PlotSpec heat;
  heat.title = "Per-layer activation time (ms per forward pass)";
  heat.kind = PlotSpec::Kind::kHeatmap;
  heat.xlabel = "layer";
  heat.ylabel = "activation";
  heat.categories = activation_names(a);
  for (int l = 1; l <= a.num_layers; ++l) heat.columns.push_back(fmt::format("layer_{}", l));
  for (const auto& s : a.rows) heat.matrix.push_back(s.layer_mean_ms);
  return heat;
}

PlotSpec activation_validation_curves(const ActivationStudyRecords& records) {
  PlotSpec curves;
  curves.title = "Validation accuracy per epoch";
  curves.xlabel = "epoch";
  curves.ylabel = "validation accuracy (%)";
  curves.kind = PlotSpec::Kind::kLines;
  for (std::size_t i = 0; i < records.runs.size(); ++i) {
    Series s{records.runs[i].activation, {}, {}};
    for (const auto& [epoch, acc] : records.val_acc[i]) {
      s.x.push_back(static_cast<double>(epoch));
      s.y.push_back(100 * acc);
    }
    if (!s.x.empty()) curves.series.push_back(std::move(s));
  }
  return curves;
}

std::string render_activation_plots(const ActivationAnalysis& a,
                                    const ActivationStudyRecords& records,
                                    const fs::path& plots_dir) {
  fs::create_directories(plots_dir);
  struct Named {
    const char* stem;
    PlotSpec spec;
  };
  const Named all_plots[] = {{"timing_comparison", activation_timing_plot(a)},
                             {"accuracy_vs_time", activation_accuracy_plot(a)},
                             {"layer_heatmap", activation_layer_heatmap(a)},
                             {"validation_curves", activation_validation_curves(records)}};
  std::string md;
  for (const auto& p : all_plots) {
    const std::string caption = activation_figure_caption(p.stem);  // as nnperf report shows it
    if (p.spec.series.empty() && p.spec.kind == PlotSpec::Kind::kLines) {
      md += fmt::format("### {}\n\n{} (--val-split 0).\n\n", caption, kNoValidationFigure);
      continue;
    }
    const PlotResult pr = render_plot(p.spec, plots_dir / p.stem);
    if (pr.rendered) {
      md += fmt::format("### {}\n\n![{}](plots/{}.svg)\n\n", caption, caption, p.stem);
    } else {
      md += fmt::format(
          "### {}\n\nNot rendered: {} (data and gnuplot script: plots/{}.dat, plots/{}.gp)\n\n",
          caption, pr.message, p.stem, p.stem);
    }
  }
  return md;
}

// How the layers were timed, by where the runs trained.
static std::string clock_phrase(const std::string& device) {
  if (device == "cuda") {
    return "on the GPU with CUDA events recorded around each layer's kernels in the device's "
           "stream and read after one synchronisation per epoch";
  }
  if (device == "mixed") {
    return "with the steady clock on the CPU runs and CUDA events on the GPU runs (the study "
           "mixes devices: compare times within one device only)";
  }
  return "with the steady clock around each layer on the CPU (no device synchronisation)";
}

std::string activation_report_md(const ActivationAnalysis& a, const std::string& plots_md,
                                 const std::string& machine, const fs::path& dir,
                                 const std::string& command_line) {
  return fmt::format(
      "# Activation-timing study\n\n"
      "{}\n\n"
      "Each activation trained the same MLP from the same random seed; times are the mean "
      "milliseconds per training "
      "forward pass spent in all activation layers, measured per layer {} "
      "(evaluation passes not timed), averaged per epoch over the timed epochs "
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
      machine, clock_phrase(a.device), summary_table_md(a), layer_table_md(a),
      recommendations_md(a), plots_md, dir.string(), command_line);
}

}  // namespace nnperf
