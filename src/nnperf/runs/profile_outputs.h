// The profiler's reporter (`nnperf profile`): each input size's SizeRecord is kept as JSON in
// profile_records.jsonl (a line per size, appended as the size finishes, so it holds every
// finished size), and the two CSVs (ai3-8CuDNN's columns, then ours) and the per-size trace are
// rendered from that JSON. render_profile_outputs rebuilds them from the saved records alone
// (`nnperf report` does when they are missing).
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "nnperf/io/csv.h"
#include "nnperf/runs/profile_measure.h"

namespace nnperf::profile_sweep {

extern const std::vector<std::string> kOverallHeader;
extern const std::vector<std::string> kLayersHeader;

// The sweep's records (io/json_lines.h): a first line {"context": {...}}, with
// "sizes_without_records": [...] when a resume found sizes whose CSV rows have no record, then a
// line per size. An nnperf from before kept them as one document, profile_records.json
// ({"context", "records": [...]}) rewritten whole after each size: O(n^2) bytes over n sizes.
inline constexpr const char* kRecordsFile = "profile_records.jsonl";
inline constexpr const char* kLegacyRecordsFile = "profile_records.json";
// Either file (told by its name) as the document {"context", "records", ["sizes_without_records"]}.
// A last line cut by a crash is left out and `cut_last` set when given; else it is an Error (the
// CSVs hold a row that the records would lack). Errors name the file and line.
nlohmann::json read_profile_records(const std::filesystem::path& file, bool* cut_last = nullptr);

// What every row of a sweep shares: {"model", "algorithm", "batch_size", "threads", "layers",
// "input_channels", "stem"} (stem: the files' prefix, "<model>_<algorithm>").
nlohmann::json profile_context(const std::string& model, const std::string& algorithm,
                               int64_t batch_size, int threads, bool layers,
                               int64_t input_channels);
nlohmann::json size_record_json(const SizeRecord& r);

// One size's record into the overall CSV (a row) and the layers CSV (a row per layer: none
// without --layers), and with --layers its trace, <stem>_trace_<size>.json in `dir`.
void render_size(const nlohmann::json& context, const nlohmann::json& record, CsvWriter& overall,
                 CsvWriter& layers, const std::filesystem::path& dir);

// <stem>_overall.csv, <stem>_layers.csv (its header alone without --layers) and the traces in
// `dir`, written anew from a read_profile_records document.
void render_profile_outputs(const nlohmann::json& doc, const std::filesystem::path& dir);

// --resume: the sizes whose rows in the two CSVs are whole (a cut last row is left out). A size
// is whole when it has one overall row whose times read as numbers and its layer rows are
// `layer_names` in order, each with times that read. The rows of every other size, and a cut
// row, are removed from both files, with a warning saying why, so that the sweep measures the
// size again (after the others). A missing layers file counts as no layer rows; columns other
// than ours or an input size that is not an integer are an Error, with both files untouched.
std::set<int64_t> keep_whole_sizes(const std::filesystem::path& overall,
                                   const std::filesystem::path& layers,
                                   const std::vector<std::string>& layer_names);

}  // namespace nnperf::profile_sweep
