// The records nnperf reads back from its own output folders, parsed and checked field by field:
// final_results.json of a training run (the activation study's analysis reads it) and run.json of
// any run (output-folder ownership, `profile --resume`'s setup check, `nnperf status`). Every
// problem is an nnperf::Error naming the file and the field. Also the names of files rendered
// from a record that the report looks for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nnperf {

struct CsvTable;
// Row r's mean_ms in a profile's layers CSV: 0 (no time measured) or a plausible layer time; a
// negative one, or one below a nanosecond or above a day (a corrupt or hand-edited row), is
// refused with file and line. The roofline and the report read layer times through it.
double profile_layer_ms(const CsvTable& t, std::size_t r, std::size_t c_ms,
                        const std::string& layer, const std::filesystem::path& csv);

struct FinalResults {
  std::string activation;
  double final_test_acc = 0, final_test_loss = 0;
  std::optional<double> final_val_acc, final_val_loss;  // null: no validation split
  std::optional<double> imgs_per_sec, timer_empty_interval_ns;
  int64_t batch_size = 0;
  int64_t test_samples = 10000;  // files from before the field existed: the MNIST test set
  std::string device = "cpu";    // hyperparameters.device; "cpu" in files from before it existed
};
FinalResults parse_final_results(std::string_view text, const std::string& source);

struct RunJson {
  std::string job;      // "train", "profile", ...; "?" when absent (written by an older nnperf)
  std::string command;  // "" when absent
  std::string date;     // "" when absent
  std::string model, algorithm;  // profile sweeps; "" otherwise
  std::vector<int64_t> sizes;    // profile sweeps: the planned sizes
  std::optional<nlohmann::json> setup;  // profile sweeps: what the rows depend on (an object)
};
RunJson parse_run_json(std::string_view text, const std::string& source);

// Whether an env entry of peaks.json has a bandwidth sweep to plot (a GPU's entry, or one of
// another program's file, has none).
bool has_bandwidth_sweep(const nlohmann::json& entry);
// The bandwidth figure's stem for environment `env` of the peaks file `peaks_json`:
// <folder>/<file stem>_bandwidth_<env> (peaks.json, env "box1" -> peaks_bandwidth_box1). An env
// with other characters than letters, digits, '.', '_' and '-' has them written as '_' and a hash
// of its name appended ("lab 2" -> peaks_bandwidth_lab_2-<8 hex digits>), so no two envs share a
// file.
std::filesystem::path peaks_bandwidth_stem(const std::filesystem::path& peaks_json,
                                           const std::string& env);

}  // namespace nnperf
