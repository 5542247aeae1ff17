// See profile_outputs.h.
#include "nnperf/runs/profile_outputs.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <tuple>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_lines.h"
#include "nnperf/io/json_read.h"
#include "nnperf/io/records.h"
#include "nnperf/io/trace.h"

namespace nnperf::profile_sweep {

namespace fs = std::filesystem;

const std::vector<std::string> kOverallHeader{
    "model", "algorithm", "batch_size", "input_size", "mean", "std", "min", "max", "median",
    "power_mean_w", "power_std_w", "power_min_w", "power_max_w", "energy_total_j",
    "energy_per_inference_j", "power_samples",
    // ours, after ai3-8CuDNN's columns
    "layers_sum_ms", "threads", "power_source", "conv_layers", "conv_layers_other_algorithm",
    "algorithms_used"};
const std::vector<std::string> kLayersHeader{
    "model", "algorithm", "input_size", "layer", "in_channels", "out_channels", "kernel_size",
    "stride", "padding", "mean_ms", "std_ms", "percentage",
    // ours
    "layer_type", "is_conv", "algorithm_used", "fallback_reason", "problem",
    // --pass train: the backward rows of each convolution
    "backward_data_algorithm", "backward_weights_algorithm",
    // the forward algorithm's workspace (cuDNN's on the GPU)
    "workspace_bytes"};

namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"count", s.count}, {"mean", s.mean},     {"std", s.std}, {"min", s.min},
          {"max", s.max},     {"median", s.median}, {"p95", s.p95}};
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string num(const nlohmann::json& v) { return csv_number(v.get<double>(), 7); }
std::string opt_num(const nlohmann::json& v) { return v.is_null() ? "" : num(v); }

}  // namespace

nlohmann::json profile_context(const std::string& model, const std::string& algorithm,
                               int64_t batch_size, int threads, bool layers,
                               int64_t input_channels) {
  return {{"model", model},
          {"algorithm", algorithm},
          {"batch_size", batch_size},
          {"threads", threads},
          {"layers", layers},
          {"input_channels", input_channels},
          {"stem", fmt::format("{}_{}", model, algorithm)}};
}

nlohmann::json size_record_json(const SizeRecord& r) {
  const PowerWindow& pw = r.power;
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerRow& l : r.layers) {
    const LayerColumns& c = l.columns;
    layers.push_back({{"name", l.name},
                      {"layer_type", c.layer_type},
                      {"in_channels", c.in_channels},
                      {"out_channels", c.out_channels},
                      {"kernel_size", c.kernel_size},
                      {"stride", c.stride},
                      {"padding", c.padding},
                      {"is_conv", c.is_conv},
                      {"algorithm_used", c.algorithm_used},
                      {"fallback_reason", c.fallback_reason},
                      {"backward_data", c.backward_data},
                      {"backward_weights", c.backward_weights},
                      {"problem", c.problem},
                      {"workspace_bytes", c.workspace_bytes},
                      {"time_ms", summary_json(l.time)}});
  }
  nlohmann::json trace = nlohmann::json::array();
  for (const TraceSlice& t : r.trace) {
    trace.push_back({{"name", t.name},
                     {"kind", t.kind},
                     {"begin_us", t.begin_us},
                     {"dur_us", t.dur_us},
                     {"args", t.args}});
  }
  return {{"size", r.size},
          {"whole_ms", summary_json(r.whole)},
          {"passes", r.passes},
          {"energy_passes", r.energy_passes},
          {"power",
           {{"seconds", pw.seconds},
            {"energy_j", optional_json(pw.energy_j)},
            {"power_mean_w", optional_json(pw.power_mean_w)},
            {"power_std_w", optional_json(pw.power_std_w)},
            {"power_min_w", optional_json(pw.power_min_w)},
            {"power_max_w", optional_json(pw.power_max_w)},
            {"samples", pw.samples},
            {"source", pw.source}}},
          {"conv_layers", r.use.conv_layers},
          {"conv_layers_other_algorithm", r.use.other},
          {"algorithms_used", r.use.text()},
          {"layers", layers},
          {"layers_sum_ms", r.layers_sum},
          {"layers_sum_raw_ms", r.layers_sum_raw},
          {"device_bytes", r.device_bytes},
          {"graph_nodes", r.graph_nodes},
          {"trace", trace}};
}

