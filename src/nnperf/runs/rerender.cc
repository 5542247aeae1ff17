// See rerender.h.
#include "nnperf/runs/rerender.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>

#include "nnperf/analysis/peaks.h"
#include "nnperf/analysis/roofline.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/records.h"
#include "nnperf/runs/activation_study.h"
#include "nnperf/runs/activation_study_outputs.h"
#include "nnperf/runs/cnn_train_outputs.h"
#include "nnperf/runs/mlp_bench.h"
#include "nnperf/runs/profile_outputs.h"
#include "nnperf/runs/train_driver_records.h"
#include "nnperf/runs/train_outputs.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

using Files = std::vector<fs::path>;

// ---- each record's files (in folder d) and its reporter (writing into folder d) ----

Files train_files(const fs::path& d, const nlohmann::json& doc) {
  Files files = {d / "training_metrics.csv"};
  if (doc.contains("context") && doc["context"].contains("activation_layers")) {
    files.push_back(d / "activation_timings.csv");  // an MLP run
  }
  for (const fs::path& f : tensorboard_files(d, doc)) files.push_back(f);
  return files;
}
void render_train(const fs::path&, const nlohmann::json& doc, const fs::path& d) {
  const bool mlp = doc.at("context").contains("activation_layers");
  if (mlp) {
    render_train_csvs(doc, d);
  } else {
    render_cnn_train_csv(doc, d);
  }
  if (!tensorboard_files(d, doc).empty()) {
    render_tensorboard(doc, d, mlp ? train_tensorboard_scalars : cnn_tensorboard_scalars);
  }
}

// A figure's files (io/plot.h render_plot): its data and script always, the images with gnuplot.
void add_plot_files(Files& files, const fs::path& stem) {
  std::vector<const char*> extensions = {".dat", ".gp"};
  if (gnuplot_available()) extensions.insert(extensions.end(), {".svg", ".png"});
  for (const char* ext : extensions) files.emplace_back(stem.string() + ext);
}

Files mlp_bench_files(const fs::path& d, const nlohmann::json&) {
  Files files = {d / "mlp_bench.csv"};
  add_plot_files(files, d / "plots" / "iteration_time");
  return files;
}
void render_mlp_bench(const fs::path&, const nlohmann::json& doc, const fs::path& d) {
  render_mlp_bench_outputs(doc, d);
}

Files profile_files(const fs::path& d, const nlohmann::json& doc) {
  const nlohmann::json& ctx = doc.at("context");
  const std::string stem = ctx.at("stem").get<std::string>();
  Files files = {d / (stem + "_overall.csv"), d / (stem + "_layers.csv")};
  if (ctx.at("layers").get<bool>()) {
    for (const nlohmann::json& r : doc.at("records")) {
      files.push_back(d / fmt::format("{}_trace_{}.json", stem, r.at("size").get<int64_t>()));
    }
  }
  return files;
}
// Refused where the records lack what the CSVs hold: sizes a resumed sweep measured before its
// records were kept, or a last line cut (the sweep stopped, or is, while writing a size's record).
void render_profile(const fs::path&, const nlohmann::json& doc, const fs::path& d) {
  if (const auto it = doc.find("sizes_without_records");
      it != doc.end() && it->is_array() && !it->empty()) {
    fail("it lacks the records of sizes {} (their rows were written without one)", it->dump());
  }
  if (doc.contains("cut_last_line")) {
    fail(
        "its last line is cut (the sweep stopped while writing a size's record, or is writing one "
        "now); `nnperf profile --resume` rewrites the file without it");
  }
  profile_sweep::render_profile_outputs(doc, d);
}

Files one_step_files(const fs::path& d, const nlohmann::json&) {
  return {d / "one_step_layers.csv", d / "one_step_trace.json"};
}
void render_one_step(const fs::path&, const nlohmann::json& doc, const fs::path& d) {
  if (!doc.contains("spans")) {
    fail("it keeps no spans (written by an nnperf from before they were kept)");
  }
  render_one_step_profile(doc, d);
}

// The figure per env with a sweep.
Files peaks_files(const fs::path& d, const nlohmann::json& doc) {
  Files files;
  if (!doc.is_object()) return files;
  for (const auto& [env, entry] : doc.items()) {
    if (has_bandwidth_sweep(entry))
      add_plot_files(files, peaks_bandwidth_stem(d / "peaks.json", env));
  }
  return files;
}
void render_peaks(const fs::path& record, const nlohmann::json& doc, const fs::path& d) {
  for (const auto& [env, entry] : doc.items()) {
    if (!has_bandwidth_sweep(entry)) continue;
    (void)peaks_bandwidth_plot(entry, JsonPath{record.string(), env},
                               peaks_bandwidth_stem(d / record.filename(), env));
  }
}

