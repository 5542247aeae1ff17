#include "nnperf/io/records.h"

#include <fmt/format.h>

#include <cctype>

#include "nnperf/core/error.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/json_read.h"

namespace nnperf {

namespace {

void check_fraction(double v, const JsonPath& where) {
  if (v < 0 || v > 1) fail("{}: expected an accuracy in [0, 1], got {}", where.str(), v);
}

void check_non_negative(const std::optional<double>& v, const JsonPath& where) {
  if (v && *v < 0) fail("{}: expected a number >= 0, got {}", where.str(), *v);
}

// A name that ends up in a file name: no path separators, not empty.
std::string file_name_part(const nlohmann::json& j, std::string_view key, const JsonPath& at) {
  const std::string s = json_string(j, key, at);
  if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos ||
      s.find('\0') != std::string::npos) {
    fail("{}: expected a name without '/', got '{}'", at.at(key).str(), quote_input(s));
  }
  return s;
}

}  // namespace

double profile_layer_ms(const CsvTable& t, std::size_t r, std::size_t c_ms,
                        const std::string& layer, const std::filesystem::path& csv) {
  const double ms = t.number(r, c_ms);
  if (ms < 0) {
    fail("{}:{}: mean_ms {} of layer {} is negative; a time cannot be", csv.string(), t.line(r), ms,
         quote_input(layer));
  }
  if (ms > 0 && (ms < 1e-6 || ms > 86.4e6)) {
    fail("{}:{}: mean_ms {} of layer {} is not a plausible layer time (1e-6 to 8.64e7 ms)",
         csv.string(), t.line(r), ms, quote_input(layer));
  }
  return ms;
}

FinalResults parse_final_results(std::string_view text, const std::string& source) {
  const nlohmann::json j = parse_json(text, source);
  const JsonPath at{source, ""};
  FinalResults r;
  r.activation = json_string(j, "activation", at);
  r.final_test_acc = json_number(j, "final_test_acc", at);
  check_fraction(r.final_test_acc, at.at("final_test_acc"));
  r.final_test_loss = json_number(j, "final_test_loss", at);
  r.final_val_acc = json_optional_number(j, "final_val_acc", at);
  if (r.final_val_acc) check_fraction(*r.final_val_acc, at.at("final_val_acc"));
  r.final_val_loss = json_optional_number(j, "final_val_loss", at);
  r.imgs_per_sec = json_optional_number(j, "imgs_per_sec", at);
  check_non_negative(r.imgs_per_sec, at.at("imgs_per_sec"));
  r.timer_empty_interval_ns = json_optional_number(j, "timer_empty_interval_ns", at);
  check_non_negative(r.timer_empty_interval_ns, at.at("timer_empty_interval_ns"));
  const JsonPath hp = at.at("hyperparameters");
  r.batch_size = json_integer(json_object(j, "hyperparameters", at), "batch_size", hp);
  if (r.batch_size < 1) fail("{}: expected a batch size >= 1, got {}", hp.at("batch_size").str(), r.batch_size);
  if (const auto& h = j.at("hyperparameters"); h.contains("device")) {
    r.device = json_string(h, "device", hp);
    if (r.device != "cpu" && r.device != "cuda") {
      fail("{}: expected cpu or cuda, got '{}'", hp.at("device").str(), r.device);
    }
  }
  if (j.contains("test_samples")) {
    r.test_samples = json_integer(j, "test_samples", at);
    if (r.test_samples < 1) fail("{}: expected at least 1, got {}", at.at("test_samples").str(), r.test_samples);
  }
  return r;
}

RunJson parse_run_json(std::string_view text, const std::string& source) {
  const nlohmann::json j = parse_json(text, source);
  const JsonPath at{source, ""};
  if (!j.is_object()) fail("{}: expected a JSON object", source);
  RunJson r;
  r.job = j.contains("job") ? json_string(j, "job", at) : "?";
  if (r.job.empty()) fail("{}: expected the name of a job, got an empty string", at.at("job").str());
  if (j.contains("command")) r.command = json_string(j, "command", at);
  if (j.contains("date")) r.date = json_string(j, "date", at);
  if (r.job == "profile") {
    r.model = file_name_part(j, "model", at);
    r.algorithm = file_name_part(j, "algorithm", at);
    if (j.contains("sizes")) {
      const nlohmann::json& s = j["sizes"];
      if (!s.is_array()) fail("{}: expected an array of sizes", at.at("sizes").str());
      for (const auto& v : s) {
        if (!v.is_number_integer() || v.get<int64_t>() < 1) {
          fail("{}: expected positive integers, got {}", at.at("sizes").str(), quote_input(v.dump()));
        }
        r.sizes.push_back(v.get<int64_t>());
      }
    }
    if (j.contains("setup")) r.setup = json_object(j, "setup", at);
  }
  return r;
}

bool has_bandwidth_sweep(const nlohmann::json& entry) {
  return entry.is_object() && entry.contains("bandwidth_sweep") &&
         entry["bandwidth_sweep"].is_array() && !entry["bandwidth_sweep"].empty();
}

std::filesystem::path peaks_bandwidth_stem(const std::filesystem::path& peaks_json,
                                           const std::string& env) {
  std::string safe = env;
  for (char& c : safe) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  if (safe != env || safe.empty()) {
    // Two envs that differ only where characters were replaced ("a b", "a/b") keep two files.
    uint32_t h = 2166136261u;  // FNV-1a
    for (const char c : env) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    safe += fmt::format("-{:08x}", h);
  }
  return peaks_json.parent_path() / (peaks_json.stem().string() + "_bandwidth_" + safe);
}

}  // namespace nnperf