void render_size(const nlohmann::json& ctx, const nlohmann::json& rec, CsvWriter& overall,
                 CsvWriter& layers, const fs::path& dir) {
  const std::string model = ctx.at("model").get<std::string>(),
                    algorithm = ctx.at("algorithm").get<std::string>(),
                    size = std::to_string(rec.at("size").get<int64_t>());
  const bool with_layers = ctx.at("layers").get<bool>();
  const double layers_sum = rec.at("layers_sum_ms").get<double>();
  for (const nlohmann::json& l : rec.at("layers")) {
    const double mean = l.at("time_ms").at("mean").get<double>();
    layers.row({model,
                algorithm,
                size,
                l.at("name").get<std::string>(),
                l.at("in_channels").get<std::string>(),
                l.at("out_channels").get<std::string>(),
                l.at("kernel_size").get<std::string>(),
                l.at("stride").get<std::string>(),
                l.at("padding").get<std::string>(),
                csv_number(mean, 7),
                num(l.at("time_ms").at("std")),
                csv_number(layers_sum > 0 ? 100 * mean / layers_sum : 0.0, 6),
                l.at("layer_type").get<std::string>(),
                l.at("is_conv").get<bool>() ? "yes" : "no",
                l.at("algorithm_used").get<std::string>(),
                l.at("fallback_reason").get<std::string>(),
                l.at("problem").get<std::string>(),
                l.at("backward_data").get<std::string>(),
                l.at("backward_weights").get<std::string>(),
                l.at("workspace_bytes").get<std::string>()});
  }
  if (with_layers) {
    TraceWriter trace("nnperf profile");
    trace.set_thread_name(0, "layers");
    trace.set_metadata("model", model);
    trace.set_metadata("algorithm", algorithm);
    trace.set_metadata("input", fmt::format("{}x{}x{}x{}", ctx.at("batch_size").get<int64_t>(),
                                            ctx.at("input_channels").get<int64_t>(), size, size));
    for (const nlohmann::json& t : rec.at("trace")) {
      trace.add_complete(t.at("name").get<std::string>(), t.at("kind").get<std::string>(),
                         t.at("begin_us").get<double>(), t.at("dur_us").get<double>(), 0,
                         t.at("args"));
    }
    trace.write(dir / fmt::format("{}_trace_{}.json", ctx.at("stem").get<std::string>(), size));
  }
  const nlohmann::json& pw = rec.at("power");
  const nlohmann::json& w = rec.at("whole_ms");
  const bool energy = !pw.at("energy_j").is_null();
  const double per_inf = energy ? pw.at("energy_j").get<double>() /
                                      static_cast<double>(rec.at("energy_passes").get<int64_t>())
                                : 0.0;
  overall.row({model,
               algorithm,
               std::to_string(ctx.at("batch_size").get<int64_t>()),
               size,
               num(w.at("mean")),
               num(w.at("std")),
               num(w.at("min")),
               num(w.at("max")),
               num(w.at("median")),
               opt_num(pw.at("power_mean_w")),
               opt_num(pw.at("power_std_w")),
               opt_num(pw.at("power_min_w")),
               opt_num(pw.at("power_max_w")),
               opt_num(pw.at("energy_j")),
               energy ? csv_number(per_inf, 7) : "",
               std::to_string(pw.at("samples").get<int64_t>()),
               with_layers ? csv_number(layers_sum, 7) : "",
               std::to_string(ctx.at("threads").get<int>()),
               pw.at("source").get<std::string>(),
               std::to_string(rec.at("conv_layers").get<int>()),
               std::to_string(rec.at("conv_layers_other_algorithm").get<int>()),
               rec.at("algorithms_used").get<std::string>()});
}

nlohmann::json read_profile_records(const fs::path& file, bool* cut_last) {
  if (file.filename() == kLegacyRecordsFile) {
    nlohmann::json doc = read_json(file);
    if (!doc.is_object() || !doc.contains("context") || !doc.contains("records")) {
      fail("{}: expected {{\"context\": ..., \"records\": [...]}}", file.string());
    }
    if (cut_last != nullptr) *cut_last = false;
    return doc;
  }
  JsonLines lines = read_json_lines(file);
  if (lines.cut_last && cut_last == nullptr) {
    fail(
        "{}: its last line is cut (the sweep stopped while writing a size's record); "
        "`nnperf profile --resume` rewrites the file without it",
        file.string());
  }
  if (cut_last != nullptr) *cut_last = lines.cut_last;
  if (lines.values.empty() || !lines.values[0].is_object() ||
      !lines.values[0].contains("context")) {
    fail("{}: line 1: expected {{\"context\": ...}}", file.string());
  }
  nlohmann::json doc = std::move(lines.values[0]);
  doc["records"] = nlohmann::json::array();
  for (std::size_t i = 1; i < lines.values.size(); ++i) {
    if (!lines.values[i].is_object() || !lines.values[i].contains("size")) {
      fail("{}: line {}: expected a size's record", file.string(), i + 1);
    }
    doc["records"].push_back(std::move(lines.values[i]));
  }
  return doc;
}