// A roofline's own folder (its run.json says so): a copy of roofline.json written elsewhere by
// --json renders nothing beside it.
Files roofline_files(const fs::path& d, const nlohmann::json&) {
  std::error_code ec;
  if (!fs::exists(d / "run.json", ec)) return {};
  const nlohmann::json run = read_json(d / "run.json");
  if (!run.is_object() || run.value("job", std::string()) != "roofline") return {};
  Files files = {d / "roofline_points.csv"};
  add_plot_files(files, d / "roofline");
  return files;
}
void render_roofline(const fs::path&, const nlohmann::json& doc, const fs::path& d) {
  write_csv_doc(roofline_points_csv(doc), d / "roofline_points.csv");
  (void)roofline_plot(doc, d / "roofline");
}

// A merged training sweep's metrics.csv, from sweep_records.json, and the training driver's, from
// metrics_records.json (runs/train_driver_records.h): its columns in order, then a row per record
// (the rows' cells as they were; every row ends in "\n"). A merged profile sweep's files
// come from the profile records `sweep merge` joins beside them.
Files merged_files(const fs::path& d, const nlohmann::json& doc) {
  const nlohmann::json* ctx =
      doc.is_object() && doc.contains("context") ? &doc["context"] : nullptr;
  if (ctx == nullptr || !ctx->is_object() || ctx->value("kind", std::string()) != "train" ||
      !ctx->contains("columns")) {
    return {};
  }
  return {d / "metrics.csv"};
}
void render_merged(const fs::path& record, const nlohmann::json& doc, const fs::path& d) {
  const std::vector<std::string> columns =
      doc.at("context").at("columns").get<std::vector<std::string>>();
  std::string text = csv_line(columns);
  const nlohmann::json& records = doc.at("records");
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::vector<std::string> row;
    for (const std::string& c : columns)
      row.push_back(json_string(records[i], c, JsonPath{record.string(), "records"}.item(i)));
    text += csv_line(row);
  }
  write_file_atomic(d / "metrics.csv", text);
}

// An activation study's folder (its run.json says so): summary.csv, report.md and the figures,
// from the study's runs (their CSVs rebuilt in the first pass). Other jobs' run.json: nothing.
bool is_study(const nlohmann::json& run) {
  return run.is_object() && run.value("job", std::string()) == "activations";
}
Files study_files(const fs::path& d, const nlohmann::json& run) {
  if (!is_study(run)) return {};
  Files files = {d / "summary.csv", d / "report.md"};
  for (const char* stem : {"timing_comparison", "accuracy_vs_time", "layer_heatmap"})
    add_plot_files(files, d / "plots" / stem);
  std::error_code ec;
  const bool all_there =
      std::all_of(files.begin(), files.end(), [&](const fs::path& f) { return fs::exists(f, ec); });
  // The validation figure is drawn only when some run held out a validation split. With the other
  // outputs there, the study's report.md says whether it was (its "No data" line when not), so
  // the runs are read only when something else is missing (a study with an unfinished run folder
  // but its outputs in place is left alone).
  if (all_there ? read_file(d / "report.md").find(kNoValidationFigure) == std::string::npos
                : std::ranges::any_of(load_activation_study(d).val_acc,
                                      [](const auto& v) { return !v.empty(); })) {
    add_plot_files(files, d / "plots" / "validation_curves");
  }
  return files;
}
void render_study(const fs::path& record, const nlohmann::json& run, const fs::path& d) {
  (void)analyse_activation_study(record.parent_path(), run.value("command", std::string()), d);
}
// Every job writes a run.json: one that cannot be read is not a study's to rebuild here (the
// report's machine section names it), so it reads as null rather than as a failed rebuild.
nlohmann::json read_run_json_if_readable(const fs::path& record) {
  try {
    return read_json(record);
  } catch (const Error&) {
    return nullptr;
  }
}

// A cut last line is kept as "cut_last_line": render_profile refuses it, so only where something
// must be rendered.
nlohmann::json read_profile(const fs::path& record) {
  bool cut = false;
  nlohmann::json doc = profile_sweep::read_profile_records(record, &cut);
  if (cut) doc["cut_last_line"] = true;
  return doc;
}

