// The study is: train once per activation (run_activation_study), then load the runs' records
// (load_activation_study), analyse them (analyze_activations) and render the outputs from that
// (the reporters in activation_study_outputs.h).
#include "nnperf/runs/activation_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/out_dir.h"
#include "nnperf/io/records.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/runs/activation_study_outputs.h"

namespace nnperf {

namespace fs = std::filesystem;

fs::path run_activation_study(const ActivationStudyOptions& o) {
  std::vector<const ActivationKernel*> acts;
  if (o.activations.empty()) {
    for (const auto& k : activation_kernels()) acts.push_back(&k);
  } else {
    for (const auto& name : o.activations) {
      const ActivationKernel* k = &find_activation(name);
      // One spelling rule for all names: relu and RELU are one activation, trained once.
      if (std::find(acts.begin(), acts.end(), k) != acts.end()) {
        throw UsageError(fmt::format("--activations: {} is given twice ('{}')", k->name, name));
      }
      acts.push_back(k);
    }
  }
  validate_training(o.base);  // before the study's folder is claimed
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
    run.out_dir =
        create_unique_dir(out_dir / fmt::format("MLP_{}_{}", act->name, timestamp_compact()));
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
  r.device = f.device;
  const CsvTable t = read_csv(folder / "activation_timings.csv");
  const int total_col = t.column("total_time");
  if (total_col < 0 || t.header.size() < 3 || t.header.front() != "epoch") {
    fail("{}: expected columns epoch,layer_1..layer_N,total_time",
         (folder / "activation_timings.csv").string());
  }
  for (std::size_t row = 0; row < t.rows.size(); ++row) {
    std::vector<double> layers;
    for (int c = 1; c < total_col; ++c)
      layers.push_back(t.number(row, static_cast<std::size_t>(c)));
    r.layer_ms_per_epoch.push_back(std::move(layers));
    r.total_ms_per_epoch.push_back(t.number(row, static_cast<std::size_t>(total_col)));
  }
  if (r.total_ms_per_epoch.empty())
    fail("{}: activation_timings.csv has no timed epochs", folder.string());
  return r;
}

// Every MLP_* run folder under `dir`, loaded.
std::vector<ActivationRun> load_run_folders(const fs::path& dir) {
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
  return runs;
}

// usra-survey's order, and the newest run per activation when one was repeated.
std::vector<ActivationRun> newest_per_activation(const std::vector<ActivationRun>& runs) {
  std::vector<ActivationRun> ordered;
  for (const auto& k : activation_kernels()) {
    const ActivationRun* pick = nullptr;
    for (const auto& r : runs) {
      if (r.activation == k.name && (pick == nullptr || r.folder > pick->folder)) pick = &r;
    }
    if (pick != nullptr) ordered.push_back(*pick);
  }
  return ordered;
}

// A run's validation accuracy per epoch from its training_metrics.csv (epochs with an empty
// val_acc cell, i.e. runs without a validation split, left out).
std::vector<std::pair<int64_t, double>> load_val_acc(const fs::path& folder) {
  const CsvTable m = read_csv(folder / "training_metrics.csv");
  const std::size_t ce = m.require("epoch"), cv = m.require("val_acc");
  std::vector<std::pair<int64_t, double>> out;
  for (std::size_t row = 0; row < m.rows.size(); ++row) {
    const auto v = m.optional_number(row, cv);
    if (v) out.emplace_back(m.integer(row, ce), *v);
  }
  return out;
}

// The machine line of the study's report, from the kept runs' run.json: what ran them, not what
// analyses them.
std::string runs_machine_line(const fs::path& dir, const std::vector<ActivationRun>& runs) {
  std::map<std::string, std::set<std::string>> seen;
  std::set<std::string> dates;
  for (const ActivationRun& r : runs) {
    const fs::path p = dir / r.folder / "run.json";
    nlohmann::json j = nlohmann::json::object();
    try {
      if (fs::exists(p)) j = read_json(p);
    } catch (const Error&) {
      // An unreadable run.json gives "?" fields; the run's results are in final_results.json.
    }
    if (!j.is_object()) j = nlohmann::json::object();
    const auto text = [&](std::initializer_list<const char*> path) {
      const nlohmann::json* v = &j;
      for (const char* key : path) {
        if (!v->is_object() || !v->contains(key)) return std::string("?");
        v = &(*v)[key];
      }
      return v->is_string() ? v->get<std::string>() : v->dump();
    };
    seen["cpu"].insert(text({"machine", "cpu_model"}));
    seen["cpus"].insert(text({"machine", "logical_cpus"}));
    seen["simd"].insert(text({"machine", "simd_active"}));
    seen["threads"].insert(text({"threads"}));
    seen["commit"].insert(text({"build", "commit"}));
    seen["type"].insert(text({"build", "build_type"}));
    dates.insert(text({"date"}));
  }
  const auto all = [&](const char* key) {
    return seen[key].empty() ? std::string("?") : fmt::format("{}", fmt::join(seen[key], " / "));
  };
  if (dates.empty()) dates.insert("?");
  return fmt::format(
      "Machine: {} ({} logical CPUs, {} kernels), {} thread(s). Build {} ({}). Trained {}{}.",
      all("cpu"), all("cpus"), all("simd"), all("threads"), all("commit"), all("type"),
      *dates.begin(), dates.size() > 1 ? " to " + *dates.rbegin() : "");
}

}  // namespace

ActivationStudyRecords load_activation_study(const fs::path& dir) {
  ActivationStudyRecords rec;
  rec.runs = newest_per_activation(load_run_folders(dir));
  for (const auto& r : rec.runs) rec.val_acc.push_back(load_val_acc(dir / r.folder));
  rec.machine = runs_machine_line(dir, rec.runs);
  return rec;
}

fs::path analyse_activation_study(const fs::path& dir, const std::string& command_line,
                                  const fs::path& out) {
  const fs::path to = out.empty() ? dir : out;
  const ActivationStudyRecords records = load_activation_study(dir);
  const ActivationAnalysis a = analyze_activations(records.runs);
  write_activation_summary_csv(a, to / "summary.csv");
  const std::string plots_md = render_activation_plots(a, records, to / "plots");
  write_file_atomic(to / "report.md",
                    activation_report_md(a, plots_md, records.machine, dir, command_line));
  return to / "report.md";
}

}  // namespace nnperf