void render_profile_outputs(const nlohmann::json& doc, const fs::path& dir) {
  const nlohmann::json& ctx = doc.at("context");
  const std::string stem = ctx.at("stem").get<std::string>();
  CsvWriter overall(dir / (stem + "_overall.csv"), kOverallHeader);
  CsvWriter layers(dir / (stem + "_layers.csv"), kLayersHeader);
  for (const nlohmann::json& rec : doc.at("records")) render_size(ctx, rec, overall, layers, dir);
}

namespace {

// The CSV text of `t`'s header and the given rows.
std::string csv_text(const CsvTable& t, const std::vector<std::size_t>& rows) {
  std::string text = csv_line(t.header);
  for (const std::size_t r : rows) text += csv_line(t.rows[r]);
  return text;
}

// Why one size's rows cannot be kept by --resume ("" when they can).
std::string why_not_whole(const CsvTable& o, std::size_t orow, const CsvTable& l,
                          const std::vector<std::size_t>& lrows,
                          const std::vector<std::string>& names) {
  try {
    for (const char* c : {"mean", "std", "min", "max", "median"})
      (void)o.number(orow, o.require(c));
    if (lrows.size() != names.size()) {
      return fmt::format("{} holds {} of its {} layer rows", l.source, lrows.size(), names.size());
    }
    const std::size_t c_layer = l.require("layer"), c_ms = l.require("mean_ms");
    for (std::size_t i = 0; i < lrows.size(); ++i) {
      const std::size_t r = lrows[i];
      if (l.cell(r, c_layer) != names[i]) {
        return fmt::format("{}:{}: layer {} where the model has {}", l.source, l.line(r),
                           quote_input(l.cell(r, c_layer)), quote_input(names[i]));
      }
      (void)profile_layer_ms(l, r, c_ms, names[i], l.source);
      (void)l.number(r, l.require("std_ms"));
      (void)l.number(r, l.require("percentage"));
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The file's rows (a cut last row left out; the file is not changed here), refused unless its
// header is `header`; a missing file is a table with the header and no rows.
CsvTable read_resumed_csv(const fs::path& path, const std::vector<std::string>& header) {
  CsvTable t;
  t.source = path.string();
  t.header = header;
  if (!fs::exists(path)) return t;
  t = parse_csv(read_file(path), path.string());
  if (t.header != header) {
    fail("cannot resume: {} does not have the expected columns (corrupt or from another version)",
         path.string());
  }
  return t;
}

}  // namespace

std::set<int64_t> keep_whole_sizes(const fs::path& overall, const fs::path& layers,
                                   const std::vector<std::string>& layer_names) {
  const CsvTable o = read_resumed_csv(overall, kOverallHeader);
  const CsvTable l = read_resumed_csv(layers, kLayersHeader);
  const std::size_t oc = o.require("input_size"), lc = l.require("input_size");
  std::map<int64_t, std::vector<std::size_t>> layer_rows, overall_rows;
  for (std::size_t r = 0; r < l.rows.size(); ++r) layer_rows[l.integer(r, lc)].push_back(r);
  for (std::size_t r = 0; r < o.rows.size(); ++r) overall_rows[o.integer(r, oc)].push_back(r);
  std::set<int64_t> whole;
  for (const auto& [size, rows] : overall_rows) {
    const std::string why = rows.size() > 1
                                ? fmt::format("{} holds {} rows of it", o.source, rows.size())
                                : why_not_whole(o, rows[0], l, layer_rows[size], layer_names);
    if (why.empty()) {
      whole.insert(size);
    } else {
      warn("--resume: size {} is measured again: {}", size, why);
    }
  }
  const auto rows_of_whole = [&whole](const CsvTable& t, std::size_t c) {
    std::vector<std::size_t> kept;
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      if (whole.count(t.integer(r, c))) kept.push_back(r);
    return kept;
  };
  const std::vector<std::size_t> kept_overall = rows_of_whole(o, oc);
  const std::vector<std::size_t> kept_layers = rows_of_whole(l, lc);
  // Every check passed before either file is rewritten (without its cut row and the sizes
  // measured again).
  for (const auto& [t, kept, path] :
       {std::tuple{&o, &kept_overall, &overall}, std::tuple{&l, &kept_layers, &layers}}) {
    if (t->truncated_row) {
      warn("{}: the last row was cut (no newline at the end; a killed run?): dropped '{}'",
           path->string(), quote_input(*t->truncated_row));
    }
    if (fs::exists(*path) && (kept->size() != t->rows.size() || t->truncated_row))
      write_file_atomic(*path, csv_text(*t, *kept));
  }
  return whole;
}

}  // namespace nnperf::profile_sweep