// The records found by file name, with how each is read and what it renders. Second-pass kinds
// render from files that first-pass kinds rebuild.
struct RecordKind {
  const char* name;
  nlohmann::json (*read)(const fs::path& record);
  Files (*files)(const fs::path& dir, const nlohmann::json& doc);
  void (*render)(const fs::path& record, const nlohmann::json& doc, const fs::path& into);
  int pass = 1;
};
constexpr RecordKind kRecords[] = {
    {"train_records.json", read_json, train_files, render_train},
    {"mlp_bench.json", read_json, mlp_bench_files, render_mlp_bench},
    {profile_sweep::kRecordsFile, read_profile, profile_files, render_profile},
    {profile_sweep::kLegacyRecordsFile, read_profile, profile_files, render_profile},
    {"one_step.json", read_json, one_step_files, render_one_step},
    {"peaks.json", read_json, peaks_files, render_peaks},
    {"roofline.json", read_json, roofline_files, render_roofline},
    {"sweep_records.json", read_json, merged_files, render_merged},
    {driver_records::kFile, read_json, merged_files, render_merged},
    {"run.json", read_run_json_if_readable, study_files, render_study, 2},
};

const RecordKind* record_kind(const fs::path& file) {
  for (const RecordKind& k : kRecords) {
    if (file.filename() == k.name) return &k;
  }
  return nullptr;
}

// A folder beside the record that the renderers write into, removed with everything in it.
struct Scratch {
  fs::path path;
  explicit Scratch(const fs::path& dir)
      : path(dir / fmt::format(".nnperf-rerender-{}", static_cast<long>(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// Renders the record's files beside it, then moves in those that are missing (each a rename,
// so a file appears whole or not at all); the others are left as they are, also a file a running
// job is still appending to.
void render_missing(const RecordKind& kind, const fs::path& record, const nlohmann::json& doc,
                    const std::vector<fs::path>& missing) {
  const fs::path d = record.parent_path();
  const Scratch scratch(d);
  kind.render(record, doc, scratch.path);
  for (const fs::path& f : missing) {
    const fs::path made = scratch.path / fs::relative(f, d);
    if (!fs::exists(made))
      fail("{}: its reporter did not write {}", record.string(), made.string());
    fs::create_directories(f.parent_path());
    fs::rename(made, f);
  }
}

}  // namespace

std::vector<std::string> rerender_missing_outputs(const fs::path& dir) {
  std::vector<fs::path> records;
  std::error_code ec;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    // An earlier nnperf's profile_records.json left beside the lines file that replaced it.
    const bool replaced = it->path().filename() == profile_sweep::kLegacyRecordsFile &&
                          fs::exists(it->path().parent_path() / profile_sweep::kRecordsFile, ec);
    if (record_kind(it->path()) != nullptr && !replaced && it->is_regular_file(ec)) {
      records.push_back(it->path());
    }
  }
  std::sort(records.begin(), records.end(), [](const fs::path& a, const fs::path& b) {
    return std::pair(record_kind(a)->pass, a) < std::pair(record_kind(b)->pass, b);
  });
  std::vector<std::string> lines;
  for (const fs::path& record : records) {
    check_interrupt();
    try {
      const RecordKind& kind = *record_kind(record);
      const nlohmann::json doc = kind.read(record);
      std::vector<fs::path> missing;
      std::vector<std::string> names;
      for (const fs::path& f : kind.files(record.parent_path(), doc)) {
        if (fs::exists(f, ec)) continue;
        missing.push_back(f);
        names.push_back(fs::relative(f, record.parent_path()).string());
      }
      if (missing.empty()) continue;
      render_missing(kind, record, doc, missing);
      lines.push_back(fmt::format("rebuilt {} from {}", fmt::join(names, ", "), record.string()));
    } catch (const Error& e) {
      lines.push_back(fmt::format("not rebuilt from {}: {}", record.string(), e.what()));
    } catch (const nlohmann::json::exception& e) {
      lines.push_back(fmt::format("not rebuilt from {}: {}", record.string(), e.what()));
    } catch (const fs::filesystem_error& e) {
      lines.push_back(fmt::format("not rebuilt from {}: {}", record.string(), e.what()));
    }
  }
  return lines;
}

}  // namespace nnperf
