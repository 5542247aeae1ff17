// See rerender.h.
#include "nnperf/runs/rerender.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <system_error>

#include "nnperf/analysis/peaks.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/plot.h"
#include "nnperf/io/records.h"
#include "nnperf/runs/cnn_train_outputs.h"
#include "nnperf/runs/mlp_bench.h"
#include "nnperf/runs/profile_outputs.h"
#include "nnperf/runs/train_outputs.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// The files a record's reporter writes in its folder; empty when `record` is not one of them.
std::vector<fs::path> rendered_from(const fs::path& record, const nlohmann::json& doc) {
  const fs::path d = record.parent_path();
  if (record.filename() == "mlp_bench.json") {
    return {d / "mlp_bench.csv", d / "plots" / "iteration_time.dat"};
  }
  if (record.filename() == "peaks.json") {
    // The figure per env with a sweep: its data and script always, the images with gnuplot.
    std::vector<fs::path> files;
    if (!doc.is_object()) return files;
    std::vector<const char*> extensions = {".dat", ".gp"};
    if (gnuplot_available()) extensions.insert(extensions.end(), {".svg", ".png"});
    for (const auto& [env, entry] : doc.items()) {
      if (!has_bandwidth_sweep(entry)) continue;
      const std::string stem = peaks_bandwidth_stem(record, env).string();
      for (const char* ext : extensions) files.emplace_back(stem + ext);
    }
    return files;
  }
  if (record.filename() == "one_step.json") {
    return {d / "one_step_layers.csv", d / "one_step_trace.json"};
  }
  if (record.filename() == "profile_records.json") {
    const nlohmann::json& ctx = doc.at("context");
    const std::string stem = ctx.at("stem").get<std::string>();
    std::vector<fs::path> files = {d / (stem + "_overall.csv"), d / (stem + "_layers.csv")};
    if (ctx.at("layers").get<bool>()) {
      for (const nlohmann::json& r : doc.at("records")) {
        files.push_back(d / fmt::format("{}_trace_{}.json", stem, r.at("size").get<int64_t>()));
      }
    }
    return files;
  }
  const bool mlp = doc.contains("context") && doc["context"].contains("activation_layers");
  if (mlp) return {d / "training_metrics.csv", d / "activation_timings.csv"};
  return {d / "training_metrics.csv"};
}

// Renders `record`'s files into `d`.
void render(const fs::path& record, const nlohmann::json& doc, const fs::path& d) {
  if (record.filename() == "mlp_bench.json") {
    render_mlp_bench_outputs(doc, d);
  } else if (record.filename() == "profile_records.json") {
    profile_sweep::render_profile_outputs(doc, d);
  } else if (record.filename() == "peaks.json") {
    for (const auto& [env, entry] : doc.items()) {
      if (!has_bandwidth_sweep(entry)) continue;
      (void)peaks_bandwidth_plot(entry, JsonPath{record.string(), env},
                                 peaks_bandwidth_stem(d / record.filename(), env));
    }
  } else if (record.filename() == "one_step.json") {
    if (!doc.contains("spans")) {
      fail("it keeps no spans (written by an nnperf from before they were kept)");
    }
    render_one_step_profile(doc, d);
  } else if (doc.at("context").contains("activation_layers")) {
    render_train_csvs(doc, d);
  } else {
    render_cnn_train_csv(doc, d);
  }
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
void render_missing(const fs::path& record, const nlohmann::json& doc,
                    const std::vector<fs::path>& missing) {
  const fs::path d = record.parent_path();
  const Scratch scratch(d);
  render(record, doc, scratch.path);
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
    const std::string name = it->path().filename().string();
    if ((name == "train_records.json" || name == "mlp_bench.json" ||
         name == "profile_records.json" || name == "one_step.json" || name == "peaks.json") &&
        it->is_regular_file(ec)) {
      records.push_back(it->path());
    }
  }
  std::sort(records.begin(), records.end());
  std::vector<std::string> lines;
  for (const fs::path& record : records) {
    check_interrupt();
    try {
      const nlohmann::json doc = read_json(record);
      std::vector<fs::path> missing;
      std::vector<std::string> names;
      for (const fs::path& f : rendered_from(record, doc)) {
        if (fs::exists(f, ec)) continue;
        missing.push_back(f);
        names.push_back(fs::relative(f, record.parent_path()).string());
      }
      if (missing.empty()) continue;
      // A resumed sweep whose records lack sizes its CSVs hold: what they render would too.
      if (const auto it = doc.find("sizes_without_records");
          it != doc.end() && it->is_array() && !it->empty()) {
        lines.push_back(fmt::format(
            "not rebuilt from {}: it lacks the records of sizes {} (their rows were written "
            "without one)",
            record.string(), it->dump()));
        continue;
      }
      render_missing(record, doc, missing);
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
